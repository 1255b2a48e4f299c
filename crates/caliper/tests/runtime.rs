//! Runtime semantics, end to end. Each scenario runs in a child process
//! (this test binary re-run with `CALIPER_TEST_SCENARIO` set), because the
//! runtime is process-wide and reads its configuration from the
//! environment once.

mod common;

use caliper_data::MetadataDb;
use caliper_data::cali::read_records;
use common::{expand, expand_with, fork_a_child_that_annotates, nested, run, run_with, stderr, trace_env, untimed};
use std::path::PathBuf;

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    match name.as_str() {
        "nested" => nested(),
        "monitored" => monitored(),
        "mismatch" => mismatch(),
        "unbalanced" => {
            let _a = caliper::region!("left");
            caliper::begin_region("open");
            std::mem::forget(caliper::region!("forgotten"));
        }
        "threads" => threads(),
        "short_lived_threads" => short_lived_threads(),
        "fork" => fork(),
        "metadata" => {
            let bytes = caliper::Annotation::with_properties(
                "io.bytes",
                caliper::Properties::ASVALUE | caliper::Properties::AGGREGATABLE,
            )
            .metadata("attribute.unit", "B");
            let _r = caliper::region!("io");
            bytes.set(4096u64);
        }
        "flush_twice" => {
            nested();
            caliper::flush();
        }
        "many" => {
            for i in 0..2000 {
                let _r = caliper::region!("step");
                caliper::set_by_name("i", i as i64);
            }
        }
        other => panic!("unknown scenario {other}"),
    }
}

fn mismatch() {
    caliper::begin_region("a");
    caliper::begin_region("b");
    caliper::end_region("a");
    // Tracking has stopped on this thread: nothing below is recorded.
    caliper::end_region("b");
    caliper::begin_region("after");
    println!("still running");
}

fn threads() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for _ in 0..100 {
                    let _w = caliper::region!("work");
                    caliper::set_by_name("thread", t as i64);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // The threads have exited; their data is flushed at exit.
}

