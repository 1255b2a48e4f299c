//! The aggregation table: one thread's snapshots of a channel, aggregated
//! in place, keyed by their context-tree nodes (plus the values of key
//! attributes). It is the `aggregate` service's per-thread part, which the
//! channel keeps inline in its fast path; the service (`services::aggregate`)
//! sets it up, flushes its entries as records and clears it.
//!
//! For every aggregatable attribute (`time.duration.ns`, `region.count`,
//! ...) each entry keeps min, max, sum and count.

mod key;
mod orders;

use crate::log;
use crate::service::{Runtime, ThreadService};
use crate::snapshot::{RegionAttributes, RegionSnapshot, Snapshot, Time};
use crate::sparse::{PAGE, Sparse};
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Record, Variant};
use key::{Key, Kind};
use orders::Orders;
use std::sync::Arc;

/// A metric's statistics in one entry, as a flush hands them out.
pub struct MetricStatistics {
    /// The metric's attribute.
    pub attr: Id,
    /// The type of the values (that of the sum).
    pub ty: AttrType,
    /// min, max, sum and average.
    pub values: [Variant; 4],
}

/// The running statistics of one attribute in one entry: plain unsigned
/// min, max and sum, as times and counts are, so that adding a value is a
/// few instructions without a look at an enum. `n` counts the values (0:
/// none yet). A slot that has seen a value of another type keeps its
/// statistics as variants in the thread's `others` table (see [`Extras`]):
/// `n` then has [`OTHER`] set and `sum` is the index there.
#[derive(Copy, Clone, Debug)]
struct Stat {
    min: u64,
    max: u64,
    sum: u64,
    n: u64,
}

/// The flag of a [`Stat`] kept as variants.
const OTHER: u64 = 1 << 63;

impl Stat {
    const EMPTY: Stat = Stat { min: 0, max: 0, sum: 0, n: 0 };

    /// The number of values.
    fn count(&self) -> u64 {
        self.n & !OTHER
    }

    /// Whether the statistic has values, all unsigned integers: the
    /// statistics [`Stat::add_plain`] keeps.
    #[inline(always)]
    fn plain(&self) -> bool {
        self.n as i64 > 0
    }

    /// Adds an unsigned value to a [`plain`](Stat::plain) statistic.
    #[inline(always)]
    fn add_plain(&mut self, u: u64) {
        self.min = self.min.min(u);
        self.max = self.max.max(u);
        self.sum = self.sum.wrapping_add(u);
        self.n += 1;
    }
}

/// Adds `v` to min, max and sum kept as variants.
fn add_variant(stats: &mut [Variant; 3], v: &Variant) {
    let [min, max, sum] = stats;
    sum.add_assign(v);
    *min = min.min_with(v);
    *max = max.max_with(v);
}

/// An entry's row of statistics, with what adding a first value or a
/// value other than an unsigned integer needs besides (out of line).
struct Row<'a> {
    /// The table from the row on: slot `i` is at `i` (and every metric
    /// slot is within the row).
    stats: &'a mut [Stat],
    /// The entry's number of snapshots.
    n: &'a mut u64,
    e: usize,
    extras: &'a mut Extras,
}

impl<'a> Row<'a> {
    /// The row of entry `e` in `stats`, rows of `stride` statistics.
    #[inline(always)]
    fn of(
        stats: &'a mut [Stat],
        stride: usize,
        heads: &'a mut [Head],
        extras: &'a mut Extras,
        e: usize,
    ) -> Option<Row<'a>> {
        Some(Row { stats: stats.get_mut(e * stride..)?, n: &mut heads.get_mut(e)?.n, e, extras })
    }

    /// Adds `value` to the statistic of metric slot `slot` (none for a
    /// slot past the table, such as [`NO_SLOT`]).
    #[inline(always)]
    fn add(&mut self, slot: usize, value: ValueKey) {
        let Some(stat) = self.stats.get_mut(slot) else { return };
        match value.as_uint() {
            // A positive count: values so far, all unsigned.
            Some(u) if stat.plain() => stat.add_plain(u),
            _ => add_other(self.stats, slot, value, self.e, self.extras),
        }
    }

    /// Counts a snapshot of the entry.
    #[inline(always)]
    fn count(&mut self) {
        *self.n += 1;
    }
}

