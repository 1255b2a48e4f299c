//! Rust programs on the `mpi` crate (feature `rsmpi`). Linking this crate
//! puts the PMPI wrappers in the program, so the `mpi` crate's calls are
//! measured like a C program's (`profile.mpi`, message tracing), and the
//! cross-rank reports reduce over `MPI_COMM_WORLD`; [`collective_flush`]
//! flushes over one of the program's communicators instead.
//!
//! ```no_run
//! use mpi::traits::*;
//! caliper_mpi::rsmpi::start();
//! let universe = mpi::initialize().unwrap();
//! let world = universe.world();
//! let mut mgr = runtime::ConfigManager::new();
//! mgr.add("runtime-report(output=stdout)");
//! mgr.start();
//! {
//!     let _work = runtime::region!("work");
//!     world.barrier();
//! }
//! caliper_mpi::rsmpi::collective_flush(&world, || mgr.flush());
//! ```

use mpi::topology::Communicator;
use std::ffi::c_void;

/// Registers the MPI binding; call it first, before Caliper starts (a
/// Rust program may leave out the library constructor that does it in C
/// programs).
pub fn start() {
    crate::layer::register();
}

/// Runs `flush` (e.g. a config manager's) with its cross-rank outputs
/// reduced over `comm`; every rank of `comm` must call it.
pub fn collective_flush<C: Communicator, F: FnOnce()>(comm: &C, flush: F) {
    /// Calls the flush once, through the C interface; a panic in it stops
    /// here.
    unsafe extern "C" fn call<F: FnOnce()>(arg: *mut c_void) {
        // SAFETY: `arg` is the `Option<F>` below, alive for the call.
        if let Some(flush) = unsafe { &mut *arg.cast::<Option<F>>() }.take() {
            crate::layer::guarded(flush);
        }
    }
    let raw = comm.as_raw();
    let mut flush = Some(flush);
    // SAFETY: a pointer to a valid communicator handle and our callback
    // with its argument, for the call.
    unsafe {
        caliper_mpi_abi::cali_mpi_flush_on(
            (&raw as *const mpi::ffi::MPI_Comm).cast(),
            Some(call::<F>),
            (&mut flush as *mut Option<F>).cast(),
        )
    };
}
