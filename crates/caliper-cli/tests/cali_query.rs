//! The first cali-query: merging streams, options and error handling.

use caliper_testutil::{fixture, read_with_caliper_reader, repro_input};
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn cali_query(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cali-query")).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn merged_stream_is_the_union_for_caliper_reader() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("cxx-example.event-trace.cali");
    let b = fixture("c-example.hatchet-region-profile.cali");
    let merged = dir.path().join("merged.cali");
    let out = cali_query(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    fs::write(&merged, &out.stdout).unwrap();

    let got = read_with_caliper_reader(&[&a, &b, &merged]);
    let [ra, rb, rm] = [0, 1, 2].map(|i| got[i]["records"].as_array().unwrap().clone());
    let union: Vec<Value> = ra.iter().chain(&rb).cloned().collect();
    assert_eq!(rm, union);
    assert_eq!(rm.len(), 22 + 5);

    // The merged globals hold every key of both inputs.
    let gm = got[2]["globals"].as_object().unwrap();
    for i in [0, 1] {
        for key in got[i]["globals"].as_object().unwrap().keys() {
            assert!(gm.contains_key(key), "{key}");
        }
    }
}

#[test]
fn reads_stdin_and_writes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("copy.cali");
    let input = fs::File::open(fixture("c-example.event-trace.cali")).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_cali-query"))
        .args(["-o", out_path.to_str().unwrap()])
        .stdin(input)
        .status()
        .unwrap();
    assert!(status.success());
    let got = read_with_caliper_reader(&[&fixture("c-example.event-trace.cali"), &out_path]);
    assert_eq!(got[0], got[1]);
}

