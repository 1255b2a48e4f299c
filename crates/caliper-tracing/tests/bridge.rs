//! Programs instrumented with `tracing` only, run under Caliper's configs:
//! their spans are regions in `runtime-report`, `spot` and `event-trace`,
//! their fields and events attributes, and the futures they instrument
//! keep their paths on a multi-threaded tokio runtime.

use caliper_data::cali::read_records;
use caliper_data::{MetadataDb, RecordKind};
use caliper_testutil::report;
use caliper_tracing::CaliperLayer;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    let layer = CaliperLayer::new()
        .target_attribute("phases", "phase")
        .field_attribute("kernel", "kernel")
        .count_suspended_time(std::env::var_os("COUNT_SUSPENDED").is_some());
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
    match name.as_str() {
        "solver" => solver(),
        "tokio_tasks" => tokio_tasks(),
        "nested_suspended" => nested_suspended(),
        "handed_off" => handed_off(),
        "recorded_elsewhere" => recorded_elsewhere(),
        "out_of_order" => out_of_order(),
        "escaping_region" => escaping_region(),
        other => panic!("unknown scenario {other}"),
    }
    // Exit here, so that the harness prints nothing after the report.
    std::process::exit(0);
}

/// Runs `scenario` in a child process with `env`; it must succeed without
/// a Caliper message.
fn run(scenario: &str, env: &[(&str, &str)]) -> Output {
    let out = run_unchecked(scenario, env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scenario {scenario} failed:\n{stderr}");
    assert!(!stderr.contains("== CALIPER"), "{stderr}");
    out
}

/// Runs `scenario` in a child process with `env`.
fn run_unchecked(scenario: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "scenario_child", "--nocapture", "--test-threads=1"]);
    cmd.env("CALIPER_TEST_SCENARIO", scenario);
    for key in ["CALI_SERVICES_ENABLE", "CALI_CONFIG", "CALI_CONFIG_PROFILE", "CALI_LOG_VERBOSITY"] {
        cmd.env_remove(key);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

/// Keeps the thread busy for `d`.
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[tracing::instrument]
fn step(i: u64) {
    spin(Duration::from_millis(1));
}

#[tracing::instrument(skip_all)]
fn solve(n: u64) {
    for i in 0..n {
        step(i);
    }
    tracing::info!(residual = 0.25, "converged");
}

/// `tracing` spans only, inside a Caliper region: main > solve > step (3
/// times, each with its field `i`), an event in solve, a span whose field
/// is recorded after it was made, a span of target `phases` and one with a
/// `kernel` field.
fn solver() {
    let _main = caliper::region!("main");
    solve(3);
    let later = tracing::info_span!("later", n = tracing::field::Empty);
    later.record("n", 7_u64);
    later.in_scope(|| {});
    tracing::info_span!(target: "phases", "setup").in_scope(|| {
        tracing::info_span!("launch", kernel = "matmul", size = 64_u64).in_scope(|| spin(Duration::from_millis(1)));
    });
}

/// A task's work: bursts with a yield between them (where another worker
/// may take it over), a Caliper region open across a yield, a sleep inside
/// a span, and a last burst in an instrumented async function.
async fn task_body() {
    for _ in 0..5 {
        tracing::info_span!("compute").in_scope(|| spin(Duration::from_millis(2)));
        tokio::task::yield_now().await;
    }
    {
        // A Caliper region held across an await inside the task's span.
        let _waiting = caliper::region!("waiting");
        tokio::task::yield_now().await;
        spin(Duration::from_millis(1));
    }
    tokio::time::sleep(Duration::from_millis(50)).instrument(tracing::info_span!("sleeping")).await;
    after().await;
}

#[tracing::instrument]
async fn after() {
    spin(Duration::from_millis(2));
}

/// A tokio runtime of two workers, each running in a Caliper region of
/// its own (`worker`).
fn workers_in_regions() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .on_thread_start(|| caliper::begin_region("worker"))
        .on_thread_stop(|| caliper::end_region("worker"))
        .build()
        .unwrap()
}

/// Four tasks, each a future instrumented with a `task` span, on a
/// runtime of two workers that each run in a Caliper region of its own.
fn tokio_tasks() {
    let rt = workers_in_regions();
    let _main = caliper::region!("main");
    rt.block_on(async {
        let tasks: Vec<_> = (0..4).map(|_| tokio::spawn(task_body().instrument(tracing::info_span!("task")))).collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    drop(rt);
}

/// A task in a span that holds a Caliper region and a span while tokio
/// moves it to another thread: `block_in_place` hands its worker's queue
/// to a new thread, so its next poll runs on another one.
fn handed_off() {
    let rt = workers_in_regions();
    let _main = caliper::region!("main");
    rt.block_on(async {
        let task = async {
            let before = std::thread::current().id();
            let _held = caliper::region!("held");
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(20)));
            tokio::task::yield_now().instrument(tracing::info_span!("yield")).await;
            assert_ne!(std::thread::current().id(), before, "the task was not moved to another thread");
            tracing::info_span!("moved").in_scope(|| spin(Duration::from_millis(2)));
        };
        tokio::spawn(task.instrument(tracing::info_span!("task"))).await.unwrap();
    });
    drop(rt);
}

