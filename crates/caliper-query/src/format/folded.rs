//! `folded` and `flamegraph`: records laid out by their path (as the tree
//! formatter does: nested attributes, or those of `path-attributes`, root
//! first), one number each (the `metric` argument's attribute, else the
//! first numeric attribute the query selects), summed per path. `folded`
//! writes the stacks as flame graph tools read them (`main;solve;kernel
//! 1234`), `flamegraph` draws them as an SVG (inferno). Both carry whole
//! numbers, as flame graph tools count: fractional sums (seconds of a
//! region profile) are scaled up by a power of ten, which the output names
//! (the flame graph in its frames' titles, folded stacks in a first
//! `# <metric> x 1e-N` line, which the tools skip). No stack to write is
//! an error naming the metric, not an empty output.

use super::{PathAttributes, RecordFormatter};
use crate::spec::{FormatSpec, QuerySpec, Selection};
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Record, RecordKind, Variant};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Folded stacks, or a flame graph of them.
pub struct FoldedFormatter {
    out: Box<dyn Write>,
    path: PathAttributes,
    /// The attribute to take the number from, if named.
    metric: Option<String>,
    /// The query's selected attributes, in order (for the default metric).
    selected: Vec<String>,
    /// The attribute the first number came from.
    counted: Option<Id>,
    /// Per path, the sum of its numbers.
    stacks: BTreeMap<String, f64>,
    /// Draw an SVG, with this title.
    svg: Option<String>,
}

impl FoldedFormatter {
    /// A formatter for the query and its FORMAT arguments; `svg` draws the
    /// flame graph.
    pub fn new(spec: &QuerySpec, format: &FormatSpec, out: Box<dyn Write>, svg: bool) -> FoldedFormatter {
        let selected = match &spec.select {
            Selection::List(list) => list.clone(),
            _ => Vec::new(),
        };
        FoldedFormatter {
            out,
            path: PathAttributes::of(format),
            metric: format.arg("metric").map(str::to_string),
            selected,
            counted: None,
            stacks: BTreeMap::new(),
            svg: svg.then(|| format.arg("title").unwrap_or("Flame Graph").to_string()),
        }
    }

    /// The record's path labels, root first: its references' path
    /// attributes, then its immediate ones.
    fn labels(&self, db: &MetadataDb, record: &Record) -> Vec<String> {
        let mut labels = Vec::new();
        for node in record.refs() {
            let mut chain = Vec::new();
            let mut next = Some(node);
            while let Some(id) = next {
                let Some(n) = db.node(id) else { break };
                if self.path.contains(db, n.attribute) {
                    chain.push(label(&n.value));
                }
                next = n.parent;
            }
            labels.extend(chain.into_iter().rev());
        }
        for (attr, value) in record.immediates() {
            if self.path.contains(db, attr) {
                labels.push(label(value));
            }
        }
        labels
    }

    /// The record's number and its attribute: the metric's value, else the
    /// first selected attribute with a numeric one, else the first numeric
    /// attribute.
    fn number(&self, db: &MetadataDb, record: &Record) -> Option<(Id, f64)> {
        let value_of = |name: &str| -> Option<(Id, f64)> {
            let attr: Id = db.attribute_by_name(name)?.id();
            let (_, value) = record.immediates().find(|(a, _)| *a == attr)?;
            Some((attr, numeric(value)?))
        };
        let (attr, value) = match &self.metric {
            Some(name) => value_of(name),
            None => self.selected.iter().find_map(|name| value_of(name)).or_else(|| {
                record
                    .immediates()
                    .filter(|(a, _)| !self.path.contains(db, *a))
                    .find_map(|(a, v)| Some((a, numeric(v)?)))
            }),
        }?;
        Some((attr, value.max(0.0)))
    }

    /// What the numbers count, for the output and its errors: the metric,
    /// else the attribute they came from, else the first selected one.
    fn count_name(&self, db: &MetadataDb) -> String {
        let counted = self.counted.and_then(|id| db.attribute(id)).map(|a| a.name().to_string());
        self.metric
            .clone()
            .or(counted)
            .or_else(|| self.selected.first().cloned())
            .unwrap_or_else(|| "samples".to_string())
    }
}

/// The power of ten that makes whole numbers of `values` keep three
/// significant digits of the smallest positive one (0 if they are whole
/// already; at most 9, nanoseconds of seconds).
fn scale_exponent(values: impl Iterator<Item = f64>) -> i32 {
    let mut smallest = f64::INFINITY;
    let mut fractional = false;
    for v in values.filter(|v| *v > 0.0) {
        smallest = smallest.min(v);
        fractional |= v.fract() != 0.0;
    }
    if !fractional {
        return 0;
    }
    (3.0 - smallest.log10().floor()).clamp(0.0, 9.0) as i32
}

/// A path label as folded stacks allow it: no `;` (the separator), no
/// line break, and not empty (a stack of empty names has no text for the
/// tools to read, as `" 42"`).
fn label(value: &Variant) -> String {
    let text = value.to_string().replace([';', '\n', '\r'], "_");
    if text.trim().is_empty() { format!("({text:?})") } else { text }
}

