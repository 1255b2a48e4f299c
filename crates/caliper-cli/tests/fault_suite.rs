//! The query side's fault suite: every output format of cali-query, and
//! cali-stat, on every reference `.cali` fixture and on the inputs that
//! once broke them (`fixtures/repro`, and generated deep and wide region
//! trees). No run may panic; good input gives exit 0 and output; a bad
//! line gives the records before it, then a file:line:column error and
//! exit 1. The byte-for-byte comparisons with the reference's own output
//! for the same commands are in `golden.rs`.

use caliper_testutil::{cali_fixtures, repro_input};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Every output a cali-query command line can ask for: the formatter
/// flags, every `format` of CalQL (with arguments), the user format, the
/// listing options, and the options that change the query around them.
const QUERY_RUNS: &[&[&str]] = &[
    &[],
    &["-t"],
    &["-T"],
    &["-j"],
    &["-e"],
    &["-f", "%[12]region% %count%", "--title", "Regions"],
    &["--list-attributes"],
    &["--list-attributes", "-e"],
    &["-G"],
    &["-G", "-e"],
    &["-q", "select * format table"],
    &["-q", "format table(column-width=10,print-globals)"],
    &["-q", "format tree"],
    &["-q", "select * format tree(column-width=0,print-globals)"],
    &["-q", "select count(),sum(time.duration.ns) group by path order by count desc format tree"],
    &["-q", "select * format json"],
    &["-q", "select * format json(object,pretty,quote-all,separate-nested)"],
    &["-q", "select * format json-split"],
    &["-q", "select * format expand"],
    &["-q", "select * format cali"],
    &["-q", "select * format format(\"%region% %count%\", \"Title\")"],
    &["-q", "let t=scale(time.duration.ns,1e-9) select region,t,count() group by region order by region format table"],
    &["--aggregate", "count(),inclusive_sum(time.duration.ns)", "--aggregate-key", "path", "-T"],
    &["-s", "region", "-S", "region", "-t"],
    &["--path-attributes", "region", "-T"],
];

/// cali-stat's option sets.
const STAT_RUNS: &[&[&str]] = &[&[], &["-r"]];

fn run(bin: &str, args: &[&str], input: &Path) -> Output {
    Command::new(bin).args(args).arg(input).stdin(Stdio::null()).output().unwrap()
}

fn cali_query(args: &[&str], input: &Path) -> Output {
    run(env!("CARGO_BIN_EXE_cali-query"), args, input)
}

fn cali_stat(args: &[&str], input: &Path) -> Output {
    run(env!("CARGO_BIN_EXE_cali-stat"), args, input)
}

/// Every run of `tool` on `input`, with what went wrong (none for a good
/// run): a panic, a crash, an unexpected exit status, no output, a
/// missing error message.
fn check_runs(tool: &str, runs: &[&[&str]], input: &Path, expect_error: Option<&str>) -> Vec<String> {
    let has_globals = fs::read_to_string(input).is_ok_and(|t| t.contains("__rec=globals"));
    let mut problems = Vec::new();
    for args in runs {
        let out = if tool == "cali-query" { cali_query(args, input) } else { cali_stat(args, input) };
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!("{tool} {} {}", args.join(" "), input.display());
        if stderr.contains("panicked") || out.status.code().is_none() {
            problems.push(format!("{what}: crashed ({:?}):\n{stderr}", out.status));
            continue;
        }
        // The globals of an input without any are nothing at all.
        let may_be_empty = args.contains(&"-G") && !has_globals;
        if out.stdout.is_empty() && !may_be_empty {
            problems.push(format!("{what}: no output; stderr: {stderr}"));
        }
        match expect_error {
            None if !out.status.success() => problems.push(format!("{what}: exit {:?}: {stderr}", out.status)),
            Some(message) if out.status.code() != Some(1) || !stderr.contains(message) => {
                problems.push(format!("{what}: expected exit 1 and \"{message}\", got {:?}: {stderr}", out.status))
            }
            _ => {}
        }
    }
    problems
}

