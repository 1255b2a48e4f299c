//! `cuptitrace`: the device's activities through CUPTI's activity API.
//! Each kernel, memory copy (and, when asked, memory set and
//! synchronisation) becomes a record at flush: `cupti.activity.kind`,
//! `cupti.activity.start`, `cupti.activity.end`,
//! `cupti.activity.duration` (ns, GPU clock), `cupti.kernel.name`
//! (demangled) or `cupti.memcpy.kind` and `cupti.memcpy.bytes`, and the
//! stream it ran on (`cupti.streamID`), under the host region path of the
//! API call that started it.
//!
//! That path is found by correlation: each CUDA API call's callback
//! notes the calling thread's region path node under the call's
//! correlation id, which the call's activities carry. (CUPTI's external
//! correlation records would do the same, but only with an API activity
//! record beside each, which costs more than the note.)
//!
//! With `snapshot_duration` / `snapshot_timestamps` the service also
//! measures the host: `cupti.host.duration` (ns since the thread's
//! previous snapshot, in CUPTI's clock) and `cupti.timestamp`, which
//! `cuda-activity-report` compares with the GPU time.

use super::super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use super::activity::{self, Activity, Work};
use super::api::{Cupti, Domain};
use super::subscription;
use crate::attributes::Attribute;
use crate::log;
use crate::service::{GlobalRuntime, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::sync;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Record, Variant};
use std::alloc::Layout;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub(in crate::services) const SPEC: ServiceSpec = ServiceSpec {
    name: "cuptitrace",
    aliases: &[],
    description: "CUDA device activities (kernels, memory copies) with their GPU times, under the host regions that launched them (CUPTI)",
    stage: Stage::Buffer,
    settings: &[
        SettingSpec {
            key: "activities",
            kind: SettingKind::StringList,
            default: "correlation,device,runtime,kernel,memcpy",
            description: "Activities to record: kernel, memcpy, memset, sync; correlation puts them under the host regions of their runtime (and, if listed, driver) API calls; device: accepted",
        },
        SettingSpec {
            key: "correlate_context",
            kind: SettingKind::Bool,
            default: "true",
            description: "Put each activity under the host region path of the CUDA call that started it",
        },
        SettingSpec {
            key: "uvm_transfers",
            kind: SettingKind::Bool,
            default: "true",
            description: "Unified memory transfers (with the uvm activity, which is not supported)",
        },
        SettingSpec {
            key: "uvm_pagefaults",
            kind: SettingKind::Bool,
            default: "true",
            description: "Unified memory page faults (with the uvm activity, which is not supported)",
        },
        SettingSpec {
            key: "snapshot_timestamps",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add CUPTI's timestamp (cupti.timestamp) to each snapshot",
        },
        SettingSpec {
            key: "snapshot_duration",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add the host time since the thread's previous snapshot (cupti.host.duration) to each snapshot",
        },
        SettingSpec {
            key: "flush_on_snapshot",
            kind: SettingKind::Bool,
            default: "false",
            description: "Collect CUPTI's activity buffers at each snapshot of the flush trigger attribute",
        },
        SettingSpec {
            key: "flush_trigger",
            kind: SettingKind::String,
            default: "cupti.sync",
            description: "The attribute whose snapshots collect the buffers (with flush_on_snapshot)",
        },
        SettingSpec {
            key: "info_attributes",
            kind: SettingKind::StringList,
            default: "mpi.rank",
            description: "Attributes whose values at flush every activity record gets",
        },
    ],
    create,
};

/// The size of each activity buffer handed to CUPTI.
const BUFFER_SIZE: usize = 1 << 20;
/// The external correlation id of a CUDA call made outside any region.
const NO_CONTEXT: u64 = u64::MAX;

/// What an `activities` name asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// Records of this `CUpti_ActivityKind`.
    Kind(u32),
    /// Each activity under the host context of its API call.
    Correlation,
    /// The calls of this API domain are the ones correlated (`runtime`,
    /// and `driver` for programs that launch through the driver API:
    /// each domain's callbacks cost every call of it).
    Calls(Domain),
    /// Nothing more: the reference reads these records for what the
    /// others give here.
    Nothing,
}

