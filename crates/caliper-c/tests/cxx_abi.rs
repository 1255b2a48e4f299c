//! libcaliper as a binary drop-in for programs built against the
//! reference Caliper: C and C++ programs compiled against the reference's
//! headers (`tests/reference-headers`, whose C++ classes have their
//! members out of line) and linked with `-lcaliper` from `make install`
//! run with the installed library, under `CALI_CONFIG` and with a
//! ConfigManager of their own; the library exports the C++ API of those
//! headers, and no other C++ symbol.
//!
//! The compilers are installed by `scripts/test-all.sh`; without them the
//! tests fail, naming the script, rather than pass vacuously.

use caliper_data::cali::read_records;
use caliper_data::{MetadataDb, RecordKind};
use caliper_testutil::install::{self, make_install, must, require_tools};
use caliper_testutil::report;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The installed tree: `make install PREFIX=target/cxx-abi/prefix`, once
/// per test run.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(&["gcc", "g++", "make", "nm", "pkg-config"]);
        make_install("cxx-abi", "install")
    })
}

/// How a test program links libcaliper.
#[derive(Clone, Copy, Debug)]
enum Link {
    /// `-lcaliper`: the installed libcaliper.so, found through its run path.
    Shared,
    /// The installed libcaliper.a, with the libraries pkg-config names for
    /// a static link.
    Static,
}

/// Compiles `tests/reference-programs/<source>` against the reference's
/// headers and links it with the installed libcaliper, as a program built
/// against the reference is linked.
fn build(source: &str, link: Link) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (compiler, stem) = match source.strip_suffix(".cpp") {
        Some(stem) => ("g++", stem),
        None => ("gcc", source.trim_end_matches(".c")),
    };
    let lib = prefix().join("lib");
    let exe = install::scratch("cxx-abi", &format!("build-{stem}-{link:?}")).join(stem);
    let mut cmd = Command::new(compiler);
    cmd.args(["-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(manifest.join("tests/reference-headers"))
        .arg("-o")
        .arg(&exe)
        .arg(manifest.join("tests/reference-programs").join(source));
    match link {
        Link::Shared => {
            cmd.arg(format!("-L{}", lib.display())).arg("-lcaliper").arg(format!("-Wl,-rpath,{}", lib.display()))
        }
        Link::Static => {
            let pc = must(
                Command::new("pkg-config")
                    .args(["--libs-only-l", "--static", "caliper"])
                    .env("PKG_CONFIG_PATH", lib.join("pkgconfig")),
            );
            let libs = String::from_utf8(pc.stdout).unwrap();
            cmd.arg(lib.join("libcaliper.a")).args(libs.split_whitespace().filter(|l| *l != "-lcaliper"))
        }
    };
    must(&mut cmd);
    exe
}

/// The C++ program, built once.
fn annotate() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build("annotate.cpp", Link::Shared))
}

/// Runs a program with `CALI_CONFIG=config` (or none) and arguments, and
/// no other Caliper settings from the test's environment nor the
/// `LD_LIBRARY_PATH` of the test runner (which would load another
/// libcaliper than the installed one).
fn run(exe: &Path, config: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args).env_remove("LD_LIBRARY_PATH");
    for key in ["CALI_CONFIG", "CALI_SERVICES_ENABLE", "CALI_CONFIG_PROFILE", "CALI_LOG_VERBOSITY"] {
        cmd.env_remove(key);
    }
    if let Some(config) = config {
        cmd.env("CALI_CONFIG", config);
    }
    must(&mut cmd)
}

/// The paths of a runtime-report's tree, as `report::rows` reads them.
fn tree(text: &str) -> Vec<String> {
    report::rows(text).into_iter().map(|r| r.path).collect()
}

/// The region tree of the C++ program: the functions of
/// CALI_CXX_MARK_FUNCTION, a cali::Loop and its copy, the loop of
/// CALI_CXX_MARK_LOOP_BEGIN and the scope of CALI_CXX_MARK_SCOPE in each
/// iteration.
const ANNOTATE_TREE: [&str; 5] =
    ["main", "main/ref.loop", "main/work", "main/work/work.loop", "main/work/work.loop/work.body"];

#[test]
fn a_cxx_program_built_against_the_reference_runs_under_cali_config() {
    let out = run(annotate(), Some("runtime-report"), &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "variants: 42 17 7.500000 3 1 9 2\n");
    assert_eq!(tree(&String::from_utf8_lossy(&out.stderr)), ANNOTATE_TREE);
}

