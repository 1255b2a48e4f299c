//! Test support: building the C test programs and running cali-run.

#![allow(dead_code)]

pub mod elf;
pub mod pty;

use caliper_data::cali::read_records;
use caliper_data::{MetadataDb, Variant};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Fails naming scripts/test-all.sh (which installs it) if `program` is
/// not on the path.
pub fn require(program: impl AsRef<std::ffi::OsStr>) {
    let program = Path::new(program.as_ref());
    let found = Command::new("sh").arg("-c").arg(format!("command -v {}", program.display())).output().unwrap();
    assert!(found.status.success(), "{} is missing: run scripts/test-all.sh, which installs it", program.display());
}

/// A deterministic text of about `size` bytes: words, spaces and lines.
pub fn words(size: usize) -> Vec<u8> {
    let mut state = 0x2545f4914f6cdd1d_u64;
    let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"];
    let mut out = Vec::new();
    while out.len() < size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(words[(state % 10) as usize].as_bytes());
        out.push(if state.is_multiple_of(11) { b'\n' } else { b' ' });
    }
    out
}

/// The cali-run binary under test.
pub fn cali_run() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cali-run"))
}

pub fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(name)
}

/// Runs gcc with `args` in `dir`; fails the test naming the install script
/// when gcc is missing.
pub fn gcc(dir: &Path, args: &[&str]) {
    let status = Command::new("gcc")
        .current_dir(dir)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("gcc not runnable ({e}): run scripts/test-all.sh, which installs it"));
    assert!(status.success(), "gcc {args:?} failed");
}

/// Builds the test program `tests/c/NAME.c` with -O2 and `flags` into
/// `dir/NAME`.
pub fn build(dir: &Path, name: &str, flags: &[&str]) {
    let source = source(&format!("{name}.c"));
    let mut args = vec!["-O2"];
    args.extend(flags);
    args.extend(["-o", name, source.to_str().unwrap()]);
    gcc(dir, &args);
}

/// The directory holding `counts` (linked with `libshared.so`) and
/// `libplugin.so`, built once per test binary with -O2.
pub fn counts_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let shared = source("shared.c");
        let plugin = source("plugin.c");
        let counts = source("counts.c");
        gcc(dir.path(), &["-O2", "-shared", "-fPIC", "-o", "libshared.so", shared.to_str().unwrap()]);
        gcc(dir.path(), &["-O2", "-shared", "-fPIC", "-o", "libplugin.so", plugin.to_str().unwrap()]);
        gcc(
            dir.path(),
            &[
                "-O2",
                "-o",
                "counts",
                counts.to_str().unwrap(),
                "-L.",
                "-lshared",
                "-Wl,-rpath,$ORIGIN",
                "-ldl",
                "-lpthread",
            ],
        );
        dir
    })
    .path()
}

/// cali-run with `options` on `program args` in `dir`, stdin closed.
pub fn command_in(dir: &Path, options: &[&str], program: &str, args: &[&str]) -> Command {
    let mut command = cali_run();
    command.current_dir(dir).args(options).arg("--").arg(program).args(args).stdin(Stdio::null());
    command
}

/// The directory holding cdb's test programs, built once per test binary
/// with -O2: `debuggee` (without frame pointers), and `limited` with its
/// `liblimited.so`.
pub fn debuggee_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (debuggee, limited, library) = (source("debuggee.c"), source("limited.c"), source("limitlib.c"));
        gcc(dir.path(), &["-O2", "-fomit-frame-pointer", "-o", "debuggee", debuggee.to_str().unwrap()]);
        let library = library.to_str().unwrap();
        gcc(dir.path(), &["-O2", "-shared", "-fPIC", "-nostartfiles", "-o", "liblimited.so", library]);
        let limited = limited.to_str().unwrap();
        gcc(dir.path(), &["-O2", "-o", "limited", limited, "-Wl,-rpath,$ORIGIN"]);
        dir
    })
    .path()
}

/// Runs cali-run with `options` on `program args` in `dir`, stdin closed.
pub fn run_in(dir: &Path, options: &[&str], program: &str, args: &[&str]) -> Output {
    command_in(dir, options, program, args).output().expect("cali-run runs")
}