/// What `name` asks for; an error for names the service does not know.
fn asked(name: &str) -> Result<Asked, String> {
    Ok(match name {
        "kernel" => Asked::Kind(activity::kind::CONCURRENT_KERNEL),
        "memcpy" => Asked::Kind(activity::kind::MEMCPY),
        "memset" => Asked::Kind(activity::kind::MEMSET),
        "sync" => Asked::Kind(activity::kind::SYNCHRONIZATION),
        "correlation" => Asked::Correlation,
        "runtime" => Asked::Calls(Domain::Runtime),
        "driver" => Asked::Calls(Domain::Driver),
        "device" => Asked::Nothing,
        "uvm" => return Err("the uvm activity (unified memory) is not supported".into()),
        _ => return Err(format!("unknown activity \"{name}\" (kernel, memcpy, memset, sync, correlation)")),
    })
}

/// The process's activity tracing: CUPTI, and the stores of the channels
/// with the service, which every completed buffer's records go to.
struct Tracing {
    cupti: &'static Cupti,
    runtime: GlobalRuntime,
    /// Whether CUDA calls note the host's context.
    correlate: AtomicBool,
    /// API call correlation id → the region path node of the calling
    /// thread (or [`NO_CONTEXT`]).
    correlations: Mutex<FxHashMap<u32, u64>>,
    stores: Mutex<Vec<Weak<Mutex<Store>>>>,
    dropped: AtomicUsize,
}

static TRACING: OnceLock<Result<Tracing, String>> = OnceLock::new();

/// What a channel has gathered since its last clear.
#[derive(Default)]
struct Store {
    activities: Vec<Activity>,
}

/// The process's activity tracing, if it started.
fn started() -> Option<&'static Tracing> {
    TRACING.get()?.as_ref().ok()
}

fn tracing(cali: &dyn Runtime) -> Result<&'static Tracing, String> {
    let made = TRACING.get_or_init(|| {
        let cupti = Cupti::get()?;
        // The subscription comes first: CUPTI's callbacks and its
        // activity API are one library state.
        subscription()?;
        cupti.register_buffers(buffer_requested, buffer_completed)?;
        Ok(Tracing {
            cupti,
            runtime: cali.global(),
            correlate: AtomicBool::new(false),
            correlations: Mutex::new(FxHashMap::default()),
            stores: Mutex::new(Vec::new()),
            dropped: AtomicUsize::new(0),
        })
    });
    made.as_ref().map_err(String::clone)
}

/// CUPTI asks for an empty buffer.
unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: a non-zero size with a power-of-two alignment.
    let memory = unsafe { std::alloc::alloc(buffer_layout()) };
    log::log(2, format_args!("cuptitrace: CUPTI asks for a buffer"));
    // SAFETY: CUPTI's places for the buffer, its size and record limit.
    unsafe {
        *buffer = memory;
        *size = if memory.is_null() { 0 } else { BUFFER_SIZE };
        *max_records = 0;
    }
}

fn buffer_layout() -> Layout {
    // 8-byte aligned, as CUPTI requires.
    Layout::from_size_align(BUFFER_SIZE, 8).unwrap_or(Layout::new::<u64>())
}

/// CUPTI hands back a buffer with `valid` bytes of records: they are
/// decoded into every store, and the buffer freed.
unsafe extern "C" fn buffer_completed(context: *mut c_void, stream: u32, buffer: *mut u8, _size: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    if let Some(tracing) = started() {
        crate::contain::contain("cuptitrace", || {
            // SAFETY: the buffer CUPTI completed.
            let records = unsafe { tracing.cupti.records(buffer, valid) };
            // SAFETY: each record at least as long as its kind's fields
            // (see `activity`), with CUPTI's strings.
            let decoded: Vec<Activity> = records
                .filter_map(|r| unsafe {
                    let kind = r.cast::<u32>().read_unaligned();
                    activity::decode(std::slice::from_raw_parts(r, activity::size_read(kind)))
                })
                .collect();
            tracing.dropped.fetch_add(tracing.cupti.dropped(context, stream), Ordering::Relaxed);
            log::log(
                2,
                format_args!("cuptitrace: CUPTI returned a buffer: {valid} bytes, {} records kept", decoded.len()),
            );
            tracing.deliver(&decoded);
        });
    }
    // SAFETY: the buffer `buffer_requested` allocated.
    unsafe { std::alloc::dealloc(buffer, buffer_layout()) };
}

