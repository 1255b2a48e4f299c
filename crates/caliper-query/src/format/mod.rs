//! Output formatters: turn processed records into text.
//!
//! A formatter receives the records of a query (after LET, WHERE and
//! aggregation) one at a time and writes at the end at the latest; the
//! streaming ones (`expand`, `cali`, `json`) write as records arrive, so
//! their memory does not grow with the input; so do the timeline ones
//! (`trace-event`, `perfetto`), which hold only the open regions.

mod cali;
mod expand;
mod folded;
mod json;
mod json_split;
mod perfetto;
mod protowire;
mod selection;
mod table;
mod timeline;
mod trace_event;
mod tree;
mod user;

use crate::spec::{FormatSpec, Formatter, QuerySpec};
use caliper_data::attribute::ALIAS_ATTR_NAME;
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Record, Variant};
use std::io::{self, Write};

/// A formatter of query results.
pub trait RecordFormatter {
    /// Takes one result record.
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()>;
    /// Writes what is left and flushes the output.
    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()>;
}

/// Keeps the result records instead of writing them: for a query whose
/// results feed another (a cross-process query, a program's own use).
/// Clones share the records.
#[derive(Clone, Default)]
pub struct Collector(std::rc::Rc<std::cell::RefCell<Vec<Record>>>);

impl Collector {
    /// The records kept so far, taken out.
    pub fn take(&self) -> Vec<Record> {
        self.0.take()
    }
}

impl RecordFormatter for Collector {
    fn process(&mut self, _db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        self.0.borrow_mut().push(record.clone());
        Ok(())
    }

    fn finish(&mut self, _db: &mut MetadataDb) -> io::Result<()> {
        Ok(())
    }
}

/// The formatter a query asks for (`default` when it has no FORMAT), writing
/// to `out`.
pub fn make_formatter(
    spec: &QuerySpec,
    default: Formatter,
    out: Box<dyn Write>,
) -> Result<Box<dyn RecordFormatter>, FormatError> {
    let format = spec.format.clone().unwrap_or_else(|| FormatSpec::new(default));
    Ok(match format.formatter {
        Formatter::Cali => Box::new(cali::CaliFormatter::new(out)),
        Formatter::Expand => Box::new(expand::ExpandFormatter::new(spec, out)),
        Formatter::Table => Box::new(table::TableFormatter::new(spec, &format, out)?),
        Formatter::Json => Box::new(json::JsonFormatter::new(spec, &format, out)?),
        Formatter::Tree => Box::new(tree::TreeFormatter::new(spec, &format, out)?),
        Formatter::JsonSplit => Box::new(json_split::JsonSplitFormatter::new(spec, out)),
        Formatter::UserFormat => Box::new(user::UserFormatter::new(&format, out)),
        Formatter::Folded => Box::new(folded::FoldedFormatter::new(spec, &format, out, false)),
        Formatter::FlameGraph => Box::new(folded::FoldedFormatter::new(spec, &format, out, true)),
        Formatter::TraceEvent => Box::new(trace_event::TraceEventFormatter::new(&format, out)),
        Formatter::Perfetto => Box::new(perfetto::PerfettoFormatter::new(&format, out)),
    })
}

/// The attributes whose values make a record's path, for the formatters
/// that lay records out by path (`tree`, `folded`): those named in the
/// `path-attributes` argument (where `path` and `prop:nested` stand for
/// every nested attribute), or the nested attributes without it.
pub(crate) struct PathAttributes {
    names: Option<Vec<String>>,
}

