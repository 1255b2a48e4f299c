//! The `nvtx` service without a GPU: NVTX's injection protocol loads
//! tests/nvtx/inject.c (as `NVTX_INJECTION64_PATH` names Nsight Systems'
//! library), which records every range push and pop, and a C program with
//! nested regions and a loop (tests/nvtx/regions.c) runs under
//! `CALI_SERVICES_ENABLE=nvtx` or `CALI_CONFIG=nvtx`.

use caliper_testutil::install::{self, make_install, must, require_tools};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The program and the injection library, built once.
fn built() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        require_tools(&["gcc", "make"]);
        let prefix = make_install("nvtx", "install");
        let dir = install::scratch("nvtx", "build");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nvtx");
        let lib = prefix.join("lib");
        must(
            Command::new("gcc")
                .args(["-O2", "-Wall", "-pthread", "-o"])
                .arg(dir.join("regions"))
                .arg(source.join("regions.c"))
                .arg(format!("-I{}", prefix.join("include").display()))
                .arg(format!("-L{}", lib.display()))
                .arg("-lcaliper")
                .arg(format!("-Wl,-rpath,{}", lib.display())),
        );
        must(
            Command::new("gcc")
                .args(["-O2", "-Wall", "-shared", "-fPIC", "-o"])
                .arg(dir.join("libinject.so"))
                .arg(source.join("inject.c")),
        );
        (dir.join("regions"), dir.join("libinject.so"))
    })
}

/// Runs the program with `args` and these settings only; returns its
/// output and the injection's record (empty if it was never loaded).
fn run(name: &str, args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let (program, _) = built();
    let record = install::scratch("nvtx", name).join("record.txt");
    let mut cmd = Command::new(program);
    install::without_caliper_settings(&mut cmd).args(args).env_remove("NVTX_INJECTION64_PATH");
    cmd.env("NVTX_RECORD_FILE", &record).envs(env.iter().copied());
    let out = must(&mut cmd);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    (out, std::fs::read_to_string(&record).unwrap_or_default())
}

fn injection() -> &'static str {
    built().1.to_str().unwrap()
}

/// The `== CALIPER:` lines of a run.
fn caliper_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("== CALIPER:")).map(str::to_string).collect()
}

/// The ranges of regions.c, up to the end of the loop.
const RANGES_TO_LOOP_END: &str = "\
create region
push region main ff00ff00
push region init ff0000ff
pop region init
push region solve ffffff00
create loop
push loop iterate ffff00ff
push region step ff00ffff
pop region step
push region step ff00ffff
pop region step
pop loop iterate
";

#[test]
fn nested_regions_and_loops_are_ranges_in_a_domain_per_attribute() {
    let (out, record) = run("nested", &[], &[("CALI_SERVICES_ENABLE", "nvtx"), ("NVTX_INJECTION64_PATH", injection())]);
    assert_eq!(record, format!("{RANGES_TO_LOOP_END}pop region solve\npop region main\n"));
    assert_eq!(caliper_lines(&out), Vec::<String>::new());
}

#[test]
fn each_thread_has_its_own_ranges() {
    let (_, record) =
        run("threads", &["threads"], &[("CALI_SERVICES_ENABLE", "nvtx"), ("NVTX_INJECTION64_PATH", injection())]);
    // The lines of each thread, colours left out (they go by the order in
    // which the threads first name their regions).
    let mut threads: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for line in record.lines() {
        let (thread, call) = match line.split_once(' ') {
            Some((n, call)) if n.parse::<u32>().is_ok() => (n, call),
            _ => ("0", line),
        };
        let call = if call.starts_with("push") { call.rsplit_once(' ').unwrap().0 } else { call };
        threads.entry(thread).or_default().push(call.to_string());
    }
    let main: Vec<String> = format!("{RANGES_TO_LOOP_END}pop region solve\npop region main\n")
        .lines()
        .map(|l| if l.starts_with("push") { l.rsplit_once(' ').unwrap().0 } else { l }.to_string())
        .collect();
    assert_eq!(threads.remove("0"), Some(main));
    let mut tasks = Vec::new();
    for (thread, calls) in threads {
        let task = calls.get(1).and_then(|c| c.strip_prefix("push region ")).unwrap_or_default().to_string();
        let expected =
            ["push region worker", &format!("push region {task}"), &format!("pop region {task}"), "pop region worker"];
        assert_eq!(calls, expected, "thread {thread}");
        tasks.push(task);
    }
    tasks.sort();
    assert_eq!(tasks, ["task1", "task2"]);
}

#[test]
fn the_nvtx_config_forwards_the_same_ranges() {
    for config in ["nvtx", "nvprof"] {
        let (out, record) = run(config, &[], &[("CALI_CONFIG", config), ("NVTX_INJECTION64_PATH", injection())]);
        assert_eq!(record, format!("{RANGES_TO_LOOP_END}pop region solve\npop region main\n"), "{config}");
        assert_eq!(caliper_lines(&out), Vec::<String>::new(), "{config}");
    }
}

#[test]
fn one_colour_without_cycling_and_filtered_regions_left_out() {
    let (_, record) = run(
        "filtered",
        &[],
        &[
            ("CALI_SERVICES_ENABLE", "nvtx"),
            ("CALI_NVTX_CYCLE_COLORS", "false"),
            ("CALI_NVTX_BINDING_EXCLUDE_REGIONS", "step"),
            ("NVTX_INJECTION64_PATH", injection()),
        ],
    );
    let expected = "\
create region
push region main ff00ff00
push region init ff00ff00
pop region init
push region solve ff00ff00
create loop
push loop iterate ff00ff00
pop loop iterate
pop region solve
pop region main
";
    assert_eq!(record, expected);
}

#[test]
fn an_unbalanced_end_leaves_the_ranges_as_caliper_has_them() {
    let (out, record) =
        run("unbalanced", &["unbalanced"], &[("CALI_SERVICES_ENABLE", "nvtx"), ("NVTX_INJECTION64_PATH", injection())]);
    // Caliper stops tracking the thread at the mismatch: solve and main
    // stay open, and nothing is popped that was not pushed.
    assert_eq!(record, RANGES_TO_LOOP_END);
    let lines = caliper_lines(&out);
    assert!(lines.iter().any(|l| l.contains("Stack value mismatch")), "{lines:?}");
}

#[test]
fn an_unusable_injection_is_said_once_and_the_program_runs() {
    let (out, record) = run(
        "unusable",
        &[],
        &[("CALI_SERVICES_ENABLE", "nvtx"), ("NVTX_INJECTION64_PATH", "/nonexistent/libinject.so")],
    );
    assert_eq!(record, "");
    let lines = caliper_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("== CALIPER: nvtx: cannot load NVTX_INJECTION64_PATH=/nonexistent/libinject.so"));
    // No tool named: nothing to say.
    let (out, record) = run("absent", &[], &[("CALI_SERVICES_ENABLE", "nvtx")]);
    assert_eq!((caliper_lines(&out), record), (Vec::new(), String::new()));
}

#[test]
fn the_injection_is_not_loaded_unless_nvtx_is_enabled() {
    let (_, record) =
        run("disabled", &[], &[("CALI_SERVICES_ENABLE", "event,trace"), ("NVTX_INJECTION64_PATH", injection())]);
    assert_eq!(record, "");
}
