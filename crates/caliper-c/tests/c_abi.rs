//! libcaliper from C, C++ and Fortran: `make install` into a prefix, the
//! examples built against it through CMake and through pkg-config and run
//! under the built-in configs (their output checked against the
//! reference's fixtures, times aside), a C program calling every function
//! of `cali.h`, escaping, threads, and `LD_PRELOAD` into a program that
//! never calls Caliper.
//!
//! The compilers and build tools are installed by `scripts/test-all.sh`;
//! without them the tests fail, naming the script, rather than pass
//! vacuously.

use caliper_data::cali::read_records;
use caliper_data::{MetadataDb, Record, RecordKind};
use caliper_testutil::install::{self, make_install, must, require_tools};
use caliper_testutil::{fixture, workspace_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The tools the tests build with.
const TOOLS: &[&str] = &["gcc", "g++", "gfortran", "cmake", "pkg-config", "make"];

/// The installed tree: `make install PREFIX=target/c-abi/prefix`, once per
/// test run (a file lock keeps concurrent runs apart).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(TOOLS);
        make_install("c-abi", "install")
    })
}

/// A fresh scratch directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    install::scratch("c-abi", name)
}

/// `pkg-config <args> <packages>` against the installed tree, split.
fn pkg_config(args: &[&str]) -> Vec<String> {
    let out = must(Command::new("pkg-config").args(args).env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig")));
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(str::to_string).collect()
}

#[derive(Copy, Clone, Debug)]
enum Lang {
    C,
    Cxx,
    Fortran,
}

impl Lang {
    fn compiler(self) -> &'static str {
        match self {
            Lang::C => "gcc",
            Lang::Cxx => "g++",
            Lang::Fortran => "gfortran",
        }
    }
}

/// Compiles `source` against the installed library with the flags
/// pkg-config gives (`caliper`, or `caliper-fortran` for Fortran), and
/// `--as-needed` (the distribution's default, explicit for the link order).
fn build_with_pkg_config(lang: Lang, source: &Path, out: &Path) -> PathBuf {
    let package = if let Lang::Fortran = lang { "caliper-fortran" } else { "caliper" };
    let mut cmd = Command::new(lang.compiler());
    cmd.args(["-O2", "-Wall", "-Wl,--as-needed"]).arg("-o").arg(out).arg(source);
    cmd.args(pkg_config(&["--cflags", "--libs", package])).arg("-lpthread");
    cmd.arg(format!("-Wl,-rpath,{}", prefix().join("lib").display()));
    must(&mut cmd);
    out.to_path_buf()
}

/// The three examples, built once through CMake (`find_package(caliper)`)
/// and once through pkg-config: (how, language, executable).
fn examples() -> &'static [(&'static str, Lang, PathBuf)] {
    static BUILT: OnceLock<Vec<(&'static str, Lang, PathBuf)>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = workspace_root();
        let cmake_dir = scratch("cmake-build");
        install::cmake_build(&root.join("examples"), &cmake_dir, prefix(), &[]);
        let pc_dir = scratch("pkg-config-build");
        let sources = [
            (Lang::C, "c/cali-example.c", "cali-example"),
            (Lang::Cxx, "cxx/cxx-example.cpp", "cxx-example"),
            (Lang::Fortran, "fortran/fortran-example.f90", "fortran-example"),
        ];
        let mut built = Vec::new();
        for (lang, source, exe) in sources {
            built.push(("cmake", lang, cmake_dir.join(exe)));
            built.push((
                "pkg-config",
                lang,
                build_with_pkg_config(lang, &root.join("examples").join(source), &pc_dir.join(exe)),
            ));
        }
        built
    })
}

/// A command running a program built against the installed tree. The test
/// runner puts cargo's target directories on `LD_LIBRARY_PATH`, which
/// would win over the program's run path and load another libcaliper.
fn program(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env_remove("LD_LIBRARY_PATH");
    cmd
}

/// A test program run under `CALI_CONFIG=config` (or none), with no other
/// Caliper settings from the test's environment.
fn program_under(exe: &Path, config: Option<&str>) -> Command {
    let mut cmd = program(exe);
    match config {
        Some(config) => cmd.env("CALI_CONFIG", config),
        None => cmd.env_remove("CALI_CONFIG"),
    };
    cmd.env_remove("CALI_SERVICES_ENABLE").env_remove("CALI_LOG_VERBOSITY");
    cmd
}

/// Runs an example with a config: the C and Fortran ones take it as their
/// argument, the C++ one as `-P config` (and through CALI_CONFIG when
/// `via_env`).
fn run_example(lang: Lang, exe: &Path, config: &str, via_env: bool) -> Output {
    let mut cmd = program(exe);
    for key in ["CALI_CONFIG", "CALI_SERVICES_ENABLE", "CALI_CONFIG_PROFILE", "CALI_LOG_VERBOSITY"] {
        cmd.env_remove(key);
    }
    match (lang, via_env) {
        (_, true) => cmd.env("CALI_CONFIG", config),
        (Lang::Cxx, false) => cmd.args(["-P", config]),
        (_, false) => cmd.arg(config),
    };
    must(&mut cmd)
}

fn read(path: &Path) -> (MetadataDb, Vec<Record>) {
    let mut db = MetadataDb::new();
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records = read_records(&mut db, "test", &data).unwrap();
    (db, records)
}

/// A record as sorted `attr=value` pairs (nested values joined by `/`),
/// with the attributes `keep` accepts; only the names if `kept` says so.
fn expand_record(db: &MetadataDb, record: &Record, keep: &dyn Fn(&str) -> Keep) -> String {
    let mut pairs: Vec<String> = db
        .expand_paths(record)
        .into_iter()
        .filter_map(|(a, values)| {
            let name = db.attribute(a).unwrap().name().to_string();
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            match keep(&name) {
                Keep::Value => Some(format!("{name}={}", values.join("/"))),
                Keep::Name => Some(name),
                Keep::Not => None,
            }
        })
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// What of an attribute a comparison keeps.
enum Keep {
    Value,
    Name,
    Not,
}

/// The snapshot records of a `.cali` file, expanded.
fn records(path: &Path, keep: &dyn Fn(&str) -> Keep) -> Vec<String> {
    let (db, records) = read(path);
    records.iter().filter(|r| r.kind == RecordKind::Ctx).map(|r| expand_record(&db, r, keep)).collect()
}

/// The names of a file's globals, but for this implementation's own
/// version, which the reference's files lack.
fn global_names(path: &Path) -> Vec<String> {
    let (db, _) = read(path);
    let mut names: Vec<String> =
        db.expand(&db.globals()).iter().map(|(a, _)| db.attribute(*a).unwrap().name().to_string()).collect();
    names.retain(|n| n != "cali.caliper-rs.version");
    names.sort();
    names.dedup();
    names
}

/// Attributes compared by value: not times (they vary), not the version
/// and config string (they differ from the reference's run by design).
fn stable(name: &str) -> Keep {
    let varies =
        name.contains("time") || name.contains("avg.") || name == "cali.caliper.version" || name == "caliper.config";
    if varies { Keep::Not } else { Keep::Value }
}

/// A tree report's header and its rows' path labels.
fn report_shape(text: &str) -> (String, Vec<String>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().expect("a header").trim_end().to_string();
    let width = header.find("Time (E)").expect("a Time (E) column");
    (header.clone(), lines.map(|l| l[..width.min(l.len())].trim_end().to_string()).collect())
}

#[test]
fn examples_match_the_reference_under_the_built_in_configs() {
    let reference_report = std::fs::read_to_string(fixture("cxx-example.runtime-report.stdout.txt")).unwrap();
    for (how, lang, exe) in examples() {
        let what = format!("{lang:?} example built with {how}");
        let out = run_example(*lang, exe, "runtime-report,output=stdout", false);
        assert_eq!(
            report_shape(&String::from_utf8_lossy(&out.stdout)),
            report_shape(&reference_report),
            "{what}: runtime-report"
        );

        let dir = scratch(&format!("run-{how}-{lang:?}"));
        for (config, reference) in [
            ("hatchet-region-profile", "cxx-example.hatchet-region-profile.cali"),
            ("event-trace", "cxx-example.event-trace.cali"),
        ] {
            let file = dir.join(format!("{config}.cali"));
            run_example(*lang, exe, &format!("{config},output={}", file.display()), false);
            assert_eq!(records(&file, &stable), records(&fixture(reference), &stable), "{what}: {config}");
            let names = |p: &Path| records(p, &|_| Keep::Name);
            assert_eq!(names(&file), names(&fixture(reference)), "{what}: {config}: the same attributes");
            assert_eq!(global_names(&file), global_names(&fixture(reference)), "{what}: {config}: globals");
        }
    }
}

#[test]
fn the_cxx_example_reads_cali_config() {
    let (_, lang, exe) = examples().iter().find(|(how, l, _)| *how == "cmake" && matches!(l, Lang::Cxx)).unwrap();
    let out = run_example(*lang, exe, "runtime-report", true);
    let reference = std::fs::read_to_string(fixture("cxx-example.runtime-report.stdout.txt")).unwrap();
    assert_eq!(report_shape(&String::from_utf8_lossy(&out.stderr)), report_shape(&reference));
}

/// Compiles the C program `source` into `exe`, linked against the
/// installed `libcaliper.a` (checked: not the shared library).
fn build_static(source: &Path, exe: &Path) {
    let mut cmd = Command::new("gcc");
    cmd.arg("-o").arg(exe).arg(source);
    cmd.args(pkg_config(&["--cflags", "caliper"])).arg(prefix().join("lib/libcaliper.a"));
    cmd.args(pkg_config(&["--libs-only-l", "--static", "caliper"]).into_iter().filter(|l| l != "-lcaliper"));
    must(&mut cmd);
    let ldd = must(Command::new("ldd").arg(exe));
    assert!(!String::from_utf8_lossy(&ldd.stdout).contains("libcaliper.so"), "{}: not static", exe.display());
}

#[test]
fn the_static_library_links_and_measures() {
    let exe = scratch("static").join("cali-example-static");
    build_static(&workspace_root().join("examples/c/cali-example.c"), &exe);
    let out = run_example(Lang::C, &exe, "runtime-report,output=stdout", false);
    let reference = std::fs::read_to_string(fixture("c-example.runtime-report.stdout.txt")).unwrap();
    assert_eq!(report_shape(&String::from_utf8_lossy(&out.stdout)), report_shape(&reference));
}

/// The exported attribute ids are published by the first call, not by a
/// load-time constructor, which a static program can leave out of the
/// link: a static program that only begins and ends a region sees them.
#[test]
fn a_static_program_sees_the_exported_ids_after_its_first_call() {
    let exe = scratch("static-ids").join("static_ids");
    build_static(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/static_ids.c"), &exe);
    let out = program(&exe).env_remove("CALI_CONFIG").env_remove("CALI_SERVICES_ENABLE").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout == "ids published\n", "{stdout}{}", String::from_utf8_lossy(&out.stderr));
}

/// A program that loads `libcaliper.so` with `dlopen` instead of linking
/// it (`tests/c/loaded.c`) gets its report, its threads' regions
/// included: the library's thread-locals, which it reaches through TLS
/// descriptors (`.cargo/config.toml`), fall back to the dynamic loader's
/// lookup in a library loaded late.
#[test]
fn a_program_that_loads_the_library_with_dlopen_is_measured() {
    let library = prefix().join("lib/libcaliper.so");
    if cfg!(target_arch = "x86_64") {
        let relocations = must(Command::new("readelf").arg("-r").arg(&library));
        let relocations = String::from_utf8_lossy(&relocations.stdout);
        assert!(relocations.contains("R_X86_64_TLSDESC"), "no TLS descriptors in {}", library.display());
    }
    let dir = scratch("loaded");
    let exe = dir.join("loaded");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/loaded.c");
    must(Command::new("gcc").args(["-O2", "-Wall", "-o"]).arg(&exe).arg(source).args(["-ldl", "-lpthread"]));
    let out = program_under(&exe, Some("runtime-report,output=stdout")).arg(&library).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("loaded done\n"), "{stdout}");
    for row in ["loaded.main", "  loaded.work", "loaded.thread"] {
        assert_eq!(report_row(&stdout, row)[0], row.trim(), "{stdout}");
    }
}

