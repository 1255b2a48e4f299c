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
}

thread_local! {
    static ENTERED: RefCell<Vec<Entered>> = const { RefCell::new(Vec::new()) };
    /// A buffer for the entries a span leaves open at its exit.
    static LEFT_OPEN: RefCell<Vec<StackEntry>> = const { RefCell::new(Vec::new()) };
}

/// Records that `entered` was entered on this thread.
pub(crate) fn push(entered: Entered) {
    let _ = ENTERED.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            e.push(entered);
        }
    });
}

/// Takes the innermost entry of span `id` (the last one unless spans were
/// exited out of order).
pub(crate) fn pop(id: &Id) -> Option<Entered> {
    ENTERED
        .try_with(|e| {
            let mut e = e.try_borrow_mut().ok()?;
            let i = e.iter().rposition(|entered| entered.id == *id)?;
            Some(e.remove(i))
        })
        .ok()
        .flatten()
}

/// Runs `f` with the thread's buffer for left-open entries, taken out
/// for the call and put back after, so that its capacity is reused.
pub(crate) fn with_left_open<R>(f: impl FnOnce(&mut Vec<StackEntry>) -> R) -> R {
    let mut buf = LEFT_OPEN.try_with(|b| b.take()).unwrap_or_default();
    let r = f(&mut buf);
    let _ = LEFT_OPEN.try_with(|b| b.replace(buf));
    r
}
