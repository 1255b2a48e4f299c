//! Channels: independent measurement configurations, each with its own
//! services, and the snapshot pipeline they run on every event.
//!
//! A snapshot is taken *before* the blackboard changes: it holds the
//! thread's context, the process's context, trigger information
//! (`event.begin#region=foo` as a child of the current region node, which
//! replaces the plain region entry), then the measurements of the
//! measuring services (the timer); the processing services (aggregate,
//! trace) consume it.

use crate::attributes::Attribute;
use crate::blackboard::{Blackboard, ChildCache, Stack, StackEntry};
use crate::config::RuntimeConfig;
use crate::region_filter::{NameFilter, RegionFilter};
use crate::runtime::Caliper;
use crate::services::InlineProcessor;
use crate::services::timer::TimerThread;
use crate::snapshot::{RegionAttributes, RegionSnapshot, Snapshot};
use crate::sparse::{PAGE, Sparse};
use crate::sync;
use crate::thread::ThreadData;
use crate::tree::ContextTree;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, Variant};
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

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
}

/// A service's part of one thread in one channel: its data and the
/// per-snapshot hooks. The channel calls the hooks on the thread's own
/// object, so a snapshot costs no lookup of the service's state.
pub trait ThreadService: Any + Send {
    /// Adds measurements to a snapshot.
    fn measure(&mut self, _snapshot: &mut Snapshot, _trigger: &Trigger) {}
    /// Consumes a snapshot.
    fn process(&mut self, _cali: &Caliper, _snapshot: &Snapshot) {}
    /// Consumes the snapshot of a region begin or end in its common shape;
    /// the same as [`process`](ThreadService::process) of the equivalent
    /// snapshot (which this default builds in `scratch`). Services that
    /// override it read the shape directly.
    fn process_region(&mut self, cali: &Caliper, region: &RegionSnapshot<'_>, scratch: &mut Snapshot) {
        region.write_to(scratch);
        self.process(cali, scratch);
    }
    /// Learns the attributes of the channel's region snapshots before the
    /// first [`process_region`](ThreadService::process_region), in a
    /// channel that takes them: those snapshots carry these and no others.
    fn region_attributes(&mut self, _cali: &Caliper, _attrs: &RegionAttributes) {}
    /// Sees an update before it happens (if the service
    /// [observes](Service::observes)) and says whether the channel takes a
    /// snapshot for it, with the entries added to `trigger`.
    fn observe(
        &mut self,
        _cali: &Caliper,
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
    /// The thread object of a timer that adds only offsets and durations,
    /// whatever the trigger: the channel keeps it inline instead of behind
    /// [`thread_state`](Service::thread_state), and stamps region snapshots
    /// with it without building a [`Snapshot`]. `None` for other services.
    fn inline_timer(&self) -> Option<TimerThread> {
        None
    }
    /// Sets up a thread's context the first time it meets the channel.
    fn on_new_thread(&self, _cali: &Caliper, _blackboard: &mut Blackboard) {}
    /// A new thread's part of this service.
    fn thread_state(&self) -> ServiceState {
        Box::new(())
    }
    /// A new thread's part of this service kept inline by the channel, if
    /// it is the channel's only processing service (see
    /// [`InlineProcessor`]); `None` for services not in that set, whose
    /// part is [`thread_state`](Service::thread_state).
    fn inline_processor(&self) -> Option<InlineProcessor> {
        None
    }
    /// Emits the records gathered in the threads' states.
    fn flush(&self, _cali: &Caliper, _states: &mut [&mut dyn ThreadService], _emit: &mut dyn FnMut(&Record)) {}
    /// Drops what the threads' states gathered.
    fn clear(&self, _states: &mut [&mut dyn ThreadService]) {}
    /// Adds what `from`, the state of a thread that has exited, gathered
    /// to `into`, the state of threads that exited before (kept by the
    /// channel until they are flushed), so that the channel keeps one
    /// such state, not one per exited thread; `from` is dropped after.
    /// `false` if the service does not merge: the channel then keeps
    /// `from` beside `into`.
    fn absorb(&self, _cali: &Caliper, _into: &mut dyn ThreadService, _from: &mut dyn ThreadService) -> bool {
        false
    }
    /// Writes the channel's output (flushing the channel as needed).
    fn write_output(&self, _cali: &Caliper, _channel: &Channel) {}
    /// Last words at the end of the program.
    fn finish(&self, _cali: &Caliper, _channel: &Channel) {}
}

/// The event attributes of one marked attribute.
#[derive(Copy, Clone, Debug)]
pub struct EventAttributes {
    begin: Attribute,
    set: Attribute,
    end: Attribute,
}

/// A page of attributes not looked up yet (see [`Sparse`]).
static UNMARKED: [Option<Option<EventAttributes>>; PAGE] = [None; PAGE];

/// How the channel's `event` service takes snapshots.
#[derive(Clone, Debug)]
pub struct EventConfig {
    /// Add `event.begin#X`-style trigger information.
    pub snapshot_info: bool,
    /// Only attributes of at least this level trigger snapshots.
    pub level: u32,
    /// Only these attributes trigger (all if empty).
    pub triggers: Vec<String>,
    /// Which string values trigger (`include_regions`, `exclude_regions`).
    pub filter: RegionFilter,
    /// Snapshots only inside regions these match (`include_branches`).
    pub branches: NameFilter,
}

/// A thread's state in one channel.
pub struct ChannelThread {
    /// Per service, its thread object (`()` for the inline timer and the
    /// inline processor).
    states: Vec<ServiceState>,
    /// The channel's only processing service, kept inline (see
    /// [`InlineProcessor`]), with its index.
    inline: Option<(usize, InlineProcessor)>,
    /// The channel's inline timer (see [`Service::inline_timer`]).
    timer: Option<TimerThread>,
    /// Per attribute id: `None` not looked up, `Some(None)` not marked.
    marks: Sparse<Option<Option<EventAttributes>>>,
    /// Per region-stack node (by id; the empty stack at 0).
    memo: Memo,
    /// Begins the memo has forgotten (see [`BeginCache`]).
    begins: BeginCache,
    /// Per string value seen by the region filters: whether it passes the
    /// include/exclude lists (bit 0) and starts a branch (bit 1).
    filtered: FxHashMap<ValueKey, u8>,
    /// The open regions that started an included branch.
    branches: Vec<ValueKey>,
    /// Trigger entries of observing services (kept to reuse the buffer).
    observed: Vec<Entry>,
}

impl ChannelThread {
    /// The thread object of service `i`.
    fn state(&mut self, i: usize) -> &mut dyn ThreadService {
        match &mut self.inline {
            Some((j, p)) if *j == i => p.as_dyn(),
            _ => self.states[i].as_mut(),
        }
    }

