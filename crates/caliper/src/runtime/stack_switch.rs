//! Switching the calling thread's region stack to another one and back:
//! what a task that is polled on whatever worker thread is free needs to
//! keep its own region path (see [`crate::task`]).
//!
//! A switch is made of ordinary ends and begins, so every channel sees it
//! as it sees any region: the timer closes the thread's interval before the
//! task's regions begin and the task's before the thread's come back, and a
//! trace shows the task's regions entered and left on the thread. Entries
//! shared by both stacks (a common prefix) stay open. The begin and end of
//! ordinary regions are not touched by any of this.

use super::*;
use crate::blackboard::StackEntry;

impl Caliper {
    /// How many entries, from the outermost, the calling thread's region
    /// stack has in common with `path`.
    pub fn common_regions(&self, path: &[StackEntry]) -> usize {
        self.with_thread(|t, _| {
            let entries = t.blackboard.regions.entries();
            entries.iter().zip(path).take_while(|(a, b)| a == b).count()
        })
        .unwrap_or(0)
    }

    /// Ends the calling thread's region-stack entries from index `from` up
    /// (innermost first) and begins `with` in their place (outermost
    /// first). `removed` receives the ended entries, outermost first, so
    /// that a later call can put them back. Returns where the replacement
    /// starts: `from`, or the stack's length if it is shorter.
    pub fn replace_regions(&self, from: usize, with: &[StackEntry], removed: &mut Vec<StackEntry>) -> usize {
        removed.clear();
        let from = self
            .with_thread(|t, _| {
                let entries = t.blackboard.regions.entries();
                let from = from.min(entries.len());
                removed.extend_from_slice(&entries[from..]);
                from
            })
            .unwrap_or(from);
        for e in removed.iter().rev() {
            self.end(e.attr, Some(e.value));
        }
        for e in with {
            self.begin(e.attr, e.value);
        }
        from
    }

    /// The calling thread's region stack, outermost first, in `out`.
    pub fn region_stack(&self, out: &mut Vec<StackEntry>) {
        out.clear();
        self.with_thread(|t, _| out.extend_from_slice(t.blackboard.regions.entries()));
    }
}
