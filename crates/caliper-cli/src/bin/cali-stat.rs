//! `cali-stat`: statistics about `.cali` streams: how many records and
//! elements they hold, how big they are, and (with `-r`) how much each
//! attribute's context-tree nodes are reused.

use caliper_cli::args::{self, OptSpec, Takes};
use caliper_data::cali::{CaliReader, open_input};
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{Entry, MetadataDb, RecordKind, Variant};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

const OPTIONS: &[OptSpec] = &[
    OptSpec {
        long: "reuse-statistics",
        short: Some('r'),
        takes: Takes::Nothing,
        help: "Print how often each attribute's nodes and values are used",
    },
    OptSpec {
        long: "output",
        short: Some('o'),
        takes: Takes::Value("FILE"),
        help: "Write the statistics to FILE instead of standard output",
    },
    OptSpec { long: "help", short: Some('h'), takes: Takes::Nothing, help: "Print this help and exit" },
    OptSpec { long: "version", short: Some('V'), takes: Takes::Nothing, help: "Print the version and exit" },
];

/// Exit status for an unusable command line (the reference's -1) and for an
/// output file that cannot be opened (its -2).
const EXIT_USAGE: u8 = 255;
const EXIT_OUTPUT: u8 = 254;

fn usage() -> String {
    format!(
        "Usage: cali-stat [OPTION]... [FILE]...\n\
         Print statistics about Caliper .cali streams: numbers of records and\n\
         elements, estimated data size, elements per snapshot and attribute use.\n\
         With no FILE, or when FILE is -, read standard input.\n\nOptions:\n{}",
        args::option_table(OPTIONS)
    )
}

/// Counts gathered while reading.
#[derive(Default)]
struct Stats {
    nodes: u64,
    snapshots: u64,
    globals: u64,
    tree_refs: u64,
    immediates: u64,
    snapshot_bytes: u64,
    elements_min: Option<u64>,
    elements_max: u64,
    /// (attribute, value) pairs after expanding references / from immediates.
    expanded_from_refs: u64,
    expanded_from_imms: u64,
    /// Per attribute: uses in snapshots, and the distinct values used.
    uses: FxHashMap<Id, (u64, HashSet<Variant>)>,
}

/// Estimated size of a value: strings by length, everything else 8 bytes.
fn value_size(v: &Variant) -> u64 {
    match v {
        Variant::Str(s) => s.len() as u64,
        Variant::Usr(b) => b.len() as u64,
        _ => 8,
    }
}

fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, f64); 3] = [("GiB", 1073741824.0), ("MiB", 1048576.0), ("KiB", 1024.0)];
    for (unit, size) in UNITS {
        if bytes as f64 >= size {
            return format!("{:.2} {unit}", bytes as f64 / size);
        }
    }
    format!("{bytes} B")
}

impl Stats {
    fn add(&mut self, db: &MetadataDb, record: &caliper_data::Record, reuse: bool) {
        match record.kind {
            RecordKind::Globals => {
                self.globals += 1;
                return;
            }
            RecordKind::Ctx => self.snapshots += 1,
        }
        let mut elements = 0;
        let mut path = Vec::new();
        for entry in &record.entries {
            match entry {
                Entry::Reference(node) => {
                    self.tree_refs += 1;
                    elements += 1;
                    self.snapshot_bytes += 8;
                    path.clear();
                    db.path_to(*node, &mut path);
                    self.expanded_from_refs += path.len() as u64;
                    if reuse {
                        for &id in &path {
                            let n = db.node(id).expect("path node");
                            let slot = self.uses.entry(n.attribute).or_default();
                            slot.0 += 1;
                            slot.1.insert(n.value.clone());
                        }
                    }
                }
                Entry::Immediate(attr, value) => {
                    self.immediates += 1;
                    elements += 2;
                    self.snapshot_bytes += 8 + value_size(value);
                    self.expanded_from_imms += 1;
                    if reuse {
                        let slot = self.uses.entry(*attr).or_default();
                        slot.0 += 1;
                        slot.1.insert(value.clone());
                    }
                }
            }
        }
        self.elements_min = Some(self.elements_min.map_or(elements, |m| m.min(elements)));
        self.elements_max = self.elements_max.max(elements);
    }

