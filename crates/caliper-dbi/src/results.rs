//! The results: `.cali` records that `cali-query` reads, and the text
//! report.
//!
//! One record per function: the context path `dbi.module` > `dbi.function`
//! (both nested, so `format tree` and json-split show modules with their
//! functions), and the immediates `dbi.address` (the entry's address in
//! the module file), `dbi.count` (calls, with `fcount`), `dbi.covered`
//! (1 or 0, with `coverage`) and `dbi.instrumentation` (how the function
//! was counted, with the reason where it kept its breakpoint). The globals
//! record names the collectors (`dbi.collect`) and counts the program's
//! stops at the tool's breakpoints (`dbi.traps`).
//!
//! With `arcs`, one record more per call arc: the context path
//! `dbi.caller` > `dbi.function` (a call graph, in `format tree`), the
//! callee's `dbi.module`, the caller's `dbi.caller.module`, the call
//! instruction's address in the caller's file `dbi.callsite`, and
//! `dbi.count`, the calls made there.
//!
//! With `callgraph`, one record per node of the call graph's tree (see
//! [`crate::callgraph`]): the nested `dbi.callgraph` path from a root of
//! the tree (a cycle is a node `<cycle N>` with its members beneath),
//! `dbi.calls` (the node's own calls), `dbi.calls.inclusive` (its calls
//! and the calls beneath it), `dbi.callgraph.module` (a function's module)
//! and, for a cycle and its members, `dbi.cycle` (N).
//!
//! With `sample`, one record per sampled call stack: the nested
//! `dbi.frame` path (outermost first, so `format tree` shows a call tree
//! and `format folded` flame-graph input) and `dbi.samples`; the globals
//! count the samples whose call chain was cut at a return address outside
//! the program's code (`dbi.sample.truncated`).

use crate::by_place::ByPlace;
use crate::callgraph::CallGraph;
use crate::engine::{Collect, Outcome};
use crate::functions::{FunctionRecord, Mode};
use caliper_data::cali::CaliWriter;
use caliper_data::hash::FxHashMap;
use caliper_data::{AttrType, Id, MetadataDb, Properties, Record, Variant};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::Arc;

/// The nodes of one attribute without a parent, each made once per name
/// (see [`ByPlace`]; the same text at another place only misses there: the
/// database makes its node once).
struct NodesByName {
    attr: Id,
    nodes: ByPlace<Id>,
}

impl NodesByName {
    fn new(attr: Id) -> NodesByName {
        NodesByName { attr, nodes: ByPlace::default() }
    }

    /// The node of the attribute = `name`.
    fn node(&mut self, db: &mut MetadataDb, name: &Arc<str>) -> Id {
        let attr = self.attr;
        self.nodes.get_or_make(name, || db.get_or_create_node(attr, Variant::from(&**name), None))
    }
}

/// How a function was instrumented, as written in `dbi.instrumentation`
/// (the common ways without a copy: a compiler's run writes thousands).
pub fn instrumentation(record: &FunctionRecord) -> Cow<'static, str> {
    match &record.mode {
        Mode::Armed => "not called".into(),
        Mode::Covered => "breakpoint removed".into(),
        Mode::Trampoline => "trampoline".into(),
        Mode::Breakpoint(why) => format!("breakpoint ({why})").into(),
        Mode::CallSites(why) => {
            format!("callers sent to a trampoline, the breakpoint for calls through pointers ({why})").into()
        }
        Mode::Uncounted(why) => format!("uncounted ({why})").into(),
    }
}

/// The functions to report: with counts, those called; with coverage
/// only, all that were probed.
fn reported(outcome: &Outcome, collect: Collect) -> impl Iterator<Item = (usize, &FunctionRecord)> {
    outcome.functions.records.iter().enumerate().filter(move |(_, r)| collect.coverage || r.covered)
}

