//! The trace service's buffer policies and sizes, end to end: threads
//! annotate correctly nested regions into small trace buffers, and the
//! `.cali` files written are read back to count the snapshots. Each
//! scenario runs in a child process (see `common`).

mod common;

use caliper_data::RecordKind;
use common::{read, run_with, stderr};
use std::path::Path;
use std::process::Output;

/// Region names, outermost first.
const NAMES: [&str; 10] = ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"];

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    let number = |key: &str| std::env::var(key).unwrap().parse::<usize>().unwrap();
    match name.as_str() {
        "threads" => nested_regions_on_threads(number("TRACE_THREADS"), number("TRACE_ITERATIONS")),
        "limited" => {
            // The address space as it is and `TRACE_HEADROOM_MIB` more,
            // too little for a chunk of `CALI_TRACE_BUFFER_SIZE`.
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            let pages: usize = statm.split(' ').next().unwrap().parse().unwrap();
            // SAFETY: a plain query.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
            let limit = (pages * page + (number("TRACE_HEADROOM_MIB") << 20)) as libc::rlim_t;
            let rlimit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            // SAFETY: a plain system call on a local struct.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rlimit) }, 0);
            nested_regions_on_threads(number("TRACE_THREADS"), number("TRACE_ITERATIONS"));
        }
        other => panic!("unknown scenario {other}"),
    }
}

/// `threads` threads, each `iterations` times entering ten nested regions
/// and leaving them: 20 snapshots an iteration.
fn nested_regions_on_threads(threads: usize, iterations: usize) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(move || {
                for _ in 0..iterations {
                    for name in NAMES {
                        caliper::begin_region(name);
                    }
                    for name in NAMES.iter().rev() {
                        caliper::end_region(name);
                    }
                }
            });
        }
    });
}

/// A run of the `scenario` with `threads` threads and `iterations`
/// iterations, tracing into `dir` with the buffer `size` (MiB) and
/// `policy`.
fn trace(dir: &Path, scenario: &str, threads: usize, iterations: usize, size: &str, policy: &str) -> Output {
    trace_with(
        dir,
        scenario,
        threads,
        iterations,
        &[("CALI_TRACE_BUFFER_SIZE", size.into()), ("CALI_TRACE_BUFFER_POLICY", policy.into())],
    )
}

