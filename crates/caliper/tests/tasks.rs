//! Futures with a region path of their own (`caliper::Instrument`): the
//! path follows the task across polls and threads, the polling thread's
//! own regions come back after each poll, and the time a task spends
//! suspended is not its own.

mod common;

use caliper::{Instrument, TaskPath};
use caliper_testutil::report;
use common::{expand, run, run_with, stderr, trace_env};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    match name.as_str() {
        "tokio_tasks" => tokio_tasks(false),
        "tokio_tasks_counting_suspended" => tokio_tasks(true),
        "nested_suspended" => nested_suspended(),
        "handed_off" => handed_off(),
        "moved_between_threads" => moved_between_threads(),
        "cancelled" => cancelled(),
        "root_path" => root_path(),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

/// Keeps the thread busy for `d`.
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// A task's work: five bursts of computing with a yield between them
/// (where a worker may take it over), a sleep inside a region, and a last
/// burst after it.
async fn task_body() {
    for _ in 0..5 {
        {
            let _compute = caliper::region!("compute");
            spin(Duration::from_millis(2));
        }
        tokio::task::yield_now().await;
    }
    {
        let _sleeping = caliper::region!("sleeping");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _after = caliper::region!("after");
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

/// Four tasks on a runtime of two workers, each worker in a region of its
/// own (`worker`), spawned from `main`; with `count_suspended`, their time
/// suspended counts.
fn tokio_tasks(count_suspended: bool) {
    let rt = workers_in_regions();
    let _main = caliper::region!("main");
    rt.block_on(async {
        let task = || {
            let task = task_body().in_region("task");
            if count_suspended { task.counting_suspended_time() } else { task }
        };
        let tasks: Vec<_> = (0..4).map(|_| tokio::spawn(task())).collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    drop(rt);
}

/// A task that holds a region while tokio moves it to another thread:
/// `block_in_place` hands its worker's queue to a new thread, so its next
/// poll runs on another one.
fn handed_off() {
    let rt = workers_in_regions();
    let _main = caliper::region!("main");
    rt.block_on(async {
        let task = async {
            let before = std::thread::current().id();
            let _held = caliper::region!("held");
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(20)));
            tokio::task::yield_now().await;
            assert_ne!(std::thread::current().id(), before, "the task was not moved to another thread");
            let _moved = caliper::region!("moved");
            spin(Duration::from_millis(2));
        };
        tokio::spawn(task.in_region("task")).await.unwrap();
    });
    drop(rt);
}

/// A task whose only wait is a sleep in a future of its own, both counting
/// their time suspended.
fn nested_suspended() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let _main = caliper::region!("main");
    rt.block_on(
        async {
            let sleep = tokio::time::sleep(Duration::from_millis(50));
            sleep.in_region("sleeping").counting_suspended_time().await;
        }
        .in_region("task")
        .counting_suspended_time(),
    );
}

/// Pending on its first poll, ready on the next.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) { Poll::Ready(()) } else { Poll::Pending }
    }
}

/// A task that opens `outer`, is suspended inside it, and opens `inner`
/// when resumed.
async fn outer_then_inner() {
    let _outer = caliper::region!("outer");
    YieldOnce(false).await;
    let _inner = caliper::region!("inner");
}

/// Polls `fut` once on a new thread that runs in region `name`.
fn poll_on_thread<F: Future + Send>(name: &'static str, fut: &mut Pin<Box<F>>) -> Poll<F::Output>
where
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            caliper::begin_region(name);
            let poll = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            caliper::end_region(name);
            poll
        })
        .join()
        .unwrap()
    })
}

/// The task is made on the main thread in `main`, polled first on thread
/// `a` and then on thread `b`.
fn moved_between_threads() {
    let _main = caliper::region!("main");
    let mut task = Box::pin(outer_then_inner().in_region("task"));
    assert!(poll_on_thread("a", &mut task).is_pending());
    assert!(poll_on_thread("b", &mut task).is_ready());
}

/// A task given a path of its own, `detached` at the root, polled to its
/// end on the main thread inside `main`.
fn root_path() {
    let _main = caliper::region!("main");
    let task = async {
        let _inner = caliper::region!("inner");
    };
    let mut task = Box::pin(task.in_path(TaskPath::root().region("detached")));
    assert!(task.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready());
}