/// 200 threads started and joined 8 at a time, each making 100 updates
/// (50 `step` regions), with flushes running meanwhile if
/// `SCENARIO_FLUSHES` is set.
fn short_lived_threads() {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        if std::env::var_os("SCENARIO_FLUSHES").is_some() {
            s.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    caliper::flush();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
        }
        for _ in 0..25 {
            let batch: Vec<_> = (0..8)
                .map(|_| {
                    std::thread::spawn(|| {
                        for _ in 0..50 {
                            let _s = caliper::region!("step");
                        }
                    })
                })
                .collect();
            for t in batch {
                t.join().unwrap();
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

fn fork() {
    nested();
    fork_a_child_that_annotates();
}

#[test]
fn trace_has_the_reference_structure() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    run_with("nested", &trace_env(&file));
    let ours = expand(&file);
    // The reference example's trace, with its globals and times removed.
    let reference = expand(&caliper_testutil::fixture("cxx-example.services-trace.cali"));
    let strip = |v: Vec<String>| -> Vec<String> {
        v.into_iter()
            .map(|l| l.split(',').filter(|p| !p.starts_with("caliper.config")).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(strip(ours), strip(reference));
}

/// A service named twice in `CALI_SERVICES_ENABLE` (as a config's
/// options may each add it) is one service: the trace holds each snapshot
/// once.
#[test]
fn a_service_enabled_twice_is_one_service() {
    let dir = tempfile::tempdir().unwrap();
    let (once, twice) = (dir.path().join("once.cali"), dir.path().join("twice.cali"));
    run_with("nested", &trace_env(&once));
    let mut env = trace_env(&twice);
    env[0].1 = "event,trace,timer,trace,recorder,event".into();
    run_with("nested", &env);
    assert_eq!(expand(&twice), expand(&once));
}

#[test]
fn mismatched_end_stops_tracking_on_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    let out = run_with("mismatch", &trace_env(&file));
    let err = stderr(&out);
    assert!(
        err.contains("== CALIPER: Stack value mismatch: Trying to end region=a but current value is region=b"),
        "{err}"
    );
    assert!(err.contains("== CALIPER: Ceasing region tracking!"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("still running"));
    let records = expand(&file);
    assert_eq!(records.len(), 2, "only the two begins were recorded: {records:?}");
    assert!(records.iter().all(|r| !r.contains("after")));
}

#[test]
fn unknown_service_and_unwritable_output_are_logged_not_fatal() {
    let out = run(
        "nested",
        &[
            ("CALI_SERVICES_ENABLE", "event,bogus,trace,timer,recorder"),
            ("CALI_RECORDER_FILENAME", "/proc/no/such/dir/x.cali"),
        ],
    );
    let err = stderr(&out);
    assert!(err.contains("== CALIPER: Service \"bogus\" not found!"), "{err}");
    assert!(err.contains("== CALIPER: Could not open output stream /proc/no/such/dir/x.cali"), "{err}");
}

#[test]
fn config_check_warns_about_missing_stages() {
    let out = run("nested", &[("CALI_SERVICES_ENABLE", "event,timer,trace")]);
    let err = stderr(&out);
    assert!(
        err.contains("Config check: Warning: snapshot buffer service \"trace\" requires offline output services, but none are active."),
        "{err}"
    );
}

#[test]
fn validator_reports_open_regions() {
    let out = run("unbalanced", &[("CALI_SERVICES_ENABLE", "validator")]);
    let err = stderr(&out);
    assert!(err.contains("validator: Regions not closed: region=left/region=open/region=forgotten"), "{err}");
    assert!(err.contains("validator: Annotation nesting errors found"), "{err}");
}

#[test]
fn threads_that_exit_early_keep_their_data() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agg.cali");
    run(
        "threads",
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,timer,recorder"),
            ("CALI_RECORDER_FILENAME", file.to_str().unwrap()),
        ],
    );
    // 4 threads x 100 iterations x (begin work, set thread, end work).
    assert_eq!(total_count(&file), 1200);
}

/// The sum of the `count`s of the records of an aggregation in a `.cali`
/// file: the number of snapshots aggregated.
fn total_count(file: &std::path::Path) -> u64 {
    let (db, records) = common::read(file);
    let count = db.attribute_by_name("count").unwrap().id();
    records.iter().flat_map(|r| r.immediates()).filter(|(a, _)| *a == count).map(|(_, v)| v.to_u64().unwrap()).sum()
}

/// Threads that exit before the flush are in it exactly once, their slots
/// freed and their data kept by the channels (aggregate entries merged,
/// trace chunks kept), also when flushes run while threads exit.
#[test]
fn short_lived_threads_are_flushed_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.cali");
    for flushes in [None, Some("1")] {
        let mut env = vec![("CALI_RECORDER_FILENAME", file.to_str().unwrap())];
        env.extend(flushes.map(|f| ("SCENARIO_FLUSHES", f)));
        env.push(("CALI_SERVICES_ENABLE", "aggregate,event,timer,recorder"));
        run("short_lived_threads", &env);
        assert_eq!(total_count(&file), 200 * 100, "aggregate, flushes meanwhile: {flushes:?}");

        env.pop();
        env.push(("CALI_SERVICES_ENABLE", "event,trace,timer,recorder"));
        run("short_lived_threads", &env);
        let lines = expand(&file);
        for event in ["event.begin#region=step", "event.end#region=step"] {
            let n = lines.iter().filter(|l| l.contains(event)).count();
            assert_eq!(n, 200 * 50, "trace, {event}, flushes meanwhile: {flushes:?}");
        }
    }
}

/// The child writes its own trace, as the reference's does: what the
/// process recorded before the fork and the child's own region (it exits
/// inside it); the
/// parent's has no trace of the child.
#[test]
fn a_forked_child_writes_its_own_trace() {
    let dir = tempfile::tempdir().unwrap();
    run(
        "fork",
        &[
            ("CALI_SERVICES_ENABLE", "event,trace,timer,recorder"),
            ("CALI_RECORDER_DIRECTORY", dir.path().to_str().unwrap()),
        ],
    );
    let mut traces: Vec<Vec<String>> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| expand(&e.unwrap().path())).collect();
    traces.sort_by_key(Vec::len);
    let [parent, child] = &traces[..] else { panic!("{} traces", traces.len()) };
    assert_eq!(parent.len(), 22, "the parent's records");
    assert!(parent.iter().all(|r| !r.contains("child")));
    assert_eq!(child[..22], parent[..], "the child's trace starts with what was recorded before the fork");
    // The child exits inside its region: its begin is recorded.
    assert_eq!(child.len(), 23, "and has its own region's begin");
    assert!(child[22].contains("event.begin#region=child"), "{}", child[22]);
}