/// [`trace`] with other settings.
fn trace_with(
    dir: &Path,
    scenario: &str,
    threads: usize,
    iterations: usize,
    settings: &[(&'static str, String)],
) -> Output {
    let mut env = vec![
        ("CALI_SERVICES_ENABLE", "event,trace,timer,recorder".to_string()),
        ("CALI_RECORDER_DIRECTORY", dir.display().to_string()),
        ("CALI_LOG_VERBOSITY", "1".into()),
        ("TRACE_THREADS", threads.to_string()),
        ("TRACE_ITERATIONS", iterations.to_string()),
    ];
    env.extend_from_slice(settings);
    run_with(scenario, &env)
}

/// The snapshots in the `.cali` files in `dir`, and how many of them
/// begin and end each region (in the order of [`NAMES`]).
struct Written {
    files: usize,
    snapshots: usize,
    begins: [usize; 10],
    ends: [usize; 10],
}

fn written(dir: &Path) -> Written {
    let mut w = Written { files: 0, snapshots: 0, begins: [0; 10], ends: [0; 10] };
    for file in std::fs::read_dir(dir).unwrap() {
        let (db, records) = read(&file.unwrap().path());
        w.files += 1;
        for record in records.iter().filter(|r| r.kind == RecordKind::Ctx) {
            w.snapshots += 1;
            for (attr, values) in db.expand_paths(record) {
                let name = db.attribute(attr).unwrap().name().to_string();
                let counts = match name.as_str() {
                    "event.begin#region" => &mut w.begins,
                    "event.end#region" => &mut w.ends,
                    _ => continue,
                };
                let value = values[0].to_string();
                counts[NAMES.iter().position(|n| *n == value).unwrap()] += 1;
            }
        }
    }
    w
}

/// The lines of the run's log that contain `text`.
fn log_lines(out: &Output, text: &str) -> usize {
    stderr(out).lines().filter(|l| l.starts_with("== CALIPER: ") && l.contains(text)).count()
}

/// The log says nothing of lost region tracking or dropped snapshots.
fn assert_clean(out: &Output) {
    let err = stderr(out);
    for bad in ["mismatch", "Ceasing", "dropped", "error", "could not"] {
        assert_eq!(log_lines(out, bad), 0, "{bad}:\n{err}");
    }
}

/// Every snapshot is written once: `threads` times `iterations` begins and
/// ends of each region.
fn assert_all_written(w: &Written, threads: usize, iterations: usize) {
    assert_eq!(w.snapshots, threads * iterations * 20);
    assert_eq!((w.begins, w.ends), ([threads * iterations; 10], [threads * iterations; 10]));
}

/// Iterations per thread in the policy tests: 40000 snapshots.
const ITERATIONS: usize = 2000;

/// Runs [`ITERATIONS`] on 1, 2 and 4 threads under `policy`, with chunks
/// of 20 KiB (about 2500 snapshots), and checks each run's log and files.
fn on_1_2_and_4_threads(policy: &str, check: impl Fn(usize, &Output, &Written)) {
    for threads in [1, 2, 4] {
        let dir = tempfile::tempdir().unwrap();
        let out = trace(dir.path(), "threads", threads, ITERATIONS, "0.02", policy);
        check(threads, &out, &written(dir.path()));
    }
}

#[test]
fn the_grow_policy_keeps_every_snapshot() {
    on_1_2_and_4_threads("grow", |threads, out, w| {
        assert_clean(out);
        assert_eq!(w.files, 1);
        assert_all_written(w, threads, ITERATIONS);
    });
}

#[test]
fn the_flush_policy_writes_every_snapshot_once_on_any_number_of_threads() {
    on_1_2_and_4_threads("flush", |threads, out, w| {
        assert_clean(out);
        // Each thread fills 16 chunks (a flush also writes the chunks that
        // filled meanwhile on other threads).
        assert!(w.files > 10, "{} files for {threads} threads:\n{}", w.files, stderr(out));
        assert_eq!(log_lines(out, "default: Trace buffer full, flushing"), w.files - 1, "and one at exit");
        assert_all_written(w, threads, ITERATIONS);
    });
}

#[test]
fn the_stop_policy_records_the_first_chunk_and_counts_the_rest() {
    on_1_2_and_4_threads("stop", |threads, out, w| {
        let err = stderr(out);
        assert_eq!(log_lines(out, "default: trace: Trace buffer full, recording stopped!"), 1, "{err}");
        let dropped: Vec<usize> = err
            .lines()
            .filter_map(|l| l.strip_prefix("== CALIPER: default: trace: ")?.strip_suffix(" snapshots were dropped"))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(dropped.len(), 1, "{err}");
        assert!(w.snapshots > 0 && dropped[0] > 0, "{err}");
        assert_eq!(w.snapshots + dropped[0], threads * ITERATIONS * 20, "{err}");
        assert_eq!(log_lines(out, "mismatch"), 0, "{err}");
    });
}

/// Long enough for many flushes while the other threads annotate: a
/// dropped begin or end would show as a stack mismatch.
#[test]
fn a_long_multithreaded_flushing_trace_keeps_region_tracking() {
    let dir = tempfile::tempdir().unwrap();
    let out = trace(dir.path(), "threads", 2, 20_000, "0.25", "flush");
    assert_clean(&out);
    let w = written(dir.path());
    assert!(w.files > 4, "{} files", w.files);
    assert_all_written(&w, 2, 20_000);
}

#[test]
fn bad_buffer_sizes_say_so_once_and_trace_with_the_default() {
    for (size, why) in [
        ("9999999999999999999", "is more than the machine's memory"),
        ("1000000000", "is more than the machine's memory"),
        ("0", "is not a positive size"),
        ("-4", "is not a positive size"),
        ("two", "is not a number"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = trace_with(dir.path(), "threads", 2, 500, &[("CALI_TRACE_BUFFER_SIZE", size.into())]);
        let err = stderr(&out);
        let message = format!("== CALIPER: default: trace: CALI_TRACE_BUFFER_SIZE \"{size}\" {why}, using 2 MiB");
        assert_eq!(err.lines().filter(|l| *l == message).count(), 1, "{err}");
        assert_eq!(log_lines(&out, "CALI_TRACE_BUFFER_SIZE"), 1, "{err}");
        assert_clean(&out);
        assert_all_written(&written(dir.path()), 2, 500);
    }
}

#[test]
fn a_buffer_that_cannot_be_allocated_falls_back_to_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("CALI_TRACE_BUFFER_SIZE", "1024".to_string()), ("TRACE_HEADROOM_MIB", "512".to_string())];
    let out = trace_with(dir.path(), "limited", 2, 500, &settings);
    let err = stderr(&out);
    assert_eq!(
        err.lines()
            .filter(|l| *l == "== CALIPER: default: trace: could not allocate a trace buffer of 1024 MiB, using 2 MiB")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(log_lines(&out, "mismatch"), 0, "{err}");
    assert_all_written(&written(dir.path()), 2, 500);
}
