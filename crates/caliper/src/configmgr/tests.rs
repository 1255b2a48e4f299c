use super::*;
use options::get_setting;

fn setting(c: &ChannelController, key: &str) -> String {
    get_setting(c.config(), key).to_string()
}

fn error_of(text: &str) -> String {
    let mut mgr = ConfigManager::new();
    assert!(!mgr.add(text), "{text} should fail");
    mgr.error_msg()
}

#[test]
fn the_builtin_specs_parse() {
    let doc = json::parse(include_str!("builtin.json")).expect("builtin.json is JSON");
    let set = SpecSet::from_json(&doc).expect("builtin.json holds specs");
    let names: Vec<&str> = set.configs.iter().map(|c| c.name.as_str()).collect();
    for name in ["runtime-report", "runtime-profile", "event-trace", "spot"] {
        assert!(names.contains(&name), "{name}");
    }
}

#[test]
fn runtime_report_settings() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add("runtime-report(output=stdout),region.count"), "{}", mgr.error_msg());
    let c = mgr.channel("runtime-report").unwrap();
    assert_eq!(setting(&c, "CALI_SERVICES_ENABLE"), "aggregate,event,timer,report");
    assert_eq!(setting(&c, "CALI_CHANNEL_FLUSH_ON_EXIT"), "false");
    assert_eq!(setting(&c, "CALI_EVENT_ENABLE_SNAPSHOT_INFO"), "false");
    assert_eq!(setting(&c, "CALI_REPORT_FILENAME"), "stdout");
    assert_eq!(setting(&c, "CALI_REPORT_APPEND"), "true");
    let query = setting(&c, "CALI_REPORT_CONFIG");
    assert!(
        query.starts_with("let report.t=scale(sum#time.duration.ns,1e-9),report.l=leaf() where report.l"),
        "{query}"
    );
    assert!(query.contains("format tree() "), "{query}");
    assert!(query.contains("select sum(rc.count) as Calls unit count"), "{query}");
    assert!(query.ends_with("order by min#o_a_v.slot"), "order_as_visited is on by default: {query}");
    caliper_query::parse_query(&query).expect("the report query parses");
    let meta: Vec<&str> = c.metadata().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(meta, ["opts:order_as_visited", "opts:output", "opts:output.append", "opts:region.count"]);
}

#[test]
fn tree_format_options() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add("runtime-report(max_column_width=30,print.metadata)"));
    let query = setting(&mgr.channels()[0], "CALI_REPORT_CONFIG");
    assert!(query.contains("format tree(column-width=30,print-globals)"), "{query}");
    assert_eq!(setting(&mgr.channels()[0], "CALI_REPORT_FILENAME"), "stderr");
}

#[test]
fn runtime_profile_files_and_formats() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add("hatchet-region-profile(output.format=json-split),runtime-profile(output=p.cali)"));
    let [a, b] = mgr.channels() else { panic!("two channels") };
    assert_eq!(a.name(), "runtime-profile", "aliases resolve to the spec name");
    assert_eq!(setting(a, "CALI_REPORT_FILENAME"), "region_profile.json");
    assert!(
        setting(a, "CALI_REPORT_CONFIG").contains("format json-split select min(aggregate.slot) as \"Node order\"")
    );
    assert_eq!(setting(b, "CALI_REPORT_FILENAME"), "p.cali");
    assert!(setting(b, "CALI_REPORT_CONFIG").contains("format cali"));
    assert_eq!(error_of("runtime-profile(output.format=xml)"), "runtime-profile: Invalid output format \"xml\"");
}

#[test]
fn hatchet_is_cali_for_the_region_profile_and_json_split_for_the_cuda_profile() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add("runtime-profile(output.format=hatchet),cuda-activity-profile(output.format=hatchet)"));
    let [region, cuda] = mgr.channels() else { panic!("two channels") };
    assert_eq!(setting(region, "CALI_REPORT_FILENAME"), "region_profile.cali");
    assert_eq!(setting(cuda, "CALI_REPORT_FILENAME"), "cuda_profile.json");
    assert!(setting(cuda, "CALI_REPORT_CONFIG").contains("format json-split"));
}

#[test]
fn event_trace_settings() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add("event-trace(output=t.cali,time.inclusive)"), "{}", mgr.error_msg());
    let c = &mgr.channels()[0];
    assert_eq!(setting(c, "CALI_SERVICES_ENABLE"), "async_event,event,recorder,timer,trace");
    assert_eq!(setting(c, "CALI_RECORDER_FILENAME"), "t.cali");
    assert_eq!(setting(c, "CALI_TIMER_INCLUSIVE_DURATION"), "true");
}