#[test]
fn flush_does_not_clear() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    let out = run_with("flush_twice", &[trace_env(&file), vec![("CALI_LOG_VERBOSITY", "1".to_string())]].concat());
    let err = stderr(&out);
    assert_eq!(err.matches("trace: Flushed 22 snapshots.").count(), 2, "{err}");
}

#[test]
fn aggregate_report_prints_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("report.txt");
    run(
        "nested",
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,report,timer"),
            ("CALI_REPORT_FILENAME", file.to_str().unwrap()),
            ("CALI_REPORT_CONFIG", "select region,sum(count) group by region order by region format table"),
        ],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    // Snapshots are taken before each update: a begin counts for the
    // enclosing region, an end for the region that ends.
    assert_eq!(
        lines,
        [vec!["region", "sum#count"], vec!["1"], vec!["main", "16"], vec!["main/foo", "4"], vec!["main/init", "1"]]
    );
}

/// The reference's Python reader sees the same records, attributes and
/// nesting in our trace as in the reference example's (times aside).
#[test]
fn caliper_reader_reads_our_trace_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    run_with("nested", &trace_env(&file));
    let reference = caliper_testutil::fixture("cxx-example.services-trace.cali");
    let got = caliper_testutil::read_with_caliper_reader(&[&file, &reference]);
    let records = |i: usize| -> Vec<serde_json::Value> {
        got[i]["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let mut r = r.as_object().unwrap().clone();
                r.retain(|k, _| !k.starts_with("time.") && k != "cali.caliper.version" && k != "caliper.config");
                serde_json::Value::Object(r)
            })
            .collect()
    };
    assert_eq!(records(0), records(1));
    assert_eq!(records(0).len(), 22);
    assert_eq!(got[0]["globals"]["cali.channel"], "default");
    assert_eq!(got[0]["globals"]["iterations"], "4");
}

/// `pthread` marks every record with its thread's `pthread.id` and
/// `pthread.is_master` (unaligned context: in a trace's records, and in an
/// aggregation's keys), the first records of each thread too.
#[test]
fn pthread_service_marks_records_with_their_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("threads.cali");
    for services in ["event,pthread,timer,trace,recorder", "aggregate,event,pthread,timer,recorder"] {
        run("threads", &[("CALI_SERVICES_ENABLE", services), ("CALI_RECORDER_FILENAME", file.to_str().unwrap())]);
        let mut db = MetadataDb::new();
        let records = read_records(&mut db, "t", &std::fs::read(&file).unwrap()).unwrap();
        let (id, master) =
            (db.attribute_by_name("pthread.id").unwrap().id(), db.attribute_by_name("pthread.is_master").unwrap().id());
        let snapshots: Vec<Vec<(caliper_data::node::Id, caliper_data::Variant)>> =
            records.iter().filter(|r| r.kind == caliper_data::RecordKind::Ctx).map(|r| db.expand(r)).collect();
        let value = |entries: &[(caliper_data::node::Id, caliper_data::Variant)], attr| {
            entries.iter().find(|(a, _)| *a == attr).map(|(_, v)| v.clone())
        };
        let workers: std::collections::BTreeSet<u64> = snapshots
            .iter()
            .filter(|e| value(e, master).and_then(|v| v.to_bool()) == Some(false))
            .filter_map(|e| value(e, id).and_then(|v| v.to_u64()))
            .collect();
        assert_eq!(workers.len(), 4, "four worker threads with {services}: {workers:?}");
        assert!(
            snapshots.iter().all(|e| value(e, id).is_some() && value(e, master).is_some()),
            "every record of {services} has its thread's marks, the first ones too"
        );
    }
}

