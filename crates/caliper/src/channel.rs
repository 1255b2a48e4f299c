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
use crate::blackboard::Blackboard;
use crate::config::RuntimeConfig;
use crate::runtime::Caliper;
use crate::thread::ThreadData;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, Variant};
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

mod pull;

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

/// Per-thread state of one service in one channel.
pub type ServiceState = Box<dyn Any + Send>;

/// A service: a part of a channel's pipeline. Every hook is optional.
pub trait Service: Send + Sync {
    /// The service's name.
    fn name(&self) -> &'static str;
    /// Whether the service wants to see every update ([`Service::observe`]).
    fn observes(&self) -> bool {
        false
    }
    /// Sees an update before it happens.
    fn observe(&self, _cali: &Caliper, _kind: EventKind, _attr: Attribute, _value: ValueKey) {}
    /// Whether the service adds measurements to snapshots.
    fn measures(&self) -> bool {
        false
    }
    /// Whether the service consumes snapshots (and emits records at flush).
    fn processes(&self) -> bool {
        false
    }
    /// Whether the service writes output at flush.
    fn writes_output(&self) -> bool {
        false
    }
    /// Whether the channel takes snapshots of asynchronous events because
    /// of this service.
    fn takes_async_events(&self) -> bool {
        false
    }
    /// Sets up a thread's context the first time it meets the channel.
    fn on_new_thread(&self, _cali: &Caliper, _blackboard: &mut Blackboard) {}
    /// A new thread's state for this service.
    fn thread_state(&self) -> ServiceState {
        Box::new(())
    }
    /// Adds measurements to a snapshot.
    fn measure(&self, _state: &mut ServiceState, _snapshot: &mut Record, _trigger: &Trigger) {}
    /// Consumes a snapshot.
    fn process(&self, _cali: &Caliper, _state: &mut ServiceState, _snapshot: &Record) {}
    /// Emits the records gathered in the threads' states.
    fn flush(&self, _cali: &Caliper, _states: &mut [&mut ServiceState], _emit: &mut dyn FnMut(&Record)) {}
    /// Drops what the threads' states gathered.
    fn clear(&self, _states: &mut [&mut ServiceState]) {}
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

/// How the channel's `event` service takes snapshots.
#[derive(Clone, Debug)]
pub struct EventConfig {
    /// Add `event.begin#X`-style trigger information.
    pub snapshot_info: bool,
    /// Only attributes of at least this level trigger snapshots.
    pub level: u32,
    /// Only these attributes trigger (all if empty).
    pub triggers: Vec<String>,
}

/// A thread's state in one channel.
pub struct ChannelThread {
    states: Vec<ServiceState>,
    /// Per attribute id: `None` not looked up, `Some(None)` not marked.
    marks: Vec<Option<Option<EventAttributes>>>,
}

/// A channel.
pub struct Channel {
    id: usize,
    name: String,
    active: AtomicBool,
    config: RuntimeConfig,
    services: Vec<Arc<dyn Service>>,
    observe: Vec<usize>,
    measure: Vec<usize>,
    process: Vec<usize>,
    events: Option<EventConfig>,
    marks: RwLock<FxHashMap<Id, Option<EventAttributes>>>,
    flush_on_exit: bool,
    blackboard: Mutex<Blackboard>,
    region_count: Attribute,
}

/// The parts of a thread's data that make a snapshot's context (borrowed
/// apart from the thread's channel states, which the pipeline uses).
struct Context<'a> {
    snapshot: &'a mut Record,
    blackboard: &'a mut Blackboard,
    cache: &'a mut crate::blackboard::ChildCache,
    process_entries: &'a mut std::sync::Arc<Vec<Entry>>,
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
        let (observe, measure, process) = (pick(|s| s.observes()), pick(|s| s.measures()), pick(|s| s.processes()));
        let flush_on_exit = config.get_bool("CALI_CHANNEL_FLUSH_ON_EXIT", true);
        let region_count = cali.create_attribute(
            "region.count",
            AttrType::Uint,
            Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS,
            &[],
        );
        Channel {
            id,
            name: name.to_string(),
            active: AtomicBool::new(false),
            config,
            services,
            observe,
            measure,
            process,
            events,
            marks: RwLock::new(FxHashMap::default()),
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
        self.marks.write().unwrap_or_else(|e| e.into_inner()).insert(attr.id(), info);
    }

    fn lookup_mark(&self, attr: Id) -> Option<EventAttributes> {
        self.marks.read().unwrap_or_else(|e| e.into_inner()).get(&attr).copied().flatten()
    }