/// Writes one `.cali` record per reported function.
pub fn write_cali(out: impl Write, outcome: &Outcome, collect: Collect) -> io::Result<()> {
    let mut db = MetadataDb::new();
    let nested = Properties::NESTED;
    let module_attr = db.create_attribute("dbi.module", AttrType::String, nested, &[]);
    let function_attr = db.create_attribute("dbi.function", AttrType::String, nested, &[]);
    let how_attr = db.create_attribute("dbi.instrumentation", AttrType::String, Properties::DEFAULT, &[]);
    let address_attr = db.create_attribute("dbi.address", AttrType::Addr, Properties::ASVALUE, &[]);
    let aggregatable = Properties::ASVALUE | Properties::AGGREGATABLE;
    let count_attr = db.create_attribute("dbi.count", AttrType::Uint, aggregatable, &[]);
    let covered_attr = db.create_attribute("dbi.covered", AttrType::Uint, aggregatable, &[]);
    let caller_attr = db.create_attribute("dbi.caller", AttrType::String, nested, &[]);
    let plain = Properties::DEFAULT;
    let callee_module_attr = db.create_attribute("dbi.module#callee", AttrType::String, plain, &[]);
    let caller_module_attr = db.create_attribute("dbi.caller.module", AttrType::String, plain, &[]);
    let callsite_attr = db.create_attribute("dbi.callsite", AttrType::Addr, Properties::ASVALUE, &[]);
    let collect_attr = db.create_attribute("dbi.collect", AttrType::String, Properties::GLOBAL, &[]);
    let traps_attr = db.create_attribute("dbi.traps", AttrType::Uint, Properties::GLOBAL, &[]);
    let mut writer = CaliWriter::new(out);
    // The run's globals first: a run that measured nothing still gives a
    // readable file.
    let mut globals = Record::globals();
    globals.push_ref(db.get_or_create_node(collect_attr, Variant::from(collect.names()), None));
    globals.push_ref(db.get_or_create_node(traps_attr, Variant::Uint(outcome.traps), None));
    if collect.sample {
        let truncated_attr = db.create_attribute("dbi.sample.truncated", AttrType::Uint, Properties::GLOBAL, &[]);
        globals.push_ref(db.get_or_create_node(truncated_attr, Variant::Uint(outcome.samples_truncated), None));
    }
    writer.write_record(&db, &globals)?;
    let mut modules = NodesByName::new(module_attr);
    // The ways of instrumenting, a handful, by their text.
    let mut ways: FxHashMap<Cow<'static, str>, Id> = FxHashMap::default();
    for (id, r) in reported(outcome, collect) {
        let module = modules.node(&mut db, &r.module);
        let function = db.get_or_create_node(function_attr, Variant::from(&**r.name()), Some(module));
        let how = match ways.entry(instrumentation(r)) {
            Entry::Occupied(how) => *how.get(),
            Entry::Vacant(way) => {
                let node = db.get_or_create_node(how_attr, Variant::from(&**way.key()), None);
                *way.insert(node)
            }
        };
        let mut record = Record::ctx();
        record.push_ref(function);
        record.push_ref(how);
        record.push_imm(address_attr, Variant::Addr(r.address()));
        if collect.fcount {
            record.push_imm(count_attr, Variant::Uint(outcome.functions.calls(id, &outcome.counters)));
        }
        if collect.coverage {
            record.push_imm(covered_attr, Variant::Uint(r.covered as u64));
        }
        writer.write_record(&db, &record)?;
    }
    let frame_attr = db.create_attribute("dbi.frame", AttrType::String, nested, &[]);
    let samples_attr = db.create_attribute("dbi.samples", AttrType::Uint, aggregatable, &[]);
    for (stack, count) in sorted_stacks(outcome) {
        let mut node = None;
        for frame in stack {
            node = Some(db.get_or_create_node(frame_attr, Variant::from(frame.as_str()), node));
        }
        let mut record = Record::ctx();
        if let Some(leaf) = node {
            record.push_ref(leaf);
        }
        record.push_imm(samples_attr, Variant::Uint(count));
        writer.write_record(&db, &record)?;
    }
    if collect.callgraph {
        let graph = CallGraph::build(&outcome.functions, &outcome.arcs, &outcome.counters);
        write_callgraph(&mut db, &mut writer, &graph)?;
    }
    if collect.arcs {
        write_arcs(
            &mut db,
            &mut writer,
            outcome,
            ArcAttributes {
                caller_attr,
                function_attr,
                callee_module_attr,
                caller_module_attr,
                callsite_attr,
                count_attr,
            },
        )?;
    }
    writer.finish()?.flush()
}

/// The attributes of an arc's record.
struct ArcAttributes {
    caller_attr: Id,
    function_attr: Id,
    callee_module_attr: Id,
    caller_module_attr: Id,
    callsite_attr: Id,
    count_attr: Id,
}

