//! The modules' analyses kept on disk between runs: a second run reads
//! them, and counts exactly as a run that analyses every module afresh;
//! a damaged entry, or a cache directory that cannot be written, changes
//! nothing of the program or of its counts.

mod common;

use common::{command_in, counts_dir, read_result};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

const MODULES: &str = "counts,libshared.so,libplugin.so";

/// Runs `counts` under fcount with the cache in `cache_home` (as
/// `XDG_CACHE_HOME`) and its debug lines on: the counts per (module,
/// function), and what the tool wrote on standard error.
fn run(cache_home: &Path, extra: &[&str]) -> (HashMap<(String, String), u64>, String) {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("counts.cali");
    let mut options = vec!["-c", "fcount", "-i", MODULES, "-o", file.to_str().unwrap()];
    options.extend(extra);
    let mut command = command_in(counts_dir(), &options, "./counts", &[]);
    // Bound at start: two threads that call a function for the first time
    // together may both go through the dynamic linker's lazy binding (the
    // PLT's first entry counted 12 or 13 times), and runs are compared.
    command.env("LD_BIND_NOW", "1");
    let (output, stderr) = run_with_cache(command, cache_home);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "child exit 5\ndone\n", "{stderr}");
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let counts = read_result(&file).into_iter().filter_map(|(k, row)| Some((k, row.count?))).collect();
    (counts, stderr)
}

