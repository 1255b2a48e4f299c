//! `aggregate`: aggregates snapshots in place, per thread, keyed by their
//! context-tree nodes (plus the values of `CALI_AGGREGATE_KEY` attributes).
//!
//! For every aggregatable attribute (`time.duration.ns`, `region.count`,
//! ...) each entry keeps min, max, sum and count (the table:
//! [`crate::buffer::aggregation`]); the flush emits per entry
//! the key, `min#X`, `max#X`, `sum#X`, `avg#X`, `count` and
//! `aggregate.slot` (the entry's creation order in its thread).

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::buffer::aggregation::{AggThread, MetricStatistics};
use crate::log;
use crate::service::Runtime;
use crate::service::{Service, ServiceState, ThreadService, state_mut};
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Record, Variant};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "aggregate",
    aliases: &[],
    description: "Aggregate snapshots by context in place: min, max, sum and count of each metric",
    stage: Stage::Buffer,
    settings: &[SettingSpec {
        key: "key",
        kind: SettingKind::StringList,
        default: "",
        description: "As-value attributes added to the aggregation key (e.g. pthread.id)",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(Aggregate::new(setup))))
    },
};

/// The aggregate service of a channel: its key attributes and the
/// attributes of its results.
pub struct Aggregate {
    /// The channel's name, for its messages.
    channel: String,
    key_names: Arc<[String]>,
    count: Attribute,
    slot: Attribute,
}

impl Aggregate {
    pub fn new(setup: &Setup<'_>) -> Aggregate {
        let cali = setup.cali;
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        Aggregate {
            channel: setup.channel.to_string(),
            key_names: setup.settings.list("key", false).into(),
            count: cali.create_attribute("count", AttrType::Uint, props | Properties::AGGREGATABLE, &[]),
            slot: cali.create_attribute("aggregate.slot", AttrType::Uint, props, &[]),
        }
    }

    /// The result attribute `<prefix>#<name>` of the same type as `attr`.
    fn result(&self, cali: &dyn Runtime, prefix: &str, attr: Id, ty: AttrType) -> Option<Attribute> {
        let info = cali.attribute_info(attr)?;
        Some(cali.create_attribute(
            &format!("{prefix}#{}", info.name),
            ty,
            Properties::ASVALUE | Properties::SKIP_EVENTS,
            &[],
        ))
    }
}