/// The task is suspended inside `outer` and dropped on the main thread.
fn cancelled() {
    let _main = caliper::region!("main");
    let mut task = Box::pin(outer_then_inner().in_region("task"));
    assert!(task.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    drop(task);
    let _next = caliper::region!("next");
}

#[test]
fn tokio_tasks_keep_their_paths_on_any_worker() {
    let out = run("tokio_tasks", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!stderr(&out).contains("== CALIPER"), "{}", stderr(&out));
    let rows = report::rows(&text);
    // The tasks' regions under the path they were made in, the workers'
    // own region alone: neither leaks into the other.
    assert_eq!(
        report::paths(&rows),
        ["main", "main/task", "main/task/after", "main/task/compute", "main/task/sleeping", "worker"],
        "{text}"
    );
    let row = |p: &str| report::row(&rows, p);
    // 4 tasks x 5 bursts x 2 ms.
    assert!(row("main/task/compute").exclusive >= 0.040, "{text}");
    // 4 tasks x 50 ms asleep: not the tasks' time.
    assert!(row("main/task/sleeping").exclusive < 0.020, "{text}");
    // Between its spans the task only yields and awaits: next to nothing
    // of its own, its waits at the yields not counted.
    assert!(row("main/task").exclusive < 0.020, "{text}");
}

#[test]
fn suspended_time_counts_when_asked_for() {
    let out = run("tokio_tasks_counting_suspended", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!stderr(&out).contains("== CALIPER"), "{}", stderr(&out));
    let rows = report::rows(&text);
    // 4 tasks x 50 ms asleep in `sleeping`.
    assert!(report::row(&rows, "main/task/sleeping").exclusive >= 0.18, "{text}");
    assert_eq!(report::paths(&rows).len(), 6, "{text}");
}

#[test]
fn a_task_moved_to_another_worker_keeps_its_open_region() {
    let out = run("handed_off", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!stderr(&out).contains("== CALIPER"), "{}", stderr(&out));
    let rows = report::rows(&text);
    assert_eq!(
        report::paths(&rows),
        ["main", "main/task", "main/task/held", "main/task/held/moved", "worker"],
        "{text}"
    );
    // The 20 ms in `block_in_place`, on the first thread, inside `held`.
    assert!(report::row(&rows, "main/task/held").exclusive >= 0.019, "{text}");
    assert!(report::row(&rows, "main/task/held/moved").exclusive >= 0.002, "{text}");
}

#[test]
fn nested_futures_count_a_suspension_once() {
    let out = run("nested_suspended", &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = report::rows(&text);
    // The innermost future suspended counts the sleep; the task around
    // it, suspended with it, does not count it again.
    assert!(report::row(&rows, "main/task/sleeping").exclusive >= 0.045, "{text}");
    assert!(report::row(&rows, "main/task").exclusive < 0.025, "{text}");
}

#[test]
fn a_task_moved_between_threads_takes_its_open_regions_along() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    let out = run_with("moved_between_threads", &trace_env(&file));
    assert!(!stderr(&out).contains("== CALIPER"), "{}", stderr(&out));
    let records = expand(&file);
    let find = |event: &str| {
        records
            .iter()
            .find(|r| r.split(',').any(|p| p == event))
            .unwrap_or_else(|| panic!("no {event} in {records:#?}"))
            .clone()
    };
    // Opened on thread a, inside the task's path.
    assert_eq!(find("event.begin#region=outer"), "event.begin#region=outer,region=main/task");
    // Thread a's own region came back after the poll.
    assert_eq!(find("event.end#region=a"), "event.end#region=a,region.count=1,region=a");
    // Resumed on thread b: `outer` is still open there, and ends there.
    assert_eq!(find("event.begin#region=inner"), "event.begin#region=inner,region=main/task/outer");
    assert_eq!(find("event.end#region=outer"), "event.end#region=outer,region.count=1,region=main/task/outer");
    assert_eq!(find("event.end#region=b"), "event.end#region=b,region.count=1,region=b");
}

#[test]
fn a_task_given_a_root_path_runs_outside_the_pollers_regions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    let out = run_with("root_path", &trace_env(&file));
    assert!(!stderr(&out).contains("== CALIPER"), "{}", stderr(&out));
    let records = expand(&file);
    // `main` is ended around the poll and begun again after it.
    let expected = [
        "event.end#region=main,region.count=1,region=main",
        "event.begin#region=detached",
        "event.begin#region=inner,region=detached",
        "event.end#region=inner,region.count=1,region=detached/inner",
        "event.end#region=detached,region.count=1,region=detached",
        "event.begin#region=main",
    ];
    let at = records.iter().position(|r| r == expected[0]).unwrap_or_else(|| panic!("{records:#?}"));
    assert_eq!(records[at..at + expected.len()], expected, "{records:#?}");
}

#[test]
fn a_task_dropped_while_suspended_ends_its_regions_in_its_own_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    let out = run_with("cancelled", &trace_env(&file));
    assert!(!stderr(&out).contains("== CALIPER"), "{}", stderr(&out));
    let records = expand(&file);
    assert!(
        records.contains(&"event.end#region=outer,region.count=1,region=main/task/outer".to_string()),
        "{records:#?}"
    );
    // The main thread's stack is intact: `next` opens under `main`.
    assert!(records.contains(&"event.begin#region=next,region=main".to_string()), "{records:#?}");
}
