//! `tree`: records arranged by their region path, as an indented table.

use super::{FormatError, RecordFormatter, clamp, display_name, fields, parse_width, print_globals, push_cell};
use crate::spec::{FormatSpec, QuerySpec, Selection, SortOrder};
use caliper_data::node::Id;
use caliper_data::{Entry, MetadataDb, Record, RecordKind, Variant};
use std::cmp::Ordering;
use std::io::{self, Write};

/// Default cap on the path column's width.
const DEFAULT_PATH_WIDTH: usize = 48;
/// Default cap on the other columns' widths.
const DEFAULT_COLUMN_WIDTH: usize = 60;

/// Writes records as a tree over their path (the NESTED attributes, or the
/// `path-attributes`): one line per tree node, indented two spaces per
/// level, with the values of the records that end at that node. Records
/// without a path attribute are left out. A node with several records gets
/// one extra ` |-` line per further record.
pub struct TreeFormatter {
    out: Box<dyn Write>,
    spec: QuerySpec,
    path_names: Option<Vec<String>>,
    path_width: Option<usize>,
    column_width: Option<usize>,
    print_globals: bool,
    nodes: Vec<TreeNode>,
    roots: Vec<usize>,
    /// Columns seen so far (attribute id, name), for the default selection.
    seen: Vec<(Id, String)>,
}

struct TreeNode {
    key: (Id, Variant),
    label: String,
    children: Vec<usize>,
    rows: Vec<Row>,
}

struct Row {
    cells: Vec<(String, String)>,
    sort: Vec<Option<Variant>>,
}

impl TreeFormatter {
    /// A tree for the query and its FORMAT arguments.
    pub fn new(spec: &QuerySpec, format: &FormatSpec, out: Box<dyn Write>) -> Result<TreeFormatter, FormatError> {
        let path_names = format
            .arg("path-attributes")
            .map(|list| list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
        let width = parse_width(format, "tree")?;
        Ok(TreeFormatter {
            out,
            spec: spec.clone(),
            path_names,
            path_width: width.map_or(Some(DEFAULT_PATH_WIDTH), |w| w),
            column_width: width.map_or(Some(DEFAULT_COLUMN_WIDTH), |w| w),
            print_globals: format.flag("print-globals"),
            nodes: Vec::new(),
            roots: Vec::new(),
            seen: Vec::new(),
        })
    }

    fn is_path_attribute(&self, db: &MetadataDb, attr: Id) -> bool {
        let Some(a) = db.attribute(attr) else { return false };
        match &self.path_names {
            Some(names) => {
                names.iter().any(|n| n == a.name() || ((n == "path" || n == "prop:nested") && a.is_nested()))
            }
            None => a.is_nested(),
        }
    }

    fn child(&mut self, parent: Option<usize>, attr: Id, value: &Variant) -> usize {
        let siblings = match parent {
            Some(p) => &self.nodes[p].children,
            None => &self.roots,
        };
        if let Some(&i) = siblings.iter().find(|&&i| self.nodes[i].key.0 == attr && self.nodes[i].key.1 == *value) {
            return i;
        }
        self.nodes.push(TreeNode {
            key: (attr, value.clone()),
            label: value.to_string(),
            children: Vec::new(),
            rows: Vec::new(),
        });
        let i = self.nodes.len() - 1;
        match parent {
            Some(p) => self.nodes[p].children.push(i),
            None => self.roots.push(i),
        }
        i
    }

    /// The columns to print: (attribute name, header, numeric).
    fn columns(&self, db: &MetadataDb) -> Vec<(String, String, bool)> {
        let names: Vec<String> = match &self.spec.select {
            Selection::List(list) => {
                for name in list {
                    if db.attribute_by_name(name).is_none() {
                        eprintln!("cali-query: TreeFormatter: Attribute \"{name}\" not found.");
                    }
                }
                list.iter().filter(|n| db.attribute_by_name(n).is_some()).cloned().collect()
            }
            Selection::All => self.seen.iter().map(|(_, n)| n.clone()).collect(),
            _ => self
                .seen
                .iter()
                .filter(|(id, _)| db.attribute(*id).is_some_and(|a| !a.is_hidden() && !a.is_global()))
                .map(|(_, n)| n.clone())
                .collect(),
        };
        names
            .into_iter()
            .map(|name| {
                let numeric = db
                    .attribute_by_name(&name)
                    .is_some_and(|a| a.attr_type().is_numeric() || a.attr_type() == caliper_data::AttrType::Addr);
                let header = display_name(&self.spec, &name).to_string();
                (name, header, numeric)
            })
            .collect()
    }

    /// Sorts children per ORDER BY key in sequence: ascending by the
    /// smallest value in each subtree, descending by the largest.
    fn sort(&mut self) {
        for k in 0..self.spec.sort.len() {
            let descending = self.spec.sort[k].order == SortOrder::Descending;
            let n = self.nodes.len();
            let mut extreme: Vec<Option<Variant>> = vec![None; n];
            // Children have larger indices than their parents.
            for i in (0..n).rev() {
                let mut best: Option<Variant> = None;
                let candidates = self.nodes[i]
                    .rows
                    .iter()
                    .filter_map(|r| r.sort[k].clone())
                    .chain(self.nodes[i].children.iter().filter_map(|&c| extreme[c].clone()));
                for v in candidates {
                    best = Some(match best {
                        None => v,
                        Some(b) => {
                            let ord = v.numeric_cmp(&b).unwrap_or_else(|| v.cmp(&b));
                            let better = if descending { ord == Ordering::Greater } else { ord == Ordering::Less };
                            if better { v } else { b }
                        }
                    });
                }
                extreme[i] = best;
            }
            let cmp = |a: &usize, b: &usize| {
                let ord = match (&extreme[*a], &extreme[*b]) {
                    (Some(x), Some(y)) => x.numeric_cmp(y).unwrap_or_else(|| x.cmp(y)),
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                };
                if descending { ord.reverse() } else { ord }
            };
            self.roots.sort_by(cmp);
            for i in 0..n {
                let mut children = std::mem::take(&mut self.nodes[i].children);
                children.sort_by(cmp);
                self.nodes[i].children = children;
            }
        }
    }
}

impl RecordFormatter for TreeFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        let mut node: Option<usize> = None;
        let mut path = Vec::new();
        for entry in &record.entries {
            let Entry::Reference(r) = entry else { continue };
            path.clear();
            db.path_to(*r, &mut path);
            for &id in &path {
                let n = db.node(id).expect("path node");
                if self.is_path_attribute(db, n.attribute) {
                    let (attr, value) = (n.attribute, n.value.clone());
                    node = Some(self.child(node, attr, &value));
                }
            }
        }
        let Some(node) = node else { return Ok(()) };
        let mut cells: Vec<(String, String)> = Vec::new();
        for field in fields(db, record) {
            if self.is_path_attribute(db, field.attr) {
                continue;
            }
            let Some(a) = db.attribute(field.attr) else { continue };
            if !self.seen.iter().any(|(id, _)| *id == field.attr) {
                self.seen.push((field.attr, a.name().to_string()));
            }
            if !cells.iter().any(|(n, _)| n == a.name()) {
                cells.push((a.name().to_string(), field.text));
            }
        }
        let sort = self
            .spec
            .sort
            .iter()
            .map(|k| {
                let id = db.attribute_by_name(&k.attribute)?.id();
                crate::access::first_value(db, record, id).cloned()
            })
            .collect();
        self.nodes[node].rows.push(Row { cells, sort });
        Ok(())
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        self.seen.sort_by_key(|(id, _)| *id);
        if !self.spec.sort.is_empty() {
            self.sort();
            // Printing pops children from a stack, newest first; keep the
            // sorted order instead.
            self.roots.reverse();
            for node in &mut self.nodes {
                node.children.reverse();
            }
        }
        let columns = self.columns(db);
        // Depth-first, children newest first (the reference prepends them).
        let mut order: Vec<(usize, usize)> = Vec::new();
        let mut stack: Vec<(usize, usize)> = self.roots.iter().map(|&r| (r, 0)).collect();
        while let Some((i, depth)) = stack.pop() {
            order.push((i, depth));
            stack.extend(self.nodes[i].children.iter().map(|&c| (c, depth + 1)));
        }
        let longest = order.iter().map(|&(i, d)| 2 * d + self.nodes[i].label.chars().count()).max().unwrap_or(0);
        let path_width = self.path_width.map_or(longest, |cap| longest.min(cap)).max(4);

