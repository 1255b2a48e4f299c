//! Caliper's log: one-line messages prefixed `== CALIPER: `.
//!
//! `CALI_LOG_VERBOSITY` sets the level (0: errors and warnings only, 1:
//! basic information, 2: debug statistics, 3: channel configurations);
//! `CALI_LOG_LOGFILE` the destination (`stderr` by default, `stdout`,
//! `none`, or a file name). Logging never fails the host program: a write
//! error is ignored.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// The message prefix, as the reference prints it.
pub const PREFIX: &str = "== CALIPER: ";

static VERBOSITY: AtomicU32 = AtomicU32::new(0);
static SINK: Mutex<Sink> = Mutex::new(Sink::Stderr);

thread_local! {
    /// Set while the calling thread writes a message.
    static WRITING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

enum Sink {
    Stderr,
    Stdout,
    None,
    File(File),
}

/// Whether another thread is writing a message (see [`crate::sync::is_held`]).
pub(crate) fn is_busy() -> bool {
    crate::sync::is_held(&SINK)
}

/// Sets the verbosity level.
pub fn set_verbosity(level: u32) {
    VERBOSITY.store(level, Ordering::Relaxed);
}

/// The verbosity level.
pub fn verbosity() -> u32 {
    VERBOSITY.load(Ordering::Relaxed)
}

/// Sets the destination: `stderr`, `stdout`, `none` or a file name (a file
/// that cannot be opened leaves the destination unchanged and says so).
pub fn set_destination(name: &str) {
    let sink = match name {
        "" | "stderr" => Sink::Stderr,
        "stdout" => Sink::Stdout,
        "none" => Sink::None,
        path => match OpenOptions::new().create(true).append(true).open(path) {
            Ok(f) => Sink::File(f),
            Err(e) => {
                error(&format!("Could not open log file {path}: {e}"));
                return;
            }
        },
    };
    if let Ok(mut s) = SINK.lock() {
        *s = sink;
    }
}

/// Logs `message` if the verbosity is at least `level` (level 0 messages,
/// errors and warnings, always appear).
pub fn log(level: u32, message: &str) {
    if level > verbosity() {
        return;
    }
    // A message from a signal handler that interrupted this thread's
    // write would wait for the lock the thread holds: it is dropped.
    if WRITING.with(|w| w.replace(true)) {
        return;
    }
    // A short line is put together on the stack: a message from a signal
    // handler that interrupted an allocation must not allocate.
    let mut stack = [0u8; 512];
    let heap;
    let parts = [PREFIX.as_bytes(), message.as_bytes(), b"\n"];
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let line: &[u8] = if len <= stack.len() {
        let mut at = 0;
        for part in parts {
            stack[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        &stack[..len]
    } else {
        heap = parts.concat();
        &heap
    };
    if let Ok(mut sink) = SINK.lock() {
        let _ = match &mut *sink {
            Sink::Stderr => std::io::stderr().write_all(line),
            Sink::Stdout => std::io::stdout().write_all(line),
            Sink::None => Ok(()),
            Sink::File(f) => f.write_all(line),
        };
    }
    WRITING.with(|w| w.set(false));
}

/// Logs an error or warning (always shown).
pub fn error(message: &str) {
    log(0, message);
}

/// Logs basic information (verbosity 1).
pub fn info(message: &str) {
    log(1, message);
}
