//! Snapshots pushed from signal handlers (`caliper::signal`): four threads
//! that allocate, lock and annotate under a 10 kHz per-thread timer signal
//! whose handler pushes a snapshot each time. Nothing may hang, nothing
//! the threads annotated may be lost, every capture taken must reach the
//! output, and the handler must never allocate.

mod common;

use caliper::signal::{self, Outcome};
use caliper::value::ValueKey;
use caliper::{AttrType, Caliper, Properties};
use common::{read, run_bounded};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The system allocator, counting allocations made inside the handler.
struct WatchingAllocator;

thread_local! {
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS_IN_HANDLER: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator.
unsafe impl GlobalAlloc for WatchingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if IN_HANDLER.with(Cell::get) {
            ALLOCATIONS_IN_HANDLER.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: WatchingAllocator = WatchingAllocator;

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    match name.as_str() {
        "stress" => stress(),
        "outcomes" => outcomes(),
        other => panic!("unknown scenario {other}"),
    }
}

static CHANNEL: AtomicUsize = AtomicUsize::new(0);
static SAMPLE_ATTR: AtomicU64 = AtomicU64::new(0);
static SIGNALS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    IN_HANDLER.with(|h| h.set(true));
    let sample = [(SAMPLE_ATTR.load(Ordering::Relaxed), ValueKey::uint(1))];
    let _: Outcome = signal::push_snapshot_from_signal(CHANNEL.load(Ordering::Relaxed), &sample);
    SIGNALS.fetch_add(1, Ordering::Relaxed);
    IN_HANDLER.with(|h| h.set(false));
}

/// A timer that sends SIGPROF to the calling thread every 100 µs.
fn arm_thread_timer() -> libc::timer_t {
    // SAFETY: plain system calls on local structures.
    unsafe {
        let mut event: libc::sigevent = std::mem::zeroed();
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = libc::SIGPROF;
        event.sigev_notify_thread_id = libc::gettid();
        let mut timer: libc::timer_t = std::ptr::null_mut();
        assert_eq!(libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer), 0);
        let every = libc::timespec { tv_sec: 0, tv_nsec: 100_000 };
        let spec = libc::itimerspec { it_interval: every, it_value: every };
        assert_eq!(libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()), 0);
        timer
    }
}

