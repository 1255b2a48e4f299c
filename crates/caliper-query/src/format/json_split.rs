//! `json-split`: the split JSON layout Hatchet reads.
//!
//! ```text
//! {
//!   "data": [ [ <cell>, ... ], ... ],
//!   "columns": [ "<title>", ... ],
//!   "column_metadata": [ { "is_value": <bool>, "<meta>": "<value>", ... }, ... ],
//!   "nodes": [ { "label": "<value>", "column": "<title>", "parent": <index> }, ... ],
//!   "<global>": "<value>", ...
//! }
//! ```

use super::RecordFormatter;
use super::json::{bare_value, quote};
use super::selection::is_column;
use crate::spec::{QuerySpec, Selection};
use caliper_data::attribute::ALIAS_ATTR_NAME;
use caliper_data::hash::FxHashMap;
use caliper_data::node::{Id, PROP_ATTR_ID, TYPE_ATTR_ID};
use caliper_data::{AttrType, Entry, MetadataDb, Record, RecordKind, Variant};
use std::io::{self, Write};

/// Collects the records and writes the split layout at the end, as the
/// reference lays it out.
///
/// Columns: the SELECT list; else, with GROUP BY, the key attributes and
/// the aggregation results; else every attribute of the database that is
/// neither hidden nor global (the metadata ones such as `attribute.unit`
/// and `cali.attribute.name` too). Single-attribute columns come first,
/// sorted by attribute name and titled with their alias; one `path` column
/// for the nested attributes comes last.
///
/// Value (as-value) columns hold a record's immediate value. The others
/// hold an index into `nodes`: the values of the column's attributes met
/// while walking, from each entry of the record up to the root, the
/// entry's node (for an immediate entry, its attribute's node, so the
/// attributes' own metadata shows), read root first as a path. A node is
/// a (parent, label) pair: a label seen first in another column is the
/// same node, as in the reference.
pub struct JsonSplitFormatter {
    out: Box<dyn Write>,
    spec: QuerySpec,
    records: Vec<Record>,
}

/// A column of the output.
struct Column {
    /// The attributes it shows: one, or the nested ones for `path`.
    attrs: Vec<Id>,
    /// The attribute whose metadata describes the column; `None` for
    /// `path`.
    attr: Option<Id>,
    title: String,
    is_value: bool,
}

/// The `nodes` list: every distinct (parent, label) in creation order,
/// with the title of the column that created it.
#[derive(Default)]
struct Nodes {
    list: Vec<(String, String, Option<usize>)>,
    index: FxHashMap<(Option<usize>, String), usize>,
}

impl Nodes {
    /// The node index of a path of labels (its last prefix), created in
    /// `column` where new.
    fn path(&mut self, column: &str, labels: impl Iterator<Item = String>) -> Option<usize> {
        let mut parent = None;
        for label in labels {
            let next = match self.index.get(&(parent, label.clone())) {
                Some(&i) => i,
                None => {
                    self.list.push((label.clone(), column.to_string(), parent));
                    self.index.insert((parent, label), self.list.len() - 1);
                    self.list.len() - 1
                }
            };
            parent = Some(next);
        }
        parent
    }
}

/// Whether the select-all layout leaves `attr` out. Besides hidden and
/// global attributes, the reference's database does not list the two
/// bootstrap attributes that hold an attribute's type and properties
/// (their values are in each column's metadata).
fn left_out_of_all(attr: &caliper_data::Attribute) -> bool {
    attr.is_hidden() || attr.is_global() || attr.id() == TYPE_ATTR_ID || attr.id() == PROP_ATTR_ID
}

impl JsonSplitFormatter {
    /// A formatter for the query's selection.
    pub fn new(spec: &QuerySpec, out: Box<dyn Write>) -> JsonSplitFormatter {
        JsonSplitFormatter { out, spec: spec.clone(), records: Vec::new() }
    }

    fn columns(&self, db: &MetadataDb) -> Vec<Column> {
        let all = db.attributes();
        let named = |names: &[String], a: &caliper_data::Attribute| names.iter().any(|n| n == a.name());
        let (shown, path): (Vec<&caliper_data::Attribute>, bool) = match (&self.spec.select, &self.spec.group_by) {
            (Selection::List(items), _) => {
                let shown: Vec<_> = all.iter().copied().filter(|a| is_column(db, items, a)).collect();
                // A nested attribute named (`select loop`) is shown in the
                // path column, as `path` itself is.
                (shown.clone(), self.spec.select_path || shown.iter().any(|a| a.is_nested()))
            }
            (_, Selection::List(keys)) if !self.spec.aggregate.is_empty() => {
                let results: Vec<String> = self.spec.aggregate.iter().map(|op| op.result_name()).collect();
                let shown: Vec<_> = all.iter().copied().filter(|a| named(keys, a) || named(&results, a)).collect();
                (shown.clone(), self.spec.group_by_path || shown.iter().any(|a| a.is_nested()))
            }
            _ => {
                let shown: Vec<_> = all.iter().copied().filter(|a| !left_out_of_all(a)).collect();
                (shown.clone(), shown.iter().any(|a| a.is_nested()))
            }
        };
        let mut single: Vec<&caliper_data::Attribute> = shown.into_iter().filter(|a| !a.is_nested()).collect();
        single.sort_by(|a, b| a.name().cmp(b.name()));
        let mut columns: Vec<Column> = single
            .into_iter()
            .map(|a| {
                let meta_alias = db.metadata_by_name(a, ALIAS_ATTR_NAME).map(|v| v.to_string());
                let title =
                    self.spec.alias(a.name()).map(str::to_string).or(meta_alias).unwrap_or(a.name().to_string());
                Column { attrs: vec![a.id()], attr: Some(a.id()), title, is_value: a.is_asvalue() }
            })
            .collect();
        if path {
            let nested = all.iter().filter(|a| a.is_nested()).map(|a| a.id()).collect();
            columns.push(Column { attrs: nested, attr: None, title: "path".to_string(), is_value: false });
        }
        columns
    }

