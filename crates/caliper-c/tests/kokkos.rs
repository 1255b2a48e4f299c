//! Kokkos programs through the Kokkos tools interface: a C driver that
//! loads the installed libcaliper with `dlopen` and calls its `kokkosp_*`
//! functions as Kokkos does (`tests/c/kokkos_driver.c`), under the configs
//! and each Kokkos service alone, and a real Kokkos program (Debian's
//! Trilinos Kokkos, Serial backend) run with the library as its tool.
//!
//! The compilers and Kokkos are installed by `scripts/test-all.sh`;
//! without them the tests fail, naming the script.

use caliper_testutil::install::{self, make_install, must, require_tools};
use caliper_testutil::report::{paths, rows};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The installed tree, once per test run.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(&["gcc", "g++", "make"]);
        make_install("kokkos", "install")
    })
}

fn library() -> PathBuf {
    prefix().join("lib/libcaliper.so")
}

/// The driver, built once per test process.
fn driver() -> &'static Path {
    static DRIVER: OnceLock<PathBuf> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let exe = install::scratch("kokkos", "driver").join("kokkos_driver");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/kokkos_driver.c");
        must(Command::new("gcc").args(["-O2", "-Wall", "-o"]).arg(&exe).arg(source).arg("-ldl"));
        exe
    })
}

/// Runs the driver with `mode` (empty for the usual calls) and the
/// settings `env`, none inherited; it must succeed.
fn run_driver(mode: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(driver());
    cmd.arg(library())
        .args(mode)
        .env_remove("CALI_CONFIG")
        .env_remove("CALI_SERVICES_ENABLE")
        .envs(env.iter().copied());
    let out = must(&mut cmd);
    assert!(String::from_utf8_lossy(&out.stdout).contains("done"), "{out:?}");
    out
}

