//! Adiak run metadata through libcaliper: a C program links an Adiak
//! library (the stand-in of `tests/adiak`, with Adiak's C API and
//! structures: Adiak has no package to install) and records its run
//! metadata there; `adiak_import` makes it Caliper globals with
//! `adiak.type`, `adiak.category` and `adiak.subcategory` metadata in the
//! outputs Hatchet, Thicket and Spot read, and `adiak_export` hands
//! Caliper's globals to Adiak. Without Adiak in the program, the configs
//! run as before and only an explicitly enabled service says so.

use caliper_data::cali::read_records;
use caliper_data::{AttrType, MetadataDb, Variant};
use caliper_testutil::install::{self, make_install, must, require_tools};
use caliper_testutil::{HATCHET, THICKET, python_with};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The installed tree, once per test run.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(&["gcc", "make", "pkg-config"]);
        make_install("adiak", "install")
    })
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/adiak").join(name)
}

/// The programs, built once: (with Adiak, the flush benchmark with Adiak,
/// without Adiak).
fn programs() -> &'static (PathBuf, PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = install::scratch("adiak", "build");
        let include = format!("-I{}", source("include").display());
        must(Command::new("gcc").args(["-O2", "-Wall", "-shared", "-fPIC", &include, "-o"]).arg(dir.join("libadiak.so")).arg(source("adiak.c")));
        let lib = prefix().join("lib");
        let build = |src: &str, exe: &str, adiak: bool| {
            let mut cmd = Command::new("gcc");
            cmd.args(["-O2", "-Wall", &include, "-o"]).arg(dir.join(exe)).arg(source(src));
            cmd.arg(format!("-I{}", prefix().join("include").display()));
            if adiak {
                cmd.arg(format!("-L{}", dir.display())).arg("-ladiak").arg(format!("-Wl,-rpath,{}", dir.display()));
            }
            cmd.arg(format!("-L{}", lib.display())).arg("-lcaliper").arg(format!("-Wl,-rpath,{}", lib.display()));
            must(&mut cmd);
            dir.join(exe)
        };
        let plain = dir.join("plain.c");
        std::fs::write(&plain, "#include <caliper/cali.h>\nint main(void) { cali_begin_region(\"main\"); cali_end_region(\"main\"); return 0; }\n").unwrap();
        (build("program.c", "program", true), build("flush_cost.c", "flush_cost", true), build(plain.to_str().unwrap(), "plain", false))
    })
}

/// Runs `exe` with these Caliper settings only.
fn run(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    install::without_caliper_settings(&mut cmd).args(args).envs(env.iter().copied());
    must(&mut cmd)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The globals of a `.cali` file: per name, the value and the attribute's
/// `adiak.*` metadata.
fn cali_globals(path: &Path) -> Vec<(String, Variant, AttrType, [Option<String>; 3])> {
    let mut db = MetadataDb::new();
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    read_records(&mut db, &path.display().to_string(), &data).unwrap();
    let globals = db.globals();
    db.expand(&globals)
        .into_iter()
        .map(|(id, value)| {
            let attr = db.attribute(id).unwrap();
            let meta = ["adiak.type", "adiak.category", "adiak.subcategory"]
                .map(|m| db.metadata_by_name(attr, m).map(|v| v.to_string()));
            (attr.name().to_string(), value, attr.attr_type(), meta)
        })
        .collect()
}

fn global<'a>(
    globals: &'a [(String, Variant, AttrType, [Option<String>; 3])],
    name: &str,
) -> Option<&'a (String, Variant, AttrType, [Option<String>; 3])> {
    globals.iter().find(|g| g.0 == name)
}

fn meta(ty: &str, category: i32, subcategory: &str) -> [Option<String>; 3] {
    [Some(ty.into()), Some(category.to_string()), Some(subcategory.into())]
}

