//! `region_monitor`: measures only the region instances worth measuring.
//!
//! A region instance (a nested region at a place in the region tree) that
//! ran longer than `CALI_REGION_MONITOR_TIME_INTERVAL` seconds (0.01) is
//! remembered. When that place is entered again and its time was mostly
//! its own (inclusive time more than twice that of its children that took
//! longer than the interval themselves), the instance is measured: the
//! measuring services restart at its begin and a snapshot is taken at its
//! end, so snapshots land on long regions at the finest level where time
//! is spent, whatever the program's shape. Regions inside a measured
//! instance are not measured (as the reference's).

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{ChannelView, Runtime};
use crate::service::{EventKind, Observation, Service, ServiceState, ThreadService};
use crate::value::ValueKey;
use caliper_data::Entry;
use caliper_data::hash::FxHashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counters {
    marked: AtomicU64,
    measured: AtomicU64,
}

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "region_monitor",
    aliases: &[],
    description: "Take snapshots only of region instances that took longer than a time interval before",
    stage: Stage::Trigger,
    settings: &[SettingSpec {
        key: "time_interval",
        kind: SettingKind::Double,
        default: "0.01",
        description: "Seconds a region instance must take for its place to be measured",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(RegionMonitor::new(setup))))
    },
};

pub struct RegionMonitor {
    interval_ns: u64,
    counters: Arc<Counters>,
}

impl RegionMonitor {
    pub fn new(setup: &Setup<'_>) -> RegionMonitor {
        let seconds: f64 = setup.settings.number("time_interval");
        RegionMonitor {
            interval_ns: (seconds.max(0.0) * 1e9) as u64,
            counters: Arc::new(Counters { marked: AtomicU64::new(0), measured: AtomicU64::new(0) }),
        }
    }
}

impl Service for RegionMonitor {
    fn name(&self) -> &'static str {
        "region_monitor"
    }

    fn observes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(MonitorThread {
            interval_ns: self.interval_ns,
            counters: self.counters.clone(),
            open: Vec::new(),
            marked: FxHashMap::default(),
        })
    }

    fn finish(&self, _cali: &dyn Runtime, channel: &dyn ChannelView) {
        log::info(format_args!(
            "{}: region_monitor: {} regions marked, {} instances measured.",
            channel.name(),
            self.counters.marked.load(Ordering::Relaxed),
            self.counters.measured.load(Ordering::Relaxed)
        ));
    }
}

/// An open region instance.
struct Frame {
    /// Identifies the instance's place: its path of (attribute, value).
    place: u64,
    begin_ns: u64,
    /// The time of its children that took longer than the interval.
    children_ns: u64,
    measured: bool,
    /// Whether an enclosing instance is measured.
    inside_measured: bool,
}

/// The times of a remembered place's last long instance.
#[derive(Copy, Clone)]
struct Times {
    inclusive_ns: u64,
    children_ns: u64,
}

struct MonitorThread {
    interval_ns: u64,
    counters: Arc<Counters>,
    open: Vec<Frame>,
    marked: FxHashMap<u64, Times>,
}

/// The place of a child region: a hash of the parent's place and the
/// child's attribute and value.
fn child_place(parent: u64, attr: Attribute, value: ValueKey) -> u64 {
    (parent.rotate_left(5) ^ attr.id().wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ value.hash_bits())
        .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

impl ThreadService for MonitorThread {
    fn observe(
        &mut self,
        _cali: &dyn Runtime,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
        _trigger: &mut Vec<Entry>,
    ) -> Observation {
        if !attr.properties().is_nested() {
            return Observation::Ignore;
        }
        let now = crate::clock::clock().now_ns();
        match kind {
            EventKind::Begin => {
                let parent = self.open.last();
                let place = child_place(parent.map_or(0, |f| f.place), attr, value);
                // Inside a measured instance, nothing more is measured: its
                // snapshot covers the region's time.
                let inside_measured = parent.is_some_and(|f| f.measured || f.inside_measured);
                let measured =
                    !inside_measured && self.marked.get(&place).is_some_and(|t| t.inclusive_ns > 2 * t.children_ns);
                self.open.push(Frame { place, begin_ns: now, children_ns: 0, measured, inside_measured });
                if measured { Observation::Measure } else { Observation::Ignore }
            }
            EventKind::End => {
                let Some(frame) = self.open.pop() else { return Observation::Ignore };
                let inclusive_ns = now.saturating_sub(frame.begin_ns);
                // Only long children count against their parent: time in
                // short ones is the parent's own, worth measuring there.
                if let Some(parent) = self.open.last_mut()
                    && inclusive_ns > self.interval_ns
                {
                    parent.children_ns += inclusive_ns;
                }
                if inclusive_ns > self.interval_ns {
                    let times = Times { inclusive_ns, children_ns: frame.children_ns };
                    if self.marked.insert(frame.place, times).is_none() {
                        self.counters.marked.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if frame.measured {
                    self.counters.measured.fetch_add(1, Ordering::Relaxed);
                    Observation::Snapshot
                } else {
                    Observation::Ignore
                }
            }
            EventKind::Set | EventKind::Explicit => Observation::Ignore,
        }
    }
}
