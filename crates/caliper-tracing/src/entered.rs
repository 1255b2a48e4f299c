//! The spans entered on the calling thread, innermost last, each with the
//! thread's region-stack entries it replaced, to be put back at its exit.

use caliper::blackboard::StackEntry;
use std::cell::RefCell;
use tracing::span::Id;

/// An entered span.
pub(crate) struct Entered {
    /// The span.
    pub id: Id,
    /// Where the span's entries start on the thread's stack: below it the
    /// thread's and the span's paths are the same and stayed open.
    pub keep: usize,
    /// The thread's entries from `keep` up that the span's replaced
    /// (none when the span was entered in its parent, the common case).
    pub replaced: Vec<StackEntry>,
    /// The length and the innermost entry of the span's stack as entered:
    /// the same at its exit unless the span leaves regions open.
    pub len: usize,
    pub top: Option<StackEntry>,
}

impl Entered {
    /// Makes this span's exit put back what `earlier`'s would have: the
    /// stack before `earlier` was entered, which was entered before this
    /// one and has exited first.
    fn restore_instead(&mut self, earlier: Entered) {
        if self.keep <= earlier.keep {
            // Below `earlier.keep`, what this span replaced is what was
            // there before `earlier` too.
            self.replaced.truncate(earlier.keep - self.keep);
            self.replaced.extend_from_slice(&earlier.replaced);
        } else {
            self.keep = earlier.keep;
            self.replaced = earlier.replaced;
        }
    }

    /// Whether the thread's stack at the span's exit, `left_open` from
    /// `kept` up, is the one it entered with. Code ends only the innermost
    /// entry, so a changed stack has another length or innermost entry.
    pub fn unchanged(&self, kept: usize, left_open: &[StackEntry]) -> bool {
        kept == self.keep
            && kept + left_open.len() == self.len
            && (left_open.is_empty() || left_open.last() == self.top.as_ref())
    }
}

/// The thread's entered spans and a buffer for the entries a span leaves
/// open at its exit (kept for its capacity).
struct Thread {
    entered: Vec<Entered>,
    left_open: Vec<StackEntry>,
    /// The span whose exit last counted a suspension, while it is open
    /// and nothing has been entered since (see [`suspension_counted`]).
    counted: Option<Id>,
}

thread_local! {
    /// Initialised without code: each access skips the first-use check.
    static THREAD: RefCell<Thread> = const { RefCell::new(Thread { entered: Vec::new(), left_open: Vec::new(), counted: None }) };
}

/// Records that a span was entered on this thread.
pub(crate) fn push(entered: Entered) {
    let _ = THREAD.try_with(|t| {
        if let Ok(mut t) = t.try_borrow_mut() {
            t.entered.push(entered);
        }
    });
}

/// Takes the innermost entry of span `id` and runs `f` with it and the
/// buffer for the entries the span leaves open. Nothing is borrowed while
/// `f` runs. A span exited before spans entered after it (out of order)
/// changes nothing now: the next of them puts back, at its exit, what was
/// there before this one was entered.
pub(crate) fn exit<R>(id: &Id, f: impl FnOnce(Entered, &mut Vec<StackEntry>) -> R) -> Option<R> {
    THREAD
        .try_with(|t| {
            let (entered, mut left_open) = {
                let mut t = t.try_borrow_mut().ok()?;
                let entered = if t.entered.last().is_some_and(|last| last.id == *id) {
                    t.entered.pop()?
                } else {
                    let i = t.entered.iter().rposition(|entered| entered.id == *id)?;
                    let entered = t.entered.remove(i);
                    if let Some(next) = t.entered.get_mut(i) {
                        next.restore_instead(entered);
                        return None;
                    }
                    entered
                };
                (entered, std::mem::take(&mut t.left_open))
            };
            let r = f(entered, &mut left_open);
            if let Ok(mut t) = t.try_borrow_mut() {
                t.left_open = left_open;
            }
            Some(r)
        })
        .ok()
        .flatten()
}

/// Whether span `id`, exited now, is the one to count the time until its
/// next enter as suspended: not when a span inside it, exited just before
/// and still open (a future suspended inside the future this span
/// instruments), counts it already. Only for spans that count it.
pub(crate) fn suspension_counted(id: &Id) -> bool {
    THREAD
        .try_with(|t| {
            let mut t = t.try_borrow_mut().ok()?;
            let inner = t.counted.replace(id.clone());
            Some(inner.is_none())
        })
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// A span was entered, or `closed` was: neither counts a suspension any
/// more for the spans around it.
pub(crate) fn reset_suspension(closed: Option<&Id>) {
    let _ = THREAD.try_with(|t| {
        if let Ok(mut t) = t.try_borrow_mut()
            && (closed.is_none() || t.counted.as_ref() == closed)
        {
            t.counted = None;
        }
    });
}