#[test]
fn debug_service_logs_updates() {
    let out = run("nested", &[("CALI_SERVICES_ENABLE", "debug"), ("CALI_LOG_VERBOSITY", "1")]);
    let err = stderr(&out);
    assert!(err.contains("== CALIPER: Event: pre_begin (region=main)"), "{err}");
    assert!(err.contains("== CALIPER: Event: pre_end (region=foo)"), "{err}");
    assert!(err.contains("== CALIPER: Event: pre_begin (iteration#mainloop=3)"), "{err}");
}

#[test]
fn annotation_metadata_reaches_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("meta.cali");
    run_with("metadata", &trace_env(&file));
    let mut db = MetadataDb::new();
    read_records(&mut db, "m", &std::fs::read(&file).unwrap()).unwrap();
    let bytes = db.attribute_by_name("io.bytes").unwrap();
    assert_eq!(db.metadata_by_name(bytes, "attribute.unit").and_then(|v| v.as_str()), Some("B"));
    assert!(bytes.properties().is_aggregatable() && bytes.is_asvalue());
}

/// Runs `scenario` traced under region_monitor with a time interval of
/// `interval` seconds; gives the trace's records, expanded and keeping the
/// attributes `keep` accepts, and the log.
fn run_region_monitor(scenario: &str, interval: &str, keep: &dyn Fn(&str) -> bool) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("monitor.cali");
    let out = run_with(
        scenario,
        &[
            ("CALI_SERVICES_ENABLE", "region_monitor,timer,trace,recorder".into()),
            ("CALI_RECORDER_FILENAME", file.display().to_string()),
            ("CALI_REGION_MONITOR_TIME_INTERVAL", interval.into()),
            ("CALI_LOG_VERBOSITY", "1".into()),
        ],
    );
    (expand_with(&file, keep), stderr(&out))
}

#[test]
fn region_monitor_measures_long_region_instances_only() {
    // Every instance is long: each is measured from its second visit.
    let (records, log) = run_region_monitor("nested", "0", &untimed);
    assert_eq!(records.len(), 3, "the 2nd to 4th foo: {records:?}");
    assert!(records.iter().all(|r| r.contains("region=main/foo")), "{records:?}");
    assert!(log.contains("region_monitor: 4 regions marked, 3 instances measured."), "{log}");
}

/// Spins (keeps the processor busy) for `ms` milliseconds.
fn spin(ms: f64) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(ms / 1000.0);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Three visits of `outer`: 300 ms of its own work, 200 short children of
/// 0.25 ms, and one `inner` child of 250 ms. Long against a 0.2 s interval,
/// and short ones far below it, even where a busy machine stops the
/// program for tens of milliseconds.
fn monitored() {
    for _ in 0..3 {
        let _outer = caliper::region!("outer");
        spin(300.0);
        for _ in 0..200 {
            let _short = caliper::region!("short");
            spin(0.25);
        }
        let _inner = caliper::region!("inner");
        spin(250.0);
    }
}

