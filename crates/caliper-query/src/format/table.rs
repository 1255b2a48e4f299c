//! `table`: records as an aligned text table.

use super::selection;
use super::{FormatError, RecordFormatter, display_name, fields, fields_except, parse_width, print_globals, push_cell};
use crate::spec::{FormatSpec, QuerySpec, Selection, SortOrder};
use caliper_data::{MetadataDb, Record, RecordKind, Variant};
use std::cmp::Ordering;
use std::io::{self, Write};

/// Default cap on a column's width.
const DEFAULT_COLUMN_WIDTH: usize = 60;

/// Writes records as a table: a header line, then one line per record with
/// at least one non-empty cell. Columns are the SELECT list (a class item
/// such as `class.iteration` giving its members, in order of first
/// appearance), or every (non-hidden, non-global) attribute in order of
/// first appearance. Text is
/// left-aligned, numbers right-aligned; a cell longer than the column cap
/// is shortened to `head~~tail`.
pub struct TableFormatter {
    out: Box<dyn Write>,
    spec: QuerySpec,
    max_width: Option<usize>,
    columns: Vec<Column>,
    /// Whether columns are discovered from the data.
    discover: bool,
    rows: Vec<Row>,
    print_globals: bool,
}

struct Column {
    name: String,
    /// The SELECT item the column comes from (0 without a list): columns
    /// print in item order, a class item's members where the class stands.
    item: usize,
    header: Option<String>,
    numeric: bool,
}

struct Row {
    cells: Vec<String>,
    /// Sort values, one per ORDER BY key.
    keys: Vec<Option<Variant>>,
}

impl Column {
    fn new(name: &str, item: usize) -> Column {
        Column { name: name.to_string(), item, header: None, numeric: false }
    }
}

impl TableFormatter {
    /// Puts the columns in SELECT item order (stable, so members of a class
    /// in the order met) and drops the columns of class items, which stand
    /// for their members.
    fn order_columns(&mut self, db: &MetadataDb) {
        let mut order: Vec<usize> = (0..self.columns.len()).collect();
        order.sort_by_key(|&i| self.columns[i].item);
        let items = match &self.spec.select {
            Selection::List(items) => items.as_slice(),
            _ => &[],
        };
        let class = |c: &Column| items.contains(&c.name) && selection::is_class(db, &c.name);
        order.retain(|&i| !class(&self.columns[i]));
        let mut columns: Vec<Option<Column>> = std::mem::take(&mut self.columns).into_iter().map(Some).collect();
        self.columns = order.iter().map(|&i| columns[i].take().expect("each column once")).collect();
        for row in &mut self.rows {
            let mut cells: Vec<Option<String>> = std::mem::take(&mut row.cells).into_iter().map(Some).collect();
            row.cells = order.iter().map(|&i| cells[i].take().expect("each cell once")).collect();
        }
    }

    /// A table for the query; `column-width` caps columns (0 or less: no cap).
    pub fn new(spec: &QuerySpec, format: &FormatSpec, out: Box<dyn Write>) -> Result<TableFormatter, FormatError> {
        let max_width = parse_width(format, "table")?.unwrap_or(Some(DEFAULT_COLUMN_WIDTH));
        let (columns, discover) = match &spec.select {
            Selection::List(names) => {
                let columns = names.iter().enumerate().map(|(item, n)| Column::new(n, item)).collect();
                (columns, false)
            }
            _ => (Vec::new(), true),
        };
        Ok(TableFormatter {
            out,
            spec: spec.clone(),
            max_width,
            columns,
            discover,
            rows: Vec::new(),
            print_globals: format.flag("print-globals"),
        })
    }
}

