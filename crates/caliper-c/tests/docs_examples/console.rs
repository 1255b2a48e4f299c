//! The ```` ```console ```` blocks of the README and the guide: each line
//! that starts with `$ ` is a command (a line ending in `\` continues it on
//! the next), the lines after it up to the next command are its output,
//! where a line `...` stands for any lines and `[..]` for any text within a
//! line. Each command runs with bash, standard error merged into standard
//! output, in a scratch directory of its page where the repository's files
//! appear as in its root (`docs/examples/...`, `crates/...`) and where the
//! page's earlier commands left their files; `$HOME` is that directory and
//! `$PREFIX` the installed library.

use super::{prefix, venv};
use caliper_testutil::install::{scratch, target_dir, without_caliper_settings};
use caliper_testutil::workspace_root;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A command of a console block and the output it shows.
#[derive(Debug, PartialEq)]
pub struct Example {
    /// The line of the page the command starts on (1-based).
    pub line: usize,
    /// The command, continuation lines joined as bash reads them.
    pub command: String,
    /// The output shown after it.
    pub expected: String,
}

/// The commands of the console blocks of `text`, in order.
pub fn examples(text: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let mut in_console = false;
    let mut continued = false;
    for (index, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if !in_console {
            in_console = fence && line.trim() == "```console";
            continue;
        }
        if fence {
            in_console = false;
        } else if continued {
            let last = examples.last_mut().expect("a continued command");
            last.command.push('\n');
            last.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            examples.push(Example { line: index + 1, command: command.to_string(), expected: String::new() });
            continued = command.ends_with('\\');
        } else if let Some(last) = examples.last_mut() {
            last.expected.push_str(line);
            last.expected.push('\n');
        } else {
            panic!("line {}: output before any `$ ` command in a console block", index + 1);
        }
    }
    examples
}

/// The pages whose examples run: the README and the guide's pages.
pub fn pages() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// A fresh scratch directory for `page` in which every top-level entry of
/// the repository but `target` and `.git` appears as a link.
fn page_dir(page: &Path) -> PathBuf {
    let root = workspace_root();
    let name = page.strip_prefix(&root).unwrap().to_string_lossy().replace(['/', '.'], "_");
    let dir = scratch("docs-examples", &name);
    for entry in std::fs::read_dir(&root).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name != "target" && name != ".git" {
            std::os::unix::fs::symlink(entry.path(), dir.join(&name)).unwrap();
        }
    }
    dir
}

/// Runs `command` with bash in `dir`; returns its exit status and its
/// merged standard output and error, without the spaces that end lines
/// (a report pads its last column; a page cannot keep them).
fn run(command: &str, dir: &Path) -> (bool, String) {
    let path = [prefix().join("bin"), target_dir().join("release"), venv().join("bin")]
        .into_iter()
        .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))
        .collect::<Vec<_>>();
    // `$HOME` moves; cargo and rustup keep theirs.
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let keep =
        |var: &str, default: &str| std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| home.join(default));
    let mut cmd = Command::new("bash");
    without_caliper_settings(&mut cmd)
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(dir)
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("CARGO_HOME", keep("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", keep("RUSTUP_HOME", ".rustup"))
        .env("HOME", dir)
        .env("PREFIX", prefix())
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_TERM_COLOR", "never")
        // Open MPI refuses root and more ranks than cores unless told;
        // the pages say so rather than show the flags each time.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .stdin(Stdio::null());
    let out = cmd.output().unwrap_or_else(|e| panic!("bash: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    (out.status.success(), text.lines().map(|l| l.trim_end().to_string() + "\n").collect())
}

/// Runs the examples of `page` in order; returns a description of each
/// that failed: the command's line, and the diff or why.
fn check_page(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let examples = examples(&text);
    if examples.is_empty() {
        return Vec::new();
    }
    let dir = page_dir(page);
    let shown = page.strip_prefix(workspace_root()).unwrap().display().to_string();
    let mut failures = Vec::new();
    for example in &examples {
        let (success, actual) = run(&example.command, &dir);
        // A command whose output the page leaves open must succeed; one
        // whose output it shows may fail, as a page on errors shows them.
        let open = example.expected.lines().all(|l| l == "...");
        let outcome = if open && !success {
            Err(format!("failed:\n{actual}"))
        } else {
            snapbox::Assert::new()
                .try_eq(None, actual.into(), example.expected.clone().into())
                .map_err(|e| e.to_string())
        };
        if let Err(why) = outcome {
            failures.push(format!("{shown}:{}: $ {}\n{why}", example.line, example.command));
        }
    }
    failures
}

#[test]
fn console_examples_print_what_the_pages_show() {
    let mut failures = Vec::new();
    let mut count = 0;
    for page in pages() {
        count += examples(&std::fs::read_to_string(&page).unwrap()).len();
        failures.extend(check_page(&page));
    }
    assert!(count > 0, "no console examples found");
    assert!(failures.is_empty(), "{} of {count} console examples differ:\n\n{}", failures.len(), failures.join("\n\n"));
    eprintln!("{count} console examples ran");
}

#[test]
fn commands_continue_and_outputs_follow_them() {
    let page = "text\n```console\n$ echo a \\\n  b\na b\n...\n$ true\n```\n```sh\n$ not run\n```\n";
    assert_eq!(
        examples(page),
        [
            Example { line: 3, command: "echo a \\\n  b".into(), expected: "a b\n...\n".into() },
            Example { line: 7, command: "true".into(), expected: String::new() },
        ]
    );
}
