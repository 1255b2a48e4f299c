//! Attaching to a running process: its calls are counted from the attach
//! on, and at SIGINT cali-run takes its probes out and lets it go; the
//! program runs on to its own end.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn attach_counts_then_detaches_and_the_program_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach", &[]);
    let mut program = Command::new(dir.path().join("attach")).arg("3").stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(program.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");

    let file = dir.path().join("attach.cali");
    let tool = common::cali_run()
        .args(["-c", "fcount", "-i", "attach", "-o", file.to_str().unwrap(), "--pid"])
        .arg(program.id().to_string())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(tool.id() as i32, libc::SIGINT) };
    let tool = tool.wait_with_output().unwrap();
    assert_eq!(tool.status.code(), Some(0), "{}", String::from_utf8_lossy(&tool.stderr));

    let status = program.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(4), "the program ends as it would have");
    let total: u64 = rest.trim().parse().unwrap();
    let rows = common::read_result(&file);
    let tick = rows[&("attach".into(), "tick".into())].count.unwrap();
    assert!(tick > 0 && tick < total, "{tick} of {total} calls counted while attached");
}

#[test]
fn a_duration_ends_the_measurement_and_the_program_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach", &[]);
    let file = dir.path().join("duration.cali");
    let output = common::run_in(
        dir.path(),
        &["-c", "fcount", "-i", "attach", "--duration", "1", "-o", file.to_str().unwrap()],
        "./attach",
        &["3"],
    );
    assert_eq!(output.status.code(), Some(4), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let total: u64 = stdout.lines().nth(1).unwrap().parse().unwrap();
    let tick = common::read_result(&file)[&("attach".into(), "tick".into())].count.unwrap();
    assert!(tick > 0 && tick < total, "{tick} of {total} calls counted in the first second");
}

#[test]
fn a_delayed_start_measures_only_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach", &[]);
    let file = dir.path().join("start.cali");
    let options = ["-c", "fcount", "-i", "attach", "--start", "1", "--duration", "1", "-o", file.to_str().unwrap()];
    let output = common::run_in(dir.path(), &options, "./attach", &["3"]);
    assert_eq!(output.status.code(), Some(4), "{}", String::from_utf8_lossy(&output.stderr));
    let total: u64 = String::from_utf8_lossy(&output.stdout).lines().nth(1).unwrap().parse().unwrap();
    let rows = common::read_result(&file);
    assert!(!rows.contains_key(&("attach".into(), "main".into())), "main began before the start");
    let tick = rows[&("attach".into(), "tick".into())].count.unwrap();
    assert!(tick > 0 && tick < total, "{tick} of {total} calls counted in the second second");

    // A start after the program's end measures nothing.
    let late = dir.path().join("late.cali");
    let output = common::run_in(
        dir.path(),
        &["-i", "attach", "--start", "30", "-o", late.to_str().unwrap()],
        "./attach",
        &["1"],
    );
    assert_eq!(output.status.code(), Some(4));
    assert!(common::read_result(&late).is_empty());
}