    /// The metadata object of a column.
    fn column_metadata(db: &MetadataDb, column: &Column) -> String {
        let mut parts = vec![format!("\"is_value\": {}", column.is_value)];
        if let Some(a) = column.attr.and_then(|id| db.attribute(id)) {
            for (meta, value) in a.metadata() {
                let Some(m) = db.attribute(*meta) else { continue };
                if m.is_hidden() {
                    continue;
                }
                parts.push(format!("{}: {}", quote(m.name()), quote(&value.to_string())));
            }
        }
        format!("{{ {} }}", parts.join(", "))
    }

    /// The cells of one record's row.
    fn row(
        db: &MetadataDb,
        columns: &[Column],
        by_attr: &FxHashMap<Id, usize>,
        nodes: &mut Nodes,
        record: &Record,
    ) -> String {
        // Per tree column, the labels met walking up from each entry (the
        // references first, as the reference's reader orders them).
        let mut labels: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
        let starts = record.refs().chain(record.immediates().map(|(attr, _)| attr));
        for start in starts {
            let mut next = Some(start);
            while let Some(n) = next.and_then(|id| db.node(id)) {
                if let Some(&c) = by_attr.get(&n.attribute) {
                    labels[c].push(n.value.to_string());
                }
                next = n.parent;
            }
        }
        let cells: Vec<String> = columns
            .iter()
            .zip(labels)
            .map(|(col, labels)| {
                if col.is_value {
                    let value = record.immediates().find(|(a, _)| col.attrs.contains(a)).map(|(_, v)| v);
                    value.map_or_else(|| "null".to_string(), value_cell)
                } else {
                    nodes.path(&col.title, labels.into_iter().rev()).map_or("null".into(), |i| i.to_string())
                }
            })
            .collect();
        format!("    [ {} ]", cells.join(", "))
    }
}

/// A value cell: numbers bare (unless JSON has no such number), everything
/// else quoted.
fn value_cell(value: &Variant) -> String {
    match value.attr_type() {
        AttrType::Int | AttrType::Uint | AttrType::Double | AttrType::Bool => bare_value(&value.to_string()),
        _ => quote(&value.to_string()),
    }
}

impl RecordFormatter for JsonSplitFormatter {
    fn process(&mut self, _db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind == RecordKind::Ctx {
            self.records.push(record.clone());
        }
        Ok(())
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        let columns = self.columns(db);
        let by_attr: FxHashMap<Id, usize> = columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_value)
            .flat_map(|(i, c)| c.attrs.iter().map(move |&a| (a, i)))
            .collect();
        let mut nodes = Nodes::default();
        let rows: Vec<String> = self.records.iter().map(|r| Self::row(db, &columns, &by_attr, &mut nodes, r)).collect();
        let mut text = String::from("{\n  \"data\": [\n");
        text.push_str(&rows.join(",\n"));
        text.push_str("\n  ],\n");
        let titles: Vec<String> = columns.iter().map(|c| quote(&c.title)).collect();
        text.push_str(&format!("  \"columns\": [ {} ],\n", titles.join(", ")));
        let meta: Vec<String> = columns.iter().map(|c| Self::column_metadata(db, c)).collect();
        text.push_str(&format!("  \"column_metadata\": [ {}  ],\n", meta.join(", ")));
        let node_text: Vec<String> = nodes
            .list
            .iter()
            .map(|(label, column, parent)| match parent {
                Some(p) => format!("{{ \"label\": {}, \"column\": {}, \"parent\": {p} }}", quote(label), quote(column)),
                None => format!("{{ \"label\": {}, \"column\": {} }}", quote(label), quote(column)),
            })
            .collect();
        text.push_str(&format!("  \"nodes\": [ {} ]", node_text.join(", ")));
        // Globals: per reference entry innermost first, then immediates.
        let globals = db.globals();
        let mut members: Vec<String> = Vec::new();
        for entry in &globals.entries {
            match entry {
                Entry::Reference(node) => {
                    let mut next = Some(*node);
                    while let Some(n) = next.and_then(|id| db.node(id)) {
                        if let Some(a) = db.attribute(n.attribute) {
                            members.push(format!("  {}: {}", quote(a.name()), quote(&n.value.to_string())));
                        }
                        next = n.parent;
                    }
                }
                Entry::Immediate(attr, value) => {
                    if let Some(a) = db.attribute(*attr) {
                        members.push(format!("  {}: {}", quote(a.name()), quote(&value.to_string())));
                    }
                }
            }
        }
        for member in members {
            text.push_str(",\n");
            text.push_str(&member);
        }
        text.push_str("\n}\n");
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}
