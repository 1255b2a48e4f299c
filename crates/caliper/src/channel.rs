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
use crate::buffer::InlineProcessor;
use crate::capture::{Capture, MAX_MEASURED};
use crate::config::RuntimeConfig;
use crate::region_filter::{NameFilter, RegionFilter};
use crate::service::{
    EventKind, Observation, RegionCounter, Runtime, Service, ServiceState, ThreadCounter, ThreadService, Trigger,
};
use crate::snapshot::{Measured, RegionAttributes, RegionSnapshot, Snapshot, Stamps, Time};
use crate::sparse::{PAGE, Sparse};
use crate::sync;
use crate::tree::ContextTree;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, Variant};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use thread::{ThreadData, ThreadSlot};

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

/// Whether a channel takes region snapshots on its fused path (see
/// [`Channel::fused_update`]), and which one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Fused {
    /// Never: every update takes the generic path.
    No,
    /// Yes, without region measurements besides the inline timer.
    Plain,
    /// Yes, with region counters (see [`Service::region_counters`]).
    Measured,
}

/// The trigger of snapshots that are not taken for an update.
const EXPLICIT: Trigger = Trigger { kind: EventKind::Explicit, attr: None, in_signal: false };

/// The trigger of snapshots taken in signal handlers.
const SIGNAL: Trigger = Trigger { kind: EventKind::Explicit, attr: None, in_signal: true };

