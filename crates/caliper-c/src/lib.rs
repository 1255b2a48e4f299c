//! libcaliper: the C ABI of the Caliper runtime, a drop-in for the
//! reference's `caliper/cali.h` and `caliper/cali-manager.h`. C, C++ (the
//! header-only classes in `include/caliper/`) and Fortran (`caliper_mod`)
//! programs build and link against it unchanged.
//!
//! Every entry point catches panics (none may unwind into C) and checks
//! its arguments: a NULL pointer or an unknown id is logged on one
//! `== CALIPER: ` line and the call does nothing.
//!
//! Layers, each module using only those before it: `entry` (the panic
//! guard and argument helpers every entry point shares), `names` and
//! `stderr` use no other module (nor does `capsule`, the Shroud capsules
//! of the wrapper classes); `setup` owns the runtime handle and what
//! its first call sets up; the modules of entry points come after
//! (`tests/module_layers.rs` checks that there is no cycle).

#![allow(non_camel_case_types)] // the C ABI's type names

/// Lets the flush at exit see an allocation interrupted by a signal
/// handler that calls `exit()` (see `TrackedAllocator`).
#[global_allocator]
static ALLOC: runtime::TrackedAllocator = runtime::TrackedAllocator;

mod annotate;
mod async_event;
mod attributes;
mod capsule;
mod channels;
#[cfg(feature = "cxx-api")]
mod cxx_api;
mod datatracker;
mod entry;
mod kokkos;
mod logging;
mod manager;
mod mpi_binding;
mod names;
mod nodes;
mod ompt;
#[cfg(feature = "load-constructor")]
mod preload;
mod report;
mod setup;
mod snapshot;
mod stderr;
mod threads;
mod types;
mod variant;
mod wrap_annotation;
mod wrap_region_profile;
