//! Exact coverage and call counts of a C program whose calls are known:
//! a hot function, call sites, recursion, a tail call, a function pointer,
//! a jump table, a linked and a dlopened library, threads (two calling one
//! function at once) and a fork.

mod common;

use common::{counts_dir, read_result, run_in};
use std::os::unix::process::ExitStatusExt;

const MODULES: &str = "counts,libshared.so,libplugin.so";

/// (module, function, calls) as the program makes them.
const EXPECTED: &[(&str, &str, u64)] = &[
    ("counts", "main", 1),
    ("counts", "hot", 1_000_003),
    ("counts", "three", 3),
    ("counts", "fib", 1973),
    ("counts", "tail", 5),
    ("counts", "leaf", 5),
    ("counts", "pointed", 7),
    ("counts", "dispatch", 16),
    ("counts", "thread_fn", 1),
    ("counts", "shared_hot", 10_000_001),
    ("counts", "racer", 2),
    ("counts", "child_only", 2),
    ("libshared.so", "lib_fn", 11),
    ("libplugin.so", "plugin_fn", 13),
];

fn check_program_output(output: &std::process::Output) {
    assert_eq!(String::from_utf8_lossy(&output.stdout), "child exit 5\ndone\n");
    assert_eq!(output.status.code(), Some(3), "the program's exit code: {}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn fcount_counts_every_call_exactly() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("counts.cali");
    let output = run_in(dir, &["-c", "fcount", "-i", MODULES, "-o", file.to_str().unwrap()], "./counts", &[]);
    check_program_output(&output);
    let rows = read_result(&file);
    for &(module, function, calls) in EXPECTED {
        let row = rows.get(&(module.into(), function.into())).unwrap_or_else(|| panic!("{module} {function} missing"));
        assert_eq!(row.count, Some(calls), "{module} {function}: {row:?}");
    }
    assert!(!rows.contains_key(&("counts".into(), "never".into())), "never called, not reported");
    let hot = &rows[&("counts".into(), "hot".into())];
    assert_eq!(hot.instrumentation, "trampoline");
    // About a trap per function's first call, none per call after it.
    let traps = common::traps(&file);
    assert!(traps > 10 && traps < 1000, "{traps} traps for 11 million calls");
}

/// A library closed and opened again, three times: each opening is
/// instrumented afresh (the probes of the closed one gone with it) and
/// counted, in the function and in its arc.
#[test]
fn a_library_closed_and_opened_again_is_counted_at_each_opening() {
    let dir = tempfile::tempdir().unwrap();
    let (plugin, reload) = (common::source("plugin.c"), common::source("reload.c"));
    common::gcc(dir.path(), &["-O2", "-shared", "-fPIC", "-o", "libplugin.so", plugin.to_str().unwrap()]);
    common::gcc(dir.path(), &["-O2", "-o", "reload", reload.to_str().unwrap(), "-ldl"]);
    for collect in ["fcount", "fcount,arcs"] {
        let file = dir.path().join("reload.cali");
        let options = ["-c", collect, "-i", "reload,libplugin.so", "-o", file.to_str().unwrap()];
        let output = run_in(dir.path(), &options, "./reload", &[]);
        assert_eq!(String::from_utf8_lossy(&output.stdout), "507\n", "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(output.status.code(), Some(0));
        let rows = read_result(&file);
        assert_eq!(rows[&("libplugin.so".into(), "plugin_fn".into())].count, Some(39), "{collect}");
        if collect.contains("arcs") {
            assert_eq!(read_arcs(&file)[&("main".into(), "plugin_fn".into())], [39]);
        }
    }
}

/// The arcs of a `.cali` result: (caller, callee) -> counts per call site.
fn read_arcs(path: &std::path::Path) -> std::collections::HashMap<(String, String), Vec<u64>> {
    use caliper_data::{MetadataDb, Variant};
    let data = std::fs::read(path).unwrap();
    let mut db = MetadataDb::new();
    let records = caliper_data::cali::read_records(&mut db, "arcs", &data).unwrap();
    let mut arcs: std::collections::HashMap<(String, String), Vec<u64>> = Default::default();
    for r in &records {
        let fields: std::collections::HashMap<String, Variant> =
            db.expand(r).into_iter().map(|(a, v)| (db.attribute(a).unwrap().name().to_string(), v)).collect();
        let (Some(Variant::Str(caller)), Some(Variant::Str(callee)), Some(Variant::Uint(n))) =
            (fields.get("dbi.caller"), fields.get("dbi.function"), fields.get("dbi.count"))
        else {
            continue;
        };
        arcs.entry((caller.to_string(), callee.to_string())).or_default().push(*n);
    }
    for counts in arcs.values_mut() {
        counts.sort_unstable();
    }
    arcs
}

#[test]
fn arcs_count_each_call_site() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("arcs.cali");
    let output = run_in(dir, &["-c", "fcount,arcs", "-i", MODULES, "-o", file.to_str().unwrap()], "./counts", &[]);
    check_program_output(&output);
    let arcs = read_arcs(&file);
    let sites = |caller: &str, callee: &str| arcs.get(&(caller.into(), callee.into())).cloned().unwrap_or_default();
    assert_eq!(sites("main", "hot"), [1_000_000]);
    assert_eq!(sites("thread_fn", "hot").iter().sum::<u64>(), 3);
    assert_eq!(sites("main", "three"), [1, 2], "two call sites");
    assert_eq!(sites("main", "fib"), [1]);
    assert_eq!(sites("fib", "fib").iter().sum::<u64>(), 1972, "recursion");
    // A tail call is counted at the call site of the function that made it.
    assert_eq!(sites("main", "tail"), [5]);
    assert_eq!(sites("main", "leaf"), [5]);
    assert_eq!(sites("main", "pointed"), [7]);
    assert_eq!(sites("main", "dispatch"), [16]);
    assert_eq!(sites("main", "lib_fn"), [11]);
    assert_eq!(sites("main", "plugin_fn"), [13]);
    assert_eq!(sites("main", "child_only").iter().sum::<u64>(), 2, "in the forked child");
    // Two threads at once from one site, whose own trampoline counts them
    // (in the running processor's copy) once it is hot.
    assert_eq!(sites("racer", "shared_hot"), [10_000_000]);
    // The function counts are still exact.
    let rows = read_result(&file);
    assert_eq!(rows[&("counts".into(), "hot".into())].count, Some(1_000_003));
    assert_eq!(rows[&("counts".into(), "fib".into())].count, Some(1973));
    assert_eq!(rows[&("counts".into(), "shared_hot".into())].count, Some(10_000_001));
}

#[test]
fn each_of_a_thousand_call_sites_is_an_arc_without_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "many_sites", &[]);
    let run = |collector: &str, function: &str| {
        let file = dir.path().join(format!("{collector}-{function}.cali"));
        let options = ["-c", collector, "-i", function, "-o", file.to_str().unwrap()];
        let output = run_in(dir.path(), &options, "./many_sites", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        (common::traps(&file), read_arcs(&file))
    };
    // Each of the 1000 direct sites its own arc, exact, and no stop beyond
    // fcount's.
    let (fcount, _) = run("fcount", "target");
    let (traps, arcs) = run("arcs", "target");
    assert_eq!(arcs[&("direct".into(), "target".into())], (1..=1000).collect::<Vec<u64>>());
    assert_eq!(arcs.len(), 1, "only direct calls target: {:?}", arcs.keys().collect::<Vec<_>>());
    assert_eq!(traps, fcount, "traps under arcs and under fcount");
    // The same for the 40 sites that call through a pointer.
    let (fcount, _) = run("fcount", "pointed");
    let (traps, arcs) = run("arcs", "pointed");
    assert_eq!(arcs[&("indirect".into(), "pointed".into())], (1..=40).collect::<Vec<u64>>());
    assert_eq!(arcs.len(), 1, "only indirect calls pointed: {:?}", arcs.keys().collect::<Vec<_>>());
    assert_eq!(traps, fcount, "traps under arcs and under fcount");
}

