//! Every program under `docs/examples` is built and run by a console
//! example of the README or the guide, whose output is checked there: a
//! command names its file, or a Rust one's cargo example
//! (`--example <name>`, as `crates/caliper-demo` declares it).

use super::console::{examples, pages};
use caliper_testutil::workspace_root;
use std::path::PathBuf;

/// The files under `docs/examples`, relative to the repository's root.
fn programs() -> Vec<String> {
    let root = workspace_root();
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = vec![root.join("docs/examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_example_program_is_run_by_a_console_example() {
    let commands: Vec<String> =
        pages().into_iter().flat_map(|p| examples(&std::fs::read_to_string(p).unwrap())).map(|e| e.command).collect();
    let programs = programs();
    assert!(!programs.is_empty());
    let runs = |program: &str| {
        let cargo_example =
            program.strip_suffix(".rs").and_then(|p| p.rsplit('/').next()).map(|name| format!("--example {name}"));
        commands.iter().any(|c| c.contains(program) || cargo_example.as_ref().is_some_and(|e| c.contains(e.as_str())))
    };
    let unrun: Vec<&String> = programs.iter().filter(|p| !runs(p)).collect();
    assert!(unrun.is_empty(), "no console example of README.md or docs/src builds or runs {unrun:?}");
}
