//! `cali-query`: reads any number of `.cali` streams into one context tree
//! and runs a CalQL query over their records: filter, aggregate, sort and
//! format them (by default, write the merged stream as `.cali`).

use caliper_cli::args::{self, OptSpec, ParsedArgs, Takes};
use caliper_cli::attribute_list::AttributeList;
use caliper_cli::progress::Progress;
use caliper_data::MetadataDb;
use caliper_data::cali::{CaliReader, StreamError, open_input};
use caliper_query::filter::parse_legacy_filter;
use caliper_query::parser::parse_into;
use caliper_query::spec::{FormatSpec, Formatter, Selection, SortKey, SortOrder};
use caliper_query::{QueryProcessor, QuerySpec};
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

const OPTIONS: &[OptSpec] = &[
    OptSpec { long: "query", short: Some('q'), takes: Takes::Value("QUERY"), help: "Run the CalQL query QUERY" },
    OptSpec {
        long: "query-file",
        short: Some('Q'),
        takes: Takes::Value("FILE"),
        help: "Read the CalQL query from FILE",
    },
    OptSpec {
        long: "select",
        short: Some('s'),
        takes: Takes::Value("FILTER"),
        help: "Keep records matching FILTER: a comma list of [-]attribute[=value]",
    },
    OptSpec {
        long: "aggregate",
        short: None,
        takes: Takes::Value("OPS"),
        help: "Aggregate with OPS, e.g. count(),sum(time.duration.ns)",
    },
    OptSpec {
        long: "aggregate-key",
        short: None,
        takes: Takes::Value("ATTRIBUTES"),
        help: "Group by ATTRIBUTES (path: the region hierarchy; none: one group)",
    },
    OptSpec {
        long: "print-attributes",
        short: None,
        takes: Takes::Value("ATTRIBUTES"),
        help: "Output only ATTRIBUTES (comma list)",
    },
    OptSpec {
        long: "sort-by",
        short: Some('S'),
        takes: Takes::Value("ATTRIBUTES"),
        help: "Sort by ATTRIBUTES, ascending (table and tree)",
    },
    OptSpec {
        long: "list-attributes",
        short: None,
        takes: Takes::Nothing,
        help: "Output one record per attribute instead of the snapshots",
    },
    OptSpec {
        long: "list-globals",
        short: Some('G'),
        takes: Takes::Nothing,
        help: "Output the globals instead of the snapshots",
    },
    OptSpec { long: "json", short: Some('j'), takes: Takes::Nothing, help: "Print records as JSON" },
    OptSpec { long: "expand", short: Some('e'), takes: Takes::Nothing, help: "Print records as attr=value lists" },
    OptSpec {
        long: "format",
        short: Some('f'),
        takes: Takes::Value("FORMAT_STRING"),
        help: "Print records with a format string of %[width]attribute% fields",
    },
    OptSpec { long: "title", short: None, takes: Takes::Value("STRING"), help: "Title line for --format" },
    OptSpec { long: "table", short: Some('t'), takes: Takes::Nothing, help: "Print records as a table" },
    OptSpec {
        long: "tree",
        short: Some('T'),
        takes: Takes::Nothing,
        help: "Print records as a tree over their region path",
    },
    OptSpec {
        long: "path-attributes",
        short: None,
        takes: Takes::Value("ATTRIBUTES"),
        help: "Build the --tree over ATTRIBUTES instead of the nested ones",
    },
    OptSpec {
        long: "output",
        short: Some('o'),
        takes: Takes::Value("FILE"),
        help: "Write the output to FILE instead of standard output",
    },
    OptSpec {
        long: "continue",
        short: None,
        takes: Takes::Nothing,
        help: "On a bad input, report it and go on with the next one (exit status 1)",
    },
    OptSpec {
        long: "verbose",
        short: Some('v'),
        takes: Takes::Nothing,
        help: "Print the name of each input as it is read",
    },
    OptSpec {
        long: "profile",
        short: Some('P'),
        takes: Takes::Value("CONFIG"),
        help: "Profile cali-query itself with the measurement config CONFIG, e.g. runtime-report",
    },
    OptSpec { long: "version", short: Some('V'), takes: Takes::Nothing, help: "Print the version and exit" },
    OptSpec { long: "help", short: Some('h'), takes: Takes::Optional("TOPIC"), help: "Print this help and exit" },
];

/// Exit status for a command line the tool does not accept (the
/// reference's -1).
const EXIT_USAGE: u8 = 255;

/// Exit status for an invalid query (the reference's -2).
const EXIT_BAD_QUERY: u8 = 254;

