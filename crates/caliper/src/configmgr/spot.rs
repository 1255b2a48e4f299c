//! The `spot` config's output: a region profile aggregated in two levels
//! (per process, then across processes; in a single process the second
//! level turns the per-region sums into the min/max/avg/total columns
//! Spot shows), and with `timeseries` per-loop blocks of iterations from
//! a `spot.timeseries` sub-config, written as one `.cali` stream whose
//! records carry `spot.channel=regionprofile|timeseries` and whose
//! globals describe the metrics.

use super::controller::{ChannelController, OwnOutput};
use super::loop_report;
use super::options::Options;
use super::queries;
use super::spec::QueryLevel;
use crate::channel::Channel;
use crate::runtime::{Caliper, ChannelOutput};
use crate::services::{output, report};
use caliper_data::node::Id;
use caliper_data::{AttrType, MetadataDb, Properties, Record, RecordKind, Variant};
use caliper_query::QuerySpec;
use caliper_query::format::{RecordFormatter, make_formatter};
use caliper_query::spec::Formatter;
use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::Arc;

/// The time-series sub-config: loop monitor snapshots, kept in a trace.
pub(crate) const TIMESERIES_SPEC: &str = r#"{
    "name": "spot.timeseries",
    "description": "Loop time series for spot",
    "services": [ "loop_monitor", "timer", "trace" ],
    "categories": [ "metric" ],
    "config": { "CALI_CHANNEL_CONFIG_CHECK": "false" },
    "options": [
        { "name": "iteration_interval", "type": "int", "description": "Measure every N loop iterations",
          "config": { "CALI_LOOP_MONITOR_ITERATION_INTERVAL": "{}" } },
        { "name": "time_interval", "type": "double", "description": "Measure after t seconds",
          "config": { "CALI_LOOP_MONITOR_TIME_INTERVAL": "{}" } },
        { "name": "target_loops", "type": "string", "description": "Loops to measure",
          "config": { "CALI_LOOP_MONITOR_TARGET_LOOPS": "{}" } }
    ]
}"#;

/// The options that configure the time series.
const TIMESERIES_OPTIONS: [&str; 5] = [
    "timeseries.maxrows",
    "timeseries.iteration_interval",
    "timeseries.time_interval",
    "timeseries.target_loops",
    "timeseries.metrics",
];

/// The cross-level query of the time series.
const TIMESERIES_CROSS: &str = "select cali.channel,loop,block,max(sum#loop.iterations) as \"Iterations\" unit iterations,\
    max(scale#time.duration.ns) as \"Time (s)\" unit sec,\
    avg(ratio#loop.iterations/time.duration.ns) as \"Iter/s\" unit iter/s group by cali.channel,loop,block";

/// The `spot.timeseries(...)` config string of a spot config's options.
fn timeseries_config(options: &Options) -> String {
    let mut args: Vec<String> = options.get("timeseries.metrics").into_iter().map(str::to_string).collect();
    for key in ["iteration_interval", "time_interval", "target_loops"] {
        if let Some(value) = options.get(&format!("timeseries.{key}")) {
            args.push(format!("{key}=\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")));
        }
    }
    if !options.is_set("timeseries.iteration_interval") && !options.is_set("timeseries.time_interval") {
        args.push("time_interval=0.5".to_string());
    }
    format!("spot.timeseries({})", args.join(","))
}

/// The time-series sub-config's controller, or the error of its config.
fn timeseries_controller(options: &Options) -> Result<Arc<ChannelController>, String> {
    let mut mgr = super::ConfigManager::new();
    if !mgr.add_config_spec(TIMESERIES_SPEC) {
        return Err(mgr.error_msg());
    }
    mgr.parse(&timeseries_config(options)).map(|mut controllers| controllers.remove(0))
}

/// The Spot output of one config instance.
pub(crate) struct SpotOutput {
    local: String,
    cross: String,
    filename: String,
    /// The enabled boolean options (`spot.options`).
    enabled: String,
    /// The time-series channel and its rows per loop.
    timeseries: Option<(Arc<ChannelController>, i64)>,
}

impl SpotOutput {
    /// The output of a spot config; an error if `timeseries.*` options are
    /// set without `timeseries`, or the time-series sub-config is bad.
    pub(crate) fn new(options: &Options) -> Result<SpotOutput, String> {
        if !options.is_enabled("timeseries")
            && let Some(o) = TIMESERIES_OPTIONS.iter().find(|o| options.is_set(o))
        {
            return Err(format!("{o} is set but the timeseries option is not enabled"));
        }
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
        let timeseries = if options.is_enabled("timeseries") {
            let max_rows = options.get_or("timeseries.maxrows", "20").trim().parse().unwrap_or(20);
            Some((timeseries_controller(options)?, max_rows))
        } else {
            None
        };
        Ok(SpotOutput { local, cross, filename, enabled: options.enabled_options().join(","), timeseries })
    }
}

