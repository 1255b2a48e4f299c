//! Aggregation: GROUP BY and the kernels.
//!
//! Each record goes into the group of its key: the selected context-tree
//! nodes of its reference entries (region-like NESTED nodes rebuilt into one
//! path node, the others into a second node) plus the values of immediate
//! attributes named in GROUP BY. Kernels accept their own results as input
//! (`sum(x)` also adds `sum#x`, `avg` its hidden helpers), so per-thread,
//! per-process and cross-run aggregation compose. Inclusive kernels also
//! count each record in the groups of the ancestors of its path node.
//! Groups are emitted in creation order.

use crate::access::AttrRef;
use crate::spec::{AggregationOp, Kernel, QuerySpec, Selection};
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, MetadataDb, Properties, Record, Variant};
use std::fmt;

/// An aggregation that cannot be set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregateError(pub String);

impl fmt::Display for AggregateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AggregateError {}

/// Properties of result attributes.
const RESULT_PROPS: Properties = Properties::from_bits(
    Properties::ASVALUE.bits() | Properties::AGGREGATABLE.bits() | Properties::SKIP_EVENTS.bits(),
);
/// Properties of the hidden helper results that make re-aggregation exact.
const HELPER_PROPS: Properties = Properties::from_bits(RESULT_PROPS.bits() | Properties::HIDDEN.bits());

/// The aggregation key of a query.
#[derive(Clone, Debug)]
struct KeySpec {
    /// One group for everything.
    single_group: bool,
    /// Every context-tree attribute (GROUP BY not given, or `*`).
    all_tree: bool,
    /// The NESTED (region) hierarchy (`path`).
    path: bool,
    /// Attributes named in GROUP BY.
    names: Vec<AttrRef>,
    /// The ids of the named attributes the database has, and the database
    /// size they were looked up at.
    ids: Vec<Id>,
    ids_at: u64,
}

impl KeySpec {
    /// The ids of the GROUP BY attributes, looked up again only when the
    /// database has grown.
    fn named_ids(&mut self, db: &MetadataDb) -> &[Id] {
        if self.ids_at != db.id_bound() {
            self.ids = self.names.iter_mut().filter_map(|n| n.get(db)).collect();
            self.ids_at = db.id_bound();
        }
        &self.ids
    }
}

/// A group's key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct GroupKey {
    /// The rebuilt node of the selected NESTED nodes.
    path: Option<Id>,
    /// The rebuilt node of the other selected tree nodes.
    other: Option<Id>,
    /// (attribute, value) of the immediate key attributes, by attribute id.
    immediates: Vec<(Id, Variant)>,
}

/// The key part of one reference entry: its selected nodes rebuilt as
/// chains under the root (the NESTED ones, and the others). The chains
/// themselves are the selected nodes, so a key takes constant memory
/// however deep the entry's node is.
#[derive(Clone, Copy, Debug, Default)]
struct NodeKey {
    path_node: Option<Id>,
    other_node: Option<Id>,
}

/// The running state of one kernel in one group.
#[derive(Clone, Debug)]
enum State {
    Count(u64),
    /// sum, min, max, any and their inclusive forms.
    Value(Variant),
    /// avg: sum and count.
    Mean(Variant, u64),
    /// scale, percent_total and their inclusive forms: a double sum.
    Sum(f64, bool),
    /// ratio: numerator and denominator sums.
    Ratio(f64, f64, bool),
    /// variance: count, sum, sum of squares.
    Moments(u64, f64, f64),
    Histogram(Vec<u64>),
}

/// One compiled aggregation op.
#[derive(Clone, Debug)]
struct Op {
    op: AggregationOp,
    /// The first and second target attributes.
    a: Option<AttrRef>,
    b: Option<AttrRef>,
    /// Results of an earlier aggregation this kernel merges: its own main
    /// result and its helpers.
    merged: Vec<AttrRef>,
    factor: f64,
    bins: usize,
    range: (f64, f64),
}

/// A group: its key and one state per op.
#[derive(Clone, Debug)]
struct Group {
    key: GroupKey,
    states: Vec<State>,
    /// With inclusive kernels, the group of the parent path (`Some(None)`
    /// for a root), once looked up.
    parent: Option<Option<usize>>,
}

/// The aggregation stage of a query.
#[derive(Clone, Debug)]
pub struct Aggregator {
    ops: Vec<Op>,
    key: KeySpec,
    groups: Vec<Group>,
    index: FxHashMap<GroupKey, usize>,
    node_keys: FxHashMap<Id, NodeKey>,
    /// The group of records whose only key part is one reference node.
    by_node: FxHashMap<Id, usize>,
    /// Whether any kernel is inclusive.
    inclusive: bool,
    /// Exclusive grand totals, for the percent-of-total kernels.
    totals: Vec<f64>,
    /// Alias and unit metadata for result attributes, from the query.
    aliases: Vec<(String, String)>,
    units: Vec<(String, String)>,
}

