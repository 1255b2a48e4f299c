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
    /// Makes the calling thread's region stack `path`: ends the entries
    /// above what the two have in common and begins the rest of `path`.
    /// `replaced` receives the ended entries, outermost first; returns how
    /// many entries were common, so that [`Caliper::replace_regions`] from
    /// there with `replaced` puts the thread's stack back.
    pub fn switch_regions(&self, path: &[StackEntry], replaced: &mut Vec<StackEntry>) -> usize {
        replaced.clear();
        let common = self
            .with_thread(|t, _| {
                let entries = t.blackboard.regions.entries();
                let common = entries.iter().zip(path).take_while(|(a, b)| a == b).count();
                replaced.extend_from_slice(&entries[common..]);
                common
            })
            .unwrap_or(0);
        self.end_and_begin(replaced, &path[common..]);
        common
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
        self.end_and_begin(removed, with);
        from
    }

    /// Ends `ended` (innermost first), then begins `begun`.
    fn end_and_begin(&self, ended: &[StackEntry], begun: &[StackEntry]) {
        for e in ended.iter().rev() {
            self.end(e.attr, Some(e.value));
        }
        for e in begun {
            self.begin(e.attr, e.value);
        }
    }

    /// The calling thread's region stack, outermost first, in `out`.
    pub fn region_stack(&self, out: &mut Vec<StackEntry>) {
        out.clear();
        self.with_thread(|t, _| out.extend_from_slice(t.blackboard.regions.entries()));
    }
}
