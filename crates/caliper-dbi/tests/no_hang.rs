//! Programs that once made the tool hang or broke under it: children
//! started with `vfork`, `posix_spawn` and `system()`, functions that take
//! their own address, a C++ exception thrown below a call in a function's
//! first bytes. Each runs under fcount, arcs and breakpoint counting
//! with the output and exit code it has natively, within a bound that
//! turns a hang into a failure; an interrupt to the tool lets the program
//! finish on its own, and so does the watchdog where the tool has lost a
//! stopped thread. CPython's main linked against the shared libpython
//! runs a garbage-collecting script under fcount and arcs. A program with
//! more children at once than its limit on open descriptors allows a
//! process runs to its end.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Far more than any of these programs takes under the tool.
const BOUND: Duration = Duration::from_secs(60);

const PROGRAMS: &[&str] =
    &["spawn", "vfork_call", "vfork_nocall", "sysc", "selfaddr", "selfaddr_tail", "vfork_busy", "fork_crowd"];

/// The programs, built once with -O2.
fn programs_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for name in PROGRAMS {
            common::build(dir.path(), name, &[]);
        }
        let unwind = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/unwind.cpp");
        let status = Command::new("g++")
            .current_dir(dir.path())
            .args(["-O2", "-o", "unwind", unwind.to_str().unwrap()])
            .status()
            .expect("g++ runs (scripts/test-all.sh installs it)");
        assert!(status.success(), "g++ unwind.cpp failed");
        dir
    })
    .path()
}

/// Waits for `child` for at most `BOUND`; kills it (and fails) past that.
fn output_within(child: Child, what: &str) -> Output {
    let pid = child.id() as libc::pid_t;
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match outcome.recv_timeout(BOUND) {
        Ok(output) => output.expect("cali-run waited for"),
        Err(_) => {
            // SAFETY: kill has no memory preconditions; the child is ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} did not finish within {BOUND:?}");
        }
    }
}

fn native(name: &str) -> Output {
    let dir = programs_dir();
    let child = Command::new(dir.join(name)).current_dir(dir).stdin(Stdio::null()).output().expect("runs");
    assert!(child.status.success(), "{name} natively: {child:?}");
    child
}

fn under_tool(name: &str, options: &[&str]) -> Output {
    let dir = programs_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("out.cali");
    let mut all = options.to_vec();
    all.extend(["-o", file.to_str().unwrap()]);
    let child = common::command_in(dir, &all, &format!("./{name}"), &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cali-run starts");
    output_within(child, &format!("{name} under {options:?}"))
}

fn same_as_native(name: &str) {
    let expected = native(name);
    for options in [&["-c", "fcount"][..], &["-c", "arcs"], &["-c", "fcount", "--breakpoints-only"]] {
        let started = Instant::now();
        let got = under_tool(name, options);
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&expected.stdout),
            "{name} under {options:?} ({:?}): {stderr}",
            started.elapsed()
        );
        assert_eq!(got.status.code(), expected.status.code(), "{name} under {options:?}: {stderr}");
    }
}

#[test]
fn a_posix_spawn_child_runs_and_is_waited_for() {
    same_as_native("spawn");
}

#[test]
fn a_vfork_child_that_calls_before_its_exec_runs() {
    same_as_native("vfork_call");
}

#[test]
fn a_vfork_child_that_execs_at_once_runs() {
    same_as_native("vfork_nocall");
}

#[test]
fn a_system_call_of_the_shell_runs() {
    same_as_native("sysc");
}

#[test]
fn a_vfork_child_that_runs_a_while_runs() {
    same_as_native("vfork_busy");
}

#[test]
fn an_exception_thrown_below_an_entry_call_is_caught() {
    same_as_native("unwind");
}

#[test]
fn a_function_that_compares_its_own_address_works() {
    same_as_native("selfaddr");
}

#[test]
fn a_function_that_compares_its_own_address_before_a_tail_call_works() {
    same_as_native("selfaddr_tail");
}

/// SIGINT or SIGTERM sent to the tool while a vfork child runs (its
/// parent suspended), and SIGINT later while the program runs: the tool
/// lets go and the program finishes as natively, its exit code the tool's.
#[test]
fn an_interrupt_to_the_tool_lets_the_program_finish() {
    let expected = native("vfork_busy");
    let (early, late) = (Duration::from_millis(300), Duration::from_millis(1300));
    for (signal, delay) in [(libc::SIGINT, early), (libc::SIGTERM, early), (libc::SIGINT, late)] {
        let dir = programs_dir();
        let child = common::command_in(dir, &["-c", "fcount", "-o", "/dev/null"], "./vfork_busy", &[])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cali-run starts");
        std::thread::sleep(delay);
        // SAFETY: kill has no memory preconditions; the child is ours.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let got = output_within(child, "vfork_busy interrupted");
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.stdout, expected.stdout, "signal {signal} after {delay:?}: {stderr}");
        assert_eq!(got.status.code(), Some(0), "signal {signal} after {delay:?}: {stderr}");
    }
}

