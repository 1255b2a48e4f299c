//! The library's constructor: what libcaliper does when it is loaded and
//! when the runtime starts. Kept apart from `entry`, which every entry
//! point uses, so that `entry` depends on no other module of this crate.

use runtime::Caliper;

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = at_load;

/// Arranges for [`at_start`] to run when the runtime starts, then starts
/// it if the environment asks for measurements (a preloaded library).
extern "C" fn at_load() {
    crate::entry::guard("library constructor", (), || {
        runtime::runtime::on_start(at_start);
        crate::preload::init_from_environment();
    })
}

/// Publishes the built-in attribute ids to C and arranges for standard
/// error to be usable at exit (after the runtime's own exit handler).
fn at_start(c: &'static Caliper) {
    crate::attributes::publish_ids(c);
    crate::preload::rescue_stderr_at_exit();
}