fn usage() -> String {
    format!(
        "Usage: cali-query [OPTION]... [FILE]...\n\
         Read, merge, filter, aggregate and format Caliper .cali streams.\n\
         With no FILE, or when FILE is -, read standard input.\n\
         \n\
         Options:\n{}\n\
         Without a query the inputs are merged into one context tree and written\n\
         as one .cali stream: all snapshot records in input order, then the\n\
         merged globals. Options override the matching parts of the query.\n\
         \n\
         Help on the query language: --help=calql, and --help=TOPIC for\n\
         the topics select, let, where, groupby and format; on measurement\n\
         configs: --help=configs and --help=<config>; on measurement\n\
         services: --help=services and --help=<service>.\n\
         \n\
         Examples:\n  cali-query run-0.cali run-1.cali -o merged.cali\n  \
         cali-query -q \"select region,count(),sum(time.duration.ns) group by region format table\" trace.cali\n  \
         cali-query -e --print-attributes region,time.duration.ns trace.cali\n  \
         cali-query -q \"format trace-event\" trace.cali -o trace.json\n  \
         cali-query -q \"format perfetto\" trace.cali -o trace.perfetto-trace\n  \
         cali-query -q \"select sum(sum#time.duration) group by path format flamegraph\" profile.cali -o profile.svg\n\
         \n\
         On a terminal, a progress bar on standard error follows the reading of\n\
         big inputs (unless the results go to that terminal).\n",
        args::option_table(OPTIONS)
    )
}

enum Failure {
    Usage(String),
    BadQuery(String),
    Fatal(String),
}

/// `--help[=TOPIC]`: the usage, or a CalQL topic.
fn help(topic: &str) -> Result<(), Failure> {
    if topic.is_empty() {
        print!("{}", usage());
        return Ok(());
    }
    let configs = caliper::ConfigManager::new();
    if topic == "configs" {
        println!("{}", configs.configs_help());
        return Ok(());
    }
    if configs.available_config_specs().iter().any(|c| c == topic) {
        println!("{}", configs.documentation_for_spec(topic));
        return Ok(());
    }
    if topic == "services" {
        let width = caliper::services::SERVICES.iter().map(|s| s.name.len()).max().unwrap_or(0);
        for s in caliper::services::SERVICES {
            println!("{:<width$} {}", s.name, s.description);
            for alias in s.aliases {
                println!("{alias:<width$} Alias of {}", s.name);
            }
        }
        return Ok(());
    }
    if let Some(service) = caliper::services::find(topic) {
        print!("{}", service.help());
        return Ok(());
    }
    match caliper_query::help::help(topic) {
        Some(text) => {
            print!("{text}");
            Ok(())
        }
        None => Err(Failure::Fatal(format!(
            "Unknown help option \"{topic}\". Available options: {}, configs, <config name>, services, <service name>",
            caliper_query::help::TOPICS.join(", ")
        ))),
    }
}

