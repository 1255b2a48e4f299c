//! `loop_statistics`: time per loop iteration and iterations per loop.
//!
//! Each iteration's end (the end of a `class.iteration` attribute, such as
//! `iteration#mainloop`, inside a `loop`) takes a snapshot with
//! `iter.duration.ns`, the time since that iteration began; each loop's end
//! takes one with `iter.count`, the iterations it ran. Aggregated per
//! region, they make the `loop.stats` option's columns: the iterations and
//! the minimum, average and maximum time per iteration.

use super::iteration_class::IterationAttributes;
use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::service::{EventKind, Observation, Runtime, Service, ServiceState, ThreadService};
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "loop_statistics",
    aliases: &[],
    description: "Take a snapshot at each loop iteration's end (iter.duration.ns) and each loop's end (iter.count)",
    stage: Stage::Trigger,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(LoopStatistics::new(setup))))
    },
};

/// The attributes the service reads and writes.
struct Attributes {
    loop_attr: Id,
    class_iteration: Id,
    duration: Id,
    count: Id,
}

struct LoopStatistics {
    attrs: Arc<Attributes>,
}

impl LoopStatistics {
    fn new(setup: &Setup<'_>) -> LoopStatistics {
        let cali = setup.cali;
        let b = cali.builtins();
        let metric = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
        LoopStatistics {
            attrs: Arc::new(Attributes {
                loop_attr: b.loop_attr.id(),
                class_iteration: b.class_iteration.id(),
                duration: cali.create_attribute("iter.duration.ns", AttrType::Uint, metric, &[]).id(),
                count: cali.create_attribute("iter.count", AttrType::Uint, metric, &[]).id(),
            }),
        }
    }
}

impl Service for LoopStatistics {
    fn name(&self) -> &'static str {
        "loop_statistics"
    }

    fn observes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(LoopStatisticsThread {
            attrs: self.attrs.clone(),
            loops: Vec::new(),
            is_iteration: IterationAttributes::default(),
        })
    }
}

/// An open loop: its iterations so far, and when the current one began.
#[derive(Default)]
struct OpenLoop {
    iterations: u64,
    iteration_began: Option<u64>,
}

struct LoopStatisticsThread {
    attrs: Arc<Attributes>,
    loops: Vec<OpenLoop>,
    is_iteration: IterationAttributes,
}

impl ThreadService for LoopStatisticsThread {
    fn observe(
        &mut self,
        cali: &dyn Runtime,
        kind: EventKind,
        attr: Attribute,
        _value: ValueKey,
        trigger: &mut Vec<Entry>,
    ) -> Observation {
        let a = &self.attrs;
        if attr.id() == a.loop_attr {
            match kind {
                EventKind::Begin => self.loops.push(OpenLoop::default()),
                EventKind::End => {
                    if let Some(ended) = self.loops.pop() {
                        trigger.push(Entry::Immediate(a.count, Variant::Uint(ended.iterations)));
                        return Observation::Snapshot;
                    }
                }
                EventKind::Set | EventKind::Explicit => {}
            }
            return Observation::Ignore;
        }
        if !matches!(kind, EventKind::Begin | EventKind::End)
            || !self.is_iteration.contains(cali, a.class_iteration, attr.id())
        {
            return Observation::Ignore;
        }
        let Some(open) = self.loops.last_mut() else { return Observation::Ignore };
        let now = crate::clock::clock().now_ns();
        if kind == EventKind::Begin {
            open.iteration_began = Some(now);
            return Observation::Ignore;
        }
        let Some(began) = open.iteration_began.take() else { return Observation::Ignore };
        open.iterations += 1;
        trigger.push(Entry::Immediate(a.duration, Variant::Uint(now.saturating_sub(began))));
        Observation::Snapshot
    }
}