        // Lines: path text, then one cell per column.
        let mut lines: Vec<(String, Vec<String>)> = Vec::new();
        for &(i, depth) in &order {
            let node = &self.nodes[i];
            let indent = 2 * depth;
            let label = if indent >= path_width { "..".to_string() } else { clamp(&node.label, path_width - indent) };
            let first = format!("{}{label}", " ".repeat(indent));
            let row_cells = |row: Option<&Row>| -> Vec<String> {
                columns
                    .iter()
                    .map(|(name, _, _)| {
                        row.and_then(|r| r.cells.iter().find(|(n, _)| n == name))
                            .map(|(_, t)| t.clone())
                            .unwrap_or_default()
                    })
                    .collect()
            };
            lines.push((first, row_cells(node.rows.first())));
            for row in node.rows.iter().skip(1) {
                lines.push((format!("{} |-", " ".repeat(indent)), row_cells(Some(row))));
            }
        }
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(c, (_, header, _))| {
                let w = lines
                    .iter()
                    .map(|(_, cells)| cells[c].chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(header.chars().count());
                self.column_width.map_or(w, |cap| w.min(cap))
            })
            .collect();
        let mut text = String::new();
        if self.print_globals {
            text.push_str(&print_globals(db));
        }
        let mut line = |path: &str, cells: &[String]| {
            text.push_str(path);
            text.extend(std::iter::repeat_n(' ', path_width.saturating_sub(path.chars().count())));
            text.push(' ');
            for ((cell, width), (_, _, numeric)) in cells.iter().zip(&widths).zip(&columns) {
                push_cell(&mut text, cell, *width, *numeric);
            }
            text.push('\n');
        };
        let headers: Vec<String> = columns.iter().map(|(_, h, _)| h.clone()).collect();
        line("Path", &headers);
        for (path, cells) in &lines {
            line(path, cells);
        }
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}