#[test]
fn calls_through_an_ifunc_plt_entry_are_arcs_without_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path(), "ifunc_sites", &[]);
    let run = |collector: &str| {
        let file = dir.path().join(format!("{collector}.cali"));
        let output =
            run_in(dir.path(), &["-c", collector, "-i", "chosen", "-o", file.to_str().unwrap()], "./ifunc_sites", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        (common::traps(&file), read_arcs(&file))
    };
    let (fcount, _) = run("fcount");
    let (traps, arcs) = run("arcs");
    assert_eq!(arcs[&("main".into(), "chosen".into())], (1..=6).collect::<Vec<u64>>());
    // Calls through the PLT slot the dynamic linker filled are counted at
    // their sites like any other, without a stop of their own.
    assert_eq!(traps, fcount, "traps under arcs and under fcount");
}

#[test]
fn every_call_site_in_a_program_and_its_library_is_an_arc() {
    let dir = tempfile::tempdir().unwrap();
    let source = common::source("known_sites.c");
    let source = source.to_str().unwrap();
    common::gcc(dir.path(), &["-O2", "-shared", "-fPIC", "-DLIBRARY", "-o", "libknown.so", source]);
    common::gcc(dir.path(), &["-O2", "-o", "known_sites", source, "-L.", "-lknown", "-Wl,-rpath,$ORIGIN"]);
    let traps = |collector: &str| {
        let file = dir.path().join(format!("{collector}.cali"));
        let functions = "main,target,lib_calls,shared_target,shared_target@plt";
        let options = ["-c", collector, "-i", functions, "-o", file.to_str().unwrap()];
        let output = run_in(dir.path(), &options, "./known_sites", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        (common::traps(&file), file)
    };
    let (fcount, _) = traps("fcount");
    let (arcs, file) = traps("arcs");
    // Each site its own arc with its calls, the sites that never ran none;
    // the library's last call is a tail call: it returns to main.
    let arcs_of = read_arcs(&file);
    let sites = |caller: &str, callee: &str| arcs_of[&(caller.into(), callee.into())].clone();
    assert_eq!(sites("main", "target"), (1..=12).collect::<Vec<u64>>());
    let through_plt = [1, 1, 2, 3, 4, 5, 6, 7, 8];
    assert_eq!(sites("main", "shared_target"), through_plt);
    assert_eq!(sites("lib_calls", "shared_target"), [1, 1, 1, 1]);
    assert_eq!(sites("main", "shared_target@plt"), through_plt);
    // Only the first call into each module stops the program (every
    // function of the module gets its trampoline then), under either
    // collector.
    assert_eq!(arcs, fcount, "traps under arcs and under fcount");
}

/// A library whose code the dynamic linker relocates (`DT_TEXTREL`): its
/// code is read from the process, not from its file (which lacks the
/// relocated addresses), so the program runs as without the tool, and its
/// calls are counted exactly.
#[test]
fn a_library_relocated_in_its_code_runs_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let source = common::source("textrel.c");
    let source = source.to_str().unwrap();
    let library = ["-O2", "-fno-pic", "-mcmodel=large", "-shared", "-Wl,-z,notext", "-o", "libtextrel.so", source];
    common::gcc(dir.path(), &library);
    common::gcc(dir.path(), &["-O2", "-DMAIN", "-o", "textrel", source, "-L.", "-ltextrel", "-Wl,-rpath,$ORIGIN"]);
    let file = dir.path().join("textrel.cali");
    let options = ["-c", "fcount", "-i", "libtextrel.so", "-o", file.to_str().unwrap()];
    let output = run_in(dir.path(), &options, "./textrel", &["1000"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "1000\n", "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0));
    let rows = read_result(&file);
    assert_eq!(rows[&("libtextrel.so".into(), "bump".into())].count, Some(1000));
    assert_eq!(rows[&("libtextrel.so".into(), "where".into())].count, Some(1000));
}

#[test]
fn coverage_marks_what_ran() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("coverage.cali");
    let output = run_in(dir, &["-c", "coverage", "-i", MODULES, "-o", file.to_str().unwrap()], "./counts", &[]);
    check_program_output(&output);
    let rows = read_result(&file);
    for &(module, function, _) in EXPECTED {
        assert_eq!(rows[&(module.into(), function.into())].covered, Some(1), "{function}");
    }
    let never = &rows[&("counts".into(), "never".into())];
    assert_eq!(never.covered, Some(0));
    assert_eq!(never.count, None, "no counts without fcount");
}

#[test]
fn breakpoint_counting_gives_the_same_counts() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("bp.cali");
    // hot and shared_hot are left out: a million breakpoint stops take a minute.
    let options = [
        "--breakpoints-only",
        "-c",
        "fcount,coverage,arcs",
        "-i",
        MODULES,
        "-x",
        "hot,shared_hot",
        "-o",
        file.to_str().unwrap(),
    ];
    let output = run_in(dir, &options, "./counts", &[]);
    check_program_output(&output);
    let rows = read_result(&file);
    for &(module, function, calls) in EXPECTED.iter().filter(|e| !e.1.ends_with("hot")) {
        let row = &rows[&(module.into(), function.into())];
        assert_eq!(row.count, Some(calls), "{function}");
        assert!(row.instrumentation.starts_with("breakpoint"), "{function}: {}", row.instrumentation);
    }
    let calls: u64 = EXPECTED.iter().filter(|e| !e.1.ends_with("hot")).map(|e| e.2).sum();
    let traps = common::traps(&file);
    assert!(traps >= calls, "every call a trap: {traps} for {calls} calls");
    assert!(!rows.contains_key(&("counts".into(), "hot".into())));
    let arcs = read_arcs(&file);
    assert_eq!(arcs[&("main".into(), "three".into())], [1, 2]);
    assert_eq!(arcs[&("fib".into(), "fib".into())].iter().sum::<u64>(), 1972);
}