/// Runs `command` (cali-run's) with the cache in `cache_home` (as
/// `XDG_CACHE_HOME`) and its debug lines on: its output, and what the tool
/// wrote on standard error.
fn run_with_cache(mut command: Command, cache_home: &Path) -> (Output, String) {
    let output = command
        .env("XDG_CACHE_HOME", cache_home)
        .env_remove("CALI_RUN_CACHE")
        .env("CALI_RUN_DEBUG_CACHE", "1")
        .output()
        .expect("cali-run runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

/// Whether the cache's debug output says `what` (read, wrote) of the
/// analysis of module `name` (the path right after the verb).
fn said(stderr: &str, what: &str, name: &str) -> bool {
    let prefix = format!("cache: {what} ");
    stderr.lines().filter_map(|l| Some(&l[l.find(&prefix)? + prefix.len()..])).any(|rest| {
        rest.split(' ').next().is_some_and(|path| path.starts_with('/') && path.ends_with(&format!("/{name}")))
    })
}

/// Whether the cache's debug output says `what` (read, wrote) of the
/// functions of module `name` called before.
fn said_called(stderr: &str, what: &str, name: &str) -> bool {
    stderr.lines().any(|l| {
        l.contains(&format!("cache: {what} ")) && l.contains(" functions of ") && l.contains(&format!("/{name} called"))
    })
}

fn entries(cache_home: &Path) -> Vec<std::path::PathBuf> {
    let dir = cache_home.join("caliper/dbi");
    std::fs::read_dir(dir).expect("the cache directory").map(|e| e.unwrap().path()).collect()
}

#[test]
fn a_second_run_reads_the_cache_and_counts_as_a_run_without_it() {
    let home = tempfile::tempdir().unwrap();
    let (first, stderr) = run(home.path(), &[]);
    assert!(said(&stderr, "wrote", "counts") && !said(&stderr, "read", "counts"), "{stderr}");
    assert!(entries(home.path()).len() >= 3, "the program and its two libraries kept");
    let (second, stderr) = run(home.path(), &[]);
    for module in ["counts", "libshared.so", "libplugin.so"] {
        assert!(said(&stderr, "read", module), "{module} read from the cache: {stderr}");
    }
    assert!(!said(&stderr, "wrote", "counts"), "nothing new to write: {stderr}");
    let (fresh, stderr) = run(home.path(), &["--no-cache"]);
    assert!(!stderr.contains("cache: "), "--no-cache leaves the cache alone: {stderr}");
    assert_eq!(fresh[&("counts".into(), "hot".into())], 1_000_003);
    assert_eq!(fresh[&("libplugin.so".into(), "plugin_fn".into())], 13);
    assert_eq!(second, fresh, "counts with the cache read");
    assert_eq!(first, fresh, "counts with the cache written");
}

#[test]
fn a_damaged_cache_is_ignored_and_rewritten() {
    let home = tempfile::tempdir().unwrap();
    let (fresh, _) = run(home.path(), &[]);
    for (i, entry) in entries(home.path()).into_iter().enumerate() {
        let mut bytes = std::fs::read(&entry).unwrap();
        if i % 2 == 0 {
            bytes.truncate(bytes.len() / 2);
        } else {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x20;
        }
        std::fs::write(&entry, bytes).unwrap();
    }
    let (counts, stderr) = run(home.path(), &[]);
    assert!(stderr.contains("cache: ignored"), "{stderr}");
    assert!(!said(&stderr, "read", "counts"), "{stderr}");
    assert!(said(&stderr, "wrote", "counts"), "written again: {stderr}");
    assert_eq!(counts, fresh);
    let (again, stderr) = run(home.path(), &[]);
    assert!(said(&stderr, "read", "counts"), "{stderr}");
    assert_eq!(again, fresh);
}

#[test]
fn a_cache_directory_that_cannot_be_written_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let (fresh, _) = run(home.path(), &["--no-cache"]);
    // Under a plain file, no directory can be made (even for root).
    let blocked = home.path().join("file");
    std::fs::write(&blocked, b"").unwrap();
    let (counts, stderr) = run(&blocked, &[]);
    assert!(stderr.contains("cache: cannot write"), "{stderr}");
    assert!(stderr.lines().all(|l| l.contains("cache: ") || !l.contains("CALIPER")), "no other message: {stderr}");
    assert_eq!(counts, fresh);
}

/// Runs `called_before N` (built in `dir`) under fcount, its own module
/// instrumented, with the cache in `cache_home`: the calls of f0..f39 and
/// the traps.
fn run_called_before(dir: &Path, cache_home: &Path, calls: u32) -> (Vec<u64>, u64, String) {
    let file = dir.join(format!("called-{calls}.cali"));
    let options = ["-c", "fcount", "-i", "called_before", "-o", file.to_str().unwrap()];
    let (output, stderr) =
        run_with_cache(command_in(dir, &options, "./called_before", &[&calls.to_string()]), cache_home);
    let sum: u32 = (0..calls).map(|i| i * i + 1).sum();
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{sum}\n"), "{stderr}");
    let rows = read_result(&file);
    let counts =
        (0..40).map(|n| rows.get(&("called_before".into(), format!("f{n}"))).and_then(|r| r.count).unwrap_or(0));
    (counts.collect(), common::traps(&file), stderr)
}

#[test]
fn the_functions_earlier_runs_called_are_instrumented_first_and_the_others_at_their_first_call() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "called_before", &[]);
    let home = tempfile::tempdir().unwrap();
    let exact = |calls: u32| (0..40).map(|n| u64::from(n < calls)).collect::<Vec<u64>>();
    // Nothing known: every function instrumented at the first call into
    // the program.
    let (counts, first, _) = run_called_before(dir.path(), home.path(), 5);
    assert_eq!(counts, exact(5));
    // The five called before (with main and the start-up's) instrumented
    // at the first call, as many stops.
    let (counts, again, stderr) = run_called_before(dir.path(), home.path(), 5);
    assert!(said_called(&stderr, "read", "called_before"), "{stderr}");
    assert_eq!(counts, exact(5));
    assert_eq!(again, first, "the same stops");
    // 35 functions no run called: a stop at each first call of the first
    // 16 of them, then the rest of the module instrumented; every call
    // counted.
    let (counts, more, stderr) = run_called_before(dir.path(), home.path(), 40);
    assert!(said_called(&stderr, "wrote", "called_before"), "the new ones kept: {stderr}");
    assert_eq!(counts, exact(40));
    assert!(more > first && more <= first + 16, "{more} stops, {first} without new functions");
    // All 40 known now.
    let (counts, known, _) = run_called_before(dir.path(), home.path(), 40);
    assert_eq!(counts, exact(40));
    assert_eq!(known, first, "no stop beyond the first call's");
}
