//! Helpers shared by the runtime's end-to-end tests. Each scenario runs in
//! a child process (the test binary re-run with `CALIPER_TEST_SCENARIO`
//! set), because the runtime is process-wide and reads its configuration
//! from the environment once.

#![allow(dead_code)] // each test binary uses a part of the helpers

use caliper_data::cali::read_records;
use caliper_data::{MetadataDb, Record, RecordKind};
use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// The fixtures' example program: main > init; main > mainloop (a loop of
/// 4 iterations) > foo; the global `iterations`.
pub fn nested() {
    caliper::set_global("iterations", 4);
    let _main = caliper::region!("main");
    {
        let _init = caliper::region!("init");
    }
    let lp = caliper::Loop::new("mainloop");
    for i in 0..4 {
        let _it = lp.iteration(i);
        let _foo = caliper::region!("foo");
    }
}

/// Forks a child that begins the region `child` and exits (inside it,
/// through `exit`, so that its flush at exit runs), and waits for it.
pub fn fork_a_child_that_annotates() {
    // SAFETY: the child only annotates and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let _child = caliper::region!("child");
        std::process::exit(0);
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
}

/// Runs `scenario` in a child process with `env` (and no `CALI_*`
/// settings from the test's own environment); it must succeed.
pub fn run(scenario: &str, env: &[(&str, &str)]) -> Output {
    let out = scenario_command(scenario, env).output().unwrap();
    assert!(out.status.success(), "scenario {scenario} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// This test binary re-run as `scenario` with `env` and no `CALI_*`
/// settings from the test's own environment.
fn scenario_command(scenario: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "scenario_child", "--nocapture", "--test-threads=1"]);
    cmd.env("CALIPER_TEST_SCENARIO", scenario);
    for key in ["CALI_SERVICES_ENABLE", "CALI_CONFIG", "CALI_CONFIG_PROFILE", "CALI_LOG_VERBOSITY"] {
        cmd.env_remove(key);
    }
    cmd.envs(env.iter().copied());
    cmd
}

/// [`run`] with owned values.
pub fn run_with(scenario: &str, env: &[(&'static str, String)]) -> Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run(scenario, &env)
}

/// The child's standard error.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The settings of a trace written to `file`.
pub fn trace_env(file: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("CALI_SERVICES_ENABLE", "event,trace,timer,recorder".into()),
        ("CALI_RECORDER_FILENAME", file.display().to_string()),
    ]
}

/// The records of a `.cali` file.
pub fn read(path: &Path) -> (MetadataDb, Vec<Record>) {
    let mut db = MetadataDb::new();
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records = read_records(&mut db, "out", &data).unwrap();
    (db, records)
}

/// A record as sorted `attr=value` pairs (nested values joined with `/`),
/// keeping the attributes `keep` accepts.
pub fn expand_record(db: &MetadataDb, record: &Record, keep: &dyn Fn(&str) -> bool) -> String {
    let mut pairs: Vec<String> = db
        .expand_paths(record)
        .into_iter()
        .filter_map(|(a, v)| {
            let name = db.attribute(a).unwrap().name().to_string();
            let vals: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            keep(&name).then(|| format!("{name}={}", vals.join("/")))
        })
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// The snapshot records of a `.cali` file, expanded, keeping the
/// attributes `keep` accepts.
pub fn expand_with(path: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
    let (db, records) = read(path);
    records.iter().filter(|r| r.kind == RecordKind::Ctx).map(|r| expand_record(&db, r, keep)).collect()
}

/// The records of a `.cali` file as `cali-query -e` lines without times
/// and version.
pub fn expand(path: &Path) -> Vec<String> {
    expand_with(path, &untimed)
}

/// Whether `expand` keeps attribute `name`: all but times and the version.
pub fn untimed(name: &str) -> bool {
    !name.starts_with("time.") && name != "cali.caliper.version"
}

/// The globals of a `.cali` file, expanded, keeping what `keep` accepts.
pub fn globals_with(path: &Path, keep: &dyn Fn(&str) -> bool) -> String {
    let (db, _) = read(path);
    expand_record(&db, &db.globals(), keep)
}

/// Runs `scenario` in `dir` with `env`, without asserting success.
pub fn run_in(dir: &Path, scenario: &str, env: &[(&str, &str)]) -> Output {
    scenario_command(scenario, env).current_dir(dir).output().unwrap()
}

/// A scenario that may hang: run in `dir` with `env`, killed if still
/// running after `limit`. Its output goes to files in `dir` (a pipe nobody
/// reads while waiting would fill up and stall it). Gives its exit status
/// (`None` if it was killed), standard output and standard error.
pub fn run_bounded(
    dir: &Path,
    scenario: &str,
    env: &[(&str, &str)],
    limit: Duration,
) -> (Option<ExitStatus>, String, String) {
    let (out_path, err_path) = (dir.join("scenario.stdout"), dir.join("scenario.stderr"));
    let mut child = scenario_command(scenario, env)
        .current_dir(dir)
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let finished = child.try_wait().unwrap();
    if finished.is_none() {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let read = |path| std::fs::read_to_string(path).unwrap();
    (finished, read(&out_path), read(&err_path))
}