impl Tracing {
    /// Adds `activities` to every channel's store.
    fn deliver(&self, activities: &[Activity]) {
        let mut stores = sync::lock(&self.stores);
        stores.retain(|s| s.strong_count() > 0);
        for store in stores.iter().filter_map(Weak::upgrade) {
            sync::lock(&store).activities.extend_from_slice(activities);
        }
    }
}

/// A context is about to go (`cudaDeviceReset`, a library's own
/// context): its activities are collected first, so that they are here
/// at the flush whatever CUPTI does with the buffers of a context that is
/// gone.
pub(super) fn context_destroy_starting() {
    if let Some(tracing) = started() {
        log::log(2, format_args!("cuptitrace: a CUDA context ends: collecting its activities"));
        if let Err(why) = tracing.cupti.flush_all() {
            log::error(format_args!("cuptitrace: {why}"));
        }
    }
}

/// Before a CUDA API call: notes the calling thread's region path under
/// the call's correlation id.
pub(super) fn api_enter(correlation: u32) {
    if let Some(tracing) = started()
        && tracing.correlate.load(Ordering::Relaxed)
    {
        let node = (tracing.runtime)().and_then(|cali| cali.path_node());
        sync::lock(&tracing.correlations).insert(correlation, node.unwrap_or(NO_CONTEXT));
    }
}

/// The attributes of activity records and host measurements.
struct Attributes {
    kind: Attribute,
    start: Attribute,
    end: Attribute,
    duration: Attribute,
    kernel_name: Attribute,
    memcpy_kind: Attribute,
    memcpy_bytes: Attribute,
    stream: Attribute,
    host_duration: Attribute,
    timestamp: Attribute,
}

impl Attributes {
    fn new(cali: &dyn Runtime) -> Attributes {
        let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let metric = value | Properties::AGGREGATABLE;
        let name = Properties::SKIP_EVENTS;
        let attr = |n, ty, props| cali.create_attribute(n, ty, props, &[]);
        Attributes {
            kind: attr("cupti.activity.kind", AttrType::String, name),
            start: attr("cupti.activity.start", AttrType::Uint, value),
            end: attr("cupti.activity.end", AttrType::Uint, value),
            duration: attr("cupti.activity.duration", AttrType::Uint, metric),
            kernel_name: attr("cupti.kernel.name", AttrType::String, name),
            memcpy_kind: attr("cupti.memcpy.kind", AttrType::String, name),
            memcpy_bytes: attr("cupti.memcpy.bytes", AttrType::Uint, metric),
            stream: attr("cupti.streamID", AttrType::Uint, value),
            host_duration: attr("cupti.host.duration", AttrType::Uint, metric),
            timestamp: attr("cupti.timestamp", AttrType::Uint, value),
        }
    }
}

