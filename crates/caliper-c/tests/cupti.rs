//! The `cupti` and `cuptitrace` services without a GPU: tests/cupti/
//! fake_cupti.c is a stand-in libcupti.so built against CUPTI's own
//! headers (the `nvidia-cuda-*` packages of the test virtualenv), whose
//! "CUDA" calls make API callbacks and activity records as the real
//! runtime does under CUPTI, each kernel and copy with a known GPU time;
//! tests/cupti/app.c launches them under annotated regions. The real
//! libcupti of those packages, with no GPU or driver here, shows how the
//! configs behave on a machine without a GPU.

use caliper_data::cali::read_records;
use caliper_data::{MetadataDb, Variant};
use caliper_testutil::install::{self, make_install, must, require_tools};
use caliper_testutil::{cuda_packages, report};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The programs, built once: (the CUDA program on the stand-in CUPTI, a
/// program without CUDA).
fn programs() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        require_tools(&["gcc", "make"]);
        let prefix = make_install("cupti", "install");
        let dir = install::scratch("cupti", "build");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cupti");
        let nvidia = cuda_packages();
        let includes = ["cuda_cupti/include", "cuda_runtime/include", "cuda_nvcc/include"]
            .map(|d| format!("-I{}", nvidia.join(d).display()));
        must(
            Command::new("gcc")
                .args(["-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-pthread"])
                .args(&includes)
                .arg("-o")
                .arg(dir.join("libcupti.so"))
                .arg(source.join("fake_cupti.c")),
        );
        let lib = prefix.join("lib");
        let build = |name: &str, source: &Path, cuda: bool| {
            let mut cmd = Command::new("gcc");
            cmd.args(["-O2", "-Wall", "-pthread", "-o"]).arg(dir.join(name)).arg(source);
            cmd.arg(format!("-I{}", prefix.join("include").display()));
            if cuda {
                cmd.arg(format!("-L{}", dir.display())).arg("-lcupti").arg(format!("-Wl,-rpath,{}", dir.display()));
            }
            cmd.arg(format!("-L{}", lib.display())).arg("-lcaliper").arg(format!("-Wl,-rpath,{}", lib.display()));
            must(&mut cmd);
            dir.join(name)
        };
        let plain = dir.join("plain.c");
        std::fs::write(
            &plain,
            "#include <caliper/cali.h>\n#include <stdio.h>\n\
             int main(void) { cali_begin_region(\"main\"); puts(\"done\"); cali_end_region(\"main\"); return 0; }\n",
        )
        .unwrap();
        (build("app", &source.join("app.c"), true), build("plain", &plain, false))
    })
}

/// Runs `exe` with these settings only.
fn run(exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    install::without_caliper_settings(&mut cmd).envs(env.iter().copied());
    let out = must(&mut cmd);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n", "the program's own output");
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The numbers of the row of `path` (`main/solve`) in `report`.
fn numbers(report: &str, path: &str) -> Vec<f64> {
    let columns = report::columns(report);
    let row = columns.into_iter().find(|(p, _)| p == path);
    row.unwrap_or_else(|| panic!("no row {path:?}:\n{report}")).1
}

/// The GPU times of the program, in seconds: each kernel and copy's
/// simulated device time (app.c).
const SOLVE_GPU: f64 = 4.0 * 0.0015;
const INIT_GPU: f64 = 0.000250;
const COPY_OUT_GPU: f64 = 0.000125;
const WORKER_GPU: f64 = 0.000700;
const CLEANUP_GPU: f64 = 0.000050;

#[test]
fn cuda_activity_report_puts_each_kernels_gpu_time_under_the_region_that_launched_it() {
    let (app, _) = programs();
    let out = run(app, &[("CALI_CONFIG", "cuda-activity-report")]);
    let report = stderr(&out);
    assert!(report.starts_with("Path ") && report.contains("Host Time") && report.contains("GPU Time"), "{report}");
    assert!(report.lines().next().unwrap().contains("GPU %"), "{report}");
    // Host Time, GPU Time, GPU %; rows without GPU time have no second number.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    for (path, expected) in [
        ("main", INIT_GPU + SOLVE_GPU + COPY_OUT_GPU),
        ("main/init", INIT_GPU),
        ("main/init/cudaMemcpy", INIT_GPU),
        ("main/solve", SOLVE_GPU),
        ("main/solve/cudaLaunchKernel", SOLVE_GPU),
        ("main/cudaMemcpy", COPY_OUT_GPU),
        ("worker", WORKER_GPU),
        ("worker/cudaLaunchKernel", WORKER_GPU),
        ("cudaLaunchKernel", CLEANUP_GPU),
    ] {
        let row = numbers(&report, path);
        assert!(row.len() >= 2, "{path:?}: {row:?}\n{report}");
        assert!(close(row[1], expected), "{path:?}: GPU time {}, expected {expected}\n{report}", row[1]);
    }
    for path in ["main", "worker"] {
        assert!(numbers(&report, path)[0] > 0.0, "{path:?}: no host time\n{report}");
    }
    numbers(&report, "main/solve/cudaDeviceSynchronize");
    assert!(!report.contains("== CALIPER"), "{report}");
}

