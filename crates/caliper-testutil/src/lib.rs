//! Test support shared by the workspace's crates: where the reference
//! fixtures are, and the Python virtualenv with the real client packages
//! (`caliper-reader`, `llnl-hatchet`) for interoperability tests.
//!
//! `scripts/test-all.sh` creates the virtualenv under `target/test-venv`
//! and installs `py/requirements.txt` into it: tests do not install
//! software (a test run would then depend on the network and race other
//! test binaries doing the same). After one run of the script, plain
//! `cargo test` finds it; without it, the tests fail and say so.

pub mod install;
pub mod layers;
pub mod report;
pub mod synthetic;

use std::fs;
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

/// A Python package a test needs (pinned in `py/requirements.txt`): its
/// name and the module that proves it is installed.
pub struct PyPackage {
    /// The distribution's name, e.g. `caliper-reader`.
    pub name: &'static str,
    /// The module to import, e.g. `caliperreader`.
    pub module: &'static str,
}

/// The `caliper-reader` package, the reference's Python reader.
pub const CALIPER_READER: PyPackage = PyPackage { name: "caliper-reader", module: "caliperreader" };

/// The `perfetto` package: Perfetto's published Python protos.
pub const PERFETTO: PyPackage =
    PyPackage { name: "perfetto", module: "perfetto.protos.perfetto.trace.perfetto_trace_pb2" };

/// The `llnl-hatchet` package, which reads our profiles into GraphFrames.
pub const HATCHET: PyPackage = PyPackage { name: "llnl-hatchet", module: "hatchet" };

/// The `llnl-thicket` package, which reads many profiles with their run
/// metadata into one table (as Spot's and Adiak's users do).
pub const THICKET: PyPackage = PyPackage { name: "llnl-thicket", module: "thicket" };

/// CUDA's headers and CUPTI as NVIDIA publishes them on PyPI (the
/// `nvidia-cuda-*-cu12` packages), for building against CUPTI without a
/// CUDA toolkit.
pub const CUDA_HEADERS: PyPackage = PyPackage { name: "nvidia-cuda-cupti-cu12", module: "nvidia.cuda_cupti" };

/// The directory of the `nvidia` packages in the test virtualenv
/// (`cuda_cupti/include`, `cuda_cupti/lib`, `cuda_runtime/include`,
/// `cuda_nvcc/include` below it).
pub fn cuda_packages() -> PathBuf {
    let python = python_with(&[CUDA_HEADERS]);
    let out = Command::new(python)
        .args(["-c", "import nvidia.cuda_cupti as c, os; print(os.path.dirname(list(c.__path__)[0]))"])
        .output()
        .expect("run the virtualenv's Python");
    assert!(out.status.success(), "cannot locate the nvidia packages: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The path of the test virtualenv's Python interpreter, which must have
/// `packages`. Panics, naming `scripts/test-all.sh`, if the virtualenv or
/// a package is missing: an interoperability test must not pass without
/// its client.
pub fn python_with(packages: &[PyPackage]) -> PathBuf {
    let python = target_dir().join("test-venv/bin/python");
    assert!(
        python.exists(),
        "no Python virtualenv at {}: run scripts/test-all.sh once, which creates it",
        python.display()
    );
    for pkg in packages {
        let present = Command::new(&python).args(["-c", &format!("import {}", pkg.module)]).output();
        assert!(
            present.is_ok_and(|o| o.status.success()),
            "{} is not installed in {}: run scripts/test-all.sh once, which installs it",
            pkg.name,
            python.display()
        );
    }
    python
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

/// Decodes a Perfetto trace with Perfetto's published Python protos and
/// returns its processes, threads, slices and counters (see
/// `py/perfetto_slices.py`).
pub fn perfetto_slices(trace: &Path) -> serde_json::Value {
    let python = python_with(&[PERFETTO]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/perfetto_slices.py");
    let out = Command::new(python).arg(script).arg(trace).output().expect("run the Perfetto decoder");
    assert!(
        out.status.success(),
        "the Perfetto protos failed on {}:\n{}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the Perfetto decoder prints JSON")
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
