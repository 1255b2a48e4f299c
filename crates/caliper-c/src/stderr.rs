//! Standard error for the report at exit. Reports go to standard error by
//! default, and some programs close it before they exit. When the library
//! starts the runtime at load time (see `preload`) it keeps a duplicate of
//! file descriptor 2; if descriptor 2 is closed when the program exits,
//! the duplicate is put back there just before the runtime writes its
//! outputs. A descriptor 2 that the program reopened (to a log file, say)
//! is left alone.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The duplicate of standard error taken at load time, or -1.
static SAVED: AtomicI32 = AtomicI32::new(-1);

/// Keeps a duplicate of descriptor 2 (if it is open), before the runtime
/// starts.
#[cfg(feature = "load-constructor")]
pub(crate) fn keep() {
    // SAFETY: duplicating a descriptor has no memory effects; a closed
    // descriptor 2 just fails.
    let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3) };
    SAVED.store(fd, Ordering::Release);
}

/// Registers the exit handler that restores descriptor 2, if [`keep`]
/// kept one. Called when the runtime starts, after it registered its own
/// exit handler: handlers run in reverse order, so this one runs first.
pub(crate) fn rescue_at_exit() {
    if SAVED.load(Ordering::Acquire) >= 0 {
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(restore) };
    }
}

extern "C" fn restore() {
    let saved: c_int = SAVED.load(Ordering::Acquire);
    // SAFETY: descriptor queries and dup2 have no memory effects.
    unsafe {
        if saved >= 0 && libc::fcntl(2, libc::F_GETFD) == -1 {
            libc::dup2(saved, 2);
        }
    }
}
