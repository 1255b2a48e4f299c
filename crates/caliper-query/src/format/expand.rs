//! `expand`: one `name=value,name=value` line per record.

use super::{RecordFormatter, display_name};
use crate::spec::{QuerySpec, Selection};
use caliper_data::{Entry, MetadataDb, Record, RecordKind};
use std::io::{self, BufWriter, Write};

/// Writes each record as a line of `name=value` pairs: for each reference
/// entry its attributes in descending attribute-id order (nested values
/// joined root first with `/`), then the immediate entries in order.
/// With a SELECT list only the listed attributes appear; records with
/// nothing to show give no line.
pub struct ExpandFormatter {
    out: BufWriter<Box<dyn Write>>,
    spec: QuerySpec,
    line: String,
}

impl ExpandFormatter {
    /// A formatter for the query's selection and aliases.
    pub fn new(spec: &QuerySpec, out: Box<dyn Write>) -> ExpandFormatter {
        ExpandFormatter { out: BufWriter::with_capacity(64 * 1024, out), spec: spec.clone(), line: String::new() }
    }

    fn selected(&self, name: &str) -> bool {
        match &self.spec.select {
            Selection::List(names) => names.iter().any(|n| n == name),
            _ => true,
        }
    }

    fn push(&mut self, name: &str, text: &str) {
        if !self.line.is_empty() {
            self.line.push(',');
        }
        self.line.push_str(display_name(&self.spec, name));
        self.line.push('=');
        self.line.push_str(text);
    }
}

impl RecordFormatter for ExpandFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        self.line.clear();
        for entry in &record.entries {
            let Entry::Reference(node) = entry else {
                continue;
            };
            let mut single = Record::ctx();
            single.push_ref(*node);
            let mut groups = db.expand_paths(&single);
            groups.sort_by_key(|(attr, _)| std::cmp::Reverse(*attr));
            for (attr, values) in groups {
                let name = db.attribute(attr).map(|a| a.name().to_string()).unwrap_or_default();
                if self.selected(&name) {
                    let text = values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("/");
                    self.push(&name, &text);
                }
            }
        }
        for (attr, value) in record.immediates() {
            let name = db.attribute(attr).map(|a| a.name().to_string()).unwrap_or_default();
            if self.selected(&name) {
                self.push(&name, &value.to_string());
            }
        }
        if !self.line.is_empty() {
            self.out.write_all(self.line.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn finish(&mut self, _db: &mut MetadataDb) -> io::Result<()> {
        self.out.flush()
    }
}
