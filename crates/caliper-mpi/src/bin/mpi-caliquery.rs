//! `mpi-caliquery`: `cali-query` over many `.cali` files, run under MPI.
//! The files (the arguments, or the `.cali` files of a directory) are
//! split across the ranks (file i to rank i mod size); each rank reads its
//! files and runs the query's LET, WHERE and aggregation over them; the
//! aggregations are merged up a binary tree of ranks, and rank 0 writes
//! the result (a table unless the query has a FORMAT).
//!
//!     mpirun -np 4 mpi-caliquery -q "select sum(sum#time.duration.ns) group by path format tree" run/
//!
//! The query must aggregate. Errors: a malformed input names its file,
//! line and column (exit status 1), a bad query its column (254), a bad
//! option the usage (255).

use caliper_data::MetadataDb;
use caliper_data::cali::read_path;
use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, parse_query};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: mpi-caliquery -q QUERY [-o FILE] FILE... | DIRECTORY";

/// What the command line asks for.
struct Args {
    query: String,
    output: Option<String>,
    inputs: Vec<PathBuf>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut query, mut output, mut inputs) = (None, None, Vec::new());
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = |name: &str, inline: Option<&str>| match inline {
            Some(v) => Ok(v.to_string()),
            None => args.next().ok_or(format!("option {name} needs a value")),
        };
        match arg.split_once('=') {
            Some(("--query", v)) => query = Some(v.to_string()),
            Some(("--output", v)) => output = Some(v.to_string()),
            _ => match arg.as_str() {
                "-q" | "--query" => query = Some(value(&arg, None)?),
                "-o" | "--output" => output = Some(value(&arg, None)?),
                "-h" | "--help" => return Err(String::new()),
                "--" => inputs.extend(args.by_ref().map(PathBuf::from)),
                a if a.starts_with('-') && a != "-" => return Err(format!("unknown option {a}")),
                a => inputs.push(PathBuf::from(a)),
            },
        }
    }
    let query = query.ok_or("no query (-q)")?;
    Ok(Args { query, output, inputs })
}

/// The input files: the arguments, or a directory's `.cali` files, sorted.
fn input_files(inputs: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    match inputs {
        [dir] if dir.is_dir() => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "cali"))
                .collect();
            files.sort();
            Ok(files)
        }
        files => Ok(files.to_vec()),
    }
}

fn main() -> ExitCode {
    caliper_mpi::layer::register();
    // SAFETY: MPI_Init with no arguments, once, before any other MPI call.
    unsafe { caliper_mpi::wrappers::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    let code = run();
    // SAFETY: every rank finalizes once, after its last MPI call.
    unsafe { caliper_mpi::wrappers::MPI_Finalize() };
    ExitCode::from(code)
}

fn run() -> u8 {
    let comm = match runtime::mpi::world() {
        Ok(comm) => comm,
        Err(e) => return fail(&format!("mpi-caliquery: {e}"), 1),
    };
    let (rank, size) = (comm.rank(), comm.size());
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) if e.is_empty() => return usage(rank, 0),
        Err(e) => return fail_on_root(rank, &format!("mpi-caliquery: {e}\n{USAGE}"), 255),
    };
    let spec = match parse_query(&args.query) {
        Ok(spec) => spec,
        Err(e) => return fail_on_root(rank, &format!("mpi-caliquery: Invalid query: {e}"), 254),
    };
    let out: Box<dyn Write> = match (rank, &args.output) {
        (0, Some(path)) => match std::fs::File::create(path) {
            Ok(f) => Box::new(io::BufWriter::new(f)),
            Err(e) => return fail(&format!("mpi-caliquery: cannot write {path}: {e}"), 1),
        },
        (0, None) => Box::new(io::stdout()),
        _ => Box::new(io::sink()),
    };
    let mut processor = match QueryProcessor::new(&spec, Formatter::Table, out) {
        Ok(p) => p,
        Err(e) => return fail_on_root(rank, &format!("mpi-caliquery: Invalid query: {e}"), 254),
    };
    if processor.aggregator_mut().is_none() {
        return fail_on_root(rank, "mpi-caliquery: the query must aggregate (e.g. select count() group by path)", 254);
    }
    let files = match input_files(&args.inputs) {
        Ok(files) => files,
        Err(e) => return fail(&format!("mpi-caliquery: {e}"), 1),
    };
    // A rank whose input is bad says so and still takes part in the
    // reduction, so that the others do not wait for it forever.
    let mut code = 0;
    let mut db = MetadataDb::new();
    for file in files.iter().skip(rank).step_by(size) {
        let mut result = Ok(());
        let read = read_path(&mut db, file, |db, record| {
            if result.is_ok() {
                result = processor.process(db, record);
            }
        });
        if let Err(e) = read {
            code = fail(&format!("mpi-caliquery: error: {e}"), 1);
        } else if let Err(e) = result {
            code = fail(&format!("mpi-caliquery: error: {}: {e}", file.display()), 1);
        }
    }
    if let Some(aggregator) = processor.aggregator_mut()
        && let Err(e) = runtime::mpi::reduce(comm.as_ref(), &mut db, aggregator)
    {
        return fail(&format!("mpi-caliquery: {e}"), 1);
    }
    if rank == 0
        && let Err(e) = processor.finish(&mut db)
    {
        return fail(&format!("mpi-caliquery: {e}"), 1);
    }
    code
}

/// Prints the usage on rank 0.
fn usage(rank: usize, code: u8) -> u8 {
    if rank == 0 {
        println!("{USAGE}");
    }
    code
}

/// Prints `message` as one line in one write, so that the lines of ranks
/// writing at once do not mix, and returns `code`.
fn fail(message: &str, code: u8) -> u8 {
    let _ = io::stderr().write_all(format!("{message}\n").as_bytes());
    code
}

/// An error every rank finds alike: rank 0 reports it.
fn fail_on_root(rank: usize, message: &str, code: u8) -> u8 {
    match rank {
        0 => fail(message, code),
        _ => code,
    }
}
