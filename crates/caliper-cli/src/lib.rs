//! Caliper's command-line tools. The binaries live in `src/bin`; this
//! library holds what they share.

pub mod args;
pub mod attribute_list;
pub mod progress;