/// One record per call arc. The module nodes, few and shared by tens of
/// thousands of arcs, are the database's, made in a first pass: a
/// compiler's run writes 35,000 to 60,000 arcs, in the order of their call
/// sites, so that an arc's modules are mostly the last arc's, which are
/// kept at hand. The caller nodes and the node of each (caller, callee)
/// are written here, with ids past the database's (the arcs are the
/// stream's last records), each made once by the map that finds it, from
/// the names as they are: the database's own look-up copied and hashed
/// each name, a third of the time of writing the arcs.
fn write_arcs<W: Write>(
    db: &mut MetadataDb,
    writer: &mut CaliWriter<W>,
    outcome: &Outcome,
    attrs: ArcAttributes,
) -> io::Result<()> {
    let mut callee_modules = NodesByName::new(attrs.callee_module_attr);
    let mut caller_modules = NodesByName::new(attrs.caller_module_attr);
    let modules: Vec<[Id; 2]> = outcome
        .arcs
        .records
        .iter()
        .map(|arc| {
            let callee = &outcome.functions.records[arc.callee];
            [callee_modules.node(db, &callee.module), caller_modules.node(db, outcome.arcs.caller_module(arc))]
        })
        .collect();
    let mut next = db.id_bound();
    let mut own_node = |writer: &mut CaliWriter<W>, attr: Id, name: &str, parent: Option<Id>| {
        writer.write_own_text_node(db, next, attr, name, parent)?;
        next += 1;
        Ok::<Id, io::Error>(next - 1)
    };
    // The callers by place, and by name on a miss: two callers of one
    // name share its node.
    let mut callers: ByPlace<Id> = ByPlace::default();
    let mut callers_by_name: FxHashMap<&str, Id> = FxHashMap::default();
    let mut functions: FxHashMap<(Id, usize), Id> = FxHashMap::default();
    functions.reserve(outcome.arcs.records.len());
    for (id, (arc, &[module, caller_module])) in outcome.arcs.records.iter().zip(&modules).enumerate() {
        let name = outcome.arcs.caller(arc);
        let caller = callers.get_or_try_make(name, || match callers_by_name.entry(name) {
            Entry::Occupied(caller) => Ok(*caller.get()),
            Entry::Vacant(vacant) => own_node(writer, attrs.caller_attr, name, None).map(|node| *vacant.insert(node)),
        })?;
        let function = match functions.entry((caller, arc.callee)) {
            Entry::Occupied(function) => *function.get(),
            Entry::Vacant(vacant) => {
                let callee = outcome.functions.records[arc.callee].name();
                *vacant.insert(own_node(writer, attrs.function_attr, callee, Some(caller))?)
            }
        };
        let values = [
            (attrs.callsite_attr, Variant::Addr(arc.callsite)),
            (attrs.count_attr, Variant::Uint(outcome.arcs.calls(id))),
        ];
        writer.write_ctx(db, &[function, module, caller_module], &values)?;
    }
    Ok(())
}

/// The call graph's records: one per node of its tree, and one per member
/// of a cycle, beneath the cycle's.
fn write_callgraph<W: Write>(db: &mut MetadataDb, writer: &mut CaliWriter<W>, graph: &CallGraph) -> io::Result<()> {
    let path_attr = db.create_attribute("dbi.callgraph", AttrType::String, Properties::NESTED, &[]);
    let module_attr = db.create_attribute("dbi.callgraph.module", AttrType::String, Properties::DEFAULT, &[]);
    let aggregatable = Properties::ASVALUE | Properties::AGGREGATABLE;
    let calls_attr = db.create_attribute("dbi.calls", AttrType::Uint, aggregatable, &[]);
    let inclusive_attr = db.create_attribute("dbi.calls.inclusive", AttrType::Double, aggregatable, &[]);
    let cycle_attr = db.create_attribute("dbi.cycle", AttrType::Uint, Properties::ASVALUE, &[]);
    // The tree's context nodes, made once per component.
    let mut placed: Vec<Option<Id>> = vec![None; graph.components.len()];
    for c in 0..graph.components.len() {
        let mut parent = None;
        for step in graph.path(c) {
            let node = *placed[step].get_or_insert_with(|| {
                db.get_or_create_node(path_attr, Variant::from(graph.label(step).as_str()), parent)
            });
            parent = Some(node);
        }
        let component = &graph.components[c];
        let mut record = Record::ctx();
        record.push_ref(parent.expect("a path ends at its component"));
        if let [only] = component.members[..] {
            record.push_ref(db.get_or_create_node(module_attr, Variant::from(&*graph.nodes[only].module), None));
        }
        record.push_imm(calls_attr, Variant::Uint(component.calls));
        record.push_imm(inclusive_attr, Variant::Double(component.inclusive));
        let Some(cycle) = component.cycle else {
            writer.write_record(db, &record)?;
            continue;
        };
        record.push_imm(cycle_attr, Variant::Uint(cycle as u64));
        writer.write_record(db, &record)?;
        for &n in &component.members {
            let node = &graph.nodes[n];
            let mut record = Record::ctx();
            record.push_ref(db.get_or_create_node(path_attr, Variant::from(node.name.as_str()), parent));
            record.push_ref(db.get_or_create_node(module_attr, Variant::from(&*node.module), None));
            record.push_imm(calls_attr, Variant::Uint(node.calls));
            record.push_imm(inclusive_attr, Variant::Double(node.inclusive));
            record.push_imm(cycle_attr, Variant::Uint(cycle as u64));
            writer.write_record(db, &record)?;
        }
    }
    Ok(())
}

