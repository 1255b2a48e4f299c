//! The C-callable API called as C calls it: errors as codes with a clear
//! last error (never a panic), the counts so far read in a callback, and a
//! stop asked by a callback.

mod common;

use caliper_dbi::capi::*;
use common::counts_dir;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::ptr::{null, null_mut};

/// Runs are one at a time in a process: the tests that run take turns.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn last_error() -> String {
    // SAFETY: the library's last error is a NUL-terminated string.
    unsafe { CStr::from_ptr(cali_dbi_last_error()) }.to_string_lossy().into_owned()
}

/// A process that will run `argv` in the counts directory.
fn launch(argv: &[&str]) -> *mut cali_dbi_process {
    let words: Vec<CString> = argv.iter().map(|a| CString::new(*a).unwrap()).collect();
    let pointers: Vec<*const c_char> = words.iter().map(|w| w.as_ptr()).collect();
    // SAFETY: argc strings that live across the call.
    unsafe { cali_dbi_launch(pointers.len() as c_int, pointers.as_ptr()) }
}

/// The counts test program, which loads a plugin and forks a child that
/// calls `child_only` twice.
fn launch_counts_with_plugin() -> *mut cali_dbi_process {
    launch(&[counts_dir().join("counts").to_str().unwrap(), &counts_dir().join("libplugin.so").to_string_lossy()])
}

/// The numbers of functions and of arcs in `results`.
fn sizes(results: *mut cali_dbi_results) -> (usize, usize) {
    let (mut functions, mut arcs, mut stacks, mut lost) = (0, 0, 0, 0);
    // SAFETY: live results, writable outputs.
    let code = unsafe { cali_dbi_results_sizes(results, &mut functions, &mut arcs, &mut stacks, &mut lost) };
    assert_eq!(code, CALI_DBI_OK);
    (functions, arcs)
}

/// The first `count` records of `results` as `read` (`cali_dbi_results_function` or
/// `cali_dbi_results_arc`) gives them.
fn records<T>(
    results: *mut cali_dbi_results,
    count: usize,
    read: unsafe extern "C" fn(*mut cali_dbi_results, usize, *mut T) -> c_int,
) -> Vec<T> {
    (0..count)
        .map(|i| {
            // SAFETY: live results; a record is plain data, zeroed then filled.
            unsafe {
                let mut record: T = std::mem::zeroed();
                assert_eq!(read(results, i, &mut record), CALI_DBI_OK);
                record
            }
        })
        .collect()
}

/// Whether `name` (a string of the results) is `wanted`.
fn named(name: *const c_char, wanted: &str) -> bool {
    // SAFETY: the results' strings live with them, which outlive the call.
    unsafe { CStr::from_ptr(name) }.to_str() == Ok(wanted)
}

/// The calls of `name` in `results`.
fn calls(results: *mut cali_dbi_results, name: &str) -> u64 {
    records(results, sizes(results).0, cali_dbi_results_function)
        .iter()
        .filter(|f| named(f.name, name))
        .map(|f| f.count)
        .sum()
}

/// The calls along the arcs into `callee` in `results`.
fn arc_calls(results: *mut cali_dbi_results, callee: &str) -> u64 {
    records(results, sizes(results).1, cali_dbi_results_arc)
        .iter()
        .filter(|a| named(a.callee, callee))
        .map(|a| a.count)
        .sum()
}

#[test]
fn bad_arguments_are_error_codes_with_a_message() {
    let _turn = take_turn();
    let c = |s: &str| CString::new(s).unwrap();
    // SAFETY: every pointer is NULL, live, or a NUL-terminated string.
    unsafe {
        assert!(cali_dbi_launch(0, null()).is_null());
        assert_eq!(last_error(), "no program to run");
        assert!(cali_dbi_attach(-4).is_null());
        assert_eq!(last_error(), "-4 is not a process id");
        assert_eq!(cali_dbi_include(null_mut(), c("x").as_ptr()), CALI_DBI_EINVAL);
        assert_eq!(last_error(), "the process is NULL");
        let p = launch(&["./no-such-program"]);
        assert_eq!(cali_dbi_include(p, c("a,b").as_ptr()), CALI_DBI_EINVAL);
        assert!(last_error().starts_with("bad pattern `a,b`"), "{}", last_error());
        assert_eq!(cali_dbi_exclude(p, null()), CALI_DBI_EINVAL);
        assert_eq!(last_error(), "the pattern is NULL");
        assert_eq!(cali_dbi_collect(p, c("fcount,spoons").as_ptr()), CALI_DBI_EINVAL);
        assert!(last_error().starts_with("unknown collector `spoons`"), "{}", last_error());
        assert_eq!(cali_dbi_window(p, -1.0, 0.0), CALI_DBI_EINVAL);
        assert_eq!(cali_dbi_on_events(p, None, null_mut(), 0), CALI_DBI_EINVAL);
        assert_eq!(cali_dbi_run(p, null_mut()), CALI_DBI_EINVAL);
        let mut results = null_mut();
        assert_eq!(cali_dbi_run(p, &mut results), CALI_DBI_ESTART);
        assert!(last_error().starts_with("cannot run ./no-such-program: No such file"), "{}", last_error());
        assert!(results.is_null());
        assert_eq!(cali_dbi_run(p, &mut results), CALI_DBI_ESTATE);
        assert_eq!(cali_dbi_collect(p, c("arcs").as_ptr()), CALI_DBI_ESTATE);
        assert_eq!(last_error(), "the process has already run");
        cali_dbi_process_free(p);
        assert_eq!(cali_dbi_results_write(null_mut(), c("x").as_ptr(), c("cali").as_ptr(), null()), CALI_DBI_EINVAL);
        assert_eq!(cali_dbi_live_results(null(), &mut results), CALI_DBI_EINVAL);
        cali_dbi_results_free(null_mut());
        cali_dbi_process_free(null_mut());
    }
}

