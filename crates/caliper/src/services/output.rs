//! Where output services write: standard output or error, or a file whose
//! name may hold `%attribute%` fields, filled from the flush's context (the
//! flushing thread's and the process's values when the channel flushes,
//! as the reference's flush context: one file per flush, not per thread
//! whose data it holds).

use crate::log;
use crate::service::Runtime;
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

thread_local! {
    /// What outputs opened on this thread write while [`capture`] runs.
    static CAPTURED: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Runs `f` with every output stream it opens on this thread (whatever
/// its name) writing into memory instead, and returns what they wrote:
/// for a program that wants a report in a stream of its own (the C++
/// `CollectiveOutputChannel::collective_flush(std::ostream&, MPI_Comm)`).
pub fn capture(f: impl FnOnce()) -> Vec<u8> {
    let outer = CAPTURED.with(|c| c.replace(Some(Vec::new())));
    f();
    CAPTURED.with(|c| c.replace(outer)).unwrap_or_default()
}

/// A stream into the buffer of the [`capture`] running on this thread.
struct Captured;

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let kept = CAPTURED.try_with(|c| c.borrow_mut().as_mut().map(|captured| captured.extend_from_slice(buf)));
        if !matches!(kept, Ok(Some(()))) {
            log::error(format_args!("output written after its capture ended: dropped"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Opens an output stream: `stdout`, `stderr`, or a file (parent
/// directories are created; `append` keeps existing content), or memory
/// while a [`capture`] runs on this thread. A stream that cannot be
/// opened is logged and `None` is returned.
pub fn open(name: &str, append: bool) -> Option<Box<dyn Write>> {
    // (At exit the thread's locals may be gone: no capture runs then.)
    if CAPTURED.try_with(|c| c.borrow().is_some()).unwrap_or(false) {
        return Some(Box::new(Captured));
    }
    match name {
        "stdout" => {
            flush_c_streams();
            Some(Box::new(io::stdout()))
        }
        "stderr" => {
            flush_c_streams();
            Some(Box::new(io::stderr()))
        }
        path => {
            if let Some(dir) = Path::new(path).parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            let file =
                if append { OpenOptions::new().create(true).append(true).open(path) } else { File::create(path) };
            match file {
                Ok(f) => Some(Box::new(io::BufWriter::new(f))),
                Err(e) => {
                    log::error(format_args!("Could not open output stream {path}: {e}"));
                    None
                }
            }
        }
    }
}

/// An output stream that [`open`]s on its first write, so that an output
/// that gets nothing is never created (no file, no flush of the program's
/// streams). A stream that cannot be opened is logged once, and what would
/// go to it is dropped.
pub fn open_on_write(name: &str, append: bool) -> Box<dyn Write> {
    Box::new(OnWrite { name: name.to_string(), append, stream: None })
}

/// See [`open_on_write`]: `stream` is `None` until the first write, then
/// the opened stream (`Some(None)` if it could not be opened).
struct OnWrite {
    name: String,
    append: bool,
    stream: Option<Option<Box<dyn Write>>>,
}

impl Write for OnWrite {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.stream.get_or_insert_with(|| open(&self.name, self.append)) {
            Some(stream) => stream.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.stream {
            Some(Some(stream)) => stream.flush(),
            _ => Ok(()),
        }
    }
}

/// Writes out what the host program has buffered in its C stdio streams
/// (`printf`, C++ streams synced with them), so that a report written to
/// standard output or error comes after it, in the order the program and
/// the report were written. The reference writes its reports through those
/// same streams; this library writes to the descriptors, which would put
/// a report at exit before the program's output when that is a pipe or a
/// file (stdio buffers it until the end of `exit`).
fn flush_c_streams() {
    // SAFETY: fflush(NULL) flushes every open output stream; it takes no
    // pointer of ours.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// Replaces `%attr%` and `%[width]attr%` fields with the attribute's value
/// on the flushing thread or the process (empty if unset; numbers padded on
/// the left to `width`).
pub fn substitute(cali: &dyn Runtime, pattern: &str) -> String {
    let mut out = String::new();
    for (i, part) in pattern.split('%').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
            continue;
        }
        let (width, name) = match part.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((w, n)) => (w.parse().unwrap_or(0), n),
            None => (0, part),
        };
        let value = cali.find_attribute(name).and_then(|a| cali.get(a)).map(|v| v.to_string()).unwrap_or_default();
        out.push_str(&format!("{value:>width$}"));
    }
    out
}

/// An automatic file name: `YYMMDD-HHMMSS_<pid>_<12 random characters>.cali`
/// (UTC).
pub fn auto_name() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    let (y, m, d) = civil_from_days(days as i64);
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut seed = now.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32);
    let random: String = (0..12)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ALPHABET[(seed % ALPHABET.len() as u64) as usize] as char
        })
        .collect();
    format!(
        "{:02}{:02}{:02}-{:02}{:02}{:02}_{}_{random}.cali",
        y % 100,
        m,
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        std::process::id()
    )
}

/// The calendar date of a day number since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20778), (2026, 11, 21));
        assert_eq!(civil_from_days(11016), (2000, 2, 29));
    }

    #[test]
    fn captured_outputs_write_into_memory_whatever_their_names() {
        let text = capture(|| {
            for name in ["stdout", "/nonexistent/dir/report.txt"] {
                let mut out = open(name, false).expect("a captured stream opens");
                writeln!(out, "to {name}").unwrap();
            }
        });
        assert_eq!(String::from_utf8(text).unwrap(), "to stdout\nto /nonexistent/dir/report.txt\n");
        assert!(!Path::new("/nonexistent/dir/report.txt").exists());
        assert!(CAPTURED.with(|c| c.borrow().is_none()), "the capture ended");
    }

    #[test]
    fn auto_names_look_right() {
        let name = auto_name();
        assert!(name.ends_with(".cali"));
        assert_eq!(name.len(), "261121-192500_".len() + std::process::id().to_string().len() + 1 + 12 + 5);
    }
}
