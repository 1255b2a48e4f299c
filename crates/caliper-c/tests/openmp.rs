//! OpenMP programs through the OpenMP tools interface: `tests/openmp/
//! omp_app.c` (regions around a parallel for whose iterations open a
//! region on every thread, an explicit barrier, a serial region) built
//! with `clang -fopenmp` (LLVM's libomp, which calls libcaliper's
//! `ompt_start_tool`) against the installed libcaliper, under
//! `openmp-report`, `runtime-report` with the `openmp.*` options and an
//! event trace; and built with `gcc -fopenmp` (GCC's libgomp, which has no
//! tools interface).
//!
//! clang and libomp are installed by `scripts/test-all.sh`; without them
//! the tests fail, naming the script.

use caliper_testutil::install::{self, make_install, must, require_tools};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The installed tree, once per test run.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(&["clang", "gcc", "make"]);
        make_install("openmp", "install")
    })
}

/// The program built by `compiler -fopenmp`, once per compiler.
fn program(compiler: &'static str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<BTreeMap<&'static str, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    built
        .entry(compiler)
        .or_insert_with(|| {
            let prefix = prefix();
            let exe = install::scratch("openmp", compiler).join("omp_app");
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openmp/omp_app.c");
            let lib = prefix.join("lib");
            must(
                Command::new(compiler)
                    .args(["-fopenmp", "-O2", "-Wall", "-o"])
                    .arg(&exe)
                    .arg(source)
                    .arg(format!("-I{}", prefix.join("include").display()))
                    .arg(format!("-L{}", lib.display()))
                    .arg(format!("-Wl,-rpath,{}", lib.display()))
                    .arg("-lcaliper"),
            );
            exe
        })
        .clone()
}

/// Runs the program built by `compiler` with the settings `env`, none
/// inherited; it must succeed, with its own output unchanged.
fn run(compiler: &'static str, env: &[(&str, &str)]) -> Output {
    run_with(compiler, &[], env)
}

/// [`run`] with the program's arguments `args`.
fn run_with(compiler: &'static str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program(compiler));
    cmd.args(args);
    cmd.env_remove("CALI_CONFIG")
        .env_remove("CALI_SERVICES_ENABLE")
        .env_remove("CALI_USE_OMPT")
        .env_remove("OMP_TOOL")
        .env("OMP_NUM_THREADS", "4")
        .envs(env.iter().copied());
    let out = must(&mut cmd);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done 4541394\n", "{out:?}");
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A report tree or table: each row's path (names joined with `/`; empty
/// for a table) and its cells by column name (blank cells left out). The
/// cells are right-aligned with their column names, and may be wider: a
/// cell spans from the end of the column name before.
fn report(text: &str, columns: &[&str]) -> Vec<(String, BTreeMap<String, String>)> {
    let mut lines = text.lines().skip_while(|l| !columns.iter().all(|c| l.contains(c)));
    let header = lines.next().unwrap_or_else(|| panic!("no header with {columns:?} in:\n{text}"));
    // A column name stands between spaces (`Thread` is not in `#Threads`).
    let column = |c: &str| {
        let spaced = |i: usize, j: usize| {
            header[..i].chars().next_back().is_none_or(|b| b == ' ')
                && header[j..].chars().next().is_none_or(|a| a == ' ')
        };
        header.match_indices(c).map(|(i, _)| i).find(|&i| spaced(i, i + c.len())).unwrap()
    };
    let starts: Vec<usize> = columns.iter().map(|c| column(c)).collect();
    let first = *starts.iter().min().unwrap();
    let spans: Vec<(&str, usize, usize)> = columns
        .iter()
        .zip(&starts)
        .map(|(c, &start)| {
            let from = if start == first { start } else { header[..start].trim_end().len() };
            (*c, from, start + c.len())
        })
        .collect();
    let mut stack: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for line in lines.take_while(|l| !l.trim().is_empty() && !l.starts_with("== CALIPER")) {
        let name = line.get(..first).unwrap_or(line);
        let depth = (name.len() - name.trim_start().len()) / 2;
        stack.truncate(depth);
        stack.push(name.trim().to_string());
        let cells = spans
            .iter()
            .filter_map(|&(c, start, end)| {
                let cell = line.get(start.min(line.len())..end.min(line.len()))?.trim();
                (!cell.is_empty()).then(|| (c.to_string(), cell.to_string()))
            })
            .collect();
        rows.push((stack.join("/"), cells));
    }
    rows
}

fn paths(rows: &[(String, BTreeMap<String, String>)]) -> Vec<&str> {
    let mut paths: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    paths.sort();
    paths
}

fn cells<'a>(rows: &'a [(String, BTreeMap<String, String>)], path: &str) -> &'a BTreeMap<String, String> {
    &rows.iter().find(|r| r.0 == path).unwrap_or_else(|| panic!("no row {path} in {rows:#?}")).1
}

