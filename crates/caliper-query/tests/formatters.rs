//! The formatters and their arguments on the reference's example files.

mod common;

use caliper_data::MetadataDb;
use caliper_data::cali::CaliReader;
use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, parse_query};
use caliper_testutil::{SharedOutput, fixture};

/// Runs `query` over a fixture and returns the output text.
fn run(query: &str, file: &str) -> String {
    run_on(query, file, &std::fs::read(fixture(file)).unwrap())
}

/// Runs `query` over a `.cali` stream and returns the output text.
fn run_on(query: &str, name: &str, data: &[u8]) -> String {
    String::from_utf8(common::query_output(query, name, data)).unwrap()
}

const TRACE: &str = "cxx-example.event-trace.cali";
const PROFILE: &str = "cxx-example.hatchet-region-profile.cali";

#[test]
fn table_column_width_and_truncation() {
    let text = run("select event.begin#iteration#mainloop, region format table(column-width=8)", TRACE);
    let header = text.lines().next().unwrap();
    assert_eq!(header, "eve~~oop region   ");
    assert!(text.lines().any(|l| l == "       0 main     "), "{text}");
    // Zero or less: no cap.
    let wide = run("select event.begin#iteration#mainloop format table(column-width=0)", TRACE);
    assert!(wide.starts_with("event.begin#iteration#mainloop \n"));
}

#[test]
fn table_rows_from_before_a_new_column_get_empty_cells() {
    // `select *` discovers columns as records arrive: the first records of
    // the trace have no region, later ones add it.
    let text = run("select * format table", TRACE);
    let header = text.lines().next().unwrap();
    let width = header.len();
    assert!(header.contains("region"), "{header}");
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(rows.len() > 10, "{text}");
    assert!(rows.iter().all(|l| l.len() == width), "every line as wide as the header:\n{text}");
}

#[test]
fn table_sorts_with_the_last_key_first() {
    let q =
        "select region,count(),sum(time.duration.ns) group by region order by sum#time.duration.ns desc format table";
    let lines: Vec<String> =
        run(q, TRACE).lines().skip(1).map(|l| l.split_whitespace().next().unwrap_or("").to_string()).collect();
    assert_eq!(lines, ["main/foo", "1", "main", "main/init"].map(String::from));
    let q = "select region,count() group by region order by region, count desc format table";
    let first: Vec<String> = run(q, TRACE).lines().skip(1).map(|l| l.trim_end().to_string()).collect();
    assert_eq!(first[0], "main         16", "count descending is the primary key");
}

#[test]
fn table_prints_globals_first() {
    let text = run("select region,count() group by region format table(print-globals)", TRACE);
    assert!(text.starts_with("cali.caliper.version : 2.15.0-dev\n"), "{text}");
    assert!(text.contains("cali.channel         : event-trace\n"), "{text}");
    assert!(text.contains("\nregion    count \n"));
}

#[test]
fn tree_arguments() {
    let q = "select sum(sum#sum#time.duration) group by path format tree(column-width=4)";
    let text = run(q, PROFILE);
    assert!(text.starts_with("Path s~~n \n"), "{text}");
    // Labels deeper than the column become `..`, indented no further than
    // the column allows.
    assert_eq!(text.lines().nth(3), Some("  .. 0~~1 "), "{text}");
    assert!(text.lines().all(|l| l.len() == "Path s~~n ".len()), "{text}");
    // ORDER BY sorts siblings: ascending by the smallest value below.
    let q = "select sum(sum#sum#time.duration) group by path order by sum#sum#sum#time.duration format tree";
    let order: Vec<String> =
        run(q, PROFILE).lines().skip(1).map(|l| l.split_whitespace().next().unwrap().to_string()).collect();
    assert_eq!(order, ["main", "init", "mainloop", "foo"]);
    // Other path attributes: the loop alone.
    let text = run("select count() group by path format tree(\"loop\")", TRACE);
    assert_eq!(text.lines().nth(1).unwrap().split_whitespace().next(), Some("mainloop"));
}

