//! `aggregate`: aggregates snapshots in place, per thread, keyed by their
//! context-tree nodes (plus the values of `CALI_AGGREGATE_KEY` attributes).
//!
//! For every aggregatable attribute (`time.duration.ns`, `region.count`,
//! ...) each entry keeps min, max, sum and count; the flush emits per entry
//! the key, `min#X`, `max#X`, `sum#X`, `avg#X`, `count` and
//! `aggregate.slot` (the entry's creation order in its thread).

use crate::attributes::Attribute;
use crate::channel::{Service, ServiceState};
use crate::config::RuntimeConfig;
use crate::log;
use crate::runtime::Caliper;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, Variant};

pub struct Aggregate {
    key_names: Vec<String>,
    count: Attribute,
    slot: Attribute,
}

/// The running statistics of one attribute in one entry, native for the
/// common unsigned metrics (times, counts).
#[derive(Clone, Debug)]
struct Stat {
    attr: Id,
    acc: Acc,
    n: u64,
}

#[derive(Clone, Debug)]
enum Acc {
    Uint { min: u64, max: u64, sum: u64 },
    Other { min: Variant, max: Variant, sum: Variant },
}

impl Acc {
    fn new(value: &Variant) -> Acc {
        match *value {
            Variant::Uint(u) => Acc::Uint { min: u, max: u, sum: u },
            ref v => Acc::Other { min: v.clone(), max: v.clone(), sum: v.clone() },
        }
    }

