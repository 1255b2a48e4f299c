//! Writes the synthetic benchmark trace to standard output.
//!
//! Usage: `gen-trace [--markers] [RECORDS]` (default 2000000, about
//! 108 MB); `--markers` adds the begin and end markers of an `event-trace`
//! (`event.begin#region`, `event.end#region`), which timelines need.

use std::io::{self, BufWriter, Write};

fn main() -> io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let markers = args.first().is_some_and(|a| a == "--markers");
    if markers {
        args.remove(0);
    }
    let records = match args.first() {
        Some(n) => n.parse().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("RECORDS: {e}")))?,
        None => 2_000_000,
    };
    let mut out = BufWriter::new(io::stdout().lock());
    match markers {
        true => caliper_testutil::synthetic::write_marked_event_trace(&mut out, records)?,
        false => caliper_testutil::synthetic::write_event_trace(&mut out, records)?,
    };
    out.flush()
}
