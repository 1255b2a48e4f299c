//! Reads `.cali` files and prints how many records of each kind they hold;
//! a quick way to measure the reader's speed and memory on real files:
//!
//! ```text
//! cargo run --release -p caliper-data --example read_cali -- trace.cali
//! ```

use caliper_data::MetadataDb;
use caliper_data::cali::read_path;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let mut db = MetadataDb::new();
    for file in std::env::args().skip(1) {
        let start = Instant::now();
        let mut entries = 0u64;
        match read_path(&mut db, Path::new(&file), |_, r| entries += r.entries.len() as u64) {
            Ok(s) => {
                let secs = start.elapsed().as_secs_f64();
                let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
                println!(
                    "{file}: {} nodes, {} snapshots, {} globals, {entries} entries in {secs:.3} s ({:.0} MB/s)",
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