#[test]
fn event_trace_writes_timelines_through_the_report_service() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add("event-trace(output=t,output.format=trace-event)"), "{}", mgr.error_msg());
    assert!(mgr.add("event-trace(outdir=/tmp/x,output.format=perfetto)"), "{}", mgr.error_msg());
    let [json, perfetto] = mgr.channels() else { panic!("two channels") };
    assert_eq!(setting(json, "CALI_SERVICES_ENABLE"), "async_event,event,timer,trace,pthread,report");
    assert_eq!(setting(json, "CALI_REPORT_FILENAME"), "t.json");
    assert_eq!(setting(json, "CALI_REPORT_CONFIG"), "format trace-event");
    let name = setting(perfetto, "CALI_REPORT_FILENAME");
    assert!(name.starts_with("/tmp/x/") && name.ends_with(".perfetto-trace"), "{name}");
    assert_eq!(setting(perfetto, "CALI_REPORT_CONFIG"), "format perfetto");
    assert_eq!(error_of("event-trace(output.format=svg)"), "event-trace: Invalid output format \"svg\"");
}

#[test]
fn global_parameters_apply_to_every_config_that_has_them() {
    let mut mgr = ConfigManager::new();
    mgr.set_default_parameter("output", "stdout");
    assert!(mgr.add("runtime-report,event-trace,include_regions=\"startswith(ma)\""), "{}", mgr.error_msg());
    for c in mgr.channels() {
        assert_eq!(setting(c, "CALI_EVENT_INCLUDE_REGIONS"), "startswith(ma)", "{}", c.name());
    }
    assert_eq!(setting(&mgr.channels()[1], "CALI_RECORDER_FILENAME"), "stdout");
    // Parenthesised arguments win over global ones.
    assert!(mgr.add("runtime-report(output=stderr)"));
    assert_eq!(setting(&mgr.channels()[2], "CALI_REPORT_FILENAME"), "stderr");
}

#[test]
fn errors_have_the_reference_messages() {
    assert_eq!(error_of("blagarbl"), "Unknown config or parameter: blagarbl");
    assert_eq!(error_of("runtime-report(blagarbl=1)"), "Unknown option: blagarbl");
    assert_eq!(
        error_of("runtime-report(output.format=json)"),
        "Unknown option: output.format",
        "option of another config"
    );
    assert_eq!(error_of("runtime-report(region.count=maybe)"), "Invalid value \"maybe\" for region.count");
    assert_eq!(error_of("runtime-report,profile.mpi"), "mpi service required for profile.mpi option is not available");
    assert_eq!(
        error_of("spot(timeseries.maxrows=5)"),
        "timeseries.maxrows is set but the timeseries option is not enabled"
    );
    assert_eq!(error_of("runtime-report,output="), "Expected value after \"output=\" at ");
    assert_eq!(error_of("load(/nonexistent/specs.json)"), "Could not open file /nonexistent/specs.json");
    let mut mgr = ConfigManager::new();
    assert!(!mgr.add("runtime-report,blagarbl"));
    assert!(mgr.channels().is_empty(), "nothing of a bad string is added");
    assert!(mgr.error());
}

#[test]
fn extra_keys_and_checks() {
    let mut mgr = ConfigManager::new();
    let mut extra = Vec::new();
    assert!(mgr.add_with_extra("runtime-report,myflag,mykey=3", &mut extra));
    assert_eq!(extra, [("myflag".to_string(), String::new()), ("mykey".to_string(), "3".to_string())]);
    assert_eq!(mgr.check("runtime-report,nonsense", false), Some("Unknown config or parameter: nonsense".into()));
    assert_eq!(mgr.check("runtime-report,nonsense", true), None);
    assert_eq!(mgr.check("spot", false), None);
    assert_eq!(mgr.channels().len(), 1, "check has no side effects");
}

