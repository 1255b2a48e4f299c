//! The `sample` collector: call stacks sampled through perf_event_open,
//! on CPU time or another event, named by the program's functions.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// Runs spin under cali-run with `options`; its output and result file.
fn sample_spin(dir: &Path, options: &[&str]) -> (Output, PathBuf) {
    let file = dir.join("spin.cali");
    let mut all = options.to_vec();
    all.extend(["-o", file.to_str().unwrap()]);
    let output = common::run_in(dir, &all, "./spin", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "spun\n");
    assert_eq!(output.status.code(), Some(6), "{}", String::from_utf8_lossy(&output.stderr));
    (output, file)
}

/// The sampled stacks as "outermost;...;innermost" with their counts.
fn stacks(file: &Path) -> Vec<(String, u64)> {
    use caliper_data::Variant;
    let mut stacks = Vec::new();
    for record in common::expanded_records(file) {
        let mut frames = Vec::new();
        let mut count = 0;
        for (name, value) in record {
            match (name.as_str(), value) {
                ("dbi.frame", Variant::Str(f)) => frames.push(f.to_string()),
                ("dbi.samples", Variant::Uint(n)) => count = n,
                _ => {}
            }
        }
        if count > 0 {
            stacks.push((frames.join(";"), count));
        }
    }
    stacks
}

/// Half a second of CPU time, at about 1 kHz, mostly in main > outer > spin.
fn assert_spin_sampled(stacks: &[(String, u64)]) {
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert!(total >= 100, "half a second at 1 kHz: {stacks:?}");
    let in_spin: u64 = stacks.iter().filter(|s| s.0.contains("main;outer;spin")).map(|s| s.1).sum();
    assert!(in_spin * 10 >= total * 8, "most samples in main > outer > spin: {stacks:?}");
    assert!(!stacks.iter().any(|s| s.0.contains("outer;main")), "outermost first");
}

#[test]
fn samples_name_the_call_stack_of_a_busy_function_on_either_clock() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "spin", &["-fno-omit-frame-pointer"]);
    for options in [&["-c", "sample"][..], &["--sample-event", "cpu-clock"]] {
        let (output, file) = sample_spin(dir.path(), options);
        assert!(!String::from_utf8_lossy(&output.stderr).contains("== CALIPER"), "no fallback");
        assert_spin_sampled(&stacks(&file));
    }
}

#[test]
fn a_hardware_event_samples_or_falls_back_to_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "spin", &["-fno-omit-frame-pointer"]);
    let (output, file) = sample_spin(dir.path(), &["--sample-event", "cycles"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let fallback = "== CALIPER: cali-run: cannot sample on cycles (";
    // Where the processor's counters are visible, cycles open; in a
    // virtual machine without them, the one-line message and task-clock.
    let cycles_open = caliper_perf::open(
        &caliper_perf::PerfEventAttr {
            kind: caliper_perf::PERF_TYPE_HARDWARE,
            flags: caliper_perf::EXCLUDE_KERNEL | caliper_perf::EXCLUDE_HV,
            ..Default::default()
        },
        0,
        -1,
        -1,
        0,
    )
    .is_ok();
    if cycles_open {
        assert!(!stderr.contains(fallback), "{stderr}");
    } else {
        let line = stderr.lines().find(|l| l.starts_with(fallback)).unwrap_or_else(|| panic!("{stderr}"));
        assert!(line.ends_with("); sampling on task-clock instead"), "{line}");
    }
    assert_spin_sampled(&stacks(&file));
}

#[test]
fn an_unknown_event_is_a_usage_error() {
    let output = common::cali_run().args(["--sample-event", "spoons", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("== CALIPER: cali-run: unknown event `spoons`"), "{stderr}");
}

/// Runs deep_spin, built with `flags`, under `-c sample`: its stacks, and
/// the samples whose call chain was cut.
fn sample_deep_spin(flags: &[&str]) -> (Vec<(String, u64)>, u64) {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "deep_spin", flags);
    let file = dir.path().join("deep_spin.cali");
    let output = common::run_in(dir.path(), &["-c", "sample", "-o", file.to_str().unwrap()], "./deep_spin", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "spun\n");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stacks = stacks(&file);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert!(total >= 100, "half a second at 1 kHz: {stacks:?}");
    // A frame is a function or a module and offset, never a bare address.
    for (stack, _) in &stacks {
        for frame in stack.split(';') {
            assert!(!frame.starts_with("0x"), "bare address {frame} in {stack}: {stacks:?}");
        }
    }
    let in_hot: u64 = stacks.iter().filter(|s| s.0.ends_with("hot")).map(|s| s.1).sum();
    assert!(in_hot * 10 >= total * 8, "most samples in hot: {stacks:?}");
    (stacks, common::global_count(&file, "dbi.sample.truncated"))
}

/// Most samples show hot's callers up to main.
fn assert_callers_of_hot(stacks: &[(String, u64)]) {
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let full: u64 = stacks.iter().filter(|s| s.0.contains("main;descend;descend;descend;hot")).map(|s| s.1).sum();
    assert!(full * 10 >= total * 8, "most samples in main > descend x3 > hot: {stacks:?}");
}

/// RBP points into text while hot runs: a frame-pointer walk from there
/// reads the text as return addresses.
const TEXT_IN_RBP: [&str; 2] = ["-fomit-frame-pointer", "-DTEXT_IN_RBP"];

#[test]
fn frame_pointers_give_every_caller() {
    let (stacks, _) = sample_deep_spin(&["-fno-omit-frame-pointer"]);
    assert_callers_of_hot(&stacks);
}

#[test]
fn unwind_tables_give_every_caller_without_frame_pointers() {
    let (stacks, truncated) = sample_deep_spin(&TEXT_IN_RBP);
    assert_callers_of_hot(&stacks);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert!(truncated * 10 < total, "few chains cut ({truncated} of {total}): {stacks:?}");
}

#[test]
fn a_frame_pointer_walk_through_data_is_cut_and_counted() {
    // Neither unwind tables nor frame pointers: the walk from hot goes
    // through the text.
    let no_tables = [&TEXT_IN_RBP[..], &["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]].concat();
    let (stacks, truncated) = sample_deep_spin(&no_tables);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert!(truncated * 10 >= total * 8, "most chains cut ({truncated} of {total}): {stacks:?}");
    // The text report says so in one line.
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "deep_spin", &no_tables);
    let output = common::run_in(dir.path(), &["-c", "sample"], "./deep_spin", &[]);
    let report = String::from_utf8_lossy(&output.stderr);
    let cut = " samples with the call chain cut at a return address outside the program's code";
    assert!(report.lines().any(|l| l.starts_with("== ") && l.contains(cut)), "{report}");
}

#[test]
fn a_sample_in_a_trampoline_names_its_function_and_callers() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "tiny_calls", &[]);
    let file = dir.path().join("tiny_calls.cali");
    let output =
        common::run_in(dir.path(), &["-c", "fcount,sample", "-o", file.to_str().unwrap()], "./tiny_calls", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "1\n");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stacks = stacks(&file);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    assert!(total >= 50, "{stacks:?}");
    let in_loop: u64 = stacks.iter().filter(|s| s.0.contains("main;loop")).map(|s| s.1).sum();
    assert!(in_loop * 10 >= total * 9, "most samples in main > loop (> tiny): {stacks:?}");
}