#[test]
fn a_region_profile_carries_the_programs_adiak_values_as_globals() {
    let (program, _, _) = programs();
    let out = install::scratch("adiak", "profile").join("profile.cali");
    let run = run(program, &[], &[("CALI_CONFIG", &format!("hatchet-region-profile,output={}", out.display()))]);
    assert_eq!(stderr(&run), "");
    let globals = cali_globals(&out);
    let expect = |name: &str, value: Variant, ty: AttrType, m: [Option<String>; 3]| {
        let g = global(&globals, name).unwrap_or_else(|| panic!("no global {name} in {globals:?}"));
        assert_eq!((&g.1, g.2, &g.3), (&value, ty, &m), "{name}");
    };
    expect("problem", Variant::string("sedov"), AttrType::String, meta("string", 2, "setup"));
    expect("iterations", Variant::Int(42), AttrType::Int, meta("int", 2, ""));
    expect("tolerance", Variant::Double(1e-6), AttrType::Double, meta("double", 3, "solver"));
    expect("compiler", Variant::string("gcc-12.2"), AttrType::String, meta("version", 2, "build"));
    expect("grid", Variant::string("[8, 16, 32]"), AttrType::String, meta("[int]", 2, ""));
    expect("tags", Variant::string("{fast, mpi}"), AttrType::String, meta("{string}", 2, ""));
    expect("executablepath", Variant::string(program.to_str().unwrap()), AttrType::String, meta("path", 2, "binary"));
    let launch = global(&globals, "launchdate").expect("launchdate");
    assert_eq!((launch.2, &launch.3), (AttrType::Uint, &meta("date", 2, "runinfo")));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(matches!(launch.1, Variant::Uint(t) if t <= now && t + 600 > now), "{:?}", launch.1);
    assert!(global(&globals, "secret").is_none(), "category 4 (control) is not imported by default");
    assert!(global(&globals, "cali.caliper.version").is_some());

    let listed = must(Command::new(prefix().join("bin/cali-query")).args(["-G", "-e"]).arg(&out));
    let listed = String::from_utf8_lossy(&listed.stdout);
    for field in ["problem=sedov", "iterations=42", "grid=[8, 16, 32]", "tags={fast, mpi}", "user="] {
        assert!(listed.contains(field), "cali-query -G lacks {field}:\n{listed}");
    }
}

#[test]
fn the_import_categories_option_chooses_what_is_imported() {
    let (program, _, _) = programs();
    let out = install::scratch("adiak", "categories").join("profile.cali");
    let config = format!("hatchet-region-profile,adiak.import_categories=4,output={}", out.display());
    run(program, &[], &[("CALI_CONFIG", &config)]);
    let globals = cali_globals(&out);
    let secret = global(&globals, "secret").expect("category 4 imported");
    assert_eq!(secret.3, meta("int", 4, ""));
    assert!(global(&globals, "problem").is_none() && global(&globals, "tolerance").is_none());
}

#[test]
fn an_adiak_name_that_is_a_context_attribute_is_left_to_the_program() {
    let (program, _, _) = programs();
    let out = install::scratch("adiak", "clash").join("profile.cali");
    let run = run(program, &["clash"], &[("CALI_CONFIG", &format!("hatchet-region-profile,output={}", out.display()))]);
    assert_eq!(
        stderr(&run),
        "== CALIPER: adiak_import: iterations is already an attribute of the program (of type int): not imported\n"
    );
    let globals = cali_globals(&out);
    assert!(global(&globals, "iterations").is_none() && global(&globals, "problem").is_some(), "{globals:?}");
}

#[test]
fn a_report_for_a_query_has_them() {
    let (program, _, _) = programs();
    let out = run(program, &["query"], &[("CALI_SERVICES_ENABLE", "adiak_import,aggregate,event,timer")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.contains("problem") && l.contains("sedov")), "{text}");
}

#[test]
fn json_split_profiles_carry_them_for_hatchet() {
    let (program, _, _) = programs();
    let out = install::scratch("adiak", "json-split").join("profile.json");
    let config = format!("hatchet-region-profile,output.format=json-split,output={}", out.display());
    run(program, &[], &[("CALI_CONFIG", &config)]);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(doc["problem"], "sedov");
    // json-split writes every global as a string, as the reference does.
    assert_eq!(doc["iterations"], "42");
    assert_eq!(doc["tags"], "{fast, mpi}");

    let python = python_with(&[HATCHET]);
    let script = "import hatchet, json, sys\n\
                  gf = hatchet.GraphFrame.from_caliper(sys.argv[1])\n\
                  print(json.dumps({k: gf.metadata.get(k) for k in ('problem', 'iterations', 'launchdate')}))";
    let read = must(Command::new(python).env("MPLBACKEND", "Agg").args(["-c", script]).arg(&out));
    let metadata: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!((&metadata["problem"], &metadata["iterations"]), (&"sedov".into(), &"42".into()), "{metadata}");
    let launch = metadata["launchdate"].as_str().and_then(|t| t.parse::<u64>().ok());
    assert!(launch.is_some_and(|t| t > 1_600_000_000), "{metadata}");
}