/// Builds one of the C test programs in `tests/c`.
fn test_program(name: &str) -> PathBuf {
    // Built once per test process: two tests building the same program at
    // once would each remove the other's (a run then fails with "No such
    // file" or "Text file busy").
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, exe)) = built.iter().find(|(n, _)| n == name) {
        return exe.clone();
    }
    let dir = scratch(&format!("prog-{name}"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"));
    let exe = build_with_pkg_config(Lang::C, &source, &dir.join(name));
    built.push((name.to_string(), exe.clone()));
    exe
}

#[test]
fn every_function_of_cali_h_works_from_c() {
    let exe = test_program("api");
    let deleted_output = scratch("api-run").join("deleted.cali");
    let out = program(&exe)
        .env_remove("CALI_CONFIG")
        .env_remove("CALI_SERVICES_ENABLE")
        .env("API_DELETED_CHANNEL_OUTPUT", &deleted_output)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("api: all checks passed"), "{stdout}\n{stderr}");
    // Bad arguments are reported on one line each, and the program goes on.
    for line in stderr.lines() {
        assert!(line.starts_with("== CALIPER: "), "not a Caliper message: {line:?}");
    }
    for expected in [
        "cali_config_set(\"CALI_SERVICES_ENABLE\", \"event\") has no effect",
        "cali_create_attribute: invalid type 42",
        "cali_begin_int: attribute type mismatch",
        "cali_begin_int: invalid attribute id",
        "cali_channel_pull_snapshot: invalid channel id 12345",
        "cali_ConfigManager_start: no ConfigManager",
        "cali_begin_region: NULL region name",
        "cali_delete_channel: invalid channel id 999",
        "cali_unpack_snapshot: malformed snapshot buffer, call ignored",
        "cali_push_snapshot: 65 trigger entries, only the first 64 used",
    ] {
        assert!(stderr.contains(expected), "missing message {expected:?} in:\n{stderr}");
    }
    assert_data_tracking_silent(&stderr);
    assert!(!deleted_output.exists(), "a deleted channel wrote its output at exit");
    // The ConfigManager's report (runtime-report with region.count, on stdout).
    assert!(stdout.contains("Calls") && stdout.lines().any(|l| l.starts_with("managed ")), "{stdout}");
}

/// The data tracking calls were accepted without a word: no channel
/// tracks memory.
fn assert_data_tracking_silent(stderr: &str) {
    assert!(!stderr.contains("datatracker"), "{stderr}");
}

#[test]
fn the_cxx_config_manager_and_write_report_for_query_work() {
    let dir = scratch("manager-run");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx/manager.cpp");
    let exe = build_with_pkg_config(Lang::Cxx, &source, &dir.join("manager"));
    let out = program_under(&exe, None).arg(&dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("manager: all checks passed"), "{stdout}\n{stderr}");

    // write_report_for_query: the table, exactly; errors on one line each.
    let table = "--- table report\nregion      count \nouter/inner     6 \nouter           9 \n--- end\n";
    assert!(stdout.contains(table), "{stdout}");
    let mut lines = stderr.lines();
    assert_eq!(
        lines.next(),
        Some("== CALIPER: write_report_for_query(): query parse error: Expected argument for SELECT (at column 12)")
    );
    assert_eq!(lines.next(), Some("== CALIPER: write_report_for_query(): invalid channel id 4242"));
    assert_eq!(lines.count(), 0, "nothing else, the data tracking calls included: {stderr}");

    // ConfigManager::start/stop/flush: runtime-report on stdout (the
    // default parameter) has the regions of while the manager ran.
    let report = stdout.split("--- runtime-report\n").nth(1).and_then(|r| r.split("--- end").next()).unwrap_or("");
    assert_eq!(report_shape(report).1, ["managed", "  managed.inner"], "{stdout}");
    // The channel started on its own saw its own region, then the
    // manager's, like the others.
    let ends = |file: &str| {
        let end = |n: &str| if n == "event.end#region" { Keep::Value } else { Keep::Not };
        records(&dir.join(file), &end).into_iter().filter(|l| !l.is_empty()).collect::<Vec<_>>()
    };
    let managed = ["event.end#region=managed.inner", "event.end#region=managed"];
    assert_eq!(ends("test-trace.cali"), managed);
    assert_eq!(ends("loaded.cali"), [&["event.end#region=loaded.region"][..], &managed].concat());
}

/// A benchmark suite's own option (`"type": "boolean"`, category metric,
/// with let, select and group-by clauses) enabled in `spot`, through
/// `add_option_spec` and through `CALI_CONFIG` with `load()`: the profile
/// has the columns and globals of the reference's spot file, plus the
/// option's columns (aliased), its group-by key and its `opts:` global.
#[test]
fn a_suites_option_spec_adds_its_columns_to_a_spot_profile() {
    let dir = scratch("option-spec");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx/option_spec.cpp");
    let exe = build_with_pkg_config(Lang::Cxx, &source, &dir.join("option_spec"));
    let api = dir.join("api.cali");
    let out = program_under(&exe, None).arg("api").arg(&api).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));

    let spec = String::from_utf8(must(program_under(&exe, None).arg("spec")).stdout).unwrap();
    let spec_file = dir.join("kernel-info.json");
    std::fs::write(&spec_file, format!("{{ \"options\": [ {spec} ] }}")).unwrap();
    let env = dir.join("env.cali");
    let config = format!("load({}),spot(kernel_info,output={})", spec_file.display(), env.display());
    let out = program_under(&exe, Some(&config)).arg("run").output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    let reference = fixture("cxx-example.spot.cali");
    let names = |p: &Path| -> std::collections::BTreeSet<String> {
        records(p, &|_| Keep::Name).iter().flat_map(|r| r.split(',').map(str::to_string)).collect()
    };
    let option_columns = ["Complexity", "any#any#max#ProblemSize", "max#max#ps.k"];
    let mut columns = names(&reference);
    columns.remove("loop"); // the example's loop, which the suite lacks
    columns.extend(option_columns.map(String::from));
    // The example's own globals aside.
    let mut globals = global_names(&reference);
    globals.retain(|g| g != "caliper.config" && g != "iterations");
    globals.push("opts:kernel_info".to_string());

    for (file, extra_global) in [(&api, Some("suite")), (&env, None)] {
        let what = file.display();
        assert_eq!(names(file), columns, "{what}");
        let mut expected = globals.clone();
        expected.extend(extra_global.map(String::from));
        expected.sort();
        assert_eq!(global_names(file), expected, "{what}");

        let (db, _) = read(file);
        let globals = db.expand(&db.globals());
        let global = |name: &str| {
            globals.iter().find(|(a, _)| db.attribute(*a).unwrap().name() == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(global("opts:kernel_info").as_deref(), Some("true"), "{what}");
        let metrics = global("spot.metrics").unwrap();
        assert!(metrics.split(',').any(|m| m == "any#any#max#ProblemSize"), "{what}: {metrics}");
        assert!(metrics.split(',').any(|m| m == "max#max#ps.k"), "{what}: {metrics}");
        let size = db.attribute_by_name("any#any#max#ProblemSize").unwrap();
        assert!(size.is_asvalue(), "{what}");
        assert_eq!(db.metadata_by_name(size, "attribute.alias").map(|v| v.to_string()).as_deref(), Some("ProblemSize"));

        let kernel = |name: &str| if ["region", "Complexity"].contains(&name) { Keep::Value } else { Keep::Not };
        let kernels = records(file, &kernel);
        for row in ["Complexity=N,region=suite/stream", "Complexity=N_logN,region=suite/sort"] {
            assert!(kernels.iter().any(|r| r == row), "{what}: {row} in {kernels:?}");
        }
    }
}

#[test]
fn names_and_values_with_special_characters_survive_cali_and_json() {
    let exe = test_program("weird");
    let name = "weird name=a,b\\c \"q\" 's'\nnext";
    let value = "value=1,2\\3 \"x\"\nend";
    let dir = scratch("weird-run");

    let cali = dir.join("weird.cali");
    must(program(&exe).env("CALI_CONFIG", format!("event-trace,output={}", cali.display())));
    let (db, recs) = read(&cali);
    let globals = db.expand(&db.globals());
    assert!(
        globals.iter().any(|(a, v)| db.attribute(*a).unwrap().name() == name && v.to_string() == value),
        "global {name:?}={value:?} in {globals:?}"
    );
    let region = db.attribute_by_name("region").unwrap().id();
    assert!(
        recs.iter().any(|r| db.expand(r).iter().any(|(a, v)| *a == region && v.to_string() == value)),
        "region {value:?}"
    );

    let json = dir.join("weird.json");
    must(
        program(&exe)
            .env("CALI_CONFIG", format!("hatchet-region-profile,output.format=json-split,output={}", json.display())),
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc[name], serde_json::Value::from(value), "{doc}");
    assert!(doc["nodes"].as_array().unwrap().iter().any(|n| n["label"] == value), "{doc}");
}

#[test]
fn regions_on_pthreads_are_all_measured() {
    let exe = test_program("threads");
    let dir = scratch("threads-run");
    let file = dir.join("threads.cali");
    let out = must(program(&exe).env("CALI_CONFIG", format!("event-trace,output={}", file.display())));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "threads done\n");
    let lines = records(&file, &|n| if n == "event.end#region" { Keep::Value } else { Keep::Not });
    let count = |region: &str| lines.iter().filter(|l| **l == format!("event.end#region={region}")).count();
    assert_eq!((count("step"), count("worker"), count("main")), (400, 4, 1));
}