#[test]
fn a_stripped_program_is_counted_through_its_unwind_tables() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    // Beside the libraries, which the program finds through its rpath.
    let stripped = dir.join("counts-stripped");
    std::fs::copy(dir.join("counts"), &stripped).unwrap();
    let status = std::process::Command::new("strip").arg(&stripped).status().expect("strip (binutils) runs");
    assert!(status.success());
    let nm = std::process::Command::new("nm").arg(dir.join("counts")).output().expect("nm runs");
    let nm = String::from_utf8_lossy(&nm.stdout);
    let hot = nm.lines().find(|l| l.ends_with(" T hot")).expect("hot in nm");
    let hot = u64::from_str_radix(hot.split(' ').next().unwrap(), 16).unwrap();
    let file = out.path().join("stripped.cali");
    let plugin = dir.join("libplugin.so");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cali-run"))
        .current_dir(dir)
        .args(["-i", "counts-stripped", "-o", file.to_str().unwrap(), "--"])
        .arg(&stripped)
        .arg(&plugin)
        .output()
        .unwrap();
    check_program_output(&output);
    let rows = read_result(&file);
    let row = &rows[&("counts-stripped".into(), format!("{hot:#x}"))];
    assert_eq!(row.count, Some(1_000_003));
    assert_eq!(row.address, hot);
}

