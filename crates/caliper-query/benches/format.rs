//! Time and memory of the formatters on extreme region trees: chains 10,
//! 1,000 and 100,000 deep, and 1,000 to 100,000 siblings under one root
//! (`caliper_testutil::synthetic::write_region_tree`). Each case reads the
//! `.cali` stream, runs the query and formats the result into a sink.
//! Criterion reports the time; the peak heap of one run of each case is
//! printed beside it (`peak heap`), from a counting allocator. Both should
//! grow linearly with the size of the tree.
//!
//! The timeline formatters (`trace-event`, `perfetto`) run on event traces
//! of 20,000 and 200,000 records (`write_marked_event_trace`): their time
//! should grow linearly and their peak heap not at all.

use caliper_data::MetadataDb;
use caliper_data::cali::CaliReader;
use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, parse_query};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The queries measured, one per formatter (the tree also with the
/// aggregation of runtime-report, inclusive sums by path).
const QUERIES: &[(&str, &str)] = &[
    ("tree", "select count format tree"),
    ("tree-inclusive", "select count(),inclusive_sum(count) group by path format tree"),
    ("table", "select * format table"),
    ("json", "select * format json"),
    ("json-split", "select * format json-split"),
];

/// (name, depth, siblings, step): `step` 1 puts a record on every level
/// of the chain, as a profile of deeply nested regions has. Formats that
/// print each record's whole path (table, json) get such an input only
/// where the output stays linear (not at 100,000 levels).
const SHAPES: &[(&str, u64, u64, u64)] = &[
    ("depth_10", 10, 0, 1),
    ("depth_1000", 1_000, 0, 1),
    ("depth_100000", 100_000, 0, 0),
    ("depth_100000_every_level", 100_000, 0, 1),
    ("siblings_1000", 0, 1_000, 0),
    ("siblings_10000", 0, 10_000, 0),
    ("siblings_100000", 0, 100_000, 0),
];

fn run(query: &str, data: &[u8]) -> u64 {
    let spec = parse_query(query).unwrap();
    let mut processor = QueryProcessor::new(&spec, Formatter::Cali, Box::new(std::io::sink())).unwrap();
    let mut db = MetadataDb::new();
    let summary = CaliReader::new(&mut db, "bench").read(data, |db, r| processor.process(db, r).unwrap()).unwrap();
    processor.finish(&mut db).unwrap();
    summary.records()
}

fn formats(c: &mut Criterion) {
    let mut group = c.benchmark_group("format");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for &(shape, depth, siblings, step) in SHAPES {
        let mut data = Vec::new();
        caliper_testutil::synthetic::write_region_tree(&mut data, depth, siblings, step).unwrap();
        for &(format, query) in QUERIES {
            let quadratic_text = step == 1 && depth > 1_000 && !format.starts_with("tree");
            if quadratic_text {
                continue;
            }
            let base = LIVE.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            black_box(run(query, &data));
            let peak = PEAK.load(Ordering::Relaxed) - base;
            eprintln!("format/{format}/{shape}: peak heap {:.1} MiB", peak as f64 / (1024.0 * 1024.0));
            group.bench_with_input(BenchmarkId::new(format, shape), &data, |b, data| b.iter(|| run(query, data)));
        }
    }
    group.finish();
}

fn timelines(c: &mut Criterion) {
    let mut group = c.benchmark_group("timeline");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for records in [20_000, 200_000] {
        let mut data = Vec::new();
        caliper_testutil::synthetic::write_marked_event_trace(&mut data, records).unwrap();
        for format in ["trace-event", "perfetto"] {
            let query = format!("format {format}");
            let base = LIVE.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            black_box(run(&query, &data));
            let peak = PEAK.load(Ordering::Relaxed) - base;
            eprintln!("timeline/{format}/{records}: peak heap {:.1} MiB", peak as f64 / (1024.0 * 1024.0));
            group.bench_with_input(BenchmarkId::new(format, records), &data, |b, data| b.iter(|| run(&query, data)));
        }
    }
    group.finish();
}

criterion_group!(benches, formats, timelines);
criterion_main!(benches);
