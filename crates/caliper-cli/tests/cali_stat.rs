//! cali-stat: the statistics of a known file, options and errors.

use caliper_testutil::{fixture, repro_input};
use std::process::{Command, Output};

fn cali_stat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cali-stat")).args(args).output().unwrap()
}

/// The value printed on the line `label` within `section`.
fn value<'a>(text: &'a str, section: &str, label: &str) -> &'a str {
    let mut lines = text.lines().skip_while(|l| *l != section).skip(1);
    let line =
        lines.find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("{section}/{label} in\n{text}"));
    line.trim_start()[label.len()..].trim()
}

#[test]
fn counts_of_the_example_trace() {
    let trace = fixture("cxx-example.event-trace.cali");
    let out = cali_stat(&[trace.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // 67 node lines, 22 snapshots, one globals record.
    assert_eq!(value(&text, "Number of records", "Total"), "90");
    assert_eq!(value(&text, "Number of records", "Nodes"), "67");
    assert_eq!(value(&text, "Number of records", "Snapshots"), "22");
    assert_eq!(value(&text, "Number of elements", "Nodes"), "268");
    // Every snapshot has two references; 75 immediates in all.
    assert_eq!(value(&text, "Number of elements", "Tree refs"), "44");
    assert_eq!(value(&text, "Number of elements", "Direct val"), "150");
    assert_eq!(value(&text, "Elements/snapshot", "Min"), "6");
    assert_eq!(value(&text, "Elements/snapshot", "Max"), "12");
    assert!(!text.contains("Reuse statistics"));
}

#[test]
fn version() {
    // On standard error, as cali-query's.
    let out = cali_stat(&["--version"]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("cali-stat 2.15.0 (caliper-rs {})\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn reuse_statistics() {
    let trace = fixture("cxx-example.event-trace.cali");
    let text = String::from_utf8(cali_stat(&["-r", trace.to_str().unwrap()]).stdout).unwrap();
    let region = text.lines().find(|l| l.starts_with("region ")).unwrap();
    let cols: Vec<&str> = region.split_whitespace().collect();
    // region: 3 nodes (main, init, foo), 3 values, used 26 times.
    assert_eq!(cols, ["region", "3", "3", "26", "8.67", "8.67"]);
}

#[test]
fn errors() {
    let trace = fixture("cxx-example.event-trace.cali");
    let out = cali_stat(&[trace.to_str().unwrap(), "-o", "/nonexistent/dir/stats.txt"]);
    assert_eq!(out.status.code(), Some(254));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("cali-stat: error: could not open output file /nonexistent/dir/stats.txt")
    );
    let out = cali_stat(&["--frobnicate"]);
    assert_eq!(out.status.code(), Some(255));
    let out = cali_stat(&["/nonexistent.cali"]);
    assert_eq!(out.status.code(), Some(1));
    let out = cali_stat(&["--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("Usage: cali-stat"));
}

#[test]
fn a_bad_line_still_prints_the_statistics_of_what_was_read() {
    let truncated = repro_input("truncated.cali");
    let out = cali_stat(&[truncated.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("cali-stat: error: {}:17:18: field \"att\" has no value (truncated line?)\n", truncated.display())
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(value(&text, "Number of records", "Nodes"), "14");
    assert_eq!(value(&text, "Number of records", "Snapshots"), "2");
}
