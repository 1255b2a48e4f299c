//! Snapshots from signal handlers: the one entry point a sampler or a
//! signal-driven trigger may call from inside a handler, and the
//! per-thread buffer it writes.
//!
//! A handler can interrupt its thread anywhere, inside `malloc` or holding
//! a lock, so [`push_snapshot_from_signal`] takes no lock, allocates
//! nothing and initialises no thread-local state. It captures what is
//! cheap and exact at that moment (the thread's context as its stacks hold
//! it, the timer's reading and the region measurements) into a buffer the
//! thread prepared beforehand, and the channels process the capture later,
//! outside the handler: at the thread's next update, at a flush, or when
//! the thread exits. A capture that cannot be made is dropped and counted
//! by reason ([`counts`]): the thread has no buffer (it never annotated or
//! called [`prepare_thread`]), the handler interrupted an update or a
//! flush, the buffer is full, or the context is deeper than a capture
//! holds.
//!
//! The measuring services' [region counters](crate::service::RegionCounter)
//! are read in the handler (a load each); services that measure through
//! [`measure`](crate::service::ThreadService::measure) measure a capture
//! when it is processed.

use crate::snapshot::Time;
use crate::value::ValueKey;
use caliper_data::node::Id;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Captures a thread holds between two of its updates.
pub const CAPACITY: usize = 256;
/// Entries of a stack above its last node that a capture holds: those
/// begun since the thread's last snapshot or signal capture (processing
/// captures gives the stacks their nodes).
pub const MAX_OPEN: usize = 8;
/// As-value entries (thread context and trigger) a capture holds.
pub const MAX_VALUES: usize = 8;
/// Region measurements a capture holds.
pub const MAX_MEASURED: usize = 8;
/// Frames of a call path a capture holds (the innermost ones).
pub const MAX_FRAMES: usize = 64;

/// Set once a program asked for signal snapshots: updates then look after
/// their thread's buffer (allocate it, process its captures).
pub(crate) static WANTED: AtomicBool = AtomicBool::new(false);

/// Why a capture was dropped, and how many were taken.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Captures taken (and processed or waiting to be).
    pub taken: u64,
    /// Dropped: the thread had no buffer (or the runtime was not ready).
    pub no_thread: u64,
    /// Dropped: the handler interrupted an update or a flush.
    pub busy: u64,
    /// Dropped: the thread's buffer was full.
    pub full: u64,
    /// Dropped: the context did not fit a capture (see [`MAX_OPEN`],
    /// [`MAX_VALUES`], [`MAX_MEASURED`]) or the channel is not active on
    /// the thread.
    pub unfit: u64,
}

static TAKEN: AtomicU64 = AtomicU64::new(0);
static NO_THREAD: AtomicU64 = AtomicU64::new(0);
static BUSY: AtomicU64 = AtomicU64::new(0);
static FULL: AtomicU64 = AtomicU64::new(0);
static UNFIT: AtomicU64 = AtomicU64::new(0);

/// The counts so far, over all threads.
pub fn counts() -> Counts {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    Counts { taken: get(&TAKEN), no_thread: get(&NO_THREAD), busy: get(&BUSY), full: get(&FULL), unfit: get(&UNFIT) }
}

/// What became of a signal snapshot.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Captured; the channel processes it later.
    Taken,
    /// Dropped: the thread has no buffer.
    NoThread,
    /// Dropped: the thread was inside an update or a flush.
    Busy,
    /// Dropped: the thread's buffer is full.
    Full,
    /// Dropped: the context does not fit, or the channel is not active.
    Unfit,
}

impl Outcome {
    /// Counts the outcome.
    pub(crate) fn count(self) -> Outcome {
        let counter = match self {
            Outcome::Taken => &TAKEN,
            Outcome::NoThread => &NO_THREAD,
            Outcome::Busy => &BUSY,
            Outcome::Full => &FULL,
            Outcome::Unfit => &UNFIT,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self
    }
}

/// A fixed-capacity list of entries, copied whole.
#[derive(Copy, Clone)]
pub(crate) struct Entries<const N: usize> {
    items: [(Id, ValueKey); N],
    len: usize,
}

impl<const N: usize> Entries<N> {
    const EMPTY: Entries<N> = Entries { items: [(0, ValueKey::EMPTY); N], len: 0 };