fn number(cells: &BTreeMap<String, String>, column: &str) -> f64 {
    cells.get(column).unwrap_or_else(|| panic!("no {column} in {cells:?}")).parse().unwrap()
}

const OPENMP_COLUMNS: &[&str] =
    &["#Threads", "Time (thread)", "Time (total)", "Time (work)", "Time (barrier)", "Work %", "Barrier %"];

#[test]
fn openmp_report_has_threads_work_and_barrier_time_per_region() {
    let out = run("clang", &[("CALI_CONFIG", "openmp-report")]);
    let rows = report(&stderr(&out), OPENMP_COLUMNS);
    // The iterations, which every thread of the team runs, nest under the
    // region around the parallel region: no root row of workers' regions.
    assert_eq!(paths(&rows), ["main", "main/compute", "main/compute/iteration", "main/serial"], "{rows:#?}");
    let compute = cells(&rows, "main/compute");
    assert_eq!(compute["#Threads"], "4");
    // The team's time is all threads': about four times the initial one's.
    assert!(number(compute, "Time (total)") > 2.0 * number(compute, "Time (thread)"), "{compute:?}");
    assert!(number(compute, "Time (barrier)") > 0.0, "{compute:?}");
    let shares = number(compute, "Work %") + number(compute, "Barrier %");
    assert!((shares - 100.0).abs() < 0.01, "{compute:?}");
    let iteration = cells(&rows, "main/compute/iteration");
    assert_eq!(iteration["Work %"], "100.000000", "{iteration:?}");
    assert!(!cells(&rows, "main/serial").contains_key("#Threads"));
}

#[test]
fn openmp_report_table_per_thread() {
    let out = run("clang", &[("CALI_CONFIG", "openmp-report,show_regions=false,show_threads=true")]);
    let rows = report(&stderr(&out), &["#Threads", "Time (total)", "Thread", "Work %"]);
    let mut threads: Vec<&str> = rows.iter().map(|r| r.1["Thread"].as_str()).collect();
    threads.sort();
    assert_eq!(threads, ["0", "1", "2", "3"], "{rows:#?}");
    assert!(rows.iter().all(|r| r.0.is_empty() && r.1["#Threads"] == "4"), "{rows:#?}");
}

#[test]
fn runtime_report_with_openmp_times() {
    let out = run("clang", &[("CALI_CONFIG", "runtime-report,openmp.times")]);
    let rows = report(&stderr(&out), &["Time (E)", "Time (I)", "Time (work)", "Time (barrier)"]);
    assert_eq!(paths(&rows), ["main", "main/compute", "main/compute/iteration", "main/serial"], "{rows:#?}");
    let compute = cells(&rows, "main/compute");
    assert!(number(compute, "Time (barrier)") > 0.0 && number(compute, "Time (work)") > 0.0, "{compute:?}");
    let iteration = cells(&rows, "main/compute/iteration");
    assert_eq!(number(iteration, "Time (work)"), number(iteration, "Time (E)"), "{iteration:?}");
}