    /// Takes the thread object of service `i` out (at thread exit).
    fn take_state(&mut self, i: usize) -> ServiceState {
        match self.inline.take_if(|(j, _)| *j == i) {
            Some((_, p)) => p.into_boxed(),
            None => std::mem::replace(&mut self.states[i], Box::new(())),
        }
    }

    /// Whether an update passes the channel's region and branch filters
    /// (which look at string values only); keeps the branch stack.
    fn passes_filters(&mut self, events: &EventConfig, kind: EventKind, attr: Attribute, value: ValueKey) -> bool {
        let bits = if attr.attr_type() == AttrType::String {
            *self.filtered.entry(value).or_insert_with(|| {
                let v = value.to_variant();
                let name = v.as_str().unwrap_or_default();
                u8::from(events.filter.pass(name)) | (u8::from(events.branches.matches(name)) << 1)
            })
        } else {
            1
        };
        let mut pass = bits & 1 != 0;
        if !events.branches.is_empty() {
            let starts_branch = bits & 2 != 0;
            if starts_branch && matches!(kind, EventKind::Begin | EventKind::Set) {
                self.branches.push(value);
            }
            pass &= !self.branches.is_empty();
            if starts_branch && kind == EventKind::End && self.branches.last() == Some(&value) {
                self.branches.pop();
            }
        }
        pass
    }

    /// The event attribute of a `kind` update of `attr`
    /// (`event.begin#attr`, ...), if `attr` triggers snapshots. Out of
    /// line: the fused path asks only when its memo misses, and this
    /// inlined there made the common case keep more in registers (about
    /// 15 instructions more per update).
    #[inline(never)]
    fn event_attribute(&mut self, cali: &Caliper, channel: &Channel, attr: Id, kind: EventKind) -> Option<Attribute> {
        let mark = match self.marks.get(attr as usize) {
            Some(Some(mark)) => mark,
            _ => self.look_up_mark(cali, channel, attr),
        };
        let attrs = mark.as_ref()?;
        Some(match kind {
            EventKind::Begin => attrs.begin,
            EventKind::Set => attrs.set,
            EventKind::End | EventKind::Explicit => attrs.end,
        })
    }

    /// The channel's decision for `attr`, remembered once it is made.
    #[cold]
    fn look_up_mark(&mut self, cali: &Caliper, channel: &Channel, attr: Id) -> &Option<EventAttributes> {
        let Some(mark) = channel.decide_mark(cali, attr) else { return &None };
        self.marks.get_mut(attr as usize).insert(mark)
    }

    /// The node of an update's event information `info = entry.value`
    /// under the node of `stack`, the stack of `entry`'s attribute
    /// (materialized by the snapshot); `None` if the attribute triggers no
    /// snapshots. A begin also tells the stack the node it is about to
    /// push. The event attribute (`info`) is asked for only when the node
    /// is not remembered: a remembered node was made with it. `on_top`:
    /// whether `entry` is the top of `stack` (always so for the end of a
    /// region, which the caller knows).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the parts of a thread's data an update borrows apart
    fn event_node(
        &mut self,
        tree: &ContextTree,
        cache: &mut ChildCache,
        stack: &mut Stack,
        kind: EventKind,
        info: impl FnOnce(&mut ChannelThread) -> Option<Attribute>,
        entry: StackEntry,
        on_top: bool,
    ) -> Option<Id> {
        let parent = stack.node(tree, cache);
        match (kind, parent) {
            (EventKind::Begin, _) => {
                let i = parent.map_or(0, |p| p as usize);
                if let Some(m) = self.memo.child(i)
                    && m.child != 0
                    && Id::from(m.child_attr) == entry.attr.id()
                    && m.child_value == entry.value
                {
                    stack.expect_push(Id::from(m.child));
                    return Some(Id::from(m.begin));
                }
                if let Some(event) = self.recall_begin(stack, entry.attr.id(), entry.value, parent) {
                    return Some(event);
                }
                let info = info(self)?.id();
                Some(self.remember_begin(tree, cache, stack, info, entry.attr.id(), entry.value, parent))
            }
            // An entry ended is innermost, as a region always is: its event
            // node is remembered with the stack's node.
            (EventKind::End, Some(node)) if on_top => match self.memo.end(node as usize) {
                end if end != 0 => Some(Id::from(end)),
                _ => {
                    let info = info(self)?.id();
                    Some(self.remember_end(tree, cache, node, info, entry.value))
                }
            },
            _ => Some(Self::other_event_node(tree, cache, parent, info(self)?.id(), entry.value)),
        }
    }

