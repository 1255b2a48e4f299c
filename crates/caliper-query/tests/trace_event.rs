//! `format trace-event` against the reference converter's output on the
//! same event traces.

mod common;

use caliper_testutil::fixture;
use serde_json::Value;

/// Runs `query` over a `.cali` stream and returns the output text.
fn run_on(query: &str, data: &[u8]) -> String {
    String::from_utf8(common::query_output(query, "trace", data)).unwrap()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

#[test]
fn the_reference_event_traces_convert_to_the_reference_converters_documents() {
    for program in ["c-example", "cxx-example"] {
        let cali = std::fs::read(fixture(&format!("{program}.event-trace.cali"))).unwrap();
        let expected = std::fs::read_to_string(fixture(&format!("{program}.event-trace.traceevent.json"))).unwrap();
        let ours = run_on("format trace-event", &cali);
        assert_eq!(parse(&ours), parse(&expected), "{program}:\n{ours}");
        // Python's json layout too, key order and separators.
        assert_eq!(ours, expected, "{program}");
    }
}

#[test]
fn threads_and_processes_come_from_their_attributes() {
    // Two threads (pthread.id) of rank 3, each with a region open, ending
    // in the opposite order: each end closes its own thread's region.
    let doc = parse(&run_on("format trace-event", trace_with_types().as_bytes()));
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{doc}");
    let a = events.iter().find(|e| e["name"] == "a").unwrap();
    let b = events.iter().find(|e| e["name"] == "b").unwrap();
    assert_eq!((a["pid"].as_i64(), a["tid"].as_i64()), (Some(3), Some(11)));
    assert_eq!((b["pid"].as_i64(), b["tid"].as_i64()), (Some(3), Some(22)));
    assert_eq!((a["ts"].as_f64(), a["dur"].as_f64()), (Some(1.0), Some(4.0)));
    assert_eq!((b["ts"].as_f64(), b["dur"].as_f64()), (Some(2.0), Some(1.0)));
    assert_eq!(a["cat"], "region");
}

/// A two-thread trace of one process, as the runtime writes it with the
/// `pthread` service under MPI: attributes declared with their types.
fn trace_with_types() -> String {
    let mut text = String::new();
    let attrs = [
        (12, "event.begin#region", "string"),
        (13, "event.end#region", "string"),
        (14, "time.offset.ns", "uint"),
        (15, "pthread.id", "uint"),
        (16, "mpi.rank", "int"),
        (17, "region", "string"),
    ];
    for (id, name, ty) in attrs {
        let ty_node = match ty {
            "string" => 3,
            "uint" => 2,
            _ => 1,
        };
        text.push_str(&format!("__rec=node,id={id},attr=8,data={name},parent={ty_node}\n"));
    }
    for (attr, region, ns, tid) in [(12, "a", 1000, 11), (12, "b", 2000, 22), (13, "a", 5000, 11), (13, "b", 3000, 22)]
    {
        text.push_str(&format!("__rec=ctx,attr={attr}=14=15=16,data={region}={ns}={tid}=3\n"));
    }
    text
}

#[test]
fn counters_are_counter_events_when_named() {
    let cali = std::fs::read(fixture("cxx-example.event-trace.cali")).unwrap();
    let doc = parse(&run_on("format trace-event(counters=\"region.count\")", &cali));
    let counters: Vec<&Value> = doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "C").collect();
    assert!(!counters.is_empty(), "{doc}");
    assert!(counters.iter().all(|c| c["name"] == "region.count" && c["args"]["region.count"].as_f64() == Some(1.0)));
    // Without the argument there are none, as with the reference's converter.
    let plain = parse(&run_on("format trace-event", &cali));
    assert!(plain["traceEvents"].as_array().unwrap().iter().all(|e| e["ph"] == "X"));
}