#[test]
fn the_trace_flush_policy_writes_every_snapshot_of_every_thread_once() {
    let exe = test_program("trace_threads");
    for threads in [1, 2, 4] {
        let dir = scratch(&format!("trace-flush-{threads}"));
        let out = must(
            program(&exe)
                .args([threads.to_string().as_str(), "5000"])
                .env("CALI_SERVICES_ENABLE", "event,trace,timer,recorder")
                .env("CALI_RECORDER_DIRECTORY", &dir)
                .env("CALI_TRACE_BUFFER_SIZE", "0.05")
                .env("CALI_TRACE_BUFFER_POLICY", "flush")
                .env_remove("CALI_CONFIG")
                .env_remove("CALI_LOG_VERBOSITY"),
        );
        // Nothing is logged: no stack mismatch, no dropped snapshot.
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(files.len() > 5, "{threads} threads: {} files", files.len());
        // A begin expands to nothing, an end to its region.
        let keep = |name: &str| if name == "event.end#region" { Keep::Value } else { Keep::Not };
        let lines: Vec<String> = files.iter().flat_map(|f| records(f, &keep)).collect();
        let (snapshots, ends) = (lines.len(), lines.iter().filter(|l| !l.is_empty()).count());
        assert_eq!((snapshots, ends), (threads * 5000 * 20, threads * 5000 * 10));
    }
}

/// A program that never calls Caliper, preloaded: `sample-report` asks
/// for samples, and its report reaches standard error even when the
/// program closed it (stdio or descriptor), with no sample landed (1 Hz,
/// a run of a few ms: an empty tree says so). `runtime-report` measures
/// regions, of which there are none: nothing is written, as by the
/// reference, which never starts in such a program. Without a
/// configuration nothing is written either.
#[test]
fn ld_preload_profiles_a_program_that_never_calls_caliper() {
    let dir = scratch("preload");
    let exe = dir.join("plain");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/plain.c");
    must(Command::new("gcc").arg("-o").arg(&exe).arg(source));
    let lib = prefix().join("lib/libcaliper.so");
    let run = |mode: &str, config: Option<&str>| {
        let out = program_under(&exe, config).arg(mode).env("LD_PRELOAD", &lib).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{mode}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "plain program\n", "{mode}");
        stderr
    };
    for mode in ["open", "close", "close2"] {
        let stderr = run(mode, Some("sample-report(sample.frequency=1)"));
        assert!(stderr.lines().any(|l| l.starts_with("Path")), "{mode}: no report in {stderr:?}");
    }
    assert_eq!(run("open", Some("runtime-report")), "");
    assert_eq!(run("open", None), "");
}

/// A program linked with libcaliper (kept though it calls nothing in it,
/// as a build that links a library for all its programs does) and never
/// calling Caliper: under `runtime-report` its output and exit code are
/// its own and nothing is written, to standard error or to the report's
/// file.
#[test]
fn a_linked_program_that_never_calls_caliper_writes_no_report() {
    let dir = scratch("linked-plain");
    let exe = dir.join("plain");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/plain.c");
    let mut cmd = Command::new("gcc");
    cmd.arg("-o").arg(&exe).arg(source).arg("-Wl,--no-as-needed");
    cmd.args(pkg_config(&["--cflags", "--libs", "caliper"]));
    must(cmd.arg(format!("-Wl,-rpath,{}", prefix().join("lib").display())));
    let needed = must(Command::new("readelf").arg("-d").arg(&exe));
    assert!(String::from_utf8_lossy(&needed.stdout).contains("libcaliper.so"), "not linked");
    let report = dir.join("report.txt");
    for config in ["runtime-report".to_string(), format!("runtime-report,output={}", report.display())] {
        let out = program_under(&exe, Some(&config)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{config}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "plain program\n", "{config}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{config}");
    }
    assert!(!report.exists());
}

/// `tests/c/hotspot.c` built with debug information in a scratch
/// directory `name`: the directory and the program.
fn hotspot(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let exe = dir.join("hotspot");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/hotspot.c");
    must(Command::new("gcc").args(["-O1", "-g", "-fno-inline", "-o"]).arg(&exe).arg(source));
    (dir, exe)
}

/// A program run with the installed libcaliper preloaded.
fn preloaded(exe: &Path) -> Command {
    let mut cmd = program(exe);
    cmd.env("LD_PRELOAD", prefix().join("lib/libcaliper.so"));
    cmd
}

/// Runs the hotspot program (built in scratch directory `name`) with
/// libcaliper preloaded and the settings `env`, recording to a trace;
/// checks that its output and exit code come through; returns the
/// program and the trace.
fn hotspot_trace(name: &str, env: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let (dir, exe) = hotspot(name);
    let trace = dir.join("samples.cali");
    let out = preloaded(&exe)
        .envs(env.iter().copied())
        .env("CALI_RECORDER_FILENAME", &trace)
        .env_remove("CALI_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hotspot done\n");
    (exe, trace)
}

/// `sampler` and `symbollookup` on a program that never calls Caliper,
/// preloaded: its output and exit code come through, and the samples land
/// in the function that takes the time (`leaf`), named with its module and
/// source line (a position-independent executable: the lookup undoes its
/// load address).
#[test]
fn ld_preload_samples_land_in_the_hot_function() {
    let (exe, trace) = hotspot_trace(
        "sampler",
        &[
            ("CALI_SERVICES_ENABLE", "sampler,symbollookup,trace,recorder"),
            ("CALI_SAMPLER_FREQUENCY", "1000"),
            ("CALI_SYMBOLLOOKUP_LOOKUP_LINE", "true"),
        ],
    );
    let query = "select source.function#cali.sampler.pc,module#cali.sampler.pc,sourceloc#cali.sampler.pc,count() \
                 group by source.function#cali.sampler.pc,module#cali.sampler.pc,sourceloc#cali.sampler.pc format expand";
    let counts = must(Command::new(prefix().join("bin/cali-query")).args(["-q", query]).arg(&trace));
    let (mut in_leaf, mut total) = (0u64, 0u64);
    for line in String::from_utf8_lossy(&counts.stdout).lines() {
        let field = |name: &str| line.split(',').find_map(|f| f.strip_prefix(name)).unwrap_or_default().to_string();
        let count = field("count=").parse::<u64>().unwrap();
        total += count;
        if field("source.function#cali.sampler.pc=") == "leaf" {
            assert_eq!(field("module#cali.sampler.pc="), exe.display().to_string(), "{line}");
            assert!(field("sourceloc#cali.sampler.pc=").contains("hotspot.c:"), "{line}");
            in_leaf += count;
        }
    }
    assert!(total > 100, "{total} samples in 0.5 s at 1 kHz");
    assert!(
        in_leaf * 100 >= total * 90,
        "{in_leaf} of {total} samples in leaf:\n{}",
        String::from_utf8_lossy(&counts.stdout)
    );
}