fn parse_number(op: &AggregationOp, index: usize, default: f64) -> Result<f64, AggregateError> {
    match op.args.get(index) {
        None => Ok(default),
        Some(text) => text.parse().map_err(|_| AggregateError(format!("Invalid number \"{text}\" in {op}"))),
    }
}

impl Op {
    fn new(op: &AggregationOp) -> Result<Op, AggregateError> {
        let arg = |i: usize| op.args.get(i).map(|s| AttrRef::new(s));
        let a_name = op.args.first().cloned().unwrap_or_default();
        let b_name = op.args.get(1).cloned().unwrap_or_default();
        let names: Vec<String> = match op.kernel {
            Kernel::Count => vec!["count".into()],
            Kernel::Sum | Kernel::Min | Kernel::Max | Kernel::Any | Kernel::InclusiveSum => {
                vec![op.result_name()]
            }
            Kernel::InclusiveMin | Kernel::InclusiveMax => vec![op.result_name()],
            Kernel::Avg => vec![format!("avg.sum#{a_name}"), format!("avg.count#{a_name}")],
            Kernel::Scale => vec![format!("scsum#{a_name}")],
            Kernel::InclusiveScale => vec![format!("iscsum#{a_name}")],
            Kernel::PercentTotal => vec![format!("pct.sum#{a_name}")],
            Kernel::InclusivePercentTotal => vec![format!("ipct.sum#{a_name}")],
            Kernel::Ratio => vec![format!("sr.sum#{a_name}"), format!("sr.sum#{b_name}")],
            Kernel::InclusiveRatio => {
                vec![format!("isr.sum#{a_name}"), format!("isr.sum#{b_name}")]
            }
            Kernel::ScaleCount => vec![format!("scount#{a_name}")],
            Kernel::Variance => {
                vec![format!("var.count#{a_name}"), format!("var.sum#{a_name}"), format!("var.sqsum#{a_name}")]
            }
            Kernel::Histogram => Vec::new(),
        };
        let (factor, a, b) = match op.kernel {
            Kernel::Count => (1.0, None, None),
            Kernel::ScaleCount => (parse_number(op, 0, 1.0)?, None, None),
            Kernel::Scale | Kernel::InclusiveScale => (parse_number(op, 1, 1.0)?, arg(0), None),
            Kernel::Ratio | Kernel::InclusiveRatio => (parse_number(op, 2, 1.0)?, arg(0), arg(1)),
            _ => (1.0, arg(0), None),
        };
        let (bins, range) = if op.kernel == Kernel::Histogram {
            let bins = parse_number(op, 1, 10.0)?;
            if !(1.0..=1000.0).contains(&bins) || bins.fract() != 0.0 {
                return Err(AggregateError(format!("Invalid number of bins in {op}: expected 1 to 1000")));
            }
            let range = (parse_number(op, 2, 0.0)?, parse_number(op, 3, 1.0)?);
            if range.1 <= range.0 {
                return Err(AggregateError(format!("Empty histogram range in {op}")));
            }
            (bins as usize, range)
        } else {
            (0, (0.0, 0.0))
        };
        Ok(Op { op: op.clone(), a, b, merged: names.iter().map(|n| AttrRef::new(n)).collect(), factor, bins, range })
    }

    /// Adds the state of a child group to its parent's, for inclusive
    /// kernels (the others keep the parent's own records only).
    fn merge_inclusive(&self, into: &mut State, child: &State) {
        if !self.op.kernel.is_inclusive() {
            return;
        }
        match (into, child) {
            (_, State::Value(v)) if v.is_empty() => {}
            (State::Value(acc), State::Value(v)) => match self.op.kernel {
                Kernel::InclusiveMin => *acc = acc.min_with(v),
                Kernel::InclusiveMax => *acc = acc.max_with(v),
                _ => acc.add_assign(v),
            },
            (State::Sum(sum, seen), State::Sum(x, x_seen)) => {
                *sum += x;
                *seen |= x_seen;
            }
            (State::Ratio(num, den, seen), State::Ratio(x_num, x_den, x_seen)) => {
                *num += x_num;
                *den += x_den;
                *seen |= x_seen;
            }
            _ => {}
        }
    }