#[test]
fn the_text_report_goes_to_stderr() {
    let dir = counts_dir();
    let output = run_in(dir, &["-i", "counts"], "./counts", &[]);
    check_program_output(&output);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(report.lines().any(|l| l.trim() == "1000003 hot"), "{report}");
    assert!(
        report.lines().any(|l| l.starts_with("== ") && l.ends_with("/counts: 34 of 37 functions called")),
        "{report}"
    );
}

#[test]
fn exit_codes_and_signals_pass_through() {
    let dir = counts_dir();
    let output = run_in(dir, &[], "sh", &["-c", "exit 42"]);
    assert_eq!(output.status.code(), Some(42));
    let output = run_in(dir, &["-c", "coverage"], "sh", &["-c", "kill -SEGV $$"]);
    assert_eq!(output.status.signal(), Some(libc::SIGSEGV), "dies of the program's signal");
    // A signal the program handles is delivered to it.
    let output = run_in(dir, &[], "sh", &["-c", "trap 'echo got USR1' USR1; kill -USR1 $$; echo after"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "got USR1\nafter\n");
    assert_eq!(output.status.code(), Some(0));
}

/// Runs `command` with `input` on its standard input (written from
/// another thread, so that a full output pipe cannot block the writer).
fn pipe_through(command: &mut std::process::Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

#[test]
fn input_and_output_pass_through() {
    let text: Vec<u8> = (0..200_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let measured = pipe_through(common::cali_run().args(["-c", "fcount", "--", "gzip", "-c"]), &text);
    let plain = pipe_through(std::process::Command::new("gzip").arg("-c"), &text);
    assert_eq!(measured.status.code(), Some(0));
    assert!(measured.stdout == plain.stdout, "byte-identical output");
}

#[test]
fn a_program_that_cannot_start_is_reported() {
    let output = common::cali_run().args(["--", "/nonexistent/program"]).output().unwrap();
    assert_eq!(output.status.code(), Some(127));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.starts_with("== CALIPER: cali-run: cannot run /nonexistent/program"), "{err}");
    let output = common::cali_run().args(["--collect", "bogus", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn cali_query_tables_trees_and_json_split_read_the_results() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("query.cali");
    let output = run_in(dir, &["-c", "fcount,arcs", "-i", "counts", "-o", file.to_str().unwrap()], "./counts", &[]);
    check_program_output(&output);
    let table =
        common::query(&file, "select dbi.function,dbi.count where dbi.module order by dbi.count desc format table");
    let rows: Vec<Vec<&str>> = table.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["shared_hot", "10000001"], "{table}");
    assert_eq!(rows[1], ["hot", "1000003"], "{table}");
    // The call graph: callers with their callees beneath.
    let tree = common::query(&file, "select sum(dbi.count) where dbi.caller group by path format tree");
    let main = tree.lines().position(|l| l.trim_start().starts_with("main ")).expect("main in the tree");
    assert!(
        tree.lines().skip(main + 1).any(|l| l.split_whitespace().collect::<Vec<_>>() == ["hot", "1000000"]),
        "{tree}"
    );
    let json = common::query(&file, "select path,sum(dbi.count) where dbi.module group by path format json-split");
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("json-split is JSON");
    assert!(parsed["nodes"].as_array().unwrap().iter().any(|n| n["label"] == "hot"), "{json}");
}

#[test]
fn the_simplified_model_writes_flow_data() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let flow = out.path().join("flow.dat");
    let control = out.path().join("run.ctl");
    let text = format!(
        "# the application, the output, the collector\napplication = \"./counts\"\npbo_out = \"{}\"\ncollector = \"func_count,arc_count\"\ninclude = \"counts\"\n",
        flow.display()
    );
    std::fs::write(&control, text).unwrap();
    let output = common::cali_run().current_dir(dir).arg("--control").arg(&control).output().unwrap();
    check_program_output(&output);
    let data = std::fs::read_to_string(&flow).unwrap();
    assert_eq!(data.lines().next(), Some("# cali-run flow data 1"));
    let fields: Vec<Vec<&str>> = data.lines().skip(1).map(|l| l.split('\t').collect()).collect();
    let hot = fields.iter().find(|f| f[0] == "F" && f[4] == "hot").expect("hot's line");
    assert_eq!(hot[1], "1000003");
    assert!(hot[2].ends_with("/counts") && hot[3].starts_with("0x"));
    let arc = fields.iter().find(|f| f[0] == "A" && f[4] == "main" && f[7] == "hot").expect("main -> hot");
    assert_eq!((arc[1], arc.len()), ("1000000", 8));
}

#[test]
fn a_child_not_followed_runs_free() {
    let dir = counts_dir();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("nofollow.cali");
    let output = run_in(dir, &["--follow", "none", "-i", "counts", "-o", file.to_str().unwrap()], "./counts", &[]);
    check_program_output(&output);
    let rows = read_result(&file);
    assert!(!rows.contains_key(&("counts".into(), "child_only".into())), "the child's calls are not counted");
    assert_eq!(rows[&("counts".into(), "hot".into())].count, Some(1_000_003));
}

#[test]
fn a_pipeline_is_followed_through_fork_and_exec() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("pipeline.cali");
    let script = "echo some text | gzip -c | gzip -d; exit 3";
    let followed = run_in(out.path(), &["-o", file.to_str().unwrap()], "sh", &["-c", script]);
    assert_eq!(String::from_utf8_lossy(&followed.stdout), "some text\n");
    assert_eq!(followed.status.code(), Some(3));
    let rows = read_result(&file);
    assert!(rows.keys().any(|(m, _)| m == "gzip"), "the programs the shell runs are measured");
    let shell_only = out.path().join("shell.cali");
    let output = run_in(out.path(), &["--follow", "fork", "-o", shell_only.to_str().unwrap()], "sh", &["-c", script]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "some text\n");
    assert_eq!(output.status.code(), Some(3));
    assert!(!read_result(&shell_only).keys().any(|(m, _)| m == "gzip"), "let go at exec");
    let chosen = out.path().join("chosen.cali");
    let script = "echo some text | gzip -c | gzip -d | cat; exit 3";
    let output =
        run_in(out.path(), &["--follow", "fork,exec=cat", "-o", chosen.to_str().unwrap()], "sh", &["-c", script]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "some text\n");
    assert_eq!(output.status.code(), Some(3));
    let modules: Vec<String> = read_result(&chosen).into_keys().map(|(m, _)| m).collect();
    assert!(modules.iter().any(|m| m == "cat") && !modules.iter().any(|m| m == "gzip"), "{modules:?}");
}

/// A program, the copy of itself it spawns and a child the copy forks call
/// one function at the same moment: the spawned copy counts in slots and
/// arc entries of its own (unlocked while it runs one thread), the forked
/// child beside its parent; not a call is lost (were the copy to count
/// unlocked in its parent's slots, some hundred thousand would be).
#[test]
fn programs_running_side_by_side_count_every_call() {
    let out = tempfile::tempdir().unwrap();
    common::build(out.path(), "side_by_side", &[]);
    for collect in ["fcount", "arcs"] {
        let file = out.path().join(format!("{collect}.cali"));
        let args = ["-c", collect, "-i", "side_by_side", "-o", file.to_str().unwrap()];
        let output = run_in(out.path(), &args, "./side_by_side", &[]);
        assert_eq!(String::from_utf8_lossy(&output.stdout), "ok\n", "{}", String::from_utf8_lossy(&output.stderr));
        let calls = 3 * 5_000_000;
        if collect == "fcount" {
            assert_eq!(read_result(&file)[&("side_by_side".into(), "tick".into())].count, Some(calls));
        } else {
            let sites = read_arcs(&file).remove(&("run".into(), "tick".into())).unwrap_or_default();
            assert_eq!(sites.iter().sum::<u64>(), calls, "the arcs from run: {sites:?}");
        }
    }
}

/// A program calls one function from two direct call sites and through
/// a pointer, and another from a third site, for 400 ms: the direct sites
/// get counters of their own (the debug line says so), and their arcs
/// still count every call, as do the functions; after a fork, parent and
/// child call from one such site at the same moment, its counter shared.
#[test]
fn hot_call_sites_count_their_own_calls_exactly() {
    let out = tempfile::tempdir().unwrap();
    common::build(out.path(), "hot_sites", &[]);
    let file = out.path().join("hot.cali");
    let args = ["-c", "fcount,arcs", "-i", "hot_sites", "-o", file.to_str().unwrap()];
    let (output, stderr) = common::run_debugging_arcs(out.path(), &args, "./hot_sites", &[]);
    let rounds: u64 = String::from_utf8_lossy(&output.stdout).trim().parse().unwrap();
    let round = 1_000_000;
    let own = common::arc_figure(&stderr, " call sites counting their own calls");
    assert!(own >= 3, "the three hot direct call sites count their own calls: {stderr}");
    let arcs = read_arcs(&file);
    let sites = |caller: &str, callee: &str| arcs.get(&(caller.into(), callee.into())).cloned().unwrap_or_default();
    assert_eq!(sites("first", "leaf"), [(rounds + 2) * round], "the phase's calls, then the parent's and the child's");
    assert_eq!(sites("second", "leaf"), [rounds * round]);
    assert_eq!(sites("second", "other"), [rounds * round]);
    assert_eq!(sites("through", "leaf"), [rounds * round], "through a pointer: counted by the callee");
    let rows = read_result(&file);
    assert_eq!(rows[&("hot_sites".into(), "leaf".into())].count, Some((3 * rounds + 2) * round));
    assert_eq!(rows[&("hot_sites".into(), "other".into())].count, Some(rounds * round));
}

/// Builds `libpltsites.so` in `dir`; its source (the program's too).
fn plt_sites_library(dir: &std::path::Path) -> std::path::PathBuf {
    let source = common::source("plt_sites.c");
    common::gcc(dir, &["-O2", "-shared", "-fPIC", "-DLIBRARY", "-o", "libpltsites.so", source.to_str().unwrap()]);
    source
}

/// A library's calls of its own exported function go through its PLT
/// entry: once the site counts its own calls, its trampoline counts the
/// function behind the entry too and runs it past its own trampoline's
/// counting, while the GOT slot holds it; the counts stay exact for both
/// arcs (to the PLT entry and to the function) and both functions.
#[test]
fn a_call_through_a_plt_entry_counts_the_function_behind_it_at_its_site() {
    let out = tempfile::tempdir().unwrap();
    let source = plt_sites_library(out.path());
    let program = ["-O2", "-o", "plt_sites", source.to_str().unwrap(), "-L.", "-lpltsites", "-Wl,-rpath,$ORIGIN"];
    common::gcc(out.path(), &program);
    let file = out.path().join("plt.cali");
    let args = ["-c", "fcount,arcs", "-i", "plt_sites,libpltsites.so", "-o", file.to_str().unwrap()];
    let (output, stderr) = common::run_debugging_arcs(out.path(), &args, "./plt_sites", &[]);
    let rounds: u64 = String::from_utf8_lossy(&output.stdout).trim().parse().unwrap();
    assert!(rounds > 0, "the library counted its own calls: {stderr}");
    let through = common::arc_figure(&stderr, " of them calls of a PLT entry");
    assert!(through >= 1, "the call of leaf's PLT entry counts leaf too: {stderr}");
    let calls = rounds * 1_000_000;
    let arcs = read_arcs(&file);
    assert_eq!(arcs[&("run".into(), "leaf@plt".into())], [calls], "the arc to the PLT entry");
    assert_eq!(arcs[&("run".into(), "leaf".into())], [calls], "and to the function behind it");
    let rows = read_result(&file);
    assert_eq!(rows[&("libpltsites.so".into(), "leaf".into())].count, Some(calls));
    assert_eq!(rows[&("libpltsites.so".into(), "leaf@plt".into())].count, Some(calls));
}

/// A program that writes another function into the GOT slot of a PLT
/// entry whose call site counts the function behind it (as a program that
/// hooks a library function does) has its calls go where the slot says,
/// each counted along the arc it took.
#[test]
fn a_call_through_a_plt_entry_follows_its_got_slot_when_the_program_changes_it() {
    let out = tempfile::tempdir().unwrap();
    plt_sites_library(out.path());
    let program = common::source("plt_got.c");
    let flags = ["-O2", "-fno-pic", "-no-pie", "-o", "plt_got", program.to_str().unwrap(), "-L.", "-lpltsites"];
    common::gcc(out.path(), &[&flags[..], &["-Wl,-rpath,$ORIGIN"]].concat());
    let file = out.path().join("got.cali");
    let args = ["-c", "fcount,arcs", "-i", "plt_got,libpltsites.so", "-o", file.to_str().unwrap()];
    let (output, stderr) = common::run_debugging_arcs(out.path(), &args, "./plt_got", &[]);
    let printed = String::from_utf8_lossy(&output.stdout);
    let [rounds, sum]: [u64; 2] =
        printed.split_whitespace().map(|n| n.parse().unwrap()).collect::<Vec<_>>().try_into().unwrap();
    let calls = rounds * 1_000_000;
    assert_eq!(sum, calls + 2 * 1000, "the last 1000 calls reached other");
    assert!(common::arc_figure(&stderr, " of them calls of a PLT entry") >= 1, "{stderr}");
    let arcs = read_arcs(&file);
    assert_eq!(arcs[&("spin".into(), "leaf@plt".into())], [calls + 1000]);
    assert_eq!(arcs[&("spin".into(), "leaf".into())], [calls], "while the slot held leaf");
    assert_eq!(arcs[&("spin".into(), "other".into())], [1000], "after");
    let rows = read_result(&file);
    assert_eq!(rows[&("libpltsites.so".into(), "leaf".into())].count, Some(calls));
    assert_eq!(rows[&("libpltsites.so".into(), "other".into())].count, Some(1000));
}

/// A shell runs a program 20 times, one run after the other: each run
/// counts in slots, arc ids and entries of the table of call arcs of its
/// own, given back when it exits and taken by the next, so the counts add
/// up, the slots and ids taken stay about one run's, and no entry stays
/// claimed.
#[test]
fn the_slots_and_arc_entries_of_a_finished_program_are_taken_again() {
    let out = tempfile::tempdir().unwrap();
    common::build(out.path(), "side_by_side", &[]);
    let file = out.path().join("runs.cali");
    let args = ["-c", "fcount,arcs", "-i", "side_by_side", "-o", file.to_str().unwrap()];
    let script = "for i in $(seq 20); do ./side_by_side once; done";
    let (_, stderr) = common::run_debugging_arcs(out.path(), &args, "sh", &["-c", script]);
    assert_eq!(read_result(&file)[&("side_by_side".into(), "tick".into())].count, Some(20_000));
    assert_eq!(read_arcs(&file)[&("main".into(), "tick".into())], [20_000], "one call site, 20 runs");
    let figure = |what| common::arc_figure(&stderr, what);
    assert_eq!(figure(" of "), 0, "the entries claimed at the end: {stderr}");
    assert!(figure(" freed") >= 20, "each run's entries (main to tick's at least) freed at its end: {stderr}");
    let most = figure(" at most");
    assert!(most < 20, "{most} slots taken at most for 20 runs of a program that calls a few functions");
    let ids = figure(" arc ids");
    assert!(ids < 40, "{ids} arc ids given for 20 runs of a program that calls a few functions");
}

#[test]
fn many_children_at_once_are_counted_or_let_go() {
    let out = tempfile::tempdir().unwrap();
    common::build(out.path(), "forks", &[]);
    let file = out.path().join("forks.cali");
    let output = run_in(out.path(), &["-i", "forks", "-o", file.to_str().unwrap()], "./forks", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "bad 0\n");
    assert_eq!(read_result(&file)[&("forks".into(), "in_child".into())].count, Some(400));
    let output = run_in(out.path(), &["--follow", "none", "-i", "forks", "-o", file.to_str().unwrap()], "./forks", &[]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "bad 0\n");
    assert!(!read_result(&file).contains_key(&("forks".into(), "in_child".into())));
}

/// Freshly exec'd processes that are not the tool's children, each forking
/// once, the child exec'ing at once (a shell script's command substitution
/// running another script: pyenv's shims): the tool sees most such
/// children's first stops before their parents' fork events, and lets each
/// run only once its copy of the trampolines counts atomically (let go
/// first, one in two exec'd while the tool wrote into the image it had left:
/// "cannot make the counters atomic").
#[test]
fn a_child_stopped_before_its_fork_event_runs_once_its_counts_are_atomic() {
    let out = tempfile::tempdir().unwrap();
    common::build(out.path(), "first_forks", &[]);
    let file = out.path().join("first_forks.cali");
    let output = run_in(out.path(), &["-c", "fcount", "-o", file.to_str().unwrap()], "./first_forks", &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "0 failed\n");
    assert!(!stderr.contains("== CALIPER"), "{stderr}");
    let counts = read_result(&file);
    for function in ["f100000", "f133333"] {
        assert_eq!(counts[&("first_forks".into(), function.into())].count, Some(30), "{function}");
    }
}