/// The same program linked with the static library, which carries the C++
/// API too.
#[test]
fn a_static_cxx_program_built_against_the_reference_runs_under_cali_config() {
    let exe = build("annotate.cpp", Link::Static);
    let ldd = must(Command::new("ldd").arg(&exe));
    assert!(!String::from_utf8_lossy(&ldd.stdout).contains("libcaliper"), "not static");
    let out = run(&exe, Some("runtime-report"), &[]);
    assert_eq!(tree(&String::from_utf8_lossy(&out.stderr)), ANNOTATE_TREE);
}

/// Each call of the annotation classes is its event in the trace, in
/// order: the Guard's end, the copy's set, the chained begin and set, the
/// assigned annotation's end, a Variant's value, a typed buffer, a loop
/// ended once whatever its copies, the loop's iterations.
#[test]
fn the_reference_annotation_classes_make_the_events_of_the_trace() {
    let trace = install::scratch("cxx-abi", "trace").join("trace.cali");
    run(annotate(), Some(&format!("event-trace,output={}", trace.display())), &[]);
    let mut db = MetadataDb::new();
    let records = read_records(&mut db, "trace", &std::fs::read(&trace).unwrap()).unwrap();
    let mut events = Vec::new();
    for record in records.iter().filter(|r| r.kind == RecordKind::Ctx) {
        for (attr, value) in db.expand(record) {
            let name = db.attribute(attr).unwrap().name();
            if name.starts_with("event.")
                && (name.contains("#ref.") || name.contains("region") || name.contains("loop"))
            {
                events.push(format!("{name}={value}"));
            }
        }
    }
    let expected = [
        "event.begin#region=main",
        "event.begin#ref.phase=setup",
        "event.set#ref.phase=setup.more",
        "event.end#ref.phase=setup.more",
        "event.begin#ref.level=1",
        "event.set#ref.level=2",
        "event.end#ref.level=2",
        "event.begin#ref.ratio=0.500000",
        "event.set#ref.ratio=0.250000",
        "event.end#ref.ratio=0.250000",
        "event.begin#ref.bytes=9",
        "event.begin#ref.flag=true",
        "event.end#ref.flag=true",
        "event.begin#loop=ref.loop",
        "event.end#loop=ref.loop",
        "event.begin#region=work",
        "event.begin#loop=work.loop",
        "event.begin#iteration#work.loop=0",
        "event.begin#region=work.body",
        "event.end#region=work.body",
        "event.end#iteration#work.loop=0",
        "event.begin#iteration#work.loop=1",
        "event.begin#region=work.body",
        "event.end#region=work.body",
        "event.end#iteration#work.loop=1",
        "event.begin#iteration#work.loop=2",
        "event.begin#region=work.body",
        "event.end#region=work.body",
        "event.end#iteration#work.loop=2",
        "event.end#loop=work.loop",
        "event.end#region=work",
        "event.end#ref.bytes=9",
        "event.end#region=main",
    ];
    assert_eq!(events, expected);
    // The metadata of the annotation's constructor is on its attribute.
    let level = db.attribute_by_name("ref.level").expect("ref.level");
    assert_eq!(db.metadata_by_name(level, "ref.meta").map(|v| v.to_string()).as_deref(), Some("42"));
}

