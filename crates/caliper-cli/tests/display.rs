//! What cali-query shows of a profile as the reference shows it: the
//! aliases a file's attributes carry head the tree's columns (not the
//! table's), hidden helpers never show, and folded stacks of fractional
//! metrics are scaled and say so, or fail naming the metric.

use caliper_testutil::fixture;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn cali_query(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cali-query")).args(args).stdin(Stdio::null()).output().unwrap()
}

/// The standard output of a successful run.
fn query(args: &[&str]) -> String {
    let out = cali_query(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn header(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Checks a spot profile's tree, table and expanded records: `aliases`
/// (which its attributes carry) head tree columns only, `names` table
/// columns, and no hidden `avg.sum#`/`avg.count#` entry shows.
fn check_spot_views(file: &Path, aliases: &[&str], names: &[&str]) {
    let file = file.to_str().unwrap();
    let tree = query(&["-q", "select * format tree", file]);
    let table = query(&["-q", "select * format table", file]);
    let expanded = query(&["-e", file]);
    for alias in aliases {
        assert!(header(&tree).contains(alias), "tree: {alias}: {}", header(&tree));
        assert!(!header(&table).contains(alias), "table: {alias}: {}", header(&table));
    }
    for name in names {
        assert!(header(&table).split_whitespace().any(|n| n == *name), "table: {name}: {}", header(&table));
        assert!(!header(&tree).split_whitespace().any(|n| n == *name), "tree: {name}: {}", header(&tree));
    }
    for text in [&tree, &table, &expanded] {
        assert!(!text.contains("avg.sum#") && !text.contains("avg.count#"), "{text}");
    }
    for line in expanded.lines() {
        assert!(line.split(',').all(|pair| !pair.ends_with('=')), "an empty value: {line}");
    }
}

/// The spot config's columns and the aliases its queries give them.
const SPOT_ALIASES: [&str; 4] = ["Min time/rank", "Avg time/rank (exc)", "Node order", "Calls (total)"];
const SPOT_NAMES: [&str; 4] =
    ["min#inclusive#sum#time.duration", "avg#scale#sum#time.duration.ns", "min#min#aggregate.slot", "sum#sum#rc.count"];

#[test]
fn the_reference_spot_files_show_as_the_reference_shows_them() {
    for example in ["cxx-example", "c-example"] {
        check_spot_views(&fixture(&format!("{example}.spot.cali")), &SPOT_ALIASES, &SPOT_NAMES);
    }
}

/// A spot profile of cali-query's own run (`-P`) with an option spec of
/// the user's own, loaded from a file: a `"boolean"` option whose queries
/// count snapshots per input under the alias `Snapshots`.
#[test]
fn a_spot_profile_written_through_an_option_spec_shows_its_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("inputs.json");
    std::fs::write(
        &spec,
        r#"{ "options": [
             { "name": "inputs", "type": "boolean", "category": "metric",
               "description": "Snapshots per input file",
               "query": [
                 { "level": "local", "select": [ { "expr": "count()", "as": "Snapshots" } ],
                   "group by": [ "cali-query.input" ] },
                 { "level": "cross", "select": [ { "expr": "sum(count)", "as": "Snapshots", "unit": "count" } ],
                   "group by": [ "cali-query.input" ] } ] } ] }"#,
    )
    .unwrap();
    let profile = dir.path().join("self.cali");
    let config = format!("load({}),spot(inputs,output={})", spec.display(), profile.display());
    let trace = fixture("cxx-example.event-trace.cali");
    query(&["-P", &config, "-q", "select count() group by region format table", trace.to_str().unwrap()]);

    check_spot_views(
        &profile,
        &[&SPOT_ALIASES[..], &["Snapshots"]].concat(),
        &[&SPOT_NAMES[..], &["sum#count"]].concat(),
    );
    let globals = query(&["-G", "-e", profile.to_str().unwrap()]);
    assert!(globals.contains(",opts:inputs=true,"), "{globals}");
}

const PROFILE: &str = "cxx-example.hatchet-region-profile.cali";

/// Seconds fold into whole nanoseconds, and the output names the scale.
#[test]
fn folded_stacks_of_seconds_are_scaled_and_say_so() {
    let profile = fixture(PROFILE);
    let text = query(&["-q", "select sum#sum#time.duration format folded", profile.to_str().unwrap()]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "# sum#sum#time.duration x 1e-9",
            "main 16363",
            "main;init 4587",
            "main;mainloop 25097",
            "main;mainloop;foo 5541430"
        ]
    );
}

/// Nothing to fold is an error, in one line naming the metric.
#[test]
fn nothing_to_fold_fails_naming_the_metric() {
    let profile = fixture(PROFILE);
    let out = cali_query(&["-q", "select sum#sum#time.duration where nosuch format folded", profile.to_str().unwrap()]);
    assert!(!out.status.success() && out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "cali-query: error: folded: no path has a positive sum#sum#time.duration to fold\n"
    );
}
