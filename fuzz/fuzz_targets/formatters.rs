//! Fuzzes the output formatters: the first line of the input is a CalQL
//! query (`select *` if it is not one), the rest a `.cali` stream. The
//! stream's records (up to the first bad line, as cali-query prints them)
//! go through the query with its own FORMAT and with each of table, tree,
//! json, json-split, trace-event, perfetto and flamegraph. Nothing may
//! panic, and the JSON formats must write JSON.

#![no_main]

use caliper_data::MetadataDb;
use caliper_data::cali::CaliReader;
use caliper_query::spec::{FormatSpec, Formatter};
use caliper_query::{QueryProcessor, QuerySpec, parse_query};
use caliper_testutil::SharedOutput;
use libfuzzer_sys::fuzz_target;

/// Runs `spec` over the stream and returns what the formatter wrote.
fn run(spec: &QuerySpec, stream: &[u8]) -> Option<Vec<u8>> {
    let out = SharedOutput::default();
    let mut processor = QueryProcessor::new(spec, Formatter::Cali, Box::new(out.clone())).ok()?;
    let mut db = MetadataDb::new();
    let _ = CaliReader::new(&mut db, "fuzz").read(stream, |db, r| processor.process(db, r).expect("write to memory"));
    match processor.finish(&mut db) {
        // A flame graph of nothing: no path has a number to draw.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return None,
        result => result.expect("write to memory"),
    }
    Some(out.contents())
}

fuzz_target!(|data: &[u8]| {
    let (first, stream) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&data[..0], data),
    };
    let spec = std::str::from_utf8(first)
        .ok()
        .and_then(|q| parse_query(q).ok())
        .unwrap_or_else(|| parse_query("select *").expect("a valid query"));
    run(&spec, stream);
    for formatter in [
        Formatter::Table,
        Formatter::Tree,
        Formatter::Json,
        Formatter::JsonSplit,
        Formatter::TraceEvent,
        Formatter::Perfetto,
        Formatter::FlameGraph,
    ] {
        let mut spec = spec.clone();
        // Keep the query's own arguments when it asks for this formatter.
        if spec.format.as_ref().is_none_or(|f| f.formatter != formatter) {
            spec.format = Some(FormatSpec::new(formatter));
        }
        let Some(out) = run(&spec, stream) else { continue };
        if matches!(formatter, Formatter::Json | Formatter::JsonSplit | Formatter::TraceEvent)
            && !out.is_empty()
            && let Err(e) = serde_json::from_slice::<serde_json::Value>(&out)
        {
            panic!("{formatter:?} wrote invalid JSON ({e}):\n{}", String::from_utf8_lossy(&out));
        }
    }
});
