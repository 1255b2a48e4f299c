//! Profiling a program that never calls Caliper: with the library
//! preloaded (`LD_PRELOAD=libcaliper.so`) or merely linked, and
//! `CALI_CONFIG` or `CALI_SERVICES_ENABLE` set, an ELF constructor starts
//! the runtime before `main`, so the configured report is written when
//! the program exits. It keeps standard error for that report first (see
//! `stderr`).
//!
//! Only this start depends on the constructor. A static program that
//! leaves the constructor's object file out still gets everything the
//! first call sets up (see `setup`). Built with the `load-constructor`
//! feature (on by default).

use crate::entry::guard;
use crate::setup::cali;

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init_from_environment;

/// Whether the environment asks for measurements.
fn configured() -> bool {
    ["CALI_CONFIG", "CALI_SERVICES_ENABLE", "CALI_CONFIG_PROFILE"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
}

extern "C" fn init_from_environment() {
    guard("library constructor", (), || {
        if !configured() {
            return;
        }
        crate::stderr::keep();
        cali();
    })
}
