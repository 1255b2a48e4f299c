//! The services a channel can enable, one module each, and the table that
//! creates them by name.

mod aggregate;
mod async_event;
mod debug;
mod loop_monitor;
pub(crate) mod output;
mod recorder;
mod region_monitor;
pub(crate) mod report;
mod thread_id;
pub mod timer;
mod trace;
mod validator;

use crate::channel::{Service, ServiceState, ThreadService};
use crate::config::RuntimeConfig;
use crate::log;
use crate::runtime::Caliper;
use crate::snapshot::{RegionSnapshot, Snapshot};
use std::sync::Arc;

/// Every service name this runtime knows, with a one-line description
/// (`event` is part of the channel itself).
pub const SERVICES: &[(&str, &str)] = &[
    ("aggregate", "Aggregate snapshots by context in place: min, max, sum and count of each metric"),
    ("async_event", "Take snapshots of asynchronous events (async.begin, async.end, event.duration.ns)"),
    ("debug", "Log every annotation update (verbosity 1)"),
    ("event", "Take snapshots when annotated attributes begin, change or end"),
    ("loop_monitor", "Take snapshots every N iterations or T seconds inside a loop (loop.iterations)"),
    ("pthread", "Mark snapshots with the thread id (pthread.id) and whether it is the main thread"),
    ("recorder", "Write flushed records to a .cali file"),
    ("region_monitor", "Take snapshots only of region instances that took longer than a time interval before"),
    ("report", "Run a CalQL query over the flushed records and print the result"),
    ("timer", "Add time offsets and durations to snapshots"),
    ("timestamp", "Alias of timer"),
    ("trace", "Keep every snapshot in per-thread trace buffers"),
    ("validator", "Check annotation nesting; report regions left open at the end of the program"),
];

/// Why a service was not created.
pub(crate) enum NotCreated {
    /// There is no service of that name.
    Unknown,
    /// Its settings are wrong; the service has said how.
    BadSettings,
}

/// Creates the service `name` for a channel.
pub(crate) fn create(
    name: &str,
    cali: &Caliper,
    channel: &str,
    config: &RuntimeConfig,
) -> Result<Arc<dyn Service>, NotCreated> {
    Ok(match name {
        "timer" | "timestamp" => Arc::new(timer::Timer::new(cali, config)),
        "aggregate" => Arc::new(aggregate::Aggregate::new(cali, config)),
        "async_event" => Arc::new(async_event::AsyncEvent),
        "trace" => Arc::new(trace::Trace::new(channel, config)),
        "recorder" => Arc::new(recorder::Recorder::new(config)),
        "report" => Arc::new(report::Report::new(channel, config).ok_or(NotCreated::BadSettings)?),
        "validator" => Arc::new(validator::Validator),
        "debug" => Arc::new(debug::Debug),
        "loop_monitor" => Arc::new(loop_monitor::LoopMonitor::new(cali, config)),
        "region_monitor" => Arc::new(region_monitor::RegionMonitor::new(config)),
        "pthread" => Arc::new(thread_id::ThreadId::new(cali)),
        _ => return Err(NotCreated::Unknown),
    })
}

/// The thread object of a processing service that a channel keeps inline
/// (see [`Service::inline_processor`]): a closed set of the services whose
/// speed matters most, so that the channel's fused path calls them
/// directly, and the compiler can inline them into it, instead of through
/// a `Box<dyn ThreadService>`.
pub struct InlineProcessor(Processor);

// One per thread and channel; a box would cost a pointer chase per snapshot.
#[allow(clippy::large_enum_variant)]
enum Processor {
    Aggregate(aggregate::AggThread),
    Trace(trace::TraceThread),
}

impl InlineProcessor {
    /// The thread object, for the generic pipeline and the flush.
    pub(crate) fn as_dyn(&mut self) -> &mut dyn ThreadService {
        match &mut self.0 {
            Processor::Aggregate(a) => a,
            Processor::Trace(t) => t,
        }
    }

    /// The thread object on its own, when the thread exits.
    pub(crate) fn into_boxed(self) -> ServiceState {
        match self.0 {
            Processor::Aggregate(a) => Box::new(a),
            Processor::Trace(t) => Box::new(t),
        }
    }

    /// [`ThreadService::process_region`] without a virtual call.
    #[inline(always)]
    pub(crate) fn process_region(&mut self, cali: &Caliper, region: &RegionSnapshot<'_>, scratch: &mut Snapshot) {
        match &mut self.0 {
            Processor::Aggregate(a) => a.process_region(cali, region, scratch),
            Processor::Trace(t) => t.process_region(cali, region, scratch),
        }
    }
}

/// The pipeline stages, for the configuration check.
const TRIGGERS: &[&str] = &["event", "async_event", "loop_monitor", "region_monitor", "sampler", "alloc"];
const BUFFERS: &[&str] = &["aggregate", "trace"];
const OUTPUTS: &[&str] = &["recorder", "report", "mpireport"];

/// Warns when a channel's services cannot produce output: a trigger
/// without a buffer, a buffer without a trigger or an output, an output
/// without a buffer.
pub(crate) fn check_pipeline(channel: &str, names: &[String]) {
    if names.is_empty() {
        log::info(&format!("{channel}: No services enabled, {channel} channel will not record data."));
        return;
    }
    if names.iter().any(|n| n == "debug" || n == "validator") {
        return;
    }
    let has = |group: &[&str]| names.iter().any(|n| group.contains(&n.as_str()));
    let rules: [(&str, &[&str], &str, &[&str]); 4] = [
        ("snapshot trigger", TRIGGERS, "snapshot processing", BUFFERS),
        ("snapshot processing", BUFFERS, "snapshot trigger", TRIGGERS),
        ("snapshot buffer", BUFFERS, "offline output", OUTPUTS),
        ("offline output", OUTPUTS, "snapshot buffer", BUFFERS),
    ];
    for (group_a, a, group_b, b) in rules {
        if has(b) {
            continue;
        }
        if let Some(service) = names.iter().find(|n| a.contains(&n.as_str())) {
            log::error(&format!(
                "Config check: Warning: {group_a} service \"{service}\" requires {group_b} services, but none are active."
            ));
            let options: Vec<String> = b.iter().map(|s| format!("\"{s}\"")).collect();
            let (last, rest) = options.split_last().expect("non-empty");
            log::error(&format!(
                "Add {} or {last} to CALI_SERVICES_ENABLE to generate Caliper output.",
                rest.join(", ")
            ));
        }
    }
}