/// The text report: per module, the functions called and their counts
/// (most called first), then how many functions kept a breakpoint and why.
pub fn text_report(outcome: &Outcome, collect: Collect) -> String {
    let mut by_module: BTreeMap<&str, Vec<(usize, &FunctionRecord)>> = BTreeMap::new();
    for (id, r) in outcome.functions.records.iter().enumerate() {
        by_module.entry(&r.module).or_default().push((id, r));
    }
    let mut out = String::new();
    for (module, mut functions) in by_module {
        let covered = functions.iter().filter(|(_, r)| r.covered).count();
        let _ = writeln!(out, "== {module}: {covered} of {} functions called", functions.len());
        if collect.fcount {
            let calls = |id: usize| outcome.functions.calls(id, &outcome.counters);
            functions.retain(|(_, r)| r.covered);
            functions.sort_by(|a, b| calls(b.0).cmp(&calls(a.0)).then_with(|| a.1.name().cmp(b.1.name())));
            for (id, r) in functions {
                let _ = writeln!(out, "{:>14} {}", calls(id), r.name());
            }
        } else {
            functions.sort_by(|a, b| a.1.name().cmp(b.1.name()));
            for (_, r) in functions.iter().filter(|(_, r)| r.covered) {
                let _ = writeln!(out, "{:>14} {}", "covered", r.name());
            }
        }
    }
    if collect.arcs {
        let _ = writeln!(out, "== call arcs: calls, caller -> callee (call site in the caller's file)");
        let mut arcs: Vec<(u64, usize)> =
            (0..outcome.arcs.records.len()).map(|id| (outcome.arcs.calls(id), id)).collect();
        arcs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (calls, id) in arcs {
            let arc = &outcome.arcs.records[id];
            let callee = outcome.functions.records[arc.callee].name();
            let _ = writeln!(out, "{calls:>14} {} -> {callee} ({:#x})", outcome.arcs.caller(arc), arc.callsite);
        }
    }
    if collect.callgraph {
        callgraph_report(&mut out, &CallGraph::build(&outcome.functions, &outcome.arcs, &outcome.counters));
    }
    if collect.sample {
        let total: u64 = outcome.stacks.values().sum();
        let _ = writeln!(out, "== {total} samples ({} lost), by call stack:", outcome.samples_lost);
        for (stack, count) in sorted_stacks(outcome) {
            let _ = writeln!(out, "{count:>14} {}", stack.join(";"));
        }
        if outcome.samples_truncated > 0 {
            let _ = writeln!(
                out,
                "== {} samples with the call chain cut at a return address outside the program's code \
                 (code without unwind entries or frame pointers)",
                outcome.samples_truncated
            );
        }
    }
    let mut kept: BTreeMap<String, usize> = BTreeMap::new();
    for r in &outcome.functions.records {
        if matches!(r.mode, Mode::Breakpoint(_) | Mode::CallSites(_) | Mode::Uncounted(_)) {
            *kept.entry(instrumentation(r).into_owned()).or_default() += 1;
        }
    }
    for (why, n) in kept {
        let _ = writeln!(out, "== {n} functions: {why}");
    }
    let _ = writeln!(out, "== {} breakpoint traps", outcome.traps);
    out
}