fn create(setup: &Setup<'_>) -> Result<Created, NotCreated> {
    let s = &setup.settings;
    let mut asked_for = Vec::new();
    for name in s.list("activities", false) {
        match asked(&name) {
            Ok(a) => asked_for.push(a),
            Err(why) => {
                log::error(format_args!("cuptitrace: {why}"));
                return Err(NotCreated::BadSettings);
            }
        }
    }
    let kinds: Vec<u32> =
        asked_for.iter().filter_map(|&a| if let Asked::Kind(k) = a { Some(k) } else { None }).collect();
    let correlate = s.bool("correlate_context") && asked_for.contains(&Asked::Correlation);
    let mut calls: Vec<Domain> =
        asked_for.iter().filter_map(|&a| if let Asked::Calls(d) = a { Some(d) } else { None }).collect();
    if calls.is_empty() {
        calls.push(Domain::Runtime);
    }
    let store = Arc::new(Mutex::new(Store::default()));
    let started = tracing(setup.cali).and_then(|tracing| {
        for &kind in &kinds {
            tracing.cupti.enable_activity(kind)?;
        }
        let subscription = subscription()?;
        subscription.enable(&[Domain::Resource])?;
        if correlate {
            subscription.enable(&calls)?;
            tracing.correlate.store(true, Ordering::Relaxed);
        }
        sync::lock(&tracing.stores).push(Arc::downgrade(&store));
        log::log(2, format_args!("cuptitrace: recording activity kinds {kinds:?}, correlated: {correlate}"));
        Ok(tracing)
    });
    let cupti = match started {
        Ok(tracing) => Some(tracing.cupti),
        Err(why) => {
            super::unavailable(&why);
            None
        }
    };
    let clock = ClockSettings {
        durations: s.bool("snapshot_duration"),
        timestamps: s.bool("snapshot_timestamps"),
        flush_trigger: s.bool("flush_on_snapshot").then(|| s.text("flush_trigger")),
    };
    Ok(Created::Service(Arc::new(CuptiTrace {
        cupti,
        attrs: Arc::new(Attributes::new(setup.cali)),
        store,
        info: s.list("info_attributes", false),
        clock,
    })))
}

/// A channel's part: its store of activities, and what its snapshots
/// measure.
struct CuptiTrace {
    /// `None` when CUPTI is not usable: the service records nothing.
    cupti: Option<&'static Cupti>,
    attrs: Arc<Attributes>,
    store: Arc<Mutex<Store>>,
    info: Vec<String>,
    /// What its threads' snapshots get.
    clock: ClockSettings,
}

impl CuptiTrace {
    /// The record of `a`: its kind and name or direction as nodes under
    /// the host context `parent`, its times and bytes as values.
    fn record(
        &self,
        cali: &dyn Runtime,
        a: &Activity,
        parent: Option<Id>,
        names: &mut Names,
        info: &[(Id, Variant)],
    ) -> Record {
        let tree = cali.tree();
        let attrs = &self.attrs;
        let mut node = tree.get_child_key(attrs.kind.id(), ValueKey::string(a.work.kind()), parent);
        let mut record = Record::ctx();
        match &a.work {
            Work::Kernel(name) => {
                node = tree.get_child_key(attrs.kernel_name.id(), names.demangled(name), Some(node));
            }
            &Work::Memcpy { direction, bytes } => {
                node = tree.get_child_key(attrs.memcpy_kind.id(), ValueKey::string(direction), Some(node));
                record.push_imm(attrs.memcpy_bytes.id(), Variant::Uint(bytes));
            }
            Work::Memset { .. } | Work::Synchronization => {}
        }
        record.entries.insert(0, caliper_data::Entry::Reference(node));
        record.push_imm(attrs.start.id(), Variant::Uint(a.start));
        record.push_imm(attrs.end.id(), Variant::Uint(a.end));
        record.push_imm(attrs.duration.id(), Variant::Uint(a.end.saturating_sub(a.start)));
        record.push_imm(attrs.stream.id(), Variant::Uint(a.stream.into()));
        for (attr, value) in info {
            record.push_imm(*attr, value.clone());
        }
        record
    }
}

/// Kernel names demangled once each.
#[derive(Default)]
struct Names(FxHashMap<Arc<str>, ValueKey>);

impl Names {
    fn demangled(&mut self, name: &Arc<str>) -> ValueKey {
        *self.0.entry(name.clone()).or_insert_with(|| {
            let demangled = addr2line::demangle_auto(name.as_ref().into(), None);
            ValueKey::string(&demangled)
        })
    }
}