    #[inline]
    fn add(&mut self, value: &Variant) {
        match (self, value) {
            (Acc::Uint { min, max, sum }, Variant::Uint(u)) => {
                *min = (*min).min(*u);
                *max = (*max).max(*u);
                *sum = sum.wrapping_add(*u);
            }
            (acc, v) => {
                let (mut min, mut max, mut sum) = acc.variants();
                sum.add_assign(v);
                min = min.min_with(v);
                max = max.max_with(v);
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
    key: Vec<Entry>,
    count: u64,
    stats: Vec<Stat>,
}

#[derive(Default)]
struct AggThread {
    /// Entry index + 1 of the records keyed by exactly one node, by node id.
    by_node: Vec<u32>,
    /// Entries of records keyed by exactly two nodes, by the second node:
    /// (first node, entry index). The first node is nearly always the same
    /// (the process context), so the lists are short.
    by_pair: Vec<Vec<(Id, u32)>>,
    /// Entries of other keys.
    by_key: FxHashMap<Vec<Entry>, u32>,
    entries: Vec<AggEntry>,
    /// Per attribute id: 0 not looked up, 1 not aggregated, 2 aggregated,
    /// 3 a key attribute.
    kind: Vec<u8>,
}

const UNKNOWN: u8 = 0;
const PLAIN: u8 = 1;
const METRIC: u8 = 2;
const KEY: u8 = 3;

impl Aggregate {
    pub fn new(cali: &Caliper, config: &RuntimeConfig) -> Aggregate {
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        Aggregate {
            key_names: config.get_list("CALI_AGGREGATE_KEY", false),
            count: cali.create_attribute("count", AttrType::Uint, props | Properties::AGGREGATABLE, &[]),
            slot: cali.create_attribute("aggregate.slot", AttrType::Uint, props, &[]),
        }
    }

    #[inline]
    fn kind_of(&self, cali: &Caliper, t: &mut AggThread, attr: Id) -> u8 {
        let i = attr as usize;
        if let Some(&k) = t.kind.get(i)
            && k != UNKNOWN
        {
            return k;
        }
        self.look_up_kind(cali, t, attr)
    }

    #[cold]
    fn look_up_kind(&self, cali: &Caliper, t: &mut AggThread, attr: Id) -> u8 {
        let i = attr as usize;
        if t.kind.len() <= i {
            t.kind.resize(i + 1, UNKNOWN);
        }
        if t.kind[i] == UNKNOWN {
            t.kind[i] = match cali.attribute_info(attr) {
                Some(info) if info.attr.properties().is_aggregatable() => METRIC,
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
        t.kind[i]
    }

    fn entry(&self, cali: &Caliper, t: &mut AggThread, snapshot: &Record) -> usize {
        let has_key_imms =
            !self.key_names.is_empty() && snapshot.immediates().any(|(a, _)| self.kind_of(cali, t, a) == KEY);
        if !has_key_imms {
            let mut refs = snapshot.refs();
            match (refs.next(), refs.next(), refs.next()) {
                (Some(node), None, _) => {
                    let i = node as usize;
                    if t.by_node.len() <= i {
                        t.by_node.resize(i + 1, 0);
                    }
                    if t.by_node[i] == 0 {
                        t.entries.push(AggEntry { key: vec![Entry::Reference(node)], count: 0, stats: Vec::new() });
                        t.by_node[i] = t.entries.len() as u32;
                    }
                    return t.by_node[i] as usize - 1;
                }
                (Some(a), Some(b), None) => {
                    let i = b as usize;
                    if t.by_pair.len() <= i {
                        t.by_pair.resize_with(i + 1, Vec::new);
                    }
                    if let Some(&(_, e)) = t.by_pair[i].iter().find(|(first, _)| *first == a) {
                        return e as usize;
                    }
                    t.entries.push(AggEntry {
                        key: vec![Entry::Reference(a), Entry::Reference(b)],
                        count: 0,
                        stats: Vec::new(),
                    });
                    let e = t.entries.len() as u32 - 1;
                    t.by_pair[i].push((a, e));
                    return e as usize;
                }
                _ => {}
            }
        }
        let mut key: Vec<Entry> = snapshot.refs().map(Entry::Reference).collect();
        let mut imms: Vec<Entry> = snapshot
            .immediates()
            .filter(|(a, _)| self.kind_of(cali, t, *a) == KEY)
            .map(|(a, v)| Entry::Immediate(a, v.clone()))
            .collect();
        imms.sort_by_key(Entry::node);
        key.extend(imms);
        if let Some(&i) = t.by_key.get(&key) {
            return i as usize;
        }
        t.entries.push(AggEntry { key: key.clone(), count: 0, stats: Vec::new() });
        let i = t.entries.len() - 1;
        t.by_key.insert(key, i as u32);
        i
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

impl Service for Aggregate {
    fn name(&self) -> &'static str {
        "aggregate"
    }

    fn processes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(AggThread::default())
    }

    fn process(&self, cali: &Caliper, state: &mut ServiceState, snapshot: &Record) {
        let Some(t) = state.downcast_mut::<AggThread>() else { return };
        let e = self.entry(cali, t, snapshot);
        for (attr, value) in snapshot.immediates() {
            if self.kind_of(cali, t, attr) != METRIC {
                continue;
            }
            let entry = &mut t.entries[e];
            match entry.stats.iter_mut().find(|s| s.attr == attr) {
                Some(s) => {
                    s.acc.add(value);
                    s.n += 1;
                }
                None => entry.stats.push(Stat { attr, acc: Acc::new(value), n: 1 }),
            }
        }
        t.entries[e].count += 1;
    }

    fn flush(&self, cali: &Caliper, states: &mut [&mut ServiceState], emit: &mut dyn FnMut(&Record)) {
        let mut flushed = 0;
        let mut record = Record::ctx();
        for state in states.iter_mut() {
            let Some(t) = state.downcast_mut::<AggThread>() else { continue };
            for (slot, entry) in t.entries.iter().enumerate() {
                record.clear();
                record.entries.extend(entry.key.iter().cloned());
                for s in &entry.stats {
                    let (min, max, sum) = s.acc.variants();
                    let ty = sum.attr_type();
                    let avg = sum.div(s.n);
                    for (prefix, value) in [("min", min), ("max", max), ("sum", sum), ("avg", avg)] {
                        if let Some(a) = self.result(cali, prefix, s.attr, ty) {
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
            if let Some(t) = state.downcast_mut::<AggThread>() {
                let kind = std::mem::take(&mut t.kind);
                *t = AggThread { kind, ..AggThread::default() };
            }
        }
    }
}
