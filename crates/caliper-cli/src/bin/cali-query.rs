//! `cali-query`: reads any number of `.cali` streams, merges them into one
//! context tree and writes the merged stream.

use caliper_cli::args::{self, OptSpec, Takes};
use caliper_data::MetadataDb;
use caliper_data::RecordKind;
use caliper_data::cali::{CaliReader, CaliWriter, StreamError, open_input};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

const OPTIONS: &[OptSpec] = &[
    OptSpec {
        long: "output",
        short: Some('o'),
        takes: Takes::Value("FILE"),
        help: "Write the output to FILE instead of standard output",
    },
    OptSpec {
        long: "verbose",
        short: Some('v'),
        takes: Takes::Nothing,
        help: "Print the name of each input as it is read",
    },
    OptSpec {
        long: "version",
        short: Some('V'),
        takes: Takes::Nothing,
        help: "Print the version and exit",
    },
    OptSpec {
        long: "help",
        short: Some('h'),
        takes: Takes::Optional("TOPIC"),
        help: "Print this help and exit",
    },
];

/// Exit status for a command line the tool does not accept (the
/// reference's -1).
const EXIT_USAGE: u8 = 255;

fn usage() -> String {
    format!(
        "Usage: cali-query [OPTION]... [FILE]...\n\
         Read, merge and write Caliper .cali streams.\n\
         With no FILE, or when FILE is -, read standard input.\n\
         \n\
         Options:\n{}\n\
         The inputs are merged into one context tree and written as one .cali\n\
         stream: all snapshot records in input order, then the merged globals.\n\
         \n\
         Example:\n  cali-query run-0.cali run-1.cali -o merged.cali\n",
        args::option_table(OPTIONS)
    )
}

enum Failure {
    Usage(String),
    Fatal(String),
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("cali-query: error: {msg}\n\n{}", usage());
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Fatal(msg)) => {
            eprintln!("cali-query: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(argv: &[String]) -> Result<(), Failure> {
    let parsed = args::parse(OPTIONS, argv).map_err(|e| Failure::Usage(e.to_string()))?;
    if parsed.is_set("help") {
        print!("{}", usage());
        return Ok(());
    }
    if parsed.is_set("version") {
        println!("cali-query {}", env!("CARGO_PKG_VERSION"));
        return Ok(());
    }

    let (dest_name, dest): (String, Box<dyn Write>) = match parsed.value("output") {
        Some(path) if path != "-" => {
            let file = File::create(path)
                .map_err(|e| Failure::Fatal(format!("cannot create {path}: {e}")))?;
            (path.to_string(), Box::new(file))
        }
        _ => ("standard output".to_string(), Box::new(io::stdout().lock())),
    };
    let write_failed = |e: io::Error| Failure::Fatal(format!("cannot write {dest_name}: {e}"));

    let mut inputs = parsed.positional.clone();
    if inputs.is_empty() {
        inputs.push("-".to_string());
    }
    let mut db = MetadataDb::new();
    let mut writer = CaliWriter::new(dest);
    for input in &inputs {
        let (name, reader) =
            open_input(Path::new(input)).map_err(|e| Failure::Fatal(e.to_string()))?;
        if parsed.is_set("verbose") {
            eprintln!("cali-query: Reading {name}");
        }
        CaliReader::new(&mut db, name)
            .try_read(reader, |db, record| {
                if record.kind == RecordKind::Ctx {
                    writer.write_record(db, record)
                } else {
                    Ok(())
                }
            })
            .map_err(|e| match e {
                StreamError::Read(e) => Failure::Fatal(e.to_string()),
                StreamError::Sink(e) => write_failed(e),
            })?;
    }
    writer
        .write_record(&db, &db.globals())
        .map_err(write_failed)?;
    writer
        .finish()
        .and_then(|mut out| out.flush())
        .map_err(write_failed)
}