#[test]
fn show_kernels_names_each_kernel_demangled() {
    let (app, _) = programs();
    let report = stderr(&run(app, &[("CALI_CONFIG", "cuda-activity-report,show_kernels")]));
    assert!(report.lines().next().unwrap().trim_end().ends_with("Kernel"), "{report}");
    for kernel in ["step(float*, int)", "reduce(float const*, float*, int)", "cleanup()"] {
        assert!(report.lines().any(|l| l.trim_end().ends_with(kernel)), "no row of {kernel}:\n{report}");
    }
    assert!(!report.contains("_Z4stepPfi"), "{report}");
}

#[test]
fn runtime_report_with_profile_cuda_and_cuda_gputime() {
    let (app, _) = programs();
    let report = stderr(&run(app, &[("CALI_CONFIG", "runtime-report,profile.cuda,cuda.gputime")]));
    let header = report.lines().next().unwrap();
    assert!(
        header.contains("Time (E)") && header.contains("GPU time (I)") && header.contains("GPU time (E)"),
        "{report}"
    );
    // Time (E), Time (I), Time % (E), Time % (I), GPU time (I) [, (E)].
    let solve = numbers(&report, "main/solve");
    assert!((solve[4] - SOLVE_GPU).abs() < 1e-9, "{solve:?}\n{report}");
    let launch = numbers(&report, "main/solve/cudaLaunchKernel");
    assert!((launch[4] - SOLVE_GPU).abs() < 1e-9 && (launch[5] - SOLVE_GPU).abs() < 1e-9, "{launch:?}\n{report}");
    numbers(&report, "main/solve/cudaDeviceSynchronize");
}

/// A record expanded: the path of regions and API calls, outermost
/// first, and the other attributes by name.
type Expanded = (Vec<String>, Vec<(String, Variant)>);

/// The records of a `.cali` file, each expanded.
fn cali_records(path: &Path) -> Vec<Expanded> {
    let mut db = MetadataDb::new();
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records = read_records(&mut db, &path.display().to_string(), &data).unwrap();
    records
        .iter()
        .map(|r| {
            let (mut path, mut rest) = (Vec::new(), Vec::new());
            for (id, value) in db.expand(r) {
                let name = db.attribute(id).unwrap().name().to_string();
                if name == "region" || name == "cupti.runtimeAPI" {
                    path.push(value.to_string());
                } else {
                    rest.push((name, value));
                }
            }
            (path, rest)
        })
        .collect()
}

/// The records of the program traced with the CUDA services and `setting`
/// (`name` names the scratch directory), nothing said on stderr.
fn traced(name: &str, setting: (&str, &str)) -> Vec<Expanded> {
    let (app, _) = programs();
    let file = install::scratch("cupti", name).join("trace.cali");
    let services = ("CALI_SERVICES_ENABLE", "cupti,cuptitrace,event,recorder,trace");
    let out = run(app, &[services, setting, ("CALI_RECORDER_FILENAME", file.to_str().unwrap())]);
    assert_eq!(stderr(&out), "");
    cali_records(&file)
}