/// Classes, lists and dicts in cycles, collected: the collector's
/// traversal functions (CPython's `subtype_traverse` takes its own address
/// in its first instructions) run for every object.
const GC_SCRIPT: &str = r#"
import gc
class Node:
    def __init__(self, parent):
        self.parent = parent
        self.children = []
class Leaf(Node):
    pass
roots = []
for i in range(300):
    root = Node(None)
    for j in range(50):
        child = Leaf(root)
        root.children.append(child)
        child.children.append([root, {j: child}])
    roots.append(root)
del roots
print("collected", gc.collect() > 0)
print("sum", sum(len(str(i)) for i in range(20000)))
"#;

/// `python`, CPython's main linked against the shared libpython (as a
/// CPython built with --enable-shared is), in a directory of its own.
fn shared_python() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let flags = |what: &str| {
            let out = Command::new("python3-config")
                .args(["--embed", what])
                .output()
                .expect("python3-config runs (libpython3.11-dev; scripts/test-all.sh installs it)");
            String::from_utf8(out.stdout).unwrap()
        };
        let (cflags, ldflags) = (flags("--cflags"), flags("--ldflags"));
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/pyembed.c");
        let mut args: Vec<&str> = cflags.split_whitespace().collect();
        args.extend(["-o", "python", source.to_str().unwrap()]);
        args.extend(ldflags.split_whitespace());
        common::gcc(dir.path(), &args);
        std::fs::write(dir.path().join("gc_heavy.py"), GC_SCRIPT).unwrap();
        dir
    })
    .path()
}

#[test]
fn cpython_on_the_shared_libpython_runs_as_natively() {
    let dir = shared_python();
    let libraries = Command::new("ldd").arg(dir.join("python")).output().expect("ldd runs");
    assert!(String::from_utf8_lossy(&libraries.stdout).contains("libpython3"), "linked against the shared libpython");
    for args in [&["-c", "print('hello')"][..], &["gc_heavy.py"]] {
        let native = Command::new(dir.join("python")).args(args).current_dir(dir).output().expect("python runs");
        assert!(native.status.success(), "python {args:?} natively: {native:?}");
        for collector in ["fcount", "arcs"] {
            let child = common::command_in(dir, &["-c", collector, "-o", "/dev/null"], "./python", args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cali-run starts");
            let got = output_within(child, &format!("python {args:?} under {collector}"));
            let stderr = String::from_utf8_lossy(&got.stderr);
            assert_eq!(got.stdout, native.stdout, "python {args:?} under {collector}: {stderr}");
            assert_eq!(got.status.code(), Some(0), "python {args:?} under {collector}: {stderr}");
        }
    }
}

/// A thread the tool has lost (left stopped at a breakpoint, as a bug of
/// the tool could leave it): the watchdog says so in one line and lets
/// the program go, which finishes as natively.
#[test]
fn the_watchdog_frees_a_thread_the_tool_lost() {
    let expected = native("selfaddr");
    let child = common::command_in(programs_dir(), &["-c", "fcount", "-o", "/dev/null"], "./selfaddr", &[])
        .env("CALI_RUN_DEBUG_LOSE_STOP_AT_HIT", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cali-run starts");
    let got = output_within(child, "selfaddr with a lost stop");
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(stderr.contains("has waited for the tool"), "{stderr}");
    assert_eq!(got.stdout, expected.stdout, "{stderr}");
    assert_eq!(got.status.code(), Some(0), "{stderr}");
}

/// A program that forks 300 children at once, started with a soft limit of
/// 128 open descriptors (1,024 is usual): the tool, which holds one for each
/// process it follows, raises its own limit to the hard one and follows
/// every child (past its limit, each further child was left stopped for
/// ever); with a hard limit of 128 too, it reaches the children past it
/// through ptrace's words. The program keeps the limit it was given.
#[test]
fn more_children_at_once_than_the_descriptor_limit_allows_run_to_their_end() {
    let mut hard = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the local struct only.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut hard) }, 0);
    assert!(hard.rlim_max >= 1024, "a hard limit of {} descriptors is too low for this test", hard.rlim_max);
    for limit in
        [libc::rlimit { rlim_cur: 128, rlim_max: hard.rlim_max }, libc::rlimit { rlim_cur: 128, rlim_max: 128 }]
    {
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("out.cali");
        let options = ["-c", "fcount", "-o", file.to_str().unwrap()];
        let mut command = common::command_in(programs_dir(), &options, "./fork_crowd", &[]);
        // SAFETY: setrlimit between fork and exec, of a copied local.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
                Ok(())
            });
        }
        let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("cali-run starts");
        let output = output_within(child, &format!("fork_crowd with {} descriptors at most", limit.rlim_max));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(String::from_utf8_lossy(&output.stdout), "bad 0, descriptors 128\n", "{stderr}");
        assert!(!stderr.contains("== CALIPER"), "{stderr}");
        assert_eq!(common::read_result(&file)[&("fork_crowd".into(), "work".into())].count, Some(600));
    }
}
