//! Caliper: annotate a program's regions and context, and measure them.
//!
//! The program marks regions and sets `attribute=value` context; at run
//! time the configuration (`CALI_SERVICES_ENABLE=event,trace,timer,recorder`,
//! say) decides what is measured, how it is kept (aggregated in place or
//! traced) and where it goes (a `.cali` file, a report).
//!
//! ```
//! let _main = caliper::region!("main");
//! caliper::set_global("iterations", 4);
//! let lp = caliper::Loop::new("mainloop");
//! for i in 0..4 {
//!     let _it = lp.iteration(i);
//!     let _foo = caliper::region!("foo");
//! }
//! ```
//!
//! Annotations cost a few nanoseconds when nothing is measured: a region
//! begin is a push onto a thread-local stack, with the region name
//! interned once per call site.

#![warn(missing_docs)]

pub mod alloc;
mod alloc_guard;
pub mod api;
pub mod attributes;
pub mod blackboard;
pub mod buffer;
mod capture;
pub mod channel;
mod clock;
pub mod config;
pub mod configmgr;
pub mod contain;
pub mod default_config;
mod dynlib;
mod id_index;
pub mod interpose;
pub mod log;
pub mod mpi;
pub mod query_report;
pub mod region_filter;
pub mod region_profile;
pub mod runtime;
pub mod service;
pub mod services;
pub mod snapshot;
mod sparse;
pub mod symbols;
mod sync;
pub mod task;
pub mod tree;
pub mod unwind;
pub mod value;

pub use alloc_guard::TrackedAllocator;
pub use api::{
    Annotation, Loop, TimedAsyncEvent, begin_by_name, begin_region, end_by_name, end_region, flush, push_snapshot,
    set_by_name, set_global,
};
pub use attributes::Attribute;
pub use caliper_data::{AttrType, Properties, Variant};
pub use config::RuntimeConfig;
pub use configmgr::ConfigManager;
pub use runtime::Caliper;
pub use services::output::capture as capture_output;
pub use task::{Instrument, Instrumented, TaskPath};

/// How the runtime starts the configs of `CALI_CONFIG` when it
/// initialises: the config manager, which sits above the runtime (it
/// creates channels); wired here, at the crate's root, so that the runtime
/// does not depend on it.
const START_CONFIGS: fn(&'static Caliper, &str) = configmgr::start_from_env;

/// Snapshots from signal handlers, for samplers and signal-driven
/// triggers: the async-signal-safe entry point, the per-thread
/// preparation, and the counts of captures taken and dropped (see the
/// README's "Writing a service, and snapshots from signal handlers").
pub mod signal {
    pub use crate::capture::{CAPACITY, Counts, MAX_FRAMES, MAX_MEASURED, MAX_OPEN, MAX_VALUES, Outcome, counts};
    pub use crate::runtime::{
        prepare_thread, push_snapshot_from_signal, push_snapshot_with_path_from_signal, spawning_own_thread,
    };

    /// Whether a service takes signal snapshots (a sampler runs): threads
    /// should then [`prepare_thread`] where they start.
    pub fn wanted() -> bool {
        crate::capture::WANTED.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// What a wrapper of `pthread_create` (libcaliper's) does for the threads
/// a program starts: the `pthread` service's marks, set before the
/// thread's start routine runs.
pub mod threads {
    pub use crate::services::{program_thread_started, program_threads_wanted};
}
