//! cali-query output compared with the reference's own output on the same
//! files, byte for byte.

use caliper_testutil::{fixture, reference_fixtures};
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn cali_query(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cali-query")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn golden(name: &str) -> String {
    fs::read_to_string(fixture(name)).unwrap()
}

const EXAMPLES: [&str; 2] = ["cxx-example", "c-example"];

/// The json-split query of `hatchet-region-profile`, in terms of the
/// attributes its `.cali` output holds.
const PROFILE_JSON_SPLIT: &str = "select min#aggregate.slot,sum#sum#time.duration,path format json-split";

#[test]
fn expand_matches_the_reference() {
    for ex in EXAMPLES {
        let trace = fixture(&format!("{ex}.event-trace.cali"));
        assert_eq!(cali_query(&["-e", trace.to_str().unwrap()]), golden(&format!("{ex}.query-expand.stdout.txt")));
    }
}

#[test]
fn aggregated_table_matches_the_reference() {
    for ex in EXAMPLES {
        let trace = fixture(&format!("{ex}.event-trace.cali"));
        let q = "select region,count(),sum(time.duration.ns) group by region format table";
        assert_eq!(
            cali_query(&["-q", q, trace.to_str().unwrap()]),
            golden(&format!("{ex}.query-table-trace.stdout.txt"))
        );
    }
}

#[test]
fn flags_build_the_same_query() {
    let trace = fixture("cxx-example.event-trace.cali");
    let via_flags = cali_query(&[
        "--aggregate=count(),sum(time.duration.ns)",
        "--aggregate-key=region",
        "--print-attributes=region,count,sum#time.duration.ns",
        "-t",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(via_flags, golden("cxx-example.query-table-trace.stdout.txt"));
}

#[test]
fn json_matches_the_reference() {
    for ex in EXAMPLES {
        let trace = fixture(&format!("{ex}.event-trace.cali"));
        assert_eq!(
            cali_query(&["-q", "select * format json", trace.to_str().unwrap()]),
            golden(&format!("{ex}.query-json.stdout.txt"))
        );
    }
}

#[test]
fn tree_matches_the_reference() {
    for ex in EXAMPLES {
        let profile = fixture(&format!("{ex}.hatchet-region-profile.cali"));
        let q = "select sum(sum#sum#time.duration) group by path format tree";
        assert_eq!(cali_query(&["-q", q, profile.to_str().unwrap()]), golden(&format!("{ex}.query-tree.stdout.txt")));
    }
}

#[test]
fn globals_match_the_reference() {
    for ex in EXAMPLES {
        let spot = fixture(&format!("{ex}.spot.cali"));
        assert_eq!(
            cali_query(&["-G", "-e", spot.to_str().unwrap()]),
            golden(&format!("{ex}.query-globals.stdout.txt"))
        );
    }
}

/// Every fixture `X.<suffix>` of the reference's output, with the
/// `X.event-trace.cali` trace it was made from.
fn trace_fixtures(suffix: &str) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = fs::read_dir(reference_fixtures())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let example = name.strip_suffix(suffix)?.to_string();
            Some((fixture(&format!("{example}.event-trace.cali")), name))
        })
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no fixture *{suffix}");
    found
}

/// The attribute list, ids included: the ids are those the reference's
/// reader gives, with the two nodes of `attribute.id` created as the first
/// attribute is read.
#[test]
fn attribute_list_matches_the_reference() {
    for (trace, expected) in trace_fixtures(".query-attributes.stdout.txt") {
        let ours = cali_query(&["--list-attributes", "-e", trace.to_str().unwrap()]);
        assert_eq!(ours, golden(&expected), "{expected}");
    }
}

/// `select * format json-split` of a trace: every attribute of the
/// reference's metadata database that is neither hidden nor global is a
/// column (`attribute.unit`, `cali.attribute.name`, `class.iteration`, ...),
/// and the attributes' own metadata nodes fill them.
#[test]
fn json_split_of_everything_matches_the_reference() {
    for (trace, expected) in trace_fixtures(".query-json-split.stdout.txt") {
        let ours = cali_query(&["-q", "select * format json-split", trace.to_str().unwrap()]);
        assert_eq!(ours, golden(&expected), "{expected}");
    }
}

/// The query the profile's json-split was made with, run on the profile's
/// `.cali` file: the reference's json-split fixture is another run of the
/// same program, so all but the measured times and the run's own metadata
/// must be equal.
#[test]
fn json_split_matches_the_reference_layout() {
    for ex in EXAMPLES {
        let profile = fixture(&format!("{ex}.hatchet-region-profile.cali"));
        let ours: serde_json::Value =
            serde_json::from_str(&cali_query(&["-q", PROFILE_JSON_SPLIT, profile.to_str().unwrap()])).unwrap();
        let theirs: serde_json::Value =
            serde_json::from_str(&golden(&format!("{ex}.hatchet-region-profile.json-split.json"))).unwrap();
        for key in ["columns", "column_metadata", "nodes"] {
            assert_eq!(ours[key], theirs[key], "{key}");
        }
        let shape = |v: &serde_json::Value| -> Vec<Vec<bool>> {
            v["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row.as_array().unwrap().iter().map(|c| c.is_null()).collect())
                .collect()
        };
        assert_eq!(shape(&ours), shape(&theirs));
        assert_eq!(ours["cali.channel"], theirs["cali.channel"]);
    }
}
