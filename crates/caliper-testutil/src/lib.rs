//! Test support shared by the workspace's crates: where the reference
//! fixtures are, and a Python virtualenv with the real client packages
//! (`caliper-reader`, later `llnl-hatchet`) for interoperability tests.
//!
//! The virtualenv is created on first use under `target/test-venv`, so a
//! plain `cargo test` on a fresh machine sets up what it needs; a file lock
//! keeps concurrent test binaries from building it twice.

pub mod synthetic;

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// An output that can be handed to a formatter as `Box<dyn Write>` and
/// read after the formatter is done with it (clones share the buffer).
#[derive(Clone, Default)]
pub struct SharedOutput(Arc<Mutex<Vec<u8>>>);

impl SharedOutput {
    /// What was written so far.
    pub fn contents(&self) -> Vec<u8> {
        self.0.lock().expect("not poisoned").clone()
    }
}

impl Write for SharedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root exists")
}

/// The directory of the reference's outputs (`fixtures/reference`).
pub fn reference_fixtures() -> PathBuf {
    workspace_root().join("fixtures/reference")
}

/// A reference fixture file by name.
pub fn fixture(name: &str) -> PathBuf {
    let path = reference_fixtures().join(name);
    assert!(path.exists(), "fixture {} is missing", path.display());
    path
}

/// An input that once broke the query side (`fixtures/repro`), by name.
pub fn repro_input(name: &str) -> PathBuf {
    let path = workspace_root().join("fixtures/repro").join(name);
    assert!(path.exists(), "repro input {} is missing", path.display());
    path
}

/// Every reference `.cali` fixture, sorted by name.
pub fn cali_fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(reference_fixtures())
        .expect("fixtures directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cali"))
        .collect();
    files.sort();
    files
}

/// The target directory the tests run from.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"))
}

/// A Python package a test needs: the pip requirement and the module name
/// that proves it is installed.
pub struct PyPackage {
    /// What to give pip, e.g. `caliper-reader==0.4.1`.
    pub requirement: &'static str,
    /// The module to import, e.g. `caliperreader`.
    pub module: &'static str,
}

/// The `caliper-reader` package, the reference's Python reader.
pub const CALIPER_READER: PyPackage = PyPackage { requirement: "caliper-reader==0.4.1", module: "caliperreader" };

/// The `llnl-hatchet` package, which reads our profiles into GraphFrames.
pub const HATCHET: PyPackage = PyPackage { requirement: "llnl-hatchet==2026.2.0", module: "hatchet" };

/// The path of a Python interpreter in the test virtualenv with `packages`
/// installed, creating the virtualenv and installing what is missing.
/// Panics with the failing command's output if that is impossible: an
/// interoperability test must not pass without its client.
pub fn python_with(packages: &[PyPackage]) -> PathBuf {
    let venv = target_dir().join("test-venv");
    fs::create_dir_all(target_dir()).expect("create target dir");
    let lock = File::create(target_dir().join("test-venv.lock")).expect("create venv lock file");
    lock.lock().expect("lock the venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
        run(Command::new(&system_python).args(["-m", "venv"]).arg(&venv));
    }
    for pkg in packages {
        let present = Command::new(&python).args(["-c", &format!("import {}", pkg.module)]).output();
        if !present.is_ok_and(|o| o.status.success()) {
            run(Command::new(&python).args(["-m", "pip", "install", "--quiet", pkg.requirement]));
        }
    }
    python
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Reads `.cali` files with the reference's Python reader and returns, per
/// file, `{"records": [...], "globals": {...}}` exactly as it reports them.
pub fn read_with_caliper_reader(paths: &[&Path]) -> serde_json::Value {
    let python = python_with(&[CALIPER_READER]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/read_cali.py");
    let out =
        Command::new(python).env("PYTHONUTF8", "1").arg(script).args(paths).output().expect("run the Python reader");
    assert!(out.status.success(), "caliper-reader failed on {paths:?}:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the Python reader prints JSON")
}

/// Which Hatchet reader to load a profile with.
#[derive(Copy, Clone, Debug)]
pub enum HatchetReader {
    /// `GraphFrame.from_caliper` on a json-split file.
    JsonSplit,
    /// `GraphFrame.from_caliperreader` on a `.cali` file.
    CaliperReader,
}

/// Loads each profile with Hatchet and returns per file its graph's node
/// paths, metric columns and dataframe rows (see `py/hatchet_summary.py`).
pub fn hatchet_summaries(files: &[(HatchetReader, &Path)]) -> serde_json::Value {
    let python = python_with(&[CALIPER_READER, HATCHET]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/hatchet_summary.py");
    let mut cmd = Command::new(python);
    cmd.env("PYTHONUTF8", "1").env("MPLBACKEND", "Agg").arg(script);
    for (reader, path) in files {
        cmd.arg(match reader {
            HatchetReader::JsonSplit => "caliper",
            HatchetReader::CaliperReader => "caliperreader",
        });
        cmd.arg(path);
    }
    let out = cmd.output().expect("run Hatchet");
    assert!(out.status.success(), "Hatchet failed on {files:?}:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the Hatchet script prints JSON")
}
