//! Writes a synthetic region profile for tree-output stress runs to
//! standard output.
//!
//! Usage: `gen-tree DEPTH SIBLINGS STEP`: a chain of DEPTH nested regions
//! (a record on every STEP-th and the deepest; STEP 0: the deepest only)
//! and SIBLINGS regions side by side under one root.

use std::io::{self, BufWriter, Write};

fn main() -> io::Result<()> {
    let arg = |i: usize, name: &str| -> io::Result<u64> {
        let text = std::env::args().nth(i).unwrap_or_default();
        text.parse().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{name} \"{text}\": {e}")))
    };
    let (depth, siblings, step) = (arg(1, "DEPTH")?, arg(2, "SIBLINGS")?, arg(3, "STEP")?);
    let mut out = BufWriter::new(io::stdout().lock());
    caliper_testutil::synthetic::write_region_tree(&mut out, depth, siblings, step)?;
    out.flush()
}
