//! `format perfetto`, decoded with the published Perfetto trace protos
//! (the `perfetto_protos` crate, and Google's Python ones from the
//! `perfetto` package) and replayed as the trace processor does: tracks
//! from their descriptors, names through the sequence's interned data,
//! slices from begin/end pairs on each track.

mod common;

use caliper_testutil::fixture;
use perfetto_protos::trace::Trace;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;
use std::collections::HashMap;

/// Runs `query` over a `.cali` stream and returns the output bytes.
fn run_on(query: &str, data: &[u8]) -> Vec<u8> {
    common::query_output(query, "trace", data)
}

/// A slice as the trace processor would show it.
#[derive(Clone, Debug, PartialEq)]
struct Slice {
    /// The name of the thread track it is on.
    thread: String,
    category: String,
    name: String,
    begin_ns: u64,
    end_ns: u64,
    /// Nesting depth on its track (0 outermost).
    depth: usize,
}

/// What a decoded trace holds.
#[derive(Default, Debug)]
struct Decoded {
    /// Process names by pid.
    processes: HashMap<i32, String>,
    /// (pid, tid, thread name) of each thread track.
    threads: Vec<(i32, i32, String)>,
    slices: Vec<Slice>,
    /// Counter track name and its (time, value) points.
    counters: HashMap<String, Vec<(u64, f64)>>,
}

fn decode(bytes: &[u8]) -> Decoded {
    let trace = Trace::parse_from_bytes(bytes).expect("a Perfetto Trace message");
    let mut out = Decoded::default();
    let mut track_names: HashMap<u64, String> = HashMap::new();
    let mut counter_tracks: HashMap<u64, String> = HashMap::new();
    let (mut names, mut categories) = (HashMap::new(), HashMap::new());
    let mut open: HashMap<u64, Vec<Slice>> = HashMap::new();
    for (i, packet) in trace.packet.iter().enumerate() {
        assert_eq!(packet.trusted_packet_sequence_id(), 1);
        let cleared = packet.sequence_flags() & 1 != 0;
        assert_eq!(cleared, i == 0, "only the first packet clears the interning state");
        if let Some(interned) = packet.interned_data.as_ref() {
            for n in &interned.event_names {
                assert!(names.insert(n.iid(), n.name().to_string()).is_none(), "iid interned twice");
            }
            for c in &interned.event_categories {
                assert!(categories.insert(c.iid(), c.name().to_string()).is_none(), "iid interned twice");
            }
        }
        if packet.has_track_descriptor() {
            let track = packet.track_descriptor();
            if let Some(process) = track.process.as_ref() {
                out.processes.insert(process.pid(), process.process_name().to_string());
            } else if let Some(thread) = track.thread.as_ref() {
                out.threads.push((thread.pid(), thread.tid(), thread.thread_name().to_string()));
                track_names.insert(track.uuid(), thread.thread_name().to_string());
            } else if track.counter.is_some() {
                assert!(track_names.contains_key(&track.parent_uuid()), "a counter track under a thread track");
                counter_tracks.insert(track.uuid(), track.name().to_string());
            }
        }
        if packet.has_track_event() {
            let event = packet.track_event();
            let uuid = event.track_uuid();
            match event.type_() {
                Type::TYPE_SLICE_BEGIN => {
                    let stack = open.entry(uuid).or_default();
                    stack.push(Slice {
                        thread: track_names[&uuid].clone(),
                        category: categories[&event.category_iids[0]].clone(),
                        name: names[&event.name_iid()].clone(),
                        begin_ns: packet.timestamp(),
                        end_ns: 0,
                        depth: stack.len(),
                    });
                }
                Type::TYPE_SLICE_END => {
                    let mut slice = open.get_mut(&uuid).and_then(Vec::pop).expect("an end with a begin");
                    slice.end_ns = packet.timestamp();
                    out.slices.push(slice);
                }
                Type::TYPE_COUNTER => {
                    let name = counter_tracks[&uuid].clone();
                    out.counters.entry(name).or_default().push((packet.timestamp(), event.double_counter_value()));
                }
                other => panic!("unexpected event type {other:?}"),
            }
        }
    }
    assert!(open.values().all(Vec::is_empty), "every slice ends: {open:?}");
    out
}

fn slice<'a>(decoded: &'a Decoded, category: &str, name: &str) -> Vec<&'a Slice> {
    decoded.slices.iter().filter(|s| s.category == category && s.name == name).collect()
}

