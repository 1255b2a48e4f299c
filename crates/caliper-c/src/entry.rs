//! What every entry point shares: the panic guard, C string arguments,
//! attribute ids and the attributes behind them, and C strings handed out
//! by the library.
//!
//! Depends on no other module of this crate, so that every one of them
//! may use it. The runtime handle, whose first use sets the library up,
//! is in `setup`.

use caliper_data::hash::FxHashMap;
use runtime::{Attribute, Caliper, log};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

/// `cali_id_t`: attribute, channel and node ids.
pub type cali_id_t = u64;
/// `CALI_INV_ID`: no such id.
pub const CALI_INV_ID: cali_id_t = u64::MAX;

/// Runs an entry point's body. A panic must not unwind into the host
/// program: it is caught, logged on one line, and `fallback` returned.
#[inline(always)]
pub(crate) fn guard<R>(entry: &str, fallback: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(_) => {
            internal_error(entry);
            fallback
        }
    }
}

/// Logs that a call failed (out of line: never on the hot path).
#[cold]
#[inline(never)]
fn internal_error(entry: &str) {
    log::error(format_args!("{entry}: internal error, call ignored"));
}

/// A C string argument as text (invalid UTF-8 replaced); NULL is logged
/// as an error of `entry` and gives `None`.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string.
pub(crate) unsafe fn text<'a>(entry: &str, s: *const c_char) -> Option<Cow<'a, str>> {
    if s.is_null() {
        log::error(format_args!("{entry}: NULL string argument, call ignored"));
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy())
}

/// The attribute with id `id`; an unknown id is logged as an error of
/// `entry`. Attributes never change once created, so a small per-thread
/// table answers repeated lookups without the registry's lock.
pub(crate) fn attribute(entry: &str, cali: &Caliper, id: cali_id_t) -> Option<Attribute> {
    thread_local! {
        static RECENT: RefCell<[Option<Attribute>; 64]> = const { RefCell::new([None; 64]) };
    }
    let slot = (id % 64) as usize;
    let cached = RECENT.try_with(|r| r.try_borrow().ok().and_then(|r| r[slot]).filter(|a| a.id() == id));
    if let Ok(Some(a)) = cached {
        return Some(a);
    }
    match cali.attribute_info(id) {
        Some(info) => {
            let _ = RECENT.try_with(|r| r.try_borrow_mut().map(|mut r| r[slot] = Some(info.attr)));
            Some(info.attr)
        }
        None => {
            log::error(format_args!("{entry}: invalid attribute id {id}"));
            None
        }
    }
}

/// A NUL-terminated copy of `s` that lives as long as the process, for
/// strings handed to C (attribute names, region names, string values).
/// Copies are shared by content, so their number is bounded by the
/// distinct strings the program uses, which the runtime keeps anyway.
pub(crate) fn static_cstr(s: &str) -> &'static CStr {
    static COPIES: Mutex<Option<FxHashMap<String, &'static CStr>>> = Mutex::new(None);
    let mut copies = COPIES.lock().unwrap_or_else(|e| e.into_inner());
    let copies = copies.get_or_insert_with(FxHashMap::default);
    if let Some(c) = copies.get(s) {
        return c;
    }
    // An interior NUL cannot be represented: the C string ends there.
    let bytes: Vec<u8> = s.bytes().take_while(|&b| b != 0).collect();
    let copy: &'static CStr = Box::leak(CString::new(bytes).unwrap_or_default().into_boxed_c_str());
    copies.insert(s.to_string(), copy);
    copy
}