fn numeric(value: &Variant) -> Option<f64> {
    match *value {
        Variant::Int(i) => Some(i as f64),
        Variant::Uint(u) => Some(u as f64),
        Variant::Double(d) => Some(d),
        _ => None,
    }
}

impl RecordFormatter for FoldedFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        let labels = self.labels(db, record);
        if let (false, Some((attr, n))) = (labels.is_empty(), self.number(db, record)) {
            self.counted.get_or_insert(attr);
            *self.stacks.entry(labels.join(";")).or_insert(0.0) += n;
        }
        Ok(())
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        let exponent = scale_exponent(self.stacks.values().copied());
        let scale = 10f64.powi(exponent);
        let lines: Vec<String> = self
            .stacks
            .iter()
            .map(|(stack, &n)| (stack, (n * scale).round() as u64))
            .filter(|&(_, n)| n > 0)
            .map(|(stack, n)| format!("{stack} {n}"))
            .collect();
        if lines.is_empty() {
            let (format, verb) = if self.svg.is_some() { ("flamegraph", "draw") } else { ("folded", "fold") };
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{format}: no path has a positive {} to {verb}", self.count_name(db)),
            ));
        }
        let count_name = match exponent {
            0 => self.count_name(db),
            e => format!("{} x 1e-{e}", self.count_name(db)),
        };
        match &self.svg {
            None => {
                if exponent != 0 {
                    writeln!(self.out, "# {count_name}")?;
                }
                for line in &lines {
                    writeln!(self.out, "{line}")?;
                }
            }
            Some(title) => {
                let mut options = inferno::flamegraph::Options::default();
                options.title = title.clone();
                options.count_name = count_name;
                inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut self.out)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("flamegraph: {e}")))?;
            }
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{QueryProcessor, parse_query};
    use caliper_data::cali::read_records;
    use std::sync::{Arc, Mutex};

    /// Output collected in memory.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The output of `query` over the reference's event trace.
    fn run(query: &str) -> String {
        run_on("cxx-example.event-trace.cali", query).unwrap()
    }

    /// The output of `query` over a fixture, or the error of its end.
    fn run_on(fixture: &str, query: &str) -> io::Result<String> {
        let fixture = caliper_testutil::fixture(fixture);
        let mut db = MetadataDb::new();
        let records = read_records(&mut db, "input", &std::fs::read(fixture).unwrap()).unwrap();
        let spec = parse_query(query).unwrap();
        let out = Shared::default();
        let formatter =
            super::super::make_formatter(&spec, crate::spec::Formatter::Expand, Box::new(out.clone())).unwrap();
        let mut processor = QueryProcessor::with_formatter(&spec, formatter).unwrap();
        for record in &records {
            processor.process(&mut db, record).unwrap();
        }
        processor.finish(&mut db)?;
        Ok(String::from_utf8(out.0.lock().unwrap().clone()).unwrap())
    }

    const PROFILE: &str = "cxx-example.hatchet-region-profile.cali";

    #[test]
    fn fractional_sums_are_scaled_and_the_scale_named() {
        // Seconds, the smallest 4.587e-06: whole nanoseconds.
        let text = run_on(PROFILE, "select sum#sum#time.duration format folded").unwrap();
        assert_eq!(
            text,
            "# sum#sum#time.duration x 1e-9\nmain 16363\nmain;init 4587\nmain;mainloop 25097\nmain;mainloop;foo 5541430\n"
        );
        // Whole numbers are written as they are.
        assert!(!run("select count() group by path format folded").starts_with('#'));
    }

    #[test]
    fn nothing_to_fold_is_an_error_naming_the_metric() {
        for (format, verb) in [("folded", "fold"), ("flamegraph", "draw")] {
            let query = format!("select sum#sum#time.duration where nosuch format {format}");
            let e = run_on(PROFILE, &query).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert_eq!(e.to_string(), format!("{format}: no path has a positive sum#sum#time.duration to {verb}"));
        }
    }

    #[test]
    fn region_paths_fold_with_their_counts() {
        let text = run("select count() group by path format folded");
        assert!(text.lines().all(|l| l.rsplit_once(' ').is_some_and(|(_, n)| n.parse::<u64>().is_ok())), "{text}");
        assert!(text.lines().any(|l| l.starts_with("main;")), "{text}");
        let stacks: Vec<&str> = text.lines().map(|l| l.rsplit_once(' ').unwrap().0).collect();
        let mut sorted = stacks.clone();
        sorted.dedup();
        assert_eq!(stacks, sorted, "one line per path");
    }

    #[test]
    fn empty_names_get_a_visible_label() {
        assert_eq!(label(&Variant::string("")), "(\"\")");
        assert_eq!(label(&Variant::string(" ")), "(\" \")");
        assert_eq!(label(&Variant::string("a;b\nc")), "a_b_c");
    }

    #[test]
    fn a_flamegraph_is_an_svg_of_the_paths() {
        let svg = run("select count() group by path format flamegraph(title=\"Regions\")");
        assert!(svg.starts_with("<?xml") && svg.contains("<svg") && svg.contains("Regions"), "{svg}");
        assert!(svg.contains(">main<") || svg.contains("main ("), "{}", &svg[..svg.len().min(2000)]);
    }
}