#[test]
fn the_reference_event_trace_becomes_nested_slices_on_one_thread() {
    let cali = std::fs::read(fixture("cxx-example.event-trace.cali")).unwrap();
    let decoded = decode(&run_on("format perfetto", &cali));
    assert_eq!(decoded.processes, HashMap::from([(2, "process 0".to_string())]));
    assert_eq!(decoded.threads, vec![(2, 4, "thread 0".to_string())]);
    // The same region instances, at the same times, as the reference
    // converter's JSON (µs there).
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("cxx-example.event-trace.traceevent.json")).unwrap())
            .unwrap();
    let events = reference["traceEvents"].as_array().unwrap();
    assert_eq!(decoded.slices.len(), events.len());
    for event in events {
        let (ts, dur) = (event["ts"].as_f64().unwrap(), event["dur"].as_f64().unwrap());
        let found =
            slice(&decoded, event["cat"].as_str().unwrap(), event["name"].as_str().unwrap()).into_iter().any(|s| {
                (s.begin_ns as f64 - ts * 1e3).abs() < 0.5 && ((s.end_ns - s.begin_ns) as f64 - dur * 1e3).abs() < 0.5
            });
        assert!(found, "{event} in {:#?}", decoded.slices);
    }
    // main > mainloop (loop) > iteration > foo; main > init.
    assert_eq!(slice(&decoded, "region", "main")[0].depth, 0);
    assert_eq!(slice(&decoded, "region", "init")[0].depth, 1);
    assert_eq!(slice(&decoded, "loop", "mainloop")[0].depth, 1);
    assert_eq!(slice(&decoded, "iteration#mainloop", "2")[0].depth, 2);
    assert!(slice(&decoded, "region", "foo").iter().all(|s| s.depth == 3));
    // Its measurements are the timer's and region.count, which the slices
    // show: no counters. (The loop's iteration number is context.)
    assert!(decoded.counters.is_empty(), "{:?}", decoded.counters);
    let named = decode(&run_on("format perfetto(counters=\"region.count\")", &cali));
    assert_eq!(named.counters.keys().collect::<Vec<_>>(), ["region.count"]);
    assert!(named.counters["region.count"].iter().all(|&(_, v)| v == 1.0));
}

/// A trace of attributes declared with their types (a measurement's is
/// `double` and aggregatable, the others' as-value), and records of
/// `attr=value` immediates.
fn typed_trace(attrs: &[(&str, &str)], rows: &[&[(&str, &str)]]) -> String {
    let mut text = String::new();
    let mut ids = HashMap::new();
    for (i, (name, ty)) in attrs.iter().enumerate() {
        let type_node = match *ty {
            "int" => 1,
            "uint" => 2,
            "string" => 3,
            "measurement" => 5,
            other => panic!("{other}"),
        };
        let props = if *ty == "measurement" { 2049 } else { 1 };
        let id = 100 + 2 * i;
        ids.insert(*name, id);
        text.push_str(&format!("__rec=node,id={},attr=10,data={props},parent={type_node}\n", id + 1));
        text.push_str(&format!("__rec=node,id={id},attr=8,data={name},parent={}\n", id + 1));
    }
    for row in rows {
        let attr: Vec<String> = row.iter().map(|(a, _)| ids[a].to_string()).collect();
        let data: Vec<&str> = row.iter().map(|(_, v)| *v).collect();
        text.push_str(&format!("__rec=ctx,attr={},data={}\n", attr.join("="), data.join("=")));
    }
    text
}

const ATTRS: &[(&str, &str)] = &[
    ("event.begin#region", "string"),
    ("event.end#region", "string"),
    ("event.begin#phase", "string"),
    ("event.end#phase", "string"),
    ("time.offset.ns", "uint"),
    ("pthread.id", "uint"),
    ("mpi.rank", "int"),
    ("region", "string"),
    ("phase", "string"),
    ("mem.bytes", "measurement"),
    ("mem.label", "string"),
];

#[test]
fn threads_and_processes_get_tracks_named_by_their_attributes() {
    let trace = typed_trace(
        ATTRS,
        &[
            &[
                ("event.begin#region", "a"),
                ("time.offset.ns", "1000"),
                ("pthread.id", "140000000000"),
                ("mpi.rank", "3"),
            ],
            &[("event.begin#region", "b"), ("time.offset.ns", "2000"), ("pthread.id", "22"), ("mpi.rank", "3")],
            &[("event.end#region", "a"), ("time.offset.ns", "5000"), ("pthread.id", "140000000000"), ("mpi.rank", "3")],
            &[("event.end#region", "b"), ("time.offset.ns", "3000"), ("pthread.id", "22"), ("mpi.rank", "3")],
        ],
    );
    let decoded = decode(&run_on("format perfetto", trace.as_bytes()));
    assert_eq!(decoded.processes.values().collect::<Vec<_>>(), ["mpi.rank=3"]);
    let pid = *decoded.processes.keys().next().unwrap();
    let threads: Vec<&str> = decoded.threads.iter().map(|(_, _, name)| name.as_str()).collect();
    assert_eq!(threads, ["pthread.id=140000000000", "pthread.id=22"]);
    assert!(decoded.threads.iter().all(|&(p, tid, _)| p == pid && tid > 0 && tid != pid));
    let a = slice(&decoded, "region", "a")[0];
    let b = slice(&decoded, "region", "b")[0];
    assert_eq!((a.thread.as_str(), a.begin_ns, a.end_ns, a.depth), ("pthread.id=140000000000", 1000, 5000, 0));
    assert_eq!((b.thread.as_str(), b.begin_ns, b.end_ns, b.depth), ("pthread.id=22", 2000, 3000, 0));
}

