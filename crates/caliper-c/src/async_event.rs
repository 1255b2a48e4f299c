//! Timed asynchronous events for C and C++ (`caliper/AsyncEvent.h`): the
//! begin emits `async.begin=<message>` and hands back its start time, the
//! end emits `async.end=<message>` with `event.duration.ns`. The C++
//! `cali::TimedAsyncEvent` keeps the message and the start time itself, so
//! that it is a plain value as the reference's is.

use crate::entry::{guard, text};
use std::ffi::c_char;

/// Emits `async.begin=<message>` and stores the event's start time in
/// `*start_ns` (if not NULL).
///
/// # Safety
/// `message` is NULL or a NUL-terminated string; `start_ns` is NULL or
/// points to writable memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_timed_async_event_begin(message: *const c_char, start_ns: *mut u64) {
    guard("cali_timed_async_event_begin", (), || {
        // SAFETY: as the caller promises.
        let Some(message) = (unsafe { text("cali_timed_async_event_begin", message) }) else { return };
        let start = runtime::api::async_event_begin(&message);
        if !start_ns.is_null() {
            // SAFETY: non-NULL and writable per the caller.
            unsafe { start_ns.write(start) };
        }
    })
}

/// Emits `async.end=<message>` and `event.duration.ns` since `start_ns`.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_timed_async_event_end(message: *const c_char, start_ns: u64) {
    guard("cali_timed_async_event_end", (), || {
        // SAFETY: as the caller promises.
        let Some(message) = (unsafe { text("cali_timed_async_event_end", message) }) else { return };
        runtime::api::async_event_end(&message, start_ns);
    })
}