/// The program's event trace with the CUDA API calls and the device's
/// activities (`event-trace,trace.cuda,cuda.activities`) in `format`,
/// written to `file` of scratch directory `name`; nothing said on stderr.
fn cuda_event_trace(name: &str, format: &str, file: &str) -> PathBuf {
    let (app, _) = programs();
    let file = install::scratch("cupti", name).join(file);
    let config = format!("event-trace,trace.cuda,cuda.activities,output.format={format},output={}", file.display());
    let out = run(app, &[("CALI_CONFIG", &config)]);
    assert_eq!(stderr(&out), "");
    file
}

fn value<'a>(attrs: &'a [(String, Variant)], name: &str) -> Option<&'a Variant> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

#[test]
fn activity_records_carry_the_reference_attributes_under_the_launching_path() {
    let records = traced("records", ("CALI_CUPTI_CALLBACK_DOMAINS", "runtime,sync"));
    let activities: Vec<_> = records.iter().filter(|(_, a)| value(a, "cupti.activity.kind").is_some()).collect();
    assert_eq!(activities.len(), 8, "6 kernels and 2 copies: {activities:#?}");
    let kernels: Vec<_> = activities
        .iter()
        .filter(|(path, a)| {
            value(a, "cupti.activity.kind").map(Variant::to_string).as_deref() == Some("kernel")
                && path == &["main", "solve", "cudaLaunchKernel"]
        })
        .collect();
    assert_eq!(kernels.len(), 4, "{activities:#?}");
    for (_, a) in &kernels {
        assert_eq!(value(a, "cupti.kernel.name").map(Variant::to_string).as_deref(), Some("step(float*, int)"));
        assert_eq!(value(a, "cupti.activity.duration"), Some(&Variant::Uint(1_500_000)));
        let (Some(Variant::Uint(start)), Some(Variant::Uint(end))) =
            (value(a, "cupti.activity.start"), value(a, "cupti.activity.end"))
        else {
            panic!("no start or end: {a:?}")
        };
        assert_eq!(end - start, 1_500_000);
    }
    let copy_in = activities
        .iter()
        .find(|(path, _)| path == &["main", "init", "cudaMemcpy"])
        .unwrap_or_else(|| panic!("{activities:#?}"));
    assert_eq!(value(&copy_in.1, "cupti.memcpy.kind").map(Variant::to_string).as_deref(), Some("HtoD"));
    assert_eq!(value(&copy_in.1, "cupti.memcpy.bytes"), Some(&Variant::Uint(1 << 20)));
    assert_eq!(value(&copy_in.1, "cupti.activity.duration"), Some(&Variant::Uint(250_000)));
    let copy_out = activities.iter().find(|(path, _)| path == &["main", "cudaMemcpy"]).unwrap();
    assert_eq!(value(&copy_out.1, "cupti.memcpy.kind").map(Variant::to_string).as_deref(), Some("DtoH"));
    let cleanup = activities.iter().find(|(path, _)| path == &["cudaLaunchKernel"]).unwrap();
    assert_eq!(value(&cleanup.1, "cupti.kernel.name").map(Variant::to_string).as_deref(), Some("cleanup()"));
    // The context synchronisation of cudaDeviceSynchronize, as a snapshot.
    assert!(
        records.iter().any(|(path, a)| value(a, "cupti.sync").map(Variant::to_string).as_deref() == Some("context")
            && path == &["main", "solve"]),
        "{records:#?}"
    );
}