impl Service for CuptiTrace {
    fn name(&self) -> &'static str {
        "cuptitrace"
    }

    fn measures(&self) -> bool {
        let clock = &self.clock;
        clock.durations || clock.timestamps || clock.flush_trigger.is_some()
    }

    fn flushes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(HostClock {
            cupti: self.cupti,
            attrs: self.attrs.clone(),
            last: None,
            settings: self.clock.clone(),
            flush_trigger_id: None,
        })
    }

    fn flush(&self, cali: &dyn Runtime, _states: &mut [&mut dyn ThreadService], emit: &mut dyn FnMut(&Record)) {
        let Some(cupti) = self.cupti else { return };
        log::log(2, format_args!("cuptitrace: collecting CUPTI's activity buffers"));
        if let Err(why) = cupti.flush_all() {
            log::error(format_args!("cuptitrace: {why}"));
        }
        if let Some(tracing) = started() {
            let dropped = tracing.dropped.swap(0, Ordering::Relaxed);
            if dropped > 0 {
                log::error(format_args!("cuptitrace: CUPTI dropped {dropped} activity records"));
            }
        }
        let info: Vec<(Id, Variant)> = self
            .info
            .iter()
            .filter_map(|name| {
                let attr = cali.find_attribute(name)?;
                Some((attr.id(), cali.get(attr)?))
            })
            .collect();
        let store = sync::lock(&self.store);
        let correlations = started().map(|t| sync::lock(&t.correlations));
        let mut names = Names::default();
        let mut placed = 0;
        for a in &store.activities {
            let parent =
                correlations.as_ref().and_then(|c| c.get(&a.correlation)).copied().filter(|&e| e != NO_CONTEXT);
            placed += usize::from(parent.is_some());
            emit(&self.record(cali, a, parent, &mut names, &info));
        }
        log::info(format_args!("cuptitrace: {} activity records, {placed} under a region", store.activities.len()));
    }

    /// Forgets the channel's activities and the API calls' contexts noted
    /// so far (with several channels tracing, a channel cleared first
    /// takes the others' contexts of earlier calls with it).
    fn clear(&self, _states: &mut [&mut dyn ThreadService]) {
        sync::lock(&self.store).activities.clear();
        if let Some(tracing) = started() {
            sync::lock(&tracing.correlations).clear();
        }
    }
}

/// What a thread's snapshots get.
#[derive(Clone)]
struct ClockSettings {
    durations: bool,
    timestamps: bool,
    flush_trigger: Option<String>,
}

/// A thread's host measurements in CUPTI's clock (the runtime's without
/// CUPTI, whose host times stay right).
struct HostClock {
    cupti: Option<&'static Cupti>,
    attrs: Arc<Attributes>,
    /// The time of the thread's previous snapshot.
    last: Option<u64>,
    settings: ClockSettings,
    /// The flush trigger's attribute, once it exists (a service of another
    /// channel may make it later).
    flush_trigger_id: Option<Id>,
}

impl ThreadService for HostClock {
    fn measure(&mut self, cali: &dyn Runtime, snapshot: &mut Snapshot, trigger: &Trigger) {
        let attrs = &self.attrs;
        if let (Some(name), Some(cupti), Some(attr)) = (&self.settings.flush_trigger, self.cupti, trigger.attr) {
            if self.flush_trigger_id.is_none() {
                self.flush_trigger_id = cali.find_attribute(name).map(|a| a.id());
            }
            if self.flush_trigger_id == Some(attr.id()) {
                let _ = cupti.flush_all();
            }
        }
        let now = self.cupti.map_or_else(|| crate::clock::clock().now_ns(), Cupti::timestamp);
        if self.settings.timestamps {
            snapshot.push_value(attrs.timestamp.id(), ValueKey::uint(now));
        }
        let last = self.last.replace(now);
        if let Some(last) = last.filter(|_| self.settings.durations) {
            snapshot.push_value(attrs.host_duration.id(), ValueKey::uint(now.saturating_sub(last)));
        }
    }
}
