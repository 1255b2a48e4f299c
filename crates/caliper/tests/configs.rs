//! The built-in configs (`CALI_CONFIG`) against the reference's outputs
//! of the same program: same layout, columns, attribute names, metadata
//! and record structure; times aside.

mod common;

use caliper_testutil::fixture;
use common::{expand_with, globals_with, nested, read, run, stderr};
use std::path::Path;

/// Runs when this binary is re-run as a scenario; a no-op otherwise.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var("CALIPER_TEST_SCENARIO") else { return };
    match name.as_str() {
        "nested" => {
            nested();
            println!("program output");
            // Exit here, so that the test harness prints nothing after the
            // program's output and the report written at exit.
            std::process::exit(0);
        }
        "managers" => {
            // Two managers of its own beside CALI_CONFIG.
            let dir = std::env::var("SCENARIO_DIR").unwrap();
            let mut trace = caliper::ConfigManager::new();
            assert!(
                trace.add(&format!("event-trace(output={dir}/trace.cali,trace.buffer.policy=stop)")),
                "{}",
                trace.error_msg()
            );
            let profile = caliper::ConfigManager::with(&format!("runtime-profile,output={dir}/profile.cali"));
            assert!(!profile.error());
            trace.start();
            profile.start();
            nested();
            trace.flush();
            profile.flush();
            println!("program output");
            std::process::exit(0);
        }
        "threads" => {
            // Two threads, each with a region around an inner one, inside
            // main's region: their begins and ends interleave in time.
            {
                let _main = caliper::region!("main");
                let workers: Vec<_> = (0..2)
                    .map(|_| {
                        std::thread::spawn(|| {
                            let _worker = caliper::region!("worker");
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            let _inner = caliper::region!("inner");
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        })
                    })
                    .collect();
                for w in workers {
                    w.join().unwrap();
                }
            }
            println!("program output");
            std::process::exit(0);
        }
        "nested_loops" => {
            // The inner loop runs twice, once per iteration of the outer.
            let _main = caliper::region!("main");
            let outer = caliper::Loop::new("outer");
            for i in 0..2 {
                let _it = outer.iteration(i);
                let inner = caliper::Loop::new("inner");
                for j in 0..3 {
                    let _it = inner.iteration(j);
                }
            }
            println!("program output");
            std::process::exit(0);
        }
        "deep" => {
            // A region chain five levels deep.
            {
                let _main = caliper::region!("main");
                let _mainloop = caliper::region!("mainloop");
                let _foo = caliper::region!("foo");
                let _inner = caliper::region!("foo.inner");
                let _bar = caliper::region!("bar");
            }
            println!("program output");
            std::process::exit(0);
        }
        other => panic!("unknown scenario {other}"),
    }
}

fn run_config(config: &str) -> std::process::Output {
    run("nested", &[("CALI_CONFIG", config)])
}

/// What the program wrote to standard output (after the test harness's
/// lines).
fn stdout(out: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let marker = "test scenario_child ... ";
    text.find(marker).map(|i| text[i + marker.len()..].to_string()).unwrap_or_else(|| text.into_owned())
}

/// A tree report's header and, per row, the path label and the number of
/// values.
fn report_shape(text: &str) -> (String, Vec<(String, usize)>) {
    let mut lines = text.lines().filter(|l| !l.is_empty() && *l != "program output");
    let header = lines.next().expect("a header").to_string();
    let label_width = header.find("Time (E)").expect("a Time (E) column");
    let rows =
        lines.map(|l| (l[..label_width].trim_end().to_string(), l[label_width..].split_whitespace().count())).collect();
    (header, rows)
}