    /// Copies `items`; `None` if they do not fit.
    pub(crate) fn of(items: impl Iterator<Item = (Id, ValueKey)>) -> Option<Entries<N>> {
        let mut entries = Entries::EMPTY;
        for item in items {
            *entries.items.get_mut(entries.len)? = item;
            entries.len += 1;
        }
        Some(entries)
    }

    pub(crate) fn as_slice(&self) -> &[(Id, ValueKey)] {
        &self.items[..self.len]
    }
}

/// A stack as a capture holds it: its last node (the entries that have
/// one) and the entries above it.
#[derive(Copy, Clone)]
pub(crate) struct StackCut {
    pub node: Option<Id>,
    pub open: Entries<MAX_OPEN>,
}

/// One capture.
#[derive(Copy, Clone)]
pub(crate) struct Capture {
    pub channel: usize,
    pub regions: StackCut,
    pub unaligned: StackCut,
    /// The thread's visible as-value entries, then the trigger's.
    pub values: Entries<MAX_VALUES>,
    /// How many of `values` are the trigger's (the last ones).
    pub trigger: usize,
    pub time: Option<Time>,
    pub measured: [u64; MAX_MEASURED],
    pub path: CallPath,
}

/// A call path taken with a capture: addresses of one attribute, outermost
/// first, which processing turns into a path of context-tree nodes.
#[derive(Copy, Clone)]
pub(crate) struct CallPath {
    pub attr: Id,
    pub len: usize,
    pub frames: [u64; MAX_FRAMES],
}

impl CallPath {
    const EMPTY: CallPath = CallPath { attr: 0, len: 0, frames: [0; MAX_FRAMES] };

    /// `frames` (outermost first) of `attr`, the innermost ones if they do
    /// not all fit.
    pub(crate) fn of(attr: Id, frames: &[u64]) -> CallPath {
        let mut path = CallPath { attr, ..CallPath::EMPTY };
        let kept = &frames[frames.len().saturating_sub(MAX_FRAMES)..];
        path.frames[..kept.len()].copy_from_slice(kept);
        path.len = kept.len();
        path
    }

    pub(crate) fn frames(&self) -> &[u64] {
        &self.frames[..self.len]
    }
}

impl Capture {
    const EMPTY: Capture = Capture {
        channel: 0,
        regions: StackCut { node: None, open: Entries::EMPTY },
        unaligned: StackCut { node: None, open: Entries::EMPTY },
        values: Entries::EMPTY,
        trigger: 0,
        time: None,
        measured: [0; MAX_MEASURED],
        path: CallPath::EMPTY,
    };
}

/// A thread's captures waiting to be processed.
pub(crate) struct Captures {
    buffer: Box<[Capture]>,
    len: usize,
}

impl Captures {
    /// An empty buffer of [`CAPACITY`] captures.
    pub(crate) fn new() -> Captures {
        Captures { buffer: vec![Capture::EMPTY; CAPACITY].into_boxed_slice(), len: 0 }
    }

    /// The next free capture, if there is room; [`Captures::commit`] keeps
    /// it.
    pub(crate) fn next_free(&mut self) -> Option<&mut Capture> {
        self.buffer.get_mut(self.len)
    }

    /// Keeps the capture [`Captures::next_free`] gave.
    pub(crate) fn commit(&mut self) {
        self.len = (self.len + 1).min(self.buffer.len());
    }

    /// Whether captures wait.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many captures wait.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Waiting capture `i`, copied out (processing it needs the thread's
    /// data, which holds the buffer).
    pub(crate) fn get(&self, i: usize) -> Option<Capture> {
        self.buffer[..self.len].get(i).copied()
    }

    /// Forgets the waiting captures (once processed).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}
