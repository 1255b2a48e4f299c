//! The quick start's program: it runs under a config and shows its region
//! tree, and building it builds the runtime's own dependencies only, none
//! of what the runtime's tests and benchmarks need.

use std::process::Command;

#[test]
fn the_runtime_report_shows_the_demos_regions() {
    let out = Command::new(env!("CARGO_BIN_EXE_demo"))
        .env("CALI_CONFIG", "runtime-report,output=stdout")
        .output()
        .expect("the demo runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = String::from_utf8(out.stdout).unwrap();
    let paths: Vec<&str> = report.lines().skip(1).filter_map(|line| line.split_whitespace().next()).collect();
    assert_eq!(paths, ["main", "init", "mainloop", "foo"], "{report}");
}

#[test]
fn the_demo_builds_none_of_the_runtimes_test_dependencies() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", "caliper-demo", "-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = tree.lines().filter_map(|line| line.split_whitespace().next()).collect();
    assert!(names.contains(&"caliper"), "{tree}");
    for test_only in ["criterion", "tokio", "tempfile", "proptest", "caliper-testutil", "serde_json"] {
        assert!(!names.contains(&test_only), "{test_only} in the demo's build:\n{tree}");
    }
}