    /// The event node `info = value` of an update the memo does not cover
    /// (an end of an entry that is not on top of its stack): out of line,
    /// so that its child lookup (and the hash it computes) stays out of the
    /// common path. This and the other out-of-line steps take the parts of
    /// the entry they need, not the entry: the common path then builds no
    /// entry in memory.
    #[cold]
    #[inline(never)]
    fn other_event_node(
        tree: &ContextTree,
        cache: &mut ChildCache,
        parent: Option<Id>,
        info: Id,
        value: ValueKey,
    ) -> Id {
        cache.child(tree, parent, info, value)
    }

    /// The event node `info = value` of ending the innermost entry (of
    /// value `value`) of stack node `node`, remembered.
    #[inline(never)]
    fn remember_end(&mut self, tree: &ContextTree, cache: &mut ChildCache, node: Id, info: Id, value: ValueKey) -> Id {
        let event = cache.child(tree, Some(node), info, value);
        if let Ok(short) = u32::try_from(event) {
            self.memo.set_end(node as usize, short);
        }
        event
    }

    /// The event node of beginning `attr = value` under `parent` when it is
    /// not the child last begun there but a recent begin (see
    /// [`BeginCache`]); it becomes the child last begun.
    #[inline(never)]
    fn recall_begin(&mut self, stack: &mut Stack, attr: Id, value: ValueKey, parent: Option<Id>) -> Option<Id> {
        let (parent, attr) = (u32::try_from(parent.unwrap_or(0)).ok()?, u32::try_from(attr).ok()?);
        let (child, event) = self.begins.get(parent, attr, value)?;
        self.begun(stack, parent, attr, value, (child, event));
        Some(event)
    }

    /// The event node `info = value` of beginning `attr = value` under
    /// `parent` when it is neither the child last begun there nor a recent
    /// begin; it becomes both.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // the entry's parts, see `other_event_node`
    fn remember_begin(
        &mut self,
        tree: &ContextTree,
        cache: &mut ChildCache,
        stack: &mut Stack,
        info: Id,
        attr: Id,
        value: ValueKey,
        parent: Option<Id>,
    ) -> Id {
        let (child, event) = (cache.child(tree, parent, attr, value), cache.child(tree, parent, info, value));
        let ids = [parent.unwrap_or(0), attr, child, event].map(|id| u32::try_from(id).ok());
        if let [Some(parent), Some(attr), Some(c), Some(e)] = ids {
            self.begins.put(parent, attr, value, c, e);
            self.begun(stack, parent, attr, value, (child, event));
        } else {
            stack.expect_push(child);
        }
        event
    }

    /// Makes the begin of `attr = value` under `parent` (0: the empty
    /// stack), which makes node `child` with event node `event`, the child
    /// last begun there, and tells the stack the node its push makes.
    fn begun(&mut self, stack: &mut Stack, parent: u32, attr: u32, value: ValueKey, (child, event): (Id, Id)) {
        stack.expect_push(child);
        if let (Ok(c), Ok(e), Some(m)) =
            (u32::try_from(child), u32::try_from(event), self.memo.child_mut(parent as usize))
        {
            (m.child, m.child_attr, m.begin, m.child_value) = (c, attr, e, value);
        }
    }
}

/// The trigger of snapshots that are not taken for an update.
const EXPLICIT: Trigger = Trigger { kind: EventKind::Explicit, attr: None };

/// A channel.
pub struct Channel {
    id: usize,
    name: String,
    active: AtomicBool,
    config: RuntimeConfig,
    services: Vec<Arc<dyn Service>>,
    observe: Vec<usize>,
    /// The measuring services but the inline timer.
    measure: Vec<usize>,
    process: Vec<usize>,
    /// The service whose timer the threads keep inline: the only measuring
    /// service, if it has one (see [`Service::inline_timer`]).
    timer: Option<usize>,
    /// Whether region begins and ends may take the fused path
    /// ([`Channel::fused_update`]): decided once, as nothing that rules it
    /// out (observers, filters, measuring services other than the inline
    /// timer, snapshots without event nodes) changes after creation.
    fused: bool,
    events: Option<EventConfig>,
    marks: RwLock<FxHashMap<Id, Option<EventAttributes>>>,
    /// What threads that have exited gathered, per service (empty for
    /// those that do not process): their states, merged where the service
    /// can (see [`Service::absorb`]). Filled by exiting threads inside
    /// their update protocol, read by flushes with updates stopped.
    retired: Mutex<Vec<Vec<ServiceState>>>,
    flush_on_exit: bool,
    blackboard: Mutex<Blackboard>,
    region_count: Attribute,
}

/// The parts of a thread's data that make a snapshot's context (borrowed
/// apart from the thread's channel states, which the pipeline uses).
struct Context<'a> {
    snapshot: &'a mut Snapshot,
    blackboard: &'a mut Blackboard,
    cache: &'a mut ChildCache,
    process_entries: &'a mut Arc<Snapshot>,
    process_version: &'a mut u64,
}