/// The query from `-q`/`-Q`, with the other options applied on top.
fn build_query(parsed: &ParsedArgs) -> Result<QuerySpec, Failure> {
    let mut spec = QuerySpec::default();
    let bad = |e: &dyn std::fmt::Display| Failure::BadQuery(e.to_string());
    if let Some(path) = parsed.value("query-file") {
        let text =
            std::fs::read_to_string(path).map_err(|e| Failure::Fatal(format!("cannot open query file {path}: {e}")))?;
        parse_into(&text, &mut spec).map_err(|e| bad(&e))?;
    }
    if let Some(text) = parsed.value("query") {
        parse_into(text, &mut spec).map_err(|e| bad(&e))?;
    }
    if let Some(filter) = parsed.value("select") {
        spec.filter.extend(parse_legacy_filter(filter).map_err(|e| Failure::BadQuery(format!("-s {filter}: {e}")))?);
    }
    if let Some(list) = parsed.value("print-attributes") {
        spec.select = Selection::List(split_list(list));
    }
    if let Some(ops) = parsed.value("aggregate") {
        let ops = if ops.trim().is_empty() { "count()" } else { ops };
        parse_into(&format!("aggregate {ops}"), &mut spec).map_err(|e| bad(&e))?;
    }
    if let Some(keys) = parsed.value("aggregate-key") {
        spec.group_by = Selection::List(Vec::new());
        for key in split_list(keys) {
            match key.as_str() {
                "none" => spec.group_by = Selection::Nothing,
                "path" | "prop:nested" => spec.group_by_path = true,
                _ => spec.group_by.extend([key]),
            }
        }
    }
    if let Some(keys) = parsed.value("sort-by") {
        spec.sort =
            split_list(keys).into_iter().map(|attribute| SortKey { attribute, order: SortOrder::Ascending }).collect();
    }
    // The first formatter flag set wins, in the reference's order.
    let flags = [
        ("json", Formatter::Json),
        ("expand", Formatter::Expand),
        ("format", Formatter::UserFormat),
        ("table", Formatter::Table),
        ("tree", Formatter::Tree),
    ];
    if let Some(&(_, formatter)) = flags.iter().find(|(flag, _)| parsed.is_set(flag)) {
        let mut format = FormatSpec::new(formatter);
        // The formatter's arguments come from the options of the same name.
        for arg in formatter.args() {
            if let Some(value) = parsed.value(arg) {
                format.args.push((arg.to_string(), value.to_string()));
            }
        }
        spec.format = Some(format);
    }
    Ok(spec)
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("cali-query: error: {msg}\n\n{}", usage());
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::BadQuery(msg)) => {
            eprintln!("cali-query: Invalid query: {msg}");
            ExitCode::from(EXIT_BAD_QUERY)
        }
        Err(Failure::Fatal(msg)) => {
            eprintln!("cali-query: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(argv: &[String]) -> Result<(), Failure> {
    let parsed = args::parse(OPTIONS, argv).map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(topic) = parsed.value("help") {
        return help(topic);
    }
    if parsed.is_set("version") {
        // On standard error, as the reference's cali-query prints it.
        eprintln!("{}", caliper_cli::version_line("cali-query"));
        return Ok(());
    }
    let profile = match parsed.value("profile") {
        Some(config) => {
            let mut mgr = caliper::ConfigManager::new();
            if !mgr.add(config) {
                return Err(Failure::Usage(format!("profile config: {}", mgr.error_msg())));
            }
            mgr.start();
            Some(mgr)
        }
        None => None,
    };
    let result = {
        let _main = caliper::function!();
        query(&parsed)
    };
    if let Some(mgr) = profile {
        mgr.flush();
    }
    result
}

/// Runs the query of the command line over its inputs.
fn query(parsed: &ParsedArgs) -> Result<(), Failure> {
    let spec = build_query(parsed)?;
    let (dest_name, dest, dest_is_terminal): (String, Box<dyn Write>, bool) = match parsed.value("output") {
        Some(path) if path != "-" => {
            let file = File::create(path).map_err(|e| Failure::Fatal(format!("cannot create {path}: {e}")))?;
            (path.to_string(), Box::new(file), false)
        }
        _ => ("standard output".to_string(), Box::new(io::stdout().lock()), io::stdout().is_terminal()),
    };
    let write_failed = |e: io::Error| Failure::Fatal(format!("cannot write {dest_name}: {e}"));

    let mut inputs = parsed.positional.clone();
    if inputs.is_empty() {
        inputs.push("-".to_string());
    }
    let mut db = MetadataDb::new();
    let mut processor =
        QueryProcessor::new(&spec, Formatter::Cali, dest).map_err(|e| Failure::BadQuery(e.to_string()))?;
    // With -G or --list-attributes the snapshots are read but not output.
    let list_only = parsed.is_set("list-globals") || parsed.is_set("list-attributes");
    // With --continue a bad input is reported and skipped (after the
    // records read before the problem); the exit status still says so.
    let keep_going = parsed.is_set("continue");
    let mut bad_inputs = Vec::new();
    let mut attributes = AttributeList::default();
    // Without --continue a bad input ends the reading; the results of what
    // was read before it are still written, then the error.
    let mut failure = None;
    let progress = Progress::new(&inputs, dest_is_terminal);
    for input in &inputs {
        let _read = caliper::region!("read");
        caliper::set_by_name("cali-query.input", input.as_str());
        let result = open_input(Path::new(input)).map_err(StreamError::Read).and_then(|(name, reader)| {
            if parsed.is_set("verbose") {
                progress.eprintln(&format!("cali-query: Reading {name}"));
            }
            let reader = progress.wrap(&name, reader);
            let mut cali = CaliReader::new(&mut db, name);
            if parsed.is_set("list-attributes") {
                cali = cali.on_node(|db, node| attributes.note(db, node));
            }
            let result = cali
                .try_read_parallel(reader, |db, record| if list_only { Ok(()) } else { processor.process(db, record) });
            if let Some(warning) = cali.warning() {
                progress.eprintln(&format!("cali-query: warning: {warning}"));
            }
            result
        });
        match result {
            Ok(_) => {}
            Err(StreamError::Read(e)) if keep_going => {
                progress.eprintln(&format!("cali-query: error: {e} (skipping the rest of this input)"));
                bad_inputs.push(input.clone());
            }
            Err(StreamError::Read(e)) => {
                failure = Some(Failure::Fatal(e.to_string()));
                break;
            }
            Err(StreamError::Sink(e)) => return Err(write_failed(e)),
        }
    }
    progress.finish();
    if parsed.is_set("list-attributes") {
        for record in attributes.into_records() {
            processor.process(&mut db, &record).map_err(write_failed)?;
        }
    }
    if parsed.is_set("list-globals") {
        let mut globals = db.globals();
        globals.kind = caliper_data::RecordKind::Ctx;
        processor.process(&mut db, &globals).map_err(write_failed)?;
    }
    {
        let _write = caliper::region!("write");
        // A formatter that has nothing it can write (no stack to fold)
        // says so as invalid data; that is no failure to write.
        processor.finish(&mut db).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => Failure::Fatal(e.to_string()),
            _ => write_failed(e),
        })?;
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    match bad_inputs.len() {
        0 => Ok(()),
        n => Err(Failure::Fatal(format!("{n} input(s) could not be read completely: {}", bad_inputs.join(", ")))),
    }
}
