//! The reference's clients read cali-run's results: the `caliper-reader`
//! Python package reads the `.cali` records, and Hatchet builds its graph
//! from their json-split, of the call counts and of the call graph.

mod common;

use caliper_testutil::{HatchetReader, hatchet_summaries, read_with_caliper_reader};

#[test]
fn caliper_reader_and_hatchet_read_the_counts() {
    let dir = common::counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("counts.cali");
    let output = common::run_in(dir, &["-c", "fcount", "-i", "counts", "-o", file.to_str().unwrap()], "./counts", &[]);
    assert_eq!(output.status.code(), Some(3));

    let read = read_with_caliper_reader(&[&file]);
    let records = read[0]["records"].as_array().expect("records");
    let hot = records.iter().find(|r| r["dbi.function"] == "hot").expect("hot's record");
    // The reader gives values as their text.
    assert_eq!(hot["dbi.count"], "1000003", "{hot}");
    assert_eq!(read[0]["globals"]["dbi.collect"], "fcount");

    let json = out.path().join("counts.json");
    let calql = "select path,sum(dbi.count) where dbi.address group by path format json-split";
    std::fs::write(&json, common::query(&file, calql)).unwrap();
    let summary = &hatchet_summaries(&[(HatchetReader::JsonSplit, &json)])[0];
    let paths: Vec<&str> = summary["paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(paths.iter().any(|p| p.contains("'hot'")), "{paths:?}");
    assert!(summary["rows"].as_array().unwrap().iter().any(|r| r.as_str().unwrap().contains("1000003")), "{summary}");
}

#[test]
fn hatchet_reads_the_call_graph() {
    let out = tempfile::tempdir().unwrap();
    common::build(out.path(), "callgraph", &[]);
    let file = out.path().join("cg.cali");
    let options = ["-c", "callgraph", "-i", "callgraph", "-o", file.to_str().unwrap()];
    let output = common::run_in(out.path(), &options, "./callgraph", &[]);
    assert_eq!(output.status.code(), Some(7));

    let json = out.path().join("cg.json");
    let calql =
        "select path,sum(dbi.calls),sum(dbi.calls.inclusive) where dbi.callgraph group by path format json-split";
    std::fs::write(&json, common::query(&file, calql)).unwrap();
    let summary = &hatchet_summaries(&[(HatchetReader::JsonSplit, &json)])[0];
    let paths: Vec<&str> = summary["paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(paths.iter().any(|p| p.contains("'<cycle 1>'")), "{paths:?}");
    // Each node's row carries its inclusive calls.
    let rows: Vec<serde_json::Value> = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| serde_json::from_str(r.as_str().unwrap()).unwrap())
        .collect();
    let inclusive = |name: &str| {
        let row = rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name} in {rows:?}"));
        let value = row.as_object().unwrap().iter().find(|(k, _)| k.ends_with("dbi.calls.inclusive"));
        value.and_then(|(_, v)| v.as_str()?.parse::<f64>().ok())
    };
    assert_eq!(inclusive("main"), Some(29.0));
    assert_eq!(inclusive("<cycle 1>"), Some(7.0));
    assert_eq!(inclusive("leaf"), Some(10.0));
}
