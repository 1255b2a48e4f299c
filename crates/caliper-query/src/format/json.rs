//! `json`: records as JSON objects.

use super::selection::selects;
use super::{FormatError, RecordFormatter, display_name, fields};
use crate::spec::{FormatSpec, QuerySpec, Selection};
use caliper_data::{AttrType, Entry, MetadataDb, Record, RecordKind};
use std::io::{self, BufWriter, Write};

/// Writes records as JSON objects, streaming.
///
/// Layouts: `records` (default) writes a list; `split` the objects only;
/// `object` writes `{"records": [...], "globals": {...}, "attributes":
/// {...}}`. Every NESTED attribute goes into one `path` key (values joined
/// root first with `/`) unless `separate-nested`. Tree values and strings
/// are quoted, other values written bare (`quote-all` quotes everything).
/// In each object the quoted members come first, each group sorted by key.
pub struct JsonFormatter {
    out: BufWriter<Box<dyn Write>>,
    spec: QuerySpec,
    layout: Layout,
    pretty: bool,
    quote_all: bool,
    separate_nested: bool,
    written: usize,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Layout {
    Records,
    Split,
    Object,
}

impl JsonFormatter {
    /// A formatter with the FORMAT arguments of the query.
    pub fn new(spec: &QuerySpec, format: &FormatSpec, out: Box<dyn Write>) -> Result<JsonFormatter, FormatError> {
        let layout = if format.flag("object") {
            Layout::Object
        } else if format.flag("split") {
            Layout::Split
        } else {
            Layout::Records
        };
        Ok(JsonFormatter {
            out: BufWriter::with_capacity(64 * 1024, out),
            spec: spec.clone(),
            layout,
            pretty: format.flag("pretty"),
            quote_all: format.flag("quote-all"),
            separate_nested: format.flag("separate-nested"),
            written: 0,
        })
    }

    /// Whether the SELECT list names `path` itself.
    fn selects_path(&self) -> bool {
        matches!(&self.spec.select, Selection::List(names) if names.iter().any(|n| n == "path"))
    }

    /// The members of one record: (key, JSON value, quoted).
    fn members(&self, db: &MetadataDb, record: &Record) -> Vec<(String, String, bool)> {
        let explicit = matches!(self.spec.select, Selection::List(_));
        let mut members = Vec::new();
        let mut path = Vec::new();
        for field in fields(db, record) {
            let Some(attr) = db.attribute(field.attr) else { continue };
            if !explicit && (attr.is_hidden() || attr.is_global()) {
                continue;
            }
            if attr.is_nested() && !self.separate_nested {
                continue;
            }
            if !selects(&self.spec, db, attr) {
                continue;
            }
            let quoted =
                field.entry.is_some() || self.quote_all || matches!(attr.attr_type(), AttrType::String | AttrType::Usr);
            // An empty number (a value-less entry in the input) is no value.
            if !quoted && field.text.is_empty() {
                continue;
            }
            let value = if quoted { quote(&field.text) } else { bare_value(&field.text) };
            members.push((display_name(&self.spec, attr.name()).to_string(), value, quoted));
        }
        if !self.separate_nested {
            // The nested values go into `path`: all of them, or with a
            // SELECT list those of the listed attributes (all for `path`).
            let all = !explicit || self.spec.select_path || self.selects_path();
            for entry in &record.entries {
                let Entry::Reference(node) = entry else { continue };
                let mut nodes = Vec::new();
                db.path_to(*node, &mut nodes);
                for id in nodes {
                    let n = db.node(id).expect("path node");
                    if db.attribute(n.attribute).is_some_and(|a| a.is_nested() && (all || selects(&self.spec, db, a))) {
                        path.push(n.value.to_string());
                    }
                }
            }
            if !path.is_empty() {
                members.push(("path".to_string(), quote(&path.join("/")), true));
            }
        }
        members.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        members
    }

    fn object_text(&self, members: &[(String, String, bool)]) -> String {
        let mut text = String::from("{");
        for (i, (key, value, _)) in members.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            if self.pretty {
                text.push_str("\n\t");
            }
            text.push_str(&quote(key));
            text.push_str(if self.pretty { ": " } else { ":" });
            text.push_str(value);
        }
        if self.pretty {
            text.push('\n');
        }
        text.push('}');
        text
    }

    fn start(&mut self) -> io::Result<()> {
        match self.layout {
            Layout::Records => self.out.write_all(b"[\n"),
            Layout::Object => self.out.write_all(b"{\n\"records\": [\n"),
            Layout::Split => Ok(()),
        }
    }

    fn globals_and_attributes(&mut self, db: &MetadataDb) -> io::Result<()> {
        let globals = db.globals();
        let mut members: Vec<String> = fields(db, &globals)
            .into_iter()
            .filter_map(|f| db.attribute(f.attr).map(|a| format!("{}: {}", quote(a.name()), quote(&f.text))))
            .collect();
        members.dedup();
        write!(self.out, "\"globals\": {{ {} }},\n\"attributes\": {{ ", members.join(", "))?;
        let explicit = matches!(self.spec.select, Selection::List(_));
        let mut first = true;
        for attr in db.attributes() {
            if attr.is_hidden()
                || (attr.is_nested() && !self.separate_nested)
                || (explicit && !selects(&self.spec, db, attr))
            {
                continue;
            }
            let mut meta = vec![
                format!("\"is_global\": {}", attr.is_global()),
                format!("\"is_nested\": {}", attr.is_nested()),
                format!("\"cali.attribute.name\": {}", quote(attr.name())),
                format!("\"cali.attribute.type\": {}", quote(attr.attr_type().name())),
                format!("\"cali.attribute.prop\": {}", quote(&attr.properties().bits().to_string())),
            ];
            for (meta_attr, value) in attr.metadata() {
                if let Some(m) = db.attribute(*meta_attr) {
                    meta.push(format!("{}: {}", quote(m.name()), quote(&value.to_string())));
                }
            }
            if !first {
                self.out.write_all(b", ")?;
            }
            first = false;
            write!(self.out, "{}: {{ {} }}", quote(attr.name()), meta.join(", "))?;
        }
        self.out.write_all(b" }\n}\n")
    }
}

/// A JSON string literal: `"` and `\` escaped, newline as `\n`, other
/// control characters as `\u00XX` (the reference drops them).
pub(crate) fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number or boolean as a JSON value: bare if it is a JSON number,
/// `true` or `false`, quoted otherwise (`inf`, `NaN`, a hex address), so
/// that the output stays JSON whatever the input held.
pub(crate) fn bare_value(text: &str) -> String {
    if text == "true" || text == "false" || is_json_number(text) { text.to_string() } else { quote(text) }
}

/// Whether `text` follows JSON's number grammar:
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    let n = digits(&mut i);
    if n == 0 || (n > 1 && b[int_start] == b'0') {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

impl RecordFormatter for JsonFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        let members = self.members(db, record);
        if members.is_empty() {
            return Ok(());
        }
        if self.written == 0 {
            self.start()?;
        } else {
            self.out.write_all(b",\n")?;
        }
        let text = self.object_text(&members);
        self.out.write_all(text.as_bytes())?;
        self.written += 1;
        Ok(())
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        if self.written == 0 {
            self.start()?;
        }
        match self.layout {
            Layout::Records => self.out.write_all(b"\n]\n")?,
            Layout::Split => self.out.write_all(b"\n")?,
            Layout::Object => {
                self.out.write_all(b"\n],\n")?;
                self.globals_and_attributes(db)?;
            }
        }
        self.out.flush()
    }
}
