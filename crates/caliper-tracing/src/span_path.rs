//! A span's region path, shared by the span (in its extensions) and the
//! threads that made or entered it lately (a small cache per thread), so
//! that entering a span again looks nothing up in the registry: its
//! lookup and the lock of its extensions are most of what a span's enter
//! would cost otherwise.

use caliper::blackboard::StackEntry;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tracing::span::Id;

/// What a span begins when entered.
pub(crate) struct SpanPath {
    /// The path the span was made in, then its own entries (its fields,
    /// then its region).
    path: Vec<StackEntry>,
    /// Where its own entries start.
    own_start: usize,
    /// The regions it left open at its last exit (a future suspended inside
    /// a Caliper region), which its next enter puts back; `has_left_open`
    /// tells whether there are any without taking the lock.
    left_open: Mutex<Vec<StackEntry>>,
    has_left_open: AtomicBool,
    /// Set when the span closes or its fields change: a thread's cached
    /// copy is then out of date (and a new span may have the same id).
    stale: AtomicBool,
    /// When the span was last exited, if its time suspended counts.
    pub exited_at: Mutex<Option<Instant>>,
}

impl SpanPath {
    /// A span's path: `path`, its own entries from `own_start`.
    pub fn new(path: Vec<StackEntry>, own_start: usize) -> Arc<SpanPath> {
        Arc::new(SpanPath {
            path,
            own_start,
            left_open: Mutex::new(Vec::new()),
            has_left_open: AtomicBool::new(false),
            stale: AtomicBool::new(false),
            exited_at: Mutex::new(None),
        })
    }

    /// The path the span makes, without what it left open.
    pub fn path(&self) -> &[StackEntry] {
        &self.path
    }

    /// Runs `f` with the stack the span enters with: its path, then what
    /// it left open.
    pub fn with_stack<R>(&self, f: impl FnOnce(&[StackEntry]) -> R) -> R {
        if !self.has_left_open.load(Ordering::Acquire) {
            return f(&self.path);
        }
        let mut stack = self.path.clone();
        stack.extend(self.left_open.lock().map(|l| l.clone()).unwrap_or_default());
        f(&stack)
    }

    /// Keeps what the span leaves open at its exit, from the thread's
    /// stack then: the first `kept` entries as the span entered with them,
    /// then `above`. Code that ended the span's own entries inside it (a
    /// stack error, reported by the runtime) leaves nothing to keep.
    pub fn set_left_open(&self, kept: usize, above: &[StackEntry]) {
        let Ok(mut left) = self.left_open.lock() else { return };
        let n = self.path.len();
        let tail = match kept.checked_sub(n) {
            // The span's own entries were above `kept`: still there?
            None => match above.get(..n - kept) {
                Some(own) if own == &self.path[kept..] => above[n - kept..].to_vec(),
                _ => Vec::new(),
            },
            // Some of what it had left open was common with the thread's.
            Some(common) => left.get(..common).unwrap_or_default().iter().chain(above).copied().collect(),
        };
        self.has_left_open.store(!tail.is_empty(), Ordering::Release);
        *left = tail;
    }

    /// This path with its own entries changed by `edit` (a field recorded
    /// later), what it left open kept; this one goes out of date.
    pub fn edited(&self, edit: impl FnOnce(&mut Vec<StackEntry>, usize)) -> Arc<SpanPath> {
        let mut path = self.path.clone();
        edit(&mut path, self.own_start);
        let new = SpanPath::new(path, self.own_start);
        let left = self.left_open.lock().map(|l| l.clone()).unwrap_or_default();
        new.has_left_open.store(!left.is_empty(), Ordering::Release);
        if let Ok(mut l) = new.left_open.lock() {
            *l = left;
        }
        self.mark_stale();
        new
    }

    /// The span closed (or changed): cached copies must not be used.
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
    }
}

/// How many spans a thread keeps (direct-mapped by id).
const RECENT: usize = 16;

/// A thread's recent spans: slot `slot(id)` holds span `id`'s path.
type Recent = [Option<(Id, Arc<SpanPath>)>; RECENT];

thread_local! {
    static RECENT_PATHS: RefCell<Recent> = const { RefCell::new([const { None }; RECENT]) };
}

fn slot(id: &Id) -> usize {
    (id.into_u64().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % RECENT
}

/// Runs `f` with the path of span `id` if this thread has it, up to date;
/// `None` otherwise (then look it up, and [`remember`] it).
pub(crate) fn with_recent<R>(id: &Id, f: impl FnOnce(&SpanPath) -> R) -> Option<R> {
    RECENT_PATHS
        .try_with(|recent| {
            let recent = recent.try_borrow().ok()?;
            match &recent[slot(id)] {
                Some((cached, path)) if cached == id && !path.stale.load(Ordering::Acquire) => Some(f(path)),
                _ => None,
            }
        })
        .ok()
        .flatten()
}

/// Keeps the path of span `id` in this thread's cache.
pub(crate) fn remember(id: &Id, path: &Arc<SpanPath>) {
    let _ = RECENT_PATHS.try_with(|recent| {
        if let Ok(mut recent) = recent.try_borrow_mut() {
            recent[slot(id)] = Some((id.clone(), path.clone()));
        }
    });
}

/// Drops span `id` from this thread's cache (it closed).
pub(crate) fn forget(id: &Id) {
    let _ = RECENT_PATHS.try_with(|recent| {
        if let Ok(mut recent) = recent.try_borrow_mut()
            && recent[slot(id)].as_ref().is_some_and(|(cached, _)| cached == id)
        {
            recent[slot(id)] = None;
        }
    });
}