/// [`Row::add`] of the first value of a statistic (of entry `e`, whose
/// order of metrics it joins), or of a value that is not an unsigned
/// integer. Takes the row's parts apart, so that the hot path passes them
/// in registers instead of building the row in memory.
#[cold]
fn add_other(stats: &mut [Stat], slot: usize, value: ValueKey, e: usize, extras: &mut Extras) {
    let Extras { order_of, orders, others } = extras;
    let Some(&Stat { min, max, sum, n }) = stats.get(slot) else { return };
    let v = value.to_variant();
    stats[slot] = match (n, value.as_uint()) {
        (0, Some(u)) => Stat { min: u, max: u, sum: u, n: 1 },
        (0, None) => {
            others.push([v.clone(), v.clone(), v]);
            Stat { min: 0, max: 0, sum: others.len() as u64 - 1, n: 1 | OTHER }
        }
        _ if n & OTHER != 0 => {
            add_variant(&mut others[sum as usize], &v);
            Stat { min, max, sum, n: n + 1 }
        }
        // Unsigned so far: continue as variants.
        _ => {
            let mut stats = [Variant::Uint(min), Variant::Uint(max), Variant::Uint(sum)];
            add_variant(&mut stats, &v);
            others.push(stats);
            Stat { min: 0, max: 0, sum: others.len() as u64 - 1, n: (n + 1) | OTHER }
        }
    };
    if let (0, Some(order)) = (n, order_of.get_mut(e)) {
        *order = orders.then(*order, slot as u32);
    }
}

/// What the statistics of a thread's entries need besides the plain table,
/// apart from it so that a row reaches it through one pointer (only when a
/// statistic gets its first value or a value other than an unsigned
/// integer).
#[derive(Default)]
struct Extras {
    /// Per entry: the order of its flushed statistics (the metric slots in
    /// the order the entry first saw them), in `orders`.
    order_of: Vec<u32>,
    orders: Orders,
    /// min, max and sum of the statistics that have seen values other than
    /// unsigned integers.
    others: Vec<[Variant; 3]>,
}

/// A thread's aggregation.
pub struct AggThread {
    key_names: Arc<[String]>,
    /// Entry index + 1 of the records keyed by exactly one node, by node id.
    by_node: Sparse<u32>,
    /// Entries of records keyed by exactly two nodes, by the second node:
    /// the first such key seen. The first node is nearly always the same
    /// (the process context); keys with another one are in
    /// `by_other_pair`.
    by_pair: Sparse<PairEntry>,
    by_other_pair: FxHashMap<(Id, Id), u32>,
    /// Entries keyed by three nodes (a thread's unaligned node such as
    /// `pthread.id`'s, a process context node, and an event node).
    by_triple: FxHashMap<(Id, Id, Id), u32>,
    /// Entries of other keys, and those keys (the `Key`s of their entries
    /// point into `long_keys`).
    by_key: FxHashMap<Snapshot, u32>,
    long_keys: Vec<Snapshot>,
    /// The entry of the empty key (which is in `by_key`), once known.
    empty: Option<u32>,
    /// A key being looked up, kept for reuse: a key is allocated only
    /// when it is new.
    scratch_key: Snapshot,
    /// Per entry: its key and its number of snapshots.
    heads: Vec<Head>,
    /// Per entry, a row of `stride` statistics, one per metric slot. One
    /// flat table, so that an update finds its statistics without a
    /// pointer chase, and a snapshot touches one contiguous row.
    stats: Vec<Stat>,
    stride: usize,
    extras: Extras,
    /// The metric slots of `region.count`, `time.offset.ns` and
    /// `time.duration.ns` in the channel's region snapshots, resolved once
    /// (see [`ThreadService::region_attributes`]); [`NO_SLOT`] for one that
    /// is not a metric. A plain index, not an `Option`: the bounds check of
    /// the row lookup also skips an absent metric, and the slots stay in
    /// registers.
    region_slots: [usize; 3],
    /// The region snapshots' other measurements that are metrics (see
    /// [`RegionAttributes::measured`]): (index among them, metric slot).
    measured_slots: Box<[(usize, usize)]>,
    /// Per attribute id: [`UNKNOWN`] not looked up, [`PLAIN`] not
    /// aggregated, [`KEY`] a key attribute, else [`METRIC`] + the metric's
    /// slot in the entries' statistics.
    kind: Sparse<u32>,
    /// The attribute of each metric slot.
    metrics: Vec<Id>,
    /// The version of the process's values (see
    /// [`RegionSnapshot::values_version`]) last found to hold no key or
    /// metric: an MPI rank's `mpi.rank` is checked once, not per snapshot.
    plain_values: u64,
    /// How many times the entries were cleared: an entry index found
    /// before a clear is not one after it.
    generation: u64,
}

