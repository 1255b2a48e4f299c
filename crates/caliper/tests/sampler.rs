//! The `sampler` service, end to end: samples land in the regions that
//! run, on every thread that meets the channel; a thread that never
//! updates is sampled past its capture buffer (the drain processes it);
//! the program's own `SIGPROF` handler keeps the signal; and at the end the
//! program gets `SIGPROF` back. Each scenario runs in a child process.

mod common;

use caliper_testutil::{HatchetReader, hatchet_summaries, read_with_caliper_reader};
use common::{globals_with, read, run, run_bounded, run_with, stderr};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    match name.as_str() {
        "regions" => spin_in_regions(),
        "unannotated" => spin_without_annotations(),
        "own_handler" => spin_with_own_handler(),
        "restored" => raise_sigprof_after_the_end(),
        "busy" => allocate_lock_and_write_under_sampling(),
        "calls" => region_in_nested_calls(),
        other => panic!("unknown scenario {other}"),
    }
}

/// Keeps the processor busy for `time`, nearly all of it in this
/// function's own loop (the clock is read every 100,000 rounds).
#[inline(never)]
fn spin(time: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < time {
        for _ in 0..100_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
    }
}

/// `long` spins four times as long as `short`, and a thread spins in
/// `worker`. Kept out of line, so that its frame is on the call stacks the
/// callpath tests read in an optimized build too.
#[inline(never)]
fn spin_in_regions() {
    let worker = std::thread::spawn(|| {
        let _worker = caliper::region!("worker");
        spin(Duration::from_millis(200));
    });
    {
        let _long = caliper::region!("long");
        spin(Duration::from_millis(400));
    }
    {
        let _short = caliper::region!("short");
        spin(Duration::from_millis(100));
    }
    worker.join().unwrap();
}

/// Starts the runtime and spins without a single annotation: no update
/// ever processes the thread's captures.
fn spin_without_annotations() {
    caliper::Caliper::instance().expect("runtime");
    spin(Duration::from_millis(1500));
}

extern "C" fn count_own_signal(_: libc::c_int) {
    OWN_SIGNALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}
static OWN_SIGNALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Installs a `SIGPROF` handler of its own before the runtime starts,
/// then raises the signal: its handler must see it.
fn spin_with_own_handler() {
    // SAFETY: sigaction with a handler that only counts.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_own_signal as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()), 0);
    }
    caliper::Caliper::instance().expect("runtime");
    let _r = caliper::region!("work");
    spin(Duration::from_millis(50));
    // SAFETY: raising a signal the program handles.
    unsafe { libc::raise(libc::SIGPROF) };
    assert_eq!(OWN_SIGNALS.load(std::sync::atomic::Ordering::Relaxed), 1, "the program's handler keeps SIGPROF");
}

/// Samples for a while; after the runtime's end at exit (a handler
/// registered before the runtime's runs after it), checks that `SIGPROF`
/// has its default action again and that no timer is left to send it.
fn raise_sigprof_after_the_end() {
    extern "C" fn after_the_end() {
        // SAFETY: reading the current action.
        let action = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPROF, std::ptr::null(), &mut action);
            action
        };
        println!("default action: {}", action.sa_sigaction == libc::SIG_DFL);
        // Under the default action a signal from a timer left running
        // would end the process here.
        spin(Duration::from_millis(100));
        println!("still running");
    }
    // SAFETY: registering a plain function.
    unsafe { libc::atexit(after_the_end) };
    let _r = caliper::region!("work");
    spin(Duration::from_millis(100));
}

/// The settings of a sampled trace at `frequency` written to `file`.
fn sampled(file: &Path, frequency: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CALI_SERVICES_ENABLE", "sampler,trace,recorder".into()),
        ("CALI_SAMPLER_FREQUENCY", frequency.into()),
        ("CALI_RECORDER_FILENAME", file.display().to_string()),
    ]
}

/// The samples of a `.cali` trace, counted by region path ("" outside
/// any), and the distinct program counters seen.
fn samples_by_region(file: &Path) -> (BTreeMap<String, u64>, usize) {
    let (db, records) = read(file);
    let mut counts = BTreeMap::new();
    let mut pcs = std::collections::BTreeSet::new();
    for record in &records {
        let entries = db.expand_paths(record);
        let find = |name: &str| {
            entries.iter().find(|(a, _)| db.attribute(*a).is_some_and(|a| a.name() == name)).map(|(_, v)| v)
        };
        let Some(pc) = find("cali.sampler.pc") else { continue };
        pcs.insert(pc[0].to_string());
        let region = find("region").map(|v| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("/"));
        *counts.entry(region.unwrap_or_default()).or_insert(0) += 1;
    }
    (counts, pcs.len())
}

#[test]
fn samples_land_in_the_regions_that_run_on_every_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("samples.cali");
    run_with("regions", &sampled(&file, "1000"));
    let (counts, pcs) = samples_by_region(&file);
    let count = |region: &str| counts.get(region).copied().unwrap_or(0);
    assert!(count("long") > count("short") && count("short") > 0, "{counts:?}");
    assert!(count("worker") > 0, "the thread's samples: {counts:?}");
    assert!(pcs > 1, "program counters of the interrupted code: {pcs}");
    let globals = globals_with(&file, &|name| name == "sample.frequency");
    assert_eq!(globals, "sample.frequency=1000");
}

