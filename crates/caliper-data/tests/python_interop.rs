//! Interoperability with the reference's Python reader (`caliper-reader`
//! from PyPI, in the test virtualenv `scripts/test-all.sh` sets up): it
//! must read our files to the same records and globals we wrote.

mod common;

use caliper_data::cali::{CaliReader, CaliWriter};
use caliper_data::{MetadataDb, Record, RecordKind};
use caliper_testutil::{cali_fixtures, read_with_caliper_reader};
use common::{Alphabet, generate};
use serde_json::{Map, Value, json};
use std::fs;

/// What `caliper-reader` makes of a record: references first (each node
/// expanded root first; a repeated attribute becomes a list; nested
/// attributes also go into `path`; later references overwrite earlier
/// keys), then the immediates; hidden attributes left out; values as the
/// text in the file.
fn python_view(db: &MetadataDb, record: &Record) -> Value {
    let mut result = Map::new();
    let mut path = Vec::new();
    for node in record.refs() {
        path.clear();
        db.path_to(node, &mut path);
        let mut expanded = Map::new();
        for &id in &path {
            let n = db.node(id).unwrap();
            let attr = db.attribute(n.attribute).unwrap();
            if attr.is_hidden() {
                continue;
            }
            let text = Value::String(n.value.to_cali_string());
            let slot = expanded.entry(attr.name().to_string()).or_insert(Value::Null);
            *slot = match slot.take() {
                Value::Null => text.clone(),
                Value::Array(mut list) => {
                    list.push(text.clone());
                    Value::Array(list)
                }
                single => json!([single, text.clone()]),
            };
            if attr.is_nested() {
                let p = expanded.entry("path").or_insert(json!([]));
                p.as_array_mut().unwrap().push(text);
            }
        }
        result.extend(expanded);
    }
    for (attr, value) in record.immediates() {
        let attr = db.attribute(attr).unwrap();
        if !attr.is_hidden() {
            result.insert(attr.name().to_string(), Value::String(value.to_cali_string()));
        }
    }
    Value::Object(result)
}

fn write_file(path: &std::path::Path, db: &MetadataDb, records: &[Record]) {
    let mut w = CaliWriter::new(fs::File::create(path).unwrap());
    for r in records {
        w.write_record(db, r).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn caliper_reader_reads_our_random_streams() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    let mut paths = Vec::new();
    for seed in 0..40 {
        let w = generate(seed, 30, Alphabet::PythonSafe);
        let path = dir.path().join(format!("random-{seed}.cali"));
        write_file(&path, &w.db, &w.records);
        let records: Vec<Value> =
            w.records.iter().filter(|r| r.kind == RecordKind::Ctx).map(|r| python_view(&w.db, r)).collect();
        let globals = python_view(&w.db, w.records.last().unwrap());
        expected.push(json!({"records": records, "globals": globals}));
        paths.push(path);
    }
    let paths: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    let got = read_with_caliper_reader(&paths);
    let got = got.as_array().unwrap();
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "seed {i}");
    }
    assert_eq!(got.len(), expected.len());
}

#[test]
fn fixtures_rewritten_by_us_read_the_same_in_caliper_reader() {
    let dir = tempfile::tempdir().unwrap();
    let mut pairs = Vec::new();
    for original in cali_fixtures() {
        // Read into a database with fresh ids and write again: the ids
        // change, the records must not.
        let mut db = MetadataDb::new();
        let mut records = Vec::new();
        CaliReader::new(&mut db, "fixture")
            .read(fs::read(&original).unwrap().as_slice(), |_, r| records.push(r.clone()))
            .unwrap();
        let ours = dir.path().join(original.file_name().unwrap());
        write_file(&ours, &db, &records);
        assert_ne!(fs::read(&ours).unwrap(), fs::read(&original).unwrap(), "ids were renumbered");
        pairs.push((original, ours));
    }
    let paths: Vec<&std::path::Path> = pairs.iter().flat_map(|(a, b)| [a.as_path(), b.as_path()]).collect();
    let got = read_with_caliper_reader(&paths);
    let got = got.as_array().unwrap();
    for (i, (original, _)) in pairs.iter().enumerate() {
        assert_eq!(got[2 * i], got[2 * i + 1], "{}", original.display());
        assert!(!got[2 * i]["records"].as_array().unwrap().is_empty());
    }
}