impl PathAttributes {
    /// The path attributes of a FORMAT's arguments.
    pub(crate) fn of(format: &FormatSpec) -> PathAttributes {
        let names = format
            .arg("path-attributes")
            .map(|list| list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
        PathAttributes { names }
    }

    /// Whether attribute `attr` makes the path.
    pub(crate) fn contains(&self, db: &MetadataDb, attr: Id) -> bool {
        let Some(a) = db.attribute(attr) else { return false };
        match &self.names {
            Some(names) => {
                names.iter().any(|n| n == a.name() || ((n == "path" || n == "prop:nested") && a.is_nested()))
            }
            None => a.is_nested(),
        }
    }

    /// Whether `name` is named in the argument.
    pub(crate) fn names(&self, name: &str) -> bool {
        self.names.as_ref().is_some_and(|names| names.iter().any(|n| n == name))
    }
}

/// A formatter that cannot be set up (e.g. a bad argument value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError(pub String);

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

/// One attribute's value(s) in a record, as formatters show them.
#[derive(Clone, Debug)]
pub(crate) struct Field {
    /// The attribute.
    pub attr: Id,
    /// The text: nested values joined root first with `/`. Values of
    /// hidden attributes on a reference entry's path show as empty: they
    /// are private to the stream that wrote them (ids), as in the
    /// reference's output.
    pub text: String,
    /// The reference entry the value came from, `None` for an immediate.
    pub entry: Option<usize>,
}

/// A record's fields: per reference entry the attributes on its path (in
/// order of first appearance), then one per immediate entry. References
/// come before immediates, as the reference's reader orders them. Hidden
/// immediates with a value have no field (see [`shows_immediate`]).
pub(crate) fn fields(db: &MetadataDb, record: &Record) -> Vec<Field> {
    fields_except(db, record, |_| false)
}

/// A record's fields but those of attributes for which `skip` holds. The
/// tree formatter skips its path attributes this way: joining a deep path
/// into text for every record would cost time and memory quadratic in the
/// depth, for a field it does not show.
pub(crate) fn fields_except(db: &MetadataDb, record: &Record, skip: impl Fn(Id) -> bool) -> Vec<Field> {
    let mut out = Vec::new();
    for (i, node) in record.refs().enumerate() {
        let mut single = Record::ctx();
        single.push_ref(node);
        for (attr, values) in db.expand_paths(&single) {
            if skip(attr) {
                continue;
            }
            let text = match is_hidden(db, attr) {
                true => String::new(),
                false => values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("/"),
            };
            out.push(Field { attr, text, entry: Some(i) });
        }
    }
    for (attr, value) in record.immediates().filter(|(attr, value)| !skip(*attr) && shows_immediate(db, *attr, value)) {
        out.push(Field { attr, text: value.to_string(), entry: None });
    }
    out
}

/// Whether `attr` is hidden (or unknown): its values are not shown.
pub(crate) fn is_hidden(db: &MetadataDb, attr: Id) -> bool {
    db.attribute(attr).is_none_or(|a| a.is_hidden())
}

/// Whether an immediate entry shows: not if its attribute is hidden and it
/// has a value. Such values are private to the stream that wrote them (the
/// `avg.sum#`/`avg.count#` helpers of re-aggregation in a profile), and
/// the reference's output leaves them out. A hidden entry without a value
/// (the metadata of an attribute's definition, which `--list-attributes`
/// lists) shows, empty, as there.
pub(crate) fn shows_immediate(db: &MetadataDb, attr: Id, value: &Variant) -> bool {
    !is_hidden(db, attr) || value.is_empty()
}

/// The name to show for an attribute: the query's alias, else the name.
pub(crate) fn display_name<'a>(spec: &'a QuerySpec, name: &'a str) -> &'a str {
    spec.alias(name).unwrap_or(name)
}

/// A tree column's header: the query's alias, else the alias the attribute
/// carries as `attribute.alias` metadata (which the queries that wrote a
/// profile gave it, e.g. `Calls (total)` for `sum#sum#rc.count` in a spot
/// file), else the name. The reference's tree shows these; its table and
/// expand formats show the query's aliases only.
pub(crate) fn tree_header(spec: &QuerySpec, db: &MetadataDb, name: &str) -> String {
    if let Some(alias) = spec.alias(name) {
        return alias.to_string();
    }
    db.attribute_by_name(name)
        .and_then(|a| db.metadata_by_name(a, ALIAS_ATTR_NAME))
        .map_or_else(|| name.to_string(), |alias| alias.to_string())
}

/// Appends a table cell: `cell` shortened to `width`, padded (numbers on
/// the left, text on the right), and one space.
pub(crate) fn push_cell(text: &mut String, cell: &str, width: usize, numeric: bool) {
    let cell = clamp(cell, width);
    let pad = width.saturating_sub(cell.chars().count());
    if numeric {
        text.extend(std::iter::repeat_n(' ', pad));
        text.push_str(&cell);
    } else {
        text.push_str(&cell);
        text.extend(std::iter::repeat_n(' ', pad));
    }
    text.push(' ');
}

/// Shortens `text` to `width` characters as `head~~tail`; below 4, where
/// `~~` would leave nothing of the text, to its first `width` characters
/// (as the reference cuts a deep tree label: `fo` for `foo.inner`).
pub(crate) fn clamp(text: &str, width: usize) -> String {
    let len = text.chars().count();
    if len <= width {
        return text.to_string();
    }
    if width < 4 {
        return text.chars().take(width).collect();
    }
    let half = width / 2 - 1;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(len - half).collect();
    format!("{head}~~{tail}")
}

/// The `column-width` argument: `None` if not given, `Some(None)` for no
/// cap (zero or less), `Some(Some(w))` for a cap of `w`.
pub(crate) fn parse_width(format: &FormatSpec, formatter: &str) -> Result<Option<Option<usize>>, FormatError> {
    let Some(text) = format.arg("column-width") else { return Ok(None) };
    let w: i64 =
        text.trim().parse().map_err(|_| FormatError(format!("Invalid column-width \"{text}\" for {formatter}")))?;
    Ok(Some((w > 0).then_some(w as usize)))
}

/// The globals as `name : value` lines, for `print-globals`: names up to
/// 24 characters, values up to 52, numbers right-aligned.
pub(crate) fn print_globals(db: &MetadataDb) -> String {
    let globals: Vec<(String, String, bool)> = fields(db, &db.globals())
        .into_iter()
        .filter_map(|f| {
            let a = db.attribute(f.attr)?;
            Some((a.name().to_string(), f.text, a.attr_type().is_numeric()))
        })
        .collect();
    let key_width = globals.iter().map(|(k, _, _)| k.chars().count()).max().unwrap_or(0).min(24);
    let value_width = globals.iter().map(|(_, v, _)| v.chars().count()).max().unwrap_or(0).min(52);
    let mut text = String::new();
    for (key, value, numeric) in globals {
        let key = clamp(&key, key_width);
        let value = clamp(&value, value_width);
        let key_pad = key_width - key.chars().count();
        let value_pad = value_width - value.chars().count();
        text.push_str(&key);
        text.extend(std::iter::repeat_n(' ', key_pad));
        text.push_str(" : ");
        if numeric {
            text.extend(std::iter::repeat_n(' ', value_pad));
        }
        text.push_str(&value);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::{AttrType, Properties, Variant};

    #[test]
    fn clamp_cuts_the_middle_or_with_little_room_the_tail() {
        assert_eq!(clamp("mainloop", 8), "mainloop");
        assert_eq!(clamp("mainloop", 6), "ma~~op");
        assert_eq!(clamp("foo.inner", 4), "f~~r");
        assert_eq!(clamp("foo.inner", 3), "foo");
        assert_eq!(clamp("foo.inner", 2), "fo");
        assert_eq!(clamp("foo.inner", 1), "f");
    }

    #[test]
    fn a_tree_header_is_the_querys_alias_else_the_files() {
        let mut db = MetadataDb::new();
        let alias = db.alias_attribute();
        let calls = Variant::string("Calls (total)");
        db.create_attribute("sum#sum#rc.count", AttrType::Uint, Properties::ASVALUE, &[(alias, calls)]);
        db.create_attribute("count", AttrType::Uint, Properties::ASVALUE, &[]);
        let plain = crate::parse_query("select *").unwrap();
        assert_eq!(tree_header(&plain, &db, "sum#sum#rc.count"), "Calls (total)");
        assert_eq!(tree_header(&plain, &db, "count"), "count");
        let aliased = crate::parse_query("select sum#sum#rc.count as Calls").unwrap();
        assert_eq!(tree_header(&aliased, &db, "sum#sum#rc.count"), "Calls");
    }
}
