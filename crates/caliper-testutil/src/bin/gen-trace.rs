//! Writes the synthetic benchmark trace to standard output.
//!
//! Usage: `gen-trace [RECORDS]` (default 2000000, about 108 MB).

use std::io::{self, BufWriter, Write};

fn main() -> io::Result<()> {
    let records = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("RECORDS: {e}")))?,
        None => 2_000_000,
    };
    let mut out = BufWriter::new(io::stdout().lock());
    caliper_testutil::synthetic::write_event_trace(&mut out, records)?;
    out.flush()
}