/// The values of the report's last column.
fn last_column(text: &str) -> Vec<String> {
    let rows = text.lines().filter(|l| !l.is_empty() && *l != "program output").skip(1);
    rows.filter_map(|l| l.split_whitespace().last().map(str::to_string)).collect()
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

#[test]
fn runtime_report_has_the_reference_layout() {
    for (config, fixture_name) in [
        ("runtime-report,output=stdout", "cxx-example.runtime-report.stdout.txt"),
        ("runtime-report,calc.inclusive=true,output=stdout", "cxx-example.runtime-report-calc-inclusive.stdout.txt"),
        (
            "runtime-report,time.exclusive,region.count,output=stdout",
            "cxx-example.runtime-report-excl-count.stdout.txt",
        ),
    ] {
        let out = stdout(&run_config(config));
        let reference = fixture_text(fixture_name);
        assert_eq!(report_shape(&out), report_shape(&reference), "{config}:\n{out}");
        // Every row is as wide as the header: columns are aligned.
        let mut lines = out.lines().filter(|l| !l.is_empty() && *l != "program output");
        let width = lines.next().unwrap().len();
        assert!(lines.all(|l| l.len() == width), "{out}");
    }
    let out = stdout(&run_config("runtime-report,time.exclusive,region.count,output=stdout"));
    assert_eq!(last_column(&out), last_column(&fixture_text("cxx-example.runtime-report-excl-count.stdout.txt")));
}

/// `loop.stats` (the `loop_statistics` service): the loop's row has its
/// iterations and the minimum, average and maximum time per iteration, in
/// the reference's columns; other rows leave them empty.
#[test]
fn loop_stats_report_iterations_and_time_per_iteration() {
    let out = stdout(&run_config("runtime-report,loop.stats,output=stdout"));
    let header = out.lines().find(|l| l.starts_with("Path")).unwrap_or_default();
    let columns = ["Iterations", "Time/iter (min)", "Time/iter (avg)", "Time/iter (max)"];
    assert!(columns.iter().all(|c| header.contains(c)), "{out}");
    let row = |name: &str| out.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_default();
    let cells: Vec<&str> = row("mainloop").split_whitespace().collect();
    // Path, four time columns, then the loop statistics.
    assert_eq!(cells.get(5), Some(&"4"), "{out}");
    let per_iteration: Vec<f64> = cells[6..9].iter().map(|c| c.parse().unwrap()).collect();
    assert!(per_iteration[0] <= per_iteration[1] && per_iteration[1] <= per_iteration[2], "{out}");
    assert_eq!(row("init").split_whitespace().count(), 5, "{out}");
}

/// `mem.pages` (the `memstat` service): every row has the process's
/// virtual, resident and data pages, the largest seen in the region, with
/// the resident pages no more than the virtual ones.
#[test]
fn mem_pages_report_the_memory_of_every_region() {
    let out = stdout(&run_config("runtime-report,mem.pages,output=stdout"));
    let header = out.lines().find(|l| l.starts_with("Path")).unwrap_or_default();
    assert!(["VmSize", "VmRSS", "Data"].iter().all(|c| header.contains(c)), "{out}");
    for row in out.lines().skip_while(|l| !l.starts_with("Path")).skip(1).filter(|l| !l.trim().is_empty()) {
        let pages: Vec<u64> = row.split_whitespace().rev().take(3).filter_map(|c| c.parse().ok()).collect();
        let [data, rss, size] = pages[..] else { panic!("{row}\n{out}") };
        assert!(size > 0 && rss > 0 && data > 0 && rss <= size, "{row}");
    }
}

/// `cpuinfo` marks every snapshot with the processor and NUMA node it ran
/// on, within the machine's.
#[test]
fn cpuinfo_marks_snapshots_with_their_processor() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.cali");
    let mut env = common::trace_env(&file);
    env[0].1 = "event,cpuinfo,trace,recorder".into();
    common::run_with("nested", &env);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let lines = common::expand_with(&file, &|name| name.starts_with("cpuinfo."));
    assert!(!lines.is_empty());
    for line in lines {
        let cpu = line.split(',').find_map(|f| f.strip_prefix("cpuinfo.cpu=")).and_then(|v| v.parse::<u64>().ok());
        assert!(cpu.is_some_and(|c| c < cpus.max(64)) && line.contains("cpuinfo.numa_node="), "{line}");
    }
}

/// `max_column_width=8` on a deep tree: labels cut to the room their
/// indent leaves (`ma~~op`, and `fo` where `~~` would leave nothing of
/// `foo.inner`), `..` where the indent reaches the width, as the
/// reference prints them.
#[test]
fn runtime_report_cuts_a_deep_tree_to_max_column_width() {
    let out = stdout(&run("deep", &[("CALI_CONFIG", "runtime-report,max_column_width=8,output=stdout")]));
    let labels: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("Path")).map(|l| &l[..l.len().min(9)]).collect();
    assert_eq!(labels, ["Path     ", "main     ", "  ma~~op ", "    foo  ", "      fo ", "      .. "], "{out}");
}