/// Whatever the column width, every row of the tree keeps its path cell
/// within the column: a label cut to fit, `..` where the indent or the
/// room left leaves no place for one.
#[test]
fn tree_rows_never_spill_past_the_path_column() {
    for width in 4..12 {
        let q = format!("select count() group by path format tree(column-width={width})");
        let text = run(&q, TRACE);
        let header = text.lines().next().unwrap_or_default();
        // The path column ends at the space before the count column's header.
        let path_width = header.trim_end().rfind(' ').unwrap_or(0);
        for line in text.lines() {
            assert_eq!(line.chars().count(), header.chars().count(), "width {width}:\n{text}");
            assert_eq!(line.chars().nth(path_width), Some(' '), "width {width}: {line:?}\n{text}");
            assert!(!line.chars().take(path_width).collect::<String>().trim().is_empty(), "width {width}: {line:?}");
        }
    }
}

#[test]
fn json_layouts() {
    let records = run("select region,count() group by region format json(split)", TRACE);
    assert!(records.starts_with("{\"count\":1},\n{\"path\":\"main\",\"count\":16}"), "{records}");
    let object = run("select region,count() group by region format json(object)", TRACE);
    let v: serde_json::Value = serde_json::from_str(&object).expect("object layout is JSON");
    assert_eq!(v["records"].as_array().unwrap().len(), 4);
    assert_eq!(v["globals"]["cali.channel"], "event-trace");
    assert_eq!(v["attributes"]["count"]["is_global"], false);
    assert_eq!(v["attributes"]["count"]["cali.attribute.type"], "uint");
    let pretty = run("select count() group by region format json(pretty)", TRACE);
    let v: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    assert_eq!(v[1]["count"], 16);
    assert!(pretty.contains("\n\t\"count\": 16\n"), "{pretty}");
    let quoted = run("select region, count() group by region format json(quote-all)", TRACE);
    assert!(quoted.contains("{\"count\":\"16\",\"path\":\"main\"}"), "{quoted}");
    let separate = run("select * where region=foo format json(separate-nested)", TRACE);
    assert!(separate.contains("\"region\":\"main/foo\""), "{separate}");
    assert!(!separate.contains("\"path\""));
}

#[test]
fn user_format_and_title() {
    let text = run(
        r#"select * where event.end#region format format("%[10]region%|%time.duration.ns%", "Region    |ns")"#,
        TRACE,
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Region    |ns");
    assert_eq!(lines[1], "main/init |3134");
}

#[test]
fn expand_with_selection_and_aliases() {
    let text = run("select region as R, time.duration.ns where event.end#region=foo format expand", TRACE);
    assert_eq!(text.lines().next(), Some("R=main/foo,time.duration.ns=185085"));
}

#[test]
fn cali_output_reads_back() {
    let text = run("select region,count() group by region", TRACE);
    let mut db = MetadataDb::new();
    let records = caliper_data::cali::read_records(&mut db, "out", text.as_bytes()).unwrap();
    assert_eq!(records.iter().filter(|r| r.kind == caliper_data::RecordKind::Ctx).count(), 4);
    assert!(text.ends_with("\n") && text.contains("__rec=globals"));
}

#[test]
fn let_and_where_in_the_pipeline() {
    let q = "let us=scale(time.duration.ns,0.001) select region, sum(us) where region group by region format expand";
    let text = run(q, TRACE);
    assert!(text.contains("region=main/foo,sum#us=702.375"), "{text}");
}

/// A synthetic region tree: a chain `depth` deep (a record on every
/// `step`-th level) and `siblings` leaves under the root `main`.
fn region_tree(depth: u64, siblings: u64, step: u64) -> Vec<u8> {
    let mut data = Vec::new();
    caliper_testutil::synthetic::write_region_tree(&mut data, depth, siblings, step).unwrap();
    data
}

#[test]
fn tree_path_column_stops_at_48_characters() {
    let text = run_on("select count format tree", "deep", &region_tree(100, 0, 1));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 + 100, "header, main, the chain:\n{text}");
    assert!(lines.iter().all(|l| l.len() == lines[0].len()), "one width for all lines:\n{text}");
    assert!(lines[0].starts_with(&format!("Path{} count", " ".repeat(44))), "{text}");
    // Region d21 is 22 levels deep: indent 44, room for 4 characters.
    assert_eq!(&lines[23][..49], &format!("{}d21  ", " ".repeat(44)));
    // With less room than `~~` and a character either side, the label's
    // head, as the reference cuts it.
    assert_eq!(&lines[24][..49], &format!("{}d2 ", " ".repeat(46)), "a label with 2 characters of room");
    for line in &lines[25..] {
        assert_eq!(&line[..49], &format!("{}.. ", " ".repeat(46)), "deeper labels:\n{text}");
    }
    assert!(lines[101].ends_with(" 99 "), "the last record's value is still printed: {}", lines[101]);
    // Without a cap the indent grows.
    let wide = run_on("select count format tree(column-width=0)", "deep", &region_tree(100, 0, 1));
    assert!(wide.lines().last().unwrap().starts_with(&format!("{}d99 ", " ".repeat(200))));
}