impl OwnOutput for SpotOutput {
    /// The controllers of the sub-configs, which start and stop with the
    /// spot channel.
    fn sub_controllers(&self) -> Vec<&ChannelController> {
        self.timeseries.iter().map(|(c, _)| c.as_ref()).collect()
    }

    /// Where the profile goes (`%attr%` fields not yet filled in).
    fn output_pattern(&self) -> &str {
        &self.filename
    }

    /// Writes the profile of what `channel` gathered to the stream `name`.
    /// Updates must be stopped.
    fn write(&self, cali: &Caliper, channel: &Channel, name: &str) -> io::Result<()> {
        let (local, mut cross) = (queries::parse(&self.local)?, queries::parse(&self.cross)?);
        let metrics = result_names(&cross);
        cross.format = None;

        let mut db = MetadataDb::new();
        let records = report::channel_records(cali, &ChannelOutput::new(cali, channel), &mut db)?;
        report::import_globals(cali, &ChannelOutput::new(cali, channel), &mut db);
        let profile = queries::collect(&mut db, &records, &local)?;

        // Every rank takes part in the reduction; rank 0 writes.
        let comm = crate::mpi::world().map_err(io::Error::other)?;
        let out = match comm.rank() {
            0 => output::open(name, false).unwrap_or_else(|| Box::new(io::sink())),
            _ => Box::new(io::sink()),
        };
        let writer: Rc<RefCell<Box<dyn RecordFormatter>>> =
            Rc::new(RefCell::new(make_formatter(&cross, Formatter::Cali, out).map_err(io::Error::other)?));
        let tagged = |db: &mut MetadataDb, channel: &str| {
            let attr = db.create_attribute("spot.channel", AttrType::String, Properties::SKIP_EVENTS, &[]);
            let tag = db.get_or_create_node(attr, Variant::string(channel), None);
            Box::new(Tagged { tag, inner: writer.clone() })
        };
        let to_profile = tagged(&mut db, "regionprofile");
        queries::run_across(&mut db, &profile, &cross, to_profile, comm.as_ref())?;

        let mut channels = "regionprofile".to_string();
        let mut timeseries_metrics = String::new();
        if let Some((controller, max_rows)) = &self.timeseries
            && let Some(ts_channel) = controller.channel()
        {
            let ts_cross = queries::parse(TIMESERIES_CROSS)?;
            timeseries_metrics = result_names(&ts_cross).join(",");
            channels.push_str(",timeseries");
            let records = report::channel_records(cali, &ChannelOutput::new(cali, &ts_channel), &mut db)?;
            let (_, loops) = loop_report::loops_across(&mut db, &records, comm.as_ref())?;
            for info in loops.iter().filter(|l| l.iterations > 0) {
                let local = queries::parse(&format!(
                    "select cali.channel,loop,block,scale(time.duration.ns,1e-9),sum(loop.iterations),\
                     ratio(loop.iterations,time.duration.ns,1e9) group by cali.channel,loop,block \
                     let block=truncate(loop.start_iteration,{}) where loop.start_iteration,loop=\"{}\"",
                    info.block_size(*max_rows),
                    info.name.replace('"', "\\\"")
                ))?;
                let series = queries::collect(&mut db, &records, &local)?;
                let to_series = tagged(&mut db, "timeseries");
                queries::run_across(&mut db, &series, &ts_cross, to_series, comm.as_ref())?;
            }
        }
        let globals = [
            ("spot.metrics", Variant::string(&metrics.join(","))),
            ("spot.timeseries.metrics", Variant::string(&timeseries_metrics)),
            ("spot.format.version", Variant::Int(2)),
            ("spot.options", Variant::string(&self.enabled)),
            ("spot.channels", Variant::string(&channels)),
        ];
        let mut parent = None;
        for (name, value) in globals {
            let attr = db.create_attribute(name, value.attr_type(), Properties::GLOBAL, &[]);
            parent = Some(db.get_or_create_node(attr, value, parent));
        }
        let mut record = Record::globals();
        if let Some(node) = parent {
            record.push_ref(node);
        }
        db.import_globals(&record);
        writer.borrow_mut().finish(&mut db)
    }
}

/// The names of a query's aggregation results (`spot.metrics`).
fn result_names(query: &QuerySpec) -> Vec<String> {
    query.aggregate.iter().map(|op| op.result_name()).collect()
}

/// Adds `spot.channel=<channel>` to each record before writing it to the
/// shared output, which is finished once all queries have run.
struct Tagged {
    tag: Id,
    inner: Rc<RefCell<Box<dyn RecordFormatter>>>,
}

impl RecordFormatter for Tagged {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return self.inner.borrow_mut().process(db, record);
        }
        let mut tagged = record.clone();
        tagged.push_ref(self.tag);
        self.inner.borrow_mut().process(db, &tagged)
    }

    fn finish(&mut self, _db: &mut MetadataDb) -> io::Result<()> {
        Ok(())
    }
}