fn assert_all_good(problems: Vec<String>) {
    assert!(problems.is_empty(), "{} failing runs:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn every_format_on_every_reference_fixture() {
    let mut problems = Vec::new();
    for input in cali_fixtures() {
        problems.extend(check_runs("cali-query", QUERY_RUNS, &input, None));
        problems.extend(check_runs("cali-stat", STAT_RUNS, &input, None));
    }
    assert_all_good(problems);
}

#[test]
fn every_format_on_the_repro_inputs() {
    let deep30 = repro_input("deep30.cali");
    let mut problems = check_runs("cali-query", QUERY_RUNS, &deep30, None);
    problems.extend(check_runs("cali-stat", STAT_RUNS, &deep30, None));
    let truncated = repro_input("truncated.cali");
    let message = format!("{}:17:18: field \"att\" has no value", truncated.display());
    problems.extend(check_runs("cali-query", QUERY_RUNS, &truncated, Some(&message)));
    problems.extend(check_runs("cali-stat", STAT_RUNS, &truncated, Some(&message)));
    assert_all_good(problems);
}

/// A generated region tree in a temporary file: a chain `depth` deep with
/// records at its root and its end, and `siblings` leaves under the root.
struct RegionTree {
    _dir: tempfile::TempDir,
    path: PathBuf,
    depth: usize,
    siblings: usize,
}

impl RegionTree {
    fn new(depth: usize, siblings: usize) -> RegionTree {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("tree-{depth}-{siblings}.cali"));
        let mut data = Vec::new();
        caliper_testutil::synthetic::write_region_tree(&mut data, depth as u64, siblings as u64, 0).unwrap();
        fs::write(&path, data).unwrap();
        RegionTree { _dir: dir, path, depth, siblings }
    }

    /// Records in the file: main, the end of the chain, the siblings.
    fn records(&self) -> usize {
        1 + usize::from(self.depth > 0) + self.siblings
    }

    fn query(&self, args: &[&str]) -> String {
        let out = cali_query(args, &self.path);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs the tree through every output format and checks the shape of
    /// each output.
    fn check_every_format(&self) {
        let (depth, records) = (self.depth, self.records());
        let tree = self.query(&["-q", "select count format tree"]);
        let lines: Vec<&str> = tree.lines().collect();
        assert_eq!(lines.len(), 2 + depth + self.siblings, "tree: header, main, chain, siblings");
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "tree lines of one width");
        assert!(lines[0].len() <= 48 + " count ".len(), "the path column is cut at 48: {}", lines[0]);
        if depth >= 24 {
            let deepest = lines[2 + self.siblings + depth - 1];
            assert!(deepest.starts_with(&format!("{}.. ", " ".repeat(46))), "cut at 48: {deepest}");
        }
        let inclusive = self.query(&["-q", "select inclusive_sum(count) group by path format tree"]);
        let main = inclusive.lines().nth(1).unwrap();
        let total = 1 + depth.saturating_sub(1) + self.siblings * self.siblings.saturating_sub(1) / 2;
        assert!(main.trim_end().ends_with(&format!(" {total}")), "inclusive sum at main: {main}");

        let table = self.query(&["-t"]);
        assert_eq!(table.lines().count(), 1 + records, "table: header and records");
        let expand = self.query(&["-e"]);
        assert_eq!(expand.lines().count(), records);
        assert_eq!(expand.lines().map(|l| l.matches('/').count()).max(), Some(depth.max(1)), "whole paths");
        let json = self.query(&["-j"]);
        assert_eq!(json.lines().filter(|l| l.starts_with('{')).count(), records);
        let split: serde_json::Value =
            serde_json::from_str(&self.query(&["-q", "select * format json-split"])).unwrap();
        assert_eq!(split["data"].as_array().unwrap().len(), records);
        let path_nodes = split["nodes"].as_array().unwrap().iter().filter(|n| n["column"] == "path").count();
        assert_eq!(path_nodes, 1 + depth + self.siblings);
        let cali = self.query(&[]);
        assert_eq!(cali.lines().filter(|l| l.starts_with("__rec=ctx")).count(), records);
        let user = self.query(&["-f", "%count%"]);
        assert_eq!(user.lines().count(), records);
    }
}

#[test]
fn deep_trees_through_every_format() {
    for depth in [10, 1_000, 100_000] {
        RegionTree::new(depth, 0).check_every_format();
    }
}

#[test]
fn wide_trees_through_every_format() {
    for siblings in [10, 1_000, 100_000] {
        RegionTree::new(0, siblings).check_every_format();
    }
}

#[test]
fn deep_and_wide_at_once() {
    RegionTree::new(30, 30).check_every_format();
}
