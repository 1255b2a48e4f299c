//! The `callgraph` collector: exact self and inclusive calls of a program
//! whose call graph is known (a function called from two callers, one
//! called from two functions, plain recursion and a cycle of mutual
//! recursion), as `.cali` records, in cali-query's tree and json-split,
//! and in the text report.

mod common;

use caliper_data::Variant;
use std::collections::HashMap;
use std::path::Path;

/// One node of the call graph's tree.
#[derive(Debug, Clone, PartialEq)]
struct GraphRow {
    calls: u64,
    inclusive: f64,
    cycle: Option<u64>,
}

/// The call-graph records of a `.cali` result, by their path (root first).
fn read_graph(file: &Path) -> HashMap<Vec<String>, GraphRow> {
    let mut rows = HashMap::new();
    for record in common::expanded_records(file) {
        let mut path = Vec::new();
        let mut row = GraphRow { calls: 0, inclusive: -1.0, cycle: None };
        for (name, value) in record {
            match (name.as_str(), value) {
                ("dbi.callgraph", Variant::Str(s)) => path.push(s.to_string()),
                ("dbi.calls", Variant::Uint(n)) => row.calls = n,
                ("dbi.calls.inclusive", Variant::Double(x)) => row.inclusive = x,
                ("dbi.cycle", Variant::Uint(n)) => row.cycle = Some(n),
                _ => {}
            }
        }
        if !path.is_empty() {
            assert!(rows.insert(path.clone(), row).is_none(), "one record per place: {path:?}");
        }
    }
    rows
}

/// The row whose path ends with `tail`.
fn row<'a>(rows: &'a HashMap<Vec<String>, GraphRow>, tail: &[&str]) -> &'a GraphRow {
    let tail: Vec<String> = tail.iter().map(|s| s.to_string()).collect();
    let found: Vec<&GraphRow> = rows.iter().filter(|(p, _)| p.ends_with(&tail)).map(|r| r.1).collect();
    assert_eq!(found.len(), 1, "one node at ...{tail:?} in {rows:?}");
    found[0]
}

#[test]
fn self_and_inclusive_calls_are_exact_and_the_cycle_is_one_node() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "callgraph", &[]);
    let file = dir.path().join("cg.cali");
    let output = common::run_in(
        dir.path(),
        &["-c", "callgraph", "-i", "callgraph", "-o", file.to_str().unwrap()],
        "./callgraph",
        &[],
    );
    assert_eq!(output.status.code(), Some(7), "{}", String::from_utf8_lossy(&output.stderr));
    let rows = read_graph(&file);
    let g = |calls, inclusive| GraphRow { calls, inclusive, cycle: None };
    // By hand: leaf 10 calls (8 from shared, 2 from is_odd); shared's
    // 4 + 8 = 12 goes 9 to a (3 of its 4 calls) and 3 to b; the cycle's
    // 3 + 2 calls and is_odd's 2 leaf calls; fact's 5 calls, 4 of them
    // recursive; main's 1 and everything beneath: 1+3+1+4+10+5+5 = 29.
    assert_eq!(row(&rows, &["main"]), &g(1, 29.0));
    assert_eq!(row(&rows, &["main", "a"]), &g(3, 12.0));
    assert_eq!(row(&rows, &["main", "b"]), &g(1, 4.0));
    // Under the caller that calls it most.
    assert_eq!(row(&rows, &["main", "a", "shared"]), &g(4, 12.0));
    assert_eq!(row(&rows, &["main", "a", "shared", "leaf"]), &g(10, 10.0));
    assert_eq!(row(&rows, &["main", "fact"]), &g(5, 5.0), "plain recursion is no cycle");
    let cycle = |calls, inclusive| GraphRow { calls, inclusive, cycle: Some(1) };
    assert_eq!(row(&rows, &["main", "<cycle 1>"]), &cycle(5, 7.0));
    assert_eq!(row(&rows, &["main", "<cycle 1>", "is_even"]), &cycle(3, 3.0));
    assert_eq!(row(&rows, &["main", "<cycle 1>", "is_odd"]), &cycle(2, 4.0), "its calls and its 2 of leaf");
    assert!(!rows.keys().any(|p| p.ends_with(&["is_odd".to_string(), "is_even".to_string()])), "collapsed");

    // cali-query's tree and json-split (Hatchet's input) show the tree.
    let tree = common::query(&file, "select sum(dbi.calls.inclusive) where dbi.callgraph group by path format tree");
    let depth = |name: &str| {
        let line = tree.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).expect(name);
        line.len() - line.trim_start().len()
    };
    assert!(depth("main") < depth("a") && depth("a") < depth("shared") && depth("shared") < depth("leaf"), "{tree}");
    assert!(depth("<cycle 1>") < depth("is_odd"), "{tree}");
    let json = common::query(
        &file,
        "select path,sum(dbi.calls.inclusive) where dbi.callgraph group by path format json-split",
    );
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let labels: Vec<&str> = parsed["nodes"].as_array().unwrap().iter().filter_map(|n| n["label"].as_str()).collect();
    assert!(labels.contains(&"<cycle 1>") && labels.contains(&"leaf"), "{json}");
}

#[test]
fn the_text_report_lists_callers_and_callees() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "callgraph", &[]);
    let output = common::run_in(dir.path(), &["-c", "call_graph", "-i", "callgraph"], "./callgraph", &[]);
    assert_eq!(output.status.code(), Some(7));
    let report = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<Vec<&str>> = report.lines().map(|l| l.split_whitespace().collect()).collect();
    // shared's entry: its two callers above, its callee below.
    let at = lines.iter().position(|l| l.len() == 5 && l[3] == "shared" && l[0] == l[4]).expect(&report);
    assert_eq!(lines[at][1..4], ["12.00", "4", "shared"], "{report}");
    assert_eq!(lines[at - 2][..2], ["3/4", "a"], "{report}");
    assert_eq!(lines[at - 1][..2], ["1/4", "b"], "{report}");
    assert_eq!(lines[at + 1][..2], ["8/10", "leaf"], "{report}");
    let cycle = lines.iter().position(|l| l.get(3..7) == Some(&["<cycle", "1", "as", "a"])).expect(&report);
    assert_eq!(lines[cycle][1..3], ["7.00", "5"], "{report}");
    assert_eq!(lines[cycle + 1][..4], ["3", "is_even", "<cycle", "1>"], "{report}");
}

#[test]
fn recursion_and_call_sites_in_the_counts_program() {
    let dir = common::counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("counts.cali");
    let output =
        common::run_in(dir, &["-c", "fcount,callgraph", "-i", "counts", "-o", file.to_str().unwrap()], "./counts", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let rows = read_graph(&file);
    // fib calls itself 1972 times: no cycle, and all beneath main.
    assert_eq!(row(&rows, &["main", "fib"]), &GraphRow { calls: 1973, inclusive: 1973.0, cycle: None });
    // three's two call sites in main are one arc.
    assert_eq!(row(&rows, &["main", "three"]), &GraphRow { calls: 3, inclusive: 3.0, cycle: None });
    // hot: 1000000 calls from main, 3 from thread_fn; under main.
    assert_eq!(row(&rows, &["main", "hot"]).calls, 1_000_003);
    // The function counts are there as ever.
    assert_eq!(common::read_result(&file)[&("counts".into(), "fib".into())].count, Some(1973));
}