/// The program's own ConfigManager: what it says about config strings and
/// configs, its controllers, and the report it writes at flush.
#[test]
fn a_cxx_program_built_against_the_reference_drives_a_config_manager() {
    let out = run(annotate(), None, &["runtime-report"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().take_while(|l| !l.contains("Path ")).collect();
    let expected = [
        "check: [] [Unknown config or parameter: no-such-option]",
        "runtime-report available: 1",
        "documentation: runtime-report",
        "extra: answer=42 error=0",
        "error: Unknown config or parameter: no-such-config",
        "channel: runtime-report active=0",
        "variants: 42 17 7.500000 3 1 9 2",
        "started: runtime-report active=1",
    ];
    assert_eq!(lines, expected, "{stdout}");
    // set_default_parameter("output", "stdout") took effect.
    assert_eq!(tree(&stdout), ANNOTATE_TREE, "{stdout}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A program's own ChannelController runs a channel of its settings:
/// created inactive on the first start, active until stopped, its report
/// written at flush. (A class derived from it does not link: its
/// `on_create` would get the reference's Caliper and Channel.)
#[test]
fn a_cxx_program_built_against_the_reference_runs_its_own_channel_controller() {
    let out = run(&build("controller.cpp", Link::Shared), None, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..3],
        ["own: instantiated=0", "started: active=1 services=event,trace,report", "stopped: active=0"],
        "{stdout}"
    );
    let report: Vec<&str> = lines[3..].iter().copied().filter(|l| l.contains("region=")).collect();
    assert_eq!(report, ["region=own.region,count=1"], "{stdout}");
}

/// A C program compiled against the reference's cali.h and macros.
#[test]
fn a_c_program_built_against_the_reference_runs_under_cali_config() {
    let out = run(&build("regions.c", Link::Shared), Some("runtime-report,output=stdout"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("0\n1\n2\n"), "{stdout}");
    assert_eq!(tree(&stdout), ["main", "main/c.loop", "main/c.loop/c.body", "main/c.after"]);
}

/// The plugin of `tests/plugin` (see plugin.h), built against the
/// installed headers, and the C program that loads it after libcaliper.
fn plugin() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin");
    let dir = install::scratch("cxx-abi", "plugin");
    let (include, lib) = (prefix().join("include"), prefix().join("lib"));
    for (half, opt) in [("make", "-O0"), ("use", "-O2")] {
        must(
            Command::new("g++")
                .args([opt, "-fPIC", "-Wall", "-Werror", "-c", "-I"])
                .arg(&include)
                .arg(source.join(format!("{half}.cpp")))
                .arg("-o")
                .arg(dir.join(format!("{half}.o"))),
        );
    }
    must(
        Command::new("g++")
            .args(["-shared", "-o"])
            .arg(dir.join("libplugin.so"))
            .args([dir.join("make.o"), dir.join("use.o")])
            .arg(format!("-L{}", lib.display()))
            .arg("-lcaliper"),
    );
    let exe = dir.join("main");
    must(
        Command::new("gcc")
            .arg("-o")
            .arg(&exe)
            .arg(source.join("main.c"))
            .arg("-Wl,--no-as-needed")
            .arg(format!("-L{}", lib.display()))
            .arg("-lcaliper")
            .arg(format!("-L{}", dir.display()))
            .arg("-lplugin")
            .arg(format!("-Wl,-rpath,{}:{}", lib.display(), dir.display())),
    );
    exe
}

/// A shared library built against this library's own headers keeps its
/// own copies of the header-only members, which it may call out of line:
/// the same names that libcaliper exports for the reference's classes,
/// whose layouts differ. An Annotation made in its unoptimized half and
/// used inline in the other, a ScopeAnnotation, a Loop and the
/// ConfigManager's controllers work, with libcaliper looked up first.
#[test]
fn a_shared_library_built_against_the_header_only_classes_keeps_them() {
    let trace = install::scratch("cxx-abi", "plugin-trace").join("trace.cali");
    let out = run(&plugin(), Some(&format!("event-trace,output={}", trace.display())), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("plugin: channel runtime-report\n"), "{stdout}");
    assert_eq!(tree(&stdout), ["plugin.scope", "plugin.loop"], "{stdout}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    for event in ["event.begin#plugin.value", "event.set#plugin.value", "event.end#plugin.value"] {
        assert!(text.contains(&format!("data={event}")), "{event}:\n{text}");
    }
}

/// The names of `tests/data/reference-cxx-exports.txt`.
fn reference_cxx_exports() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-cxx-exports.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| l.split('#').next().unwrap().trim()).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// libcaliper.so exports the C++ API of the reference's headers, and no
/// other C++ symbol: no standard library instance, no helper.
#[test]
fn libcaliper_exports_the_reference_cxx_api_and_no_other_cxx_symbol() {
    let nm = must(Command::new("nm").args(["-D", "--defined-only"]).arg(prefix().join("lib/libcaliper.so")));
    let exported: BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        // Mangled names; those with a '*' are the globs of src/cxx_api.rs.
        .filter(|name| name.starts_with("_Z") && !name.contains('*'))
        .map(str::to_string)
        .collect();
    let reference = reference_cxx_exports();
    assert!(reference.len() > 90, "{} names read", reference.len());
    let missing: Vec<&String> = reference.difference(&exported).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    let extra: Vec<&String> = exported.difference(&reference).collect();
    assert!(extra.is_empty(), "exported, but not in the reference's headers: {extra:?}");
}
