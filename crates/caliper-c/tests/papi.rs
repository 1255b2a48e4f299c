//! PAPI counters through libcaliper: a C program whose regions make page
//! faults (tests/papi/work.c) runs with the `papi` service, which loads
//! Debian's libpapi at run time. The program counts its pages and its
//! threads' faults as PAPI software-defined events (libsde), which PAPI
//! reads like hardware counters: PAPI 7.0's perf_event component, and so
//! its `perf::` events, needs a core PMU that virtual machines may lack.

use caliper_testutil::install::{self, make_install, must, require_tools};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const PAGES: &str = "sde:::papi_work::PAGES_TOUCHED";
const FAULTS: &str = "sde:::papi_work::MINOR_FAULTS";

/// The installed tree, once per test run.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(&["gcc", "make"]);
        assert!(
            Path::new("/usr/include/sde_lib.h").exists(),
            "libpapi-dev is missing: scripts/test-all.sh installs it"
        );
        make_install("papi", "install")
    })
}

/// The program, built once (against libsde, not libpapi: libcaliper
/// loads PAPI itself).
fn program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = install::scratch("papi", "build");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/papi/work.c");
        let lib = prefix().join("lib");
        must(
            Command::new("gcc")
                .args(["-O2", "-Wall", "-pthread", "-o"])
                .arg(dir.join("work"))
                .arg(&source)
                .arg(format!("-I{}", prefix().join("include").display()))
                .arg("-lsde")
                .arg(format!("-L{}", lib.display()))
                .arg("-lcaliper")
                .arg(format!("-Wl,-rpath,{}", lib.display())),
        );
        dir.join("work")
    })
}

/// Runs the program with these Caliper settings only.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program());
    install::without_caliper_settings(&mut cmd).args(args).envs(env.iter().copied());
    must(&mut cmd)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `== CALIPER:` lines of a run.
fn caliper_lines(out: &Output) -> Vec<String> {
    stderr(out).lines().filter(|l| l.starts_with("== CALIPER:")).map(str::to_string).collect()
}

/// A runtime-report's rows: each region name (indentation dropped) and
/// its value in `column`.
fn column(report: &str, column: &str) -> Vec<(String, u64)> {
    let mut lines = report.lines().skip_while(|l| !l.contains("Path "));
    let header = lines.next().unwrap_or_else(|| panic!("no report in {report}"));
    let header = &header[header.find("Path ").unwrap()..];
    let at = header.find(column).unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    // The values are right-aligned under their heading.
    let end = at + column.len();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let name = l.split_whitespace().next().unwrap().to_string();
            let cell = l.get(..end).unwrap_or(l).rsplit(' ').next().unwrap();
            (name, cell.parse().unwrap_or_else(|_| panic!("not a count: {cell:?} in {l:?}")))
        })
        .collect()
}

fn value(rows: &[(String, u64)], region: &str) -> u64 {
    rows.iter().find(|(name, _)| name == region).unwrap_or_else(|| panic!("no row {region} in {rows:?}")).1
}

#[test]
fn runtime_report_has_a_column_per_counter_and_the_faults_of_each_region() {
    let config = format!("runtime-report,papi.counters=\"{PAGES},{FAULTS}\"");
    let out = run(&["work", "64"], &[("CALI_CONFIG", &config)]);
    let report = stderr(&out);
    assert!(caliper_lines(&out).is_empty(), "{report}");
    let pages = column(&report, PAGES);
    // 64 MiB of fresh memory are 16384 pages, the thread's 16 MiB 4096.
    assert_eq!(value(&pages, "work"), 16384, "{report}");
    assert_eq!(value(&pages, "idle"), 0, "{report}");
    assert_eq!(value(&pages, "thread_work"), 4096, "{report}");
    // Each thread counts its own faults in its own event set.
    let faults = column(&report, FAULTS);
    assert!(value(&faults, "work") >= 16384, "{report}");
    assert!(value(&faults, "idle") < 100, "{report}");
    assert!(value(&faults, "thread_work") >= 4096, "{report}");
    assert!(value(&faults, "threads") < 100, "the main thread only waited: {report}");
}