#[test]
fn runtime_report_goes_to_stderr_by_default() {
    let out = run_config("runtime-report");
    assert!(stderr(&out).starts_with("Path "), "{}", stderr(&out));
    assert_eq!(stdout(&out), "program output\n");
}

/// The names of a file's globals (values differ between runs) that the
/// reference's files can have.
fn global_names(path: &Path) -> Vec<String> {
    let (db, _) = read(path);
    let mut names: Vec<String> =
        db.expand(&db.globals()).iter().map(|(a, _)| db.attribute(*a).unwrap().name().to_string()).collect();
    names.retain(|n| n != "caliper.config" && in_the_reference(n));
    names.sort();
    names
}

/// Attributes whose values are times.
fn is_time(name: &str) -> bool {
    name.contains("time") || name.contains("avg.")
}

fn not_config(name: &str) -> bool {
    name != "caliper.config" && name != "cali.caliper.version"
}

/// Whether the reference's files can have attribute `name`: all but this
/// implementation's own version (a global).
fn in_the_reference(name: &str) -> bool {
    name != "cali.caliper-rs.version"
}

#[test]
fn region_profiles_match_the_reference_files() {
    let dir = tempfile::tempdir().unwrap();
    for (config, fixture_name) in [
        ("hatchet-region-profile", "cxx-example.hatchet-region-profile.cali"),
        ("runtime-profile", "cxx-example.runtime-profile.cali"),
    ] {
        let file = dir.path().join(format!("{config}.cali"));
        run_config(&format!("{config},output={}", file.display()));
        let keep = |n: &str| !is_time(n) && not_config(n);
        assert_eq!(expand_with(&file, &keep), expand_with(&fixture(fixture_name), &keep), "{config}");
        let names = |p: &Path| -> Vec<String> {
            let (db, records) = read(p);
            records.iter().map(|r| common::expand_record(&db, r, &in_the_reference)).map(|l| names_of(&l)).collect()
        };
        assert_eq!(names(&file), names(&fixture(fixture_name)), "{config}: the same attributes");
        assert_eq!(global_names(&file), global_names(&fixture(fixture_name)), "{config}");
    }
}

/// The attribute names of an expanded record.
fn names_of(line: &str) -> String {
    let mut names: Vec<&str> = line.split(',').filter_map(|p| p.split_once('=').map(|(n, _)| n)).collect();
    names.retain(|n| not_config(n));
    names.join(",")
}

#[test]
fn the_default_profile_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        common::run_in(dir.path(), "nested", &[("CALI_CONFIG", "hatchet-region-profile,output.format=json-split")]);
    assert!(out.status.success());
    assert!(dir.path().join("region_profile.json").exists());
}

#[test]
fn json_split_profile_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.json");
    run_config(&format!("hatchet-region-profile,output.format=json-split,output={}", file.display()));
    let ours: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let reference: serde_json::Value =
        serde_json::from_str(&fixture_text("cxx-example.hatchet-region-profile.json-split.json")).unwrap();
    for key in ["columns", "column_metadata", "nodes"] {
        assert_eq!(ours[key], reference[key], "{key}");
    }
    let shape = |v: &serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value)> {
        v["data"].as_array().unwrap().iter().map(|row| (row[0].clone(), row[2].clone())).collect()
    };
    assert_eq!(shape(&ours), shape(&reference), "node order and path of each row");
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> =
            v.as_object().unwrap().keys().filter(|k| *k != "caliper.config" && in_the_reference(k)).cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&ours), keys(&reference));
}

#[test]
fn json_profile_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.json");
    run_config(&format!("hatchet-region-profile,output.format=json,output={}", file.display()));
    let text = std::fs::read_to_string(&file).unwrap();
    let ours: serde_json::Value = serde_json::from_str(&text).unwrap();
    let reference: serde_json::Value =
        serde_json::from_str(&fixture_text("cxx-example.hatchet-region-profile.json")).unwrap();
    let rows = |v: &serde_json::Value| -> Vec<(Vec<String>, serde_json::Value, serde_json::Value)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| (r.as_object().unwrap().keys().cloned().collect(), r["path"].clone(), r["Node order"].clone()))
            .collect()
    };
    assert_eq!(rows(&ours), rows(&reference));
    assert_eq!(
        text.lines().count(),
        fixture_text("cxx-example.hatchet-region-profile.json").lines().count(),
        "one row per line"
    );
}

