//! `aggregate`: aggregates snapshots in place, per thread, keyed by their
//! context-tree nodes (plus the values of `CALI_AGGREGATE_KEY` attributes).
//!
//! For every aggregatable attribute (`time.duration.ns`, `region.count`,
//! ...) each entry keeps min, max, sum and count; the flush emits per entry
//! the key, `min#X`, `max#X`, `sum#X`, `avg#X`, `count` and
//! `aggregate.slot` (the entry's creation order in its thread).

use crate::attributes::Attribute;
use crate::channel::{Service, ServiceState, ThreadService, state_mut};
use crate::config::RuntimeConfig;
use crate::log;
use crate::runtime::Caliper;
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Record, Variant};
use std::sync::Arc;

pub struct Aggregate {
    key_names: Arc<[String]>,
    count: Attribute,
    slot: Attribute,
}

/// The running statistics of one attribute in one entry, native for the
/// common unsigned metrics (times, counts). `n == 0`: no value yet.
#[derive(Clone, Debug)]
struct Stat {
    acc: Acc,
    n: u64,
}

impl Stat {
    const EMPTY: Stat = Stat { acc: Acc::Uint { min: 0, max: 0, sum: 0 }, n: 0 };
}

#[derive(Clone, Debug)]
enum Acc {
    Uint { min: u64, max: u64, sum: u64 },
    Other { min: Variant, max: Variant, sum: Variant },
}

impl Acc {
    fn new(value: ValueKey) -> Acc {
        match value.as_uint() {
            Some(u) => Acc::Uint { min: u, max: u, sum: u },
            None => {
                let v = value.to_variant();
                Acc::Other { min: v.clone(), max: v.clone(), sum: v }
            }
        }
    }

    #[inline]
    fn add(&mut self, value: ValueKey) {
        match (self, value.as_uint()) {
            (Acc::Uint { min, max, sum }, Some(u)) => {
                *min = (*min).min(u);
                *max = (*max).max(u);
                *sum = sum.wrapping_add(u);
            }
            (acc, _) => {
                let v = value.to_variant();
                let (mut min, mut max, mut sum) = acc.variants();
                sum.add_assign(&v);
                min = min.min_with(&v);
                max = max.max_with(&v);
                *acc = Acc::Other { min, max, sum };
            }
        }
    }

    /// min, max, sum.
    fn variants(&self) -> (Variant, Variant, Variant) {
        match self {
            Acc::Uint { min, max, sum } => (Variant::Uint(*min), Variant::Uint(*max), Variant::Uint(*sum)),
            Acc::Other { min, max, sum } => (min.clone(), max.clone(), sum.clone()),
        }
    }
}

#[derive(Clone, Debug)]
struct AggEntry {
    /// The key's nodes and key attribute values.
    key: Snapshot,
    count: u64,
    /// By the thread's metric slot.
    stats: Vec<Stat>,
    /// The slots in the order the entry first saw them: the order of the
    /// flushed statistics.
    order: Vec<u32>,
}

impl AggEntry {
    fn new(key: Snapshot) -> AggEntry {
        AggEntry { key, count: 0, stats: Vec::new(), order: Vec::new() }
    }

    #[inline]
    fn add(&mut self, slot: usize, value: ValueKey) {
        if self.stats.len() <= slot {
            self.stats.resize(slot + 1, Stat::EMPTY);
        }
        let stat = &mut self.stats[slot];
        if stat.n == 0 {
            stat.acc = Acc::new(value);
            self.order.push(slot as u32);
        } else {
            stat.acc.add(value);
        }
        stat.n += 1;
    }
}

/// A thread's aggregation.
struct AggThread {
    key_names: Arc<[String]>,
    /// Entry index + 1 of the records keyed by exactly one node, by node id.
    by_node: Vec<u32>,
    /// Entries of records keyed by exactly two nodes, by the second node:
    /// the first node and entry index + 1 of the first such key seen. The
    /// first node is nearly always the same (the process context); keys
    /// with another one are in `by_other_pair`.
    by_pair: Vec<(Id, u32)>,
    by_other_pair: FxHashMap<(Id, Id), u32>,
    /// Entries of other keys.
    by_key: FxHashMap<Snapshot, u32>,
    entries: Vec<AggEntry>,
    /// Per attribute id: [`UNKNOWN`] not looked up, [`PLAIN`] not
    /// aggregated, [`KEY`] a key attribute, else [`METRIC`] + the metric's
    /// slot in the entries' statistics.
    kind: Vec<u32>,
    /// The attribute of each metric slot.
    metrics: Vec<Id>,
}