    fn initial_state(&self) -> State {
        match self.op.kernel {
            Kernel::Count | Kernel::ScaleCount => State::Count(0),
            Kernel::Sum
            | Kernel::Min
            | Kernel::Max
            | Kernel::Any
            | Kernel::InclusiveSum
            | Kernel::InclusiveMin
            | Kernel::InclusiveMax => State::Value(Variant::Empty),
            Kernel::Avg => State::Mean(Variant::Empty, 0),
            Kernel::Scale | Kernel::InclusiveScale | Kernel::PercentTotal | Kernel::InclusivePercentTotal => {
                State::Sum(0.0, false)
            }
            Kernel::Ratio | Kernel::InclusiveRatio => State::Ratio(0.0, 0.0, false),
            Kernel::Variance => State::Moments(0, 0.0, 0.0),
            Kernel::Histogram => State::Histogram(vec![0; self.bins]),
        }
    }

    /// Adds one record's immediate entries to `state`. Returns the amount
    /// to add to the exclusive grand total (percent kernels).
    fn update(&mut self, db: &MetadataDb, state: &mut State, record: &Record) -> f64 {
        let a = self.a.as_mut().and_then(|r| r.get(db));
        let b = self.b.as_mut().and_then(|r| r.get(db));
        let mut merged = [None; 3];
        for (slot, r) in merged.iter_mut().zip(&mut self.merged) {
            *slot = r.get(db);
        }
        let imms = || record.immediates();
        let is = |attr: Id, want: Option<Id>| want == Some(attr);
        let mut total = 0.0;
        match state {
            State::Count(n) => {
                let mut counted = false;
                for (attr, v) in imms() {
                    if is(attr, merged[0]) {
                        *n += v.to_u64().unwrap_or(0);
                        counted = true;
                    }
                }
                if !counted {
                    *n += 1;
                }
            }
            State::Value(acc) => {
                for (attr, v) in imms() {
                    if is(attr, a) || is(attr, merged[0]) {
                        match self.op.kernel {
                            Kernel::Sum | Kernel::InclusiveSum => acc.add_assign(v),
                            Kernel::Min | Kernel::InclusiveMin => *acc = acc.min_with(v),
                            Kernel::Max | Kernel::InclusiveMax => *acc = acc.max_with(v),
                            _ => {
                                if acc.is_empty() {
                                    *acc = v.clone();
                                }
                            }
                        }
                    }
                }
            }
            State::Mean(sum, count) => {
                for (attr, v) in imms() {
                    if is(attr, a) {
                        sum.add_assign(v);
                        *count += 1;
                    } else if is(attr, merged[0]) {
                        sum.add_assign(v);
                    } else if is(attr, merged[1]) {
                        *count += v.to_u64().unwrap_or(0);
                    }
                }
            }
            State::Sum(sum, seen) => {
                for (attr, v) in imms() {
                    if is(attr, a) || is(attr, merged[0]) {
                        let x = v.to_f64().unwrap_or(0.0);
                        *sum += x;
                        *seen = true;
                        total += x;
                    }
                }
            }
            State::Ratio(num, den, seen) => {
                for (attr, v) in imms() {
                    let x = v.to_f64().unwrap_or(0.0);
                    // Both checks: numerator and denominator may be one attribute.
                    if is(attr, a) || is(attr, merged[0]) {
                        *num += x;
                        *seen = true;
                    }
                    if is(attr, b) || is(attr, merged[1]) {
                        *den += x;
                        *seen = true;
                    }
                }
            }
            State::Moments(n, sum, sqsum) => {
                for (attr, v) in imms() {
                    let x = v.to_f64().unwrap_or(0.0);
                    if is(attr, a) {
                        *n += 1;
                        *sum += x;
                        *sqsum += x * x;
                    } else if is(attr, merged[0]) {
                        *n += v.to_u64().unwrap_or(0);
                    } else if is(attr, merged[1]) {
                        *sum += x;
                    } else if is(attr, merged[2]) {
                        *sqsum += x;
                    }
                }
            }
            State::Histogram(bins) => {
                let name_a = self.op.args.first().map(String::as_str).unwrap_or("");
                for (attr, v) in imms() {
                    if is(attr, a) {
                        let x = v.to_f64().unwrap_or(f64::NAN);
                        let (lo, hi) = self.range;
                        let pos = ((x - lo) / (hi - lo) * bins.len() as f64).floor();
                        let i = if pos.is_nan() || pos < 0.0 { 0 } else { (pos as usize).min(bins.len() - 1) };
                        bins[i] += 1;
                    } else if let Some(name) = db.attribute(attr).map(|x| x.name()) {
                        // A bin of an earlier histogram of the same attribute.
                        if let Some(bin) = histogram_bin(name, name_a).and_then(|i| bins.get_mut(i)) {
                            *bin += v.to_u64().unwrap_or(0);
                        }
                    }
                }
            }
        }
        total
    }