#[test]
fn event_traces_match_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    for (options, fixture_name) in
        [("", "cxx-example.event-trace.cali"), (",time.inclusive", "cxx-example.event-trace-incl.cali")]
    {
        let file = dir.path().join("t.cali");
        run_config(&format!("event-trace{options},output={}", file.display()));
        let keep = |n: &str| !n.starts_with("time.") && not_config(n);
        assert_eq!(expand_with(&file, &keep), expand_with(&fixture(fixture_name), &keep), "{options}");
        let with_times = |p: &Path| -> Vec<String> { expand_with(p, &|_| true).iter().map(|l| names_of(l)).collect() };
        assert_eq!(with_times(&file), with_times(&fixture(fixture_name)), "{options}: the same time attributes");
        assert_eq!(global_names(&file), global_names(&fixture(fixture_name)), "{options}");
    }
}

/// `event-trace` writes Chrome trace-event JSON itself: the reference
/// converter's events for the same program (names, categories, phases,
/// pids and tids, in the same order), its times.
#[test]
fn event_trace_writes_the_reference_converters_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    run_config(&format!("event-trace,output.format=trace-event,output={}", file.display()));
    let ours: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let reference: serde_json::Value =
        serde_json::from_str(&fixture_text("cxx-example.event-trace.traceevent.json")).unwrap();
    // The same events but the tid, which is the thread's pthread.id here
    // (see event_trace_timelines_have_a_track_per_thread), 0 in the
    // reference's trace.
    let shape = |doc: &serde_json::Value| -> Vec<String> {
        let events = doc["traceEvents"].as_array().unwrap();
        events.iter().map(|e| format!("{} {} {} {}", e["pid"], e["ph"], e["name"], e["cat"])).collect()
    };
    assert_eq!(shape(&ours), shape(&reference));
    let tids: std::collections::BTreeSet<u64> =
        ours["traceEvents"].as_array().unwrap().iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    assert!(tids.len() == 1 && !tids.contains(&0), "{tids:?}");
    for event in ours["traceEvents"].as_array().unwrap() {
        assert!(event["ts"].as_f64().unwrap() > 0.0 && event["dur"].as_f64().unwrap() >= 0.0, "{event}");
    }
    assert_eq!(ours["otherData"]["cali.channel"], "event-trace");
    assert_eq!(ours["otherData"]["iterations"], "4");
}

/// In the timeline formats `event-trace` tells threads apart (the
/// `pthread` service's `pthread.id`): each thread's regions pair up on its
/// own tid, however their begins and ends interleave.
#[test]
fn event_trace_timelines_have_a_track_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    run("threads", &[("CALI_CONFIG", &format!("event-trace,output.format=trace-event,output={}", file.display()))]);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let mut by_tid: std::collections::BTreeMap<u64, Vec<&serde_json::Value>> = Default::default();
    for e in events {
        by_tid.entry(e["tid"].as_u64().expect("a pthread.id")).or_default().push(e);
    }
    let names = |tid: &u64| by_tid[tid].iter().map(|e| e["name"].as_str().unwrap()).collect::<Vec<_>>();
    let mut shapes: Vec<Vec<&str>> = by_tid.keys().map(names).collect();
    shapes.sort();
    assert_eq!(shapes, [vec!["inner", "worker"], vec!["inner", "worker"], vec!["main"]], "{doc}");
    for events in by_tid.values().filter(|e| e.len() == 2) {
        let span =
            |e: &serde_json::Value| (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap());
        let (inner, worker) = (span(events[0]), span(events[1]));
        assert!(worker.0 <= inner.0 && inner.1 <= worker.1, "inner inside its own thread's worker: {events:?}");
        assert!(worker.1 - worker.0 >= 25_000.0, "the worker's whole 25 ms: {events:?}");
    }
}

/// `output.format=perfetto` writes a Perfetto trace: `Trace.packet`
/// entries (field 1, length-delimited) holding the region names. (The
/// layout is checked by decoding in caliper-query's tests.)
#[test]
fn event_trace_writes_a_perfetto_trace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace");
    run_config(&format!("event-trace,output.format=perfetto,output={}", file.display()));
    let bytes = std::fs::read(dir.path().join("trace.perfetto-trace")).unwrap();
    assert_eq!(bytes[0], 0x0a, "a Trace.packet field first");
    for name in ["main", "init", "mainloop", "foo", "iteration#mainloop"] {
        assert!(bytes.windows(name.len()).any(|w| w == name.as_bytes()), "{name}");
    }
}

