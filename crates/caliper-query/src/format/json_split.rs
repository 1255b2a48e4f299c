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

use super::json::{bare_value, quote};
use super::{RecordFormatter, fields};
use crate::spec::{QuerySpec, Selection};
use caliper_data::attribute::ALIAS_ATTR_NAME;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, MetadataDb, Record, RecordKind, Variant};
use std::io::{self, Write};

/// Collects the records and writes the split layout at the end.
///
/// Columns: the SELECT list; else, with GROUP BY, the key attributes and
/// the aggregation results; else every non-hidden, non-global attribute
/// the records have. Single-attribute columns come first, sorted by
/// attribute name and titled with their alias; one `path` column for the
/// region hierarchy comes last. Value (as-value) columns hold the value,
/// the others an index into `nodes`, where every distinct path prefix is
/// a node.
pub struct JsonSplitFormatter {
    out: Box<dyn Write>,
    spec: QuerySpec,
    records: Vec<Record>,
}

/// A column of the output.
struct Column {
    /// The attribute, `None` for the path column.
    attr: Option<Id>,
    title: String,
    is_value: bool,
}

/// The `nodes` list: every distinct (column, parent, label) in creation
/// order.
#[derive(Default)]
struct Nodes {
    list: Vec<(String, String, Option<usize>)>,
    index: FxHashMap<(String, Option<usize>, String), usize>,
}

impl Nodes {
    /// The node index of a path of labels in a column (its last prefix).
    fn path(&mut self, column: &str, labels: &[String]) -> Option<usize> {
        let mut parent = None;
        for label in labels {
            let key = (column.to_string(), parent, label.clone());
            let next = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    self.list.push((label.clone(), column.to_string(), parent));
                    self.index.insert(key, self.list.len() - 1);
                    self.list.len() - 1
                }
            };
            parent = Some(next);
        }
        parent
    }
}

impl JsonSplitFormatter {
    /// A formatter for the query's selection.
    pub fn new(spec: &QuerySpec, out: Box<dyn Write>) -> JsonSplitFormatter {
        JsonSplitFormatter { out, spec: spec.clone(), records: Vec::new() }
    }

    fn columns(&self, db: &MetadataDb) -> Vec<Column> {
        let mut attrs: Vec<Id> = Vec::new();
        let mut path = false;
        let add = |attrs: &mut Vec<Id>, id: Id| {
            if !attrs.contains(&id) {
                attrs.push(id);
            }
        };
        let by_name = |name: &str| db.attribute_by_name(name).map(|a| a.id());
        // A nested attribute named (`group by loop`) is shown in the path
        // column, as `path` itself is.
        let names_nested =
            |names: &[String]| names.iter().any(|n| db.attribute_by_name(n).is_some_and(|a| a.is_nested()));
        match (&self.spec.select, &self.spec.group_by) {
            (Selection::List(names), _) => {
                path = self.spec.select_path || names_nested(names);
                for id in names.iter().filter_map(|n| by_name(n)) {
                    add(&mut attrs, id);
                }
            }
            (_, Selection::List(keys)) if !self.spec.aggregate.is_empty() => {
                path = self.spec.group_by_path || names_nested(keys);
                let results = self.spec.aggregate.iter().map(|op| op.result_name());
                for id in keys.iter().cloned().chain(results).filter_map(|n| by_name(&n)) {
                    add(&mut attrs, id);
                }
            }
            _ => {
                for record in &self.records {
                    for field in fields(db, record) {
                        let Some(a) = db.attribute(field.attr) else { continue };
                        if a.is_hidden() || a.is_global() {
                            continue;
                        }
                        if a.is_nested() {
                            path = true;
                        } else {
                            add(&mut attrs, field.attr);
                        }
                    }
                }
            }
        }
        let mut columns: Vec<Column> = attrs
            .into_iter()
            .filter_map(|id| db.attribute(id))
            .filter(|a| !a.is_nested())
            .map(|a| {
                let meta_alias = db.metadata_by_name(a, ALIAS_ATTR_NAME).map(|v| v.to_string());
                let title =
                    self.spec.alias(a.name()).map(str::to_string).or(meta_alias).unwrap_or(a.name().to_string());
                Column { attr: Some(a.id()), title, is_value: a.is_asvalue() }
            })
            .collect();
        columns.sort_by(|a, b| {
            let name = |c: &Column| c.attr.and_then(|id| db.attribute(id)).map(|a| a.name().to_string());
            name(a).cmp(&name(b))
        });
        if path {
            columns.push(Column { attr: None, title: "path".to_string(), is_value: false });
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
}

/// The values of a record's nested attributes, root first (the path).
fn path_labels(db: &MetadataDb, record: &Record) -> Vec<String> {
    let mut labels = Vec::new();
    let mut nodes = Vec::new();
    for entry in &record.entries {
        let Entry::Reference(node) = entry else { continue };
        nodes.clear();
        db.path_to(*node, &mut nodes);
        for &id in &nodes {
            let n = db.node(id).expect("path node");
            if db.attribute(n.attribute).is_some_and(|a| a.is_nested()) {
                labels.push(n.value.to_string());
            }
        }
    }
    labels
}

/// The tree values of one attribute in a record, root first.
fn tree_values(db: &MetadataDb, record: &Record, attr: Id) -> Vec<String> {
    let mut values = Vec::new();
    let mut nodes = Vec::new();
    for entry in &record.entries {
        let Entry::Reference(node) = entry else { continue };
        nodes.clear();
        db.path_to(*node, &mut nodes);
        values.extend(
            nodes
                .iter()
                .map(|&id| db.node(id).expect("path node"))
                .filter(|n| n.attribute == attr)
                .map(|n| n.value.to_string()),
        );
    }
    values
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
        let mut nodes = Nodes::default();
        let mut rows = Vec::new();
        for record in &self.records {
            let cells: Vec<String> = columns
                .iter()
                .map(|col| match col.attr {
                    None => nodes.path(&col.title, &path_labels(db, record)).map_or("null".into(), |i| i.to_string()),
                    Some(attr) if col.is_value => {
                        let value = record.immediates().find(|(a, _)| *a == attr).map(|(_, v)| v.clone());
                        value.map_or_else(|| "null".to_string(), |v| value_cell(&v))
                    }
                    Some(attr) => {
                        let labels = tree_values(db, record, attr);
                        nodes.path(&col.title, &labels).map_or("null".into(), |i| i.to_string())
                    }
                })
                .collect();
            rows.push(format!("    [ {} ]", cells.join(", ")));
        }
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
