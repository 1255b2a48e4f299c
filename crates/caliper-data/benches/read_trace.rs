//! Reading speed of the `.cali` reader on a synthetic event trace shaped
//! like a real one (see `caliper_testutil::synthetic`): 2,000,000 snapshot
//! records, about 108 MB. Reported as throughput in bytes per second.

use caliper_data::MetadataDb;
use caliper_data::cali::{CaliReader, CaliWriter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

const RECORDS: u64 = 2_000_000;

fn trace() -> Vec<u8> {
    let mut data = Vec::new();
    caliper_testutil::synthetic::write_event_trace(&mut data, RECORDS).unwrap();
    data
}

fn read(c: &mut Criterion) {
    let data = trace();
    let mut group = c.benchmark_group("cali");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("read_2M_record_trace", |b| {
        b.iter(|| {
            let mut db = MetadataDb::new();
            let mut records = 0u64;
            CaliReader::new(&mut db, "bench").read(data.as_slice(), |_, r| records += r.entries.len() as u64).unwrap();
            black_box(records)
        })
    });
    group.bench_function("read_and_write_2M_record_trace", |b| {
        b.iter(|| {
            let mut db = MetadataDb::new();
            let mut writer = CaliWriter::new(std::io::sink());
            CaliReader::new(&mut db, "bench")
                .read(data.as_slice(), |db, r| writer.write_record(db, r).unwrap())
                .unwrap();
            black_box(writer.lines_written())
        })
    });
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
