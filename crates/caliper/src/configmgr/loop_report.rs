//! The `loop-report` config's output: a summary of the instrumented
//! loops (iterations, time, iterations per second), then per loop a time
//! series of blocks of iterations. The `loop_monitor` service takes the
//! snapshots (`loop.iterations`, `loop.start_iteration`); this runs the
//! queries over them.

use super::controller::OwnOutput;
use super::options::Options;
use super::queries::{self, SharedWriter};
use crate::channel::Channel;
use crate::log;
use crate::mpi;
use crate::runtime::{Caliper, ChannelOutput};
use crate::services::{output, report};
use caliper_data::{MetadataDb, Record};
use caliper_query::format::make_formatter;
use caliper_query::spec::Formatter;
use std::io::{self, Write};

/// Per loop: snapshots, iterations, time and iterations per second (the
/// reference scales the rate by 1e-9 instead of 1e9, which makes its
/// minimum and maximum 1e18 too small; this does not).
const SUMMARY_LOCAL: &str = "let iter_per_sec=ratio(loop.iterations,time.duration.ns,1e9) \
    select loop,count(),sum(loop.iterations),scale(time.duration.ns,1e-9),\
    min(iter_per_sec),max(iter_per_sec),avg(iter_per_sec) group by loop where loop";

const SUMMARY_CROSS: &str = "select loop as Loop,max(sum#loop.iterations) as \"Iterations\",\
    max(scale#time.duration.ns) as \"Time (s)\",min(min#iter_per_sec) as \"Iter/s (min)\",\
    max(max#iter_per_sec) as \"Iter/s (max)\",ratio(sum#loop.iterations,scale#time.duration.ns) as \"Iter/s (avg)\" \
    aggregate max(count) group by loop format table";

/// The loop report of one config instance.
pub(crate) struct LoopReport {
    output: String,
    summary: bool,
    timeseries: bool,
    /// Rows per time series (all if 0 or less).
    max_rows: i64,
}

/// What the summary says about one loop.
pub(crate) struct LoopInfo {
    pub(crate) name: String,
    pub(crate) iterations: i64,
    records: i64,
}

impl LoopInfo {
    /// Iterations per time-series row, for at most `max_rows` rows (all
    /// snapshots if 0 or less).
    pub(crate) fn block_size(&self, max_rows: i64) -> i64 {
        let blocks = if max_rows > 0 { max_rows } else { self.records };
        if self.records > blocks { (self.iterations / blocks).max(1) } else { 1 }
    }
}

/// The loops of every rank's `records` (loop monitor snapshots): the
/// summary reduced across the ranks of `comm` (its records, on rank 0)
/// and the loops it names with their iterations and snapshots, the same
/// on every rank (sent from rank 0), so that every rank then reduces the
/// same time series in the same order.
pub(crate) fn loops_across(
    db: &mut MetadataDb,
    records: &[Record],
    comm: &dyn mpi::Comm,
) -> io::Result<(Vec<Record>, Vec<LoopInfo>)> {
    let per_loop = queries::collect(db, records, &queries::parse(SUMMARY_LOCAL)?)?;
    let summary = queries::collect_across(db, &per_loop, &queries::parse(SUMMARY_CROSS)?, comm)?;
    let loops = match comm.rank() {
        0 => loop_infos(db, &summary),
        _ => Vec::new(),
    };
    let loops = mpi::broadcast(comm, LoopInfo::encode(&loops)).map_err(io::Error::other)?;
    Ok((summary, LoopInfo::decode(&loops)))
}

impl LoopReport {
    pub(crate) fn new(options: &Options) -> LoopReport {
        LoopReport {
            output: options.get_or("output", "stdout").to_string(),
            summary: options.get_bool("summary", true),
            timeseries: options.get_bool("timeseries", true),
            max_rows: options.get_or("timeseries.maxrows", "20").trim().parse().unwrap_or(20),
        }
    }
}

impl OwnOutput for LoopReport {
    /// Where the report goes (`%attr%` fields not yet filled in).
    fn output_pattern(&self) -> &str {
        &self.output
    }