impl RecordFormatter for TableFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        // With a SELECT list, only its attributes (and the sort keys) are
        // needed: other paths are not joined into text, and if all of them
        // are as-value attributes, paths are not walked at all (in a deep
        // region tree, either would cost time quadratic in the depth).
        let values = if self.discover {
            fields(db, record)
        } else {
            let wanted: Vec<&str> = self
                .columns
                .iter()
                .map(|c| c.name.as_str())
                .chain(self.spec.sort.iter().map(|k| k.attribute.as_str()))
                .collect();
            let skip =
                |attr| db.attribute(attr).is_none_or(|a| !wanted.iter().any(|item| selection::item_names(db, item, a)));
            if wanted.iter().any(|n| db.attribute_by_name(n).is_none_or(|a| !a.is_asvalue())) {
                fields_except(db, record, skip)
            } else {
                let mut immediates = Record::ctx();
                for (attr, value) in record.immediates() {
                    immediates.push_imm(attr, value.clone());
                }
                fields_except(db, &immediates, skip)
            }
        };
        for field in &values {
            let Some(a) = db.attribute(field.attr) else {
                continue;
            };
            if self.columns.iter().any(|c| c.name == a.name()) {
                continue;
            }
            // New columns: without a list every shown attribute, with one
            // the members of a class item.
            let item = match &self.spec.select {
                Selection::List(items) => items.iter().position(|item| selection::item_names(db, item, a)),
                _ => (!a.is_hidden() && !a.is_global()).then_some(0),
            };
            if let Some(item) = item {
                self.columns.push(Column::new(a.name(), item));
            }
        }
        for col in &mut self.columns {
            if col.header.is_none()
                && let Some(a) = db.attribute_by_name(&col.name)
            {
                // The query's alias only: the reference's table does not
                // show the `attribute.alias` of a file's attributes (its
                // tree does).
                col.numeric = a.attr_type().is_numeric();
                col.header = Some(display_name(&self.spec, &col.name).to_string());
            }
        }
        let cell = |name: &str| {
            values
                .iter()
                .find(|f| db.attribute(f.attr).is_some_and(|a| a.name() == name))
                .map(|f| f.text.clone())
                .unwrap_or_default()
        };
        let cells: Vec<String> = self.columns.iter().map(|c| cell(&c.name)).collect();
        if cells.iter().all(String::is_empty) {
            return Ok(());
        }
        let keys = self
            .spec
            .sort
            .iter()
            .map(|k| {
                let attr = db.attribute_by_name(&k.attribute)?;
                if attr.attr_type().is_numeric() {
                    return crate::access::first_value(db, record, attr.id()).cloned();
                }
                // Text sorts by what the cell shows: a whole path, root first.
                values.iter().find(|f| f.attr == attr.id()).map(|f| caliper_data::Variant::string(&f.text))
            })
            .collect();
        self.rows.push(Row { cells, keys });
        Ok(())
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        // Columns discovered after a row was stored are empty in that row.
        for row in &mut self.rows {
            row.cells.resize(self.columns.len(), String::new());
        }
        self.order_columns(db);
        // Stable sort per key in sequence: the last key is the primary one,
        // as in the reference.
        for (i, key) in self.spec.sort.iter().enumerate() {
            self.rows.sort_by(|a, b| {
                let ord = match (&a.keys[i], &b.keys[i]) {
                    (Some(x), Some(y)) => x.numeric_cmp(y).unwrap_or_else(|| x.cmp(y)),
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                };
                if key.order == SortOrder::Descending { ord.reverse() } else { ord }
            });
        }
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let header = c.header.as_deref().unwrap_or(display_name(&self.spec, &c.name));
                let longest = self.rows.iter().map(|r| r.cells[i].chars().count()).max().unwrap_or(0);
                let w = header.chars().count().max(longest);
                self.max_width.map_or(w, |cap| w.min(cap)).max(4)
            })
            .collect();
        let mut text = if self.print_globals { print_globals(db) } else { String::new() };
        let mut line = |cells: &mut dyn Iterator<Item = String>| {
            for ((cell, width), col) in cells.zip(&widths).zip(&self.columns) {
                push_cell(&mut text, &cell, *width, col.numeric);
            }
            text.push('\n');
        };
        let headers: Vec<String> = self
            .columns
            .iter()
            .map(|c| c.header.clone().unwrap_or_else(|| display_name(&self.spec, &c.name).to_string()))
            .collect();
        line(&mut headers.into_iter());
        for row in &self.rows {
            line(&mut row.cells.iter().cloned());
        }
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}
