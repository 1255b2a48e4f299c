//! `libpfm`: hardware and software event counters through
//! `perf_event_open`, with the reference's settings. Each thread that
//! meets the channel opens the events of `CALI_LIBPFM_EVENTS` as one group
//! (counting its own execution), and every snapshot reads the group with
//! one `read` and adds, per event, the count since the thread's previous
//! snapshot as `libpfm.counter.<event>` (aggregatable: profiles sum it per
//! region, as the reference's papi service's deltas).
//!
//! Software events (`task-clock`, `cpu-clock`, `page-faults`,
//! `minor-faults`, `major-faults`, `context-switches`, `cpu-migrations`,
//! `alignment-faults`, `emulation-faults`) work everywhere; hardware events
//! (`cycles`, `instructions`, `cache-references`, `cache-misses`,
//! `branches`, `branch-misses`, `bus-cycles`, `ref-cycles`,
//! `stalled-cycles-frontend`, `stalled-cycles-backend`, and raw PMU codes
//! `r<hex>` as `perf -e` takes them) where the machine has a PMU. An event
//! the kernel refuses (no PMU in a virtual machine, or
//! `perf_event_paranoid`) is left out with a one-line message, once.
//!
//! With `CALI_LIBPFM_ENABLE_SAMPLING`, every thread also samples its events
//! every `CALI_LIBPFM_SAMPLE_PERIOD` occurrences: each sample is a
//! snapshot with the `libpfm.*` attributes of
//! `CALI_LIBPFM_SAMPLE_ATTRIBUTES` (see [`super::event_sampling`]).

use super::event_sampling::{self, ThreadSampling};
use super::perf_events::{
    CounterGroup, EXCLUDE_HV, EXCLUDE_KERNEL, EventCode, Mode, PRECISE_IP_SHIFT, open, why_refused,
};
use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{ChannelView, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "libpfm",
    aliases: &[],
    description: "Count hardware and software events per snapshot through perf_event_open (libpfm.counter.<event>)",
    stage: Stage::Trigger,
    settings: &[
        SettingSpec {
            key: "events",
            kind: SettingKind::StringList,
            default: "cycles",
            description: "The events to count",
        },
        SettingSpec {
            key: "record_counters",
            kind: SettingKind::Bool,
            default: "true",
            description: "Add the counts since the previous snapshot to every snapshot",
        },
        SettingSpec {
            key: "enable_sampling",
            kind: SettingKind::Bool,
            default: "true",
            description: "Sample the events: a snapshot with the sample's libpfm.* attributes every sample period",
        },
        SettingSpec {
            key: "sample_attributes",
            kind: SettingKind::StringList,
            default: "ip,time,tid,cpu",
            description: "What each sample records: ip, time, tid, cpu, addr, weight, data_src",
        },
        SettingSpec {
            key: "sample_period",
            kind: SettingKind::Uint,
            default: "20000000",
            description: "Events between samples (with sampling)",
        },
        SettingSpec { key: "precise_ip", kind: SettingKind::Uint, default: "0", description: "Skid constraint" },
        SettingSpec { key: "config1", kind: SettingKind::Uint, default: "0", description: "Extra event configuration" },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Libpfm::new(setup).map(|s| Created::Service(Arc::new(s)))
    },
};

struct Libpfm {
    /// The events counted, with their attributes (those the calling thread
    /// could open when the service was made).
    events: Vec<(EventCode, Attribute)>,
    record_counters: bool,
    /// The sample period and what a sample records, when sampling.
    sampling: Option<(u64, u64)>,
    flags: u64,
    config1: u64,
}

