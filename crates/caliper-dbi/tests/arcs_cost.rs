//! What `arcs` costs beside `fcount`: entries of the table of call arcs
//! and arc records only for the call sites calls came from, and no more
//! stops than `fcount` on a compiler of tens of thousands of functions and
//! the processes after it.

mod common;

use caliper_data::Variant;
use common::{arc_figure, run_debugging_arcs, run_in};
use std::path::Path;

#[test]
fn arc_records_are_made_only_for_the_sites_calls_came_from() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "idle_sites", &[]);
    let file = dir.path().join("arcs.cali");
    let options = ["-c", "arcs", "-i", "target", "-o", file.to_str().unwrap()];
    let (output, stderr) = run_debugging_arcs(dir.path(), &options, "./idle_sites", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "3000\n");
    // 302 call sites in the code, 2 of them called (the entries freed once
    // the program ended).
    assert_eq!(arc_figure(&stderr, " of ") + arc_figure(&stderr, " freed"), 2, "entries claimed: {stderr}");
    assert_eq!(arc_figure(&stderr, " arc records"), 2, "{stderr}");
    let from_main = common::expanded_records(&file)
        .into_iter()
        .filter(|r| r.iter().any(|(a, v)| a == "dbi.caller" && *v == Variant::Str("main".into())))
        .count();
    assert_eq!(from_main, 2, "the arcs in the results");
}

#[test]
fn a_compiler_leaves_counter_slots_for_the_processes_after_it() {
    common::require("/usr/bin/gcc");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::source("attach.c"), dir.path().join("small.c")).unwrap();
    let run = |collector: &str| {
        let file = dir.path().join(format!("{collector}.cali"));
        let options = ["-c", collector, "-o", file.to_str().unwrap()];
        let output = run_in(dir.path(), &options, "/usr/bin/gcc", &["-O2", "-c", "small.c", "-o", "small.o"]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(Path::new(&dir.path().join("small.o")).exists());
        common::traps(&file)
    };
    // cc1's 45,000 functions, its assembler and their libraries get arc
    // trampolines ahead of their calls, as under fcount; new call sites
    // cost no stop.
    let fcount = run("fcount");
    let arcs = run("arcs");
    assert!(arcs < fcount + 1000, "{arcs} stops under arcs, {fcount} under fcount");
}