/// `runtime-report` of a program that marks no regions: its output and
/// exit code come through, and no report is written, not even its file,
/// nor a word about the columns no record has: nothing the config
/// measures happened. (Under `sample-report`, which asks for samples, the
/// same program gets a tree of them, below.)
#[test]
fn ld_preload_runtime_report_of_an_unannotated_program_writes_nothing() {
    let (out, report) = hotspot_report("unannotated", "runtime-report,output={report}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hotspot done\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(report, None);
}

/// Runs the hotspot program (built in scratch directory `name`), preloaded,
/// under `CALI_CONFIG` `config` with its report in a file (`{report}` in
/// `config` stands for its path); checks the exit code; returns the
/// program's output and the report, if one was written.
fn hotspot_report(name: &str, config: &str) -> (std::process::Output, Option<String>) {
    let (dir, exe) = hotspot(name);
    let report = dir.join("report.txt");
    let config = config.replace("{report}", &report.display().to_string());
    let out = preloaded(&exe).env("CALI_CONFIG", config).env_remove("CALI_SERVICES_ENABLE").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    (out, std::fs::read_to_string(&report).ok())
}

/// `sample-report(callpath)` on the same program: the samples' call stacks
/// as a tree, `main > outer > inner > leaf` holding nearly all of them.
#[test]
fn ld_preload_call_paths_of_the_samples_make_the_tree() {
    let (_, text) = hotspot_report("callpath", "sample-report(callpath,sample.frequency=1000,output={report})");
    let text = text.expect("a report");
    let names: Vec<(usize, &str, u64)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next().unwrap_or_default();
            (l.len() - l.trim_start().len(), name, words.next().and_then(|w| w.parse().ok()).unwrap_or(0))
        })
        .collect();
    let at = |name: &str| names.iter().position(|(_, n, _)| *n == name).unwrap_or_else(|| panic!("{name}:\n{text}"));
    let chain = [at("main"), at("outer"), at("inner"), at("leaf")];
    for pair in chain.windows(2) {
        assert_eq!(names[pair[1]].0, names[pair[0]].0 + 2, "each a child of the one before:\n{text}");
    }
    let total: u64 = names.iter().map(|(_, _, n)| n).sum();
    assert!(
        names[chain[3]].2 * 100 >= total * 90,
        "{} of {total} in main > outer > inner > leaf:\n{text}",
        names[chain[3]].2
    );
}

/// Threads a program that never calls Caliper starts are sampled too
/// (libcaliper's `pthread_create` prepares them), each under its own
/// routine, and the runtime's own thread is not.
#[test]
fn ld_preload_samples_the_threads_the_program_starts() {
    let dir = scratch("sampled-threads");
    let exe = dir.join("threads_hot");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/threads_hot.c");
    must(Command::new("gcc").args(["-O1", "-g", "-fno-inline", "-o"]).arg(&exe).arg(source).arg("-lpthread"));
    let report = dir.join("report.txt");
    let config = format!("sample-report(callpath,sample.frequency=1000,output={})", report.display());
    let out = preloaded(&exe).env("CALI_CONFIG", config).env_remove("CALI_SERVICES_ENABLE").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "threads done\n");
    let text = std::fs::read_to_string(&report).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for worker in ["worker_a", "worker_b"] {
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with(worker))
            .unwrap_or_else(|| panic!("{worker}:\n{text}"));
        let samples = lines.get(at + 1).and_then(|l| l.split_whitespace().nth(1)).and_then(|n| n.parse::<u64>().ok());
        assert!(lines[at + 1].trim_start().starts_with("spin") && samples > Some(0), "{worker}:\n{text}");
    }
    assert!(!text.contains("thread_start"), "the runtime's own thread is not sampled:\n{text}");
}

/// Samples in a C++ shared library: named by the library's module and the
/// demangled function (`hot::leaf(double)`), nearly all of them.
#[test]
fn ld_preload_samples_in_a_shared_library_are_named_by_it() {
    let dir = scratch("sampled-library");
    let cxx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx");
    let lib = dir.join("libhot.so");
    must(Command::new("g++").args(["-O1", "-g", "-fPIC", "-shared", "-o"]).arg(&lib).arg(cxx.join("hotlib.cpp")));
    let exe = dir.join("hotmain");
    must(Command::new("g++").args(["-O1", "-g", "-o"]).arg(&exe).arg(cxx.join("hotmain.cpp")).arg(&lib));
    let report = dir.join("report.txt");
    let config = format!("sample-report(source.module,sample.frequency=1000,output={})", report.display());
    let out = preloaded(&exe).env("CALI_CONFIG", config).env_remove("CALI_SERVICES_ENABLE").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "library done\n");
    let text = std::fs::read_to_string(&report).unwrap();
    // The counts are right-aligned under the header "Samples" (function
    // names may have spaces).
    let end = text.lines().next().and_then(|h| h.find("Samples")).expect("a header") + "Samples".len();
    let (mut in_leaf, mut total) = (0u64, 0u64);
    for line in text.lines().skip(1) {
        let samples: u64 = line.get(..end).and_then(|l| l.split_whitespace().last()?.parse().ok()).unwrap_or(0);
        total += samples;
        if line.starts_with("hot::leaf(double)") {
            assert!(line.contains(&lib.display().to_string()), "{line}");
            in_leaf += samples;
        }
    }
    assert!(total > 100 && in_leaf * 100 >= total * 95, "{in_leaf} of {total} in hot::leaf(double):\n{text}");
}

#[test]
fn the_c_perftest_runs() {
    let dir = scratch("perftest");
    let source = workspace_root().join("examples/c/c-annotation-perftest.c");
    let exe = build_with_pkg_config(Lang::C, &source, &dir.join("c-annotation-perftest"));
    let out = must(program(&exe).args(["-x", "1", "-w", "4", "-d", "3", "-i", "100", "-P", "aggregate,event,timer"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("600 updates") && text.contains("ns per update"), "{text}");
}

/// A small random number generator for the moments the fault tests pick
/// (xorshift, seeded from the clock; the seed is in failure messages).
struct Moments(u64);

impl Moments {
    fn new() -> Moments {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        Moments(u64::from(nanos) | 1)
    }

    /// A moment from 0 to `max_ms` milliseconds.
    fn next(&mut self, max_ms: u64) -> std::time::Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        std::time::Duration::from_micros(self.0 % (max_ms * 1000))
    }
}

/// Waits up to `limit` for a child; `None` (and the child killed) if it is
/// still running then.
fn wait_bounded(child: &mut std::process::Child, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// SIGTERM at a random moment to a program whose handler calls `exit()`
/// while its threads annotate: the flush at exit runs on a thread that may
/// be inside an update or hold a runtime lock. Every run must end, with
/// the handler's exit code, and either write its report or say in one line
/// why not.
#[test]
fn exit_from_a_signal_handler_never_hangs() {
    use std::io::BufRead;
    let exe = test_program("faults");
    let dir = scratch("signal-exit");
    let mut moments = Moments::new();
    let seed = moments.0;
    let (mut whole, mut partial, mut none) = (0, 0, 0);
    for (threads, runs) in [(0, 100), (2, 40)] {
        for run in 0..runs {
            let report = dir.join(format!("report-{threads}-{run}.txt"));
            let mut child = program(&exe)
                .args(["exit-in-handler", &threads.to_string()])
                .env("CALI_CONFIG", format!("runtime-report,output={}", report.display()))
                .env_remove("CALI_SERVICES_ENABLE")
                .env_remove("CALI_LOG_VERBOSITY")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut ready = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
            assert_eq!(ready, "ready\n");
            // Right after start (the runtime initialising) up to 40 ms in.
            std::thread::sleep(moments.next(if run % 4 == 0 { 2 } else { 40 }));
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let status = wait_bounded(&mut child, std::time::Duration::from_secs(10));
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
            let context = format!("{threads} threads, run {run} (seed {seed}):\n{stderr}");
            assert_eq!(status.and_then(|s| s.code()), Some(7), "hung or crashed: {context}");
            assert!(!stderr.contains("internal error"), "{context}");
            // A report with every thread's data, or a reason: the exiting
            // thread was interrupted inside an update (its data is left
            // out, and with it every record when it was the only thread:
            // no report then) or inside the runtime (no report).
            let text = std::fs::read_to_string(&report).unwrap_or_default();
            if text.starts_with("Path") && stderr.is_empty() {
                assert!(text.contains("setup"), "{context}{text}");
                whole += 1;
            } else if text.starts_with("Path") {
                assert!(stderr.contains("their data is not included"), "{context}");
                partial += 1;
            } else {
                let why = ["not writing the report", "their data is not included"];
                assert!(why.iter().any(|w| stderr.contains(w)), "no report and no reason: {context}");
                none += 1;
            }
        }
    }
    eprintln!("signal exits: {whole} whole reports, {partial} without the interrupted thread, {none} left out");
}

/// A forked child writes its own report, as the reference's does: the
/// regions measured before the fork and its own; the parent's has its own
/// and not the child's.
#[test]
fn a_forked_child_writes_its_own_report() {
    let exe = test_program("faults");
    let dir = scratch("fork-report");
    let out = must(
        program(&exe)
            .arg("fork")
            .current_dir(&dir)
            .env("CALI_CONFIG", "runtime-report")
            .env_remove("CALI_SERVICES_ENABLE")
            .env_remove("CALI_LOG_VERBOSITY"),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "child exit=5\n");
    // Both reports go to standard error, the child's first (the parent
    // waits for it): their region columns.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reports: Vec<Vec<&str>> = stderr
        .split("Path")
        .skip(1)
        .map(|report| report.lines().skip(1).map(|l| l.split_whitespace().next().unwrap()).collect())
        .collect();
    assert_eq!(reports, [["main", "before_fork", "child_work"], ["main", "before_fork", "parent_work"]], "{stderr}");
}

/// The memory benchmark (`tests/c/memory.c`) builds and runs: the report
/// has the regions of its threads, all exited before the flush, and of its
/// many names.
#[test]
fn the_memory_benchmark_runs() {
    let exe = test_program("memory");
    for (args, expected) in [(["threads", "20"], ["worker", "step"]), (["names", "100"], ["name.0", "name.99"])] {
        let out = program(&exe)
            .args(args)
            .env("CALI_CONFIG", "runtime-report,output=stdout")
            .env_remove("CALI_SERVICES_ENABLE")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains("done"), "{args:?}: {stdout}");
        for region in expected {
            assert!(stdout.lines().any(|l| l.split_whitespace().next() == Some(region)), "{args:?}: {stdout}");
        }
    }
}

/// A C++ program written for the reference builds with only caliper/cali.h
/// (which brings the standard streams, maps and strings) and may use the
/// scope macros twice in one scope; its regions nest as written.
#[test]
fn cxx_programs_of_the_reference_shapes_build_and_nest() {
    let dir = scratch("shapes");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx/shapes.cpp");
    let exe = build_with_pkg_config(Lang::Cxx, &source, &dir.join("shapes"));
    let out = program_under(&exe, Some("runtime-report,output=stdout")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("shapes: done 1"), "{stdout}\n{stderr}");
    assert!(stderr.contains("shapes: two scopes"), "{stderr}");
    let report = &stdout[stdout.find("Path").expect("a report")..];
    let names = report_shape(report).1;
    let expected =
        ["main", "  main.scope", "    first", "      second", "    outer.loop", "      body", "        body.inner"];
    assert_eq!(names, expected, "{stdout}");

    // The asynchronous event reaches the event trace, with its duration.
    let trace = dir.join("trace.cali");
    let config = format!("event-trace,output={}", trace.display());
    let out = program_under(&exe, Some(&config)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("data=async.begin") && text.contains("data=async.end"), "{text}");
    assert_eq!(text.matches("data=shapes.async").count(), 2, "a begin and an end node:\n{text}");
    assert!(text.contains("data=event.duration.ns"), "{text}");
}

/// `cali::Annotation` as programs written for the reference use it
/// (`tests/cxx/annotation.cpp`): a `Guard` made from
/// `cali::Annotation("x").set(true)`, chained begins and sets, values of
/// the common types, the scope and loop macros twice in one scope, the
/// classes made by conversion (`Guard g = ann.begin(1)`). It builds, and
/// each call is one event of the trace, in order.
#[test]
fn cxx_annotations_chain_and_guard_temporaries() {
    let dir = scratch("annotation");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx/annotation.cpp");
    let exe = build_with_pkg_config(Lang::Cxx, &source, &dir.join("annotation"));
    let trace = dir.join("trace.cali");
    let out = program_under(&exe, None)
        .env("CALI_SERVICES_ENABLE", "event,trace,recorder")
        .env("CALI_RECORDER_FILENAME", &trace)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "annotation: done\n");
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let keep = |name: &str| match name.starts_with("event.") && !name.ends_with("#region") {
        true => Keep::Value,
        false => Keep::Not,
    };
    let events: Vec<String> = records(&trace, &keep).into_iter().filter(|l| !l.is_empty()).collect();
    let expected = [
        "event.set#ann.flag=true",
        "event.end#ann.flag=true",
        "event.begin#ann.phase=outer",
        "event.begin#ann.phase=inner",
        "event.end#ann.phase=inner",
        "event.end#ann.phase=outer",
        "event.begin#ann.level=1",
        "event.set#ann.level=2",
        "event.set#ann.level=3",
        "event.end#ann.level=3",
        "event.begin#ann.name=text",
        "event.end#ann.name=text",
        "event.begin#ann.name=text",
        "event.end#ann.name=text",
        "event.set#ann.ratio=0.500000",
        "event.set#ann.ratio=0.250000",
        "event.end#ann.ratio=0.250000",
        "event.begin#ann.on=true",
        "event.begin#loop=ann.first",
        "event.begin#iteration#ann.first=0",
        "event.end#iteration#ann.first=0",
        "event.begin#iteration#ann.first=1",
        "event.end#iteration#ann.first=1",
        "event.end#loop=ann.first",
        "event.begin#loop=ann.second",
        "event.begin#iteration#ann.second=0",
        "event.end#iteration#ann.second=0",
        "event.end#loop=ann.second",
        "event.begin#loop=ann.converted",
        "event.end#loop=ann.converted",
        "event.end#ann.on=true",
    ];
    assert_eq!(events, expected);
    let regions = |l: &String| l.strip_prefix("event.begin#region=").map(str::to_string);
    let keep = |name: &str| if name == "event.begin#region" { Keep::Value } else { Keep::Not };
    let begun: Vec<String> = records(&trace, &keep).iter().filter_map(regions).collect();
    assert_eq!(begun, ["main", "flagged", "flagged.inner", "converted.scope", "converted.function"]);
}

