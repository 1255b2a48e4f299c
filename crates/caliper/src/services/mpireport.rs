//! `mpireport`: a CalQL report over every rank's records, written by rank
//! 0. Each rank runs the local query (`CALI_MPIREPORT_LOCAL_CONFIG`, or the
//! cross query) over its flushed records, then the cross query's LET,
//! WHERE and aggregation (`CALI_MPIREPORT_CONFIG`) over the local results;
//! the aggregations are merged up a binary tree of ranks
//! ([`crate::mpi::reduce`]) and rank 0 formats the result (a table unless
//! the query has a FORMAT) to `CALI_MPIREPORT_FILENAME`. Without MPI (or
//! before `MPI_Init`) the process is the only rank.

use super::output;
use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use super::report::{import_channel, import_globals};
use crate::log;
use crate::mpi;
use crate::service::{ChannelView, Runtime, Service};
use caliper_data::MetadataDb;
use caliper_query::format::{Collector, make_formatter};
use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, QuerySpec, parse_query};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "mpireport",
    aliases: &[],
    description: "Aggregate the flushed records across MPI ranks with CalQL; rank 0 writes the result",
    stage: Stage::Output,
    settings: &[
        SettingSpec {
            key: "config",
            kind: SettingKind::String,
            default: "select count() group by path",
            description: "The cross-rank CalQL query",
        },
        SettingSpec {
            key: "local_config",
            kind: SettingKind::String,
            default: "",
            description: "The per-rank CalQL query (empty: the cross-rank query)",
        },
        SettingSpec {
            key: "filename",
            kind: SettingKind::String,
            default: "stdout",
            description: "Where rank 0 writes: stdout, stderr or a file name",
        },
        SettingSpec {
            key: "append",
            kind: SettingKind::Bool,
            default: "false",
            description: "Append to the file rather than replace it",
        },
        SettingSpec {
            key: "write_on_finalize",
            kind: SettingKind::Bool,
            default: "true",
            description: "Write the report before MPI_Finalize",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        MpiReport::new(setup).map(|r| Created::Service(Arc::new(r))).ok_or(NotCreated::BadSettings)
    },
};

struct MpiReport {
    local: QuerySpec,
    cross: QuerySpec,
    filename: String,
    append: bool,
    write_on_finalize: bool,
    /// Set once the report is written: after `MPI_Finalize` it cannot be
    /// made again, and the flush at exit leaves it alone.
    written: AtomicBool,
}

impl MpiReport {
    fn new(setup: &Setup<'_>) -> Option<MpiReport> {
        let parse = |key: &str, text: &str| {
            parse_query(text)
                .map_err(|e| log::error(format_args!("{}: mpireport: {key} parse error: {e}", setup.channel)))
                .ok()
        };
        let cross_text = setup.settings.text("config");
        let local_text = setup.settings.get("local_config").filter(|t| !t.trim().is_empty());
        let cross = parse("config", &cross_text)?;
        let local = parse("local_config", local_text.as_deref().unwrap_or(&cross_text))?;
        Some(MpiReport {
            local,
            cross,
            filename: setup.settings.text("filename"),
            append: setup.settings.bool("append"),
            write_on_finalize: setup.settings.bool("write_on_finalize"),
            written: AtomicBool::new(false),
        })
    }

    /// Runs the two queries and the reduction; rank 0 writes to `out`.
    fn write(&self, cali: &dyn Runtime, channel: &dyn ChannelView, comm: &dyn mpi::Comm) -> io::Result<()> {
        let root = comm.rank() == 0;
        let out: Box<dyn io::Write> = match root {
            true => match output::open(&output::substitute(cali, &self.filename), self.append) {
                Some(out) => out,
                None => Box::new(io::sink()),
            },
            false => Box::new(io::sink()),
        };
        let formatter = make_formatter(&self.cross, Formatter::Table, out).map_err(io::Error::other)?;
        let mut cross = QueryProcessor::with_formatter(&self.cross, formatter).map_err(io::Error::other)?;
        let local_results = Collector::default();
        let mut local =
            QueryProcessor::with_formatter(&self.local, Box::new(local_results.clone())).map_err(io::Error::other)?;
        let mut db = MetadataDb::new();
        import_channel(cali, channel, &mut db, |db, record| local.process(db, record))?;
        local.finish(&mut db)?;
        for record in local_results.take() {
            cross.process(&mut db, &record)?;
        }
        if let Some(aggregator) = cross.aggregator_mut() {
            mpi::reduce(comm, &mut db, aggregator).map_err(io::Error::other)?;
        }
        if root {
            import_globals(cali, channel, &mut db);
            cross.finish(&mut db)?;
        }
        Ok(())
    }
}

impl Service for MpiReport {
    fn name(&self) -> &'static str {
        "mpireport"
    }

    fn writes_output(&self) -> bool {
        true
    }

    fn flushes_at_finalize(&self) -> bool {
        self.write_on_finalize
    }

    fn write_output(&self, cali: &dyn Runtime, channel: &dyn ChannelView) {
        if mpi::finalize_flushed() && self.written.load(Ordering::Acquire) {
            return;
        }
        let comm = match mpi::world() {
            Ok(comm) => comm,
            Err(why) => {
                log::error(format_args!("mpireport: {why}"));
                return;
            }
        };
        self.written.store(true, Ordering::Release);
        if let Err(e) = self.write(cali, channel, comm.as_ref()) {
            log::error(format_args!("{}: mpireport: {e}", channel.name()));
        }
    }
}
