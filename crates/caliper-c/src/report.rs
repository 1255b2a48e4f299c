//! Reports on demand: the C entry point under the C++
//! `cali::write_report_for_query`, which runs a CalQL query over what a
//! channel has gathered and writes the result to a `std::ostream`. The
//! library holds no C++ runtime, so the text goes out through a callback
//! the header-only C++ function supplies.

use crate::channels::channel;
use crate::entry::{cali_id_t, guard, text};
use runtime::log;
use runtime::query_report::write_report_for_query;
use std::ffi::{c_char, c_void};
use std::io::Write;

/// `cali_write_fn`: receives the report text in pieces of `len` bytes (not
/// NUL-terminated). It must not unwind (throw) into the library.
type WriteFn = unsafe extern "C" fn(user_arg: *mut c_void, text: *const c_char, len: usize);

/// The report's destination: every write goes straight to the callback
/// (a `std::ostream` buffers on its side).
struct Callback {
    write: WriteFn,
    user_arg: *mut c_void,
}

impl Write for Callback {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: the caller of `cali_write_report_for_query` vouched for
        // the callback and its argument for the duration of that call,
        // which this writer does not outlive.
        unsafe { (self.write)(self.user_arg, buf.as_ptr().cast(), buf.len()) };
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the CalQL query `calql` over what channel `chn` has gathered and
/// hands the result (`expand` lines unless the query has a FORMAT clause)
/// to `write`. The channel keeps its data. An invalid channel id or a
/// query that does not parse is logged (`write_report_for_query(): query
/// parse error: ...`, as the reference says it) and nothing is written.
///
/// # Safety
/// `calql` is NULL or a NUL-terminated string; `write` may be called with
/// `user_arg` until this function returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_write_report_for_query(
    chn: cali_id_t,
    calql: *const c_char,
    write: Option<WriteFn>,
    user_arg: *mut c_void,
) {
    const ENTRY: &str = "write_report_for_query()";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let Some(calql) = (unsafe { text(ENTRY, calql) }) else { return };
        let Some(write) = write else {
            log::error(format_args!("{ENTRY}: NULL write function, call ignored"));
            return;
        };
        let Some((c, ch)) = channel(ENTRY, chn) else { return };
        if let Err(e) = write_report_for_query(c, &ch, &calql, Box::new(Callback { write, user_arg })) {
            log::error(format_args!("{ENTRY}: {e}"));
        }
    })
}