#[test]
fn output_reads_back_through_cali_query() {
    // Our own output is valid input, and a second pass changes nothing.
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.cali");
    let out = cali_query(&[fixture("cxx-example.spot.cali").to_str().unwrap(), "-o", first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let second = cali_query(&[first.to_str().unwrap()]);
    assert!(second.status.success());
    assert_eq!(second.stdout, fs::read(&first).unwrap());
}

#[test]
fn bad_file_among_several_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.cali");
    fs::write(&bad, "__rec=node,id=12,attr=10,data=276,parent=3\n__rec=ctx,ref=77\n").unwrap();
    let good = fixture("c-example.event-trace.cali");
    let out = cali_query(&[good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), format!("cali-query: error: {}:2:15: unknown node id 77\n", bad.display()));
}

#[test]
fn missing_and_empty_inputs() {
    let out = cali_query(&["/nonexistent/input.cali"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("cali-query: error: /nonexistent/input.cali: cannot open file:"),
        "{}",
        stderr(&out)
    );
    let out = cali_query(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "cali-query: error: <stdin>: no records: the input is empty\n");
}

#[test]
fn unwritable_output() {
    let out = cali_query(&[fixture("c-example.event-trace.cali").to_str().unwrap(), "-o", "/nonexistent/dir/out.cali"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("cali-query: error: cannot create /nonexistent/dir/out.cali:"));
}

#[test]
fn full_disk_is_an_error_not_a_crash() {
    if !Path::new("/dev/full").exists() {
        panic!("/dev/full is needed for this test");
    }
    let out = cali_query(&[fixture("cxx-example.spot.cali").to_str().unwrap(), "-o", "/dev/full"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("cali-query: error: cannot write /dev/full:"), "{}", stderr(&out));
}

#[test]
fn unknown_option_prints_the_table() {
    let out = cali_query(&["--bogus"]);
    assert_eq!(out.status.code(), Some(255));
    let err = stderr(&out);
    assert!(err.starts_with("cali-query: error: unknown option: --bogus\n"), "{err}");
    assert!(err.contains("-o, --output FILE"));
}

#[test]
fn help_and_version() {
    let out = cali_query(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Usage: cali-query [OPTION]... [FILE]...\n"));
    // The Caliper API version, which scripts compare with the reference's,
    // then this implementation's, on standard error as the reference's.
    let out = cali_query(&["-V"]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(stderr(&out), format!("cali-query 2.15.0 (caliper-rs {})\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn help_topics() {
    let out = cali_query(&["--help=select"]);
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("  sum(attribute) -> sum#attribute\n"));
    let out = cali_query(&["--help", "calql"]);
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("CalQL, the Caliper query language"));
    let out = cali_query(&["--help=services"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for service in ["aggregate", "event", "recorder", "report", "timestamp", "trace"] {
        assert!(text.lines().any(|l| l.starts_with(service)), "{service} in\n{text}");
    }
    let out = cali_query(&["--help=trace"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("trace service:\n"), "{text}");
    assert!(text.contains("\n  CALI_TRACE_BUFFER_POLICY=grow (string)\n"), "{text}");
    let out = cali_query(&["--help=configs"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Available config recipes:\n"), "{text}");
    for config in ["runtime-report", "runtime-profile", "event-trace", "spot"] {
        assert!(text.lines().any(|l| l.starts_with(&format!(" {config} "))), "{config} in\n{text}");
    }
    let out = cali_query(&["--help=hatchet-region-profile"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("runtime-profile\n Write a region time profile"), "{text}");
    assert!(text.contains("\n   output.format "), "{text}");
    let out = cali_query(&["--help=nonsense"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Unknown help option \"nonsense\". Available options: calql, select"));
}

#[test]
fn bad_query_text_names_the_position() {
    let out = cali_query(&["-q", "select count( from x", fixture("c-example.event-trace.cali").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(254));
    assert_eq!(stderr(&out), "cali-query: Invalid query: Expected ')' (at column 20)\n");
}

#[test]
fn unknown_attributes_give_empty_columns() {
    let trace = fixture("c-example.event-trace.cali");
    let out = cali_query(&["-q", "select region,nosuchattribute format table", trace.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("region    nosuchattribute \n"), "{text}");
}

#[test]
fn continue_past_a_bad_file_but_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.cali");
    fs::write(&bad, "__rec=node,id=12,attr=10,data=276,parent=3\n__rec=ctx,ref=77\n").unwrap();
    let good = fixture("c-example.event-trace.cali");
    let out = cali_query(&["--continue", "-e", bad.to_str().unwrap(), good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:2:15: unknown node id 77 (skipping the rest of this input)", bad.display())),
        "{err}"
    );
    assert!(err.contains("1 input(s) could not be read completely"), "{err}");
    // The good file's records are all there.
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 22);
}

#[test]
fn profile_option_profiles_the_tool_itself() {
    let input = fixture("cxx-example.event-trace.cali");
    let out = cali_query(&[
        "-P",
        "runtime-report,output=stdout",
        "-q",
        "select count() format table",
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let (query_output, report) = text.split_at(text.find("Path ").expect("a report"));
    assert!(query_output.starts_with("count \n"), "the query's output first:\n{text}");
    let report: Vec<&str> = report.lines().map(|l| l.split_whitespace().next().unwrap_or("")).collect();
    assert_eq!(report, ["Path", "run", "read", "write"], "{text}");
    let out = cali_query(&["-P", "runtime-reprot", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(255));
    assert!(stderr(&out).starts_with("cali-query: error: profile config: Unknown config or parameter: runtime-reprot"));
}

#[test]
fn a_bad_line_still_prints_what_was_read_before_it() {
    let truncated = repro_input("truncated.cali");
    let path = truncated.to_str().unwrap();
    let message = format!("cali-query: error: {path}:17:18: field \"att\" has no value (truncated line?)\n");
    for (args, expected) in [
        // The table's headers are the names, the tree's the file's aliases
        // (`time`, `Node order`), as the reference's.
        (vec!["-t"], "0.000007                  1 main"),
        (vec!["-T"], "main 0.000007          1"),
        (vec!["-j"], "{\"path\":\"main\",\"min#aggregate.slot\":1"),
        (vec!["-q", "select * format json-split"], "[ 1, 2, 4, 1, 0.000007, 5 ]"),
        (vec!["-q", "select region,count() group by region format table"], "main       1"),
    ] {
        let out = cali_query(&[args.as_slice(), &[path]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), message, "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(expected), "{args:?}: the records before the bad line:\n{text}");
    }
}

#[test]
fn malformed_selectors_queries_and_node_ids_are_errors() {
    let trace = fixture("c-example.event-trace.cali");
    let trace = trace.to_str().unwrap();
    let out = cali_query(&["-s", "-,=,==", trace]);
    assert_eq!(out.status.code(), Some(254));
    assert_eq!(stderr(&out), "cali-query: Invalid query: -s -,=,==: malformed selector clause \"-\" (at column 1)\n");
    assert!(out.stdout.is_empty());
    let out = cali_query(&["-q", r#"select * where region="\"#, trace]);
    assert_eq!(out.status.code(), Some(254));
    assert_eq!(
        stderr(&out),
        "cali-query: Invalid query: Unterminated quote: '\"' without a closing '\"' (at column 23)\n"
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ids.cali");
    let header = "__rec=node,id=34,attr=10,data=276,parent=3\n__rec=node,id=35,attr=8,data=region,parent=34\n";
    fs::write(
        &file,
        format!("{header}__rec=node,id=36,attr=35,data=main\n__rec=node,id=36,attr=35,data=other\n__rec=ctx,ref=36\n"),
    )
    .unwrap();
    let out = cali_query(&["-e", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(
        stderr(&out),
        format!("cali-query: warning: {}:4: node id 36 defined again; the first definition is kept\n", file.display())
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "region=main\n");
    fs::write(&file, format!("{header}__rec=node,id=18446744073709551615,attr=35,data=x\n")).unwrap();
    let out = cali_query(&["-e", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "cali-query: error: {}:3:15: node id 18446744073709551615 is the invalid id (CALI_INV_ID), not a node\n",
            file.display()
        )
    );
}

/// `group by class.iteration` groups the reference's event trace by the
/// loop's iteration attribute, which carries `class.iteration`: the
/// records outside the loop, then one group per iteration.
#[test]
fn group_by_a_class_groups_by_the_attributes_that_carry_it() {
    let trace = fixture("cxx-example.event-trace.cali");
    let query = "select *,count() group by class.iteration format expand";
    let out = cali_query(&["-q", query, trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "count=10",
            "iteration#mainloop=0,count=3",
            "iteration#mainloop=1,count=3",
            "iteration#mainloop=2,count=3",
            "iteration#mainloop=3,count=3"
        ],
        "{stdout}"
    );
}

/// json-split shows a nested attribute other than `region` that the query
/// selects or groups by (`loop`) in its `path` column, as the reference
/// does (spec 9.7), instead of leaving it out.
#[test]
fn json_split_shows_a_selected_or_grouped_loop_in_the_path_column() {
    let trace = fixture("cxx-example.event-trace.cali");
    for query in
        ["select count(),loop group by loop format json-split", "aggregate count() group by loop format json-split"]
    {
        let out = cali_query(&["-q", query, trace.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["columns"], serde_json::json!(["count", "path"]), "{query}");
        assert_eq!(json["nodes"], serde_json::json!([{ "label": "mainloop", "column": "path" }]), "{query}");
        assert_eq!(json["data"], serde_json::json!([[5, null], [17, 0]]), "{query}");
    }
}

/// A synthetic trace big enough for the progress bar (about 11 MB).
fn big_trace(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("big.cali");
    let mut file = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    caliper_testutil::synthetic::write_event_trace(&mut file, 200_000).unwrap();
    drop(file);
    assert!(fs::metadata(&path).unwrap().len() > 8 << 20);
    path
}

#[test]
fn big_inputs_draw_no_progress_bar_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let big = big_trace(dir.path());
    let out = cali_query(&["--aggregate=count()", "--aggregate-key=none", "-e", big.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "count=200000\n");
    assert_eq!(stderr(&out), "", "nothing on a standard error that is not a terminal");
}

/// Under a terminal (`script` gives the tool one) the bar is drawn on
/// standard error while a big input is read, then cleared; with the
/// results going to that terminal too, it is not drawn.
#[test]
fn big_inputs_draw_a_progress_bar_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let big = big_trace(dir.path());
    let result = dir.path().join("count.txt");
    let under_terminal = |command: String| -> String {
        let out = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .expect("script (bsdutils) runs; scripts/test-all.sh installs it");
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let tool = env!("CARGO_BIN_EXE_cali-query");
    let query = "'--aggregate=count()' --aggregate-key=none -e";
    let shown = under_terminal(format!("{tool} {query} -o {} {}", result.display(), big.display()));
    assert!(shown.contains("MiB") && shown.contains(big.to_str().unwrap()), "{shown:?}");
    assert_eq!(fs::read_to_string(&result).unwrap(), "count=200000\n");
    let to_terminal = under_terminal(format!("{tool} {query} {}", big.display()));
    assert_eq!(to_terminal.trim_end(), "count=200000", "no bar over results on the terminal");
}

/// The tool converts the reference's event traces to the reference
/// converter's trace-event documents, byte for byte, and to Perfetto traces
/// (a `Trace.packet` first; caliper-query's tests decode them).
#[test]
fn converts_event_traces_to_timelines() {
    for program in ["c-example", "cxx-example"] {
        let trace = fixture(&format!("{program}.event-trace.cali"));
        let out = cali_query(&["-q", "format trace-event", trace.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let expected = fs::read(fixture(&format!("{program}.event-trace.traceevent.json"))).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&expected), "{program}");
        let out = cali_query(&["-q", "format perfetto", trace.to_str().unwrap()]);
        assert!(out.status.success() && out.stdout.first() == Some(&0x0a), "{}", stderr(&out));
    }
}

/// A tree column no record has is named on stderr, as the reference does;
/// with no records at all (an empty profile, here every record filtered
/// out) nothing is said.
#[test]
fn a_missing_tree_column_is_named_unless_there_are_no_records() {
    let query = "select count(),sum(no.such.metric) group by prop:nested format tree";
    let out = cali_query(&["-q", query, fixture("c-example.event-trace.cali").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("TreeFormatter: Attribute \"sum#no.such.metric\" not found."), "{}", stderr(&out));
    let none = query.replace(" group by", " where no.such.attribute group by");
    let out = cali_query(&["-q", &none, fixture("c-example.event-trace.cali").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Path"), "{}", String::from_utf8_lossy(&out.stdout));
}
