//! Faults a host program really has, end to end: every service enabled
//! alone and with the others, a bad service setting, and flushes and exits
//! from signal handlers that interrupt annotating threads. Each scenario
//! runs in a child process (this test binary re-run with
//! `CALIPER_TEST_SCENARIO` set), with a time bound where it could hang.

mod common;

/// A flush from a signal handler must see an allocation it interrupted
/// (see `TrackedAllocator`), as it does in libcaliper.
#[global_allocator]
static ALLOC: caliper::TrackedAllocator = caliper::TrackedAllocator;

use caliper::services::SERVICES;
use common::{fork_a_child_that_annotates, nested, run, run_bounded, run_in, stderr};
use std::time::{Duration, Instant};

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    match name.as_str() {
        "workload" => workload(),
        "template" => advance_the_template_source(),
        "flush_in_handler" => flush_in_signal_handler(),
        "shapes" => shapes(),
        "fork_while_busy" => fork_while_another_thread_is_busy(),
        other => panic!("unknown scenario {other}"),
    }
}

/// Every kind of annotation, on the main thread and two others.
fn workload() {
    nested();
    let threads: Vec<_> = (0..2)
        .map(|t| {
            std::thread::spawn(move || {
                let lp = caliper::Loop::new("work");
                for i in 0..50 {
                    let _it = lp.iteration(i);
                    let _r = caliper::region!("step");
                    caliper::set_by_name("thread", t as i64);
                    caliper::begin_by_name("phase", "inner");
                    caliper::end_by_name("phase");
                }
            })
        })
        .collect();
    let event = caliper::TimedAsyncEvent::begin("async");
    for t in threads {
        t.join().unwrap();
    }
    event.end();
    caliper::flush();
}

/// Forks 20 times while another thread creates attributes and annotates
/// without pause (so it often holds a runtime lock at the fork); each
/// child begins a region and exits normally.
fn fork_while_another_thread_is_busy() {
    nested();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                caliper::begin_by_name(&format!("busy.{}", i % 64), "x");
                caliper::end_by_name(&format!("busy.{}", i % 64));
                i += 1;
            }
        })
    };
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(2));
        fork_a_child_that_annotates();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    busy.join().unwrap();
}

/// A chain of 1,000 nested regions, then 10,000 siblings under `main`.
fn shapes() {
    let _main = caliper::region!("main");
    let names: Vec<String> = (0..1000).map(|i| format!("d{i}")).collect();
    for name in &names {
        caliper::begin_region(name);
    }
    for name in names.iter().rev() {
        caliper::end_region(name);
    }
    for i in 0..10_000 {
        let name = format!("s{i}");
        caliper::begin_region(&name);
        caliper::end_region(&name);
    }
}

/// A timer signal whose handler flushes, arriving while the thread
/// annotates (by name too, which takes the registry's lock and allocates).
fn flush_in_signal_handler() {
    extern "C" fn on_alarm(_: libc::c_int) {
        caliper::flush();
    }
    // SAFETY: installing a handler and starting a timer of this process.
    unsafe {
        libc::signal(libc::SIGALRM, on_alarm as *const () as libc::sighandler_t);
        let every = libc::timeval { tv_sec: 0, tv_usec: 10_000 };
        let timer = libc::itimerval { it_interval: every, it_value: every };
        libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut());
    }
    let start = Instant::now();
    let mut i = 0i64;
    while start.elapsed() < Duration::from_millis(200) {
        let _r = caliper::region!("loop");
        caliper::begin_by_name("phase", "x");
        // A few values: the profile, and so each flush, stays small.
        caliper::set_by_name("i", i % 8);
        caliper::end_by_name("phase");
        i += 1;
    }
    // SAFETY: stopping the timer.
    unsafe {
        let off = libc::itimerval {
            it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 },
            it_value: libc::timeval { tv_sec: 0, tv_usec: 0 },
        };
        libc::setitimer(libc::ITIMER_REAL, &off, std::ptr::null_mut());
    }
    println!("done");
}

/// Every service alone, with the aggregating and the tracing pipelines,
/// and all of them at once: the program runs to its end, nothing panics,
/// and an output service writes what it should.
#[test]
fn every_service_runs_alone_and_with_the_others() {
    let names: Vec<&str> = SERVICES.iter().map(|s| s.name).collect();
    let all = names.join(",");
    let mut sets: Vec<String> = Vec::new();
    for name in &names {
        sets.push(name.to_string());
        sets.push(format!("{name},event,timer,aggregate,report"));
        sets.push(format!("{name},event,timer,trace,recorder"));
    }
    sets.push(all);
    for services in &sets {
        let dir = tempfile::tempdir().unwrap();
        let out = run_in(
            dir.path(),
            "workload",
            &[("CALI_SERVICES_ENABLE", services), ("CALI_CHANNEL_CONFIG_CHECK", "false"), ("CALI_LOG_VERBOSITY", "0")],
        );
        let err = stderr(&out);
        assert!(out.status.success(), "{services}: {}\n{err}", out.status);
        assert!(!err.contains("panicked") && !err.contains("internal error"), "{services}:\n{err}");
        let listed: Vec<&str> = services.split(',').collect();
        if listed.contains(&"report") && listed.contains(&"aggregate") && listed.contains(&"event") {
            let report = String::from_utf8_lossy(&out.stdout);
            assert!(report.contains("step"), "{services}: the report has the threads' region:\n{report}");
        }
        if listed.contains(&"recorder") && listed.contains(&"trace") && listed.contains(&"event") {
            let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
            assert!(!files.is_empty(), "{services}: no .cali file");
            for file in files {
                let records = common::expand(&file);
                assert!(records.iter().any(|r| r.contains("region=step")), "{services}: {}", file.display());
            }
        }
    }
}