/// The entry of a key of two nodes by its second node (see
/// `AggThread::by_pair`): its first node, beside the entry so that a lookup
/// checks it without reading the entry's key.
#[derive(Copy, Clone)]
struct PairEntry {
    first: u32,
    /// Entry index + 1; 0: none.
    entry: u32,
}

/// An entry's key and its number of snapshots: what every entry has
/// besides its statistics, sixteen bytes.
#[derive(Copy, Clone)]
struct Head {
    key: Key,
    n: u64,
}

const UNKNOWN: u32 = 0;
const PLAIN: u32 = 1;
const KEY: u32 = 2;
const METRIC: u32 = 3;

/// Empty pages of the tables by node and attribute id (see [`Sparse`]):
/// no entry, and [`UNKNOWN`] kinds.
static NO_ENTRIES: [u32; PAGE] = [0; PAGE];
static NO_PAIRS: [PairEntry; PAGE] = [PairEntry { first: 0, entry: 0 }; PAGE];

/// The slot of a value that is not a metric: past the end of any row.
const NO_SLOT: usize = usize::MAX;

/// No version of the process's values (they count from 1).
const NO_VERSION: u64 = 0;

impl AggThread {
    /// A new thread's aggregation, keyed also by the values of the
    /// attributes `key_names`.
    pub fn new(key_names: Arc<[String]>) -> AggThread {
        AggThread {
            key_names,
            by_node: Sparse::new(&NO_ENTRIES),
            by_pair: Sparse::new(&NO_PAIRS),
            by_other_pair: FxHashMap::default(),
            by_triple: FxHashMap::default(),
            by_key: FxHashMap::default(),
            empty: None,
            long_keys: Vec::new(),
            scratch_key: Snapshot::default(),
            heads: Vec::new(),
            stats: Vec::new(),
            stride: 0,
            extras: Extras::default(),
            region_slots: [NO_SLOT; 3],
            measured_slots: Box::default(),
            kind: Sparse::new(&NO_ENTRIES),
            metrics: Vec::new(),
            plain_values: NO_VERSION,
            generation: 0,
        }
    }

    /// Hands each entry, in creation order, to `emit` as a record: its key,
    /// then, for each metric in the order the entry met them, what
    /// `metric` adds for its statistics; then what `done` adds for the
    /// entry's number of snapshots and its index. Returns the number of
    /// entries.
    pub fn flush(
        &self,
        metric: &mut dyn FnMut(&mut Record, &MetricStatistics),
        done: &mut dyn FnMut(&mut Record, u64, usize),
        emit: &mut dyn FnMut(&Record),
    ) -> usize {
        let mut record = Record::ctx();
        for (slot, head) in self.heads.iter().enumerate() {
            head.key.to_record(&self.long_keys, &mut record);
            for &m in self.extras.orders.slots(self.extras.order_of[slot]) {
                let s = &self.stats[slot * self.stride + m as usize];
                let [min, max, sum] = self.variants(s);
                let avg = sum.div(s.count());
                let ty = sum.attr_type();
                metric(
                    &mut record,
                    &MetricStatistics { attr: self.metrics[m as usize], ty, values: [min, max, sum, avg] },
                );
            }
            done(&mut record, head.n, slot);
            emit(&record);
        }
        self.heads.len()
    }

