//! Attaching to a running process: its calls are counted from the attach
//! on, and at SIGINT cali-run takes its probes out and lets it go; the
//! program runs on to its own end, with its code as in its file and its
//! output that of a run without the tool.

mod common;

use common::elf::Elf;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

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

/// Code addresses of a running process: the load address of `program`
/// (its mapping at file offset 0).
fn load_address(pid: u32, program: &Path) -> u64 {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let program = program.canonicalize().unwrap();
    let line = maps
        .lines()
        .find(|l| l.ends_with(program.to_str().unwrap()) && l.split_whitespace().nth(2) == Some("00000000"))
        .unwrap_or_else(|| panic!("{} not mapped:\n{maps}", program.display()));
    u64::from_str_radix(line.split('-').next().unwrap(), 16).unwrap()
}

fn read_memory(pid: u32, address: u64, len: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut buffer = vec![0; len];
    std::fs::File::open(format!("/proc/{pid}/mem")).unwrap().read_exact_at(&mut buffer, address).unwrap();
    buffer
}

fn tracer(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("TracerPid:")).unwrap().trim().to_string()
}

/// Waits (a minute at most: a hang fails the test) until `ready` holds.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(60), "still not {what} after a minute");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The functions of `program` in process `pid` whose code differs from
/// the file's. (The alignment padding between functions is not compared:
/// a jump to a trampoline that the tool put there stays, as a thread may
/// be between it and the entry's jump.)
fn changed_functions(pid: u32, program: &Path, elf: &Elf) -> Vec<String> {
    let base = load_address(pid, program);
    elf.functions
        .iter()
        .filter(|(address, size, _)| {
            let file = elf.code(*address, *size).unwrap();
            read_memory(pid, base + address, file.len()) != file
        })
        .map(|f| f.2.clone())
        .collect()
}

/// The attach_work program, started with pipes, having said "ready".
struct Worker {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Worker {
    fn start(program: &Path) -> Worker {
        let mut child = Command::new(program).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        Worker { child, input, output }
    }

    fn ask(&mut self, rounds: u64) {
        writeln!(self.input, "{rounds}").unwrap();
    }

    fn answer(&mut self) -> String {
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        line
    }

    /// Fails the test if the program has ended (a detach killed it).
    fn assert_running(&mut self) {
        let ended = self.child.try_wait().unwrap();
        assert!(ended.is_none(), "the program ended after the detach: {ended:?}");
    }

    /// Ends its input; its exit code.
    fn finish(mut self) -> Option<i32> {
        drop(self.input);
        self.child.wait().unwrap().code()
    }
}

/// What attach_work prints for `rounds` without cali-run.
fn native_answers(program: &Path, rounds: &[u64]) -> Vec<String> {
    let mut worker = Worker::start(program);
    let answers = rounds
        .iter()
        .map(|&r| {
            worker.ask(r);
            worker.answer()
        })
        .collect();
    assert_eq!(worker.finish(), Some(4));
    answers
}

/// cali-run attached to `pid` (fcount and arcs of `attach_work`), once its
/// probes are in: the entries of mix and step are no longer the file's.
fn attach(pid: u32, program: &Path, elf: &Elf, result: &Path) -> Child {
    let tool = common::cali_run()
        .args(["-c", "fcount,arcs", "-i", "attach_work", "-o", result.to_str().unwrap(), "--pid"])
        .arg(pid.to_string())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = load_address(pid, program);
    for name in ["mix", "step"] {
        let entry = elf.address_of(name).unwrap();
        let original = elf.code(entry, 1).unwrap().to_vec();
        wait_until(&format!("probed at {name}"), || read_memory(pid, base + entry, 1) != original);
    }
    tool
}

/// SIGINT to the tool: it detaches and exits with 0.
fn interrupt(tool: Child) {
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(tool.id() as i32, libc::SIGINT) };
    let tool = tool.wait_with_output().unwrap();
    assert_eq!(tool.status.code(), Some(0), "{}", String::from_utf8_lossy(&tool.stderr));
}

#[test]
fn after_a_detach_the_code_is_the_files_and_the_program_computes_as_without_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach_work", &[]);
    let program = dir.path().join("attach_work");
    let elf = Elf::read(&program);
    // The first and last requests unmeasured, each between attached alone.
    let rounds = [1000, 2_000_000, 1_500_000, 1_000_000, 2_500_000, 500_000, 1000];
    let native = native_answers(&program, &rounds);

    let mut worker = Worker::start(&program);
    let pid = worker.child.id();
    worker.ask(rounds[0]);
    assert_eq!(worker.answer(), native[0]);
    for (cycle, (&r, expected)) in rounds.iter().zip(&native).enumerate().skip(1).take(rounds.len() - 2) {
        // Attached for exactly this request's calls of mix and step: the
        // program waits for its input while the tool attaches, and the
        // detach comes as it goes back to its input (often in the arc
        // trampoline of fgets@plt, which must not trap once the tool is
        // gone).
        let result = dir.path().join(format!("attached-{cycle}.cali"));
        let tool = attach(pid, &program, &elf, &result);
        worker.ask(r);
        assert_eq!(&worker.answer(), expected);
        assert!(!changed_functions(pid, &program, &elf).is_empty(), "probed while attached");
        interrupt(tool);

        worker.assert_running();
        assert_eq!(tracer(pid), "0", "no longer traced");
        assert_eq!(changed_functions(pid, &program, &elf), Vec::<String>::new(), "every function as in the file");
        let rows = common::read_result(&result);
        for name in ["mix", "step"] {
            let count = rows[&("attach_work".into(), name.into())].count;
            assert_eq!(count, Some(r), "{name}: the calls while attached, time {cycle}");
        }
        assert!(!rows.contains_key(&("attach_work".into(), "main".into())), "main began before the attach");
    }
    worker.ask(rounds[rounds.len() - 1]);
    assert_eq!(&worker.answer(), native.last().unwrap());
    assert_eq!(worker.finish(), Some(4));
}

#[test]
fn a_detach_while_the_program_works_leaves_it_computing_as_without_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "attach_work", &[]);
    let program = dir.path().join("attach_work");
    let elf = Elf::read(&program);
    // About a second of calls natively: the detach comes in the middle, with
    // the program in its functions or their trampolines.
    let rounds = [300_000_000, 1000];
    let native = native_answers(&program, &rounds);

    let mut worker = Worker::start(&program);
    let pid = worker.child.id();
    let result = dir.path().join("busy.cali");
    let tool = attach(pid, &program, &elf, &result);
    worker.ask(rounds[0]);
    std::thread::sleep(Duration::from_millis(300));
    interrupt(tool);
    assert_eq!(worker.answer(), native[0]);
    worker.assert_running();
    assert_eq!(tracer(pid), "0", "no longer traced");
    assert_eq!(changed_functions(pid, &program, &elf), Vec::<String>::new(), "every function as in the file");
    worker.ask(rounds[1]);
    assert_eq!(worker.answer(), native[1]);
    assert_eq!(worker.finish(), Some(4));
    let mix = common::read_result(&result)[&("attach_work".into(), "mix".into())].count.unwrap();
    assert!(mix > 0 && mix < rounds[0], "{mix} of {} calls counted while attached", rounds[0]);
}
