//! What the tests that build programs against an installed libcaliper
//! share: the tools they need, commands that must succeed, the target
//! directory, `make install` into a prefix of their own, and scratch
//! directories beside it.

use crate::workspace_root;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether `tool` is on the PATH.
pub fn has(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Panics naming the tools of `tools` that are missing, and the script
/// that installs them.
pub fn require_tools(tools: &[&str]) {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !has(t)).collect();
    assert!(missing.is_empty(), "missing {}: run scripts/test-all.sh once, which installs them", missing.join(", "));
}

/// `cmd` without this process's `CALI_*` settings and `LD_LIBRARY_PATH`:
/// a test's program runs against the installed library with only the
/// settings the test gives it.
pub fn without_caliper_settings(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("LD_LIBRARY_PATH");
    for (key, _) in std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("CALI_")) {
        cmd.env_remove(key);
    }
    cmd
}

/// Runs a command that must succeed; panics with its output otherwise.
pub fn must(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Configures the CMake project in `source` into `build` against the
/// installed `prefix` (`find_package(caliper)` finds it there), with the
/// `-D` arguments `defines`, and builds it.
pub fn cmake_build(source: &Path, build: &Path, prefix: &Path, defines: &[&str]) {
    let mut configure = Command::new("cmake");
    configure.arg("-S").arg(source).arg("-B").arg(build);
    configure.arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())).args(defines);
    must(&mut configure);
    must(Command::new("cmake").arg("--build").arg(build));
}

/// Cargo's target directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"))
}

/// `make <target> PREFIX=target/<area>/prefix`, the prefix emptied first;
/// a file lock keeps concurrent test runs apart. Returns the prefix.
pub fn make_install(area: &str, target: &str) -> PathBuf {
    let dir = target_dir().join(area);
    std::fs::create_dir_all(&dir).unwrap();
    let lock = File::create(dir.join("install.lock")).unwrap();
    lock.lock().unwrap();
    let prefix = dir.join("prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    must(Command::new("make").arg("-C").arg(workspace_root()).arg(target).arg(format!("PREFIX={}", prefix.display())));
    prefix
}

/// A fresh scratch directory `target/<area>/<name>`.
pub fn scratch(area: &str, name: &str) -> PathBuf {
    let dir = target_dir().join(area).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