/// The stress scenario (`CALIPER_STRESS_SECONDS`, default 20): prints the
/// iterations made and the signals handled; the counts of captures taken
/// and dropped.
fn stress() {
    let seconds: u64 = std::env::var("CALIPER_STRESS_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let cali = Caliper::instance().expect("runtime");
    let channel = cali.all_channels().into_iter().find(|c| c.name() == "default").expect("the default channel");
    CHANNEL.store(channel.id(), Ordering::Relaxed);
    let sample = cali.create_attribute(
        "test.sample",
        AttrType::Uint,
        Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS,
        &[],
    );
    SAMPLE_ATTR.store(sample.id(), Ordering::Relaxed);
    // SAFETY: installing a handler that only calls async-signal-safe code.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()), 0);
    }
    let shared = Mutex::new(Vec::<u64>::new());
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let iterations: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let shared = &shared;
                s.spawn(move || {
                    signal::prepare_thread();
                    let timer = (std::env::var_os("CALIPER_STRESS_NO_TIMER").is_none()).then(arm_thread_timer);
                    let mut done = 0u64;
                    while Instant::now() < deadline {
                        let _work = caliper::region!("work");
                        let data: Vec<u64> = (0..(done % 64 + 1)).collect();
                        {
                            let _inner = caliper::region!("inner");
                            shared.lock().unwrap().push(data.iter().sum::<u64>() + t);
                        }
                        caliper::set_by_name("step", (done % 8) as i64);
                        done += 1;
                        if done.is_multiple_of(1024) {
                            shared.lock().unwrap().clear();
                        }
                    }
                    if let Some(timer) = timer {
                        // SAFETY: our own timer.
                        unsafe { libc::timer_delete(timer) };
                    }
                    done
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let c = signal::counts();
    println!(
        "iterations={iterations} signals={} taken={} no_thread={} busy={} full={} unfit={} allocations_in_handler={}",
        SIGNALS.load(Ordering::Relaxed),
        c.taken,
        c.no_thread,
        c.busy,
        c.full,
        c.unfit,
        ALLOCATIONS_IN_HANDLER.load(Ordering::Relaxed)
    );
}

/// A `name=value` figure of the scenario's summary line.
fn figure(summary: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    let word = summary.split_whitespace().find_map(|w| w.strip_prefix(&prefix));
    word.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no {name} in {summary:?}"))
}

#[test]
fn snapshots_from_a_10_khz_signal_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.cali");
    let env = [
        ("CALI_SERVICES_ENABLE", "aggregate,event,recorder,timer"),
        ("CALI_RECORDER_FILENAME", file.to_str().unwrap()),
    ];
    let (finished, stdout, err) = run_bounded(dir.path(), "stress", &env, Duration::from_secs(120));
    assert!(finished.is_some_and(|s| s.success()), "hung or failed ({finished:?}):\n{err}");
    let summary =
        stdout.lines().find_map(|l| l.split_once("iterations=")).map(|(_, rest)| format!("iterations={rest}"));
    let summary = summary.expect("the summary line");
    println!("{summary}");
    let [iterations, signals, taken, no_thread, busy, full, unfit, allocations] =
        ["iterations", "signals", "taken", "no_thread", "busy", "full", "unfit", "allocations_in_handler"]
            .map(|n| figure(&summary, n));
    assert_eq!(allocations, 0, "the handler allocated");
    assert_eq!(taken + no_thread + busy + full + unfit, signals, "every signal is taken or counted as dropped");
    assert!(taken > 0, "no signal was taken: {summary}");
    // What the output holds: every iteration's regions, and every capture.
    let (db, records) = read(&file);
    let attr = |name: &str| db.attribute_by_name(name).map(|a| a.id());
    let (count, samples) = (attr("sum#region.count"), attr("sum#test.sample"));
    let (mut work_ends, mut inner_ends, mut sampled) = (0, 0, 0);
    for record in &records {
        let paths = db.expand_paths(record);
        let end = paths.iter().find(|(a, _)| db.attribute(*a).is_some_and(|a| a.name() == "event.end#region"));
        let value = |id: Option<u64>| {
            record.entries.iter().find_map(|e| match e {
                caliper_data::Entry::Immediate(a, v) if Some(*a) == id => v.to_u64(),
                _ => None,
            })
        };
        match end.and_then(|(_, v)| v.last()).map(|v| v.to_string()) {
            Some(name) if name == "work" => work_ends += value(count).unwrap_or(0),
            Some(name) if name == "inner" => inner_ends += value(count).unwrap_or(0),
            _ => {}
        }
        sampled += value(samples).unwrap_or(0);
    }
    assert_eq!(work_ends, iterations, "every work region is in the profile");
    assert_eq!(inner_ends, iterations, "every inner region is in the profile");
    assert_eq!(sampled, taken, "every capture taken reaches the profile");
}

/// The outcomes of signal snapshots outside the stress, called from plain
/// code (the entry point works anywhere): a thread that never met the
/// runtime, a prepared one, a full buffer (where no thread drains it), a
/// context too deep to capture.
fn outcomes() {
    let cali = Caliper::instance().expect("runtime");
    let channel = cali.all_channels().into_iter().find(|c| c.name() == "default").expect("the default channel");
    let id = channel.id();
    let push = move || signal::push_snapshot_from_signal(id, &[]);
    let fresh = std::thread::spawn(push).join().unwrap();
    println!("fresh={fresh:?}");
    signal::prepare_thread();
    println!("prepared={:?}", push());
    // A full buffer: in a forked child, which has no thread draining the
    // buffers (in the parent, one empties them from half full on).
    // SAFETY: the child only pushes, prints and leaves with `_exit`.
    match unsafe { libc::fork() } {
        0 => {
            let mut last = Outcome::Taken;
            for _ in 0..signal::CAPACITY {
                last = push();
            }
            println!("past_capacity={last:?}");
            std::io::Write::flush(&mut std::io::stdout()).unwrap();
            // SAFETY: ending the child without the parent's exit handlers.
            unsafe { libc::_exit(0) };
        }
        child => {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(child, &mut status, 0) };
        }
    }
    // An update processes the captures; then the buffer takes more.
    caliper::begin_by_name("depth", 0);
    caliper::end_by_name("depth");
    println!("after_update={:?}", push());
    // Entries begun since the last update have no nodes yet.
    for i in 0..=signal::MAX_OPEN {
        caliper::begin_region(&format!("d{i}"));
    }
    println!("too_deep={:?}", push());
    for i in (0..=signal::MAX_OPEN).rev() {
        caliper::end_region(&format!("d{i}"));
    }
}

#[test]
fn outcomes_of_signal_snapshots() {
    let out = common::run("outcomes", &[("CALI_SERVICES_ENABLE", "aggregate,timer")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for expected in ["fresh=NoThread", "prepared=Taken", "past_capacity=Full", "after_update=Taken", "too_deep=Unfit"] {
        assert!(stdout.contains(expected), "{expected} in:\n{stdout}");
    }
}