/// A task whose only wait is a sleep instrumented with a span of its own.
fn nested_suspended() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let _main = caliper::region!("main");
    rt.block_on(
        async {
            let sleep = tokio::time::sleep(Duration::from_millis(50));
            sleep.instrument(tracing::info_span!("sleeping")).await;
        }
        .instrument(tracing::info_span!("task")),
    );
}

/// A span entered on another thread (which keeps its path in its cache),
/// a field recorded on the main thread, then the span entered on that
/// thread again.
fn recorded_elsewhere() {
    let _main = caliper::region!("main");
    let span = tracing::info_span!("shared", n = 1_u64);
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let span = &span;
        s.spawn(move || {
            for () in wait {
                span.in_scope(|| {});
                done.send(()).unwrap();
            }
        });
        go.send(()).unwrap();
        finished.recv().unwrap();
        span.record("n", 2_u64);
        go.send(()).unwrap();
        finished.recv().unwrap();
        drop(go);
    });
}

/// Spans exited out of order, a span's region ended by hand inside it, and
/// an event with a field that does not fit its attribute; `main` then ends
/// as usual.
fn out_of_order() {
    let _main = caliper::region!("main");
    let (a, b) = (tracing::info_span!("a"), tracing::info_span!("b"));
    let entered_a = a.enter();
    let entered_b = b.enter();
    drop(entered_a);
    drop(entered_b);
    tracing::info_span!("c").in_scope(|| caliper::end_region("c"));
    // A field named as an attribute of another type.
    tracing::info!(region = 5_u64, "numbered");
}

/// A Caliper region begun inside a span and ended after it, outside.
fn escaping_region() {
    let _main = caliper::region!("main");
    let escaped = tracing::info_span!("a").in_scope(|| caliper::region!("x"));
    drop(escaped);
    println!("the program goes on");
}

/// The snapshot records of a `.cali` file, each as its sorted
/// `attr=value` pairs (nested values joined with `/`), without times.
fn records(path: &Path) -> Vec<String> {
    let mut db = MetadataDb::new();
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records = read_records(&mut db, "out", &data).unwrap();
    let untimed = |name: &str| !name.starts_with("time.") && name != "cali.caliper.version";
    let expand = |record| {
        let mut pairs: Vec<String> = db
            .expand_paths(record)
            .into_iter()
            .filter_map(|(a, v)| {
                let name = db.attribute(a).unwrap().name().to_string();
                let values: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                untimed(&name).then(|| format!("{name}={}", values.join("/")))
            })
            .collect();
        pairs.sort();
        pairs.join(",")
    };
    records.iter().filter(|r| r.kind == RecordKind::Ctx).map(expand).collect()
}

#[test]
fn spans_are_regions_in_runtime_report() {
    let out = run("solver", &[("CALI_CONFIG", "runtime-report,output=stderr")]);
    let text = String::from_utf8_lossy(&out.stderr);
    let rows = report::rows(&text);
    assert_eq!(
        report::paths(&rows),
        ["main", "main/later", "main/setup", "main/setup/matmul", "main/solve", "main/solve/step"],
        "{text}"
    );
    assert!(report::row(&rows, "main/solve/step").exclusive >= 0.003, "{text}");
}

#[test]
fn spans_fields_and_events_are_in_event_trace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    run("solver", &[("CALI_CONFIG", &format!("event-trace,output={}", file.display()))]);
    let records = records(&file);
    let expected = [
        "event.begin#region=solve,region=main",
        // The span's field, an attribute while it is entered.
        "event.begin#region=step,i=1,region=main/solve",
        "event.end#region=step,i=1,region.count=1,region=main/solve/step",
        // The event: a snapshot with its fields, in its span's path.
        "message=converged,region=main/solve,residual=0.250000",
        // A field recorded later, from the next enter on.
        "event.begin#region=later,n=7,region=main",
        // A span of target `phases` is a phase; one with a `kernel` field
        // a kernel, its other fields attributes.
        "event.begin#phase=setup,region=main",
        "event.begin#kernel=matmul,phase=setup,region=main,size=64",
        "event.end#kernel=matmul,kernel=matmul,phase=setup,region.count=1,region=main,size=64",
    ];
    for record in expected {
        assert!(records.iter().any(|r| r == record), "no {record} in {records:#?}");
    }
}