/// Borrows a thread's context fields apart from its `channels`, which the
/// caller holds as the channel's thread state.
macro_rules! context_of {
    ($t:expr) => {
        Context {
            snapshot: &mut $t.snapshot,
            blackboard: &mut $t.blackboard,
            cache: &mut $t.cache,
            process_entries: &mut $t.process_entries,
            process_version: &mut $t.process_version,
        }
    };
}

mod memo;
mod pull;

use memo::{BeginCache, Memo};

impl Channel {
    /// A channel with the given services (already instantiated from its
    /// configuration) and event configuration.
    pub(crate) fn new(
        cali: &Caliper,
        id: usize,
        name: &str,
        config: RuntimeConfig,
        services: Vec<Arc<dyn Service>>,
        events: Option<EventConfig>,
    ) -> Channel {
        let pick = |f: fn(&dyn Service) -> bool| -> Vec<usize> {
            services.iter().enumerate().filter(|(_, s)| f(s.as_ref())).map(|(i, _)| i).collect()
        };
        let (observe, mut measure, process) = (pick(|s| s.observes()), pick(|s| s.measures()), pick(|s| s.processes()));
        let timer = match *measure {
            [i] if services[i].inline_timer().is_some() => Some(i),
            _ => None,
        };
        if timer.is_some() {
            measure.clear();
        }
        let fused = observe.is_empty()
            && measure.is_empty()
            && events.as_ref().is_some_and(|e| e.snapshot_info && e.filter.is_empty() && e.branches.is_empty());
        let flush_on_exit = config.get_bool("CALI_CHANNEL_FLUSH_ON_EXIT", true);
        let region_count = cali.create_attribute(
            "region.count",
            AttrType::Uint,
            Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS,
            &[],
        );
        let retired = Mutex::new(services.iter().map(|_| Vec::new()).collect());
        Channel {
            id,
            name: name.to_string(),
            active: AtomicBool::new(false),
            config,
            services,
            observe,
            measure,
            process,
            timer,
            fused,
            events,
            marks: RwLock::new(FxHashMap::default()),
            retired,
            flush_on_exit,
            blackboard: Mutex::new(Blackboard::default()),
            region_count,
        }
    }