    /// Drops the entries; attribute kinds and metric slots stay valid.
    pub fn clear(&mut self) {
        self.generation += 1;
        self.by_node.clear();
        self.by_pair.clear();
        self.by_other_pair.clear();
        self.by_triple.clear();
        self.by_key.clear();
        self.empty = None;
        self.long_keys.clear();
        self.heads.clear();
        self.extras.order_of.clear();
        self.stats.clear();
        self.extras.others.clear();
    }

    /// The number of clears so far: entry indices stay valid as long as
    /// it does not change.
    #[inline(always)]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    #[inline(always)]
    fn kind_of(&mut self, cali: &dyn Runtime, attr: Id) -> u32 {
        match self.kind.get(attr as usize) {
            Some(&k) if k != UNKNOWN => k,
            _ => self.look_up_kind(cali, attr),
        }
    }

    #[cold]
    fn look_up_kind(&mut self, cali: &dyn Runtime, attr: Id) -> u32 {
        let i = attr as usize;
        if *self.kind.get_mut(i) == UNKNOWN {
            *self.kind.get_mut(i) = match cali.attribute_info(attr) {
                Some(info) if info.attr.properties().is_aggregatable() => {
                    self.metrics.push(attr);
                    self.widen();
                    // Its slot in the rows.
                    METRIC + self.metrics.len() as u32 - 1
                }
                Some(info) if self.key_names.iter().any(|k| k.as_str() == &*info.name) => {
                    if info.attr.is_asvalue() {
                        KEY
                    } else {
                        log::error(format_args!(
                            "Reference attributes are no longer supported in CALI_AGGREGATE_KEY, ignoring {}",
                            info.name
                        ));
                        PLAIN
                    }
                }
                _ => PLAIN,
            };
        }
        *self.kind.get_mut(i)
    }

    /// Makes room in every entry for a new metric slot.
    fn widen(&mut self) {
        let (old, stride) = (self.stride, self.metrics.len());
        let mut stats = Vec::with_capacity(self.heads.len() * stride);
        for e in 0..self.heads.len() {
            stats.extend_from_slice(self.stats.get(e * old..(e + 1) * old).unwrap_or_default());
            stats.resize((e + 1) * stride, Stat::EMPTY);
        }
        self.stats = stats;
        self.stride = stride;
    }

    /// The entry of a new key.
    fn push_entry(&mut self, key: Key) -> u32 {
        self.heads.push(Head { key, n: 0 });
        self.extras.order_of.push(Orders::EMPTY);
        self.stats.resize(self.heads.len() * self.stride, Stat::EMPTY);
        self.heads.len() as u32 - 1
    }

    /// The entry of a key of nodes only, given as one or two nodes (whose
    /// ids fit [`Key`]) or else as a snapshot.
    fn push_node_entry(&mut self, key: Option<Key>, nodes: &[Id]) -> u32 {
        match key {
            Some(key) => self.push_entry(key),
            None => self.push_long_entry(node_key(nodes)),
        }
    }

    /// The entry of a key kept in `long_keys`.
    fn push_long_entry(&mut self, key: Snapshot) -> u32 {
        // Entries (so long keys too) are counted in 32 bits.
        let long = Key::long(self.long_keys.len() as u32);
        self.long_keys.push(key);
        self.push_entry(long)
    }

