//! A Rust program whose global allocator is `caliper::alloc::Tracking`:
//! its allocations reach the memory tracking services without any
//! run-time interposition, and when `sysalloc` wraps `malloc` as well
//! (the `alloc.stats` option enables it), each is counted once.

mod common;

use common::{run, stderr};

#[global_allocator]
static ALLOC: caliper::alloc::Tracking = caliper::alloc::Tracking::system();

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    assert_eq!(name, "allocations");
    {
        let _work = caliper::region!("work");
        let big = std::hint::black_box(vec![1u8; 1_000_000]);
        {
            let _inner = caliper::region!("inner");
            drop(std::hint::black_box(vec![2u8; 300_000]));
        }
        drop(big);
    }
    std::process::exit(0);
}

/// The cells of the report row that starts with `label`.
fn row<'a>(report: &'a str, label: &str) -> Vec<&'a str> {
    let line = report.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}:\n{report}"));
    line.split_whitespace().collect()
}

#[test]
fn the_tracking_allocator_feeds_alloc_stats_once_per_allocation() {
    let out = run("allocations", &[("CALI_CONFIG", "runtime-report,alloc.stats,output=stderr")]);
    let report = stderr(&out);
    // Path, four times, then Mem HWM, Alloc tMax, Alloc count, Avg and Max
    // Bytes/alloc.
    // work: the vector, counted once (twice would make the tally 2 MB),
    // beside a few bytes of the first update of the inner region's name.
    let work = row(&report, "work ");
    let tally: u64 = work[6].parse().unwrap();
    assert!((1_000_000..1_000_256).contains(&tally) && work[9] == "1000000", "{report}");
    let inner = row(&report, "  inner ");
    assert_eq!(inner[6..], ["300000", "1", "300000.000000", "300000"], "{report}");
    let hwm: u64 = inner[5].parse().unwrap();
    assert!(hwm >= 1_300_000, "both blocks live in inner: {report}");
}
