//! Output formatters: turn processed records into text.
//!
//! A formatter receives the records of a query (after LET, WHERE and
//! aggregation) one at a time and writes at the end at the latest; the
//! streaming ones (`expand`, `cali`, `json`) write as records arrive, so
//! their memory does not grow with the input.

mod cali;
mod expand;
mod table;

use crate::spec::{FormatSpec, Formatter, QuerySpec};
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Record};
use std::io::{self, Write};

/// A formatter of query results.
pub trait RecordFormatter {
    /// Takes one result record.
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()>;
    /// Writes what is left and flushes the output.
    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()>;
}

/// The formatter a query asks for (`default` when it has no FORMAT), writing
/// to `out`.
pub fn make_formatter(
    spec: &QuerySpec,
    default: Formatter,
    out: Box<dyn Write>,
) -> Result<Box<dyn RecordFormatter>, FormatError> {
    let format = spec
        .format
        .clone()
        .unwrap_or_else(|| FormatSpec::new(default));
    Ok(match format.formatter {
        Formatter::Cali => Box::new(cali::CaliFormatter::new(out)),
        Formatter::Expand => Box::new(expand::ExpandFormatter::new(spec, out)),
        Formatter::Table => Box::new(table::TableFormatter::new(spec, &format, out)?),
        other => {
            return Err(FormatError(format!(
                "The {} formatter is not available",
                other.name()
            )));
        }
    })
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

/// A record's values as text, one entry per attribute: per reference entry
/// the attributes on its path (nested values joined root first with `/`),
/// then one per immediate entry. References come before immediates, as
/// the reference's reader orders them.
pub(crate) fn text_columns(db: &MetadataDb, record: &Record) -> Vec<(Id, String)> {
    let mut canonical = Record {
        kind: record.kind,
        entries: Vec::with_capacity(record.entries.len()),
    };
    canonical.entries.extend(
        record
            .entries
            .iter()
            .filter(|e| matches!(e, caliper_data::Entry::Reference(_)))
            .cloned(),
    );
    canonical.entries.extend(
        record
            .entries
            .iter()
            .filter(|e| matches!(e, caliper_data::Entry::Immediate(..)))
            .cloned(),
    );
    db.expand_paths(&canonical)
        .into_iter()
        .map(|(attr, values)| {
            let text = values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("/");
            (attr, text)
        })
        .collect()
}

/// The name to show for an attribute: the query's alias, else the name.
pub(crate) fn display_name<'a>(spec: &'a QuerySpec, name: &'a str) -> &'a str {
    spec.alias(name).unwrap_or(name)
}