#[test]
fn user_specs_from_json_and_files() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add_config_spec(
        r#"{ "name": "my-trace", "description": "mine", "services": [ "event", "trace", "recorder", "timer" ],
             "categories": [ "output" ], "config": { "CALI_TIMER_INCLUSIVE_DURATION": "true" },
             "options": [ { "name": "deep", "type": "bool", "config": { "CALI_EVENT_REGION_LEVEL": "0" } } ] }"#
    ));
    assert!(!mgr.add_config_spec(r#"{ "name": "my-trace" }"#), "duplicate");
    let mut mgr = ConfigManager::new();
    let dir = std::env::temp_dir().join(format!("cali-specs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("specs.json");
    std::fs::write(
        &file,
        r#"{ "configs": [ { "name": "my-profile", "services": [ "aggregate", "event", "timer", "recorder" ],
                            "categories": [ "metric", "output" ] } ],
             "options": [ { "name": "my.metric", "type": "bool", "category": "metric",
                            "config": { "CALI_MY_SETTING": "on" } } ] }"#,
    )
    .unwrap();
    let text = format!("load({}),my-profile(output=x.cali,my.metric)", file.display());
    assert!(mgr.add(&text), "{}", mgr.error_msg());
    let c = mgr.channel("my-profile").unwrap();
    assert_eq!(setting(&c, "CALI_RECORDER_FILENAME"), "x.cali");
    assert_eq!(setting(&c, "CALI_MY_SETTING"), "on");
    std::fs::write(&file, "{ \"configs\": [ { \"name\": \"broken\" ").unwrap();
    let mut mgr = ConfigManager::new();
    assert!(!mgr.add(&format!("load({})", file.display())));
    assert!(mgr.error_msg().starts_with(&format!("{}:1:", file.display())), "{}", mgr.error_msg());
    // A program calling load() directly learns of the failure through error().
    let mut mgr = ConfigManager::new();
    assert!(mgr.load(&file.display().to_string()).is_err());
    assert!(mgr.error_msg().starts_with(&format!("{}:1:", file.display())), "{}", mgr.error_msg());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn documentation() {
    let mut mgr = ConfigManager::new();
    let names = mgr.available_config_specs();
    for name in ["runtime-report", "runtime-profile", "hatchet-region-profile", "event-trace", "spot"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let inheriting = r#"[ { "name": "my.mpi", "type": "bool", "category": "metric", "inherit": [ "profile.mpi" ] } ]"#;
    assert!(mgr.add_option_spec(inheriting));
    let doc = mgr.documentation_for_spec("runtime-report");
    assert!(doc.starts_with("runtime-report\n Print a time profile for annotated regions\n  Options:\n"), "{doc}");
    assert!(doc.contains("\n   region.count "), "{doc}");
    assert!(doc.contains("\n   io.bytes "), "{doc}");
    assert!(!doc.contains("mpi.message.size"), "unavailable options are not documented");
    assert!(!doc.contains("my.mpi"), "nor options that inherit unavailable ones");
    assert_eq!(mgr.documentation_for_spec("nope"), "nope: Not available");
    assert!(mgr.configs_help().starts_with("Available config recipes:\n"));
}

#[test]
fn global_option_specs_from_the_api() {
    let mut mgr = ConfigManager::new();
    assert!(mgr.add_option_spec(
        r#"[ { "name": "my.count", "type": "bool", "category": "metric",
               "query": { "local": "select count() as \"My count\"" } } ]"#
    ));
    assert!(mgr.add("runtime-report,my.count"), "{}", mgr.error_msg());
    assert!(setting(&mgr.channels()[0], "CALI_REPORT_CONFIG").contains("select count() as \"My count\""));
    // Type names other than bool are documentation, as for the reference.
    assert!(mgr.add_option_spec(r#"{ "name": "x", "type": "boolean", "category": "metric" }"#));
    assert!(mgr.add("runtime-report(x)"), "{}", mgr.error_msg());
    assert!(!mgr.add_option_spec(r#"{ "type": "bool" }"#));
    assert_eq!(mgr.error_msg(), "option spec: option spec: \"name\" is missing");
}

#[test]
fn papi_options_enable_the_service_with_their_counters() {
    let mut mgr = ConfigManager::new();
    let text = "runtime-report,hatchet-region-profile,papi.counters=\"perf::PAGE-FAULTS,PAPI_TOT_INS\"";
    assert!(mgr.add(text), "{}", mgr.error_msg());
    let [report, profile] = mgr.channels() else { panic!("two channels") };
    for c in [report, profile] {
        assert!(setting(c, "CALI_SERVICES_ENABLE").split(',').any(|s| s == "papi"), "{}", c.name());
        assert_eq!(setting(c, "CALI_PAPI_COUNTERS"), "perf::PAGE-FAULTS,PAPI_TOT_INS");
    }
    let query = setting(report, "CALI_REPORT_CONFIG");
    assert!(
        query.contains(
            "select sum(sum#papi.perf::PAGE-FAULTS) as \"perf::PAGE-FAULTS\" unit count \
             select sum(sum#papi.PAPI_TOT_INS) as \"PAPI_TOT_INS\" unit count"
        ),
        "a column per counter: {query}"
    );
    caliper_query::parse_query(&query).expect("the report query parses");

    let mut mgr = ConfigManager::new();
    assert!(mgr.add("runtime-report,papi.topdown.toplevel"), "{}", mgr.error_msg());
    let c = &mgr.channels()[0];
    assert!(setting(c, "CALI_PAPI_COUNTERS").starts_with("topdown:::TOPDOWN_RETIRING_PERC,"));
    let query = setting(c, "CALI_REPORT_CONFIG");
    assert!(query.contains("avg(topdown.retiring) as \"Retiring\" unit percent"), "{query}");
    caliper_query::parse_query(&query).expect("the topdown query parses");
}