/// What `read` finds in the results so far of `live`, the live engine of
/// a callback (the results freed after).
fn read_live_results<R>(live: *const cali_dbi_live, read: impl FnOnce(*mut cali_dbi_results) -> R) -> R {
    let mut results = null_mut();
    // SAFETY: the live engine of the callback that calls this; the results
    // freed once read.
    unsafe {
        assert_eq!(cali_dbi_live_results(live, &mut results), CALI_DBI_OK);
        let found = read(results);
        cali_dbi_results_free(results);
        found
    }
}

/// What the callback of the next test saw.
#[derive(Default)]
struct Seen {
    hot_at_sigchld: Option<u64>,
    /// A run tried from the callback: its code and message.
    nested_run: Option<(c_int, String)>,
    exits: Vec<(c_int, c_int)>,
}

unsafe extern "C" fn read_counts_at_sigchld(
    user: *mut c_void,
    event: *const cali_dbi_event,
    live: *const cali_dbi_live,
) -> c_int {
    // SAFETY: the Seen passed at registration; the event and the live
    // engine of this call.
    unsafe {
        let (seen, event) = (&mut *(user as *mut Seen), &*event);
        match event.kind {
            CALI_DBI_EVENT_SIGNAL if event.signal == libc::SIGCHLD => {
                seen.hot_at_sigchld = Some(read_live_results(live, |results| calls(results, "hot")));
                let mut results = null_mut();
                let other = launch(&["true"]);
                seen.nested_run = Some((cali_dbi_run(other, &mut results), last_error()));
                cali_dbi_process_free(other);
            }
            CALI_DBI_EVENT_EXIT => seen.exits.push((event.status, event.signal)),
            _ => {}
        }
    }
    CALI_DBI_CONTINUE
}

#[test]
fn a_callback_reads_the_counts_so_far() {
    let _turn = take_turn();
    let p = launch_counts_with_plugin();
    let mut seen = Seen::default();
    let mut results = null_mut();
    let include = CString::new("counts").unwrap();
    // SAFETY: a live process; `seen` outlives the run.
    unsafe {
        assert_eq!(cali_dbi_include(p, include.as_ptr()), CALI_DBI_OK);
        let user = &mut seen as *mut Seen as *mut c_void;
        assert_eq!(cali_dbi_on_events(p, Some(read_counts_at_sigchld), user, 0), CALI_DBI_OK);
        assert_eq!(cali_dbi_run(p, &mut results), CALI_DBI_OK, "{}", last_error());
    }
    assert_eq!(seen.hot_at_sigchld, Some(1_000_003));
    let nested = (CALI_DBI_ESTATE, "another run is in progress in this process (one at a time)".to_string());
    assert_eq!(seen.nested_run, Some(nested));
    assert_eq!(seen.exits, [(5, 0), (3, 0)], "the child's exit, then main's");
    assert_eq!(calls(results, "child_only"), 2);
    // SAFETY: from the run and the launch.
    unsafe {
        cali_dbi_results_free(results);
        cali_dbi_process_free(p);
    }
}

unsafe extern "C" fn read_arcs_at_sigchld(
    user: *mut c_void,
    event: *const cali_dbi_event,
    live: *const cali_dbi_live,
) -> c_int {
    // SAFETY: the u64 passed at registration; the event and the live
    // engine of this call.
    unsafe {
        if (*event).kind == CALI_DBI_EVENT_SIGNAL && (*event).signal == libc::SIGCHLD {
            *(user as *mut u64) = read_live_results(live, |results| arc_calls(results, "child_only"));
        }
    }
    CALI_DBI_CONTINUE
}

