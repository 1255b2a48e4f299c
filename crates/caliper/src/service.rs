//! The service interface: what a service is to a channel. A [`Service`]
//! is a channel's part of the pipeline (its settings, its flush and its
//! output); its [`ThreadService`] is one thread's part (the hooks every
//! snapshot runs, and the data gathered). The channel calls the thread
//! objects on their own thread, and the service's flush sees them all
//! with updates stopped.

use crate::attributes::{Attribute, AttributeInfo, Builtins};
use crate::blackboard::{Blackboard, StackEntry};
use crate::capture::Outcome;
use crate::snapshot::{RegionAttributes, RegionSnapshot, Snapshot, Stamps};
use crate::tree::ContextTree;
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, Variant};
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What triggered a snapshot.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A begin of an attribute.
    Begin,
    /// A set.
    Set,
    /// An end.
    End,
    /// An explicit snapshot request.
    Explicit,
}

/// The trigger of a snapshot, for measuring services.
#[derive(Copy, Clone, Debug)]
pub struct Trigger {
    /// The kind of event.
    pub kind: EventKind,
    /// The attribute updated, for begin/set/end.
    pub attr: Option<Attribute>,
    /// Whether the snapshot was taken in a signal handler, which measured
    /// what needs the interrupted context (the call stack) there.
    pub in_signal: bool,
}

/// A service's part of one thread in one channel: its data and the
/// per-snapshot hooks. The channel calls the hooks on the thread's own
/// object, so a snapshot costs no lookup of the service's state.
pub trait ThreadService: Any + Send {
    /// Adds measurements to a snapshot. A service whose measurements are
    /// [region counters](Service::region_counters) leaves it alone: the
    /// channel reads those itself.
    fn measure(&mut self, _cali: &dyn Runtime, _snapshot: &mut Snapshot, _trigger: &Trigger) {}
    /// Consumes a snapshot.
    fn process(&mut self, _cali: &dyn Runtime, _snapshot: &Snapshot) {}
    /// Consumes the snapshot of a region begin or end in its common shape;
    /// the same as [`process`](ThreadService::process) of the equivalent
    /// snapshot (which this default builds in `scratch`). Services that
    /// override it read the shape directly.
    fn process_region(&mut self, cali: &dyn Runtime, region: &RegionSnapshot<'_>, scratch: &mut Snapshot) {
        region.write_to(scratch);
        self.process(cali, scratch);
    }
    /// Learns the attributes of the channel's region snapshots before the
    /// first [`process_region`](ThreadService::process_region), in a
    /// channel that takes them: those snapshots carry these and no others.
    fn region_attributes(&mut self, _cali: &dyn Runtime, _attrs: &RegionAttributes) {}
    /// Sees an update before it happens (if the service
    /// [observes](Service::observes)) and says whether the channel takes a
    /// snapshot for it, with the entries added to `trigger`.
    fn observe(
        &mut self,
        _cali: &dyn Runtime,
        _kind: EventKind,
        _attr: Attribute,
        _value: ValueKey,
        _trigger: &mut Vec<Entry>,
    ) -> Observation {
        Observation::Ignore
    }
}

/// What an observing service asks of the channel after an update.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// Nothing.
    Ignore,
    /// Run the measuring services only (e.g. to restart the timer's
    /// duration), keeping no snapshot.
    Measure,
    /// Take a snapshot with the trigger entries.
    Snapshot,
}

/// Services without per-thread data.
impl ThreadService for () {}

/// Per-thread state of one service in one channel.
pub type ServiceState = Box<dyn ThreadService>;

/// A thread state as its service's own type, for the service's flush and
/// clear.
pub fn state_mut<T: ThreadService>(state: &mut dyn ThreadService) -> Option<&mut T> {
    let any: &mut dyn Any = state;
    any.downcast_mut::<T>()
}