/// With `output=stdout` (or stderr), the report keeps its place after the
/// program's own stdio output, which a pipe or a file buffers until exit.
#[test]
fn reports_come_after_the_programs_own_buffered_output() {
    let exe = test_program("order");
    for stream in ["stdout", "stderr"] {
        let out = program_under(&exe, Some(&format!("runtime-report,output={stream}"))).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(if stream == "stdout" { &out.stdout } else { &out.stderr }).into_owned();
        let program_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("order: ")).collect();
        let report = text.find("Path").unwrap_or_else(|| panic!("no report on {stream}:\n{text}"));
        let last_program_line = program_lines.last().and_then(|l| text.find(l)).unwrap_or(0);
        assert!(last_program_line < report, "{stream}: the report came before the program's output:\n{text}");
        assert!(text[report..].contains("order.work"), "{text}");
    }
}

/// `tests/c/allocs.c` and the library it loads late (`tests/c/late.c`),
/// built against the installed tree once: (program, library).
fn allocs() -> (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let library = scratch("allocs").join("liblate.so");
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/late.c");
            must(Command::new("gcc").args(["-O2", "-shared", "-fPIC", "-o"]).arg(&library).arg(source));
            (test_program("allocs"), library)
        })
        .clone()
}

/// A report's row of region `name` (its label as printed, indent
/// included), split into cells.
fn report_row<'a>(report: &'a str, name: &str) -> Vec<&'a str> {
    let row =
        report.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}:\n{report}"));
    row.split_whitespace().collect()
}

/// `alloc.stats` (sysalloc wrapping malloc and calloc at run time, and
/// allocstats): each region's allocations exactly, those of a library the
/// program loads with `dlopen` after start-up included, and the most bytes
/// live during each region (the program's, plus what the C library keeps,
/// a few bytes); `mem.highwatermark` gives the same in MB.
#[test]
fn alloc_stats_report_the_allocations_of_each_region() {
    let (exe, library) = allocs();
    let out = program_under(&exe, Some("runtime-report,alloc.stats,output=stdout")).arg(&library).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let header = report_row(&stdout, "Path");
    let columns = ["Mem", "HWM", "Alloc", "tMax", "Alloc", "count", "Avg", "Bytes/alloc", "Max", "Bytes/alloc"];
    assert_eq!(header[header.len() - columns.len()..], columns, "{stdout}");
    // Time (E), Time (I) and their shares come first.
    let stats =
        |name: &str| -> Vec<f64> { report_row(&stdout, name)[5..].iter().map(|c| c.parse().unwrap()).collect() };
    let near = |value: f64, exact: f64| value >= exact && value < exact + 4096.0;
    let phase = stats("phase");
    assert!(near(phase[0], 1_500_000.0), "{stdout}");
    assert_eq!(phase[1..], [1_500_000.0, 2.0, 750_000.0, 1_000_000.0], "{stdout}");
    let inner = stats("  inner");
    assert!(near(inner[0], 1_800_000.0), "{stdout}");
    assert_eq!(inner[1..], [300_000.0, 1.0, 300_000.0, 300_000.0], "{stdout}");
    assert_eq!(stats("late")[1..], [40_000.0, 1.0, 40_000.0, 40_000.0], "{stdout}");
    assert_eq!(stats("quiet").len(), 1, "no allocation in quiet: {stdout}");

    let out =
        program_under(&exe, Some("runtime-report,mem.highwatermark,output=stdout")).arg(&library).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let megabytes = |name: &str| report_row(&stdout, name).last().unwrap().parse::<f64>().unwrap();
    assert!((1.8..1.81).contains(&megabytes("  inner")) && (1.5..1.51).contains(&megabytes("phase")), "{stdout}");
}

/// `alloc` with the data tracking calls: the array the program names is a
/// snapshot with its label, id and shape when tracked and when freed, and
/// an address attribute of class `memoryaddress` that points into it is
/// resolved to its label, id and element index (`&array[5][2]` of 8 x 4).
#[test]
fn alloc_tracks_named_arrays_and_resolves_addresses_into_them() {
    let (exe, library) = allocs();
    let trace = scratch("alloc-trace").join("trace.cali");
    let out = program_under(&exe, None)
        .args([library.as_os_str(), "track".as_ref()])
        .env("CALI_SERVICES_ENABLE", "alloc,event,trace,recorder")
        .env("CALI_ALLOC_RESOLVE_ADDRESSES", "true")
        .env("CALI_RECORDER_FILENAME", &trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keep = |name: &str| match name.starts_with("alloc.") || name.starts_with("mem.") || name == "region" {
        true => Keep::Value,
        false => Keep::Not,
    };
    let lines = records(&trace, &keep);
    let has_all = |pairs: &[&str]| lines.iter().any(|l| pairs.iter().all(|p| l.split(',').any(|f| f == *p)));
    let shape = ["alloc.uid=1", "alloc.elem_size=8", "alloc.num_elems=32", "alloc.total_size=256"];
    assert!(has_all(&[&["mem.alloc=array"][..], &shape].concat()), "{lines:#?}");
    assert!(has_all(&[&["mem.free=array"][..], &shape].concat()), "{lines:#?}");
    let resolved = ["alloc.label#array.address=array", "alloc.uid#array.address=1", "alloc.index#array.address=22"];
    assert!(has_all(&[&["region=lookup"][..], &resolved].concat()), "{lines:#?}");
}

/// The names of `tests/data/reference-exports.txt` (see its header for
/// where they come from).
fn reference_exports() -> std::collections::BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-exports.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| l.split('#').next().unwrap().trim()).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Whether `name` occurs as a whole identifier in `text`.
fn mentions(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| !text[..at].ends_with(ident) && !text[at + name.len()..].starts_with(ident))
}

