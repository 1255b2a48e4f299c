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

/// The crates' examples that console commands run
/// (`cargo run ... -p CRATE --example NAME`), and the repository's
/// sources they name (`cali-run --script crates/.../arc_count.py`).
fn crate_examples_run() -> Vec<PathBuf> {
    let root = workspace_root();
    let commands: Vec<String> =
        pages().into_iter().flat_map(|p| examples(&std::fs::read_to_string(p).unwrap())).map(|e| e.command).collect();
    let mut found = Vec::new();
    for command in &commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        let after = |flag: &str| words.iter().position(|w| *w == flag).and_then(|i| words.get(i + 1));
        if let (true, Some(krate), Some(name)) = (command.contains("cargo run"), after("-p"), after("--example")) {
            found.push(root.join("crates").join(krate).join("examples").join(format!("{name}.rs")));
        }
        let sources =
            words.iter().filter(|w| w.starts_with("crates/") && [".py", ".c", ".rs"].iter().any(|e| w.ends_with(e)));
        found.extend(sources.map(|w| root.join(w)));
    }
    // (An example declared with a path elsewhere, as caliper-demo's of
    // docs/examples, is among the programs already.)
    found.retain(|p| p.exists());
    found
}

/// The languages of code blocks that show part of a program.
const CODE: &[&str] = &["rust", "c", "cpp", "fortran", "python", "cmake"];

/// The code blocks of `text` (not those that `{{#include}}` a whole
/// file, which is run as it is): (line of the fence, language, lines).
fn code_blocks(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, Vec<String>)> = None;
    for (index, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) if CODE.contains(&lang.trim()) => {
                open = Some((index + 1, lang.trim().to_string(), Vec::new()))
            }
            (Some(_), Some(_)) => {
                blocks.extend(open.take().filter(|(_, _, lines)| !lines.iter().any(|l| l.contains("{{#include"))))
            }
            (Some((_, _, lines)), None) => lines.push(line.to_string()),
            _ => {}
        }
    }
    blocks
}

/// The lines of a snippet that must be in the program: not blank, not an
/// elision (`...`, `// ...`, `/* ... */`, `# ...`, `! ...`), trimmed.
fn shown_lines(lines: &[String]) -> Vec<&str> {
    let elision = |l: &str| matches!(l, "..." | "// ..." | "/* ... */" | "# ..." | "! ...");
    lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty() && !elision(l)).collect()
}

/// Whether `shown` are lines of `program`, in its order.
fn excerpt_of(shown: &[&str], program: &str) -> bool {
    let mut lines = program.lines().map(str::trim);
    shown.iter().all(|s| lines.any(|l| l == *s))
}

#[test]
fn every_code_snippet_is_part_of_an_example_program() {
    let root = workspace_root();
    // The programs the console examples run: docs/examples, the CMake
    // project under examples/ that the C page builds, and the crates'
    // examples run as `cargo run -p CRATE --example NAME`.
    let cmake = root.join("examples/CMakeLists.txt");
    let sources: Vec<String> = programs()
        .into_iter()
        .map(|p| root.join(p))
        .chain([cmake])
        .chain(crate_examples_run())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut orphans = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for (line, lang, lines) in code_blocks(&std::fs::read_to_string(&page).unwrap()) {
            checked += 1;
            let shown = shown_lines(&lines);
            if !sources.iter().any(|s| excerpt_of(&shown, s)) {
                orphans.push(format!("{}:{line} ({lang})", page.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(checked > 0);
    assert!(orphans.is_empty(), "code blocks that are no excerpt of a program the examples run: {orphans:?}");
}

#[test]
fn an_excerpt_keeps_the_programs_order_and_may_elide() {
    let program = "fn main() {\n    let a = 1;\n    let b = 2;\n}\n";
    assert!(excerpt_of(
        &shown_lines(&["fn main() {".into(), "    ...".into(), "let b = 2;".into(), "}".into()]),
        program
    ));
    assert!(!excerpt_of(&shown_lines(&["let b = 2;".into(), "let a = 1;".into()]), program));
    assert!(!excerpt_of(&shown_lines(&["let c = 3;".into()]), program));
}