#[test]
fn thicket_reads_the_adiak_values_of_several_runs_as_their_metadata() {
    let (program, _, _) = programs();
    let dir = install::scratch("adiak", "thicket");
    let profiles: Vec<PathBuf> = (0..2).map(|n| dir.join(format!("run{n}.cali"))).collect();
    for profile in &profiles {
        run(program, &[], &[("CALI_CONFIG", &format!("hatchet-region-profile,output={}", profile.display()))]);
    }
    let python = python_with(&[THICKET]);
    let script = "import json, sys, warnings\n\
                  warnings.simplefilter('ignore')\n\
                  import thicket\n\
                  md = thicket.Thicket.from_caliperreader(sys.argv[1:], disable_tqdm=True).metadata\n\
                  print(json.dumps({'rows': len(md), 'problem': sorted(set(md['problem'])),\n\
                  'iterations': sorted(set(int(i) for i in md['iterations'])),\n\
                  'tolerance': sorted(set(float(t) for t in md['tolerance']))}))";
    let read = must(Command::new(python).env("MPLBACKEND", "Agg").args(["-c", script]).args(&profiles));
    // Thicket's own notes (a plotting package it lacks) come first.
    let stdout = String::from_utf8_lossy(&read.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let metadata: serde_json::Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(metadata, serde_json::json!({"rows": 2, "problem": ["sedov"], "iterations": [42], "tolerance": [1e-6]}));
}

#[test]
fn spot_and_sample_profiles_and_metadata_reports_have_them() {
    let (program, _, _) = programs();
    let out = install::scratch("adiak", "spot").join("spot.cali");
    run(program, &[], &[("CALI_CONFIG", &format!("spot,output={}", out.display()))]);
    let globals = cali_globals(&out);
    let problem = global(&globals, "problem").expect("problem in the spot profile");
    assert_eq!((&problem.1, &problem.3), (&Variant::string("sedov"), &meta("string", 2, "setup")));
    assert!(global(&globals, "spot.format.version").is_some());
    let sampled = out.with_file_name("sample.cali");
    run(program, &[], &[("CALI_CONFIG", &format!("sample-profile,output={}", sampled.display()))]);
    assert!(global(&cali_globals(&sampled), "problem").is_some(), "sample-profile adds adiak_import too");

    let report = run(program, &[], &[("CALI_CONFIG", "runtime-report,print.metadata")]);
    let text = stderr(&report);
    assert!(text.lines().any(|l| l.contains("problem") && l.contains("sedov")), "{text}");
    let plain = stderr(&run(program, &[], &[("CALI_CONFIG", "runtime-report")]));
    assert!(!plain.contains("sedov"), "only print.metadata prints the metadata:\n{plain}");
}

#[test]
fn without_adiak_the_configs_are_silent_and_an_enabled_service_says_why() {
    let (_, _, plain) = programs();
    let out = install::scratch("adiak", "plain").join("profile.cali");
    let quiet = run(plain, &[], &[("CALI_CONFIG", &format!("hatchet-region-profile,output={}", out.display()))]);
    assert_eq!(stderr(&quiet), "");
    assert!(global(&cali_globals(&out), "cali.caliper.version").is_some());

    let explicit = run(
        plain,
        &[],
        &[("CALI_SERVICES_ENABLE", "adiak_import,aggregate,event,timer,report"), ("CALI_REPORT_FILENAME", "/dev/null")],
    );
    let text = stderr(&explicit);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("Adiak")).map(str::trim_end).collect();
    assert_eq!(
        lines,
        [
            "== CALIPER: default: adiak_import: Adiak is not loaded in this program: there is no Adiak metadata to import"
        ]
    );
}

#[test]
fn adiak_export_hands_the_globals_to_adiak() {
    let (program, _, _) = programs();
    let services = "adiak_export,adiak_import,aggregate,event,timer,report";
    let out = run(program, &["export"], &[("CALI_SERVICES_ENABLE", services), ("CALI_REPORT_FILENAME", "/dev/null")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    // Type 9 is adiak_string; the imported `problem` stays the program's.
    let version = "cali.caliper.version: type 9 category 2 subcategory caliper value ";
    assert!(lines.len() == 3 && lines[0].len() > version.len() && lines[0].starts_with(version), "{text}");
    assert_eq!(
        lines[1..],
        [
            "build.mode: type 9 category 2 subcategory caliper value release",
            "problem: type 9 category 2 subcategory setup value sedov"
        ]
    );
}

/// The cost of the import at a flush, for the README's figure: run with
/// `--ignored --nocapture`.
#[test]
#[ignore]
fn flush_cost_with_and_without_the_import() {
    let (_, bench, _) = programs();
    for values in [0, 100, 1000] {
        for services in ["aggregate,event,timer,report", "adiak_import,aggregate,event,timer,report"] {
            let out = run(
                bench,
                &[&values.to_string(), "101"],
                &[("CALI_SERVICES_ENABLE", services), ("CALI_REPORT_FILENAME", "/dev/null")],
            );
            println!("{services}: {}", String::from_utf8_lossy(&out.stdout).trim());
        }
    }
}