    /// The row of entry `e`, to add to.
    #[inline(always)]
    fn row(&mut self, e: usize) -> Option<Row<'_>> {
        Row::of(&mut self.stats, self.stride, &mut self.heads, &mut self.extras, e)
    }

    /// min, max and sum of a statistic.
    fn variants(&self, stat: &Stat) -> [Variant; 3] {
        if stat.n & OTHER != 0 {
            return self.extras.others[stat.sum as usize].clone();
        }
        [Variant::Uint(stat.min), Variant::Uint(stat.max), Variant::Uint(stat.sum)]
    }

    /// Adds an attribute's value to entry `e`, if it is a metric.
    #[inline(always)]
    fn add_value(&mut self, cali: &dyn Runtime, e: usize, attr: Id, value: ValueKey) {
        let kind = self.kind_of(cali, attr);
        if kind >= METRIC
            && let Some(mut row) = self.row(e)
        {
            row.add((kind - METRIC) as usize, value);
        }
    }

    /// The index of the snapshot's entry, created if new.
    #[inline]
    fn entry(&mut self, cali: &dyn Runtime, snapshot: &Snapshot) -> usize {
        let has_key_values =
            !self.key_names.is_empty() && snapshot.values().iter().any(|&(a, _)| self.kind_of(cali, a) == KEY);
        if !has_key_values {
            match *snapshot.nodes() {
                [node] => return self.node_entry(node),
                [a, b] => return self.pair_entry(a, b),
                [a, b, c] => return self.triple_entry(a, b, c),
                _ => {}
            }
        }
        self.key_entry(cali, snapshot)
    }

    #[inline(always)]
    fn node_entry(&mut self, node: Id) -> usize {
        match self.by_node.get(node as usize) {
            Some(&e) if e != 0 => e as usize - 1,
            _ => self.new_node_entry(node),
        }
    }

    #[cold]
    fn new_node_entry(&mut self, node: Id) -> usize {
        let e = self.push_node_entry(Key::one(node), &[node]);
        *self.by_node.get_mut(node as usize) = e + 1;
        e as usize
    }

    #[inline(always)]
    fn pair_entry(&mut self, a: Id, b: Id) -> usize {
        match self.by_pair.get(b as usize) {
            Some(p) if p.entry != 0 && Id::from(p.first) == a => p.entry as usize - 1,
            _ => self.new_pair_entry(a, b),
        }
    }

    #[cold]
    fn new_pair_entry(&mut self, a: Id, b: Id) -> usize {
        match (self.by_pair.get_mut(b as usize).entry, Key::pair(a, b), u32::try_from(a)) {
            (0, Some(key), Ok(first)) => {
                let e = self.push_entry(key);
                *self.by_pair.get_mut(b as usize) = PairEntry { first, entry: e + 1 };
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
        let e = self.push_node_entry(Key::pair(a, b), &[a, b]);
        self.by_other_pair.insert((a, b), e);
        e as usize
    }

    /// The entry of a key of three nodes (kept as a long key).
    fn triple_entry(&mut self, a: Id, b: Id, c: Id) -> usize {
        if let Some(&e) = self.by_triple.get(&(a, b, c)) {
            return e as usize;
        }
        let e = self.push_long_entry(node_key(&[a, b, c]));
        self.by_triple.insert((a, b, c), e);
        e as usize
    }

    /// Whether region snapshots carrying the process values `values` (of
    /// version `version`, see [`RegionSnapshot::values_version`]) are keyed
    /// by their nodes alone: the channel aggregates by no key attribute,
    /// and the values are neither keys nor metrics (which the generic way
    /// handles).
    #[inline(always)]
    pub fn keys_regions_by_nodes(&mut self, cali: &dyn Runtime, values: &[(Id, ValueKey)], version: u64) -> bool {
        self.key_names.is_empty()
            && (values.is_empty() || version == self.plain_values || self.plain(cali, values, version))
    }

    /// Whether process values are all neither keys nor metrics; remembered
    /// for their version if so.
    #[cold]
    #[inline(never)]
    fn plain(&mut self, cali: &dyn Runtime, values: &[(Id, ValueKey)], version: u64) -> bool {
        let plain = values.iter().all(|&(a, _)| self.kind_of(cali, a) == PLAIN);
        if plain {
            self.plain_values = version;
        }
        plain
    }

    /// The entry of a region snapshot keyed by its nodes (see
    /// [`AggThread::keys_regions_by_nodes`]): the process context's nodes
    /// `context`, then its event node (`None`: a channel without snapshot
    /// info, whose snapshot of a begin on an empty stack has no node);
    /// `None` for a context of more than two nodes.
    #[inline(always)]
    pub fn region_entry(&mut self, context: &[Id], event: Option<Id>) -> Option<usize> {
        Some(match (context, event) {
            ([], Some(event)) => self.node_entry(event),
            (&[first], Some(event)) => self.pair_entry(first, event),
            (&[first, second], Some(event)) => self.triple_entry(first, second, event),
            ([], None) => self.empty_entry(),
            (&[first], None) => self.node_entry(first),
            (&[first, second], None) => self.pair_entry(first, second),
            _ => return None,
        })
    }

    /// Adds a region snapshot to entry `e`: a region count if `count` (an
    /// end), the timer's readings and the other measurements.
    #[inline(always)]
    pub fn add_region(&mut self, e: usize, count: bool, time: Option<Time>, measured: &[u64]) {
        let [count_slot, offset, duration] = self.region_slots;
        let Some(mut row) = Row::of(&mut self.stats, self.stride, &mut self.heads, &mut self.extras, e) else { return };
        if count {
            row.add(count_slot, ValueKey::uint(1));
        }
        if let Some(t) = time {
            row.add(offset, ValueKey::uint(t.offset));
            row.add(duration, ValueKey::uint(t.duration));
        }
        for &(i, slot) in self.measured_slots.iter() {
            if let Some(&value) = measured.get(i) {
                row.add(slot, ValueKey::uint(value));
            }
        }
        row.count();
    }

    /// [`ThreadService::process_region`] of a snapshot whose key is not one
    /// to three nodes, as any snapshot. Out of line, and given the snapshot by
    /// value, so that the common case keeps its parts in registers.
    #[cold]
    #[inline(never)]
    fn process_other_region(&mut self, cali: &dyn Runtime, region: RegionSnapshot<'_>, scratch: &mut Snapshot) {
        region.write_to(scratch);
        self.process(cali, scratch);
    }

    /// Adds the entries of `from` (an exited thread's) to this one's: the
    /// same key is the same entry, and its statistics combine as if this
    /// thread had seen `from`'s values too.
    pub fn absorb(&mut self, cali: &dyn Runtime, from: &AggThread) {
        for (e, head) in from.heads.iter().enumerate() {
            let into = match head.key.kind() {
                Kind::One(node) => self.node_entry(node),
                Kind::Pair(a, b) => self.pair_entry(a, b),
                Kind::Long(i) => match from.long_keys.get(i) {
                    Some(key) => self.entry(cali, key),
                    None => continue,
                },
            };
            self.heads[into].n += head.n;
            for &metric in from.extras.orders.slots(from.extras.order_of[e]) {
                let kind = self.kind_of(cali, from.metrics[metric as usize]);
                let (stat, slot) = (from.stats[e * from.stride + metric as usize], (kind - METRIC) as usize);
                let old = self.stats[into * self.stride + slot];
                self.stats[into * self.stride + slot] = match old.n {
                    0 if stat.plain() => stat,
                    _ if old.plain() && stat.plain() => Stat {
                        min: old.min.min(stat.min),
                        max: old.max.max(stat.max),
                        sum: old.sum.wrapping_add(stat.sum),
                        n: old.n + stat.n,
                    },
                    _ => self.absorb_other(old, from.variants(&stat), stat.count()),
                };
                if old.n == 0 {
                    let order = &mut self.extras.order_of[into];
                    *order = self.extras.orders.then(*order, slot as u32);
                }
            }
        }
    }

    /// A statistic `old` of this thread combined with another thread's
    /// min, max and sum of `n` values when either is not plain.
    fn absorb_other(&mut self, old: Stat, [min, max, sum]: [Variant; 3], n: u64) -> Stat {
        let stats = if old.n == 0 {
            [min, max, sum]
        } else {
            let [old_min, old_max, mut old_sum] = self.variants(&old);
            old_sum.add_assign(&sum);
            [old_min.min_with(&min), old_max.max_with(&max), old_sum]
        };
        let others = &mut self.extras.others;
        let index = if old.n & OTHER != 0 {
            others[old.sum as usize] = stats;
            old.sum
        } else {
            others.push(stats);
            others.len() as u64 - 1
        };
        Stat { min: 0, max: 0, sum: index, n: (old.count() + n) | OTHER }
    }

    /// The entry of a key of the snapshot's nodes and key values (sorted by
    /// attribute).
    fn key_entry(&mut self, cali: &dyn Runtime, snapshot: &Snapshot) -> usize {
        let mut key = std::mem::take(&mut self.scratch_key);
        key.clear();
        for &n in snapshot.nodes() {
            key.push_node(n);
        }
        if !self.key_names.is_empty() {
            for &(a, v) in snapshot.values() {
                if self.kind_of(cali, a) == KEY {
                    key.push_value(a, v);
                }
            }
            key.sort_values_by_attribute();
        }
        let i = self.long_entry(&key);
        self.scratch_key = key;
        i as usize
    }

    /// The entry of a key that is not one to three nodes.
    fn long_entry(&mut self, key: &Snapshot) -> u32 {
        match self.by_key.get(key) {
            Some(&i) => i,
            None => {
                let i = self.push_long_entry(key.clone());
                self.by_key.insert(key.clone(), i);
                i
            }
        }
    }

    /// The entry of the empty key: the snapshots of regions begun on an
    /// empty stack in a channel without snapshot info, and no other
    /// context. Remembered, as a program's outermost region begins there
    /// on every iteration of its outermost loop.
    #[inline]
    fn empty_entry(&mut self) -> usize {
        match self.empty {
            Some(e) => e as usize,
            None => {
                let e = self.long_entry(&Snapshot::default());
                self.empty = Some(e);
                e as usize
            }
        }
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

impl ThreadService for AggThread {
    fn process(&mut self, cali: &dyn Runtime, snapshot: &Snapshot) {
        let e = self.entry(cali, snapshot);
        for &(attr, value) in snapshot.values() {
            self.add_value(cali, e, attr, value);
        }
        if let Some(mut row) = self.row(e) {
            row.count();
        }
    }

    /// The key of a region snapshot is one to three nodes (a thread's
    /// unaligned node, the usual process context, then the event node)
    /// unless the channel aggregates by key attributes, and its values are
    /// known.
    #[inline(always)]
    fn process_region(&mut self, cali: &dyn Runtime, region: &RegionSnapshot<'_>, scratch: &mut Snapshot) {
        if !self.keys_regions_by_nodes(cali, region.values, region.values_version) {
            return self.process_other_region(cali, *region, scratch);
        }
        match self.region_entry(region.context, region.event) {
            Some(e) => self.add_region(e, region.count.is_some(), region.time, region.measured.values()),
            None => self.process_other_region(cali, *region, scratch),
        }
    }

    fn region_attributes(&mut self, cali: &dyn Runtime, attrs: &RegionAttributes) {
        let (offset, duration) = attrs.time.unzip();
        let slot = |this: &mut AggThread, attr: Option<Id>| {
            let kind = this.kind_of(cali, attr?);
            (kind >= METRIC).then(|| (kind - METRIC) as usize)
        };
        let [count, offset, duration] =
            [slot(self, Some(attrs.count)), slot(self, offset), slot(self, duration)].map(|s| s.unwrap_or(NO_SLOT));
        self.region_slots = [count, offset, duration];
        let measured = attrs.measured.iter().enumerate();
        self.measured_slots = measured.filter_map(|(i, &a)| Some((i, slot(self, Some(a))?))).collect();
    }
}