/// region_monitor with the reference's rules: only children longer than
/// the interval count as a parent's children's time (the short ones are
/// the parent's own time, so `outer`, mostly its own time, is measured),
/// and regions nested in a measured instance are not measured themselves
/// (`inner`, long and all its own time, is skipped inside `outer`).
#[test]
fn region_monitor_counts_long_children_only_and_skips_regions_in_measured_ones() {
    let (regions, log) = run_region_monitor("monitored", "0.2", &|name| name == "region");
    assert_eq!(regions, ["region=outer", "region=outer"], "the 2nd and 3rd outer: {log}");
    assert!(log.contains("region_monitor: 2 regions marked, 2 instances measured."), "{log}");
}

#[test]
fn the_flush_policy_writes_full_trace_buffers_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_with(
        "many",
        &[
            ("CALI_SERVICES_ENABLE", "event,trace,recorder".into()),
            ("CALI_RECORDER_DIRECTORY", dir.path().display().to_string()),
            ("CALI_TRACE_BUFFER_SIZE", "0.004".into()),
            ("CALI_TRACE_BUFFER_POLICY", "flush".into()),
            ("CALI_LOG_VERBOSITY", "1".into()),
        ],
    );
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.len() > 2, "several flushes: {files:?}\n{}", stderr(&out));
    let records: usize = files.iter().map(|f| expand(f).len()).sum();
    // A begin and an end of each region, and one set each: every snapshot
    // is written exactly once.
    assert_eq!(records, 3 * 2000);
    assert!(stderr(&out).contains("default: Trace buffer full, flushing"), "{}", stderr(&out));
}

/// The log at verbosity 2 and 3 has the reference's headings: a channel's
/// configuration (3), what threads and the process leave behind at exit
/// (2), and channel-named flush summaries (1); none of it below its level.
#[test]
fn verbose_logs_say_what_the_reference_says() {
    let verbose = |level: &str| {
        let env = [
            ("CALI_SERVICES_ENABLE", "aggregate,event,recorder,timer"),
            ("CALI_RECORDER_FILENAME", "/dev/null"),
            ("CALI_LOG_VERBOSITY", level),
        ];
        stderr(&run("threads", &env))
    };
    let three = verbose("3");
    for expected in [
        "== CALIPER: default: Configuration:",
        "== CALIPER:   CALI_SERVICES_ENABLE=aggregate,event,recorder,timer",
        "== CALIPER:   CALI_TIMER_INCLUSIVE_DURATION=false",
        "== CALIPER: Releasing Caliper thread data:",
        "== CALIPER:   Thread blackboard: ",
        "== CALIPER: Process blackboard: ",
        "== CALIPER: Metadata tree: ",
        "== CALIPER: Metadata memory pool: ",
        "== CALIPER: default: Aggregate: flushed ",
    ] {
        assert!(three.contains(expected), "{expected:?} at verbosity 3:\n{three}");
    }
    let two = verbose("2");
    assert!(two.contains("Releasing Caliper thread data") && !two.contains("Configuration:"), "{two}");
    let one = verbose("1");
    assert!(one.contains("default: Aggregate: flushed") && !one.contains("Releasing"), "{one}");
}

/// The statistics service counts the example's begin and end events (main,
/// init, the loop, its 4 iterations and 4 foo) and the snapshots they
/// took, and logs them at the end.
#[test]
fn statistics_counts_events_and_snapshots() {
    let out = run(
        "nested",
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,statistics,timer,recorder"),
            ("CALI_RECORDER_FILENAME", "/dev/null"),
            ("CALI_LOG_VERBOSITY", "1"),
        ],
    );
    let log = stderr(&out);
    for expected in [
        "== CALIPER: default: statistics:",
        "== CALIPER:   Number of begin events: 11",
        "== CALIPER:   Number of end events:   11",
        "== CALIPER:   Number of snapshots:    22",
        "== CALIPER:   Number of threads:      1",
    ] {
        assert!(log.contains(expected), "{expected:?}:\n{log}");
    }
}