/// The text of every header under `dir`, recursively.
fn header_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text += &header_text(&path);
        } else if path.extension().is_some_and(|e| e == "h") {
            text += &std::fs::read_to_string(&path).unwrap();
        }
    }
    text
}

/// libcaliper.so exports every C symbol of the reference's libcaliper,
/// and no other `cali_` symbol that the installed headers do not declare
/// (the extensions this implementation's headers build on).
#[test]
fn libcaliper_exports_the_reference_symbols_and_only_declared_extensions() {
    let lib = prefix().join("lib/libcaliper.so");
    let nm = must(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib));
    let exported: std::collections::BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|name| name.starts_with("cali_"))
        .map(str::to_string)
        .collect();
    let reference = reference_exports();
    assert!(reference.len() > 130, "{} names read", reference.len());
    let missing: Vec<&String> = reference.difference(&exported).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    let headers = header_text(&prefix().join("include/caliper"));
    let undeclared: Vec<&String> = exported.difference(&reference).filter(|name| !mentions(&headers, name)).collect();
    assert!(undeclared.is_empty(), "exported, but in no installed header: {undeclared:?}");
}

/// The C wrappers of the reference's classes through their own headers:
/// the program checks the region profile's times against what it ran;
/// the ConfigManager's report has the scope's and the annotation's rows;
/// bad capsules are refused on one line each.
#[test]
fn the_c_wrappers_of_the_classes_work() {
    let exe = test_program("wrappers");
    let out = program_under(&exe, None).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("wrappers: all checks passed"), "{stdout}\n{stderr}");
    let report = &stdout[stdout.find("Path").unwrap_or_else(|| panic!("no report:\n{stdout}"))..];
    let report = report.split("wrappers:").next().unwrap();
    assert_eq!(
        report_shape(report).1,
        ["wrap.outer", "  wrap.inner", "    slow", "wrap.unmeasured", "wrap.again"],
        "{stdout}"
    );
    let expected = [
        "== CALIPER: cali_ScopeAnnotation_end: no ScopeAnnotation (NULL or deleted), call ignored",
        "== CALIPER: cali_BufferedRegionProfile_total_region_time: no BufferedRegionProfile (NULL or deleted), \
         call ignored",
        "== CALIPER: cali_BufferedRegionProfile_region_time: not a BufferedRegionProfile capsule, call ignored",
        "== CALIPER: cali_Annotation_set_int: no Annotation (NULL or deleted), call ignored",
        "== CALIPER: cali_Annotation_new: NULL string argument, call ignored",
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
}

/// The header-only C++ `cali::RegionProfile` and
/// `cali::BufferedRegionProfile`: the program checks the times they read
/// back against what it ran, and nothing is logged.
#[test]
fn the_cxx_region_profiles_read_region_times() {
    let dir = scratch("profile-run");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx/profile.cpp");
    let exe = build_with_pkg_config(Lang::Cxx, &source, &dir.join("profile"));
    let out = program_under(&exe, None).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout == "profile: all checks passed\n", "{stdout}\n{stderr}");
    assert_eq!(stderr, "");
}

/// The Fortran module's derived types: a program with a ConfigManager
/// (runtime-report), a ScopeAnnotation, a nested string Annotation, an
/// integer Annotation and a BufferedRegionProfile. The report has the
/// scope and the nested annotation's rows; the times the program read
/// back add up and are at least the time it spent in each region.
#[test]
fn the_fortran_types_annotate_and_read_region_times() {
    let dir = scratch("fortran-types");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fortran/types.f90");
    let exe = build_with_pkg_config(Lang::Fortran, &source, &dir.join("types"));
    let out = program_under(&exe, None).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("types: done"), "{stdout}\n{stderr}");
    assert_eq!(stderr, "");

    let report: String =
        stdout.lines().filter(|l| !l.starts_with("time ") && !l.starts_with("types:")).collect::<Vec<_>>().join("\n");
    assert_eq!(report_shape(&report).1, ["f.outer", "  heavy"], "{stdout}");

    // "time <what> <region> <seconds>"
    let times: std::collections::HashMap<(String, String), f64> = stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.strip_prefix("time ")?.split_whitespace().collect();
            Some(((f[0].to_string(), f[1].to_string()), f[2].parse().ok()?))
        })
        .collect();
    let t = |what: &str, region: &str| {
        *times.get(&(what.to_string(), region.to_string())).unwrap_or_else(|| panic!("{what} {region}:\n{stdout}"))
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs() + b.abs());
    // f.outer: 10 ms of its own and 3 steps of 5 ms; heavy: 20 ms.
    assert!(t("exclusive", "f.outer") >= 0.025 && t("exclusive", "heavy") >= 0.020, "{stdout}");
    assert!(close(t("exclusive", "f.outer") + t("exclusive", "heavy"), t("exclusive", "total.regions")), "{stdout}");
    assert!(t("exclusive", "total.regions") <= t("exclusive", "total.profile"), "{stdout}");
    assert!(close(t("inclusive", "f.outer"), t("exclusive", "total.regions")), "{stdout}");
    assert!(close(t("inclusive", "heavy"), t("exclusive", "heavy")), "{stdout}");
    assert!(t("f.step", "2") >= 0.005 && t("f.step", "f.outer") == 0.0, "{stdout}");
    assert_eq!(t("cleared", "total.profile"), 0.0, "{stdout}");
}

/// The Fortran programs of `tests/fortran`, built once through CMake
/// (`tests/fortran/CMakeLists.txt`: `find_package(caliper 2.10 REQUIRED)`,
/// the target `caliper`) and once through pkg-config, both linked with
/// `--as-needed`: (how, the directory of the executables).
fn fortran_builds() -> &'static [(&'static str, PathBuf)] {
    static BUILT: OnceLock<Vec<(&'static str, PathBuf)>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fortran");
        let cmake_dir = scratch("fortran-cmake");
        install::cmake_build(&sources, &cmake_dir, prefix(), &[]);
        let pc_dir = scratch("fortran-pkg-config");
        for program in ["shapes", "types"] {
            build_with_pkg_config(Lang::Fortran, &sources.join(format!("{program}.f90")), &pc_dir.join(program));
        }
        vec![("cmake", cmake_dir), ("pkg-config", pc_dir)]
    })
}

/// caliper_mod in the shapes of programs written for the reference
/// (`tests/fortran/shapes.f90`): objects read through intent(in) dummies,
/// second handles from set_instance compared with .eq./.ne. and deleted
/// before their owners, the constructors under the types' names, an
/// optional argument left out. It builds through CMake and pkg-config
/// with `--as-needed` (calling only the module's procedures, the program
/// needs libcaliper only through them) and measures its regions.
#[test]
fn fortran_programs_of_the_reference_shapes_build_link_and_run() {
    for (how, dir) in fortran_builds() {
        let out = program_under(&dir.join("shapes"), None).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stdout.ends_with("shapes: done\n"), "{how}: {stdout}\n{stderr}");
        let (messages, report): (Vec<&str>, Vec<&str>) = stdout
            .lines()
            .filter(|l| *l != "shapes: done")
            .partition(|l| l.starts_with("error: ") || l.starts_with("time "));
        assert_eq!(
            messages,
            ["error: Unknown config or parameter: no-such-config", "time s.outer>0: T", "time total>=s.outer: T"],
            "{how}: {stdout}"
        );
        assert_eq!(report_shape(&report.join("\n")).1, ["s.outer", "  s.inner", "    s.leaf"], "{how}: {stdout}");
    }
}

/// The Fortran types' program (`tests/fortran/types.f90`) built through
/// CMake runs as the one built through pkg-config does.
#[test]
fn the_fortran_types_program_built_with_cmake_runs() {
    let (_, dir) = &fortran_builds()[0];
    let out = program_under(&dir.join("types"), None).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("types: done"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Build systems see the version of the Caliper API implemented, so that
/// a project asking for a 2.x Caliper finds this one: pkg-config's
/// version (the CMake package's is checked by `fortran_builds`).
#[test]
fn pkg_config_reports_the_caliper_api_version() {
    assert_eq!(pkg_config(&["--modversion", "caliper", "caliper-fortran"]), ["2.15.0", "2.15.0"]);
    pkg_config(&["--atleast-version=2.10", "caliper"]);
    pkg_config(&["--atleast-version=2.10", "caliper-fortran"]);
}

/// A program sees one version: `CALIPER_VERSION` of caliper-config.h,
/// `cali_caliper_version()` and the `cali.caliper.version` of its records
/// are the Caliper API version; the channel global
/// `cali.caliper-rs.version` is this implementation's own.
#[test]
fn a_program_sees_the_caliper_api_version_and_the_files_carry_both() {
    let exe = test_program("version");
    let trace = scratch("version-run").join("trace.cali");
    let out = program_under(&exe, Some(&format!("event-trace,output={}", trace.display()))).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2.15.0 2.15.0\n", "{}", String::from_utf8_lossy(&out.stderr));
    let (db, _) = read(&trace);
    let globals: Vec<String> = db
        .expand(&db.globals())
        .iter()
        .map(|(a, v)| (db.attribute(*a).unwrap().name().to_string(), v))
        .filter(|(name, _)| name.ends_with(".version"))
        .map(|(name, v)| format!("{name}={v}"))
        .collect();
    assert_eq!(
        globals,
        ["cali.caliper.version=2.15.0".to_string(), format!("cali.caliper-rs.version={}", env!("CARGO_PKG_VERSION"))]
    );
    let versions = |name: &str| if name.ends_with(".version") { Keep::Value } else { Keep::Not };
    let records = records(&trace, &versions);
    assert!(!records.is_empty() && records.iter().all(|r| r == "cali.caliper.version=2.15.0"), "{records:?}");
}

/// `libcaliper.so` has the reference's soname, `libcaliper.so.2`,
/// installed as `libcaliper.so.2.15.0` with the links programs need: a
/// program linked with `-lcaliper` (here through pkg-config) records the
/// soname, and so does the Fortran module's library, which resolves its
/// own calls into libcaliper.
#[test]
fn libcaliper_has_the_soname_libcaliper_so_2_and_its_links() {
    let lib = prefix().join("lib");
    let dynamic = |file: &Path| -> String {
        String::from_utf8(must(Command::new("readelf").arg("-d").arg(file)).stdout).unwrap()
    };
    let tagged = |text: &str, tag: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(&format!("({tag})")))
            .filter_map(|l| Some(l.split_once('[')?.1.trim_end_matches(']').to_string()))
            .collect()
    };
    for name in ["libcaliper", "libcaliper-fortran"] {
        let real = lib.join(format!("{name}.so.2.15.0"));
        assert_eq!(tagged(&dynamic(&real), "SONAME"), [format!("{name}.so.2")]);
        assert_eq!(
            std::fs::read_link(lib.join(format!("{name}.so.2"))).unwrap(),
            Path::new(&format!("{name}.so.2.15.0"))
        );
        assert_eq!(std::fs::read_link(lib.join(format!("{name}.so"))).unwrap(), Path::new(&format!("{name}.so.2")));
    }
    assert!(tagged(&dynamic(&lib.join("libcaliper-fortran.so")), "NEEDED").contains(&"libcaliper.so.2".to_string()));
    assert!(tagged(&dynamic(&test_program("version")), "NEEDED").contains(&"libcaliper.so.2".to_string()));
}

