//! Hatchet, the real client of our profiles, builds the same graph with the
//! same metrics from our output as from the reference's.

use caliper_testutil::{HatchetReader, fixture, hatchet_summaries};
use std::process::Command;

fn cali_query(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_cali-query")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The json-split query of `hatchet-region-profile`, in terms of the
/// attributes its `.cali` output holds (`select *` would show every
/// attribute of the file, metadata ones too, as the reference does).
const PROFILE_JSON_SPLIT: &str = "select min#aggregate.slot,sum#sum#time.duration,path format json-split";

#[test]
fn hatchet_reads_our_json_split_and_cali_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for ex in ["cxx-example", "c-example"] {
        let profile = fixture(&format!("{ex}.hatchet-region-profile.cali"));
        let json = dir.path().join(format!("{ex}.json"));
        let cali = dir.path().join(format!("{ex}.cali"));
        cali_query(&["-q", PROFILE_JSON_SPLIT, profile.to_str().unwrap(), "-o", json.to_str().unwrap()]);
        cali_query(&[profile.to_str().unwrap(), "-o", cali.to_str().unwrap()]);
        files.push((json, fixture(&format!("{ex}.hatchet-region-profile.json-split.json")), cali, profile));
    }
    let mut args = Vec::new();
    for (json, ref_json, cali, ref_cali) in &files {
        args.push((HatchetReader::JsonSplit, json.as_path()));
        args.push((HatchetReader::JsonSplit, ref_json.as_path()));
        args.push((HatchetReader::CaliperReader, cali.as_path()));
        args.push((HatchetReader::CaliperReader, ref_cali.as_path()));
    }
    let got = hatchet_summaries(&args);
    for i in 0..files.len() {
        let [ours_json, theirs_json, ours_cali, theirs_cali] = [0, 1, 2, 3].map(|k| &got[4 * i + k]);
        // The json-split fixture is another run: same graph and metrics,
        // other timings.
        for key in ["paths", "exc_metrics", "inc_metrics", "columns"] {
            assert_eq!(ours_json[key], theirs_json[key], "json-split {key}");
        }
        assert_eq!(ours_json["paths"].as_array().unwrap().len(), 4);
        // Our .cali holds the fixture's own records: everything is equal.
        assert_eq!(ours_cali, theirs_cali);
        assert_eq!(ours_cali["exc_metrics"], serde_json::json!(["time"]));
    }
}
