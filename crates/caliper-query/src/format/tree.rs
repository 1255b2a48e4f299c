//! `tree`: records arranged by their region path, as an indented table.

use super::selection::expand_list;
use super::{
    FormatError, PathAttributes, RecordFormatter, clamp, is_hidden, parse_width, print_globals, push_cell,
    shows_immediate, tree_header,
};
use crate::spec::{FormatSpec, QuerySpec, Selection, SortOrder};
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Record, RecordKind, Variant};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::rc::Rc;

/// Default cap on the path column's width.
const DEFAULT_PATH_WIDTH: usize = 48;
/// Default cap on the other columns' widths.
const DEFAULT_COLUMN_WIDTH: usize = 60;

/// Writes records as a tree over their path (the NESTED attributes, or the
/// `path-attributes`): one line per tree node, indented two spaces per
/// level, with the values of the records that end at that node. Records
/// without a path attribute are left out. A node with several records gets
/// one extra ` |-` line per further record.
///
/// The path column is at most `column-width` (48) characters wide however
/// deep the tree: the indent stops at the width less two, and a node whose
/// indent reaches the width shows as `..`, as in the reference. Time and
/// memory are linear in the number of tree nodes and records, whatever the
/// depth or the number of siblings.
pub struct TreeFormatter {
    out: Box<dyn Write>,
    spec: QuerySpec,
    path: PathAttributes,
    path_width: Option<usize>,
    column_width: Option<usize>,
    print_globals: bool,
    nodes: Vec<TreeNode>,
    roots: Vec<usize>,
    /// Tree nodes by parent (`None`: a root), attribute and value, so
    /// that finding a child does not scan its siblings.
    index: HashMap<(Option<usize>, Id, Variant), usize>,
    /// What a reference entry's context node amounts to, from the tree
    /// node where the entry starts: a record then walks only the part of
    /// its path no earlier record has walked, so deep trees cost time
    /// linear in their size.
    resolved: HashMap<(Option<usize>, Id), Resolved>,
    /// Context nodes still to resolve (scratch space of `resolve`).
    pending: Vec<Id>,
    /// Columns seen so far (attribute id, name), for the default selection.
    seen: Vec<(Id, String)>,
}

/// Where the path of a context node leads in the tree, and the texts of
/// the other attributes on it (values root first, joined with `/`; empty
/// for hidden attributes).
#[derive(Clone, Default)]
struct Resolved {
    node: Option<usize>,
    fields: Rc<Vec<(Id, String)>>,
}

