//! The reference's own files: read, expanded and written back.

use caliper_data::cali::{CaliWriter, read_records};
use caliper_data::{MetadataDb, Record, RecordKind};
use caliper_testutil::{cali_fixtures, fixture};
use std::fs;

#[test]
fn every_fixture_reads() {
    let files = cali_fixtures();
    assert!(files.len() >= 13, "fixtures present: {files:?}");
    for path in files {
        let text = fs::read(&path).unwrap();
        let mut db = MetadataDb::new();
        let records = read_records(&mut db, &path.display().to_string(), &text).unwrap();
        let globals = records.iter().filter(|r| r.kind == RecordKind::Globals).count();
        assert_eq!(globals, 1, "{}", path.display());
        assert!(records.len() > 1, "{}", path.display());
        assert!(db.attribute_by_name("cali.caliper.version").is_some());
    }
}

#[test]
fn writing_fixture_records_reproduces_the_fixture_byte_for_byte() {
    for path in cali_fixtures() {
        let text = fs::read(&path).unwrap();
        let mut db = MetadataDb::keeping_stream_ids();
        let records = read_records(&mut db, &path.display().to_string(), &text).unwrap();
        let mut w = CaliWriter::new(Vec::new());
        for r in &records {
            w.write_record(&db, r).unwrap();
        }
        let lines = w.lines_written();
        let out = w.finish().unwrap();
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&text), "{}", path.display());
        assert_eq!(lines as usize, text.iter().filter(|&&b| b == b'\n').count());
    }
}

/// A record's `name=value` pairs as `cali-query -e` prints them (nested
/// values joined by `/`), sorted.
fn expand_line_pairs(db: &MetadataDb, r: &Record) -> Vec<String> {
    let mut pairs: Vec<String> = db
        .expand_paths(r)
        .into_iter()
        .map(|(attr, values)| {
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            format!("{}={}", db.attribute(attr).unwrap().name(), values.join("/"))
        })
        .collect();
    pairs.sort();
    pairs
}

#[test]
fn expansion_matches_the_reference_expand_output() {
    for example in ["cxx-example", "c-example"] {
        let text = fs::read(fixture(&format!("{example}.event-trace.cali"))).unwrap();
        let expected = fs::read_to_string(fixture(&format!("{example}.query-expand.stdout.txt"))).unwrap();
        let mut db = MetadataDb::new();
        let records: Vec<Record> =
            read_records(&mut db, example, &text).unwrap().into_iter().filter(|r| r.kind == RecordKind::Ctx).collect();
        let expected: Vec<&str> = expected.lines().collect();
        assert_eq!(records.len(), expected.len());
        for (r, line) in records.iter().zip(expected) {
            let mut want: Vec<String> = line.split(',').map(str::to_string).collect();
            want.sort();
            assert_eq!(expand_line_pairs(&db, r), want, "{line}");
        }
    }
}

#[test]
fn globals_of_a_spot_profile() {
    let text = fs::read(fixture("cxx-example.spot.cali")).unwrap();
    let mut db = MetadataDb::new();
    read_records(&mut db, "spot", &text).unwrap();
    let globals = db.globals();
    let mut found = std::collections::BTreeMap::new();
    for (attr, value) in db.expand(&globals) {
        found.insert(db.attribute(attr).unwrap().name().to_string(), value.to_string());
    }
    assert_eq!(found["cali.channel"], "spot");
    assert_eq!(found["spot.format.version"], "2");
    assert_eq!(found["iterations"], "4");
    assert_eq!(found["opts:output"], "cxx-example.spot.cali");
    assert_eq!(found["starttime.sec"], "1795284690");
    assert!(found["spot.metrics"].starts_with("min#inclusive#sum#time.duration,max#"));
}

#[test]
fn attributes_carry_metadata() {
    let text = fs::read(fixture("cxx-example.hatchet-region-profile.cali")).unwrap();
    let mut db = MetadataDb::new();
    read_records(&mut db, "profile", &text).unwrap();
    let time = db.attribute_by_name("sum#sum#time.duration").unwrap();
    assert_eq!(time.attr_type(), caliper_data::AttrType::Double);
    assert_eq!(time.properties().bits(), 2113);
    let alias = db.attribute_by_name("attribute.alias").unwrap().id();
    let unit = db.attribute_by_name("attribute.unit").unwrap().id();
    assert_eq!(time.metadata_value(alias).unwrap().as_str(), Some("time"));
    assert_eq!(time.metadata_value(unit).unwrap().as_str(), Some("sec"));
    let region = db.attribute_by_name("region").unwrap();
    assert!(region.is_nested());
    assert_eq!(region.properties().bits(), 276);
}

#[test]
fn two_files_merge_into_one_tree() {
    let mut db = MetadataDb::new();
    let a = fs::read(fixture("cxx-example.event-trace.cali")).unwrap();
    let b = fs::read(fixture("c-example.event-trace.cali")).unwrap();
    let ra = read_records(&mut db, "a", &a).unwrap();
    let nodes_after_a = db.id_bound();
    let rb = read_records(&mut db, "b", &b).unwrap();
    assert!(db.id_bound() < 2 * nodes_after_a, "shared nodes are merged");
    // The region attribute and region=main are the same node in both.
    let region = db.attribute_by_name("region").unwrap().id();
    let mains: std::collections::HashSet<u64> = ra
        .iter()
        .chain(&rb)
        .flat_map(|r| r.refs().collect::<Vec<_>>())
        .flat_map(|n| {
            let mut p = Vec::new();
            db.path_to(n, &mut p);
            p
        })
        .filter(|&n| {
            let node = db.node(n).unwrap();
            node.attribute == region && node.value.as_str() == Some("main") && node.parent.is_none()
        })
        .collect();
    assert_eq!(mains.len(), 1);
}

#[test]
fn reference_utf8_file_reads() {
    let text = fs::read(fixture("utf8.cali")).unwrap();
    let mut db = MetadataDb::new();
    let records = read_records(&mut db, "utf8", &text).unwrap();
    assert_eq!(records.iter().filter(|r| r.kind == RecordKind::Ctx).count(), 5);
    // The reference dropped the non-ASCII bytes and the control characters.
    assert!(db.attribute_by_name("tabandcr").is_some());
    let dbl = db.attribute_by_name("dbl").unwrap();
    assert_eq!(dbl.attr_type(), caliper_data::AttrType::Double);
}
