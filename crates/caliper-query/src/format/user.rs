//! `format`: one line per record from a user format string.

use super::{RecordFormatter, fields};
use crate::spec::FormatSpec;
use caliper_data::{MetadataDb, Record, RecordKind};
use std::io::{self, BufWriter, Write};

/// Padding never exceeds this many characters.
const MAX_PADDING: usize = 80;

/// Writes an optional title line, then one line per record: the format
/// string with every `%[width]attribute%` field replaced by the record's
/// value of the attribute (nested values joined by `/`), left-aligned and
/// padded to `width`. `%%` is a literal `%`.
pub struct UserFormatter {
    out: BufWriter<Box<dyn Write>>,
    segments: Vec<Segment>,
    title: Option<String>,
    title_written: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Field { name: String, width: usize },
}

fn parse_format(format: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    for (i, part) in format.split('%').enumerate() {
        if i % 2 == 0 {
            if !part.is_empty() {
                segments.push(Segment::Literal(part.to_string()));
            }
            continue;
        }
        if part.is_empty() {
            segments.push(Segment::Literal("%".to_string()));
            continue;
        }
        let (width, name) = match part.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
            Some((w, name)) => (w.trim().parse().unwrap_or(0), name),
            None => match part.strip_suffix(']').and_then(|rest| rest.rsplit_once('[')) {
                Some((name, w)) => (w.trim().parse().unwrap_or(0), name),
                None => (0, part),
            },
        };
        segments.push(Segment::Field { name: name.to_string(), width });
    }
    segments
}

impl UserFormatter {
    /// A formatter for `format("<fmt>", "<title>")`.
    pub fn new(format: &FormatSpec, out: Box<dyn Write>) -> UserFormatter {
        UserFormatter {
            out: BufWriter::new(out),
            segments: parse_format(format.arg("format").unwrap_or("")),
            title: format.arg("title").map(str::to_string),
            title_written: false,
        }
    }

    fn write_title(&mut self) -> io::Result<()> {
        if !self.title_written {
            self.title_written = true;
            if let Some(title) = &self.title {
                writeln!(self.out, "{title}")?;
            }
        }
        Ok(())
    }
}

impl RecordFormatter for UserFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        self.write_title()?;
        let fields = fields(db, record);
        let mut line = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) => line.push_str(text),
                Segment::Field { name, width } => {
                    let text = fields
                        .iter()
                        .find(|f| db.attribute(f.attr).is_some_and(|a| a.name() == name))
                        .map_or("", |f| f.text.as_str());
                    line.push_str(text);
                    let pad = width.saturating_sub(text.chars().count()).min(MAX_PADDING);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    fn finish(&mut self, _db: &mut MetadataDb) -> io::Result<()> {
        self.write_title()?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_literals() {
        let field = |name: &str, width| Segment::Field { name: name.into(), width };
        let lit = |t: &str| Segment::Literal(t.into());
        assert_eq!(
            parse_format("%[12]region% took %time%s"),
            vec![field("region", 12), lit(" took "), field("time", 0), lit("s")]
        );
        assert_eq!(parse_format("%region[8]%|100%%"), vec![field("region", 8), lit("|100"), lit("%")]);
    }
}