struct TreeNode {
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
        let width = parse_width(format, "tree")?;
        Ok(TreeFormatter {
            out,
            spec: spec.clone(),
            path: PathAttributes::of(format),
            path_width: width.map_or(Some(DEFAULT_PATH_WIDTH), |w| w),
            column_width: width.map_or(Some(DEFAULT_COLUMN_WIDTH), |w| w),
            print_globals: format.flag("print-globals"),
            nodes: Vec::new(),
            roots: Vec::new(),
            index: HashMap::new(),
            resolved: HashMap::new(),
            pending: Vec::new(),
            seen: Vec::new(),
        })
    }

    fn is_path_attribute(&self, db: &MetadataDb, attr: Id) -> bool {
        self.path.contains(db, attr)
    }

    fn child(&mut self, parent: Option<usize>, attr: Id, value: &Variant) -> usize {
        let key = (parent, attr, value.clone());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        self.nodes.push(TreeNode { label: value.to_string(), children: Vec::new(), rows: Vec::new() });
        let i = self.nodes.len() - 1;
        self.index.insert(key, i);
        match parent {
            Some(p) => self.nodes[p].children.push(i),
            None => self.roots.push(i),
        }
        i
    }

    /// The tree node that the path of context node `ctx` leads to, starting
    /// at tree node `start` (one level per path attribute on the way from
    /// the root of the context tree to `ctx`), and the other attributes on
    /// the way.
    fn resolve(&mut self, db: &MetadataDb, start: Option<usize>, ctx: Id) -> Resolved {
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        let mut at = Resolved { node: start, fields: Rc::default() };
        let mut next = Some(ctx);
        while let Some(id) = next {
            if let Some(done) = self.resolved.get(&(start, id)) {
                at = done.clone();
                break;
            }
            let Some(node) = db.node(id) else { break };
            pending.push(id);
            next = node.parent;
        }
        for &id in pending.iter().rev() {
            let Some(node) = db.node(id) else { continue };
            if self.is_path_attribute(db, node.attribute) {
                at.node = Some(self.child(at.node, node.attribute, &node.value));
            } else {
                let hidden = is_hidden(db, node.attribute);
                let fields = Rc::make_mut(&mut at.fields);
                match fields.iter_mut().find(|(a, _)| *a == node.attribute) {
                    Some((_, text)) if !hidden => {
                        text.push('/');
                        text.push_str(&node.value.to_string());
                    }
                    Some(_) => {}
                    None => fields.push((node.attribute, if hidden { String::new() } else { node.value.to_string() })),
                }
            }
            self.resolved.insert((start, id), at.clone());
        }
        self.pending = pending;
        at
    }

    /// Adds a record's field to its cells (the first value per attribute
    /// wins) and to the columns seen.
    fn add_cell(&mut self, db: &MetadataDb, cells: &mut Vec<(String, String)>, attr: Id, text: &str) {
        let Some(a) = db.attribute(attr) else { return };
        if !self.seen.iter().any(|(id, _)| *id == attr) {
            self.seen.push((attr, a.name().to_string()));
        }
        if !cells.iter().any(|(n, _)| n == a.name()) {
            cells.push((a.name().to_string(), text.to_string()));
        }
    }

    /// The columns to print: (attribute name, header, numeric).
    fn columns(&self, db: &MetadataDb) -> Vec<(String, String, bool)> {
        let names: Vec<String> = match &self.spec.select {
            Selection::List(list) => {
                // Columns missing from records are worth a word; from an
                // empty profile (a program that marked no regions) they are
                // all missing, and the word is noise.
                if !self.seen.is_empty() {
                    for name in list.iter().filter(|name| db.attribute_by_name(name).is_none()) {
                        eprintln!("cali-query: TreeFormatter: Attribute \"{name}\" not found.");
                    }
                }
                // An attribute named in path-attributes is the tree's
                // labels, not a column.
                let labels = |n: &String| self.path.names(n);
                let seen: Vec<String> = self.seen.iter().map(|(_, n)| n.clone()).collect();
                let names = expand_list(db, list, &seen);
                names.into_iter().filter(|n| db.attribute_by_name(n).is_some() && !labels(n)).collect()
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
                let header = tree_header(&self.spec, db, &name);
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
        let mut cells: Vec<(String, String)> = Vec::new();
        for r in record.refs() {
            let resolved = self.resolve(db, node, r);
            node = resolved.node;
            for (attr, text) in resolved.fields.iter() {
                self.add_cell(db, &mut cells, *attr, text);
            }
        }
        // Immediates after the references, as the reference's reader
        // orders them; a path attribute's value (a sample's function, say)
        // is a level below the references' path; hidden values are left
        // out (see `shows_immediate`).
        for (attr, value) in record.immediates() {
            if self.is_path_attribute(db, attr) {
                node = Some(self.child(node, attr, value));
            } else if shows_immediate(db, attr, value) {
                self.add_cell(db, &mut cells, attr, &value.to_string());
            }
        }
        let Some(node) = node else { return Ok(()) };
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
        let longest = depth_first(&self.nodes, &self.roots)
            .map(|(i, d)| 2 * d + self.nodes[i].label.chars().count())
            .max()
            .unwrap_or(0);
        let path_width = self.path_width.map_or(longest, |cap| longest.min(cap)).max(4);
        let widths: Vec<usize> = columns
            .iter()
            .map(|(name, header, _)| {
                let w = self
                    .nodes
                    .iter()
                    .flat_map(|n| &n.rows)
                    .filter_map(|r| r.cells.iter().find(|(n, _)| n == name))
                    .map(|(_, text)| text.chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(header.chars().count());
                self.column_width.map_or(w, |cap| w.min(cap))
            })
            .collect();

        // Lines are written one at a time: the output can be large (one
        // line per node), a line is not.
        let mut out = BufWriter::new(&mut self.out);
        if self.print_globals {
            out.write_all(print_globals(db).as_bytes())?;
        }
        let mut text = String::new();
        let mut line = |out: &mut BufWriter<_>, indent: usize, label: &str, cells: &mut dyn Iterator<Item = &str>| {
            text.clear();
            text.extend(std::iter::repeat_n(' ', indent));
            text.push_str(label);
            let pad = path_width.saturating_sub(indent + label.chars().count());
            text.extend(std::iter::repeat_n(' ', pad));
            text.push(' ');
            for ((cell, width), (_, _, numeric)) in cells.zip(&widths).zip(&columns) {
                push_cell(&mut text, cell, *width, *numeric);
            }
            text.push('\n');
            out.write_all(text.as_bytes())
        };
        line(&mut out, 0, "Path", &mut columns.iter().map(|(_, h, _)| h.as_str()))?;
        for (i, depth) in depth_first(&self.nodes, &self.roots) {
            let node = &self.nodes[i];
            // A label is cut to the room its indent leaves; where the
            // indent reaches the width, the label is `..`, two columns
            // from its end: a row never spills past the column.
            let indent = 2 * depth;
            let (indent, label) = match path_width.checked_sub(indent) {
                Some(room) if room > 0 => (indent, clamp(&node.label, room)),
                _ => (path_width - 2, "..".to_string()),
            };
            let first = node.rows.first();
            line(&mut out, indent, &label, &mut columns.iter().map(|(name, _, _)| cell(first, name)))?;
            for row in node.rows.iter().skip(1) {
                line(&mut out, indent, " |-", &mut columns.iter().map(|(name, _, _)| cell(Some(row), name)))?;
            }
        }
        out.flush()
    }
}

/// The nodes depth-first with their depth, children newest first (the
/// reference prepends them).
fn depth_first<'a>(nodes: &'a [TreeNode], roots: &[usize]) -> impl Iterator<Item = (usize, usize)> + 'a {
    let mut stack: Vec<(usize, usize)> = roots.iter().map(|&r| (r, 0)).collect();
    std::iter::from_fn(move || {
        let (i, depth) = stack.pop()?;
        stack.extend(nodes[i].children.iter().map(|&c| (c, depth + 1)));
        Some((i, depth))
    })
}

/// A row's text for the column `name`, empty if it has none.
fn cell<'a>(row: Option<&'a Row>, name: &str) -> &'a str {
    row.and_then(|r| r.cells.iter().find(|(n, _)| n == name)).map_or("", |(_, t)| t.as_str())
}