#[test]
fn worker_regions_nest_only_with_the_tool() {
    // Without OMPT the workers' blackboards are empty: their iterations
    // are a root of their own, as in the reference.
    let rows = report(&stderr(&run("clang", &[("CALI_CONFIG", "runtime-report")])), &["Time (E)", "Time (I)"]);
    assert_eq!(paths(&rows), ["iteration", "main", "main/compute", "main/compute/iteration", "main/serial"]);
    let env = [("CALI_CONFIG", "runtime-report"), ("CALI_USE_OMPT", "true")];
    let rows = report(&stderr(&run("clang", &env)), &["Time (E)", "Time (I)"]);
    assert_eq!(paths(&rows), ["main", "main/compute", "main/compute/iteration", "main/serial"], "{rows:#?}");
}

#[test]
fn no_tool_unless_asked() {
    let verbose = ("OMP_TOOL_VERBOSE_INIT", "stderr");
    let out = run("clang", &[verbose]);
    assert!(stderr(&out).contains("No OMP tool loaded"), "{}", stderr(&out));
    let out = run("clang", &[verbose, ("CALI_CONFIG", "openmp-report"), ("CALI_USE_OMPT", "false")]);
    assert!(stderr(&out).contains("No OMP tool loaded"), "{}", stderr(&out));
    let out = run("clang", &[verbose, ("CALI_CONFIG", "openmp-report")]);
    assert!(stderr(&out).contains("Success"), "{}", stderr(&out));
}

#[test]
fn openmp_started_before_the_config_says_how_to_measure_it() {
    let out = run_with("clang", &["late"], &[]);
    let text = stderr(&out);
    let said: Vec<&str> = text.lines().filter(|l| l.starts_with("== CALIPER")).collect();
    assert_eq!(
        said,
        ["== CALIPER: ompt: the OpenMP runtime started before the ompt service was enabled; \
          set CALI_USE_OMPT=true to measure OpenMP regions"],
        "{text}"
    );
    let out = run_with("clang", &["late"], &[("CALI_USE_OMPT", "true")]);
    let rows = report(&stderr(&out), OPENMP_COLUMNS);
    assert_eq!(cells(&rows, "main/compute")["#Threads"], "4", "{rows:#?}");
}

type Records = Vec<BTreeMap<String, String>>;

/// The records of the trace the clang program writes to `file` with the
/// settings `env`, as `cali-query -e` prints them.
fn trace(name: &str, env: impl FnOnce(&Path) -> Vec<(&'static str, String)>) -> Records {
    let file = install::scratch("openmp", name).join("trace.cali");
    let env = env(&file);
    run("clang", &env.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>());
    let out = must(Command::new(prefix().join("bin/cali-query")).arg("-e").arg(&file));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect())
        .collect()
}

/// The distinct values of `attr` in `records`, sorted.
fn distinct<'a>(records: impl IntoIterator<Item = &'a BTreeMap<String, String>>, attr: &str) -> Vec<&'a str> {
    let mut v: Vec<&str> = records.into_iter().filter_map(|r| r.get(attr).map(String::as_str)).collect();
    v.sort();
    v.dedup();
    v
}

/// The records where `attr` is `value`.
fn with<'a>(records: &'a Records, attr: &'a str, value: &'a str) -> impl Iterator<Item = &'a BTreeMap<String, String>> {
    records.iter().filter(move |r| r.get(attr).is_some_and(|v| v == value))
}

#[test]
fn event_trace_has_the_openmp_attributes() {
    let records =
        trace("trace", |file| vec![("CALI_CONFIG", format!("event-trace,trace.openmp,output={}", file.display()))]);
    let values = |attr: &str| distinct(&records, attr);
    assert_eq!(values("event.begin#omp.parallel"), ["4"]);
    assert_eq!(values("omp.thread.type"), ["initial", "worker"]);
    assert_eq!(values("omp.thread.id"), ["0", "1", "2", "3"]);
    assert_eq!(values("omp.num.threads"), ["4"]);
    assert_eq!(values("event.begin#omp.work"), ["loop"]);
    assert!(values("event.begin#omp.sync").contains(&"barrier_explicit"), "{:?}", values("event.begin#omp.sync"));
    assert!(!values("omp.proc.id").is_empty());
    // Every thread's iterations are in main/compute.
    let iterations: Vec<&BTreeMap<String, String>> =
        records.iter().filter(|r| r.contains_key("event.end#region") && r["event.end#region"] == "iteration").collect();
    assert_eq!(iterations.len(), 4000);
    assert!(iterations.iter().all(|r| r["region"] == "main/compute/iteration"), "{:?}", iterations[0]);
    let threads: std::collections::BTreeSet<&str> = iterations.iter().map(|r| r["omp.thread.id"].as_str()).collect();
    assert_eq!(threads.len(), 4);
}

