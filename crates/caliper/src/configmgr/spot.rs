//! The `spot` config's output: a region profile aggregated in two levels
//! (per process, then across processes; in a single process the second
//! level turns the per-region sums into the min/max/avg/total columns
//! Spot shows), written as one `.cali` stream whose records carry
//! `spot.channel=regionprofile` and whose globals describe the metrics.

use super::options::Options;
use super::queries;
use super::spec::QueryLevel;
use crate::channel::Channel;
use crate::log;
use crate::runtime::Caliper;
use crate::services::{output, report};
use caliper_data::node::Id;
use caliper_data::{AttrType, MetadataDb, Properties, Record, RecordKind, Variant};
use caliper_query::format::{RecordFormatter, make_formatter};
use caliper_query::spec::Formatter;
use std::io;

/// The Spot output of one config instance.
pub(crate) struct SpotOutput {
    local: String,
    cross: String,
    filename: String,
    /// The enabled boolean options (`spot.options`).
    enabled: String,
}

impl SpotOutput {
    pub(crate) fn new(options: &Options) -> SpotOutput {
        let local = options.build_query(
            QueryLevel::Local,
            "let sum#time.duration=scale(sum#time.duration.ns,1e-9) select inclusive_sum(sum#time.duration) group by path",
        );
        let cross = options.build_query(
            QueryLevel::Cross,
            "select *,min(inclusive#sum#time.duration) as \"Min time/rank\" unit sec,\
             max(inclusive#sum#time.duration) as \"Max time/rank\" unit sec,\
             avg(inclusive#sum#time.duration) as \"Avg time/rank\" unit sec,\
             sum(inclusive#sum#time.duration) as \"Total time\" unit sec group by path",
        );
        let name = options.get("output").map(str::to_string).unwrap_or_else(output::auto_name);
        let filename = match options.get("outdir") {
            Some(dir) if name != "stdout" && name != "stderr" => format!("{}/{name}", dir.trim_end_matches('/')),
            _ => name,
        };
        SpotOutput { local, cross, filename, enabled: options.enabled_options().join(",") }
    }

    /// Writes the profile of what `channel` gathered. Updates must be
    /// stopped.
    pub(crate) fn write(&self, cali: &Caliper, channel: &Channel) {
        let name = output::substitute(cali, &self.filename);
        if let Err(e) = self.try_write(cali, channel, &name) {
            log::error(&format!("{}: could not write {name}: {e}", channel.name()));
        }
    }

    fn try_write(&self, cali: &Caliper, channel: &Channel, name: &str) -> io::Result<()> {
        let (local, mut cross) = (queries::parse(&self.local)?, queries::parse(&self.cross)?);
        let metrics: Vec<String> = cross.aggregate.iter().map(|op| op.result_name()).collect();
        cross.format = None;

        let mut db = MetadataDb::new();
        let mut records = Vec::new();
        report::import_channel(cali, channel, &mut db, |_, r| {
            records.push(r.clone());
            Ok(())
        })?;
        let profile = queries::collect(&mut db, &records, &local)?;

        let Some(out) = output::open(name, false) else { return Ok(()) };
        let attr = db.create_attribute("spot.channel", AttrType::String, Properties::SKIP_EVENTS, &[]);
        let tag = db.get_or_create_node(attr, Variant::string("regionprofile"), None);
        let writer = Tagged { tag, inner: make_formatter(&cross, Formatter::Cali, out).map_err(io::Error::other)? };
        let globals = [
            ("spot.metrics", Variant::string(&metrics.join(","))),
            ("spot.timeseries.metrics", Variant::string("")),
            ("spot.format.version", Variant::Int(2)),
            ("spot.options", Variant::string(&self.enabled)),
            ("spot.channels", Variant::string("regionprofile")),
        ];
        let mut parent = None;
        for (name, value) in globals {
            let attr = db.create_attribute(name, value.attr_type(), Properties::GLOBAL, &[]);
            parent = Some(db.get_or_create_node(attr, value, parent));
        }
        let mut record = Record::globals();
        record.push_ref(parent.expect("five globals"));
        db.import_globals(&record);
        queries::run(&mut db, &profile, &cross, Box::new(writer))
    }
}

/// Adds `spot.channel=regionprofile` to each record before writing it.
struct Tagged {
    tag: Id,
    inner: Box<dyn RecordFormatter>,
}

impl RecordFormatter for Tagged {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return self.inner.process(db, record);
        }
        let mut tagged = record.clone();
        tagged.push_ref(self.tag);
        self.inner.process(db, &tagged)
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        self.inner.finish(db)
    }
}