#[test]
fn spot_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spot.cali");
    run_config(&format!("spot,output={}", file.display()));
    let reference = fixture("cxx-example.spot.cali");
    let keep = |n: &str| !is_time(n) && not_config(n);
    assert_eq!(expand_with(&file, &keep), expand_with(&reference, &keep));
    let names = |p: &Path| -> Vec<String> { expand_with(p, &|_| true).iter().map(|l| names_of(l)).collect() };
    assert_eq!(names(&file), names(&reference));
    let spot = |n: &str| n.starts_with("spot.") || n.starts_with("opts:") && n != "opts:output";
    assert_eq!(globals_with(&file, &spot), globals_with(&reference, &spot));
    assert_eq!(global_names(&file), global_names(&reference));
    // Derived attributes carry their alias and unit.
    let (db, _) = read(&file);
    let attr = db.attribute_by_name("avg#inclusive#sum#time.duration").unwrap();
    assert_eq!(db.metadata_by_name(attr, "attribute.alias").map(|v| v.to_string()), Some("Avg time/rank".into()));
    assert_eq!(db.metadata_by_name(attr, "attribute.unit").map(|v| v.to_string()), Some("sec".into()));
}

/// A bad config: one `== CALIPER: ` line, the program runs unprofiled.
fn assert_rejected(config: &str, message: &str) {
    let out = run_config(config);
    let err = stderr(&out);
    assert_eq!(err.trim_end(), format!("== CALIPER: CALI_CONFIG: error: {message}"), "{config}");
    assert_eq!(stdout(&out), "program output\n", "{config}");
}

#[test]
fn bad_configs_are_one_line_messages() {
    assert_rejected("runtime-reprot", "Unknown config or parameter: runtime-reprot");
    assert_rejected("runtime-report(region.count=maybe)", "Invalid value \"maybe\" for region.count");
    assert_rejected("runtime-report(output.format=json)", "Unknown option: output.format");
    assert_rejected("cuda-activity-profile(output.format=xml)", "cuda-activity-profile: Invalid output format \"xml\"");
    assert_rejected("hatchet-region-profile(output.format=xml)", "runtime-profile: Invalid output format \"xml\"");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ \"name\": \"x\",\n  \"services\" [ ] }").unwrap();
    assert_rejected(
        &format!("load({}),runtime-report", bad.display()),
        &format!("{}:2:14: expected ':' after key \"services\"", bad.display()),
    );
}

