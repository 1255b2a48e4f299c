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

mod alloc_guard;
pub mod api;
pub mod attributes;
pub mod blackboard;
pub mod channel;
mod clock;
pub mod config;
pub mod configmgr;
pub mod contain;
pub mod default_config;
mod id_index;
pub mod log;
pub mod query_report;
pub mod region_filter;
pub mod runtime;
pub mod services;
pub mod snapshot;
mod sparse;
mod sync;
mod thread;
pub mod tree;
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