#[test]
fn cuda_activity_profile_writes_gpu_and_host_time_per_kernel() {
    let (app, _) = programs();
    let dir = install::scratch("cupti", "profile");
    let file = dir.join("profile.json");
    let config = format!("cuda-activity-profile(output.format=json,output={})", file.display());
    let out = run(app, &[("CALI_CONFIG", &config)]);
    assert_eq!(stderr(&out), "");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let kernel =
        rows.iter().find(|r| r["cupti.kernel.name"] == "step(float*, int)").unwrap_or_else(|| panic!("{rows:#?}"));
    assert_eq!(kernel["path"], "main/solve/cudaLaunchKernel", "{kernel:#}");
    assert!((kernel["time (gpu)"].as_f64().unwrap() - SOLVE_GPU).abs() < 1e-9, "{kernel:#}");
    assert_eq!(kernel["cupti.activity.kind"], "kernel");
    assert!(rows.iter().any(|r| r["path"] == "main/solve" && r["time"].as_f64().is_some_and(|t| t > 0.0)), "{rows:#?}");
}

#[test]
fn without_cupti_the_cuda_configs_say_so_in_one_line_and_the_program_runs() {
    let (_, plain) = programs();
    for config in [
        "cuda-activity-report",
        "runtime-report,profile.cuda,cuda.gputime",
        "event-trace,trace.cuda,cuda.activities,output=/dev/null",
    ] {
        let out = run(plain, &[("CALI_CONFIG", config), ("CUDA_HOME", "/nonexistent")]);
        let lines: Vec<_> = stderr(&out).lines().filter(|l| l.starts_with("== CALIPER:")).map(str::to_string).collect();
        assert_eq!(
            lines,
            [
                "== CALIPER: cupti: CUPTI library (libcupti.so) not found: add CUDA's extras/CUPTI/lib64 to LD_LIBRARY_PATH: CUDA calls and GPU activities are not recorded"
            ],
            "{config}"
        );
        assert!(out.status.success());
    }
}

#[test]
fn real_cupti_without_a_gpu_says_so_in_one_line_and_the_program_runs() {
    let (_, plain) = programs();
    let lib = cuda_packages().join("cuda_cupti/lib");
    let out = run(plain, &[("CALI_CONFIG", "cuda-activity-report"), ("LD_LIBRARY_PATH", lib.to_str().unwrap())]);
    let report = stderr(&out);
    let lines: Vec<_> = report.lines().filter(|l| l.starts_with("== CALIPER:")).collect();
    assert_eq!(lines.len(), 1, "{report}");
    assert!(lines[0].starts_with("== CALIPER: cupti: cuptiSubscribe: CUPTI_ERROR_"), "{report}");
    assert!(lines[0].ends_with("CUDA calls and GPU activities are not recorded"), "{report}");
    // Host times are still measured.
    assert!(report.lines().any(|l| l.starts_with("main ")), "{report}");
}

#[test]
fn cuda_memcpy_reports_the_megabytes_copied_each_way() {
    let (app, _) = programs();
    let report = stderr(&run(app, &[("CALI_CONFIG", "cuda-activity-report,cuda.memcpy")]));
    let header = report.lines().next().unwrap();
    assert!(header.contains("Copy CPU->GPU") && header.contains("Copy GPU->CPU"), "{report}");
    // Host Time, GPU Time, GPU %, then the copied MB of the row.
    assert_eq!(numbers(&report, "main/init/cudaMemcpy").last(), Some(&1.048576), "{report}");
    assert_eq!(numbers(&report, "main/cudaMemcpy").last(), Some(&0.524288), "{report}");
}

#[test]
fn synchronisations_are_activities_when_asked_for() {
    let records = traced("sync", ("CALI_CUPTITRACE_ACTIVITIES", "correlation,runtime,kernel,memcpy,sync"));
    let syncs: Vec<_> = records
        .iter()
        .filter(|(_, a)| value(a, "cupti.activity.kind").map(Variant::to_string).as_deref() == Some("synchronization"))
        .collect();
    assert_eq!(syncs.len(), 1, "{records:#?}");
    assert_eq!(syncs[0].0, ["main", "solve", "cudaDeviceSynchronize"]);
    assert!(value(&syncs[0].1, "cupti.activity.duration").is_some(), "{syncs:#?}");
}

