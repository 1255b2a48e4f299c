//! Job control and the tool's own safety: a stop signal stops the
//! measured program as without cali-run and SIGCONT continues it; a
//! SIGTERM to cali-run, or a panic of its own, takes the probes out and
//! lets the program run on to its normal end.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::time::{Duration, Instant};

/// Starts cali-run with `options` on `program args` in `dir`, its output
/// piped, in a process group of its own as a shell starts a job; the tool
/// and the first line the program printed. (The test binary's group is
/// orphaned when the tests run in a session of their own, as under
/// `setsid`, and the kernel discards SIGTSTP in an orphaned group: the
/// program would not stop, with or without the tool.)
fn start(dir: &Path, options: &[&str], program: &str, args: &[&str]) -> (Child, BufReader<ChildStdout>, String) {
    let mut tool = common::command_in(dir, options, program, args)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(tool.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    (tool, out, line)
}

/// The state letter of process `pid` (`R`, `S`, `T` stopped, `t` stopped
/// under a tracer, ...).
fn state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')').next().and_then(|rest| rest.trim_start().chars().next()).unwrap_or('?')
}

/// The one child of process `pid`.
fn child_of(pid: u32) -> u32 {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    children.split_whitespace().next().expect("the program runs").parse().unwrap()
}

/// Waits until `pid` is stopped, then checks that it stays stopped for a
/// while (not a passing stop for the tool).
fn assert_stays_stopped(pid: u32) {
    let stopped = |p| matches!(state(p), 'T' | 't');
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stopped(pid) {
        assert!(Instant::now() < deadline, "{pid} never stopped (state {})", state(pid));
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..30 {
        std::thread::sleep(Duration::from_millis(10));
        assert!(stopped(pid), "{pid} stopped, then ran on (state {})", state(pid));
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: a signal to a process this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn a_stop_signal_stops_the_program_until_sigcont() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "stops", &[]);
    for how in ["STOP", "TSTP"] {
        let file = dir.path().join("stops.cali");
        let (mut tool, mut out, first) =
            start(dir.path(), &["-i", "stops", "-o", file.to_str().unwrap()], "./stops", &[how]);
        assert_eq!(first, "stopping\n");
        let program = child_of(tool.id());
        assert_stays_stopped(program);
        assert!(tool.try_wait().unwrap().is_none(), "cali-run waits with it");
        signal(program, libc::SIGCONT);
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "resumed\n", "SIG{how}");
        let status = tool.wait().unwrap();
        assert_eq!(status.code(), Some(9), "SIG{how}");
        let rows = common::read_result(&file);
        assert_eq!(rows[&("stops".into(), "after".into())].count, Some(1));
    }
}

#[test]
fn a_stop_signal_sent_to_the_tool_stops_the_program_and_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach", &[]);
    let (mut tool, mut out, first) = start(dir.path(), &["-i", "attach", "-o", "/dev/null"], "./attach", &["2"]);
    assert_eq!(first, "ready\n");
    let program = child_of(tool.id());
    signal(tool.id(), libc::SIGTSTP);
    assert_stays_stopped(program);
    // The tool stops too, as a shell's job would: stopped, not traced.
    assert_stays_stopped(tool.id());
    assert_eq!(state(tool.id()), 'T');
    // A shell's `fg` continues the job: both.
    signal(tool.id(), libc::SIGCONT);
    signal(program, libc::SIGCONT);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.trim().parse::<u64>().is_ok(), "{rest}");
    assert_eq!(tool.wait().unwrap().code(), Some(4));
}

#[test]
fn sigterm_to_the_tool_lets_the_program_finish_unharmed() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach", &[]);
    let file = dir.path().join("term.cali");
    let (tool, mut out, first) =
        start(dir.path(), &["-c", "fcount", "-i", "attach", "-o", file.to_str().unwrap()], "./attach", &["2"]);
    assert_eq!(first, "ready\n");
    std::thread::sleep(Duration::from_millis(500));
    signal(tool.id(), libc::SIGTERM);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let total: u64 = rest.trim().parse().unwrap();
    let output = tool.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(4), "the program's code: {}", String::from_utf8_lossy(&output.stderr));
    let tick = common::read_result(&file)[&("attach".into(), "tick".into())].count.unwrap();
    assert!(tick > 0 && tick < total, "{tick} of {total} calls counted until the SIGTERM");
}

#[test]
fn a_panic_of_the_tool_leaves_the_program_unharmed() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "callgraph", &[]);
    // At a hit, and at a first hit once its entry is patched (the thread
    // past an `int3` that a jump has replaced goes back to the entry).
    for variable in ["CALI_RUN_DEBUG_PANIC_AT_HIT", "CALI_RUN_DEBUG_PANIC_AFTER_PATCH_AT_HIT"] {
        for hit in ["1", "3", "5", "9"] {
            let output = common::command_in(dir.path(), &["-c", "fcount,arcs", "-i", "callgraph"], "./callgraph", &[])
                .env(variable, hit)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(7), "its computation right, {variable}={hit}: {stderr}");
            assert!(stderr.contains("== CALIPER: cali-run: internal error"), "{variable}={hit}: {stderr}");
        }
    }
    // With threads, a fork and a dlopen.
    let options = ["-c", "fcount,arcs", "-i", "counts,libshared.so,libplugin.so"];
    let output = common::command_in(common::counts_dir(), &options, "./counts", &[])
        .env("CALI_RUN_DEBUG_PANIC_AT_HIT", "12")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "child exit 5\ndone\n");
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
}
