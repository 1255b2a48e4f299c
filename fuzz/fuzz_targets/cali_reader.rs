//! Fuzzes the `.cali` reader: any input must give records or a typed
//! error, never a panic; whatever it accepts, the writer must write and the
//! reader read again to the same records.

#![no_main]

use caliper_data::MetadataDb;
use caliper_data::cali::{CaliReader, CaliWriter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut db = MetadataDb::keeping_stream_ids();
    let mut records = Vec::new();
    if CaliReader::new(&mut db, "fuzz").read(data, |_, r| records.push(r.clone())).is_err() {
        return;
    }
    let mut writer = CaliWriter::new(Vec::new());
    for r in &records {
        writer.write_record(&db, r).expect("records read from a stream can be written");
    }
    let text = writer.finish().expect("write to memory");
    let mut again = MetadataDb::keeping_stream_ids();
    let mut second = Vec::new();
    let result = CaliReader::new(&mut again, "rewritten").read(text.as_slice(), |_, r| second.push(r.clone()));
    let non_empty: Vec<_> = records.iter().filter(|r| !r.is_empty()).collect();
    if non_empty.is_empty() {
        // Nothing to write: only empty records were read.
        return;
    }
    result.expect("our own output reads back");
    let expand = |db: &MetadataDb, rs: &[&caliper_data::Record]| -> Vec<Vec<(String, String)>> {
        rs.iter()
            .map(|r| {
                db.expand(r)
                    .into_iter()
                    .map(|(a, v)| {
                        (db.attribute(a).map(|a| a.name().to_string()).unwrap_or_default(), v.to_cali_string())
                    })
                    .collect()
            })
            .collect()
    };
    let second: Vec<_> = second.iter().collect();
    let mut a = expand(&db, &non_empty);
    let mut b = expand(&again, &second);
    for rec in a.iter_mut().chain(b.iter_mut()) {
        rec.sort();
    }
    assert_eq!(a, b);
});