/// The snapshot records of a `.cali` file as `cali-query -e` prints them,
/// each a map of attribute to value, for the records that have `attr`.
fn records_with(file: &Path, attr: &str) -> Vec<BTreeMap<String, String>> {
    let out = must(Command::new(prefix().join("bin/cali-query")).arg("-e").arg(file));
    let text = String::from_utf8(out.stdout).unwrap();
    let parse = |line: &str| -> BTreeMap<String, String> {
        line.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    text.lines().map(parse).filter(|r| r.contains_key(attr)).collect()
}

/// The `(region path, kernel_type)` of each region end in `file`.
fn region_ends(file: &Path) -> Vec<(String, String)> {
    let ends = records_with(file, "event.end#region");
    ends.iter().map(|r| (r["region"].clone(), r.get("kernel_type").cloned().unwrap_or_default())).collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// What the driver's kernels, fences and region give under kokkostime.
const DRIVER_ENDS: &[(&str, &str)] = &[
    ("solve/fill", "kokkos.parallel_for"),
    ("solve/fill", "kokkos.parallel_for"),
    ("solve/fill", "kokkos.parallel_for"),
    ("solve/sum", "kokkos.parallel_reduce"),
    ("solve/prefix", "kokkos.parallel_scan"),
    ("solve/deep_copy.fence", "kokkos.fence"),
    ("solve", "kokkos.user_region"),
    ("final.fence", "kokkos.fence"),
];

#[test]
fn runtime_report_with_profile_kokkos_shows_the_kernels_in_their_region() {
    let out = run_driver(&[], &[("CALI_CONFIG", "runtime-report,profile.kokkos,output=stdout")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows = rows(&stdout);
    assert_eq!(
        paths(&rows),
        ["final.fence", "solve", "solve/deep_copy.fence", "solve/fill", "solve/prefix", "solve/sum"],
        "{stdout}"
    );
    // Without the option, Kokkos' calls mark nothing: no report at all.
    let out = run_driver(&[], &[("CALI_CONFIG", "runtime-report,output=stdout")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kokkos_driver done\n");
}

#[test]
fn event_trace_with_trace_kokkos_records_kernel_types() {
    let file = install::scratch("kokkos", "event-trace").join("trace.cali");
    let config = format!("event-trace,trace.kokkos,output={}", file.display());
    run_driver(&[], &[("CALI_CONFIG", &config)]);
    assert_eq!(region_ends(&file), pairs(DRIVER_ENDS));
    // The begin of a kernel sees the kind of the region it is in.
    let begins = records_with(&file, "event.begin#region");
    let fill = begins.iter().find(|r| r["event.begin#region"] == "fill").unwrap();
    assert_eq!((fill["region"].as_str(), fill["kernel_type"].as_str()), ("solve", "kokkos.user_region"));
}

/// A trace of the driver under `services` (and `env`), read back.
fn trace_of(name: &str, services: &str, env: &[(&str, &str)]) -> PathBuf {
    let file = install::scratch("kokkos", name).join("trace.cali");
    let services = format!("event,recorder,timer,trace,{services}");
    let recorder = file.display().to_string();
    let mut settings = vec![("CALI_SERVICES_ENABLE", services.as_str()), ("CALI_RECORDER_FILENAME", &recorder)];
    settings.extend_from_slice(env);
    run_driver(&[], &settings);
    file
}

#[test]
fn kokkostime_alone_marks_kernels_and_no_deep_copies() {
    let file = trace_of("kokkostime", "kokkostime", &[]);
    assert_eq!(region_ends(&file), pairs(DRIVER_ENDS));
    assert!(records_with(&file, "kokkos.space").is_empty());
}

/// The deep copy's end record: its direction, size, and the views its
/// addresses fall in.
fn deep_copy_end(file: &Path) -> BTreeMap<String, String> {
    let copies = records_with(file, "event.end#kokkos.space");
    assert_eq!(copies.len(), 1, "{copies:#?}");
    copies.into_iter().next().unwrap()
}

#[test]
fn kokkoslookup_alone_records_deep_copies_with_their_views() {
    let file = trace_of("kokkoslookup", "kokkoslookup", &[]);
    assert!(region_ends(&file).is_empty(), "kernels marked without kokkostime");
    let copy = deep_copy_end(&file);
    let expected = [
        ("kokkos.space", "Host->Host"),
        ("kokkos.size", "8000"),
        ("kokkos.variable_name#kokkos.src.addr", "a"),
        ("kokkos.variable_size#kokkos.src.addr", "8000"),
        ("kokkos.variable_space#kokkos.src.addr", "Host"),
        ("kokkos.variable_name#kokkos.dst.addr", "b"),
        ("kokkos.variable_size#kokkos.dst.addr", "8000"),
        ("kokkos.variable_space#kokkos.dst.addr", "Host"),
    ];
    for (attr, value) in expected {
        assert_eq!(copy.get(attr).map(String::as_str), Some(value), "{attr} in {copy:#?}");
    }
    assert!(copy.contains_key("kokkos.src.addr") && copy.contains_key("kokkos.dst.addr"), "{copy:#?}");
    // Only the begin and end of the copy are snapshots, and only the end
    // carries its size.
    assert_eq!(records_with(&file, "kokkos.size").len(), 1);

    let named = trace_of("kokkoslookup-named", "kokkoslookup", &[("CALI_KOKKOSLOOKUP_ATTRIBUTES", "kokkos.dst.addr")]);
    let copy = deep_copy_end(&named);
    assert_eq!(copy.get("kokkos.variable_name#kokkos.dst.addr").map(String::as_str), Some("b"));
    assert!(!copy.contains_key("kokkos.variable_name#kokkos.src.addr"), "{copy:#?}");
}

#[test]
fn bad_arguments_are_one_line_each_and_the_program_goes_on() {
    let out = run_driver(&["null"], &[("CALI_CONFIG", "runtime-report,profile.kokkos,output=stdout")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "== CALIPER: kokkosp_parse_args: Unknown config or parameter: runtime-reprot",
            "== CALIPER: kokkosp_push_profile_region: NULL name",
            "== CALIPER: kokkosp_begin_parallel_for: NULL name",
        ]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(paths(&rows(&stdout)).contains(&"(null)/(null)"), "{stdout}");
}

/// Debian's Kokkos (Trilinos'), whose headers and library the real
/// program builds against.
const KOKKOS_INCLUDE: &str = "/usr/include/trilinos";

/// The real Kokkos program, built once.
fn kokkos_app() -> PathBuf {
    assert!(
        Path::new(KOKKOS_INCLUDE).join("Kokkos_Core.hpp").exists(),
        "missing libtrilinos-kokkos-dev: run scripts/test-all.sh once, which installs it"
    );
    let exe = install::scratch("kokkos", "app").join("app");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kokkos/app.cpp");
    must(
        Command::new("g++")
            .args(["-O2", "-std=c++14", "-I", KOKKOS_INCLUDE, "-o"])
            .arg(&exe)
            .arg(source)
            .args(["-ltrilinos_kokkoscore", "-ldl"]),
    );
    exe
}

/// A Kokkos program run with libcaliper as its tool (`KOKKOS_TOOLS_LIBS`
/// for Kokkos 4, `KOKKOS_PROFILE_LIBRARY` for the 3.x Debian has), the
/// config given as Kokkos' tool arguments.
#[test]
fn a_real_kokkos_program_is_profiled_through_its_tools_interface() {
    let exe = kokkos_app();
    let lib = library();
    let out = must(
        Command::new(&exe)
            .arg("--kokkos-tools-args=runtime-report,profile.kokkos,output=stdout")
            .env("KOKKOS_TOOLS_LIBS", &lib)
            .env("KOKKOS_PROFILE_LIBRARY", &lib)
            .env_remove("CALI_CONFIG"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("sum 499500\n"), "{stdout}");
    let found = paths(&rows(&stdout)).into_iter().map(str::to_string).collect::<Vec<_>>();
    for path in ["solve", "solve/fill", "solve/sum"] {
        assert!(found.iter().any(|p| p == path), "no {path} in {stdout}");
    }
    // The views' initialization kernels are Kokkos' own, named by the view.
    assert!(found.iter().any(|p| p.starts_with("solve/Kokkos::View::initialization")), "{stdout}");
}