impl Service for Aggregate {
    fn name(&self) -> &'static str {
        "aggregate"
    }

    fn processes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(AggThread::new(self.key_names.clone()))
    }

    fn flush(&self, cali: &dyn Runtime, states: &mut [&mut dyn ThreadService], emit: &mut dyn FnMut(&Record)) {
        let mut metric = |record: &mut Record, m: &MetricStatistics| {
            for (prefix, value) in ["min", "max", "sum", "avg"].into_iter().zip(&m.values) {
                if let Some(a) = self.result(cali, prefix, m.attr, m.ty) {
                    record.push_imm(a.id(), value.clone());
                }
            }
        };
        let mut done = |record: &mut Record, n: u64, slot: usize| {
            record.push_imm(self.count.id(), Variant::Uint(n));
            record.push_imm(self.slot.id(), Variant::Uint(slot as u64));
        };
        let mut flushed = 0;
        for state in states.iter_mut() {
            if let Some(t) = state_mut::<AggThread>(&mut **state) {
                flushed += t.flush(&mut metric, &mut done, emit);
            }
        }
        log::info(format_args!("{}: Aggregate: flushed {flushed} snapshots.", self.channel));
    }

    fn clear(&self, states: &mut [&mut dyn ThreadService]) {
        for state in states.iter_mut() {
            if let Some(t) = state_mut::<AggThread>(&mut **state) {
                t.clear();
            }
        }
    }

    fn absorb(&self, cali: &dyn Runtime, into: &mut dyn ThreadService, from: &mut dyn ThreadService) -> bool {
        match (state_mut::<AggThread>(into), state_mut::<AggThread>(from)) {
            (Some(into), Some(from)) => {
                into.absorb(cali, from);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Caliper;
    use crate::snapshot::Snapshot;
    use crate::value::ValueKey;

    /// A snapshot's nodes and values.
    type Taken<'a> = (&'a [Id], &'a [(Id, ValueKey)]);

    /// Feeds snapshots to `state`.
    fn take(cali: &dyn Runtime, state: &mut ServiceState, snapshots: &[Taken<'_>]) {
        let mut snapshot = Snapshot::default();
        for (nodes, values) in snapshots {
            snapshot.clear();
            nodes.iter().for_each(|&n| snapshot.push_node(n));
            values.iter().for_each(|&(a, v)| snapshot.push_value(a, v));
            state.process(cali, &snapshot);
        }
    }

    /// The records flushed from `state`, as text.
    fn flushed(cali: &dyn Runtime, agg: &Aggregate, state: &mut ServiceState) -> Vec<String> {
        let mut lines = Vec::new();
        agg.flush(cali, &mut [state.as_mut()], &mut |r| {
            let text: Vec<String> = r
                .entries
                .iter()
                .map(|e| match e {
                    caliper_data::Entry::Reference(n) => format!("@{n}"),
                    caliper_data::Entry::Immediate(a, v) => {
                        format!("{}={v}", cali.attribute_info(*a).map(|i| i.name.to_string()).unwrap_or_default())
                    }
                })
                .collect();
            lines.push(text.join(","));
        });
        lines
    }

    /// An aggregate service with the default settings.
    fn aggregate(cali: &dyn Runtime) -> Aggregate {
        let config = crate::config::RuntimeConfig::from_pairs([], false);
        Aggregate::new(&Setup {
            cali,
            channel: "test",
            settings: super::super::registry::Settings::new(&SPEC, &config),
        })
    }

    /// Two metrics: an unsigned, and an integer (not native).
    fn metrics(cali: &dyn Runtime) -> (Id, Id) {
        let metric =
            |name: &str, ty| cali.create_attribute(name, ty, Properties::ASVALUE | Properties::AGGREGATABLE, &[]).id();
        (metric("test.agg.u", AttrType::Uint), metric("test.agg.i", AttrType::Int))
    }

    /// The records of the snapshots both tests take.
    const EXPECTED: [&str; 2] = [
        "@100,min#test.agg.u=5,max#test.agg.u=7,sum#test.agg.u=12,avg#test.agg.u=6,\
         min#test.agg.i=-3,max#test.agg.i=4,sum#test.agg.i=1,avg#test.agg.i=0,count=3,aggregate.slot=0",
        "@100,@200,min#test.agg.u=1,max#test.agg.u=1,sum#test.agg.u=1,avg#test.agg.u=1,count=1,aggregate.slot=1",
    ];

    #[test]
    fn statistics_follow_metrics_that_appear_late() {
        let cali = Caliper::instance().expect("runtime");
        let (u, i) = metrics(cali);
        let agg = aggregate(cali);
        let mut state = agg.thread_state();
        take(
            cali,
            &mut state,
            &[
                (&[100], &[(u, ValueKey::uint(5))]),
                // A second metric after the entry exists.
                (&[100], &[(i, ValueKey::int(-3)), (u, ValueKey::uint(7))]),
                (&[100, 200], &[(u, ValueKey::uint(1))]),
                (&[100], &[(i, ValueKey::int(4))]),
            ],
        );
        assert_eq!(flushed(cali, &agg, &mut state), EXPECTED);
    }

    /// An exited thread's entries merge into another's as if that thread
    /// had taken its snapshots, whatever order each met the metrics in.
    #[test]
    fn an_exited_threads_entries_are_absorbed() {
        let cali = Caliper::instance().expect("runtime");
        let (u, i) = metrics(cali);
        let agg = aggregate(cali);
        let (mut into, mut from) = (agg.thread_state(), agg.thread_state());
        take(cali, &mut into, &[(&[100], &[(u, ValueKey::uint(5))]), (&[100, 200], &[(u, ValueKey::uint(1))])]);
        take(
            cali,
            &mut from,
            &[(&[100], &[(i, ValueKey::int(-3)), (u, ValueKey::uint(7))]), (&[100], &[(i, ValueKey::int(4))])],
        );
        assert!(agg.absorb(cali, into.as_mut(), from.as_mut()));
        assert_eq!(flushed(cali, &agg, &mut into), EXPECTED);
    }
}
