//! `trace-event`: an event trace as Chrome's trace-event JSON, which
//! Perfetto's UI and `chrome://tracing` open, laid out as the reference's
//! converter (`cali2traceevent.py`) writes it: each region instance is one
//! complete event (`"ph": "X"`, the value as its name, the region
//! attribute as its category, begin time and duration in microseconds),
//! written when it ends, and the run's globals as `otherData`. A CUDA
//! device's work (`cuda.activities`) is a complete event of its own on the
//! process's thread `"cuda"`, named as the kernel (or the copy's
//! direction), its category the activity's kind.
//!
//! Written as the records arrive: memory holds the open regions of each
//! thread, not the trace.

use super::RecordFormatter;
use super::json::quote;
use super::timeline::{DeviceWork, Mark, Moment, Target, Timeline};
use crate::spec::FormatSpec;
use caliper_data::hash::FxHashMap;
use caliper_data::{MetadataDb, Record, RecordKind, Variant};
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};

/// Writes complete events as regions end.
pub struct TraceEventFormatter {
    out: BufWriter<Box<dyn Write>>,
    timeline: Timeline,
    moment: Moment,
    /// Begin times (µs) of the open regions, per process, thread and
    /// region attribute, innermost last.
    open: FxHashMap<(i64, i64, Target), Vec<f64>>,
    /// Whether an event has been written (for the separators).
    started: bool,
    event: String,
    /// Event names and categories as JSON strings, made once each.
    names: FxHashMap<Variant, String>,
    categories: Vec<String>,
}

impl TraceEventFormatter {
    /// A formatter for the FORMAT's arguments (`pid-attributes`,
    /// `tid-attributes`, `counters`; see [`Timeline::new`]).
    pub fn new(format: &FormatSpec, out: Box<dyn Write>) -> TraceEventFormatter {
        TraceEventFormatter {
            out: BufWriter::with_capacity(64 * 1024, out),
            timeline: Timeline::new(format, false),
            moment: Moment::default(),
            open: FxHashMap::default(),
            started: false,
            event: String::new(),
            names: FxHashMap::default(),
            categories: Vec::new(),
        }
    }

    /// Writes the event in `self.event`, opening the document before the
    /// first one.
    fn write_event(&mut self) -> io::Result<()> {
        let separator: &[u8] = if self.started { b", " } else { b"{\"traceEvents\": [" };
        self.started = true;
        self.out.write_all(separator)?;
        self.out.write_all(self.event.as_bytes())
    }

    fn complete_event(&mut self, attr: Target, value: &Variant, end_us: f64) -> io::Result<()> {
        let (pid, tid) = (self.moment.pid, self.moment.tid);
        let Some(begin_us) = self.open.get_mut(&(pid, tid, attr)).and_then(Vec::pop) else {
            return Ok(()); // an end without its begin: no event, as the reference
        };
        if !self.names.contains_key(value) {
            self.names.insert(value.clone(), quote(&value.to_string()));
        }
        while self.categories.len() <= attr {
            self.categories.push(quote(self.timeline.target_name(self.categories.len())));
        }
        let (name, category) = (&self.names[value], &self.categories[attr]);
        complete_event_json(&mut self.event, pid, tid, name, category, begin_us, end_us);
        self.write_event()
    }

    /// The complete event of work the device did, on the process's
    /// `"cuda"` thread.
    fn device_event(&mut self, work: &DeviceWork) -> io::Result<()> {
        let (name, kind) = (quote(&work.name.to_string()), quote(&work.kind.to_string()));
        let (begin_us, end_us) = (work.start_ns as f64 * 1e-3, work.end_ns as f64 * 1e-3);
        complete_event_json(&mut self.event, self.moment.pid, "\"cuda\"", &name, &kind, begin_us, end_us);
        self.write_event()
    }

    fn counter_events(&mut self, db: &MetadataDb, ts_us: f64) -> io::Result<()> {
        let (pid, tid) = (self.moment.pid, self.moment.tid);
        for i in 0..self.moment.counters.len() {
            let (attr, value) = self.moment.counters[i];
            let Some(name) = db.attribute(attr).map(|a| quote(a.name())) else { continue };
            if !value.is_finite() {
                continue;
            }
            self.event.clear();
            write!(self.event, "{{\"pid\": {pid}, \"tid\": {tid}, \"ph\": \"C\", \"name\": {name}, \"ts\": ")
                .expect("write to String");
            push_json_float(&mut self.event, ts_us);
            write!(self.event, ", \"args\": {{{name}: ").expect("write to String");
            push_json_float(&mut self.event, value);
            self.event.push_str("}}");
            self.write_event()?;
        }
        Ok(())
    }
}

/// A complete event (`"ph": "X"`) of process `pid` and thread `tid` (a
/// number, or a JSON string), `name` and `category` as JSON strings, in
/// `out`.
fn complete_event_json(
    out: &mut String,
    pid: i64,
    tid: impl std::fmt::Display,
    name: &str,
    category: &str,
    begin_us: f64,
    end_us: f64,
) {
    out.clear();
    write!(out, "{{\"pid\": {pid}, \"tid\": {tid}, \"ph\": \"X\", \"name\": {name}, \"cat\": {category}, \"ts\": ")
        .expect("write to String");
    push_json_float(out, begin_us);
    out.push_str(", \"dur\": ");
    push_json_float(out, end_us - begin_us);
    out.push('}');
}

/// Appends a finite double as Python's `json` writes it: always with a
/// fraction or an exponent, so that it reads back as a float (Rust's
/// shortest round-trip digits are Python's `repr` digits).
fn push_json_float(out: &mut String, value: f64) {
    let start = out.len();
    write!(out, "{value}").expect("write to String");
    if !out[start..].contains(['.', 'e', 'E']) {
        out.push_str(".0");
    }
}

impl RecordFormatter for TraceEventFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        let mut moment = std::mem::take(&mut self.moment);
        let timed = self.timeline.read(db, record, &mut moment);
        self.moment = moment;
        if !timed {
            return Ok(());
        }
        if let Some(work) = self.moment.device.take() {
            return self.device_event(&work);
        }
        // The reference's microseconds: nanoseconds times 1e-3, so that
        // begin times and durations are the same doubles.
        let ts_us = self.moment.time_ns as f64 * 1e-3;
        let marks = std::mem::take(&mut self.moment.marks);
        let mut result = Ok(());
        for mark in &marks {
            match mark {
                Mark::Begin { attr, .. } => {
                    self.open.entry((self.moment.pid, self.moment.tid, *attr)).or_default().push(ts_us)
                }
                Mark::End { attr, value } => result = result.and_then(|()| self.complete_event(*attr, value, ts_us)),
            }
        }
        self.moment.marks = marks;
        result?;
        self.counter_events(db, ts_us)
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        if !self.started {
            self.out.write_all(b"{\"traceEvents\": [")?;
        }
        self.out.write_all(b"], \"otherData\": {")?;
        let mut separator = "";
        for (attr, values) in db.expand_paths(&db.globals()) {
            let Some(name) = db.attribute(attr).map(|a| quote(a.name())) else { continue };
            let texts: Vec<String> = values.iter().map(|v| quote(&v.to_string())).collect();
            let value = match texts.as_slice() {
                [one] => one.clone(),
                many => format!("[{}]", many.join(", ")),
            };
            write!(self.out, "{separator}{name}: {value}")?;
            separator = ", ";
        }
        self.out.write_all(b"}}")?;
        self.out.flush()
    }
}