/// A forked child that has ended has had its call sites named (its
/// image is gone) and its entries freed: the results so far have its arcs,
/// counted once (its entries were its parent's too).
#[test]
fn a_callback_reads_the_arcs_of_a_child_that_has_ended() {
    let _turn = take_turn();
    let p = launch_counts_with_plugin();
    let mut at_sigchld = 0u64;
    let mut results = null_mut();
    let include = CString::new("counts").unwrap();
    // SAFETY: a live process; `at_sigchld` outlives the run.
    unsafe {
        assert_eq!(cali_dbi_collect(p, c"arcs".as_ptr()), CALI_DBI_OK);
        assert_eq!(cali_dbi_include(p, include.as_ptr()), CALI_DBI_OK);
        let user = &mut at_sigchld as *mut u64 as *mut c_void;
        assert_eq!(cali_dbi_on_events(p, Some(read_arcs_at_sigchld), user, 0), CALI_DBI_OK);
        assert_eq!(cali_dbi_run(p, &mut results), CALI_DBI_OK, "{}", last_error());
    }
    assert_eq!(at_sigchld, 2, "the child's calls, from its call site, once it has ended");
    assert_eq!(arc_calls(results, "child_only"), 2);
    // SAFETY: from the run and the launch.
    unsafe {
        cali_dbi_results_free(results);
        cali_dbi_process_free(p);
    }
}

unsafe extern "C" fn stop_at_plugin(_: *mut c_void, event: *const cali_dbi_event, _: *const cali_dbi_live) -> c_int {
    // SAFETY: the event of this call; its path is NULL or a string.
    let event = unsafe { &*event };
    let plugin = !event.path.is_null() && unsafe { CStr::from_ptr(event.path) }.to_bytes().ends_with(b"libplugin.so");
    if event.kind == CALI_DBI_EVENT_LIBRARY_LOAD && plugin { CALI_DBI_STOP } else { CALI_DBI_CONTINUE }
}

#[test]
fn a_callback_stops_the_measurement_and_the_program_runs_on() {
    let _turn = take_turn();
    let p = launch_counts_with_plugin();
    let mut results = null_mut();
    let (mut status, mut signal) = (0, 0);
    // SAFETY: a live process and results.
    unsafe {
        assert_eq!(cali_dbi_include(p, CString::new("counts").unwrap().as_ptr()), CALI_DBI_OK);
        assert_eq!(cali_dbi_on_events(p, Some(stop_at_plugin), null_mut(), 0), CALI_DBI_OK);
        assert_eq!(cali_dbi_run(p, &mut results), CALI_DBI_OK, "{}", last_error());
        assert_eq!(cali_dbi_results_exit(results, &mut status, &mut signal), CALI_DBI_OK);
    }
    assert_eq!((status, signal), (3, 0), "the launched program waited for");
    assert_eq!(calls(results, "hot"), 1_000_000, "main's calls before the stop");
    assert_eq!(calls(results, "child_only"), 0, "none after it");
    // SAFETY: from the run and the launch.
    unsafe {
        cali_dbi_results_free(results);
        cali_dbi_process_free(p);
    }
}

unsafe extern "C" fn count_ticks(user: *mut c_void, event: *const cali_dbi_event, _: *const cali_dbi_live) -> c_int {
    // SAFETY: the counter passed at registration; the event of this call.
    unsafe {
        if (*event).kind == CALI_DBI_EVENT_TIMER {
            *(user as *mut u32) += 1;
        }
    }
    CALI_DBI_CONTINUE
}

#[test]
fn a_timer_fires_while_the_program_runs() {
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/spin.c");
    common::gcc(dir.path(), &["-O2", "-o", "spin", source.to_str().unwrap()]);
    let p = launch(&[dir.path().join("spin").to_str().unwrap()]);
    let mut ticks = 0u32;
    let mut results = null_mut();
    let (mut status, mut signal) = (0, 0);
    // SAFETY: a live process; `ticks` outlives the run.
    unsafe {
        assert_eq!(cali_dbi_on_events(p, Some(count_ticks), &mut ticks as *mut u32 as *mut c_void, 20), CALI_DBI_OK);
        assert_eq!(cali_dbi_run(p, &mut results), CALI_DBI_OK, "{}", last_error());
        assert_eq!(cali_dbi_results_exit(results, &mut status, &mut signal), CALI_DBI_OK);
        cali_dbi_results_free(results);
        cali_dbi_process_free(p);
    }
    assert_eq!(status, 6, "spin's exit code");
    assert!(ticks >= 1, "half a second of CPU at 20 ms: {ticks} ticks");
}