/// The reference's low-level C++ classes (tests/cxx/runtime.cpp): its own
/// checks pass, and what it measured reaches its outputs: the trace
/// channel's `.cali` file, its controller's report, the ConfigManager's
/// runtime-report, and its log lines.
#[test]
fn the_cxx_runtime_classes_measure_and_write() {
    let dir = scratch("runtime-run");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cxx/runtime.cpp");
    let exe = build_with_pkg_config(Lang::Cxx, &source, &dir.join("runtime"));
    let out = program_under(&exe, None).arg(&dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("runtime: all checks passed"), "{stdout}\n{stderr}");

    // The ChannelController subclass: counts per region, not the region
    // begun after stop().
    let counts = "--- count report\nPath     count \ncounted      6 \n  nested     3 \n--- end\n";
    assert!(stdout.contains(counts), "{stdout}");
    // A ConfigManager controller driven through the ChannelController API.
    let report = stdout.split("--- runtime-report\n").nth(1).and_then(|r| r.split("--- end").next()).unwrap_or("");
    assert_eq!(report_shape(report).1, ["reported"], "{stdout}");

    // Log(0) lines and perror, not the Log(1) line; the memory regions go
    // to the data tracker without a word (no channel tracks memory).
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "== CALIPER: runtime: an error line 42",
            "== CALIPER: runtime: open: No such file or directory",
            "== CALIPER: runtime: a debug line, shown",
            "== CALIPER: [cxx] runtime: a prefixed line"
        ],
        "{stderr}"
    );

    // The trace channel wrote on flush_and_write: the event snapshots of
    // begin/end in order, the pushed trigger, the async event; not the
    // pulled snapshot.
    let keep = |n: &str| match n {
        "cxx.phase" | "event.begin#cxx.phase" | "event.end#cxx.phase" | "cxx.tag" => Keep::Value,
        _ => Keep::Not,
    };
    assert_eq!(
        records(&dir.join("runtime.cali"), &keep),
        [
            "event.begin#cxx.phase=outer",
            "cxx.phase=outer,event.begin#cxx.phase=inner",
            "cxx.phase=outer/inner,event.end#cxx.phase=inner",
            "cxx.phase=outer,event.end#cxx.phase=outer",
            "cxx.tag=pushed",
            "event.begin#cxx.phase=pulled",
            "cxx.phase=pulled,event.end#cxx.phase=pulled",
            "cxx.tag=async",
        ]
    );
    assert!(global_names(&dir.join("runtime.cali")).contains(&"cali.channel".to_string()));
}

/// Every C++ header of the reference that this library installs compiles
/// when included alone (strict C++11 warnings as errors), and the C ones
/// as C too.
#[test]
fn every_installed_header_compiles_alone() {
    let dir = scratch("headers-alone");
    let include = prefix().join("include");
    let cxx = [
        "caliper/Caliper.h",
        "caliper/ChannelController.h",
        "caliper/SnapshotRecord.h",
        "caliper/callback.hpp",
        "caliper/ConfigManager.h",
        "caliper/Annotation.h",
        "caliper/AsyncEvent.h",
        "caliper/cali.h",
        "caliper/cali-manager.h",
        "caliper/cali_cxx_runtime.h",
        "caliper/common/Attribute.h",
        "caliper/common/CaliperMetadataAccessInterface.h",
        "caliper/common/Entry.h",
        "caliper/common/Log.h",
        "caliper/common/Node.h",
        "caliper/common/OutputStream.h",
        "caliper/common/RuntimeConfig.h",
        "caliper/common/Variant.h",
    ];
    let c = ["caliper/cali.h", "caliper/cali-manager.h", "caliper/cali_cxx_runtime.h"];
    let builds =
        cxx.iter().map(|h| (Lang::Cxx, h, "cpp", "-std=c++11")).chain(c.iter().map(|h| (Lang::C, h, "c", "-std=c99")));
    for (i, (lang, header, ext, std)) in builds.enumerate() {
        let source = dir.join(format!("alone{i}.{ext}"));
        std::fs::write(&source, format!("#include <{header}>\n")).unwrap();
        must(
            Command::new(lang.compiler())
                .args([std, "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only", "-I"])
                .arg(&include)
                .arg(&source),
        );
    }
}

/// `io.bytes` (the io service wrapping open, write, pwrite, close, fopen,
/// fread and fclose at run time): each region's bytes exactly; and in an
/// event trace, each call is an `io.region` (`write`, `read`, `metadata`)
/// with the file's file system and mount point.
#[test]
fn io_bytes_report_the_bytes_each_region_moved() {
    let exe = test_program("io");
    let dir = scratch("io-run");
    let file = dir.join("data.bin");
    let out = program_under(&exe, Some("runtime-report,io.bytes,output=stdout")).arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.starts_with("io: read 21000 bytes\n"), "{stdout}");
    assert!(report_row(&stdout, "Path").ends_with(&["Bytes", "read", "Bytes", "written"]), "{stdout}");
    assert_eq!(report_row(&stdout, "write_phase")[5..], ["13288"], "{stdout}");
    assert_eq!(report_row(&stdout, "read_phase")[5..], ["21000"], "{stdout}");

    let trace = dir.join("io.cali");
    let out = program_under(&exe, None)
        .arg(&file)
        .env("CALI_SERVICES_ENABLE", "event,io,trace,recorder")
        .env("CALI_RECORDER_FILENAME", &trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keep = |name: &str| match name.starts_with("io.") || name == "region" || name.starts_with("event.end") {
        true => Keep::Value,
        false => Keep::Not,
    };
    let ends: Vec<String> = records(&trace, &keep).into_iter().filter(|l| l.contains("event.end#io.region")).collect();
    let written: Vec<&String> = ends.iter().filter(|l| l.contains("io.region=write")).collect();
    assert_eq!(written.len(), 4, "{ends:#?}");
    let bytes = |l: &String| l.split(',').find_map(|f| f.strip_prefix("io.bytes.written=")).unwrap_or("").to_string();
    assert_eq!(written.iter().map(|l| bytes(l)).collect::<Vec<_>>(), ["4096", "4096", "4096", "1000"]);
    let (filesystem, mount) = filesystem_of(&dir);
    for line in &written {
        assert!(line.contains(&format!("io.filesystem={filesystem}")), "{line}");
        assert!(line.contains(&format!("io.mount.point={mount}")), "{line}");
        assert!(line.contains("region=write_phase"), "{line}");
    }
    assert!(ends.iter().any(|l| l.contains("io.region=read") && l.contains("io.bytes.read=21000")), "{ends:#?}");
    let metadata = ends.iter().filter(|l| l.contains("io.region=metadata")).count();
    assert_eq!(metadata, 4, "open, close, fopen, fclose: {ends:#?}");
}

/// `io` in the default channel (`CALI_SERVICES_ENABLE`) beside an event
/// trace: only a channel with `io` among its services takes snapshots of
/// `io.region`, so the trace has them with `trace.io` and not without it
/// (the program's own regions it has either way), and the default channel
/// has them.
#[test]
fn io_regions_reach_only_the_channels_that_trace_io() {
    let exe = test_program("io");
    let dir = scratch("io-channels");
    let io_events = |trace: &Path| {
        let keep = |name: &str| if name.starts_with("event.") { Keep::Value } else { Keep::Not };
        let events = records(trace, &keep);
        let io = events.iter().filter(|l| l.contains("#io.region=")).count();
        (io, events.iter().filter(|l| l.contains("event.begin#region=")).count())
    };
    for (option, expected) in [("false", 0), ("true", 20)] {
        let (trace, default) = (dir.join(format!("trace-{option}.cali")), dir.join(format!("default-{option}.cali")));
        let config = format!("event-trace(trace.io={option},output={})", trace.display());
        let out = program_under(&exe, Some(&config))
            .arg(dir.join("data.bin"))
            .env("CALI_SERVICES_ENABLE", "event,io,trace,recorder")
            .env("CALI_RECORDER_FILENAME", &default)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "io: read 21000 bytes\n");
        // A begin and an end of each of the 10 calls (open, 3 writes,
        // pwrite, close, fopen, 2 freads, fclose); the two phases.
        assert_eq!(io_events(&trace), (expected, 2), "trace.io={option}");
        assert_eq!(io_events(&default), (20, 2), "trace.io={option}");
    }
}