const UNKNOWN: u32 = 0;
const PLAIN: u32 = 1;
const KEY: u32 = 2;
const METRIC: u32 = 3;

impl Aggregate {
    pub fn new(cali: &Caliper, config: &RuntimeConfig) -> Aggregate {
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        Aggregate {
            key_names: config.get_list("CALI_AGGREGATE_KEY", false).into(),
            count: cali.create_attribute("count", AttrType::Uint, props | Properties::AGGREGATABLE, &[]),
            slot: cali.create_attribute("aggregate.slot", AttrType::Uint, props, &[]),
        }
    }

    /// The result attribute `<prefix>#<name>` of the same type as `attr`.
    fn result(&self, cali: &Caliper, prefix: &str, attr: Id, ty: AttrType) -> Option<Attribute> {
        let info = cali.attribute_info(attr)?;
        Some(cali.create_attribute(
            &format!("{prefix}#{}", info.name),
            ty,
            Properties::ASVALUE | Properties::SKIP_EVENTS,
            &[],
        ))
    }
}

impl AggThread {
    fn new(key_names: Arc<[String]>) -> AggThread {
        AggThread {
            key_names,
            by_node: Vec::new(),
            by_pair: Vec::new(),
            by_other_pair: FxHashMap::default(),
            by_key: FxHashMap::default(),
            entries: Vec::new(),
            kind: Vec::new(),
            metrics: Vec::new(),
        }
    }

    /// Drops the entries; attribute kinds and metric slots stay valid.
    fn clear(&mut self) {
        self.by_node.clear();
        self.by_pair.clear();
        self.by_other_pair.clear();
        self.by_key.clear();
        self.entries.clear();
    }

    #[inline]
    fn kind_of(&mut self, cali: &Caliper, attr: Id) -> u32 {
        match self.kind.get(attr as usize) {
            Some(&k) if k != UNKNOWN => k,
            _ => self.look_up_kind(cali, attr),
        }
    }

    #[cold]
    fn look_up_kind(&mut self, cali: &Caliper, attr: Id) -> u32 {
        let i = attr as usize;
        if self.kind.len() <= i {
            self.kind.resize(i + 1, UNKNOWN);
        }
        if self.kind[i] == UNKNOWN {
            self.kind[i] = match cali.attribute_info(attr) {
                Some(info) if info.attr.properties().is_aggregatable() => {
                    self.metrics.push(attr);
                    METRIC + self.metrics.len() as u32 - 1
                }
                Some(info) if self.key_names.iter().any(|k| k.as_str() == &*info.name) => {
                    if info.attr.is_asvalue() {
                        KEY
                    } else {
                        log::error(&format!(
                            "Reference attributes are no longer supported in CALI_AGGREGATE_KEY, ignoring {}",
                            info.name
                        ));
                        PLAIN
                    }
                }
                _ => PLAIN,
            };
        }
        self.kind[i]
    }

    /// The entry of a new key.
    fn push_entry(&mut self, key: Snapshot) -> u32 {
        self.entries.push(AggEntry::new(key));
        self.entries.len() as u32 - 1
    }

    /// The entry of a key of nodes only.
    fn push_node_entry(&mut self, nodes: &[Id]) -> u32 {
        self.push_entry(node_key(nodes))
    }

