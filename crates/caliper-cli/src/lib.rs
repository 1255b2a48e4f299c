//! Caliper's command-line tools. The binaries live in `src/bin`; this
//! library holds what they share.

pub mod args;
pub mod attribute_list;
pub mod progress;

/// A tool's `--version` line: the version of the Caliper API it
/// implements (what scripts compare with the reference's), then this
/// implementation's, e.g. `cali-query 2.15.0 (caliper-rs 0.1.0)`.
pub fn version_line(tool: &str) -> String {
    format!("{tool} {} (caliper-rs {})", caliper::runtime::API_VERSION, caliper::runtime::VERSION)
}
