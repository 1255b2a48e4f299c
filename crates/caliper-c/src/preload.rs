//! Profiling a program that never calls Caliper: with the library
//! preloaded (`LD_PRELOAD=libcaliper.so`) or merely linked, and
//! `CALI_CONFIG` or `CALI_SERVICES_ENABLE` set, an ELF constructor starts
//! the runtime before `main`, so the configured report is written when
//! the program exits.
//!
//! Reports go to standard error by default, and some programs close it
//! before they exit. The constructor keeps a duplicate of file
//! descriptor 2; if descriptor 2 is closed when the program exits, the
//! duplicate is put back there just before the runtime writes its
//! outputs. A descriptor 2 that the program reopened (to a log file, say)
//! is left alone.

use crate::entry::{cali, guard};
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The duplicate of standard error taken at load time, or -1.
static SAVED_STDERR: AtomicI32 = AtomicI32::new(-1);

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
        // SAFETY: duplicating a descriptor has no memory effects; a closed
        // descriptor 2 just fails.
        let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3) };
        SAVED_STDERR.store(fd, Ordering::Release);
        cali();
    })
}

/// Registers the exit handler that restores descriptor 2. Called when the
/// runtime starts, after it registered its own exit handler: handlers
/// run in reverse order, so this one runs first.
pub(crate) fn rescue_stderr_at_exit() {
    if SAVED_STDERR.load(Ordering::Acquire) >= 0 {
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(restore_stderr) };
    }
}

extern "C" fn restore_stderr() {
    let saved: c_int = SAVED_STDERR.load(Ordering::Acquire);
    // SAFETY: descriptor queries and dup2 have no memory effects.
    unsafe {
        if saved >= 0 && libc::fcntl(2, libc::F_GETFD) == -1 {
            libc::dup2(saved, 2);
        }
    }
}