    /// The result entries of a finished state: (name, type, props, value).
    fn results(&self, state: &State, total: f64) -> Vec<(String, AttrType, Properties, Variant)> {
        let name = self.op.result_name();
        let a_name = self.op.args.first().cloned().unwrap_or_default();
        let b_name = self.op.args.get(1).cloned().unwrap_or_default();
        let main = |ty, v| (name.clone(), ty, RESULT_PROPS, v);
        match (self.op.kernel, state) {
            (Kernel::Count, State::Count(n)) if *n > 0 => {
                vec![main(AttrType::Uint, Variant::Uint(*n))]
            }
            (Kernel::ScaleCount, State::Count(n)) if *n > 0 => vec![
                main(AttrType::Double, Variant::Double(self.factor * *n as f64)),
                (format!("scount#{a_name}"), AttrType::Uint, HELPER_PROPS, Variant::Uint(*n)),
            ],
            (_, State::Value(v)) if !v.is_empty() => vec![main(v.attr_type(), v.clone())],
            (Kernel::Avg, State::Mean(sum, n)) if *n > 0 => vec![
                main(sum.attr_type(), sum.div(*n)),
                (format!("avg.sum#{a_name}"), sum.attr_type(), HELPER_PROPS, sum.clone()),
                (format!("avg.count#{a_name}"), AttrType::Uint, HELPER_PROPS, Variant::Uint(*n)),
            ],
            (Kernel::Scale | Kernel::InclusiveScale, State::Sum(sum, true)) => {
                let helper = if self.op.kernel == Kernel::Scale { "scsum" } else { "iscsum" };
                vec![
                    main(AttrType::Double, Variant::Double(self.factor * sum)),
                    (format!("{helper}#{a_name}"), AttrType::Double, HELPER_PROPS, Variant::Double(*sum)),
                ]
            }
            (Kernel::PercentTotal | Kernel::InclusivePercentTotal, State::Sum(sum, true)) if total > 0.0 => {
                let helper = if self.op.kernel == Kernel::PercentTotal { "pct.sum" } else { "ipct.sum" };
                vec![
                    main(AttrType::Double, Variant::Double(100.0 * sum / total)),
                    (format!("{helper}#{a_name}"), AttrType::Double, HELPER_PROPS, Variant::Double(*sum)),
                ]
            }
            (Kernel::Ratio | Kernel::InclusiveRatio, State::Ratio(num, den, true)) => {
                let helper = if self.op.kernel == Kernel::Ratio { "sr.sum" } else { "isr.sum" };
                let mut out = Vec::new();
                if *den != 0.0 {
                    out.push(main(AttrType::Double, Variant::Double(self.factor * num / den)));
                }
                out.push((format!("{helper}#{a_name}"), AttrType::Double, HELPER_PROPS, Variant::Double(*num)));
                // One helper serves both sides of a ratio of an attribute to itself.
                if b_name != a_name {
                    out.push((format!("{helper}#{b_name}"), AttrType::Double, HELPER_PROPS, Variant::Double(*den)));
                }
                out
            }
            (Kernel::Variance, State::Moments(n, sum, sqsum)) if *n > 0 => {
                let mean = sum / *n as f64;
                vec![
                    main(AttrType::Double, Variant::Double(sqsum / *n as f64 - mean * mean)),
                    (format!("var.count#{a_name}"), AttrType::Uint, HELPER_PROPS, Variant::Uint(*n)),
                    (format!("var.sum#{a_name}"), AttrType::Double, HELPER_PROPS, Variant::Double(*sum)),
                    (format!("var.sqsum#{a_name}"), AttrType::Double, HELPER_PROPS, Variant::Double(*sqsum)),
                ]
            }
            (Kernel::Histogram, State::Histogram(bins)) if bins.iter().any(|&n| n > 0) => bins
                .iter()
                .enumerate()
                .map(|(i, &n)| (format!("histogram.bin.{i}#{a_name}"), AttrType::Uint, RESULT_PROPS, Variant::Uint(n)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The bin index of a histogram result name `histogram.bin.<i>#<attr>`.
fn histogram_bin(name: &str, attr: &str) -> Option<usize> {
    let rest = name.strip_prefix("histogram.bin.")?;
    let (index, target) = rest.split_once('#')?;
    if target == attr { index.parse().ok() } else { None }
}

impl Aggregator {
    /// The aggregation of a query: its kernels (count if none) and GROUP BY.
    pub fn new(spec: &QuerySpec) -> Result<Aggregator, AggregateError> {
        let ops = if spec.aggregate.is_empty() {
            vec![AggregationOp::new(Kernel::Count, &[])]
        } else {
            spec.aggregate.clone()
        };
        let ops = ops.iter().map(Op::new).collect::<Result<Vec<_>, _>>()?;
        let key = match &spec.group_by {
            Selection::Default | Selection::All => KeySpec {
                single_group: false,
                all_tree: true,
                path: false,
                names: Vec::new(),
                ids: Vec::new(),
                ids_at: u64::MAX,
            },
            Selection::Nothing => KeySpec {
                single_group: true,
                all_tree: false,
                path: false,
                names: Vec::new(),
                ids: Vec::new(),
                ids_at: u64::MAX,
            },
            Selection::List(names) => KeySpec {
                single_group: false,
                all_tree: false,
                path: spec.group_by_path,
                names: names.iter().map(|n| AttrRef::new(n)).collect(),
                ids: Vec::new(),
                ids_at: u64::MAX,
            },
        };
        Ok(Aggregator {
            totals: vec![0.0; ops.len()],
            inclusive: ops.iter().any(|o| o.op.kernel.is_inclusive()),
            ops,
            key,
            groups: Vec::new(),
            index: FxHashMap::default(),
            node_keys: FxHashMap::default(),
            by_node: FxHashMap::default(),
            aliases: spec.aliases.clone(),
            units: spec.units.clone(),
        })
    }

    /// The result attribute names, in output order (for formatters that
    /// need columns before the data).
    pub fn result_names(&self) -> Vec<String> {
        self.ops.iter().map(|o| o.op.result_name()).collect()
    }

    /// Adds a record to its group (and, for inclusive kernels, makes sure
    /// the groups of its path's ancestors exist: the flush adds each
    /// group's inclusive results to its parent's, once, rather than each
    /// record to every ancestor, which would cost time quadratic in the
    /// depth).
    pub fn add(&mut self, db: &mut MetadataDb, record: &Record) {
        let g = self.group_of(db, record);
        for (i, op) in self.ops.iter_mut().enumerate() {
            let total = op.update(db, &mut self.groups[g].states[i], record);
            self.totals[i] += total;
        }
        if self.inclusive {
            self.link_ancestors(db, g);
        }
    }

    /// Creates the groups of the ancestors of group `g`'s path (up to the
    /// first one already linked) and links each to its parent.
    fn link_ancestors(&mut self, db: &MetadataDb, mut g: usize) {
        while self.groups[g].parent.is_none() {
            let key = self.groups[g].key.clone();
            let parent = key
                .path
                .and_then(|p| db.node(p))
                .and_then(|n| n.parent)
                .map(|p| self.group_index(GroupKey { path: Some(p), ..key }));
            self.groups[g].parent = Some(parent);
            match parent {
                Some(p) => g = p,
                None => return,
            }
        }
    }

    /// Every group's states with the inclusive ones summed over the
    /// group's subtree: children are added to their parent before the
    /// parent is added to its own.
    fn inclusive_states(&self) -> Vec<Vec<State>> {
        let mut states: Vec<Vec<State>> = self.groups.iter().map(|g| g.states.clone()).collect();
        if !self.inclusive {
            return states;
        }
        let parent = |g: usize| self.groups[g].parent.flatten();
        let mut children_left = vec![0usize; self.groups.len()];
        for g in 0..self.groups.len() {
            if let Some(p) = parent(g) {
                children_left[p] += 1;
            }
        }
        let mut ready: Vec<usize> = (0..self.groups.len()).filter(|&g| children_left[g] == 0).collect();
        while let Some(g) = ready.pop() {
            let Some(p) = parent(g) else { continue };
            for (i, op) in self.ops.iter().enumerate() {
                let child = states[g][i].clone();
                op.merge_inclusive(&mut states[p][i], &child);
            }
            children_left[p] -= 1;
            if children_left[p] == 0 {
                ready.push(p);
            }
        }
        states
    }

    /// The group of a record. Most records have a single reference entry
    /// and no immediate key values; their group is cached per node.
    fn group_of(&mut self, db: &mut MetadataDb, record: &Record) -> usize {
        let mut refs = record.refs();
        let single = match (refs.next(), refs.next()) {
            (Some(node), None) => Some(node),
            _ => None,
        };
        let plain = single.filter(|_| {
            self.key.names.is_empty() || {
                let wanted = self.key.named_ids(db);
                !record.immediates().any(|(a, _)| is_named(db, wanted, a))
            }
        });
        if let Some(&g) = plain.and_then(|node| self.by_node.get(&node)) {
            return g;
        }
        let key = self.group_key(db, record);
        let g = self.group_index(key);
        if let Some(node) = plain {
            self.by_node.insert(node, g);
        }
        g
    }

    fn group_index(&mut self, key: GroupKey) -> usize {
        if let Some(&g) = self.index.get(&key) {
            return g;
        }
        let states = self.ops.iter().map(Op::initial_state).collect();
        self.groups.push(Group { key: key.clone(), states, parent: None });
        self.index.insert(key, self.groups.len() - 1);
        self.groups.len() - 1
    }

    fn group_key(&mut self, db: &mut MetadataDb, record: &Record) -> GroupKey {
        let mut key = GroupKey { path: None, other: None, immediates: Vec::new() };
        if self.key.single_group {
            return key;
        }
        let mut refs = record.refs();
        match (refs.next(), refs.next()) {
            (None, _) => {}
            (Some(one), None) => {
                let nk = self.node_key(db, one);
                key.path = nk.path_node;
                key.other = nk.other_node;
            }
            (Some(_), Some(_)) => {
                // The entries' chains one after the other: each later chain
                // is rebuilt under the ones before it.
                let mut path = Vec::new();
                for r in record.refs() {
                    let nk = self.node_key(db, r);
                    key.path = append_chain(db, key.path, nk.path_node, &mut path);
                    key.other = append_chain(db, key.other, nk.other_node, &mut path);
                }
            }
        }
        if !self.key.names.is_empty() {
            let wanted = self.key.named_ids(db);
            for (attr, value) in record.immediates() {
                if is_named(db, wanted, attr) {
                    key.immediates.push((attr, value.clone()));
                }
            }
            key.immediates.sort_by_key(|(a, _)| *a);
        }
        key
    }

    /// The key part of a reference entry, cached per node. A node's key
    /// is its parent's, extended by the node if it is selected: each node
    /// is looked at once, so deep trees cost time linear in their size.
    fn node_key(&mut self, db: &mut MetadataDb, node: Id) -> NodeKey {
        if let Some(&nk) = self.node_keys.get(&node) {
            return nk;
        }
        let mut pending = Vec::new();
        let mut nk = NodeKey::default();
        let mut next = Some(node);
        while let Some(id) = next {
            if let Some(&known) = self.node_keys.get(&id) {
                nk = known;
                break;
            }
            let Some(n) = db.node(id) else { break };
            pending.push(id);
            next = n.parent;
        }
        let wanted = self.key.named_ids(db).to_vec();
        for id in pending.into_iter().rev() {
            let node = db.node(id).expect("path node");
            let (attr_id, value) = (node.attribute, node.value.clone());
            if let Some(attr) = db.attribute(attr_id) {
                let named = is_named(db, &wanted, attr_id);
                let selected = self.key.all_tree || named || (self.key.path && attr.is_nested());
                if selected && !attr.is_hidden() {
                    let chain = if attr.is_nested() { &mut nk.path_node } else { &mut nk.other_node };
                    *chain = Some(db.get_or_create_node(attr_id, value, *chain));
                }
            }
            self.node_keys.insert(id, nk);
        }
        nk
    }

    /// Emits one record per group, in creation order: the key entries, then
    /// every kernel's results.
    pub fn flush(&mut self, db: &mut MetadataDb, mut emit: impl FnMut(&mut MetadataDb, &Record)) {
        let mut record = Record::ctx();
        let unit_attr = db.unit_attribute();
        let alias_attr = db.alias_attribute();
        let states = self.inclusive_states();
        for (group, states) in self.groups.iter().zip(&states) {
            record.clear();
            if let Some(p) = group.key.path {
                record.push_ref(p);
            }
            if let Some(o) = group.key.other {
                record.push_ref(o);
            }
            for (attr, value) in &group.key.immediates {
                record.push_imm(*attr, value.clone());
            }
            for (i, op) in self.ops.iter().enumerate() {
                for (name, ty, props, value) in op.results(&states[i], self.totals[i]) {
                    let mut meta = Vec::new();
                    if let Some((_, unit)) = self.units.iter().rev().find(|(n, _)| *n == name) {
                        meta.push((unit_attr, Variant::string(unit)));
                    }
                    if let Some((_, alias)) = self.aliases.iter().rev().find(|(n, _)| *n == name) {
                        meta.push((alias_attr, Variant::string(alias)));
                    }
                    let attr = db.create_attribute(&name, ty, props, &meta);
                    record.push_imm(attr, value);
                }
            }
            emit(db, &record);
        }
    }
}

/// Whether GROUP BY names `attr`: it is listed (`wanted`: the listed
/// attributes' ids), or it carries a listed attribute as metadata, as
/// `group by class.iteration` selects every loop's iteration attribute.
fn is_named(db: &MetadataDb, wanted: &[Id], attr: Id) -> bool {
    wanted.contains(&attr)
        || db.attribute(attr).is_some_and(|a| a.metadata().iter().any(|(meta, _)| wanted.contains(meta)))
}

/// The chain `base` continued by a copy of the chain `chain` (both under
/// the root); `scratch` is working space.
fn append_chain(db: &mut MetadataDb, base: Option<Id>, chain: Option<Id>, scratch: &mut Vec<Id>) -> Option<Id> {
    let (Some(mut parent), Some(chain)) = (base, chain) else { return base.or(chain) };
    scratch.clear();
    db.path_to(chain, scratch);
    for &id in scratch.iter() {
        let node = db.node(id).expect("path node");
        let (attr, value) = (node.attribute, node.value.clone());
        parent = db.get_or_create_node(attr, value, Some(parent));
    }
    Some(parent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_query;
    use std::collections::BTreeMap;

    /// A small region tree with one uint metric per record:
    /// main (1), main (2), main/foo (4), main/foo (8), main/bar (16), none (32).
    fn records(db: &mut MetadataDb) -> Vec<Record> {
        let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
        let t = db.create_attribute("t", AttrType::Uint, Properties::ASVALUE | Properties::AGGREGATABLE, &[]);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let foo = db.get_or_create_node(region, Variant::string("foo"), Some(main));
        let bar = db.get_or_create_node(region, Variant::string("bar"), Some(main));
        [(Some(main), 1), (Some(main), 2), (Some(foo), 4), (Some(foo), 8), (Some(bar), 16), (None, 32)]
            .into_iter()
            .map(|(node, value)| {
                let mut r = Record::ctx();
                if let Some(n) = node {
                    r.push_ref(n);
                }
                r.push_imm(t, Variant::Uint(value));
                r
            })
            .collect()
    }

    /// Runs `query` over the records; returns per group "name=value" lists.
    fn run(query: &str, input: impl Fn(&mut MetadataDb) -> Vec<Record>) -> Vec<BTreeMap<String, String>> {
        let mut db = MetadataDb::new();
        let recs = input(&mut db);
        let mut agg = Aggregator::new(&parse_query(query).unwrap()).unwrap();
        for r in &recs {
            agg.add(&mut db, r);
        }
        let mut out = Vec::new();
        agg.flush(&mut db, |db, r| {
            let mut m = BTreeMap::new();
            for (attr, values) in db.expand_paths(r) {
                let a = db.attribute(attr).unwrap();
                let text: Vec<String> = values.iter().map(|v| v.to_cali_string()).collect();
                m.insert(a.name().to_string(), text.join("/"));
            }
            out.push(m);
        });
        out
    }

    fn get<'a>(groups: &'a [BTreeMap<String, String>], region: &str, attr: &str) -> Option<&'a str> {
        groups
            .iter()
            .find(|g| g.get("region").map_or(region.is_empty(), |r| r == region))
            .and_then(|g| g.get(attr))
            .map(String::as_str)
    }

    #[test]
    fn count_sum_min_max_avg_by_path() {
        let g = run("aggregate count(), sum(t), min(t), max(t), avg(t), any(t) group by path", records);
        assert_eq!(g.len(), 4, "main, main/foo, main/bar and the record without region");
        assert_eq!(get(&g, "main", "count"), Some("2"));
        assert_eq!(get(&g, "main/foo", "sum#t"), Some("12"));
        assert_eq!(get(&g, "main/foo", "min#t"), Some("4"));
        assert_eq!(get(&g, "main/foo", "max#t"), Some("8"));
        assert_eq!(get(&g, "main/foo", "avg#t"), Some("6"));
        assert_eq!(get(&g, "main/foo", "avg.count#t"), Some("2"));
        assert_eq!(get(&g, "main", "any#t"), Some("1"));
        assert_eq!(get(&g, "", "sum#t"), Some("32"));
    }

    /// `group by class.iteration` groups by every attribute that carries
    /// `class.iteration` as metadata (each loop's iteration attribute),
    /// immediate or in the tree, and by no other.
    #[test]
    fn a_class_in_group_by_selects_the_attributes_that_carry_it() {
        let g = run("aggregate count(), sum(t) group by class.iteration", |db| {
            let class = db.create_attribute("class.iteration", AttrType::Bool, Properties::DEFAULT, &[]);
            let meta = [(class, Variant::Bool(true))];
            let iteration = db.create_attribute("iteration#main", AttrType::Int, Properties::ASVALUE, &meta);
            let other = db.create_attribute("other", AttrType::Int, Properties::ASVALUE, &[]);
            let mut out = records(db);
            for (i, r) in out.iter_mut().enumerate() {
                r.push_imm(iteration, Variant::Int(i as i64 % 2));
                r.push_imm(other, Variant::Int(i as i64));
            }
            out
        });
        let groups: Vec<(Option<&str>, Option<&str>, Option<&str>)> = g
            .iter()
            .map(|m| {
                (
                    m.get("iteration#main").map(String::as_str),
                    m.get("count").map(String::as_str),
                    m.get("other").map(String::as_str),
                )
            })
            .collect();
        assert_eq!(groups, [(Some("0"), Some("3"), None), (Some("1"), Some("3"), None)], "{g:?}");
    }

    #[test]
    fn groups_come_in_creation_order() {
        let g = run("aggregate count() group by path", records);
        let order: Vec<_> = g.iter().map(|m| m.get("region").cloned().unwrap_or_default()).collect();
        assert_eq!(order, ["main", "main/foo", "main/bar", ""]);
    }

    #[test]
    fn single_group_and_default_key() {
        let mut spec = parse_query("aggregate sum(t)").unwrap();
        spec.group_by = Selection::Nothing;
        let mut db = MetadataDb::new();
        let recs = records(&mut db);
        let mut agg = Aggregator::new(&spec).unwrap();
        for r in &recs {
            agg.add(&mut db, r);
        }
        let mut n = 0;
        agg.flush(&mut db, |db, r| {
            n += 1;
            let (attr, v) = r.immediates().next().unwrap();
            assert_eq!(db.attribute(attr).unwrap().name(), "sum#t");
            assert_eq!(v, &Variant::Uint(63));
        });
        assert_eq!(n, 1);
        // Without GROUP BY every tree attribute is part of the key.
        assert_eq!(run("aggregate count()", records).len(), 4);
    }

    #[test]
    fn inclusive_kernels_reach_ancestors() {
        let g = run("aggregate sum(t), inclusive_sum(t), inclusive_max(t), inclusive_min(t) group by path", records);
        assert_eq!(get(&g, "main", "sum#t"), Some("3"));
        assert_eq!(get(&g, "main", "inclusive#t"), Some("31"));
        assert_eq!(get(&g, "main", "imax#t"), Some("16"));
        assert_eq!(get(&g, "main", "imin#t"), Some("1"));
        assert_eq!(get(&g, "main/foo", "inclusive#t"), Some("12"));
    }

    #[test]
    fn groups_created_by_propagation_have_only_inclusive_results() {
        let only_leaf =
            |db: &mut MetadataDb| records(db).into_iter().filter(|r| r.refs().count() == 1).skip(2).collect();
        let g = run("aggregate count(), inclusive_sum(t) group by path", only_leaf);
        assert_eq!(get(&g, "main", "inclusive#t"), Some("28"));
        assert_eq!(get(&g, "main", "count"), None);
    }

    #[test]
    fn derived_kernels() {
        let g = run(
            "aggregate scale(t,0.5), ratio(t,t,2), percent_total(t), inclusive_percent_total(t), scale_count(3), variance(t) group by path",
            records,
        );
        assert_eq!(get(&g, "main/foo", "scale#t"), Some("6"));
        assert_eq!(get(&g, "main/foo", "ratio#t/t"), Some("2"));
        assert_eq!(get(&g, "", "percent_total#t"), Some("50.79365079365079"));
        assert_eq!(get(&g, "main", "ipercent_total#t"), Some("49.20634920634921"));
        assert_eq!(get(&g, "main", "scount"), Some("6"));
        assert_eq!(get(&g, "main/foo", "variance#t"), Some("4"));
    }

    #[test]
    fn histogram_bins() {
        let g = run("aggregate histogram(t, 4, 0, 16) group by path", records);
        assert_eq!(get(&g, "main", "histogram.bin.0#t"), Some("2"));
        assert_eq!(get(&g, "main/foo", "histogram.bin.1#t"), Some("1"));
        assert_eq!(get(&g, "main/foo", "histogram.bin.2#t"), Some("1"));
        assert_eq!(get(&g, "main/bar", "histogram.bin.3#t"), Some("1"), "values above the range go to the last bin");
        assert!(Aggregator::new(&parse_query("aggregate histogram(t, 0)").unwrap()).is_err());
    }

    /// Aggregating twice (per part, then the parts' results) gives what
    /// aggregating once gives: kernels merge their own outputs.
    #[test]
    fn re_aggregation_composes() {
        let q = "aggregate count(), sum(t), min(t), max(t), avg(t), variance(t), ratio(t,t), scale(t,2) group by path";
        let once = run(q, records);
        let twice = run(q, |db| {
            let recs = records(db);
            let mut parts = Vec::new();
            for half in [&recs[..3], &recs[3..]] {
                let mut agg = Aggregator::new(&parse_query(q).unwrap()).unwrap();
                for r in half {
                    agg.add(db, r);
                }
                agg.flush(db, |_, r| parts.push(r.clone()));
            }
            parts
        });
        let strip_helpers = |g: &[BTreeMap<String, String>]| -> Vec<BTreeMap<String, String>> {
            let mut v: Vec<_> = g.to_vec();
            v.sort_by_key(|m| m.get("region").cloned());
            v
        };
        assert_eq!(strip_helpers(&twice), strip_helpers(&once));
    }
}