/// A region chain `main/mainloop/foo/foo.inner/bar`, a time on each.
const DEEP_REGIONS: &str = "\
__rec=node,id=35,attr=8,data=sum#time.duration,parent=5
__rec=node,id=39,attr=10,data=276,parent=3
__rec=node,id=40,attr=8,data=region,parent=39
__rec=node,id=41,attr=40,data=main
__rec=ctx,ref=41,attr=35,data=1.5
__rec=node,id=48,attr=40,data=mainloop,parent=41
__rec=ctx,ref=48,attr=35,data=1.25
__rec=node,id=49,attr=40,data=foo,parent=48
__rec=ctx,ref=49,attr=35,data=1
__rec=node,id=50,attr=40,data=foo.inner,parent=49
__rec=ctx,ref=50,attr=35,data=0.5
__rec=node,id=51,attr=40,data=bar,parent=50
__rec=ctx,ref=51,attr=35,data=0.25
";

/// `runtime-report,max_column_width=8`'s tree: labels cut to the room
/// their indent leaves (`ma~~op`; `fo` where `~~` would leave nothing),
/// `..` where the indent reaches the width, as the reference prints them.
#[test]
fn tree_of_a_deep_chain_in_eight_columns() {
    let text = run_on("select sum#time.duration format tree(column-width=8)", "deep", DEEP_REGIONS.as_bytes());
    let expected = [
        "Path     sum~~ion ",
        "main     1.500000 ",
        "  ma~~op 1.250000 ",
        "    foo  1.000000 ",
        "      fo 0.500000 ",
        "      .. 0.250000 ",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected, "{text}");
}

const SPOT: &str = "cxx-example.spot.cali";

/// The helpers of re-aggregation in a spot file (`avg.sum#`, `avg.count#`)
/// are hidden: no format shows them, not even empty.
#[test]
fn hidden_attributes_of_a_spot_file_never_show() {
    for query in ["select * format tree", "select * format table", "select * format expand", "format expand"] {
        let text = run(query, SPOT);
        assert!(!text.is_empty() && !text.contains("avg.sum#") && !text.contains("avg.count#"), "{query}:\n{text}");
    }
    for line in run("format expand", SPOT).lines() {
        assert!(line.split(',').all(|pair| !pair.ends_with('=')), "an empty value: {line}");
    }
}

/// The tree's headers are the aliases the file's attributes carry (the
/// spot config's queries gave them); the table's are the names.
#[test]
fn a_spot_files_aliases_head_the_trees_columns_not_the_tables() {
    let tree = run("select * format tree", SPOT);
    let header = tree.lines().next().unwrap();
    for alias in ["Min time/rank", "Total time", "Node order", "Avg time/rank (exc)", "Calls (total)"] {
        assert!(header.contains(alias), "{header}");
    }
    assert!(!header.contains("#"), "{header}");
    let table = run("select * format table", SPOT);
    let names: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        names,
        [
            "spot.channel",
            "min#inclusive#sum#time.duration",
            "max#inclusive#sum#time.duration",
            "avg#inclusive#sum#time.duration",
            "sum#inclusive#sum#time.duration",
            "min#min#aggregate.slot",
            "min#scale#sum#time.duration.ns",
            "max#scale#sum#time.duration.ns",
            "avg#scale#sum#time.duration.ns",
            "sum#scale#sum#time.duration.ns",
            "region",
            "min#sum#rc.count",
            "avg#sum#rc.count",
            "max#sum#rc.count",
            "sum#sum#rc.count",
            "loop"
        ]
    );
    // The query's own aliases head both.
    let q = "select sum#sum#rc.count as Calls,region format table";
    assert_eq!(run(q, SPOT).lines().next().unwrap().split_whitespace().next(), Some("Calls"));
}