/// A thread that never updates fills its capture buffer (256) in a
/// quarter second at 1 kHz: the drain must process it while it runs.
#[test]
fn a_thread_that_never_annotates_is_sampled_past_its_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("samples.cali");
    let out = run_with("unannotated", &sampled(&file, "1000"));
    let (counts, _) = samples_by_region(&file);
    let total: u64 = counts.values().sum();
    assert!(total > 2 * caliper::signal::CAPACITY as u64, "{total} samples in 1.5 s at 1 kHz:\n{}", stderr(&out));
}

#[test]
fn a_program_that_handles_sigprof_keeps_it_and_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("samples.cali");
    let out = run_with("own_handler", &sampled(&file, "1000"));
    let err = stderr(&out);
    assert!(err.contains("== CALIPER: sampler: the program handles SIGPROF itself; sampler disabled"), "{err}");
}

#[test]
fn sigprof_goes_back_to_the_program_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("samples.cali");
    let out = run_with("restored", &sampled(&file, "2000"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("default action: true\nstill running\n"), "{stdout}");
    let (counts, _) = samples_by_region(&file);
    assert!(counts.get("work").copied().unwrap_or(0) > 0, "{counts:?}");
}

/// Runs the `regions` scenario under `config(options)` writing to a file
/// of its own, and gives what it wrote (the config may add an extension).
fn regions_output(config: &str, options: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{config}(output={},{options})", dir.path().join("output").display());
    run("regions", &[("CALI_CONFIG", config.as_str())]);
    let written = std::fs::read_dir(dir.path()).unwrap().next().expect("an output file").unwrap();
    std::fs::read_to_string(written.path()).unwrap()
}

/// `sample-report`: the regions with their samples and time, and the
/// functions the samples were in as the tree's last level.
#[test]
fn sample_report_prints_regions_and_the_functions_sampled_in_them() {
    let text = regions_output("sample-report", "sample.frequency=1000");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Path") && lines[0].contains("Samples") && lines[0].contains("Time (sec)"), "{text}");
    for region in ["long", "short", "worker"] {
        let at =
            lines.iter().position(|l| l.split_whitespace().next() == Some(region)).unwrap_or_else(|| panic!("{text}"));
        // The region's functions, one level down: the spin loop among them.
        let functions: Vec<&str> = lines[at + 1..].iter().take_while(|l| l.starts_with("  ")).copied().collect();
        assert!(functions.iter().any(|l| l.contains("sampler::spin")), "{region}:\n{text}");
    }
}

/// `sample-profile` as json-split loads in Hatchet, with a node per region
/// and function, and the sample count and time as metrics.
#[test]
fn sample_profile_loads_in_hatchet() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profile.json");
    let config = format!("sample-profile(output={},output.format=json-split,sample.frequency=1000)", file.display());
    run("regions", &[("CALI_CONFIG", config.as_str())]);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let columns: Vec<&str> = json["columns"].as_array().unwrap().iter().filter_map(|c| c.as_str()).collect();
    for column in ["path", "count", "time", "Function", "Module"] {
        assert!(columns.contains(&column), "{columns:?}");
    }
    let summary = hatchet_summaries(&[(HatchetReader::JsonSplit, &file)]);
    let paths = summary[0]["paths"].to_string();
    for region in ["long", "short", "worker"] {
        assert!(paths.contains(&format!("'{region}'")), "{paths}");
    }
    assert!(summary[0]["exc_metrics"].to_string().contains("time"), "{summary}");
}

/// Four threads that allocate, take a shared lock and write and read a
/// file, each iteration in a region, for `SAMPLER_TEST_SECONDS`: what a
/// sampled host does, interrupted anywhere. Prints what it did.
fn allocate_lock_and_write_under_sampling() {
    let seconds: u64 = std::env::var("SAMPLER_TEST_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let dir = std::env::current_dir().unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (shared, path) = (shared.clone(), dir.join(format!("io.{t}")));
            std::thread::spawn(move || {
                let mut iterations = 0u64;
                while Instant::now() < deadline {
                    let _r = caliper::region!("iteration");
                    let data: Vec<u64> = (0..256).map(|i| i * iterations).collect();
                    shared.lock().unwrap().push(data.iter().sum());
                    std::fs::write(&path, format!("{iterations}")).unwrap();
                    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{iterations}"));
                    iterations += 1;
                }
                iterations
            })
        })
        .collect();
    let iterations: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    println!("threads done: {}", iterations > 0);
}