/// A report query that does not parse is said once, in one line; the
/// service is not called missing.
#[test]
fn a_bad_report_query_is_reported_once_as_what_it_is() {
    let out = run(
        "workload",
        &[("CALI_SERVICES_ENABLE", "event,aggregate,timer,report"), ("CALI_REPORT_CONFIG", "select count( group by")],
    );
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("== CALIPER: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("Report: config parse error"), "{err}");
}

/// Flushes from a signal handler that interrupts annotations (inside an
/// update, holding the registry's lock, or allocating) never wait for
/// themselves: the program ends within its time bound, every time.
#[test]
fn a_flush_in_a_signal_handler_never_hangs() {
    for run in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.txt");
        let env = [
            ("CALI_SERVICES_ENABLE", "event,aggregate,timer,report"),
            ("CALI_REPORT_FILENAME", report.to_str().unwrap()),
        ];
        let (finished, stdout, err) = run_bounded(dir.path(), "flush_in_handler", &env, Duration::from_secs(30));
        assert!(finished.is_some_and(|s| s.success()), "run {run}: hung or failed ({:?}):\n{err}", finished);
        assert!(stdout.contains("done"), "run {run}");
        assert!(!err.contains("panicked") && !err.contains("internal error"), "run {run}:\n{err}");
    }
}

/// runtime-report on a deep chain and many siblings: a line per region,
/// the path column cut at the reference's 48 characters however deep the
/// region (time and memory are measured by the `region_shapes` example and
/// the formatter bench, not here).
#[test]
fn runtime_report_of_deep_and_wide_regions() {
    let out = run("shapes", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    // The report comes at exit, after the test harness's own lines.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().skip_while(|l| !l.starts_with("Path")).collect();
    assert_eq!(lines.len(), 1 + 1 + 1000 + 10_000, "header, main, the chain and the siblings");
    assert!(lines.iter().all(|l| l.chars().nth(48) == Some(' ')), "a path column of 48 characters");
    assert!(lines.iter().any(|l| l.trim_start().starts_with(".. ")), "labels past the width are cut");
    assert!(lines.iter().any(|l| l.starts_with("  s9999 ")), "the last sibling");
}

/// The example measuring service: `measurement.<name>` is what the
/// thread's source advanced since its previous snapshot, so its sum per
/// region is what the program advanced inside it, on every thread.
#[test]
fn the_measurement_template_service_measures_its_source_per_region() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.txt");
    run(
        "template",
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,measurement_template,report"),
            ("CALI_MEASUREMENT_TEMPLATE_NAMES", "x"),
            ("CALI_REPORT_FILENAME", file.to_str().unwrap()),
            ("CALI_REPORT_CONFIG", "select region,sum(measurement.x) group by region format expand"),
        ],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let mut rows: Vec<&str> = text.lines().collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            "region=main,sum#measurement.x=0",
            "region=main/work,sum#measurement.x=40",
            "region=other,sum#measurement.x=7",
            "sum#measurement.x=0",
        ],
        "{text}"
    );
}

/// Advances the template's source inside regions: 10 in each of four
/// `work` regions, 7 in `other` on a thread of its own.
fn advance_the_template_source() {
    use caliper::services::measurement_template::advance;
    let main = caliper::region!("main");
    for _ in 0..4 {
        let _work = caliper::region!("work");
        advance(10);
    }
    drop(main);
    std::thread::spawn(|| {
        let _other = caliper::region!("other");
        advance(7);
    })
    .join()
    .unwrap();
}

/// A child forked while another thread holds a runtime lock never waits
/// for it: every child ends, and writes its report or says why not (the
/// runtime is off in it).
#[test]
fn forked_children_never_block_on_the_parents_threads() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("CALI_CONFIG", "runtime-report")];
    let (finished, _, err) = run_bounded(dir.path(), "fork_while_busy", &env, Duration::from_secs(60));
    assert!(finished.is_some_and(|s| s.success()), "hung or failed ({finished:?}):\n{err}");
    let reports = err.lines().filter(|l| l.starts_with("Path")).count();
    let declined = err.matches("Caliper is off in this process: another thread held").count();
    assert_eq!(reports + declined, 21, "20 children and the parent:\n{err}");
    assert!(reports >= 1, "{err}");
}
