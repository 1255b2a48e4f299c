//! `report`: runs a CalQL query (`CALI_REPORT_CONFIG`) over the flushed
//! records and writes the result (`CALI_REPORT_FILENAME`, standard output
//! by default; `CALI_REPORT_APPEND`). Without a FORMAT clause the report is
//! a table.

use super::output;
use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::log;
use crate::service::Service;
use crate::service::{ChannelView, Runtime};
use caliper_data::idmap::IdMap;
use caliper_data::{MetadataDb, Record, RecordKind};
use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, QuerySpec, parse_query};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "report",
    aliases: &[],
    description: "Run a CalQL query over the flushed records and print the result",
    stage: Stage::Output,
    settings: &[
        SettingSpec {
            key: "config",
            kind: SettingKind::String,
            default: "select * format table",
            description: "The CalQL query",
        },
        SettingSpec {
            key: "filename",
            kind: SettingKind::String,
            default: "stdout",
            description: "Where to write: stdout, stderr or a file name",
        },
        SettingSpec {
            key: "append",
            kind: SettingKind::Bool,
            default: "false",
            description: "Append to the file rather than replace it",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Report::new(setup).map(|r| Created::Service(Arc::new(r))).ok_or(NotCreated::BadSettings)
    },
};

pub struct Report {
    query: QuerySpec,
    filename: String,
    append: bool,
}

impl Report {
    /// The service, or `None` (logged) if the query does not parse.
    pub fn new(setup: &Setup<'_>) -> Option<Report> {
        let (channel, settings) = (setup.channel, &setup.settings);
        let text = settings.text("config");
        match parse_query(&text) {
            Ok(query) => Some(Report { query, filename: settings.text("filename"), append: settings.bool("append") }),
            Err(e) => {
                log::error(format_args!("{channel}: Report: config parse error: {e}"));
                None
            }
        }
    }
}

/// Whether a query over a channel with no records writes its (empty)
/// result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IfEmpty {
    Write,
    Skip,
}

/// Runs `query` over a channel's records (imported into a fresh metadata
/// database, with the channel's globals) and writes the result to `out`,
/// with the `default` formatter unless the query has a FORMAT clause. With
/// no records and [`IfEmpty::Skip`], nothing is written.
pub fn write_query(
    cali: &dyn Runtime,
    channel: &dyn ChannelView,
    query: &QuerySpec,
    default: Formatter,
    out: Box<dyn std::io::Write>,
    if_empty: IfEmpty,
) -> std::io::Result<()> {
    let mut processor = match QueryProcessor::new(query, default, out) {
        Ok(p) => p,
        Err(e) => {
            log::error(format_args!("{}: Report: {e}", channel.name()));
            return Ok(());
        }
    };
    let mut db = MetadataDb::new();
    let mut snapshots = 0usize;
    import_channel(cali, channel, &mut db, |db, record| {
        snapshots += usize::from(record.kind == RecordKind::Ctx);
        processor.process(db, record)
    })?;
    if snapshots == 0 && if_empty == IfEmpty::Skip {
        return Ok(());
    }
    import_globals(cali, channel, &mut db);
    processor.finish(&mut db)
}

/// Hands a channel's flushed records, imported into `db`, to `sink`.
/// Updates must be stopped.
pub fn import_channel(
    cali: &dyn Runtime,
    channel: &dyn ChannelView,
    db: &mut MetadataDb,
    mut sink: impl FnMut(&mut MetadataDb, &Record) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut ids = IdMap::new();
    let mut result = Ok(());
    channel.records(&mut |record| {
        if result.is_err() {
            return;
        }
        match db.import_record(&mut ids, cali.tree(), record) {
            Ok(imported) => result = sink(db, &imported),
            Err(e) => log::error(format_args!("{}: Report: {e}", channel.name())),
        }
    });
    result
}

/// Adds a channel's globals (run metadata) to `db`.
pub fn import_globals(cali: &dyn Runtime, channel: &dyn ChannelView, db: &mut MetadataDb) {
    if let Ok(globals) = db.import_record(&mut IdMap::new(), cali.tree(), &channel.globals()) {
        db.import_globals(&globals);
    }
}

/// A channel's flushed records, imported into `db`. Updates must be
/// stopped.
pub fn channel_records(
    cali: &dyn Runtime,
    channel: &dyn ChannelView,
    db: &mut MetadataDb,
) -> std::io::Result<Vec<Record>> {
    let mut records = Vec::new();
    import_channel(cali, channel, db, |_, r| {
        records.push(r.clone());
        Ok(())
    })?;
    Ok(records)
}

impl Service for Report {
    fn name(&self) -> &'static str {
        "report"
    }

    fn writes_output(&self) -> bool {
        true
    }

    /// Writes the report; one of no records only if the channel samples,
    /// and otherwise nothing, not even its file. The runtime starts when
    /// the library is loaded if the environment configures it, so that a
    /// program that never calls Caliper can be sampled (preloaded); the
    /// reference starts on a program's first call, and a program linked
    /// with it that never calls it writes no report. Without a sampler a
    /// channel with no records saw nothing of what it measures (no region,
    /// no I/O or MPI call, ...), and an empty table would only add noise to
    /// the program's output. A sampler was asked to look at whatever the
    /// program does: its empty tree is an answer, that no sample landed.
    fn write_output(&self, cali: &dyn Runtime, channel: &dyn ChannelView) {
        let name = output::substitute(cali, &self.filename);
        let out = output::open_on_write(&name, self.append);
        let if_empty = if channel.samples() { IfEmpty::Write } else { IfEmpty::Skip };
        if let Err(e) = write_query(cali, channel, &self.query, Formatter::Table, out, if_empty) {
            log::error(format_args!("{}: Report: could not write {name}: {e}", channel.name()));
        }
    }
}