#[test]
fn regions_that_do_not_nest_are_split_so_that_slices_do() {
    // region a [1,3), phase p [2,4): a ends inside p.
    let trace = typed_trace(
        ATTRS,
        &[
            &[("event.begin#region", "a"), ("time.offset.ns", "1")],
            &[("event.begin#phase", "p"), ("time.offset.ns", "2")],
            &[("event.end#region", "a"), ("time.offset.ns", "3")],
            &[("event.end#phase", "p"), ("time.offset.ns", "4")],
        ],
    );
    let decoded = decode(&run_on("format perfetto", trace.as_bytes()));
    let spans =
        |cat, name| slice(&decoded, cat, name).iter().map(|s| (s.begin_ns, s.end_ns, s.depth)).collect::<Vec<_>>();
    assert_eq!(spans("region", "a"), [(1, 3, 0)]);
    assert_eq!(spans("phase", "p"), [(2, 3, 1), (3, 4, 0)]);
}

#[test]
fn numeric_attributes_are_counters_unless_counters_names_them() {
    let trace = typed_trace(
        ATTRS,
        &[
            &[("event.begin#region", "a"), ("time.offset.ns", "10"), ("mem.bytes", "1.5")],
            &[("event.end#region", "a"), ("time.offset.ns", "20"), ("mem.bytes", "4096"), ("mem.label", "x")],
        ],
    );
    let decoded = decode(&run_on("format perfetto", trace.as_bytes()));
    assert_eq!(decoded.counters["mem.bytes"], [(10, 1.5), (20, 4096.0)]);
    let none = decode(&run_on("format perfetto(counters=\"\")", trace.as_bytes()));
    assert!(none.counters.is_empty(), "{none:?}");
}

#[test]
fn a_trace_without_records_is_an_empty_trace() {
    let decoded = decode(&run_on("format perfetto", typed_trace(ATTRS, &[]).as_bytes()));
    assert!(decoded.slices.is_empty() && decoded.threads.is_empty());
}

/// Google's Python protos read the same trace: the same tracks, slices and
/// counters as the Rust decoding above.
#[test]
fn perfettos_python_protos_read_the_same_trace() {
    let trace = typed_trace(
        ATTRS,
        &[
            &[("event.begin#region", "a"), ("time.offset.ns", "1"), ("pthread.id", "7"), ("mem.bytes", "2.5")],
            &[("event.begin#phase", "p"), ("time.offset.ns", "2"), ("pthread.id", "7")],
            &[("event.end#region", "a"), ("time.offset.ns", "3"), ("pthread.id", "7")],
            &[("event.end#phase", "p"), ("time.offset.ns", "4"), ("pthread.id", "7"), ("mem.bytes", "3")],
        ],
    );
    let cali = std::fs::read(fixture("cxx-example.event-trace.cali")).unwrap();
    for (name, bytes) in
        [("synthetic", run_on("format perfetto", trace.as_bytes())), ("reference", run_on("format perfetto", &cali))]
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.perfetto-trace");
        std::fs::write(&path, &bytes).unwrap();
        let python = caliper_testutil::perfetto_slices(&path);
        let ours = decode(&bytes);
        let slices: Vec<Slice> = python["slices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| Slice {
                thread: s["thread"].as_str().unwrap().to_string(),
                category: s["category"].as_str().unwrap().to_string(),
                name: s["name"].as_str().unwrap().to_string(),
                begin_ns: s["begin_ns"].as_u64().unwrap(),
                end_ns: s["end_ns"].as_u64().unwrap(),
                depth: s["depth"].as_u64().unwrap() as usize,
            })
            .collect();
        assert_eq!(slices, ours.slices, "{name}");
        let threads: Vec<(i32, i32, String)> = python["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t[0].as_i64().unwrap() as i32, t[1].as_i64().unwrap() as i32, t[2].as_str().unwrap().to_string()))
            .collect();
        assert_eq!(threads, ours.threads, "{name}");
        let counters: HashMap<String, Vec<(u64, f64)>> = python["counters"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let points = v.as_array().unwrap().iter().map(|p| (p[0].as_u64().unwrap(), p[1].as_f64().unwrap()));
                (k.clone(), points.collect())
            })
            .collect();
        assert_eq!(counters, ours.counters, "{name}");
    }
}