#[test]
fn tree_with_many_siblings() {
    let text = run_on("select count format tree", "wide", &region_tree(0, 5000, 0));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 + 5000);
    // Children come newest first, as the reference prepends them.
    assert!(lines[2].starts_with("  s4999 "), "{}", lines[2]);
    assert!(lines[5001].starts_with("  s0 "), "{}", lines[5001]);
}

#[test]
fn inclusive_sums_over_a_deep_chain() {
    let q = "select count(), inclusive_sum(count) group by path format tree";
    let text = run_on(q, "deep", &region_tree(1000, 0, 1));
    // main has 1; d0 .. d999 have their index: 1 + 999 * 1000 / 2.
    let main = text.lines().nth(1).unwrap();
    assert!(main.starts_with("main ") && main.trim_end().ends_with(" 499501"), "{main}");
    let last = text.lines().last().unwrap();
    assert!(last.trim_end().ends_with(" 999"), "{last}");
    assert_eq!(text.lines().count(), 2 + 1000);
}

#[test]
fn json_outputs_stay_json_for_odd_numbers() {
    // A uint immediate without a value, and doubles that JSON has no
    // number for (found by the formatters fuzz target).
    let stream = "__rec=node,id=60,attr=10,data=2113,parent=2\n\
                  __rec=node,id=61,attr=8,data=n,parent=60\n\
                  __rec=node,id=62,attr=10,data=2113,parent=5\n\
                  __rec=node,id=63,attr=8,data=x,parent=62\n\
                  __rec=ctx,attr=61=63,data==inf\n\
                  __rec=ctx,attr=61=63,data=3=nan\n\
                  __rec=ctx,attr=61=63,data=4=-2.5\n";
    for query in ["select * format json", "select * format json-split", "select * format json(object,pretty)"] {
        let text = run_on(query, "odd", stream.as_bytes());
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{query}: {e}:\n{text}"));
        assert!(text.contains("-2.5"), "{query}: plain numbers stay bare:\n{json}");
    }
}

/// Two loops' iteration attributes, both of class `class.iteration`, on a
/// region.
const TWO_LOOPS: &str = "__rec=node,id=12,attr=10,data=84,parent=6
__rec=node,id=13,attr=8,data=class.iteration,parent=12
__rec=node,id=14,attr=13,data=true,parent=1
__rec=node,id=15,attr=10,data=21,parent=14
__rec=node,id=16,attr=8,data=iteration#outer,parent=15
__rec=node,id=17,attr=8,data=iteration#inner,parent=15
__rec=node,id=18,attr=10,data=276,parent=3
__rec=node,id=19,attr=8,data=region,parent=18
__rec=node,id=20,attr=19,data=main
__rec=ctx,ref=20,attr=16=17,data=1=7
__rec=ctx,ref=20,attr=16,data=2
";

/// `select class.iteration` selects every attribute of the class, in
/// every formatter, where the class stands in the list.
#[test]
fn selecting_a_class_selects_its_members_in_every_formatter() {
    let run = |query: &str| run_on(query, "two-loops", TWO_LOOPS.as_bytes());
    assert_eq!(run("select class.iteration format expand"), "iteration#outer=1,iteration#inner=7\niteration#outer=2\n");
    assert_eq!(
        run("select class.iteration,region format table"),
        "iteration#outer iteration#inner region \n              1               7 main   \n              2                 main   \n"
    );
    assert_eq!(
        run("select class.iteration format json"),
        "[\n{\"iteration#inner\":7,\"iteration#outer\":1},\n{\"iteration#outer\":2}\n]\n"
    );
    let split: Vec<String> = run("select class.iteration format json-split")
        .lines()
        .filter(|l| l.contains("\"columns\""))
        .map(str::to_string)
        .collect();
    assert_eq!(split, ["  \"columns\": [ \"iteration#inner\", \"iteration#outer\" ],"]);
    assert_eq!(
        run("select class.iteration format tree"),
        "Path iteration#outer iteration#inner \nmain               1               7 \n |-                2                 \n"
    );
    // The fixture's one loop.
    let table = run_on("select class.iteration format table", TRACE, &std::fs::read(fixture(TRACE)).unwrap());
    assert!(table.starts_with("iteration#mainloop \n"), "{table}");
    assert_eq!(table.lines().count(), 1 + 12, "{table}");
}