    /// The channel's id (creation order, from 0).
    pub fn id(&self) -> usize {
        self.id
    }
    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The channel's configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }
    /// Whether the channel takes snapshots now.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }
    /// Use `Caliper::set_channel_active`, which keeps the count of active
    /// channels.
    pub(crate) fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::Release);
    }
    /// Whether the channel is flushed when the program ends.
    pub fn flush_on_exit(&self) -> bool {
        self.flush_on_exit
    }
    /// The channel's services.
    pub fn services(&self) -> &[Arc<dyn Service>] {
        &self.services
    }
    /// Whether the channel takes snapshots of asynchronous events.
    pub fn takes_async_events(&self) -> bool {
        self.services.iter().any(|s| s.takes_async_events())
    }
    /// The channel's own blackboard (its run metadata).
    pub(crate) fn blackboard(&self) -> &Mutex<Blackboard> {
        &self.blackboard
    }

    /// Whether another thread holds one of the channel's locks (see
    /// [`crate::sync::is_held`]).
    pub(crate) fn is_locked(&self) -> bool {
        crate::sync::is_rw_held(&self.marks)
            || crate::sync::is_held(&self.blackboard)
            || crate::sync::is_held(&self.retired)
    }

    /// Takes over the processing services' states of a thread that exits,
    /// so that their data is flushed with the other threads' and the rest
    /// of the thread's state (caches, memos) can go. Called inside the
    /// thread's update protocol (see `Caliper::retire_thread`).
    pub(crate) fn retire(&self, cali: &Caliper, mut ct: ChannelThread) {
        let mut retired = sync::lock(&self.retired);
        for &i in &self.process {
            let mut state = ct.take_state(i);
            let kept = &mut retired[i];
            let absorbed =
                kept.last_mut().is_some_and(|into| self.services[i].absorb(cali, into.as_mut(), state.as_mut()));
            if !absorbed {
                kept.push(state);
            }
        }
    }

    /// Decides whether `attr` triggers snapshots in this channel, creating
    /// its event attributes if so.
    pub(crate) fn mark_attribute(&self, cali: &Caliper, attr: Attribute, name: &str) {
        let Some(events) = &self.events else { return };
        let props = attr.properties();
        let marked = attr.id() >= caliper_data::node::BOOTSTRAP_NODE_COUNT
            && !props.skips_events()
            && (events.triggers.is_empty() || events.triggers.iter().any(|t| t == name))
            && props.level() >= events.level;
        let info = marked.then(|| {
            let props = Properties::from_bits(
                (props.bits() & !(Properties::NESTED.bits() | Properties::GLOBAL.bits()))
                    | Properties::SKIP_EVENTS.bits(),
            );
            let make = |kind: &str| {
                let meta = cali.create_attribute(
                    &format!("cali.event.{kind}"),
                    AttrType::Uint,
                    Properties::HIDDEN | Properties::SKIP_EVENTS,
                    &[],
                );
                cali.create_attribute(
                    &format!("event.{kind}#{name}"),
                    attr.attr_type(),
                    props,
                    &[(meta.id(), Variant::Uint(attr.id()))],
                )
            };
            EventAttributes { begin: make("begin"), set: make("set"), end: make("end") }
        });
        sync::write(&self.marks).insert(attr.id(), info);
    }

    /// Whether `attr` triggers snapshots (with its event attributes);
    /// `None` if the channel has not decided yet.
    fn lookup_mark(&self, attr: Id) -> Option<Option<EventAttributes>> {
        sync::read(&self.marks).get(&attr).copied()
    }

    /// Whether `attr` triggers snapshots, deciding it now if the channel
    /// has not yet: another thread may have created the attribute and not
    /// marked it yet, or created it while the channel was being set up.
    /// `None` if the attribute is not known (yet).
    fn decide_mark(&self, cali: &Caliper, attr: Id) -> Option<Option<EventAttributes>> {
        if let Some(mark) = self.lookup_mark(attr) {
            return Some(mark);
        }
        let info = cali.attribute_info(attr)?;
        self.mark_attribute(cali, info.attr, &info.name);
        self.lookup_mark(attr)
    }

    /// The calling thread's state in this channel, created on first use.
    /// On the first use on a thread, services may set up the thread's
    /// context (e.g. thread ids).
    #[inline]
    fn thread_state<'a>(
        &self,
        cali: &Caliper,
        channels: &'a mut Vec<Option<ChannelThread>>,
        blackboard: &mut Blackboard,
    ) -> &'a mut ChannelThread {
        if channels.len() <= self.id {
            channels.resize_with(self.id + 1, || None);
        }
        match &mut channels[self.id] {
            Some(ct) => ct,
            slot => slot.insert(self.new_thread_state(cali, blackboard)),
        }
    }

    #[cold]
    fn new_thread_state(&self, cali: &Caliper, blackboard: &mut Blackboard) -> ChannelThread {
        for service in &self.services {
            service.on_new_thread(cali, blackboard);
        }
        let inline = match *self.process {
            [i] => self.services[i].inline_processor().map(|p| (i, p)),
            _ => None,
        };
        let states = self.services.iter().enumerate();
        let states = states.map(|(i, s)| {
            let kept_inline = self.timer == Some(i) || inline.as_ref().is_some_and(|(j, _)| *j == i);
            if kept_inline { Box::new(()) } else { s.thread_state() }
        });
        let timer = self.timer.and_then(|i| self.services[i].inline_timer());
        let mut ct = ChannelThread {
            states: states.collect(),
            inline,
            timer,
            marks: Sparse::new(&UNMARKED),
            memo: Memo::new(),
            begins: BeginCache::default(),
            filtered: FxHashMap::default(),
            branches: Vec::new(),
            observed: Vec::new(),
        };
        if self.fused {
            let time = ct.timer.as_ref().map(TimerThread::attributes);
            let attrs = RegionAttributes { count: self.region_count.id(), time };
            for &i in &self.process {
                ct.state(i).region_attributes(cali, &attrs);
            }
        }
        ct
    }

    /// Handles an update of `attr` on a thread: takes a snapshot if the
    /// attribute triggers one in this channel.
    #[inline]
    pub(crate) fn on_update(
        &self,
        cali: &Caliper,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        if !(self.fused && self.fused_update(cali, t, kind, attr, value)) {
            self.generic_update(cali, t, kind, attr, value);
        }
    }

    /// [`Channel::on_update`] for any channel and update.
    #[inline(never)]
    fn generic_update(&self, cali: &Caliper, t: &mut ThreadData, kind: EventKind, attr: Attribute, value: ValueKey) {
        if !self.observe.is_empty() {
            self.observe_update(cali, t, kind, attr, value);
        }
        let Some(events) = &self.events else { return };
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let Some(info) = ct.event_attribute(cali, self, attr.id(), kind) else { return };
        if (!events.filter.is_empty() || !events.branches.is_empty()) && !ct.passes_filters(events, kind, attr, value) {
            return;
        }
        t.snapshot.clear();
        let process_scope = attr.is_process_scope();
        // The slot the event node replaces: the updated attribute's stack.
        let replaced = if events.snapshot_info && !attr.is_asvalue() && !process_scope {
            Some(attr.properties().is_unaligned())
        } else {
            None
        };
        context_entries(cali, context_of!(t), replaced);
        let snapshot = &mut t.snapshot;
        if events.snapshot_info {
            match replaced {
                Some(unaligned_slot) => {
                    let stack = if unaligned_slot { &mut t.blackboard.unaligned } else { &mut t.blackboard.regions };
                    let entry = StackEntry { attr, value };
                    let on_top = stack.top() == Some(entry);
                    // Always a node: the event attribute is known.
                    let event = ct.event_node(&cali.tree, &mut t.cache, stack, kind, |_| Some(info), entry, on_top);
                    if let Some(event) = event {
                        snapshot.push_node(event);
                    }
                }
                None => snapshot.push_value(info.id(), value),
            }
        }
        if kind == EventKind::End {
            snapshot.push_value(self.region_count.id(), ValueKey::uint(1));
        }
        self.run_pipeline(cali, ct, snapshot, &Trigger { kind, attr: Some(attr) });
    }

    /// Handles an update in a channel that takes fused region snapshots:
    /// takes the snapshot of a region begin or end without building a
    /// [`Snapshot`] if it has the common shape (see [`RegionSnapshot`]):
    /// the attribute is on the region stack, and the thread's context has
    /// no other entries than its region stack and the process's nodes.
    /// Returns whether the update is handled; if not, the generic path
    /// takes it. Inlined into the runtime's loop over the active channels
    /// (a call less per update); the generic path stays out of line, so
    /// that the common case is a short function that spills little.
    #[inline(always)]
    fn fused_update(
        &self,
        cali: &Caliper,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) -> bool {
        if !attr.on_thread_regions() || kind == EventKind::Set {
            return false;
        }
        // The thread state first: a thread's first use of the channel may
        // add to its context (e.g. the pthread service's thread ids).
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        if !(t.blackboard.unaligned.is_empty() && t.blackboard.values.is_empty()) {
            return false;
        }
        cali.refresh_process_entries(&mut t.process_entries, &mut t.process_version);
        if !t.process_entries.values().is_empty() {
            return false;
        }
        let entry = StackEntry { attr, value };
        let info = |ct: &mut ChannelThread| ct.event_attribute(cali, self, attr.id(), kind);
        // An end's entry is on top: the end has checked it.
        let on_top = true;
        let regions = &mut t.blackboard.regions;
        let Some(event) = ct.event_node(&cali.tree, &mut t.cache, regions, kind, info, entry, on_top) else {
            return true;
        };
        let region = RegionSnapshot {
            context: t.process_entries.nodes(),
            event,
            count: (kind == EventKind::End).then_some(self.region_count.id()),
            time: ct.timer.as_mut().map(TimerThread::stamp),
        };
        match &mut ct.inline {
            Some((_, processor)) => processor.process_region(cali, &region, &mut t.snapshot),
            None => self.process_region_boxed(cali, &mut ct.states, region, &mut t.snapshot),
        }
        true
    }

    /// Hands a region snapshot to processing services that are not kept
    /// inline. Out of line, and given the snapshot by value, so that the
    /// inline case keeps its parts in registers.
    #[inline(never)]
    fn process_region_boxed(
        &self,
        cali: &Caliper,
        states: &mut [ServiceState],
        region: RegionSnapshot<'_>,
        scratch: &mut Snapshot,
    ) {
        for &i in &self.process {
            states[i].process_region(cali, &region, scratch);
        }
    }

    /// Lets the observing services see an update and takes the snapshots
    /// they ask for.
    fn observe_update(&self, cali: &Caliper, t: &mut ThreadData, kind: EventKind, attr: Attribute, value: ValueKey) {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let mut trigger = std::mem::take(&mut ct.observed);
        for &i in &self.observe {
            trigger.clear();
            match ct.states[i].observe(cali, kind, attr, value, &mut trigger) {
                Observation::Ignore => {}
                Observation::Measure => {
                    t.snapshot.clear();
                    self.run_measure(ct, &mut t.snapshot, &EXPLICIT);
                }
                Observation::Snapshot => self.explicit_snapshot(cali, ct, context_of!(t), &trigger),
            }
        }
        ct.observed = trigger;
    }

    /// Takes an explicit snapshot with extra trigger entries.
    pub(crate) fn push_snapshot(&self, cali: &Caliper, t: &mut ThreadData, trigger: &[Entry]) {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        self.explicit_snapshot(cali, ct, context_of!(t), trigger);
    }

    fn explicit_snapshot(&self, cali: &Caliper, ct: &mut ChannelThread, c: Context<'_>, trigger: &[Entry]) {
        c.snapshot.clear();
        let snapshot = context_entries(cali, c, None);
        for entry in trigger {
            snapshot.push_entry(entry);
        }
        self.run_pipeline(cali, ct, snapshot, &EXPLICIT);
    }

    fn run_measure(&self, ct: &mut ChannelThread, snapshot: &mut Snapshot, trigger: &Trigger) {
        if let Some(timer) = &mut ct.timer {
            timer.measure(snapshot, trigger);
        }
        for &i in &self.measure {
            ct.states[i].measure(snapshot, trigger);
        }
    }

    fn run_pipeline(&self, cali: &Caliper, ct: &mut ChannelThread, snapshot: &mut Snapshot, trigger: &Trigger) {
        self.run_measure(ct, snapshot, trigger);
        for &i in &self.process {
            ct.state(i).process(cali, snapshot);
        }
    }

    /// Runs `f` for every processing service with its state on every
    /// thread. Updates must be stopped (the caller holds `StopUpdates`).
    fn with_process_states(&self, cali: &Caliper, mut f: impl FnMut(&dyn Service, &mut [&mut dyn ThreadService])) {
        let slots = cali.thread_slots();
        let mut retired = sync::lock(&self.retired);
        for &i in &self.process {
            let mut states: Vec<&mut dyn ThreadService> = retired[i].iter_mut().map(|s| s.as_mut()).collect();
            for slot in slots.iter().filter(|s| s.busy.is_readable()) {
                // SAFETY: updates are stopped, the slot's thread is not
                // inside an update, and each slot's data is borrowed once,
                // for this loop only.
                let data = unsafe { slot.data_for_flush() };
                if let Some(Some(ct)) = data.channels.get_mut(self.id) {
                    states.push(ct.state(i));
                }
            }
            f(self.services[i].as_ref(), &mut states);
        }
    }

    /// Hands the records of every processing service (over all threads) to
    /// `emit`. Updates must be stopped.
    pub(crate) fn flush(&self, cali: &Caliper, emit: &mut dyn FnMut(&Record)) {
        self.with_process_states(cali, |service, states| service.flush(cali, states, emit));
    }

    /// Drops the gathered data of every processing service.
    pub(crate) fn clear(&self, cali: &Caliper) {
        self.with_process_states(cali, |service, states| service.clear(states));
    }
}

