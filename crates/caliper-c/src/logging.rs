//! Caliper's log for the C++ `cali::Log`: its verbosity, and a message
//! written with the `== CALIPER: ` prefix to the destination
//! `CALI_LOG_LOGFILE` chose, as the runtime's own messages are.

use crate::entry::{guard, text};
use crate::setup::cali;
use runtime::log;
use std::ffi::{c_char, c_int};

/// The log's verbosity (`CALI_LOG_VERBOSITY`). Initialises the runtime,
/// which reads it, as the reference's `Log::verbosity()` does.
#[unsafe(no_mangle)]
pub extern "C" fn cali_log_verbosity() -> c_int {
    guard("cali_log_verbosity", 0, || {
        cali();
        c_int::try_from(log::verbosity()).unwrap_or(c_int::MAX)
    })
}

/// Writes `message` as one log message if the verbosity is at least
/// `level`: prefixed `== CALIPER: `, a trailing newline dropped (the log
/// adds its own), inner newlines kept.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_log_write(level: c_int, message: *const c_char) {
    guard("cali_log_write", (), || {
        cali();
        // SAFETY: per the caller.
        let Some(message) = (unsafe { text("cali_log_write", message) }) else { return };
        let level = u32::try_from(level).unwrap_or(0);
        log::log(level, format_args!("{}", message.strip_suffix('\n').unwrap_or(&message)));
    })
}

/// Sets the log's verbosity (as `CALI_LOG_VERBOSITY` does).
#[unsafe(no_mangle)]
pub extern "C" fn cali_log_set_verbosity(level: c_int) {
    guard("cali_log_set_verbosity", (), || log::set_verbosity(u32::try_from(level).unwrap_or(0)))
}

/// Appends `text` to what every log message starts with after
/// `== CALIPER: ` (the reference's `Log::add_prefix`).
///
/// # Safety
/// `text` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_log_add_prefix(text: *const c_char) {
    guard("cali_log_add_prefix", (), || {
        // SAFETY: per the caller.
        if let Some(text) = unsafe { crate::entry::text("cali_log_add_prefix", text) } {
            log::add_prefix(&text);
        }
    })
}
