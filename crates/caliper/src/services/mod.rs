//! The services a channel can enable, one module each, and the registry
//! that lists them: a new service is one file (with its [`ServiceSpec`])
//! and one row of [`SERVICES`].

mod adiak;
mod aggregate;
mod alloc;
mod allocstats;
mod async_event;
mod callpath;
mod cpuinfo;
mod cupti;
mod debug;
mod event;
mod event_sampling;
mod io;
mod iteration_class;
pub mod kokkos;
mod libpfm;
mod loop_monitor;
mod loop_statistics;
pub mod measurement_template;
mod memstat;
mod mpi;
mod mpiflush;
mod mpireport;
mod nvtx;
pub mod ompt;
pub(crate) mod output;
mod papi;
mod perf_events;
mod perf_topdown;
mod recorder;
mod region_monitor;
pub mod registry;
pub(crate) mod report;
mod sampler;
mod signal_claim;
mod statistics;
mod symbollookup;
mod sysalloc;
mod thread_id;
pub use thread_id::{program_thread_started, program_threads_wanted};
pub mod timer;
mod trace;
mod validator;

use crate::config::RuntimeConfig;
use crate::log;
use crate::service::Runtime;
pub(crate) use adiak::is_loaded as adiak_is_loaded;
pub(crate) use registry::{Created, NotCreated};
use registry::{ServiceSpec, Settings, Setup, Stage};

/// Every service this runtime has.
pub const SERVICES: &[ServiceSpec] = &[
    adiak::EXPORT_SPEC,
    adiak::IMPORT_SPEC,
    aggregate::SPEC,
    alloc::SPEC,
    allocstats::SPEC,
    async_event::SPEC,
    callpath::SPEC,
    cpuinfo::SPEC,
    cupti::CUPTI_SPEC,
    cupti::TRACE_SPEC,
    debug::SPEC,
    event::SPEC,
    io::SPEC,
    kokkos::LOOKUP_SPEC,
    kokkos::TIME_SPEC,
    libpfm::SPEC,
    loop_monitor::SPEC,
    loop_statistics::SPEC,
    measurement_template::SPEC,
    memstat::SPEC,
    nvtx::SPEC,
    ompt::SPEC,
    papi::SPEC,
    perf_topdown::SPEC,
    thread_id::SPEC,
    recorder::SPEC,
    region_monitor::SPEC,
    sampler::SPEC,
    report::SPEC,
    statistics::SPEC,
    sysalloc::SPEC,
    symbollookup::SPEC,
    timer::SPEC,
    trace::SPEC,
    validator::SPEC,
];

/// The services of MPI programs, there once an MPI binding registered
/// (see [`crate::mpi`]).
pub const MPI_SERVICES: &[ServiceSpec] = &[mpi::SPEC, mpiflush::SPEC, mpireport::SPEC];

/// The services this process has: [`SERVICES`], and [`MPI_SERVICES`] in an
/// MPI program.
pub fn available() -> impl Iterator<Item = &'static ServiceSpec> {
    let mpi = if crate::mpi::layer().is_some() { MPI_SERVICES } else { &[] };
    SERVICES.iter().chain(mpi)
}

/// The service enabled by `name` (its name or an alias).
pub fn find(name: &str) -> Option<&'static ServiceSpec> {
    available().find(|s| s.is_named(name))
}

/// Creates the service `name` for a channel, its settings read from
/// `config`.
pub(crate) fn create(
    name: &str,
    cali: &dyn Runtime,
    channel: &str,
    config: &RuntimeConfig,
) -> Result<Created, NotCreated> {
    let spec = find(name).ok_or(NotCreated::Unknown)?;
    (spec.create)(&Setup { cali, channel, settings: Settings::new(spec, config) })
}

/// Warns when a channel's services cannot produce output: a trigger
/// without a buffer, a buffer without a trigger or an output, an output
/// without a buffer.
pub(crate) fn check_pipeline(channel: &str, names: &[String]) {
    if names.is_empty() {
        log::info(format_args!("{channel}: No services enabled, {channel} channel will not record data."));
        return;
    }
    if names.iter().any(|n| n == "debug" || n == "validator") {
        return;
    }
    let stage_of = |name: &str| find(name).map(|s| s.stage);
    let has = |stage: Stage| names.iter().any(|n| stage_of(n) == Some(stage));
    let rules = [
        ("snapshot trigger", Stage::Trigger, "snapshot processing", Stage::Buffer),
        ("snapshot processing", Stage::Buffer, "snapshot trigger", Stage::Trigger),
        ("snapshot buffer", Stage::Buffer, "offline output", Stage::Output),
        ("offline output", Stage::Output, "snapshot buffer", Stage::Buffer),
    ];
    for (group_a, a, group_b, b) in rules {
        if has(b) {
            continue;
        }
        if let Some(service) = names.iter().find(|n| stage_of(n) == Some(a)) {
            log::error(format_args!(
                "Config check: Warning: {group_a} service \"{service}\" requires {group_b} services, but none are active."
            ));
            let options: Vec<String> = b.reference_services().iter().map(|s| format!("\"{s}\"")).collect();
            if let Some((last, rest)) = options.split_last() {
                log::error(format_args!(
                    "Add {} or {last} to CALI_SERVICES_ENABLE to generate Caliper output.",
                    rest.join(", ")
                ));
            }
        }
    }
}
