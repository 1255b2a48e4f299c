//! Python strings handed to libcaliper as C strings.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::ffi::{CStr, CString};

/// The NUL-terminated UTF-8 form of `s`, borrowed from the str object:
/// CPython keeps it with the object (for an ASCII string it is the
/// object's own data), so the region calls copy nothing, and a name that
/// is a constant of the program has the same address on every call,
/// which libcaliper's name cache keys on. A string holding a NUL cannot
/// be passed to C and raises `ValueError`.
#[inline]
pub(crate) fn borrowed<'a>(s: &'a Bound<'_, PyString>) -> PyResult<&'a CStr> {
    let text = s.to_str()?;
    if text.as_bytes().contains(&0) {
        return Err(nul_error(text));
    }
    // SAFETY: CPython's UTF-8 form is followed by a NUL, which is the
    // only one in it (checked above).
    Ok(unsafe { CStr::from_bytes_with_nul_unchecked(std::slice::from_raw_parts(text.as_ptr(), text.len() + 1)) })
}

/// An owned C string of `s`, for calls off the hot path; a NUL raises
/// `ValueError`.
pub(crate) fn owned(s: &str) -> PyResult<CString> {
    CString::new(s).map_err(|_| nul_error(s))
}

fn nul_error(s: &str) -> PyErr {
    PyValueError::new_err(format!("string contains a NUL character: {s:?}"))
}

/// A string libcaliper returned (NULL reads as "").
///
/// # Safety
/// `s` is NULL or NUL-terminated and valid for the call.
pub(crate) unsafe fn from_c(s: *const std::ffi::c_char) -> String {
    if s.is_null() { String::new() } else { unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned() }
}
