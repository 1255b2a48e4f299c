//! The runtime handle every entry point gets ([`cali`]), and what the
//! library does the first time it hands it out: its one-line panic hook,
//! the built-in attribute ids that C code reads from global variables
//! (`cali_region_attr_id`, ...), and the exit handler that gives the
//! report a standard error (see `stderr`).
//!
//! The first call publishes the ids, whichever entry point it is. Not a
//! load-time constructor: in `libcaliper.a` a constructor sits in one
//! object file, which the linker leaves out of a static program that only
//! calls functions of other objects, and the ids would then never be
//! published. Every entry point that uses the runtime gets it from
//! [`cali`], and a call racing the first one waits for its setup, so none
//! works with the runtime before the ids are set.

use crate::entry::{CALI_INV_ID, cali_id_t};
use runtime::{Caliper, log};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! exported_ids {
    ($($name:ident),* $(,)?) => {
        $(
            #[unsafe(no_mangle)]
            pub static $name: AtomicU64 = AtomicU64::new(CALI_INV_ID);
        )*
    };
}

// `extern cali_id_t ...` in the headers: an AtomicU64 has the layout of a
// uint64_t. The alloc ids belong to the memory tracking services, which
// this implementation does not have: they stay CALI_INV_ID, as in a
// reference build without them.
exported_ids!(
    cali_class_aggregatable_attr_id,
    cali_class_symboladdress_attr_id,
    cali_class_memoryaddress_attr_id,
    cali_class_iteration_attr_id,
    cali_region_attr_id,
    cali_phase_attr_id,
    cali_loop_attr_id,
    cali_annotation_attr_id,
    cali_alloc_fn_attr_id,
    cali_alloc_label_attr_id,
    cali_alloc_uid_attr_id,
    cali_alloc_addr_attr_id,
    cali_alloc_elem_size_attr_id,
    cali_alloc_num_elems_attr_id,
    cali_alloc_total_size_attr_id,
);

static SETUP: Once = Once::new();

/// The runtime, initialised on first use; `None` after it has finished.
/// The first call also does the library's setup (see the module). After
/// that, one load of a completed flag is all this adds to a call.
#[inline]
pub(crate) fn cali() -> Option<&'static Caliper> {
    if !SETUP.is_completed() {
        return first_call();
    }
    Caliper::instance()
}

/// Out of line: it runs once, and the entry points that inline [`cali`]
/// stay short. An MPI binding loaded with the program is registered
/// before the runtime starts, so that its configs see MPI.
#[cold]
#[inline(never)]
fn first_call() -> Option<&'static Caliper> {
    crate::mpi_binding::discover();
    let c = Caliper::instance()?;
    SETUP.call_once(|| {
        install_panic_hook();
        publish_ids(c);
        crate::stderr::rescue_at_exit();
    });
    Some(c)
}

/// Replaces the default panic message (several lines, naming the Rust
/// thread) with one `== CALIPER: ` line; `entry::guard` then says which
/// call failed. The hook belongs to this library's own Rust runtime only.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        log::error(format_args!("internal error: {}", runtime::contain::describe_panic(info)));
    }));
}

/// Fills in the exported ids once the runtime exists.
fn publish_ids(c: &Caliper) {
    let b = c.builtins();
    let find = |name: &str| -> cali_id_t { c.find_attribute(name).map_or(CALI_INV_ID, |a| a.id()) };
    for (var, id) in [
        (&cali_class_aggregatable_attr_id, find("class.aggregatable")),
        (&cali_class_symboladdress_attr_id, find("class.symboladdress")),
        (&cali_class_memoryaddress_attr_id, find("class.memoryaddress")),
        (&cali_class_iteration_attr_id, b.class_iteration.id()),
        (&cali_region_attr_id, b.region.id()),
        (&cali_phase_attr_id, b.phase.id()),
        (&cali_loop_attr_id, b.loop_attr.id()),
        // The legacy `annotation` attribute became `region` in the reference.
        (&cali_annotation_attr_id, b.region.id()),
    ] {
        var.store(id, Ordering::Release);
    }
}