#[test]
fn the_service_alone_adds_papi_attributes_to_each_snapshot() {
    let dir = install::scratch("papi", "trace");
    let file = dir.join("trace.cali");
    let out = run(
        &["work", "8"],
        &[
            ("CALI_SERVICES_ENABLE", "event,papi,trace,recorder"),
            ("CALI_PAPI_COUNTERS", &format!("{PAGES},{FAULTS}")),
            ("CALI_RECORDER_FILENAME", file.to_str().unwrap()),
        ],
    );
    assert!(caliper_lines(&out).is_empty(), "{}", stderr(&out));
    let query = format!("select event.end#region,papi.{PAGES},papi.{FAULTS} where event.end#region format expand");
    let listed = must(Command::new(prefix().join("bin/cali-query")).arg("-q").arg(&query).arg(&file));
    let listed = String::from_utf8_lossy(&listed.stdout);
    let line = |region: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("event.end#region={region},")))
            .unwrap_or_else(|| panic!("no end of {region} in {listed}"))
    };
    assert!(line("work").contains(&format!("papi.{PAGES}=2048")), "{listed}");
    assert!(line("idle").contains(&format!("papi.{PAGES}=0")), "{listed}");
    assert!(line("thread_work").contains(&format!("papi.{PAGES}=512")), "{listed}");
    // A thread's first count starts where its event set started: nothing
    // was touched before any region began, on any thread.
    let query = format!("select event.begin#region,papi.{PAGES} where event.begin#region format expand");
    let begins = must(Command::new(prefix().join("bin/cali-query")).arg("-q").arg(&query).arg(&file));
    let begins = String::from_utf8_lossy(&begins.stdout);
    assert_eq!(begins.lines().count(), 5, "{begins}");
    assert!(begins.lines().all(|l| l.ends_with(&format!("papi.{PAGES}=0"))), "{begins}");

    let attrs = must(Command::new(prefix().join("bin/cali-query")).args(["--list-attributes", "-e"]).arg(&file));
    let attrs = String::from_utf8_lossy(&attrs.stdout);
    let pages = attrs.lines().find(|l| l.contains(&format!("=papi.{PAGES},"))).unwrap_or_else(|| panic!("{attrs}"));
    assert!(pages.contains("cali.attribute.type=uint"), "{pages}");
}

#[test]
fn a_counter_papi_cannot_count_is_named_on_one_line_and_left_out() {
    let config = format!("runtime-report,papi.counters=\"{PAGES},NO_SUCH_EVENT,PAPI_TOT_CYC\"");
    let out = run(&["work", "8"], &[("CALI_CONFIG", &config)]);
    let lines = caliper_lines(&out);
    let report = stderr(&out);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("== CALIPER: papi: cannot count \"NO_SUCH_EVENT\": ") && l.ends_with("; left out")),
        "{report}"
    );
    // The cycle counter needs a core PMU: without one it is named, with
    // one it has its column; never a silent zero.
    let cycles_named = lines.iter().any(|l| l.starts_with("== CALIPER: papi: cannot count \"PAPI_TOT_CYC\": "));
    let cycles_counted =
        report.contains(" PAPI_TOT_CYC ") && column(&report, "PAPI_TOT_CYC").iter().any(|(_, n)| *n > 0);
    assert!(cycles_named != cycles_counted, "{report}");
    assert_eq!(value(&column(&report, PAGES), "work"), 2048, "the other counters still count: {report}");
}

#[test]
fn without_any_countable_event_the_service_says_so_and_the_program_runs() {
    let out = run(&["work", "8"], &[("CALI_CONFIG", "runtime-report,papi.counters=NO_SUCH_EVENT")]);
    let lines = caliper_lines(&out);
    assert_eq!(lines.len(), 2, "{}", stderr(&out));
    assert!(lines[1].contains("papi: no event to count; papi disabled"), "{lines:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    assert!(stderr(&out).contains("thread_work"), "the report is still written");
}

#[test]
fn multiplexed_event_sets_count_too() {
    let config = format!("runtime-report,papi.counters=\"{PAGES},{FAULTS}\"");
    let out = run(&["work", "16"], &[("CALI_CONFIG", &config), ("CALI_PAPI_ENABLE_MULTIPLEXING", "true")]);
    let report = stderr(&out);
    assert!(caliper_lines(&out).is_empty(), "{report}");
    assert_eq!(value(&column(&report, PAGES), "work"), 4096, "{report}");
    assert!(value(&column(&report, FAULTS), "thread_work") >= 1024, "{report}");
}

/// In a mount namespace of its own (root only: the test is skipped
/// elsewhere), the program runs with every PAPI library hidden.
#[test]
fn a_missing_papi_library_is_one_line() {
    let hidden = std::fs::read_dir("/usr/lib/x86_64-linux-gnu")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("libpapi.so."))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let empty = install::scratch("papi", "nolib").join("empty");
    std::fs::write(&empty, "").unwrap();
    let mounts: Vec<String> =
        hidden.iter().map(|p| format!("mount --bind {} {} && ", empty.display(), p.display())).collect();
    let script = format!("{}exec \"$0\" work 8", mounts.concat());
    let probe = Command::new("unshare").args(["-m", "true"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: no mount namespace here (unshare -m needs root)");
        return;
    }
    prefix();
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .arg(program())
        .env("CALI_CONFIG", "runtime-report,papi.counters=PAPI_TOT_INS")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = caliper_lines(&out);
    assert_eq!(
        lines,
        ["== CALIPER: papi: PAPI library (libpapi.so.7 or .6) not found; papi disabled"],
        "{}",
        stderr(&out)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
}
