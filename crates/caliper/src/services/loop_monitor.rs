//! `loop_monitor`: snapshots inside a target loop, every N iterations or
//! every T seconds, with the iterations done since the previous one.
//!
//! The first loop entered (or the first whose name starts with one of
//! `CALI_LOOP_MONITOR_TARGET_LOOPS`) becomes the thread's target. A
//! snapshot is taken when it begins (closing the time before it), after an
//! iteration ends when `CALI_LOOP_MONITOR_ITERATION_INTERVAL` iterations
//! or `CALI_LOOP_MONITOR_TIME_INTERVAL` seconds have passed, and when it
//! ends. Iterations are begins of `class.iteration` attributes (e.g.
//! `iteration#mainloop`) in the target loop. Snapshots carry
//! `loop.iterations` and `loop.start_iteration` (the first iteration of
//! the block).

use super::iteration_class::IterationAttributes;
use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{ChannelView, Runtime};
use crate::service::{EventKind, Observation, Service, ServiceState, ThreadService};
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The service's settings, shared with its thread objects.
struct Settings {
    loop_attr: Id,
    class_iteration: Id,
    iterations: Id,
    start_iteration: Id,
    iteration_interval: u64,
    time_interval_ns: u64,
    targets: Vec<String>,
    snapshots: AtomicU64,
}

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "loop_monitor",
    aliases: &[],
    description: "Take snapshots every N iterations or T seconds inside a loop (loop.iterations)",
    stage: Stage::Trigger,
    settings: &[
        SettingSpec {
            key: "iteration_interval",
            kind: SettingKind::Uint,
            default: "0",
            description: "Take a snapshot every N iterations (0: not by iterations)",
        },
        SettingSpec {
            key: "time_interval",
            kind: SettingKind::Double,
            default: "0",
            description: "Take a snapshot every T seconds (0: not by time)",
        },
        SettingSpec {
            key: "target_loops",
            kind: SettingKind::StringList,
            default: "",
            description: "Only these loops (all if empty)",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(LoopMonitor::new(setup))))
    },
};

pub struct LoopMonitor {
    settings: Arc<Settings>,
}

impl LoopMonitor {
    pub fn new(setup: &Setup<'_>) -> LoopMonitor {
        let (cali, settings) = (setup.cali, &setup.settings);
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let b = cali.builtins();
        let seconds: f64 = settings.number("time_interval");
        LoopMonitor {
            settings: Arc::new(Settings {
                loop_attr: b.loop_attr.id(),
                class_iteration: b.class_iteration.id(),
                iterations: cali
                    .create_attribute("loop.iterations", AttrType::Int, props | Properties::AGGREGATABLE, &[])
                    .id(),
                start_iteration: cali.create_attribute("loop.start_iteration", AttrType::Int, props, &[]).id(),
                iteration_interval: settings.number("iteration_interval"),
                time_interval_ns: (seconds.max(0.0) * 1e9) as u64,
                targets: settings.list("target_loops", false),
                snapshots: AtomicU64::new(0),
            }),
        }
    }
}

impl Service for LoopMonitor {
    fn name(&self) -> &'static str {
        "loop_monitor"
    }

    fn observes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(LoopThread {
            settings: self.settings.clone(),
            depth: 0,
            target_depth: None,
            iterations: 0,
            start_iteration: None,
            last_snapshot_ns: 0,
            is_iteration: IterationAttributes::default(),
        })
    }

    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        log::info(format_args!(
            "loop_monitor: Triggered {} snapshots.",
            self.settings.snapshots.load(Ordering::Relaxed)
        ));
    }
}

struct LoopThread {
    settings: Arc<Settings>,
    /// Loops open on the thread.
    depth: usize,
    /// The loop depth of the target loop, while it runs.
    target_depth: Option<usize>,
    /// Iterations since the last snapshot.
    iterations: i64,
    /// The first iteration since the last snapshot.
    start_iteration: Option<i64>,
    last_snapshot_ns: u64,
    is_iteration: IterationAttributes,
}

impl LoopThread {
    fn is_target(&self, name: &str) -> bool {
        self.settings.targets.is_empty() || self.settings.targets.iter().any(|t| name.starts_with(t.as_str()))
    }

    /// Takes the block's snapshot: its iterations and first iteration.
    fn snapshot(&mut self, now: u64, trigger: &mut Vec<Entry>) -> Observation {
        let s = &self.settings;
        trigger.push(Entry::Immediate(s.iterations, Variant::Int(self.iterations)));
        if let Some(first) = self.start_iteration {
            trigger.push(Entry::Immediate(s.start_iteration, Variant::Int(first)));
        }
        self.iterations = 0;
        self.start_iteration = None;
        self.last_snapshot_ns = now;
        s.snapshots.fetch_add(1, Ordering::Relaxed);
        Observation::Snapshot
    }
}

impl ThreadService for LoopThread {
    fn observe(
        &mut self,
        cali: &dyn Runtime,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
        trigger: &mut Vec<Entry>,
    ) -> Observation {
        let now = crate::clock::clock().now_ns();
        let in_target = self.target_depth == Some(self.depth);
        if attr.id() == self.settings.loop_attr {
            match kind {
                EventKind::Begin => {
                    self.depth += 1;
                    let name = value.to_variant();
                    if self.target_depth.is_none() && self.is_target(name.as_str().unwrap_or_default()) {
                        self.target_depth = Some(self.depth);
                        self.iterations = 0;
                        self.start_iteration = None;
                        self.last_snapshot_ns = now;
                        // Close the time before the loop; it has no loop entry.
                        self.settings.snapshots.fetch_add(1, Ordering::Relaxed);
                        return Observation::Snapshot;
                    }
                }
                EventKind::End => {
                    self.depth = self.depth.saturating_sub(1);
                    if in_target {
                        self.target_depth = None;
                        return self.snapshot(now, trigger);
                    }
                }
                EventKind::Set | EventKind::Explicit => {}
            }
            return Observation::Ignore;
        }
        if !in_target || !self.is_iteration.contains(cali, self.settings.class_iteration, attr.id()) {
            return Observation::Ignore;
        }
        match kind {
            EventKind::Begin => {
                if self.start_iteration.is_none() {
                    self.start_iteration = value.to_variant().to_i64();
                }
                Observation::Ignore
            }
            EventKind::End => {
                self.iterations += 1;
                let s = &self.settings;
                let by_count =
                    s.iteration_interval > 0 && (self.iterations as u64).is_multiple_of(s.iteration_interval);
                let by_time = s.time_interval_ns > 0 && now.saturating_sub(self.last_snapshot_ns) > s.time_interval_ns;
                if by_count || by_time { self.snapshot(now, trigger) } else { Observation::Ignore }
            }
            EventKind::Set | EventKind::Explicit => Observation::Ignore,
        }
    }
}