#[test]
fn an_unwritable_output_is_a_message_not_a_failure() {
    for config in ["runtime-report,output=/proc/no/such/dir/r.txt", "hatchet-region-profile,output=/proc/no/such/dir/p"]
    {
        let out = run_config(config);
        let err = stderr(&out);
        assert!(err.starts_with("== CALIPER: Could not open output stream /proc/no/such/dir/"), "{config}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(stdout(&out), "program output\n");
    }
}

/// The first column of a report's rows (after the header), trimmed.
fn report_paths(out: &str) -> Vec<String> {
    let rows = out.lines().filter(|l| !l.is_empty() && *l != "program output").skip(1);
    let width = out.lines().find(|l| l.starts_with("Path")).and_then(|h| h.find("Time (E)")).unwrap_or(0);
    rows.map(|l| l[..width].trim_end().to_string()).collect()
}

#[test]
fn region_filters_choose_what_triggers_snapshots() {
    let paths = |options: &str| report_paths(&stdout(&run_config(&format!("runtime-report,output=stdout,{options}"))));
    assert_eq!(paths("exclude_regions=init"), ["main", "  mainloop", "    foo"]);
    assert_eq!(paths("include_regions=\"startswith(main)\""), ["main", "  mainloop"]);
    // main itself does not trigger, but the begin of mainloop is measured
    // in its context.
    assert_eq!(paths("include_regions=\"regex(ma.*p|foo)\""), ["main", "  mainloop", "    foo"]);
    assert_eq!(paths("include_regions=\"regex(.*oo.*)\""), ["main", "  mainloop", "    foo"]);
    // Filters look at string values only: the (integer) iterations of
    // mainloop still trigger.
    assert_eq!(paths("include_regions=\"regex(in.*)\""), ["main", "  init", "  mainloop"]);
    assert_eq!(paths("include_branches=mainloop"), ["main", "  mainloop", "    foo"]);
    assert_eq!(paths("include_branches=init"), ["main", "  init"]);
    assert_eq!(paths("level=phase"), Vec::<String>::new(), "no phase regions: nothing but the header");
    let out = run_config("runtime-report,output=stdout,include_regions=\"match(a\"");
    assert!(stderr(&out).contains("CALI_EVENT_INCLUDE_REGIONS: in match(): missing ')'"), "{}", stderr(&out));
}

#[test]
fn loop_report_prints_a_summary_and_time_series() {
    let out = stdout(&run_config("loop-report,output=stdout,iteration_interval=2"));
    let lines: Vec<&str> = out.lines().collect();
    let at = |text: &str| lines.iter().position(|l| *l == text).unwrap_or_else(|| panic!("{text:?} in\n{out}"));
    let summary = at("Loop summary:");
    assert_eq!(
        lines[summary + 3].split_whitespace().collect::<Vec<_>>().join(" "),
        "Loop Iterations Time (s) Iter/s (min) Iter/s (max) Iter/s (avg)"
    );
    let row: Vec<&str> = lines[summary + 4].split_whitespace().collect();
    assert_eq!(row[..2], ["mainloop", "4"]);
    // Max and avg are iterations per second (not 1e18 off); the min is the
    // block after the last iteration, which has none.
    let rates: Vec<f64> = row[3..].iter().map(|v| v.parse().unwrap()).collect();
    assert!(rates[1] > 1.0 && rates[2] > 1.0 && rates[0] <= rates[2], "{row:?}");
    let series = at("Iteration summary (mainloop):");
    assert_eq!(
        lines[series + 3].split_whitespace().collect::<Vec<_>>(),
        ["Block", "Iterations", "Time", "(s)", "Iter/s"]
    );
    let blocks: Vec<Vec<&str>> = lines[series + 4..].iter().map(|l| l.split_whitespace().collect()).collect();
    assert!(blocks.iter().any(|b| b[..2] == ["0", "2"]) && blocks.iter().any(|b| b[..2] == ["2", "2"]), "{out}");
}

/// With `target_loops` naming a loop inside another, the snapshots are
/// the inner loop's and the report names it, as the reference does (its
/// loop value is the innermost one), not the loop around it.
#[test]
fn loop_report_names_the_target_loop() {
    let out = stdout(&run("nested_loops", &[("CALI_CONFIG", "loop-report,output=stdout,target_loops=inner")]));
    let lines: Vec<&str> = out.lines().collect();
    let headers: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("Iteration summary")).collect();
    assert_eq!(headers, ["Iteration summary (inner):"], "{out}");
    let series = lines.iter().position(|l| l.starts_with("Iteration summary")).unwrap();
    let iterations: i64 =
        lines[series + 4..].iter().filter_map(|l| l.split_whitespace().rev().nth(2)?.parse::<i64>().ok()).sum();
    assert_eq!(iterations, 6, "both runs of the inner loop:\n{out}");
}

#[test]
fn spot_time_series() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spot.cali");
    run_config(&format!("spot,timeseries,timeseries.iteration_interval=1,output={}", file.display()));
    let series = expand_with(&file, &|n| ["spot.channel", "loop", "block", "max#sum#loop.iterations"].contains(&n));
    let series: Vec<&String> = series.iter().filter(|l| l.contains("timeseries")).collect();
    assert_eq!(
        series,
        (0..4)
            .map(|b| format!("block={b},loop=mainloop,max#sum#loop.iterations=1,spot.channel=timeseries"))
            .collect::<Vec<_>>()
            .iter()
            .collect::<Vec<_>>()
    );
    let globals = globals_with(&file, &|n| n == "spot.channels" || n == "spot.timeseries.metrics");
    assert_eq!(
        globals,
        "spot.channels=regionprofile,timeseries,spot.timeseries.metrics=max#sum#loop.iterations,max#scale#time.duration.ns,avg#ratio#loop.iterations/time.duration.ns"
    );
    let out = run_config("spot(timeseries,timeseries.metrics=blagarbl)");
    assert_eq!(stderr(&out).trim_end(), "== CALIPER: CALI_CONFIG: error: Unknown option: blagarbl");
}

