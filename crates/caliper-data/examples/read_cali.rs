//! Reads `.cali` files and prints how many records of each kind they hold;
//! a quick way to measure the reader's speed and memory on real files:
//!
//! ```text
//! cargo run --release -p caliper-data --example read_cali -- [--parallel] trace.cali
//! ```

use caliper_data::MetadataDb;
use caliper_data::cali::{CaliReader, open_input};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let mut parallel = false;
    let mut db = MetadataDb::new();
    for arg in std::env::args().skip(1) {
        if arg == "--parallel" {
            parallel = true;
            continue;
        }
        let start = Instant::now();
        let mut entries = 0u64;
        let sink = |_: &mut MetadataDb, r: &caliper_data::Record| {
            entries += r.entries.len() as u64;
            Ok::<(), std::convert::Infallible>(())
        };
        let result =
            open_input(Path::new(&arg)).map_err(caliper_data::cali::StreamError::Read).and_then(|(name, input)| {
                let mut reader = CaliReader::new(&mut db, name);
                if parallel { reader.try_read_parallel(input, sink) } else { reader.try_read(input, sink) }
            });
        match result {
            Ok(s) => {
                let secs = start.elapsed().as_secs_f64();
                let bytes = std::fs::metadata(&arg).map(|m| m.len()).unwrap_or(0);
                println!(
                    "{arg}: {} nodes, {} snapshots, {} globals, {entries} entries in {secs:.3} s ({:.0} MB/s)",
                    s.nodes,
                    s.snapshots,
                    s.globals,
                    bytes as f64 / secs / 1e6
                );
            }
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