/// The frames of an inferno flame graph: name, title, count (`fg:w`) and
/// width in percent, in document order.
fn flame_frames(svg: &str) -> Vec<(String, String, u64, f64)> {
    let mut frames = Vec::new();
    for group in svg.split("<g>").skip(1) {
        let Some(title) = group.split("<title>").nth(1).and_then(|t| t.split("</title>").next()) else { continue };
        let attr = |name: &str| -> &str {
            let start =
                group.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("{name} in {group}")) + name.len() + 3;
            &group[start..start + group[start..].find('"').unwrap()]
        };
        let name = title.split(" (").next().unwrap().to_string();
        let width: f64 = attr("width").trim_end_matches('%').parse().unwrap();
        frames.push((name, title.to_string(), attr("fg:w").parse().unwrap(), width));
    }
    frames
}

#[test]
fn a_flamegraph_of_a_profile_in_seconds_has_frames_as_wide_as_their_inclusive_time() {
    // The profile's exclusive seconds per path: main 1.6363e-05, init
    // 4.587e-06, mainloop 2.5097e-05, foo 0.00554143 (and 0.000119969
    // outside every region, which has no frame). Scaled by 1e9 to whole
    // counts, inclusive: foo 5541430, mainloop 5566527, main 5587477.
    let svg = run("select sum#sum#time.duration format flamegraph", PROFILE);
    let frames = flame_frames(&svg);
    let total = 5_587_477.0;
    for (name, count) in
        [("all", 5_587_477), ("main", 5_587_477), ("init", 4587), ("mainloop", 5_566_527), ("foo", 5_541_430)]
    {
        let (_, title, w, width) = frames.iter().find(|f| f.0 == name).unwrap_or_else(|| panic!("{name}: {frames:?}"));
        assert_eq!(*w, count, "{name}");
        assert!((width - 100.0 * count as f64 / total).abs() < 1e-3, "{name}: {width}%");
        assert!(title.contains("sum#sum#time.duration x 1e-9"), "{title}");
    }
    assert_eq!(frames.len(), 5, "{frames:?}");
}

#[test]
fn a_flamegraph_of_counts_titles_its_frames_with_them() {
    // Records by region path: the trace's 21 records are all inside main;
    // main/foo has foo's 4 end records (a begin record is still on its
    // parent's path).
    let svg = run("select count() group by region format flamegraph(path-attributes=region)", TRACE);
    let frames = flame_frames(&svg);
    let frame = |name: &str| frames.iter().find(|f| f.0 == name).unwrap_or_else(|| panic!("{name}: {frames:?}"));
    assert_eq!((frame("main").2, frame("foo").2, frame("init").2), (21, 4, 1), "{frames:?}");
    assert!((frame("foo").3 - 100.0 * 4.0 / 21.0).abs() < 1e-3, "{frames:?}");
    assert!(frame("foo").1.starts_with("foo (4 count, "), "{}", frame("foo").1);
}

#[test]
fn a_flamegraph_without_numbers_is_an_error_naming_the_metric() {
    let spec = parse_query("select region format flamegraph(metric=nothing.here)").unwrap();
    let mut processor = QueryProcessor::new(&spec, Formatter::Cali, Box::new(SharedOutput::default())).unwrap();
    let mut db = MetadataDb::new();
    let data = std::fs::read(fixture(TRACE)).unwrap();
    CaliReader::new(&mut db, TRACE).read(&data[..], |db, r| processor.process(db, r).unwrap()).unwrap();
    let err = processor.finish(&mut db).unwrap_err();
    assert_eq!(err.to_string(), "flamegraph: no path has a positive nothing.here to draw");
}
