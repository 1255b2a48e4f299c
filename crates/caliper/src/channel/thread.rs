//! Per-thread state: the thread's blackboard, its caches, and its part of
//! every channel's measurement data.

use crate::blackboard::{Blackboard, ChildCache};
use crate::capture::Captures;
use crate::channel::{Channel, ChannelThread};
use crate::snapshot::Snapshot;
use crate::sync::BusyFlag;
use caliper_data::Entry;
use caliper_data::node::Id;
use std::cell::UnsafeCell;
use std::sync::Arc;

/// Everything a thread owns.
pub struct ThreadData {
    /// The thread's current context.
    pub blackboard: Blackboard,
    /// The thread's child lookups in the context tree.
    pub cache: ChildCache,
    /// False after a region stack error: the thread stops tracking.
    pub tracking: bool,
    /// The thread's state in each channel, by channel id.
    pub channels: Vec<Option<ChannelThread>>,
    /// The process context's snapshot entries, as of `process_version`.
    pub process_entries: Arc<Snapshot>,
    /// The process context version `process_entries` was taken at.
    pub process_version: u64,
    /// A reusable snapshot.
    pub snapshot: Snapshot,
    /// Snapshots taken in signal handlers, waiting to be processed (see
    /// [`crate::capture`]); allocated once the program asks for them.
    pub(crate) captures: Option<Captures>,
    /// The trigger entries of a memory region's snapshot, kept for reuse
    /// (a wrapped allocator hands every allocation to the channels).
    pub memory_entries: Vec<Entry>,
    /// The context nodes of fused region snapshots when the thread has
    /// unaligned context (e.g. the `pthread` service's marks).
    pub fused_context: FusedContext,
}

/// A thread's unaligned node followed by the process context's nodes (the
/// order of the generic path's snapshots), kept
/// until either changes, so that a thread with unaligned context (the
/// `pthread` service's marks) keeps the fused path.
#[derive(Default)]
pub struct FusedContext {
    /// What `nodes` was made of: the process context's version and the
    /// unaligned node.
    made_of: Option<(u64, Id)>,
    nodes: Vec<Id>,
}

impl FusedContext {
    /// `unaligned`, then the process context's nodes (as of `version`).
    #[inline]
    pub fn of(&mut self, process: &Snapshot, version: u64, unaligned: Id) -> &[Id] {
        if self.made_of != Some((version, unaligned)) {
            self.nodes.clear();
            self.nodes.push(unaligned);
            self.nodes.extend_from_slice(process.nodes());
            self.made_of = Some((version, unaligned));
        }
        &self.nodes
    }
}

impl ThreadData {
    fn new() -> ThreadData {
        ThreadData {
            blackboard: Blackboard::default(),
            cache: ChildCache::default(),
            tracking: true,
            channels: Vec::new(),
            process_entries: Arc::default(),
            process_version: u64::MAX,
            snapshot: Snapshot::default(),
            captures: None,
            memory_entries: Vec::new(),
            fused_context: FusedContext::default(),
        }
    }
}

/// The channels a thread hands its updates to: the active ones, as of a
/// version of the runtime's channel list. Kept beside the thread's data,
/// not in it, so that an update can walk the list while the channels
/// borrow the data mutably.
pub struct ActiveChannels {
    /// The active channels.
    pub list: Vec<Arc<Channel>>,
    /// Those of them that updates concern (see [`Channel::takes_updates`]).
    pub updated: Vec<Arc<Channel>>,
    /// The id of the only channel updates concern, if its region updates
    /// may take the express path (see [`Channel::takes_express`]): an id,
    /// not the channel, so that the path reads one pointer less.
    pub express: Option<usize>,
    /// The runtime's channel-list version `list` was taken at.
    pub version: u64,
}

impl ActiveChannels {
    /// No channels, as of no version.
    fn new() -> ActiveChannels {
        ActiveChannels { list: Vec::new(), updated: Vec::new(), express: None, version: u64::MAX }
    }

    /// Takes `list` as the active channels.
    pub fn set(&mut self, list: Vec<Arc<Channel>>) {
        self.updated = list.iter().filter(|c| c.takes_updates()).cloned().collect();
        self.express = match &*self.updated {
            [only] if only.takes_express() => Some(only.id()),
            _ => None,
        };
        self.list = list;
    }
}

/// A thread's data as the runtime's thread list holds it, shared with the
/// thread. When the thread exits, its channels take over what it measured
/// and the list lets go of the slot (see `runtime`). Aligned to two cache lines (the unit the hardware prefetches), so that
/// threads writing their own slots never share a line.
#[repr(align(128))]
pub struct ThreadSlot {
    /// Set while the owner updates `data`.
    pub busy: BusyFlag,
    data: UnsafeCell<ThreadData>,
    /// Read and written, like `data`, by the owner inside `busy`; a flush
    /// never reads it.
    active: UnsafeCell<ActiveChannels>,
}

// SAFETY: `data` is accessed by the owning thread inside `busy.enter()` /
// `busy.leave()`, and by a flush only while `StopUpdates` guarantees that
// no owner is inside; see `sync`.
unsafe impl Sync for ThreadSlot {}

impl ThreadSlot {
    /// A slot for a new thread.
    pub fn new() -> ThreadSlot {
        ThreadSlot {
            busy: BusyFlag::default(),
            data: UnsafeCell::new(ThreadData::new()),
            active: UnsafeCell::new(ActiveChannels::new()),
        }
    }

    /// The data, for a flush.
    ///
    /// # Safety
    /// Updates must be stopped (`sync::StopUpdates`) for as long as the
    /// reference lives, and no other reference to this slot's data exists.
    #[allow(clippy::mut_from_ref)] // exclusivity comes from the flush protocol
    pub unsafe fn data_for_flush(&self) -> &mut ThreadData {
        // SAFETY: guaranteed by the caller.
        unsafe { &mut *self.data.get() }
    }

    /// [`ThreadSlot::update`] from a signal handler on the owning thread:
    /// `None` at once, without waiting, if the handler interrupted an
    /// update or a flush runs.
    #[inline]
    pub fn update_in_signal<R>(&self, f: impl FnOnce(&mut ThreadData, &mut ActiveChannels) -> R) -> Option<R> {
        self.run_entered(self.busy.try_enter(), f)
    }

    /// Runs `f` on the data and the active channels if the thread may
    /// update them now (no flush running, not re-entered from a signal
    /// handler).
    #[inline]
    pub fn update<R>(&self, f: impl FnOnce(&mut ThreadData, &mut ActiveChannels) -> R) -> Option<R> {
        self.run_entered(self.busy.enter(), f)
    }

    /// Runs `f` on the data if `entered` (the busy flag was set by this
    /// thread's call), and leaves the flag after it, even if `f` panics.
    #[inline(always)]
    fn run_entered<R>(&self, entered: bool, f: impl FnOnce(&mut ThreadData, &mut ActiveChannels) -> R) -> Option<R> {
        if !entered {
            return None;
        }
        struct Leave<'a>(&'a BusyFlag);
        impl Drop for Leave<'_> {
            #[inline(always)]
            fn drop(&mut self) {
                self.0.leave();
            }
        }
        let _leave = Leave(&self.busy);
        // SAFETY: the busy flag is set: no flush reads the data, and a
        // re-entrant call (a signal handler on this thread) was refused;
        // the two cells are distinct.
        Some(f(unsafe { &mut *self.data.get() }, unsafe { &mut *self.active.get() }))
    }
}
