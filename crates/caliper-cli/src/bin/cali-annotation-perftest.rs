//! `cali-annotation-perftest`: measures the cost of annotation updates.
//!
//! Each iteration opens `depth` nested regions of a string attribute, the
//! names taken from a `width` x `depth` table, and closes them again; the
//! time per update (one begin or one end) is printed. Options follow the
//! reference's perftest:
//!
//! ```text
//! cali-annotation-perftest [-w WIDTH] [-d DEPTH] [-i ITERATIONS] [-t THREADS]
//!                          [-x CHANNELS] [-P SERVICES] [-c] [-q]
//! ```
//!
//! `-P` lists the services of the measuring channel(s), e.g.
//! `aggregate,event,timer` or `event,trace,timer`; without it nothing is
//! measured and the figure is the cost of the annotations alone. The
//! services' settings come from the environment as usual
//! (`CALI_MEASUREMENT_TEMPLATE_NAMES=a`, `CALI_AGGREGATE_KEY=...`); the
//! channel is not flushed.

use caliper::value::ValueKey;
use caliper::{AttrType, Caliper, Properties, RuntimeConfig};
use caliper_cli::args::{OptSpec, ParsedArgs, Takes, option_table, parse};
use std::process::ExitCode;
use std::time::Instant;

const OPTIONS: &[OptSpec] = &[
    OptSpec {
        long: "width",
        short: Some('w'),
        takes: Takes::Value("WIDTH"),
        help: "Region names per level (default 20)",
    },
    OptSpec { long: "depth", short: Some('d'), takes: Takes::Value("DEPTH"), help: "Nesting depth (default 10)" },
    OptSpec {
        long: "iterations",
        short: Some('i'),
        takes: Takes::Value("ITERATIONS"),
        help: "Iterations per thread (default 100000)",
    },
    OptSpec { long: "threads", short: Some('t'), takes: Takes::Value("THREADS"), help: "Threads (default 1)" },
    OptSpec {
        long: "channels",
        short: Some('x'),
        takes: Takes::Value("CHANNELS"),
        help: "Measuring channels (default 1)",
    },
    OptSpec {
        long: "services",
        short: Some('P'),
        takes: Takes::Value("SERVICES"),
        help: "Services of the measuring channels, e.g. aggregate,event,timer",
    },
    OptSpec {
        long: "csv",
        short: Some('c'),
        takes: Takes::Nothing,
        help: "Print channels,depth,width,updates,threads,seconds",
    },
    OptSpec { long: "quiet", short: Some('q'), takes: Takes::Nothing, help: "Print nothing but the CSV line" },
    OptSpec { long: "help", short: Some('h'), takes: Takes::Nothing, help: "Print this help" },
];

fn number(parsed: &ParsedArgs, name: &str, default: u64) -> Result<u64, String> {
    match parsed.value(name) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("invalid value \"{v}\" for --{name}")),
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match parse(OPTIONS, &argv) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cali-annotation-perftest: error: {e}\n\n{}", option_table(OPTIONS));
            return ExitCode::from(255);
        }
    };
    if parsed.is_set("help") {
        print!("Usage: cali-annotation-perftest [OPTION]...\n\nOptions:\n{}", option_table(OPTIONS));
        return ExitCode::SUCCESS;
    }
    let settings = (|| -> Result<_, String> {
        Ok((
            number(&parsed, "width", 20)?.max(1),
            number(&parsed, "depth", 10)?.max(1),
            number(&parsed, "iterations", 100_000)?,
            number(&parsed, "threads", 1)?.max(1),
            number(&parsed, "channels", 1)?,
        ))
    })();
    let (width, depth, iterations, threads, channels) = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cali-annotation-perftest: error: {e}");
            return ExitCode::from(255);
        }
    };
    let Some(cali) = Caliper::instance() else {
        eprintln!("cali-annotation-perftest: error: Caliper is not available");
        return ExitCode::FAILURE;
    };
    let services = parsed.value("services").unwrap_or("");
    let measuring = if services.is_empty() { 0 } else { channels };
    for i in 0..measuring {
        let config = RuntimeConfig::from_pairs(
            [("CALI_SERVICES_ENABLE", services), ("CALI_CHANNEL_FLUSH_ON_EXIT", "false")],
            true,
        );
        let channel = cali.create_channel(&format!("perftest.{i}"), config);
        cali.set_channel_active(&channel, true);
    }
    let attr = cali.create_attribute("perftest.region", AttrType::String, Properties::NESTED, &[]);
    let table: Vec<Vec<ValueKey>> =
        (0..depth).map(|d| (0..width).map(|w| ValueKey::string(&format!("r{d}.{w}"))).collect()).collect();

    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let table = &table;
            s.spawn(move || {
                for it in 0..iterations {
                    let w = ((it + t) % width) as usize;
                    for level in table.iter() {
                        cali.begin(attr, level[w]);
                    }
                    for level in table.iter().rev() {
                        cali.end(attr, Some(level[w]));
                    }
                }
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    let updates = threads * iterations * depth * 2;
    if !parsed.is_set("quiet") {
        let per_thread = updates / threads;
        println!(
            "cali-annotation-perftest: {threads} thread(s), {measuring} channel(s) [{}], {depth} x {width} table, {iterations} iterations: {updates} updates in {seconds:.3} s, {:.1} ns per update per thread",
            if services.is_empty() { "none" } else { services },
            seconds * 1e9 / per_thread as f64
        );
    }
    if parsed.is_set("csv") {
        println!("{measuring},{depth},{width},{updates},{threads},{seconds:.3}");
    }
    ExitCode::SUCCESS
}