#[test]
fn spans_are_regions_in_spot_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spot.cali");
    run("solver", &[("CALI_CONFIG", &format!("spot,output={}", file.display()))]);
    let records = records(&file);
    // A profile entry per path (and its region counts): `step`'s three
    // visits in one entry, the phase and the kernel spans in theirs.
    let has = |pairs: &[&str]| records.iter().any(|r| pairs.iter().all(|p| r.split(',').any(|q| q == *p)));
    for pairs in [
        &["region=main/solve/step", "sum#sum#rc.count=3"][..],
        &["region=main/solve", "sum#sum#rc.count=1"],
        &["phase=setup", "region=main"],
        &["kernel=matmul", "phase=setup", "region=main"],
    ] {
        assert!(has(pairs), "no {pairs:?} in {records:#?}");
    }
}

#[test]
fn suspended_time_of_instrumented_futures_counts_when_asked_for() {
    let out = run("tokio_tasks", &[("CALI_CONFIG", "runtime-report,output=stdout"), ("COUNT_SUSPENDED", "1")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = report::rows(&text);
    // 4 tasks x 50 ms asleep in the `sleeping` span.
    assert!(report::row(&rows, "main/task/sleeping").exclusive >= 0.18, "{text}");
    assert_eq!(report::paths(&rows).len(), 7, "{text}");
}

#[test]
fn a_span_moved_to_another_worker_keeps_its_open_region() {
    let out = run("handed_off", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = report::rows(&text);
    assert_eq!(
        report::paths(&rows),
        ["main", "main/task", "main/task/held", "main/task/held/moved", "main/task/held/yield", "worker"],
        "{text}"
    );
    // The 20 ms in `block_in_place`, on the first thread, inside `held`.
    assert!(report::row(&rows, "main/task/held").exclusive >= 0.019, "{text}");
}

#[test]
fn nested_spans_count_a_suspension_once() {
    let out = run("nested_suspended", &[("CALI_CONFIG", "runtime-report,output=stdout"), ("COUNT_SUSPENDED", "1")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = report::rows(&text);
    // The innermost span suspended counts the sleep; the task's span
    // around it, exited with it, does not count it again.
    assert!(report::row(&rows, "main/task/sleeping").exclusive >= 0.045, "{text}");
    assert!(report::row(&rows, "main/task").exclusive < 0.025, "{text}");
}

#[test]
fn a_thread_enters_a_span_with_the_fields_recorded_since_it_last_did() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    run("recorded_elsewhere", &[("CALI_CONFIG", &format!("event-trace,output={}", file.display()))]);
    let begins: Vec<String> =
        records(&file).into_iter().filter(|r| r.starts_with("event.begin#region=shared")).collect();
    assert_eq!(begins, ["event.begin#region=shared,n=1,region=main", "event.begin#region=shared,n=2,region=main"]);
}

#[test]
fn spans_exited_out_of_order_leave_the_stack_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    run("out_of_order", &[("CALI_CONFIG", &format!("event-trace,output={}", file.display()))]);
    let records = records(&file);
    assert_eq!(
        records.last().map(String::as_str),
        Some("event.end#region=main,region.count=1,region=main"),
        "{records:#?}"
    );
    // The event's snapshot, without the field that did not fit.
    assert!(records.contains(&"message=numbered,region=main".to_string()), "{records:#?}");
}

#[test]
fn a_region_escaping_its_span_costs_a_message_never_the_program() {
    let out = run_unchecked("escaping_region", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("the program goes on"));
    let messages: Vec<&str> = stderr.lines().filter(|l| l.starts_with("== CALIPER: ")).collect();
    assert_eq!(
        messages,
        [
            "== CALIPER: Stack value mismatch: Trying to end region=x but current value is region=main",
            "== CALIPER: Ceasing region tracking!"
        ],
        "{stderr}"
    );
}

#[test]
fn instrumented_futures_keep_their_paths_on_any_worker() {
    let out = run("tokio_tasks", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = report::rows(&text);
    assert_eq!(
        report::paths(&rows),
        [
            "main",
            "main/task",
            "main/task/after",
            "main/task/compute",
            "main/task/sleeping",
            "main/task/waiting",
            "worker"
        ],
        "{text}"
    );
    // 4 tasks x 5 bursts x 2 ms.
    assert!(report::row(&rows, "main/task/compute").exclusive >= 0.040, "{text}");
    assert!(report::row(&rows, "main/task/waiting").exclusive >= 0.004, "{text}");
    // 4 tasks x 50 ms asleep: not the tasks' time.
    assert!(report::row(&rows, "main/task/sleeping").exclusive < 0.020, "{text}");
    // Between its spans the task only yields and awaits: next to nothing
    // of its own, its waits at the yields not counted.
    assert!(report::row(&rows, "main/task").exclusive < 0.020, "{text}");
}