impl Libpfm {
    fn new(setup: &Setup<'_>) -> Result<Libpfm, NotCreated> {
        let s = &setup.settings;
        let precise = s.number::<u64>("precise_ip").min(3);
        let config1 = s.number::<u64>("config1");
        let mut flags = EXCLUDE_HV | (precise << PRECISE_IP_SHIFT);
        let mut events = Vec::new();
        let mut names = Vec::new();
        for name in s.list("events", false) {
            let Some(code) = caliper_perf::event(&name) else {
                log::error(format_args!("libpfm: unknown event \"{name}\"; left out"));
                continue;
            };
            // Tried on this thread: what the kernel refuses here, it
            // refuses on every thread.
            let count = Mode::Count { group: -1 };
            let opened = open(code, count, flags, config1).or_else(|e| match e.raw_os_error() {
                Some(libc::EACCES | libc::EPERM) => {
                    flags |= EXCLUDE_KERNEL;
                    open(code, count, flags, config1)
                }
                _ => Err(e),
            });
            match opened {
                Ok(_) => {
                    let props = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
                    let attr = format!("libpfm.counter.{name}");
                    events.push((code, setup.cali.create_attribute(&attr, AttrType::Uint, props, &[])));
                    names.push(name);
                }
                Err(e) => log::error(format_args!("libpfm: {name}: {}; left out", why_refused(code, &e))),
            }
        }
        if events.is_empty() {
            log::error(format_args!("libpfm: no event to count; libpfm disabled"));
            return Err(NotCreated::BadSettings);
        }
        let sampling = match s.bool("enable_sampling") {
            false => None,
            true => match event_sampling::start(setup.cali, &s.list("sample_attributes", false), &names) {
                Ok(sample_type) => Some((s.number::<u64>("sample_period").max(1), sample_type)),
                Err(why) => {
                    log::error(format_args!("libpfm: {why}; sampling disabled"));
                    None
                }
            },
        };
        let record_counters = s.bool("record_counters");
        if !record_counters && sampling.is_none() {
            return Err(NotCreated::BadSettings);
        }
        Ok(Libpfm { events, record_counters, sampling, flags, config1 })
    }
}

impl Service for Libpfm {
    fn name(&self) -> &'static str {
        "libpfm"
    }

    fn measures(&self) -> bool {
        self.record_counters
    }

    fn samples(&self) -> bool {
        self.sampling.is_some()
    }

    fn attach(&self, channel: usize) {
        if self.sampling.is_some() {
            event_sampling::attach(channel);
        }
    }

    fn thread_state(&self) -> ServiceState {
        let counters = self.record_counters.then(|| {
            let codes: Vec<EventCode> = self.events.iter().map(|&(code, _)| code).collect();
            let group = CounterGroup::open(&codes, self.flags, self.config1);
            Counters { group, attrs: self.events.iter().map(|&(_, attr)| attr).collect() }
        });
        let sampling = self.sampling.map(|(period, sample_type)| {
            let mode = Mode::Sample { period, sample_type };
            let fds = (self.events.iter().enumerate())
                .filter_map(|(i, &(code, _))| Some((i as u8, open(code, mode, self.flags, self.config1).ok()?)))
                .collect();
            ThreadSampling::new(fds)
        });
        Box::new(PfmThread { counters, _sampling: sampling })
    }

    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        if self.sampling.is_some() {
            event_sampling::stop();
        }
    }
}

/// A thread's part: its counter group and its sampling events.
struct PfmThread {
    counters: Option<Counters>,
    /// Kept for its rings, which the kernel fills and the handler reads.
    _sampling: Option<ThreadSampling>,
}

impl ThreadService for PfmThread {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        if let Some(counters) = &mut self.counters {
            counters.measure(snapshot);
        }
    }
}

/// A thread's counter group and the attributes of its events.
struct Counters {
    group: CounterGroup,
    attrs: Vec<Attribute>,
}

impl Counters {
    /// Adds the counts since the previous snapshot.
    fn measure(&mut self, snapshot: &mut Snapshot) {
        for (i, delta) in self.group.deltas() {
            snapshot.push_value(self.attrs[i].id(), ValueKey::uint(delta));
        }
    }
}
