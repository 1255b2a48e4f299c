//! What cali-query shows of a profile as the reference shows it: the
//! aliases a file's attributes carry head the tree's columns (not the
//! table's), and hidden helpers never show.

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