/// A service: a part of a channel's pipeline. Every hook is optional.
pub trait Service: Send + Sync {
    /// The service's name.
    fn name(&self) -> &'static str;
    /// Whether the service's thread objects see every update
    /// ([`ThreadService::observe`]).
    fn observes(&self) -> bool {
        false
    }
    /// Whether the service adds measurements to snapshots
    /// ([`ThreadService::measure`]).
    fn measures(&self) -> bool {
        false
    }
    /// Whether the service consumes snapshots ([`ThreadService::process`])
    /// and emits records at flush.
    fn processes(&self) -> bool {
        false
    }
    /// Whether the service emits records at flush ([`Service::flush`]):
    /// those that process snapshots, and those that gather otherwise
    /// (`allocstats`).
    fn flushes(&self) -> bool {
        self.processes()
    }
    /// Whether the service writes output at flush.
    fn writes_output(&self) -> bool {
        false
    }
    /// Whether the service asked, since the last call, for the channel to
    /// be flushed (e.g. a full trace buffer under the flush policy). The
    /// runtime flushes after the update that asked, outside it.
    fn take_flush_request(&self) -> bool {
        false
    }
    /// Whether the channel takes snapshots of asynchronous events because
    /// of this service.
    fn takes_async_events(&self) -> bool {
        false
    }
    /// Whether the service takes snapshots of its own, at intervals and
    /// wherever the program is (a sampler), whatever the program
    /// annotates.
    fn samples(&self) -> bool {
        false
    }
    /// The subscription attributes (metadata `subscription_event=true`)
    /// whose updates the channel takes snapshots of because of this
    /// service: those it makes, such as the `io` service's `io.region`.
    /// Such an attribute is updated in every channel, whichever enabled the
    /// service that updates it; a channel without that service takes no
    /// snapshots of it.
    fn subscriptions(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether the service sees memory regions begun and ended
    /// ([`Service::track_memory`]).
    fn tracks_memory(&self) -> bool {
        false
    }
    /// Sees a memory region begun or ended on the calling thread, whose
    /// region path (its blackboard's regions) is the node `path`. Entries
    /// the service adds to `snapshot` are taken as a snapshot of the
    /// channel, on that thread, after every tracking service has seen the
    /// event. Allocations and frees come from any thread, in any order:
    /// the service keeps what it tracks across threads.
    fn track_memory(
        &self,
        _cali: &dyn Runtime,
        _event: &MemoryEvent<'_>,
        _path: Option<Id>,
        _snapshot: &mut Vec<Entry>,
    ) {
    }
    /// A new thread's readings of a timer that adds only offsets and
    /// durations, whatever the trigger: the channel keeps them inline
    /// instead of a [`thread_state`](Service::thread_state), and stamps
    /// region snapshots with them without building a [`Snapshot`]. `None`
    /// for other services.
    fn inline_timer(&self) -> Option<Stamps> {
        None
    }
    /// The per-thread counters whose values and changes the service adds
    /// to every snapshot, whatever its trigger: the channel reads them
    /// itself, a load each, so a channel whose measuring services all have
    /// only these keeps the fused path, with the values in the region
    /// snapshots' [measurement slots](crate::snapshot::Measured), and a
    /// signal handler reads them as safely. Empty for a service whose
    /// measurements depend on the trigger or must be computed (it
    /// implements [`ThreadService::measure`]).
    fn region_counters(&self) -> Vec<RegionCounter> {
        Vec::new()
    }
    /// Learns the [id](crate::channel::Channel::id) of the channel the
    /// service is part of, once the channel is made: what a signal handler
    /// names it by (see [`crate::signal`]).
    fn attach(&self, _channel: usize) {}
    /// Sets up a thread's context the first time it meets the channel.
    fn on_new_thread(&self, _cali: &dyn Runtime, _blackboard: &mut Blackboard) {}
    /// A new thread's part of this service.
    fn thread_state(&self) -> ServiceState {
        Box::new(())
    }
    /// Prepares a flush of the channel, before any record or global is
    /// read (the reference's `pre_flush_evt`): e.g. `adiak_import` turns
    /// the program's Adiak values into globals here. Updates are stopped.
    fn pre_flush(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {}
    /// Emits the records gathered in the threads' states.
    fn flush(&self, _cali: &dyn Runtime, _states: &mut [&mut dyn ThreadService], _emit: &mut dyn FnMut(&Record)) {}
    /// Whether the service edits the channel's flushed records
    /// ([`Service::postprocess`]).
    fn postprocesses(&self) -> bool {
        false
    }
    /// Edits a record the channel flushes, before any output sees it (e.g.
    /// `symbollookup` adds the functions of its addresses).
    fn postprocess(&self, _cali: &dyn Runtime, _record: &mut Record) {}
    /// Drops what the threads' states gathered.
    fn clear(&self, _states: &mut [&mut dyn ThreadService]) {}
    /// Adds what `from`, the state of a thread that has exited, gathered
    /// to `into`, the state of threads that exited before (kept by the
    /// channel until they are flushed), so that the channel keeps one
    /// such state, not one per exited thread; `from` is dropped after.
    /// `false` if the service does not merge: the channel then keeps
    /// `from` beside `into`.
    fn absorb(&self, _cali: &dyn Runtime, _into: &mut dyn ThreadService, _from: &mut dyn ThreadService) -> bool {
        false
    }
    /// Whether the channel writes its output before `MPI_Finalize`
    /// (`mpiflush`, and `mpireport` by its setting; see [`crate::mpi`]).
    fn flushes_at_finalize(&self) -> bool {
        false
    }
    /// Writes the channel's output (flushing the channel as needed).
    fn write_output(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {}
    /// Last words at the end of the program.
    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {}
}

/// The runtime as a service sees it: the context tree, the attributes, the
/// calling thread's values and what a service reports about the run. The
/// runtime implements it; a service holds no other handle on it.
pub trait Runtime: Sync {
    /// The context tree.
    fn tree(&self) -> &ContextTree;
    /// The attributes every program has.
    fn builtins(&self) -> &Builtins;
    /// Creates attribute `name` (or returns the existing one).
    fn create_attribute(&self, name: &str, ty: AttrType, props: Properties, metadata: &[(Id, Variant)]) -> Attribute;
    /// The attribute called `name`, if it exists.
    fn find_attribute(&self, name: &str) -> Option<Attribute>;
    /// The attribute with id `id`, with its name.
    fn attribute_info(&self, id: Id) -> Option<AttributeInfo>;
    /// The innermost value of `attr` on the calling thread (or process).
    fn get(&self, attr: Attribute) -> Option<Variant>;
    /// The number of mismatched ends so far.
    fn stack_errors(&self) -> u64;
    /// The regions each thread has open (updates must be stopped).
    fn open_regions(&self) -> Vec<String>;
    /// Sets a global attribute of the process (run metadata, e.g. the
    /// sampler's `sample.frequency`), outside any thread's update.
    fn set_global(&self, attr: Attribute, value: ValueKey);
    /// Sets several global attributes of the process in one update of the
    /// process context, so that the cost grows with their number, not its
    /// square (e.g. `adiak_import`'s metadata).
    fn set_globals(&self, values: &[(Attribute, ValueKey)]);
    /// The async-signal-safe snapshot entry, for a service's signal
    /// handler (see [`crate::signal`]).
    fn signal_entry(&self) -> SignalEntry;
    /// Asks for the channels whose services want it to be flushed once the
    /// calling thread's update is done (see [`Service::take_flush_request`]).
    fn request_flush(&self);
    /// How code that runs outside any hook (a wrapper of a library
    /// function the program calls) finds the runtime.
    fn global(&self) -> GlobalRuntime;
    /// Begins region `value` of `attr` on the calling thread.
    fn begin(&self, attr: Attribute, value: ValueKey);
    /// Ends the innermost region of `attr` on the calling thread.
    fn end(&self, attr: Attribute);
    /// Sets `attr` to `value` on the calling thread.
    fn set(&self, attr: Attribute, value: ValueKey);
    /// Takes an explicit snapshot on every active channel, with `trigger`
    /// entries added (e.g. a CUDA stream synchronised).
    fn push_snapshot(&self, trigger: &[Entry]);
    /// The context-tree node of the calling thread's region path (`None`
    /// outside any region): what work started there and measured
    /// elsewhere (a GPU kernel) is put under.
    fn path_node(&self) -> Option<Id>;
    /// Hands a memory region begun or ended on the calling thread to the
    /// active channels' [tracking services](Service::track_memory).
    fn track_memory(&self, event: &MemoryEvent<'_>);
    /// The calling thread's region stack, outermost first, in `out`: what
    /// work handed to other threads takes with it (see
    /// [`Caliper::region_stack`](crate::Caliper::region_stack)).
    fn region_stack(&self, out: &mut Vec<StackEntry>);
    /// Makes the calling thread's region stack `path`, the ended entries in
    /// `replaced`; returns how many entries were common (see
    /// [`Caliper::switch_regions`](crate::Caliper::switch_regions)).
    fn switch_regions(&self, path: &[StackEntry], replaced: &mut Vec<StackEntry>) -> usize;
    /// Ends the calling thread's region-stack entries from `from` up and
    /// begins `with` in their place (see
    /// [`Caliper::replace_regions`](crate::Caliper::replace_regions)).
    fn replace_regions(&self, from: usize, with: &[StackEntry], removed: &mut Vec<StackEntry>) -> usize;
}

/// The runtime once it is ready and until it finishes; `None` otherwise
/// (it never initialises the runtime: a wrapped `malloc` may run inside
/// the initialisation).
pub type GlobalRuntime = fn() -> Option<&'static dyn Runtime>;

/// A memory region begun or ended: by the program
/// (`cali_datatracker_track`), or by an allocation function that a service
/// wraps (`sysalloc`).
#[derive(Clone, Copy, Debug)]
pub enum MemoryEvent<'a> {
    /// A region begins.
    Begin(MemoryRegion<'a>),
    /// The region that begins at `address` ends.
    End {
        /// The region's first byte, as its begin gave it.
        address: u64,
    },
}

/// A tracked memory region: `dims` elements of `elem_size` bytes at
/// `address`, named `label`.
#[derive(Clone, Copy, Debug)]
pub struct MemoryRegion<'a> {
    /// The first byte; the region's identity, which its end names.
    pub address: u64,
    /// The name the program or the wrapped function gave it (the
    /// `alloc.label` of its snapshots).
    pub label: &'a str,
    /// Bytes per element; the region's size is this times the product of
    /// `dims`.
    pub elem_size: u64,
    /// The extent of each dimension, in elements.
    pub dims: &'a [u64],
}

impl MemoryRegion<'_> {
    /// The number of elements (the product of the dimensions).
    pub fn elements(&self) -> u64 {
        self.dims.iter().fold(1u64, |n, &d| n.saturating_mul(d))
    }
    /// The size in bytes.
    pub fn total_size(&self) -> u64 {
        self.elements().saturating_mul(self.elem_size)
    }
}

/// Takes a snapshot in channel `channel` from a signal handler, with these
/// trigger entries and call path: see [`crate::signal`].
pub type SignalEntry = fn(channel: usize, trigger: &[(Id, ValueKey)], path: Option<(Id, &[u64])>) -> Outcome;

/// A channel as its services see it when they write output: its name, and
/// its records and run metadata (updates are stopped while they write).
pub trait ChannelView {
    /// The channel's name.
    fn name(&self) -> &str;
    /// Hands every record the channel's processing services gathered to
    /// `emit`.
    fn records(&self, emit: &mut dyn FnMut(&Record));
    /// The channel's run metadata (its globals) as one record.
    fn globals(&self) -> Record;
    /// Whether a service of the channel samples (see [`Service::samples`]).
    fn samples(&self) -> bool;
}

/// A count that a service keeps per thread and that the thread advances
/// itself (bytes allocated, bytes read, events seen), shared with the
/// channels that read it at every snapshot (see [`RegionCounter`]).
/// Advanced with a load and a store, not a locked add: only its thread
/// writes it.
#[derive(Clone, Debug, Default)]
pub struct ThreadCounter(Arc<AtomicU64>);

impl ThreadCounter {
    /// Adds `n` (wrapping). Call only on the counter's own thread.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.get().wrapping_add(n), Ordering::Relaxed);
    }

    /// The count so far.
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A service's per-thread counter as its channels read it (see
/// [`Service::region_counters`]): the attributes a snapshot gets, and the
/// calling thread's counter.
#[derive(Copy, Clone, Debug)]
pub struct RegionCounter {
    /// The attribute of the counter's value at the snapshot, if recorded.
    pub absolute: Option<Id>,
    /// The attribute of the counter's change since the thread's previous
    /// snapshot in the channel, if recorded.
    pub delta: Option<Id>,
    /// The calling thread's counter: called once per thread, on it, when
    /// the thread first meets the channel (so not in a signal handler).
    pub counter: fn() -> ThreadCounter,
}

impl RegionCounter {
    /// The attributes of its measurements, in the order the channel writes
    /// them: the value, then the change.
    pub fn attributes(&self) -> impl Iterator<Item = Id> {
        self.absolute.into_iter().chain(self.delta)
    }
}