#[test]
fn event_snapshots_have_the_openmp_state() {
    let records = trace("state", |file| {
        vec![
            ("CALI_SERVICES_ENABLE", "event,ompt,trace,recorder".into()),
            ("CALI_RECORDER_FILENAME", file.display().to_string()),
        ]
    });
    // Every snapshot has the thread's state.
    let without = records.iter().find(|r| !r.contains_key("omp.state"));
    assert!(without.is_none(), "{without:?}");
    // Outside the parallel region the initial thread works serially.
    let initial: Records = with(&records, "omp.thread.type", "initial").cloned().collect();
    for region in ["main", "compute", "serial"] {
        assert_eq!(distinct(with(&initial, "event.begin#region", region), "omp.state"), ["work_serial"], "{region}");
    }
    // The team's threads work in parallel in the loop...
    assert_eq!(distinct(with(&records, "event.end#region", "iteration"), "omp.state"), ["work_parallel"]);
    // ...and wait at the end of the explicit barrier.
    let barrier_ends = distinct(with(&records, "event.end#omp.sync", "barrier_explicit"), "omp.state");
    assert!(!barrier_ends.is_empty() && barrier_ends.iter().all(|s| s.starts_with("wait_barrier")), "{barrier_ends:?}");
}

#[test]
fn samples_have_the_openmp_state_they_were_taken_in() {
    let records = trace("sampled_state", |file| {
        vec![
            ("CALI_SERVICES_ENABLE", "ompt,sampler,trace,recorder".into()),
            ("CALI_SAMPLER_FREQUENCY", "2000".into()),
            ("CALI_RECORDER_FILENAME", file.display().to_string()),
        ]
    });
    // Samples taken once the OpenMP runtime runs (those in a region) have
    // the state their thread was interrupted in: working in the loop's
    // iterations, waiting in a barrier.
    let samples: Records = records.into_iter().filter(|r| r.contains_key("cali.sampler.pc")).collect();
    let in_regions: Vec<_> = samples.iter().filter(|r| r.contains_key("region")).collect();
    let without = in_regions.iter().find(|r| !r.contains_key("omp.state"));
    assert!(!in_regions.is_empty() && without.is_none(), "{without:?}");
    assert_eq!(distinct(with(&samples, "region", "main/compute/iteration"), "omp.state"), ["work_parallel"]);
    let in_barrier = distinct(with(&samples, "omp.sync", "barrier_explicit"), "omp.state");
    assert!(in_barrier.iter().all(|s| s.starts_with("wait_barrier")), "{in_barrier:?}");
    // Four threads on fewer cores wait at the barriers.
    let states = distinct(&samples, "omp.state");
    assert!(states.iter().any(|s| s.starts_with("wait_barrier")), "{states:?}");
}

#[test]
fn libgomp_says_it_has_no_tools_interface() {
    let out = run("gcc", &[("CALI_CONFIG", "openmp-report")]);
    let text = stderr(&out);
    let said: Vec<&str> = text.lines().filter(|l| l.contains("libgomp")).collect();
    assert_eq!(
        said,
        ["== CALIPER: ompt: the OpenMP runtime has no tools interface (GCC's libgomp); \
          use LLVM's libomp (clang -fopenmp) to measure OpenMP regions"],
        "{text}"
    );
    // Without ompt, a libgomp program says nothing of it.
    let out = run("gcc", &[("CALI_CONFIG", "runtime-report")]);
    assert!(!stderr(&out).contains("libgomp"), "{}", stderr(&out));
}