    fn report(&self, db: &MetadataDb, reuse: bool) -> String {
        let node_bytes: u64 = (0..db.id_bound())
            .filter(|&id| db.is_from_stream(id))
            .filter_map(|id| db.node(id))
            .map(|n| 24 + value_size(&n.value))
            .sum();
        let row = |label: &str, value: String| format!("  {label:<12}{value:>14}\n");
        let mut out = String::new();
        out.push_str("Number of records\n");
        out.push_str(&row("Total", (self.nodes + self.snapshots + self.globals).to_string()));
        out.push_str(&row("Nodes", self.nodes.to_string()));
        out.push_str(&row("Snapshots", self.snapshots.to_string()));
        out.push_str(&row("Globals", self.globals.to_string()));
        out.push_str("Number of elements\n");
        let node_elements = 4 * self.nodes;
        let direct = 2 * self.immediates;
        out.push_str(&row("Total", (node_elements + self.tree_refs + direct).to_string()));
        out.push_str(&row("Nodes", node_elements.to_string()));
        out.push_str(&row("Tree refs", self.tree_refs.to_string()));
        out.push_str(&row("Direct val", direct.to_string()));
        out.push_str("Data size (est.)\n");
        out.push_str(&row("Total", human_size(node_bytes + self.snapshot_bytes)));
        out.push_str(&row("Nodes", human_size(node_bytes)));
        out.push_str(&row("Snapshots", human_size(self.snapshot_bytes)));
        if self.snapshots > 0 {
            let n = self.snapshots as f64;
            out.push_str("Elements/snapshot\n");
            out.push_str(&row("Min", self.elements_min.unwrap_or(0).to_string()));
            out.push_str(&row("Max", self.elements_max.to_string()));
            out.push_str(&row("Average", format!("{:.2}", (self.tree_refs + direct) as f64 / n)));
            let total = self.expanded_from_refs + self.expanded_from_imms;
            out.push_str("Attributes referenced in snapshot records\n");
            out.push_str(&row("Total", total.to_string()));
            out.push_str(&row("Average", format!("{:.2}", total as f64 / n)));
            out.push_str(&row("Refs", self.expanded_from_refs.to_string()));
            out.push_str(&row("Elem", self.expanded_from_imms.to_string()));
        }
        if reuse {
            out.push_str(&self.reuse_table(db));
        }
        out
    }

    /// Per attribute: context-tree nodes, distinct values, uses in
    /// snapshots, and uses per value and per node.
    fn reuse_table(&self, db: &MetadataDb) -> String {
        let mut nodes_per_attr: FxHashMap<Id, u64> = FxHashMap::default();
        for id in (0..db.id_bound()).filter(|&id| db.is_from_stream(id)) {
            if let Some(n) = db.node(id) {
                *nodes_per_attr.entry(n.attribute).or_default() += 1;
            }
        }
        let mut rows: Vec<(String, u64, u64, u64)> = self
            .uses
            .iter()
            .filter_map(|(attr, (uses, values))| {
                let name = db.attribute(*attr)?.name().to_string();
                Some((name, nodes_per_attr.get(attr).copied().unwrap_or(0), values.len() as u64, *uses))
            })
            .collect();
        rows.sort();
        let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(9).max(9);
        let mut out = String::from("Reuse statistics:\n");
        let _ = writeln!(
            out,
            "{:<width$} {:>8} {:>8} {:>10} {:>10} {:>10}",
            "Attribute", "#nodes", "#elem", "#uses", "#uses/elem", "#uses/node"
        );
        for (name, nodes, elems, uses) in rows {
            let per = |d: u64| if d == 0 { "-".to_string() } else { format!("{:.2}", uses as f64 / d as f64) };
            let _ =
                writeln!(out, "{name:<width$} {nodes:>8} {elems:>8} {uses:>10} {:>10} {:>10}", per(elems), per(nodes));
        }
        out
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args::parse(OPTIONS, &argv) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cali-stat: error: {e}\n\n{}", usage());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if parsed.is_set("help") {
        eprint!("{}", usage());
        return ExitCode::SUCCESS;
    }
    if parsed.is_set("version") {
        // On standard error, as the reference's cali-query prints it.
        eprintln!("{}", caliper_cli::version_line("cali-stat"));
        return ExitCode::SUCCESS;
    }
    let mut out: Box<dyn Write> = match parsed.value("output") {
        Some(path) if path != "-" => match File::create(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("cali-stat: error: could not open output file {path}: {e}");
                return ExitCode::from(EXIT_OUTPUT);
            }
        },
        _ => Box::new(io::stdout().lock()),
    };
    let reuse = parsed.is_set("reuse-statistics");
    let mut inputs = parsed.positional.clone();
    if inputs.is_empty() {
        inputs.push("-".to_string());
    }
    let mut db = MetadataDb::new();
    let mut stats = Stats::default();
    // A bad input ends the reading; the statistics of what was read before
    // it are still printed, then the error.
    let mut failure = None;
    for input in &inputs {
        let result = open_input(Path::new(input)).and_then(|(name, reader)| {
            let mut cali = CaliReader::new(&mut db, name);
            let result = cali.read(reader, |db, r| stats.add(db, r, reuse));
            stats.nodes += cali.read_so_far().nodes;
            if let Some(warning) = cali.warning() {
                eprintln!("cali-stat: warning: {warning}");
            }
            result
        });
        if let Err(e) = result {
            failure = Some(e);
            break;
        }
    }
    if let Err(e) = out.write_all(stats.report(&db, reuse).as_bytes()).and_then(|()| out.flush()) {
        eprintln!("cali-stat: error: cannot write output: {e}");
        return ExitCode::FAILURE;
    }
    match failure {
        Some(e) => {
            eprintln!("cali-stat: error: {e}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}