/// `io.read.bandwidth` and `io.write.bandwidth` under `runtime-report`
/// (whose timer counts seconds): each I/O kind's bytes per second of its
/// calls, as Mbit/s, on the rows that moved bytes.
#[test]
fn io_bandwidth_is_reported_in_seconds_based_reports() {
    let exe = test_program("io");
    let file = scratch("io-bandwidth").join("data.bin");
    let config = "runtime-report,io.read.bandwidth,io.write.bandwidth,output=stdout";
    let out = program_under(&exe, Some(config)).arg(&file).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stderr.is_empty(), "{stdout}\n{stderr}");
    let header = report_row(&stdout, "Path").join(" ");
    assert!(header.ends_with("I/O Read Mbit/s Bytes read I/O Write Mbit/s Bytes written"), "{stdout}");
    // The " |-" rows of one region: path, 4 time columns, then
    // (I/O, Read Mbit/s, [Bytes read]), (I/O, Write Mbit/s, [Bytes written]):
    // the read rate is the 7th field, the write rate the one before the
    // written bytes.
    let rate = |kind: &str, bytes: &str| -> f64 {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(" |-") && l.contains(&format!(" {kind} ")) && l.trim_end().contains(bytes))
            .unwrap_or_else(|| panic!("{kind} {bytes}:\n{stdout}"));
        let fields: Vec<&str> = row.split_whitespace().collect();
        let column = if kind == "read" { 6 } else { fields.len() - 2 };
        fields[column].parse().unwrap_or_else(|_| panic!("{row}"))
    };
    assert!(rate("read", "21000") > 0.0, "{stdout}");
    assert!(rate("write", "13288") > 0.0, "{stdout}");
}

/// The file system type and mount point of `dir`, from `df`.
fn filesystem_of(dir: &Path) -> (String, String) {
    let out = must(Command::new("df").args(["--output=fstype,target"]).arg(dir));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().nth(1).unwrap_or_default();
    let (fstype, target) = line.trim().split_once(char::is_whitespace).unwrap_or_default();
    (fstype.to_string(), target.trim().to_string())
}

/// `pthread`: each thread the program starts sets its `pthread.id`
/// (`pthread_self()`, distinct per thread) as an event before its routine
/// runs, with `pthread.is_master=false`; the main thread has
/// `pthread.is_master=true`. `main_thread_only` keeps the main thread's
/// regions only.
#[test]
fn pthread_marks_threads_and_main_thread_only_keeps_the_main_thread() {
    let exe = test_program("threads");
    let out = must(&mut program_under(&exe, Some("runtime-report,main_thread_only,output=stdout")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(report_shape(stdout.trim_start_matches("threads done\n")).1, ["main"], "{stdout}");

    let trace = scratch("pthread-run").join("threads.cali");
    let out = program_under(&exe, None)
        .env("CALI_SERVICES_ENABLE", "event,pthread,trace,recorder")
        .env("CALI_RECORDER_FILENAME", &trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keep = |name: &str| match name.starts_with("pthread.") || name == "event.set#pthread.id" {
        true => Keep::Value,
        false => Keep::Not,
    };
    let lines = records(&trace, &keep);
    let field = |l: &str, name: &str| l.split(',').find_map(|f| f.strip_prefix(name)).map(str::to_string);
    let sets: Vec<&String> = lines.iter().filter(|l| l.contains("event.set#pthread.id=")).collect();
    assert_eq!(sets.len(), 4, "one per thread started: {lines:#?}");
    let mut ids: Vec<String> = sets.iter().filter_map(|l| field(l, "pthread.id=")).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{sets:#?}");
    for line in &lines {
        let id = field(line, "pthread.id=").unwrap_or_default();
        let master = field(line, "pthread.is_master=");
        assert_eq!(master.as_deref(), Some(if ids.contains(&id) { "false" } else { "true" }), "{line}");
    }
    assert_eq!(lines.iter().filter(|l| l.contains("pthread.is_master=true")).count(), 2, "main's begin and end");
}

/// The system services' benchmark (`tests/c/sysbench.c`, the figures in
/// the README) runs preloaded under each config it is measured with, and
/// the program's output and exit code come through.
#[test]
fn the_system_services_benchmark_runs() {
    let dir = scratch("sysbench");
    let exe = dir.join("sysbench");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/sysbench.c");
    must(Command::new("gcc").args(["-O2", "-o"]).arg(&exe).arg(source));
    for (mode, config) in [
        ("malloc", "runtime-report,alloc.stats"),
        ("hold", "runtime-report,mem.highwatermark"),
        ("read", "runtime-report,io.bytes"),
    ] {
        let out = preloaded(&exe).args([mode, "1000"]).env("CALI_CONFIG", config).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.starts_with(&format!("sysbench {mode}: ")), "{config}: {stdout}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("Path"), "{config}: no report");
    }
}

/// `alloc.stats` with threads and fork (`tests/c/allocs_mt.c`): the
/// allocations of four threads in one region add up (4 x 1,000 of 100
/// bytes), and a forked child, whose wrapped `malloc` is inherited, reports
/// its own allocation in its own report (written first: the parent waits).
#[test]
fn alloc_stats_count_every_thread_and_a_forked_child() {
    let exe = test_program("allocs_mt");
    let out = program_under(&exe, Some("runtime-report,alloc.stats,output=stderr")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "allocs_mt: child exited 0\n");
    let reports: Vec<&str> = stderr.split("Path").skip(1).collect();
    assert_eq!(reports.len(), 2, "{stderr}");
    // tMax, count, average and largest size, after the time columns and
    // the high-water mark.
    let (child, parent) = (report_row(reports[0], "child"), report_row(reports[1], "worker"));
    assert_eq!(child[6..], ["5000", "1", "5000.000000", "5000"], "{stderr}");
    assert_eq!(parent[7..], ["4000", "100.000000", "100"], "{stderr}");
    let tally: u64 = parent[6].parse().unwrap();
    assert!((100..=400).contains(&tally), "at most one block per thread live at once: {stderr}");
}

/// A program that goes on working after measurement ends
/// (`tests/c/late_work.c`: `cali_release`, then CPU time): the sampling
/// services' timers and events stop with the measurement, so no signal
/// of theirs reaches the program afterwards (a `SIGIO` from a sampling
/// event still counting once the program's own default action was back
/// ended it).
#[test]
fn ld_preload_sampling_stops_before_the_program_goes_on_after_release() {
    let dir = scratch("late-work");
    let exe = dir.join("late_work");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/late_work.c");
    must(Command::new("gcc").args(["-O1", "-g", "-o"]).arg(&exe).arg(source).arg("-ldl"));
    let event_sampling = [
        ("CALI_SERVICES_ENABLE", "libpfm,trace,recorder"),
        ("CALI_LIBPFM_EVENTS", "task-clock"),
        ("CALI_LIBPFM_SAMPLE_PERIOD", "1000000"),
    ];
    let sampler = [("CALI_SERVICES_ENABLE", "sampler,trace,recorder"), ("CALI_SAMPLER_FREQUENCY", "1000")];
    let sample_report = [("CALI_CONFIG", "sample-report,output=/dev/null")];
    for env in [&event_sampling[..], &sampler, &sample_report] {
        let mut cmd = preloaded(&exe);
        cmd.env_remove("CALI_SERVICES_ENABLE").env("CALI_RECORDER_FILENAME", dir.join("trace.cali"));
        let out = cmd.envs(env.iter().copied()).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{env:?}: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "late work done\n", "{env:?}");
    }
}

/// `libpfm` event sampling on a program that never calls Caliper,
/// preloaded: every millisecond of `task-clock` is a sample with the
/// interrupted instruction (named by symbollookup), the thread, the time
/// (increasing) and the processor; nearly all land in `leaf`, and the
/// program's output and exit code come through.
#[test]
fn ld_preload_event_samples_land_in_the_hot_function() {
    let (_, trace) = hotspot_trace(
        "event-sampling",
        &[
            ("CALI_SERVICES_ENABLE", "libpfm,symbollookup,trace,recorder"),
            ("CALI_LIBPFM_EVENTS", "task-clock"),
            ("CALI_LIBPFM_SAMPLE_PERIOD", "1000000"),
            ("CALI_LIBPFM_SAMPLE_ATTRIBUTES", "ip,time,tid,cpu"),
        ],
    );
    let keep = |name: &str| match name.starts_with("libpfm.") || name == "source.function#libpfm.ip" {
        true => Keep::Value,
        false => Keep::Not,
    };
    let samples: Vec<String> =
        records(&trace, &keep).into_iter().filter(|l| l.contains("libpfm.event_sample_name=task-clock")).collect();
    let field = |line: &str, name: &str| line.split(',').find_map(|f| f.strip_prefix(name)).map(str::to_string);
    assert!(samples.len() > 100, "{} samples of 0.5 s of CPU at one per ms", samples.len());
    let in_leaf = samples.iter().filter(|l| field(l, "source.function#libpfm.ip=").as_deref() == Some("leaf")).count();
    assert!(in_leaf * 100 >= samples.len() * 90, "{in_leaf} of {} samples in leaf", samples.len());
    let tids: std::collections::BTreeSet<String> = samples.iter().filter_map(|l| field(l, "libpfm.tid=")).collect();
    assert_eq!(tids.len(), 1, "one thread: {tids:?}");
    let times: Vec<u64> = samples.iter().filter_map(|l| field(l, "libpfm.time=")?.parse().ok()).collect();
    assert_eq!(times.len(), samples.len());
    assert!(times.windows(2).all(|w| w[0] < w[1]), "sample times increase");
    assert!(samples.iter().all(|l| field(l, "libpfm.cpu=").is_some()));
}