/// The faults a sampled host has: 10 kHz samples on four threads that
/// allocate, lock and do I/O. Nothing hangs or crashes, the program's
/// output and exit code are its own, and every thread is sampled.
#[test]
fn a_busy_program_under_10_khz_sampling_runs_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("samples.cali");
    let env = sampled(&file, "10000");
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("CALI_LOG_VERBOSITY", "1"));
    let (status, out, err) = run_bounded(dir.path(), "busy", &env, Duration::from_secs(120));
    assert!(status.is_some_and(|s| s.success()), "hung or failed ({status:?}):\n{err}");
    assert!(out.contains("threads done: true"), "{out}");
    let (counts, _) = samples_by_region(&file);
    assert!(counts.get("iteration").copied().unwrap_or(0) > 1000, "{counts:?}\n{err}");
}

/// `sample-report(callpath)`: the tree of the samples' call stacks, each
/// frame named, from the thread's entry down to the function sampled.
#[test]
fn sample_report_with_callpath_prints_the_call_stacks() {
    let text = regions_output("sample-report", "sample.frequency=1000,callpath");
    let depth = |line: &str| line.len() - line.trim_start().len();
    // The caller, then its callee below it, whatever the frames around
    // them (the worker thread's `spin` is under another caller).
    let mut lines = text.lines().skip_while(|l| !l.trim_start().starts_with("sampler::spin_in_regions"));
    let caller = lines.next().unwrap_or_else(|| panic!("no spin_in_regions frame:\n{text}"));
    let callee = lines.find(|l| l.trim_start().starts_with("sampler::spin ")).unwrap_or_else(|| panic!("{text}"));
    assert!(depth(caller) < depth(callee), "{text}");
}

/// `output.format=folded` writes one stack per region path and function
/// with its sample count; `flamegraph` draws them as an SVG.
#[test]
fn sample_configs_write_folded_stacks_and_flame_graphs() {
    // One sampling channel per process: one run each.
    let text = regions_output("sample-report", "output.format=folded,sample.frequency=1000");
    let stack = |region: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("{region};")))
            .map(|l| l.rsplit_once(' ').and_then(|(_, n)| n.parse::<u64>().ok()).unwrap())
            .sum::<u64>()
    };
    assert!(stack("long") > stack("short") && stack("short") > 0, "{text}");
    assert!(text.lines().any(|l| l.starts_with("worker;") && l.contains("sampler::spin ")), "{text}");
    let svg = regions_output("sample-profile", "output.format=flamegraph,sample.frequency=1000");
    assert!(
        svg.contains("<svg") && svg.contains("sample-profile") && svg.contains("long"),
        "{}",
        &svg[..svg.len().min(500)]
    );
}

#[inline(never)]
fn caller_of_the_region() {
    callee_with_the_region();
    std::hint::black_box(());
}

#[inline(never)]
fn callee_with_the_region() {
    let _r = caliper::region!("deep");
    std::hint::black_box(());
}

/// A region begun two calls down from the scenario.
fn region_in_nested_calls() {
    caller_of_the_region();
}

/// `callpath` on region snapshots: each gets the call stack of the code
/// that annotated, down to the function that began the region, without
/// the runtime's own frames; with `use_name`, their names too.
#[test]
fn region_snapshots_get_the_call_stack_of_the_annotation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    run_with(
        "calls",
        &[
            ("CALI_SERVICES_ENABLE", "event,callpath,symbollookup,trace,recorder".into()),
            ("CALI_CALLPATH_USE_NAME", "true".into()),
            ("CALI_RECORDER_FILENAME", file.display().to_string()),
        ],
    );
    let (db, records) = read(&file);
    let values = |record, name: &str| -> Vec<String> {
        let entries = db.expand_paths(record);
        let found = entries.into_iter().find(|(a, _)| db.attribute(*a).is_some_and(|a| a.name() == name));
        found.map(|(_, v)| v.iter().map(|x| x.to_string()).collect()).unwrap_or_default()
    };
    let begin = records.iter().find(|r| values(r, "event.begin#region") == ["deep"]).expect("the region's begin");
    let path = values(begin, "source.function#callpath.address");
    assert!(
        path.ends_with(&["sampler::caller_of_the_region".into(), "sampler::callee_with_the_region".into()]),
        "{path:#?}"
    );
    assert!(!path.iter().any(|f| f.starts_with("caliper::")), "{path:#?}");
    assert_eq!(values(begin, "callpath.regname"), path, "the names as callpath.regname with use_name");
}

/// A sampled trace with its symbols reads in the reference's Python
/// reader: every sample, with its function, and the sampling frequency.
#[test]
fn a_sampled_trace_reads_in_caliper_reader() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("samples.cali");
    let mut env = sampled(&file, "1000");
    env[0].1 = "sampler,symbollookup,trace,recorder".into();
    run_with("regions", &env);
    let (counts, _) = samples_by_region(&file);
    let ours: u64 = counts.values().sum();
    let read = read_with_caliper_reader(&[&file]);
    let records = read[0]["records"].as_array().unwrap();
    let samples: Vec<_> = records.iter().filter(|r| r.get("cali.sampler.pc").is_some()).collect();
    assert_eq!(samples.len() as u64, ours);
    assert!(samples.iter().all(|r| r.get("source.function#cali.sampler.pc").is_some()), "{:?}", samples.first());
    assert_eq!(read[0]["globals"]["sample.frequency"], "1000", "{}", read[0]["globals"]);
}