    /// The calling thread's state in this channel, created on first use.
    /// On the first use on a thread, services may set up the thread's
    /// context (e.g. thread ids).
    fn thread_state<'a>(
        &self,
        cali: &Caliper,
        channels: &'a mut Vec<Option<ChannelThread>>,
        blackboard: &mut Blackboard,
    ) -> &'a mut ChannelThread {
        if channels.len() <= self.id {
            channels.resize_with(self.id + 1, || None);
        }
        channels[self.id].get_or_insert_with(|| {
            for service in &self.services {
                service.on_new_thread(cali, blackboard);
            }
            ChannelThread { states: self.services.iter().map(|s| s.thread_state()).collect(), marks: Vec::new() }
        })
    }

    /// Handles an update of `attr` on a thread: takes a snapshot if the
    /// attribute triggers one in this channel.
    pub(crate) fn on_update(
        &self,
        cali: &Caliper,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        for &i in &self.observe {
            self.services[i].observe(cali, kind, attr, value);
        }
        let Some(events) = &self.events else { return };
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let id = attr.id() as usize;
        if ct.marks.len() <= id {
            ct.marks.resize(id + 1, None);
        }
        let mark = match ct.marks[id] {
            Some(m) => m,
            None => {
                let m = self.lookup_mark(attr.id());
                ct.marks[id] = Some(m);
                m
            }
        };
        let Some(event_attrs) = mark else { return };
        t.snapshot.clear();
        let process_scope = attr.properties().scope() == caliper_data::Scope::Process;
        // The slot the event node replaces: the updated attribute's stack.
        let replaced = if events.snapshot_info && !attr.is_asvalue() && !process_scope {
            Some(attr.properties().is_unaligned())
        } else {
            None
        };
        let (region, unaligned) = context_entries(cali, context_of!(t), replaced);
        let snapshot = &mut t.snapshot;
        if events.snapshot_info {
            let info = match kind {
                EventKind::Begin => event_attrs.begin,
                EventKind::Set => event_attrs.set,
                EventKind::End | EventKind::Explicit => event_attrs.end,
            };
            match replaced {
                Some(unaligned_slot) => {
                    let parent = if unaligned_slot { unaligned } else { region };
                    snapshot.push_ref(t.cache.child(&cali.tree, parent, info.id(), value));
                }
                None => snapshot.push_imm(info.id(), value.to_variant()),
            }
        }
        if kind == EventKind::End {
            snapshot.push_imm(self.region_count.id(), Variant::Uint(1));
        }
        self.run_pipeline(cali, ct, snapshot, &Trigger { kind, attr: Some(attr) });
    }

    /// Takes an explicit snapshot with extra trigger entries.
    pub(crate) fn push_snapshot(&self, cali: &Caliper, t: &mut ThreadData, trigger: &[Entry]) {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        t.snapshot.clear();
        context_entries(cali, context_of!(t), None);
        let snapshot = &mut t.snapshot;
        snapshot.entries.extend(trigger.iter().cloned());
        self.run_pipeline(cali, ct, snapshot, &Trigger { kind: EventKind::Explicit, attr: None });
    }

    fn run_pipeline(&self, cali: &Caliper, ct: &mut ChannelThread, snapshot: &mut Record, trigger: &Trigger) {
        for &i in &self.measure {
            self.services[i].measure(&mut ct.states[i], snapshot, trigger);
        }
        for &i in &self.process {
            self.services[i].process(cali, &mut ct.states[i], snapshot);
        }
    }

    /// Runs `f` for every processing service with its state on every
    /// thread. Updates must be stopped (the caller holds `StopUpdates`).
    fn with_process_states(&self, cali: &Caliper, mut f: impl FnMut(&dyn Service, &mut [&mut ServiceState])) {
        let slots = cali.thread_slots();
        for &i in &self.process {
            let mut states: Vec<&mut ServiceState> = Vec::new();
            for slot in &slots {
                // SAFETY: updates are stopped, and each slot's data is
                // borrowed once, for this loop only.
                let data = unsafe { slot.data_for_flush() };
                if let Some(Some(ct)) = data.channels.get_mut(self.id) {
                    states.push(&mut ct.states[i]);
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
/// visible as-value entries, and the process entries. Returns the region
/// and unaligned nodes.
fn context_entries(cali: &Caliper, c: Context<'_>, replaced: Option<bool>) -> (Option<Id>, Option<Id>) {
    let region = c.blackboard.regions.node(&cali.tree, c.cache);
    let unaligned = c.blackboard.unaligned.node(&cali.tree, c.cache);
    if let (Some(n), false) = (region, replaced == Some(false)) {
        c.snapshot.push_ref(n);
    }
    if let (Some(n), false) = (unaligned, replaced == Some(true)) {
        c.snapshot.push_ref(n);
    }
    for (a, v) in &c.blackboard.values {
        if !a.properties().is_hidden() {
            c.snapshot.push_imm(a.id(), v.to_variant());
        }
    }
    cali.refresh_process_entries(c.process_entries, c.process_version);
    c.snapshot.entries.extend(c.process_entries.iter().cloned());
    (region, unaligned)
}