    /// The index of the snapshot's entry, created if new.
    #[inline]
    fn entry(&mut self, cali: &Caliper, snapshot: &Snapshot) -> usize {
        let has_key_values =
            !self.key_names.is_empty() && snapshot.values().iter().any(|&(a, _)| self.kind_of(cali, a) == KEY);
        if !has_key_values {
            match *snapshot.nodes() {
                [node] => {
                    let i = node as usize;
                    if self.by_node.len() <= i {
                        self.by_node.resize(i + 1, 0);
                    }
                    if self.by_node[i] == 0 {
                        self.by_node[i] = self.push_node_entry(&[node]) + 1;
                    }
                    return self.by_node[i] as usize - 1;
                }
                [a, b] => return self.pair_entry(a, b),
                _ => {}
            }
        }
        self.key_entry(cali, snapshot)
    }

    #[inline]
    fn pair_entry(&mut self, a: Id, b: Id) -> usize {
        let i = b as usize;
        if self.by_pair.len() <= i {
            self.by_pair.resize(i + 1, (0, 0));
        }
        match self.by_pair[i] {
            (first, e) if e != 0 && first == a => e as usize - 1,
            (_, 0) => {
                let e = self.push_node_entry(&[a, b]);
                self.by_pair[i] = (a, e + 1);
                e as usize
            }
            _ => self.other_pair_entry(a, b),
        }
    }

    #[cold]
    fn other_pair_entry(&mut self, a: Id, b: Id) -> usize {
        if let Some(&e) = self.by_other_pair.get(&(a, b)) {
            return e as usize;
        }
        let e = self.push_node_entry(&[a, b]);
        self.by_other_pair.insert((a, b), e);
        e as usize
    }

    /// The entry of a key of the snapshot's nodes and key values (sorted by
    /// attribute).
    fn key_entry(&mut self, cali: &Caliper, snapshot: &Snapshot) -> usize {
        let mut values: Vec<(Id, ValueKey)> =
            snapshot.values().iter().copied().filter(|&(a, _)| self.kind_of(cali, a) == KEY).collect();
        values.sort_by_key(|&(a, _)| a);
        let mut key = node_key(snapshot.nodes());
        for (a, v) in values {
            key.push_value(a, v);
        }
        if let Some(&i) = self.by_key.get(&key) {
            return i as usize;
        }
        let i = self.push_entry(key.clone());
        self.by_key.insert(key, i);
        i as usize
    }
}

/// A key of these nodes.
fn node_key(nodes: &[Id]) -> Snapshot {
    let mut key = Snapshot::default();
    for &n in nodes {
        key.push_node(n);
    }
    key
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

    fn flush(&self, cali: &Caliper, states: &mut [&mut ServiceState], emit: &mut dyn FnMut(&Record)) {
        let mut flushed = 0;
        let mut record = Record::ctx();
        for state in states.iter_mut() {
            let Some(t) = state_mut::<AggThread>(state) else { continue };
            for (slot, entry) in t.entries.iter().enumerate() {
                entry.key.to_record(&mut record);
                for &metric in &entry.order {
                    let s = &entry.stats[metric as usize];
                    let (min, max, sum) = s.acc.variants();
                    let ty = sum.attr_type();
                    let avg = sum.div(s.n);
                    for (prefix, value) in [("min", min), ("max", max), ("sum", sum), ("avg", avg)] {
                        if let Some(a) = self.result(cali, prefix, t.metrics[metric as usize], ty) {
                            record.push_imm(a.id(), value);
                        }
                    }
                }
                record.push_imm(self.count.id(), Variant::Uint(entry.count));
                record.push_imm(self.slot.id(), Variant::Uint(slot as u64));
                emit(&record);
                flushed += 1;
            }
        }
        log::info(&format!("Aggregate: flushed {flushed} snapshots."));
    }

    fn clear(&self, states: &mut [&mut ServiceState]) {
        for state in states.iter_mut() {
            if let Some(t) = state_mut::<AggThread>(state) {
                t.clear();
            }
        }
    }
}

impl ThreadService for AggThread {
    fn process(&mut self, cali: &Caliper, snapshot: &Snapshot) {
        let e = self.entry(cali, snapshot);
        for &(attr, value) in snapshot.values() {
            let kind = self.kind_of(cali, attr);
            if kind >= METRIC {
                self.entries[e].add((kind - METRIC) as usize, value);
            }
        }
        self.entries[e].count += 1;
    }
}