#[test]
fn event_trace_with_cuda_activities_stamps_snapshots_in_cuptis_clock() {
    let file = cuda_event_trace("event-trace", "cali", "trace.cali");
    let records = cali_records(&file);
    let stamp = |name: &str, a: &[(String, Variant)]| match value(a, name) {
        Some(&Variant::Uint(t)) => t,
        other => panic!("{name}: {other:?} in {a:?}"),
    };
    // The host's snapshots carry cupti.timestamp, in the clock of the
    // activities: the first kernel starts after the launch that began it.
    let launch = records
        .iter()
        .find(|(path, a)| path == &["main", "solve", "cudaLaunchKernel"] && value(a, "cupti.activity.kind").is_none())
        .unwrap_or_else(|| panic!("{records:#?}"));
    let kernel = records
        .iter()
        .find(|(_, a)| value(a, "cupti.kernel.name").map(Variant::to_string).as_deref() == Some("step(float*, int)"))
        .unwrap();
    let (launched, started) = (stamp("cupti.timestamp", &launch.1), stamp("cupti.activity.start", &kernel.1));
    assert!(launched <= started && started - launched < 1_000_000_000, "{launch:?} {kernel:?}");
}

#[test]
fn a_trace_event_timeline_draws_the_devices_work_on_a_cuda_thread_in_the_hosts_clock() {
    let file = cuda_event_trace("timeline", "trace-event", "trace.json");
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let kernels: Vec<_> = events.iter().filter(|e| e["tid"] == "cuda" && e["name"] == "step(float*, int)").collect();
    assert_eq!(kernels.len(), 4, "{events:#?}");
    for k in &kernels {
        assert_eq!((k["ph"].as_str(), k["cat"].as_str(), k["dur"].as_f64()), (Some("X"), Some("kernel"), Some(1500.0)));
    }
    let copy =
        events.iter().find(|e| e["tid"] == "cuda" && e["name"] == "HtoD").unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(copy["cat"], "memcpy");
    // The host's regions are in the same clock: the solve region holds
    // the launches, whose kernels start after the first of them.
    let solve = events.iter().find(|e| e["name"] == "solve" && e["cat"] == "region").unwrap();
    let (begin, first_kernel) = (solve["ts"].as_f64().unwrap(), kernels[0]["ts"].as_f64().unwrap());
    assert!(
        begin <= first_kernel && first_kernel - begin < 1e6,
        "solve at {begin} µs, first kernel at {first_kernel} µs"
    );
}

#[test]
fn a_perfetto_timeline_has_a_track_per_cuda_stream_with_the_devices_work() {
    let file = cuda_event_trace("perfetto", "perfetto", "trace.perfetto-trace");
    let trace = caliper_testutil::perfetto_slices(&file);
    let slices = trace["slices"].as_array().unwrap();
    let on_stream: Vec<_> = slices.iter().filter(|s| s["thread"] == "cuda stream 7").collect();
    let kernels: Vec<_> = on_stream.iter().filter(|s| s["name"] == "step(float*, int)").collect();
    assert_eq!(kernels.len(), 4, "{slices:#?}");
    for k in &kernels {
        assert_eq!(k["category"], "kernel");
        assert_eq!(k["end_ns"].as_u64().unwrap() - k["begin_ns"].as_u64().unwrap(), 1_500_000);
        assert_eq!(k["depth"], 0, "work on one stream does not nest");
    }
    assert!(on_stream.iter().any(|s| s["name"] == "HtoD" && s["category"] == "memcpy"), "{on_stream:#?}");
    // The host's regions share the device's clock.
    let solve = slices.iter().find(|s| s["name"] == "solve").unwrap();
    let (begin, first) = (solve["begin_ns"].as_u64().unwrap(), kernels[0]["begin_ns"].as_u64().unwrap());
    assert!(begin <= first && first - begin < 1_000_000_000, "solve at {begin}, first kernel at {first}");
}
