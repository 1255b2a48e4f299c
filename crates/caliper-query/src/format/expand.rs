//! `expand`: one `name=value,name=value` line per record.

use super::selection::selects;
use super::{RecordFormatter, display_name, fields, shows_immediate};
use crate::spec::QuerySpec;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Record, RecordKind};
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};

/// Writes each record as a line of `name=value` pairs: for each reference
/// entry its attributes in descending attribute-id order (nested values
/// joined root first with `/`), then the immediate entries in order.
/// With a SELECT list only the listed attributes appear; values of hidden
/// immediates never do (see `shows_immediate`); records with nothing to
/// show give no line.
pub struct ExpandFormatter {
    out: BufWriter<Box<dyn Write>>,
    spec: QuerySpec,
    line: String,
    /// The text of each reference node seen so far: a trace references few
    /// distinct nodes, so each is rendered once.
    node_text: FxHashMap<Id, String>,
    /// The name each immediate attribute seen so far shows under, `None`
    /// if the selection leaves it out.
    names: FxHashMap<Id, Option<String>>,
}

impl ExpandFormatter {
    /// A formatter for the query's selection and aliases.
    pub fn new(spec: &QuerySpec, out: Box<dyn Write>) -> ExpandFormatter {
        ExpandFormatter {
            out: BufWriter::with_capacity(64 * 1024, out),
            spec: spec.clone(),
            line: String::new(),
            node_text: FxHashMap::default(),
            names: FxHashMap::default(),
        }
    }

    /// The `name=value,...` text of one reference node: its path's
    /// attributes in descending id order.
    fn render_node(&self, db: &MetadataDb, node: Id) -> String {
        let mut single = Record::ctx();
        single.push_ref(node);
        let mut fields = fields(db, &single);
        fields.sort_by_key(|f| std::cmp::Reverse(f.attr));
        let mut text = String::new();
        for field in fields {
            let Some(attr) = db.attribute(field.attr) else { continue };
            if !selects(&self.spec, db, attr) {
                continue;
            }
            if !text.is_empty() {
                text.push(',');
            }
            text.push_str(display_name(&self.spec, attr.name()));
            text.push('=');
            text.push_str(&field.text);
        }
        text
    }
}

impl RecordFormatter for ExpandFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        self.line.clear();
        for node in record.refs() {
            if !self.node_text.contains_key(&node) {
                let text = self.render_node(db, node);
                self.node_text.insert(node, text);
            }
            let text = &self.node_text[&node];
            if !text.is_empty() {
                if !self.line.is_empty() {
                    self.line.push(',');
                }
                self.line.push_str(text);
            }
        }
        for (attr, value) in record.immediates() {
            if !self.names.contains_key(&attr) {
                let name = db
                    .attribute(attr)
                    .filter(|a| selects(&self.spec, db, a))
                    .map(|a| display_name(&self.spec, a.name()).to_string());
                self.names.insert(attr, name);
            }
            let Some(name) = &self.names[&attr] else { continue };
            if !shows_immediate(db, attr, value) {
                continue;
            }
            if !self.line.is_empty() {
                self.line.push(',');
            }
            self.line.push_str(name);
            self.line.push('=');
            write!(self.line, "{value}").expect("write to String");
        }
        if !self.line.is_empty() {
            self.line.push('\n');
            self.out.write_all(self.line.as_bytes())?;
        }
        Ok(())
    }

    fn finish(&mut self, _db: &mut MetadataDb) -> io::Result<()> {
        self.out.flush()
    }
}