#[test]
fn several_managers_beside_cali_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().display().to_string();
    let out = run("managers", &[("CALI_CONFIG", "runtime-report,output=stdout"), ("SCENARIO_DIR", &path)]);
    assert_eq!(report_paths(&stdout(&out)), ["main", "  init", "  mainloop", "    foo"], "{}", stderr(&out));
    let keep = |n: &str| !n.starts_with("time.") && not_config(n);
    assert_eq!(
        expand_with(&dir.path().join("trace.cali"), &keep),
        expand_with(&fixture("cxx-example.event-trace.cali"), &keep)
    );
    let keep = |n: &str| !is_time(n) && not_config(n);
    assert_eq!(
        expand_with(&dir.path().join("profile.cali"), &keep),
        expand_with(&fixture("cxx-example.runtime-profile.cali"), &keep)
    );
    let globals = globals_with(&dir.path().join("trace.cali"), &|n| n == "opts:trace.buffer.policy");
    assert_eq!(globals, "opts:trace.buffer.policy=stop");
}

/// `libpfm` counts events per snapshot through `perf_event_open`: each
/// region's `task-clock` (the thread's CPU time there) is positive and at
/// most its wall time; `cycles` is counted where the machine has a PMU, and
/// otherwise left out with one line while the rest is counted.
#[test]
fn libpfm_counts_events_per_region() {
    let query = "select region,sum(libpfm.counter.task-clock),sum(libpfm.counter.cycles),sum(time.duration.ns) \
                 group by region format expand";
    let out = run(
        "nested",
        &[
            ("CALI_SERVICES_ENABLE", "event,libpfm,timer,trace,report"),
            ("CALI_LIBPFM_EVENTS", "task-clock,cycles"),
            ("CALI_LIBPFM_ENABLE_SAMPLING", "false"),
            ("CALI_REPORT_CONFIG", query),
        ],
    );
    let (text, err) = (stdout(&out), stderr(&out));
    let no_pmu = "== CALIPER: libpfm: cycles: no hardware performance counters on this machine; left out";
    let has_pmu = !err.contains(no_pmu);
    let field = |line: &str, name: &str| -> Option<u64> {
        line.split(',').find_map(|f| f.strip_prefix(&format!("{name}="))).and_then(|v| v.parse().ok())
    };
    for region in ["main", "main/init", "main/foo"] {
        let line =
            text.lines().find(|l| l.starts_with(&format!("region={region},"))).unwrap_or_else(|| panic!("{text}"));
        let cpu = field(line, "sum#libpfm.counter.task-clock").unwrap_or_else(|| panic!("{line}"));
        let wall = field(line, "sum#time.duration.ns").unwrap_or_else(|| panic!("{line}"));
        assert!(cpu > 0 && cpu <= wall + wall / 10 + 50_000, "{line}");
        assert_eq!(field(line, "sum#libpfm.counter.cycles").is_some_and(|c| c > 0), has_pmu, "{line}\n{err}");
    }
}

/// `topdown.toplevel` (the `perf_topdown` service): on a processor with
/// Intel's perf metrics, the report has the four top-level categories,
/// which share each region's slots; anywhere else one line says why there
/// are none, and the rest of the report is whole.
#[test]
fn topdown_reports_the_top_level_or_says_why_not() {
    let out = run_config("runtime-report,topdown.toplevel,output=stdout");
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}");
    let header = text.lines().find(|l| l.starts_with("Path")).unwrap_or_else(|| panic!("{text}"));
    assert!(header.contains("Time (E)"), "{text}");
    let rows: Vec<&str> = text.lines().map(str::trim_start).collect();
    for region in ["main", "init", "foo"] {
        assert!(rows.iter().any(|r| r.starts_with(region)), "{region} missing:\n{text}");
    }
    let no_events = "== CALIPER: perf_topdown: this processor has no top-down events";
    let categories = ["Retiring", "Bad speculation", "Front end bound", "Back end bound"];
    if err.contains(no_events) {
        let ours: Vec<&str> = err.lines().filter(|l| l.contains("perf_topdown")).collect();
        assert_eq!(ours.len(), 1, "{err}");
        assert!(categories.iter().all(|c| !header.contains(c)), "{text}");
    } else {
        assert!(categories.iter().all(|c| header.contains(c)), "{text}\n{err}");
    }
}