/// The call graph in gprof's layout: an entry per function (and per
/// cycle), largest inclusive figure first; above its line its callers,
/// with the calls along each arc out of its calls, below it its callees,
/// with the calls along each arc out of the callee's calls.
fn callgraph_report(out: &mut String, graph: &CallGraph) {
    let _ = writeln!(
        out,
        "== call graph: inclusive = a function's calls and, shared out along the arcs, the calls beneath it;\n\
         == above a function its callers, below it its callees, with calls along the arc / calls in all"
    );
    let _ = writeln!(out, "{:>8} {:>16} {:>12}  function", "index", "inclusive", "calls");
    let mut order: Vec<usize> = (0..graph.components.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&graph.components[a], &graph.components[b]);
        y.inclusive.total_cmp(&x.inclusive).then_with(|| graph.label(a).cmp(&graph.label(b)))
    });
    // Index numbers: a cycle's, then its members'.
    let mut node_index = vec![0; graph.nodes.len()];
    let mut cycle_index = vec![0; graph.components.len()];
    let mut next = 1;
    for &c in &order {
        if graph.components[c].cycle.is_some() {
            cycle_index[c] = next;
            next += 1;
        }
        for &n in &graph.components[c].members {
            node_index[n] = next;
            next += 1;
        }
    }
    let name = |n: usize| {
        let node = &graph.nodes[n];
        match graph.components[node.component].cycle {
            Some(cycle) => format!("{} <cycle {cycle}> [{}]", node.name, node_index[n]),
            None => format!("{} [{}]", node.name, node_index[n]),
        }
    };
    let arc_line = |out: &mut String, calls: String, who: String| {
        let _ = writeln!(out, "{:>8} {:>16} {calls:>12}      {who}", "", "");
    };
    for &c in &order {
        let component = &graph.components[c];
        if let Some(cycle) = component.cycle {
            for &n in &component.members {
                for e in graph.callers(n).filter(|e| graph.nodes[e.caller].component != c) {
                    arc_line(out, format!("{}/{}", e.calls, component.entries), name(e.caller));
                }
            }
            let index = format!("[{}]", cycle_index[c]);
            let _ = writeln!(
                out,
                "{index:>8} {:>16.2} {:>12}  <cycle {cycle} as a whole> {index}",
                component.inclusive, component.calls
            );
            for &n in &component.members {
                arc_line(out, graph.nodes[n].calls.to_string(), name(n));
            }
            let _ = writeln!(out);
        }
        for &n in &component.members {
            let node = &graph.nodes[n];
            for e in graph.callers(n) {
                arc_line(out, format!("{}/{}", e.calls, node.calls), name(e.caller));
            }
            let index = format!("[{}]", node_index[n]);
            let _ = writeln!(out, "{index:>8} {:>16.2} {:>12}  {}", node.inclusive, node.calls, name(n));
            for e in graph.callees(n) {
                arc_line(out, format!("{}/{}", e.calls, graph.nodes[e.callee].calls), name(e.callee));
            }
            let _ = writeln!(out);
        }
    }
}

/// Writes the flow-data file (HP Caliper's `pbo_out`, for profile-based
/// optimisation): a header line, then one tab-separated line per called
/// function and per arc, counts first:
///
/// ```text
/// # cali-run flow data 1
/// F <calls> <module> <entry address in the module file, hex> <function>
/// A <calls> <caller module> <call site, hex> <caller> <callee module> <callee entry, hex> <callee>
/// ```
pub fn write_flow_data(mut out: impl Write, outcome: &Outcome) -> io::Result<()> {
    writeln!(out, "# cali-run flow data 1")?;
    for (id, r) in outcome.functions.records.iter().enumerate().filter(|(_, r)| r.covered) {
        let calls = outcome.functions.calls(id, &outcome.counters);
        writeln!(out, "F\t{calls}\t{}\t{:#x}\t{}", r.module, r.address(), r.name())?;
    }
    for (id, arc) in outcome.arcs.records.iter().enumerate() {
        let callee = &outcome.functions.records[arc.callee];
        let calls = outcome.arcs.calls(id);
        writeln!(
            out,
            "A\t{calls}\t{}\t{:#x}\t{}\t{}\t{:#x}\t{}",
            outcome.arcs.caller_module(arc),
            arc.callsite,
            outcome.arcs.caller(arc),
            callee.module,
            callee.address(),
            callee.name()
        )?;
    }
    out.flush()
}

/// The sampled stacks, most seen first (then by their frames).
pub fn sorted_stacks(outcome: &Outcome) -> Vec<(&Vec<String>, u64)> {
    let mut stacks: Vec<(&Vec<String>, u64)> = outcome.stacks.iter().map(|(s, n)| (s, *n)).collect();
    stacks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    stacks
}
