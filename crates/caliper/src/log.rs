//! Caliper's log: one-line messages prefixed `== CALIPER: `.
//!
//! `CALI_LOG_VERBOSITY` sets the level (0: errors and warnings only, 1:
//! basic information, 2: debug statistics, 3: channel configurations);
//! `CALI_LOG_LOGFILE` the destination (`stderr` by default, `stdout`,
//! `none`, or a file name). Logging never fails the host program: a write
//! error is ignored.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The message prefix, as the reference prints it.
pub const PREFIX: &str = "== CALIPER: ";

static VERBOSITY: AtomicU32 = AtomicU32::new(0);
static SINK: Mutex<Destination> = Mutex::new(Destination { sink: Sink::Stderr, prefix: String::new() });

/// Where messages go, and the text every message starts with after
/// [`PREFIX`] (see [`add_prefix`]).
struct Destination {
    sink: Sink,
    prefix: String,
}

/// Whether the process's MPI rank is in the prefix (see [`set_rank`]).
static RANK_NAMED: AtomicBool = AtomicBool::new(false);

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

/// Names the process's MPI rank in every line from now on (`== CALIPER:
/// (<rank>): `, once however often it is called); ranks above 0
/// keep to errors and warnings (verbosity 0), as the reference's do.
pub fn set_rank(rank: usize) {
    if !RANK_NAMED.swap(true, Ordering::Relaxed) {
        add_prefix(&format!("({rank}): "));
    }
    if rank > 0 {
        set_verbosity(0);
    }
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
                error(format_args!("Could not open log file {path}: {e}"));
                return;
            }
        },
    };
    if let Ok(mut d) = SINK.lock() {
        d.sink = sink;
    }
}

/// Appends `text` to what every message starts with after `== CALIPER: `
/// (e.g. a process's rank, so that the lines of many processes can be
/// told apart). The reference's `Log::add_prefix`.
pub fn add_prefix(text: &str) {
    if let Ok(mut d) = SINK.lock() {
        d.prefix.push_str(text);
    }
}

/// Whether messages at `level` appear: for a caller whose message
/// arguments cost something to compute (`format_args!` evaluates them
/// before [`log`] can drop the message).
pub fn enabled(level: u32) -> bool {
    level <= verbosity()
}

/// Logs the message if the verbosity is at least `level` (level 0
/// messages, errors and warnings, always appear). The message is formatted
/// only past that check: callers pass `format_args!`, so a message the
/// verbosity drops costs a comparison.
pub fn log(level: u32, message: fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    // A message from a signal handler that interrupted this thread's
    // write would wait for the lock the thread holds: it is dropped.
    if WRITING.with(|w| w.replace(true)) {
        return;
    }
    if let Ok(mut d) = SINK.lock() {
        let mut line = Line::new();
        // Formatting into a `Line` cannot fail; a `Display` impl of the
        // caller's that returns an error leaves its part out.
        let _ = fmt::write(&mut line, format_args!("{PREFIX}{}{message}\n", d.prefix));
        let bytes = line.bytes();
        let _ = match &mut d.sink {
            Sink::Stderr => std::io::stderr().write_all(bytes),
            Sink::Stdout => std::io::stdout().write_all(bytes),
            Sink::None => Ok(()),
            Sink::File(f) => f.write_all(bytes),
        };
    }
    WRITING.with(|w| w.set(false));
}

/// Logs an error in a forked child, from the fork handler: with `write(2)`
/// on the sink's descriptor, taking no lock that a thread of the parent
/// (which does not exist in the child) may have held at the fork: not the
/// standard streams' locks, and the sink's only if it is free (else the
/// message is dropped).
pub(crate) fn error_in_forked_child(message: fmt::Arguments<'_>) {
    use std::os::fd::AsRawFd;
    let Ok(d) = SINK.try_lock() else { return };
    let mut line = Line::new();
    let _ = fmt::write(&mut line, format_args!("{PREFIX}{}{message}\n", d.prefix));
    let fd = match &d.sink {
        Sink::Stderr => 2,
        Sink::Stdout => 1,
        Sink::None => return,
        Sink::File(f) => f.as_raw_fd(),
    };
    let bytes = line.bytes();
    // SAFETY: writing a buffer we own to a descriptor; a failure is ignored.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// A line being put together: on the stack while it is short, so that a
/// message from a signal handler that interrupted an allocation does not
/// allocate; moved to the heap when it outgrows the stack buffer.
struct Line {
    stack: [u8; 512],
    len: usize,
    heap: Vec<u8>,
}

impl Line {
    fn new() -> Line {
        Line { stack: [0; 512], len: 0, heap: Vec::new() }
    }

    fn bytes(&self) -> &[u8] {
        if self.heap.is_empty() { &self.stack[..self.len] } else { &self.heap }
    }
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.heap.is_empty() {
            if let Some(free) = self.stack.get_mut(self.len..self.len + s.len()) {
                free.copy_from_slice(s.as_bytes());
                self.len += s.len();
                return Ok(());
            }
            self.heap.extend_from_slice(&self.stack[..self.len]);
        }
        self.heap.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Logs an error or warning (always shown).
pub fn error(message: fmt::Arguments<'_>) {
    log(0, message);
}

/// Logs basic information (verbosity 1).
pub fn info(message: fmt::Arguments<'_>) {
    log(1, message);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Counts how often it is formatted.
    struct Counted<'a>(&'a Cell<u32>);

    impl fmt::Display for Counted<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.set(self.0.get() + 1);
            f.write_str("counted")
        }
    }

    #[test]
    fn a_dropped_message_is_not_formatted() {
        let calls = Cell::new(0);
        // No verbosity reaches this level, whatever other tests set.
        log(u32::MAX, format_args!("{}", Counted(&calls)));
        assert_eq!(calls.get(), 0);
    }

    #[test]
    fn lines_longer_than_the_stack_buffer_are_whole() {
        let mut line = Line::new();
        let long = "x".repeat(700);
        fmt::write(&mut line, format_args!("{PREFIX}{}{long}\n", 5)).unwrap();
        assert_eq!(line.bytes(), format!("{PREFIX}5{long}\n").as_bytes());
        let mut short = Line::new();
        fmt::write(&mut short, format_args!("{PREFIX}{}\n", 5)).unwrap();
        assert_eq!(short.bytes(), format!("{PREFIX}5\n").as_bytes());
        assert!(short.heap.is_empty(), "a short line stays on the stack");
    }
}