/// A channel.
pub struct Channel {
    id: usize,
    name: String,
    active: AtomicBool,
    config: RuntimeConfig,
    services: Vec<Arc<dyn Service>>,
    observe: Vec<usize>,
    /// The measuring services but the inline timer and those with region
    /// counters.
    measure: Vec<usize>,
    /// The measuring services' region counters (see
    /// [`Service::region_counters`]), in the order of their values in the
    /// threads' measurement buffers.
    counters: Vec<RegionCounter>,
    /// The attributes of the region counters' values, in buffer order.
    measured: Vec<Id>,
    process: Vec<usize>,
    /// The services that see memory regions begun and ended.
    memory: Vec<usize>,
    /// The services that emit records at flush.
    flushed: Vec<usize>,
    /// The service whose timer the threads keep inline: the only measuring
    /// service, if it has one (see [`Service::inline_timer`]).
    timer: Option<usize>,
    /// Whether region begins and ends may take the fused path
    /// ([`Channel::fused_update`]): decided once, as nothing that rules it
    /// out (observers, filters, measuring services other than the inline
    /// timer without region measurements) changes after creation.
    fused: Fused,
    events: Option<EventConfig>,
    /// The subscription attributes the services subscribe to (see
    /// [`Service::subscriptions`]).
    subscriptions: Vec<&'static str>,
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

mod captures;
pub(crate) mod express;
mod fused;
mod generic;
mod memo;
mod memory;
mod pull;
mod sites;
pub(crate) mod thread;
mod thread_state;

/// What a channel needs of the runtime it runs in, beside what its
/// services see of it ([`Runtime`]): the process context's snapshot
/// entries, and every thread's data for a flush.
pub(crate) trait Host: Runtime {
    /// Refreshes a thread's copy of the process context's snapshot
    /// entries (`cache`, taken at `version`) if the context changed.
    fn refresh_process_entries(&self, cache: &mut Arc<Snapshot>, version: &mut u64);
    /// Every thread's slot, and those of threads that exited while
    /// updates were refused.
    fn thread_slots(&self) -> Vec<Arc<ThreadSlot>>;
}

use memo::{BeginCache, ChildMemo, Memo};
use sites::Sites;
pub use thread_state::{ChannelThread, EventAttributes};
use thread_state::{CounterReading, UNMARKED, read_counters};

impl Channel {
    /// A channel with the given services (already instantiated from its
    /// configuration) and event configuration.
    pub(crate) fn new<H: Host>(
        cali: &H,
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
        let mut counters = Vec::new();
        measure.retain(|&i| {
            let service_counters = services[i].region_counters();
            let measures_otherwise = service_counters.is_empty();
            counters.extend(service_counters);
            measures_otherwise
        });
        let measured = counters.iter().flat_map(RegionCounter::attributes).collect();
        let memory = pick(|s| s.tracks_memory());
        let flushed = pick(|s| s.flushes());
        let timer = match *measure {
            [i] if services[i].inline_timer().is_some() => Some(i),
            _ => None,
        };
        if timer.is_some() {
            measure.clear();
        }
        let fused = match observe.is_empty()
            && measure.is_empty()
            && events.as_ref().is_some_and(|e| e.filter.is_empty() && e.branches.is_empty())
        {
            false => Fused::No,
            true if counters.is_empty() => Fused::Plain,
            true => Fused::Measured,
        };
        for service in &services {
            service.attach(id);
        }
        let flush_on_exit = config.get_bool("CALI_CHANNEL_FLUSH_ON_EXIT", true);
        let region_count = cali.create_attribute(
            "region.count",
            AttrType::Uint,
            Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS,
            &[],
        );
        let retired = Mutex::new(services.iter().map(|_| Vec::new()).collect());
        let subscriptions = services.iter().flat_map(|s| s.subscriptions().iter().copied()).collect();
        Channel {
            id,
            name: name.to_string(),
            active: AtomicBool::new(false),
            config,
            services,
            observe,
            measure,
            counters,
            measured,
            process,
            memory,
            flushed,
            timer,
            fused,
            events,
            subscriptions,
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
    /// Whether updates concern the channel at all: it observes them or
    /// takes snapshots of events. The runtime hands updates to the other
    /// active channels (e.g. one that only reads run metadata, or only
    /// samples) not at all.
    pub(crate) fn takes_updates(&self) -> bool {
        !self.observe.is_empty() || self.events.is_some()
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
    pub(crate) fn retire<H: Host>(&self, cali: &H, mut ct: ChannelThread) {
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
    pub(crate) fn mark_attribute<H: Host>(&self, cali: &H, attr: Attribute, name: &str) {
        let Some(events) = &self.events else { return };
        let props = attr.properties();
        let marked = attr.id() >= caliper_data::node::BOOTSTRAP_NODE_COUNT
            && !props.skips_events()
            && (events.triggers.is_empty() || events.triggers.iter().any(|t| t == name))
            && props.level() >= events.level
            && self.subscribes(cali, attr, name);
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

    /// Whether the channel takes snapshots of `attr` as far as
    /// subscriptions go: an attribute whose metadata marks it a
    /// subscription attribute (`subscription_event=true`: `io.region`,
    /// `mpi.function`) only if one of its services subscribes to it, any
    /// other attribute always. The reference's rule, which lets an event
    /// trace without `trace.io` run beside an `io` service in another
    /// channel.
    fn subscribes<H: Host>(&self, cali: &H, attr: Attribute, name: &str) -> bool {
        if self.subscriptions.contains(&name) {
            return true;
        }
        let Some(subscription) = cali.find_attribute("subscription_event") else { return true };
        let info = cali.attribute_info(attr.id());
        let metadata = info.as_ref().map_or(&[][..], |i| &i.metadata[..]);
        !metadata.iter().any(|(m, v)| *m == subscription.id() && *v == Variant::Bool(true))
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
    fn decide_mark<H: Host>(&self, cali: &H, attr: Id) -> Option<Option<EventAttributes>> {
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
    fn thread_state<'a, H: Host>(
        &self,
        cali: &H,
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
    fn new_thread_state<H: Host>(&self, cali: &H, blackboard: &mut Blackboard) -> ChannelThread {
        for service in &self.services {
            service.on_new_thread(cali, blackboard);
        }
        let states = self.services.iter().enumerate();
        let mut states: Vec<ServiceState> =
            states.map(|(i, s)| if self.timer == Some(i) { Box::new(()) } else { s.thread_state() }).collect();
        // The only processing service's thread object inline, if its type
        // is one the channel keeps so.
        let inline = match *self.process {
            [i] => match InlineProcessor::from_boxed(std::mem::replace(&mut states[i], Box::new(()))) {
                Ok(p) => Some((i, p)),
                Err(state) => {
                    states[i] = state;
                    None
                }
            },
            _ => None,
        };
        let timer = self.timer.and_then(|i| self.services[i].inline_timer());
        let mut ct = ChannelThread {
            states,
            inline,
            timer,
            counters: self.counters.iter().map(CounterReading::new).collect(),
            measured: vec![0; self.measured.len()].into_boxed_slice(),
            marks: Sparse::new(&UNMARKED),
            memo: Memo::new(),
            sites: Sites::default(),
            begins: BeginCache::default(),
            filtered: FxHashMap::default(),
            branches: Vec::new(),
            observed: Vec::new(),
        };
        if self.fused != Fused::No {
            let time = ct.timer.as_ref().map(Stamps::attributes);
            let attrs = RegionAttributes { count: self.region_count.id(), time, measured: self.measured.clone() };
            for &i in &self.process {
                ct.state(i).region_attributes(cali, &attrs);
            }
        }
        ct
    }

    /// Handles an update of `attr` on a thread: takes a snapshot if the
    /// attribute triggers one in this channel.
    #[inline]
    pub(crate) fn on_update<H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        let fused = match self.fused {
            Fused::Plain => self.fused_update::<false, false, H>(cali, t, kind, attr, value),
            Fused::Measured => self.measured_fused_update(cali, t, kind, attr, value),
            Fused::No => false,
        };
        if !fused {
            self.generic_update(cali, t, kind, attr, value);
        }
    }

    /// Runs `f` for every service that emits at flush with its state on every
    /// thread. Updates must be stopped (the caller holds `StopUpdates`).
    fn with_process_states<H: Host>(&self, cali: &H, mut f: impl FnMut(&dyn Service, &mut [&mut dyn ThreadService])) {
        let slots = cali.thread_slots();
        let mut retired = sync::lock(&self.retired);
        for &i in &self.flushed {
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
    /// `emit`, edited by the services that postprocess them. Updates must
    /// be stopped.
    pub(crate) fn flush<H: Host>(&self, cali: &H, emit: &mut dyn FnMut(&Record)) {
        let editors: Vec<&Arc<dyn Service>> = self.services.iter().filter(|s| s.postprocesses()).collect();
        if editors.is_empty() {
            return self.with_process_states(cali, |service, states| service.flush(cali, states, emit));
        }
        let mut edited = Record::default();
        let mut edit = |record: &Record| {
            edited.clone_from(record);
            for service in &editors {
                service.postprocess(cali, &mut edited);
            }
            emit(&edited);
        };
        self.with_process_states(cali, |service, states| service.flush(cali, states, &mut edit));
    }

    /// Drops the gathered data of every processing service.
    pub(crate) fn clear<H: Host>(&self, cali: &H) {
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
fn context_entries<'a, H: Host>(cali: &H, c: Context<'a>, replaced: Option<bool>) -> &'a mut Snapshot {
    let region = c.blackboard.regions.node(cali.tree(), c.cache);
    let unaligned = c.blackboard.unaligned.node(cali.tree(), c.cache);
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
    // The region node last, where a region snapshot of the fused path has
    // its node (see [`RegionSnapshot`]): aggregation keys snapshots by
    // their nodes in order, so both paths must give the same order.
    if let (Some(n), false) = (region, replaced == Some(false)) {
        c.snapshot.push_node(n);
    }
    c.snapshot
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Caliper;
    use crate::services::measurement_template::advance;

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

    /// An active channel of `services`, with snapshot info `info` ("true"
    /// or "false") and aggregation key `key`, not flushed at exit.
    fn open_channel(cali: &Caliper, name: &str, services: &str, info: &str, key: &str) -> Arc<Channel> {
        let config = RuntimeConfig::from_pairs(
            [
                ("CALI_SERVICES_ENABLE", services),
                ("CALI_EVENT_ENABLE_SNAPSHOT_INFO", info),
                ("CALI_AGGREGATE_KEY", key),
                ("CALI_CHANNEL_FLUSH_ON_EXIT", "false"),
                ("CALI_CHANNEL_CONFIG_CHECK", "false"),
            ],
            false,
        );
        let channel = cali.create_channel(name, config);
        cali.set_channel_active(&channel, true);
        channel
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
        // A process's as-value entry, as `mpi.rank`: set for the second
        // round of configs.
        let rank = attr("test.fused.rank", AttrType::Int, Properties::ASVALUE | Properties::SCOPE_PROCESS);
        let s = ValueKey::string;
        // Whether a record is in one of the test's regions (a record in
        // none has the process context only: a begin on an empty stack
        // without snapshot info).
        let in_region = |record: &Record| {
            record.refs().any(|node| {
                let mut path = Vec::new();
                cali.tree.path_to(node, &mut path);
                path.iter().any(|&n| {
                    let name = cali.tree.get(n).and_then(|n| cali.attribute_info(n.attribute)).map(|i| i.name);
                    name.is_some_and(|name| name.contains("test.fused"))
                })
            })
        };
        // One processing service (kept inline), and two (behind boxes); with
        // region counters (the template's source, advanced on the way, read
        // by both channels).
        // Each with snapshot info (event nodes) and without (the region
        // stack's node, as runtime-report takes them). Aggregation also
        // keyed by the process's entry, as the profiles of `use.mpi` are.
        let configs = [
            ("aggregate,event", ""),
            ("event,trace", ""),
            ("aggregate,event,trace", ""),
            ("aggregate,event,measurement_template", ""),
            ("event,measurement_template,trace", ""),
            ("aggregate,event", "test.fused.rank"),
        ]
        .into_iter()
        .flat_map(|(services, key)| [(services, key, "true"), (services, key, "false")]);
        let rounds = [false, true].into_iter().flat_map(|ranked| configs.clone().map(move |c| (ranked, c)));
        for (ranked, (services, key, info)) in rounds {
            if ranked {
                cali.set(rank, ValueKey::int(3));
            }
            let open = |services: &str| {
                open_channel(cali, &format!("test.fused.{services}.{info}.{key}.{ranked}"), services, info, key)
            };
            let (fused, generic) = (open(services), open(&format!("{services},debug")));
            let measured = services.contains("measurement_template");
            let mode = if measured { Fused::Measured } else { Fused::Plain };
            let services = format!("{services} (snapshot info {info}, key {key:?}, process value {ranked})");
            assert!(fused.fused == mode && generic.fused == Fused::No, "{services}");
            let one_processor = !services.contains("aggregate,event,trace");
            let thread = fused.new_thread_state(cali, &mut Blackboard::default());
            assert_eq!(thread.inline.is_some(), one_processor, "{services}");
            let errors = cali.stack_errors();
            for i in 0..3 {
                cali.begin(region, s("a"));
                cali.begin(phase, s("p"));
                advance(i as u64 + 1);
                cali.set(iteration, ValueKey::int(i));
                cali.begin(region, s(if i == 1 { "b" } else { "c" }));
                cali.end(region, None);
                cali.end(iteration, None);
                cali.begin(region, s("b"));
                cali.end(region, None);
                cali.end(phase, None);
                cali.begin(unaligned, s("u"));
                cali.begin(region, s("c"));
                advance(5);
                cali.end(region, None);
                cali.end(unaligned, None);
                cali.end(region, None);
            }
            assert_eq!(cali.stack_errors(), errors, "{services}");
            let mut records = [Vec::new(), Vec::new()];
            for (channel, out) in [&fused, &generic].into_iter().zip(&mut records) {
                cali.set_channel_active(channel, false);
                cali.flush(channel, &mut |r| out.push(r.clone()));
            }
            // Without event nodes the snapshots of one context aggregate
            // into one record: fewer records.
            let least = if info == "true" { 10 } else { 5 };
            assert!(records[0].len() > least, "{services}: {} records", records[0].len());
            assert_eq!(records[0], records[1], "{services}");
            // Without event nodes, "a" begins on an empty stack: a record
            // of the process context only.
            let outside = records[0].iter().any(|r| !in_region(r));
            assert_eq!(outside, info == "false", "{services}");
            let ranked_records = records[0].iter().filter(|r| r.immediates().any(|(a, _)| a == rank.id())).count();
            let keyed = !key.is_empty() || services.contains("trace");
            assert_eq!(ranked_records > 0, ranked && keyed, "{services}: the process value where it is kept");
            if measured {
                // The advances reach the records: 3 * 5 + (1 + 2 + 3) in all.
                let delta = cali.find_attribute("measurement.a").expect("template attribute").id();
                let sum = cali.find_attribute("sum#measurement.a").map(|a| a.id());
                let total: u64 = (records[0].iter().flat_map(|r| r.immediates()))
                    .filter(|&(a, _)| a == delta || Some(a) == sum)
                    .filter_map(|(_, v)| v.to_u64())
                    .sum();
                assert_eq!(total, 21, "{services}");
            }
        }
    }

    /// The express path takes the snapshots the fused path takes: a channel
    /// that is the only one updates concern (express) gathers the records
    /// of one beside another channel (fused), over updates that take either
    /// path (first begins, begins from call sites that repeat or alternate
    /// their values, as-value and unaligned context, a flush that clears
    /// the aggregation), and refuses a process context its aggregation
    /// keys by value.
    #[test]
    fn express_and_fused_snapshots_agree() {
        if !alone("express_and_fused_snapshots_agree") {
            return;
        }
        let cali = Caliper::instance().expect("runtime");
        let attr = |name: &str, ty, props| cali.create_attribute(name, ty, props, &[]);
        let region = attr("test.express.region", AttrType::String, Properties::NESTED);
        let iteration = attr("test.express.iteration", AttrType::Int, Properties::ASVALUE);
        let unaligned = attr("test.express.unaligned", AttrType::String, Properties::UNALIGNED);
        let rank = attr("test.express.rank", AttrType::Int, Properties::ASVALUE | Properties::SCOPE_PROCESS);
        let s = ValueKey::string;
        let slot = crate::runtime::current_slot().expect("this thread's slot");
        // A begin from call site `site`, as a wrapped MPI function's.
        let begin_at = |site, name| cali.begin_in(slot, region, s(name), Some(site));
        let open = |name: String, services: &str, key: &str| open_channel(cali, &name, services, "false", key);
        // The records of one run of the updates in a channel of the
        // config, beside another channel or alone, and the updates taken
        // on the express path, from a site's memory among them.
        let run = |name: &str, key: &str, beside: bool| {
            let channel = open(format!("test.express.{name}"), "aggregate,event", key);
            let other = beside.then(|| open(format!("test.express.{name}.beside"), "event,trace", ""));
            let counters = [&express::TAKEN, &express::FROM_SITES];
            let (before, errors) = (counters.map(|c| c.load(Ordering::Relaxed)), cali.stack_errors());
            let mut records = Vec::new();
            for i in 0..6 {
                cali.begin(region, s("a"));
                for (site, name) in [(0, "b"), (1, "c"), (0, "b"), (2, "b")] {
                    begin_at(site, name);
                    cali.end(region, None);
                }
                cali.set(iteration, ValueKey::int(i));
                // Site 1 again, with another value.
                begin_at(1, "d");
                cali.end(region, None);
                cali.end(iteration, None);
                cali.begin(unaligned, s("u"));
                begin_at(0, "e");
                cali.end(region, None);
                cali.end(unaligned, None);
                cali.end(region, None);
                if i == 2 {
                    cali.flush(&channel, &mut |r| records.push(r.clone()));
                    cali.clear(&channel);
                }
            }
            assert_eq!(cali.stack_errors(), errors, "{name}");
            let [taken, from_sites] = counters.map(|c| c.load(Ordering::Relaxed));
            for channel in [Some(&channel), other.as_ref()].into_iter().flatten() {
                cali.set_channel_active(channel, false);
            }
            cali.flush(&channel, &mut |r| records.push(r.clone()));
            (records, taken - before[0], from_sites - before[1])
        };
        for (ranked, key) in [(false, ""), (true, ""), (true, "test.express.rank")] {
            if ranked {
                cali.set(rank, ValueKey::int(3));
            }
            let name = format!("{ranked}.{key}");
            let (express, taken, from_sites) = run(&format!("{name}.alone"), key, false);
            let (fused, none, _) = run(&format!("{name}.beside"), key, true);
            assert_eq!(none, 0, "{name}: beside another channel");
            // Keyed by the process's value: the general path only.
            assert_eq!(taken > 0, key.is_empty(), "{name}: {taken} express updates");
            assert_eq!(from_sites > 0, key.is_empty(), "{name}: {from_sites} begins from sites");
            assert!(express.len() > 5, "{name}: {} records", express.len());
            assert_eq!(express, fused, "{name}");
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