    /// Writes the report of what `channel` gathered to the stream `name`.
    /// Updates must be stopped. Under MPI every rank takes part: the
    /// summary and each time series are reduced across the ranks, the
    /// loops are those of the reduced summary (sent from rank 0 to the
    /// others), and rank 0 writes.
    fn write(&self, cali: &Caliper, channel: &Channel, name: &str) -> io::Result<()> {
        let comm = mpi::world().map_err(io::Error::other)?;
        let root = comm.rank() == 0;
        let mut db = MetadataDb::new();
        let records = report::channel_records(cali, &ChannelOutput::new(cali, channel), &mut db)?;
        report::import_globals(cali, &ChannelOutput::new(cali, channel), &mut db);
        let (summary, loops) = loops_across(&mut db, &records, comm.as_ref())?;
        if loops.is_empty() {
            log::info(format_args!("{}: No instrumented loops found", channel.name()));
            return Ok(());
        }
        let out: Box<dyn Write> = match root {
            true => output::open(name, false).unwrap_or_else(|| Box::new(io::sink())),
            false => Box::new(io::sink()),
        };
        let mut out = SharedWriter::new(out);
        if self.summary {
            write!(out, "\nLoop summary:\n------------\n\n")?;
            let summary_cross = queries::parse(SUMMARY_CROSS)?;
            let mut formatter =
                make_formatter(&summary_cross, Formatter::Table, Box::new(out.clone())).map_err(io::Error::other)?;
            for record in &summary {
                formatter.process(&mut db, record)?;
            }
            formatter.finish(&mut db)?;
        }
        if self.timeseries {
            for info in loops.iter().filter(|l| l.iterations > 0) {
                let block_size = info.block_size(self.max_rows);
                let local = format!(
                    "select Block,scale(time.duration.ns,1e-9),sum(loop.iterations),\
                     ratio(loop.iterations,time.duration.ns,1e9) group by Block \
                     let Block=truncate(loop.start_iteration,{block_size}) where loop=\"{}\"",
                    info.name.replace('"', "\\\"")
                );
                let series = queries::collect(&mut db, &records, &queries::parse(&local)?)?;
                write!(out, "\nIteration summary ({}):\n-----------------\n\n", info.name)?;
                let cross = queries::parse(
                    "select Block,max(sum#loop.iterations) as \"Iterations\",\
                     max(scale#time.duration.ns) as \"Time (s)\",\
                     avg(ratio#loop.iterations/time.duration.ns) as \"Iter/s\" group by Block format table order by Block",
                )?;
                let formatter =
                    make_formatter(&cross, Formatter::Table, Box::new(out.clone())).map_err(io::Error::other)?;
                queries::run_across(&mut db, &series, &cross, formatter, comm.as_ref())?;
            }
        }
        out.flush()
    }
}

impl LoopInfo {
    /// The loops as text for [`mpi::broadcast`]: a line per loop, its
    /// iterations, snapshots and name.
    fn encode(loops: &[LoopInfo]) -> Vec<u8> {
        loops.iter().map(|l| format!("{} {} {}\n", l.iterations, l.records, l.name)).collect::<String>().into_bytes()
    }

    fn decode(data: &[u8]) -> Vec<LoopInfo> {
        String::from_utf8_lossy(data)
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, ' ');
                let iterations = parts.next()?.parse().ok()?;
                let records = parts.next()?.parse().ok()?;
                Some(LoopInfo { name: parts.next()?.to_string(), iterations, records })
            })
            .collect()
    }
}

/// Per loop of the summary's records: its name, iterations and number of
/// snapshots. The name is the innermost `loop` value, as the reference
/// takes it: a loop inside another (say a `target_loops` one) is named by
/// itself, and its time series filters on that name.
fn loop_infos(db: &MetadataDb, per_loop: &[Record]) -> Vec<LoopInfo> {
    let value_of = |record: &Record, name: &str| {
        let attr = db.attribute_by_name(name)?.id();
        caliper_query::access::first_value(db, record, attr).cloned()
    };
    per_loop
        .iter()
        .filter_map(|r| {
            let name = value_of(r, "loop")?.to_string();
            let number = |n: &str| value_of(r, n).and_then(|v| v.to_string().parse::<f64>().ok()).unwrap_or(0.0) as i64;
            // The local summary's sums and counts, or the cross-rank
            // summary's maxima of them.
            let number = |local: &str| match number(&format!("max#{local}")) {
                0 => number(local),
                n => n,
            };
            Some(LoopInfo { name, iterations: number("sum#loop.iterations"), records: number("count") })
        })
        .collect()
}
