//! The engine from outside: `make install-dbi` into a prefix, a C client
//! built against the installed header and library, and `cali-run
//! --script` running the example arc-count script with the installed
//! library, both giving the counts that `cali-run` gives.

mod common;

use caliper_testutil::install::{make_install, require_tools};
use common::{counts_dir, gcc, run_in};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The prefix `make install-dbi` installed into, once per test binary.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| make_install("dbi-install", "install-dbi"))
}

/// The lines of a flow-data file, without the lazy-binding stub (unnamed,
/// `0x...`: two racing threads of `counts` may both bind through it).
fn flow_lines(path: &Path) -> BTreeSet<String> {
    let unnamed = |line: &str| {
        let fields: Vec<&str> = line.split('\t').collect();
        let names: &[usize] = match fields[0] {
            "F" => &[4],
            "A" => &[4, 7],
            _ => &[],
        };
        names.iter().any(|&i| fields[i].starts_with("0x"))
    };
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter(|l| !unnamed(l)).map(String::from).collect()
}

#[test]
fn a_c_client_of_the_installed_library_counts_and_sees_events() {
    require_tools(&["gcc"]);
    let prefix = prefix();
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/dbi_client.c");
    let include = format!("-I{}", prefix.join("include").display());
    let lib = prefix.join("lib");
    let (libdir, rpath) = (format!("-L{}", lib.display()), format!("-Wl,-rpath,{}", lib.display()));
    gcc(
        out.path(),
        &["-Wall", "-Werror", &include, "-o", "client", source.to_str().unwrap(), &libdir, &rpath, "-lcaliper-dbi"],
    );
    let output = Command::new(out.path().join("client"))
        .arg("./counts")
        .current_dir(dir)
        .env("DBI_INCLUDE", "counts")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "the program's exit code: {stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "child exit 5\ndone\n");
    let lines: BTreeSet<&str> = stderr.lines().collect();
    for expected in ["hot 1000003", "fib 1973", "shared_hot 10000001", "child_only 2", "main 1"] {
        assert!(lines.contains(expected), "{expected} in {stderr}");
    }
    assert!(lines.contains("events: 2 exits, 1 plugin loads, 1 SIGCHLD"), "{stderr}");
}

#[test]
fn the_arc_count_script_gives_the_counts_of_cali_run() {
    require_tools(&["python3"]);
    let cali_run = prefix().join("bin/cali-run");
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let script_flow = out.path().join("script.dat");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/arc_count.py");
    let output = Command::new(&cali_run)
        .current_dir(dir)
        .env_remove("CALI_DBI_LIBRARY")
        .arg("--script")
        .arg(&example)
        .args(["--include", "counts", "--include", "libplugin.so", "--output"])
        .arg(&script_flow)
        .args(["--", "./counts"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "child exit 5\ndone\n");
    let reference = out.path().join("reference.dat");
    let flow = format!("--flow-data={}", reference.display());
    let output = run_in(dir, &["-c", "arcs", "-i", "counts,libplugin.so", &flow], "./counts", &[]);
    assert_eq!(output.status.code(), Some(3));
    let (ours, theirs) = (flow_lines(&script_flow), flow_lines(&reference));
    assert!(ours.iter().any(|l| l.starts_with("A\t13\t") && l.ends_with("\tplugin_fn")), "{ours:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn a_script_exits_with_its_code_and_a_missing_one_is_an_error() {
    require_tools(&["python3"]);
    let cali_run = prefix().join("bin/cali-run");
    let out = tempfile::tempdir().unwrap();
    let script = out.path().join("argv.py");
    std::fs::write(&script, "import sys\nimport caliper.dbi\nprint(sys.argv[1:])\nsys.exit(9)\n").unwrap();
    let output = run_to_end(Command::new(&cali_run).arg("--script").arg(&script).args(["--", "prog", "-x"]));
    assert_eq!(output.status.code(), Some(9));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "['prog', '-x']\n");
    let output = run_to_end(Command::new(&cali_run).arg("--script").arg(out.path().join("missing.py")));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("== CALIPER: cali-run: cannot read the script"), "{stderr}");
}

/// Runs a command to its end, whatever its exit code.
fn run_to_end(command: &mut Command) -> std::process::Output {
    command.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{command:?}: {e}"))
}