/// cali-run with `options` on `program` with `args` in `dir`, saying what
/// the arcs cost (`CALI_RUN_DEBUG_ARCS=1`): its output, which must be a
/// success, and its standard error.
pub fn run_debugging_arcs(dir: &Path, options: &[&str], program: &str, args: &[&str]) -> (Output, String) {
    let output =
        command_in(dir, options, program, args).env("CALI_RUN_DEBUG_ARCS", "1").output().expect("cali-run runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    (output, stderr)
}

/// The number before `what` in the tool's `CALI_RUN_DEBUG_ARCS` line.
pub fn arc_figure(stderr: &str, what: &str) -> usize {
    let line = stderr.lines().find(|l| l.contains("cali-run: arcs:")).expect("the arcs line");
    let before = line.split(what).next().expect("the figure in the line");
    before
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no figure before {what:?}: {line}"))
}

/// The records of a `.cali` file, each as (attribute name, value) pairs,
/// context paths root first.
pub fn expanded_records(path: &Path) -> Vec<Vec<(String, Variant)>> {
    let data = std::fs::read(path).expect("result written");
    let mut db = MetadataDb::new();
    let records = read_records(&mut db, "result", &data).expect("valid .cali");
    records
        .iter()
        .map(|r| db.expand(r).into_iter().map(|(a, v)| (db.attribute(a).unwrap().name().to_string(), v)).collect())
        .collect()
}

/// One function's record of a `.cali` result.
#[derive(Debug, Default, Clone)]
pub struct Row {
    pub count: Option<u64>,
    pub covered: Option<u64>,
    pub address: u64,
    pub instrumentation: String,
}

/// The function records of a `.cali` result by (module file name,
/// function); arc records (those with a `dbi.caller`) and call-graph
/// records (`dbi.callgraph`) are left out.
pub fn read_result(path: &Path) -> HashMap<(String, String), Row> {
    let data = std::fs::read(path).expect("result written");
    let mut db = MetadataDb::new();
    let records = read_records(&mut db, "result", &data).expect("valid .cali");
    let globals = db.globals();
    let collect = globals.refs().find_map(|n| db.node(n)).map(|n| n.value.to_string());
    assert!(collect.is_some_and(|c| !c.is_empty()), "the run's collectors in the globals");
    let mut rows = HashMap::new();
    for r in records.iter().filter(|r| r.kind == caliper_data::RecordKind::Ctx) {
        let expanded = db.expand(r);
        if expanded.iter().any(|(a, _)| matches!(db.attribute(*a).unwrap().name(), "dbi.caller" | "dbi.callgraph")) {
            continue;
        }
        let (mut module, mut function, mut row) = (String::new(), String::new(), Row::default());
        for (attr, value) in expanded {
            let name = db.attribute(attr).unwrap().name().to_string();
            match (name.as_str(), value) {
                ("dbi.module", Variant::Str(s)) => module = s.rsplit('/').next().unwrap().to_string(),
                ("dbi.function", Variant::Str(s)) => function = s.to_string(),
                ("dbi.instrumentation", Variant::Str(s)) => row.instrumentation = s.to_string(),
                ("dbi.count", Variant::Uint(n)) => row.count = Some(n),
                ("dbi.covered", Variant::Uint(n)) => row.covered = Some(n),
                ("dbi.address", Variant::Addr(a)) => row.address = a,
                (other, v) => panic!("unexpected attribute {other} = {v:?}"),
            }
        }
        rows.insert((module, function), row);
    }
    rows
}

/// The program's stops at the tool's breakpoints, from the globals
/// (`dbi.traps`) of a `.cali` result.
pub fn traps(path: &Path) -> u64 {
    global_count(path, "dbi.traps")
}

/// The count `name` in the globals of a `.cali` result.
pub fn global_count(path: &Path, name: &str) -> u64 {
    let data = std::fs::read(path).expect("result written");
    let mut db = MetadataDb::new();
    read_records(&mut db, "result", &data).expect("valid .cali");
    let globals = db.globals();
    let global = globals.refs().filter_map(|n| db.node(n)).find(|n| db.attribute(n.attribute).unwrap().name() == name);
    match global.map(|n| n.value.clone()) {
        Some(Variant::Uint(n)) => n,
        other => panic!("{name} in the globals: {other:?}"),
    }
}

/// Runs a CalQL query over a `.cali` file, as `cali-query -q` does.
pub fn query(file: &std::path::Path, calql: &str) -> String {
    use caliper_data::MetadataDb;
    use caliper_data::cali::CaliReader;
    use caliper_query::spec::Formatter;
    use caliper_query::{QueryProcessor, parse_query};
    let spec = parse_query(calql).unwrap();
    let out = caliper_testutil::SharedOutput::default();
    let mut processor = QueryProcessor::new(&spec, Formatter::Table, Box::new(out.clone())).unwrap();
    let mut db = MetadataDb::new();
    let data = std::fs::read(file).unwrap();
    CaliReader::new(&mut db, "result").read(data.as_slice(), |db, r| processor.process(db, r).unwrap()).unwrap();
    processor.finish(&mut db).unwrap();
    String::from_utf8(out.contents()).unwrap()
}

/// The Lua 5.4 sources of the `lua-src` crate, found through `cargo metadata`
/// (for this platform only: offline, the packages of others, never built
/// here, are not in the registry's cache).
pub fn lua_sources() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())).arg("-vV").output().unwrap();
    let host = String::from_utf8(rustc.stdout).unwrap();
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host").to_owned();
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let manifest = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "lua-src")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("lua-src among the packages");
    let crate_dir = Path::new(manifest).parent().unwrap();
    let mut versions: Vec<PathBuf> = std::fs::read_dir(crate_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("lua-5.4"))
        .collect();
    versions.sort();
    versions.pop().expect("Lua 5.4 in lua-src")
}