/// Adds the thread's and the process's context to the thread's snapshot:
/// the region and unaligned nodes (but for the stack `replaced` names:
/// `Some(true)` the unaligned one, `Some(false)` the region one), the
/// visible as-value entries, and the process entries. Both stacks are
/// materialized afterwards.
/// Returns the snapshot.
#[inline(always)]
fn context_entries<'a>(cali: &Caliper, c: Context<'a>, replaced: Option<bool>) -> &'a mut Snapshot {
    let region = c.blackboard.regions.node(&cali.tree, c.cache);
    let unaligned = c.blackboard.unaligned.node(&cali.tree, c.cache);
    if let (Some(n), false) = (region, replaced == Some(false)) {
        c.snapshot.push_node(n);
    }
    if let (Some(n), false) = (unaligned, replaced == Some(true)) {
        c.snapshot.push_node(n);
    }
    for (a, v) in &c.blackboard.values {
        if !a.properties().is_hidden() {
            c.snapshot.push_value(a.id(), *v);
        }
    }
    cali.refresh_process_entries(c.process_entries, c.process_version);
    c.snapshot.append(c.process_entries);
    c.snapshot
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the calling test runs its body: yes in a child process
    /// (this test binary re-run with only `test` and `CALIPER_UNIT_CHILD`
    /// set), where no other test's flush can drop updates, so that the
    /// test asserts exactly what it did; in the parent, which runs that
    /// child and checks that it passed, no.
    fn alone(test: &str) -> bool {
        if std::env::var_os("CALIPER_UNIT_CHILD").is_some() {
            return true;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["--exact", &format!("channel::tests::{test}"), "--nocapture", "--test-threads=1"]);
        cmd.env("CALIPER_UNIT_CHILD", "1");
        for (key, _) in std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("CALI_")) {
            cmd.env_remove(key);
        }
        let out = cmd.output().expect("run the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{test} in a child process:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        false
    }

    /// The fused path takes the snapshots the generic path takes: a channel
    /// with an observer (which rules the fused path out) gathers the same
    /// records, over updates that take either path.
    #[test]
    fn fused_and_generic_snapshots_agree() {
        if !alone("fused_and_generic_snapshots_agree") {
            return;
        }
        let cali = Caliper::instance().expect("runtime");
        let attr = |name: &str, ty, props| cali.create_attribute(name, ty, props, &[]);
        let region = attr("test.fused.region", AttrType::String, Properties::NESTED);
        let phase = attr("test.fused.phase", AttrType::String, Properties::NESTED);
        let iteration = attr("test.fused.iteration", AttrType::Int, Properties::ASVALUE);
        let unaligned = attr("test.fused.unaligned", AttrType::String, Properties::UNALIGNED);
        let s = ValueKey::string;
        // Records of other tests' threads are left out.
        let mine = |record: &Record| {
            record.refs().any(|node| {
                let mut path = Vec::new();
                cali.tree.path_to(node, &mut path);
                path.iter().any(|&n| {
                    let name = cali.tree.get(n).and_then(|n| cali.attribute_info(n.attribute)).map(|i| i.name);
                    name.is_some_and(|name| name.contains("test.fused"))
                })
            })
        };
        // One processing service (kept inline), and two (behind boxes).
        for services in ["aggregate,event", "event,trace", "aggregate,event,trace"] {
            let open = |services: &str| {
                let config = RuntimeConfig::from_pairs(
                    [
                        ("CALI_SERVICES_ENABLE", services),
                        ("CALI_CHANNEL_FLUSH_ON_EXIT", "false"),
                        ("CALI_CHANNEL_CONFIG_CHECK", "false"),
                    ],
                    false,
                );
                let channel = cali.create_channel(&format!("test.fused.{services}"), config);
                cali.set_channel_active(&channel, true);
                channel
            };
            let (fused, generic) = (open(services), open(&format!("{services},debug")));
            assert!(fused.fused && !generic.fused);
            let one_processor = services != "aggregate,event,trace";
            let thread = fused.new_thread_state(cali, &mut Blackboard::default());
            assert_eq!(thread.inline.is_some(), one_processor, "{services}");
            let errors = cali.stack_errors();
            for i in 0..3 {
                cali.begin(region, s("a"));
                cali.begin(phase, s("p"));
                cali.set(iteration, ValueKey::int(i));
                cali.begin(region, s(if i == 1 { "b" } else { "c" }));
                cali.end(region, None);
                cali.end(iteration, None);
                cali.begin(region, s("b"));
                cali.end(region, None);
                cali.end(phase, None);
                cali.begin(unaligned, s("u"));
                cali.begin(region, s("c"));
                cali.end(region, None);
                cali.end(unaligned, None);
                cali.end(region, None);
            }
            assert_eq!(cali.stack_errors(), errors, "{services}");
            let mut records = [Vec::new(), Vec::new()];
            for (channel, out) in [&fused, &generic].into_iter().zip(&mut records) {
                cali.set_channel_active(channel, false);
                cali.flush(channel, &mut |r| {
                    if mine(r) {
                        out.push(r.clone());
                    }
                });
            }
            assert!(records[0].len() > 10, "{services}: {} records", records[0].len());
            assert_eq!(records[0], records[1], "{services}");
        }
    }

    /// Siblings begun in turn (the last-child memo misses every time, and
    /// the recent begins answer) each get their own nodes.
    #[test]
    fn siblings_begun_in_turn_keep_their_own_nodes() {
        if !alone("siblings_begun_in_turn_keep_their_own_nodes") {
            return;
        }
        let cali = Caliper::instance().expect("runtime");
        let config = RuntimeConfig::from_pairs(
            [("CALI_SERVICES_ENABLE", "event,trace"), ("CALI_CHANNEL_FLUSH_ON_EXIT", "false")],
            false,
        );
        let channel = cali.create_channel("test.turns", config);
        cali.set_channel_active(&channel, true);
        let region = cali.create_attribute("test.turns.region", AttrType::String, Properties::NESTED, &[]);
        let errors = cali.stack_errors();
        let names = ["a", "b", "c", "b"];
        cali.begin(region, ValueKey::string("outer"));
        for _ in 0..3 {
            for name in names {
                cali.begin(region, ValueKey::string(name));
                cali.end(region, None);
            }
        }
        cali.end(region, None);
        assert_eq!(cali.stack_errors(), errors);
        cali.set_channel_active(&channel, false);
        // Each snapshot's path of `test.turns` entries, as `name=value`.
        let mut paths = Vec::new();
        cali.flush(&channel, &mut |record| {
            for node in record.refs() {
                let mut path = Vec::new();
                cali.tree.path_to(node, &mut path);
                let steps: Vec<String> = path
                    .iter()
                    .filter_map(|&n| {
                        let n = cali.tree.get(n)?;
                        let name = cali.attribute_info(n.attribute)?.name;
                        name.contains("test.turns").then(|| format!("{name}={}", n.value))
                    })
                    .collect();
                if !steps.is_empty() {
                    paths.push(steps.join("/"));
                }
            }
        });
        let r = "test.turns.region";
        let mut expected = vec![format!("event.begin#{r}=outer")];
        for _ in 0..3 {
            for name in names {
                expected.push(format!("{r}=outer/event.begin#{r}={name}"));
                expected.push(format!("{r}=outer/{r}={name}/event.end#{r}={name}"));
            }
        }
        expected.push(format!("{r}=outer/event.end#{r}=outer"));
        assert_eq!(paths, expected);
    }

    /// Begins and ends the attribute `make` returns in a channel of its
    /// own, and checks that the end is recorded once. Run in a child
    /// process (see `alone`), where no other test's flush drops an update.
    fn check_one_end(channel: &str, make: impl FnOnce(&Caliper) -> Attribute) {
        let cali = Caliper::instance().expect("runtime");
        let config = RuntimeConfig::from_pairs(
            [("CALI_SERVICES_ENABLE", "aggregate,event"), ("CALI_CHANNEL_FLUSH_ON_EXIT", "false")],
            false,
        );
        let channel = cali.create_channel(channel, config);
        cali.set_channel_active(&channel, true);
        let attr = make(cali);
        let name = cali.attribute_info(attr.id()).expect("attribute").name;
        cali.begin(attr, ValueKey::string("x"));
        cali.end(attr, None);
        cali.set_channel_active(&channel, false);
        let end = cali.find_attribute(&format!("event.end#{name}")).expect("marked").id();
        let mut ends = 0;
        cali.flush(&channel, &mut |record| {
            for node in record.refs() {
                let mut path = Vec::new();
                cali.tree.path_to(node, &mut path);
                ends += path.iter().filter(|&&n| cali.tree.get(n).is_some_and(|n| n.attribute == end)).count();
            }
        });
        assert_eq!(ends, 1);
    }

    #[test]
    fn an_attribute_created_but_not_yet_marked_is_marked_on_first_update() {
        if !alone("an_attribute_created_but_not_yet_marked_is_marked_on_first_update") {
            return;
        }
        // As if another thread had just created it and not marked it yet.
        check_one_end("test.late-mark", |cali| {
            cali.registry.create(&cali.tree, "test.late", AttrType::String, Properties::NESTED, &[]).0
        });
    }

    /// The thread's tables by node and attribute id are sparse: an
    /// attribute (and nodes) with ids past many others work.
    #[test]
    fn an_attribute_created_after_many_nodes_works() {
        if !alone("an_attribute_created_after_many_nodes_works") {
            return;
        }
        check_one_end("test.far", |cali| {
            let base = cali.create_attribute("test.far.base", AttrType::Int, Properties::DEFAULT, &[]);
            for i in 0..100_000 {
                cali.tree.get_child(base.id(), Variant::Int(i), None);
            }
            cali.create_attribute("test.far", AttrType::String, Properties::NESTED, &[])
        });
    }
}
