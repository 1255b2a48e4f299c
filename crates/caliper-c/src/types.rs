//! `caliper/common/cali_types.h`: type and property names.

use crate::entry::guard;
use caliper_data::{AttrType, Properties};
use std::ffi::{CStr, c_char, c_int};

/// The name of a type (`"int"`, ...), or `"invalid"` for an unknown code.
#[unsafe(no_mangle)]
pub extern "C" fn cali_type2string(ty: c_int) -> *const c_char {
    const NAMES: [&CStr; 10] =
        [c"inv", c"usr", c"int", c"uint", c"string", c"addr", c"double", c"bool", c"type", c"ptr"];
    usize::try_from(ty).ok().and_then(|i| NAMES.get(i)).unwrap_or(&c"invalid").as_ptr()
}

/// The type named `name`, or `CALI_TYPE_INV`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_string2type(name: *const c_char) -> c_int {
    if name.is_null() {
        return 0;
    }
    // SAFETY: per the caller.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    AttrType::from_name(name.trim()).map_or(0, |t| t as c_int)
}

/// Writes the names of the flags of `prop` joined by `:` into `buf`
/// (NUL-terminated); returns the length, or -1 if `buf` is too small.
///
/// # Safety
/// `buf` is NULL or has room for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_prop2string(prop: c_int, buf: *mut c_char, len: usize) -> c_int {
    guard("cali_prop2string", -1, || {
        let text = Properties::from_bits(prop as u32).to_string();
        if buf.is_null() || text.len() + 1 > len {
            return -1;
        }
        // SAFETY: `buf` has room for `len` > text.len() bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, text.len());
            *buf.add(text.len()) = 0;
        }
        text.len() as c_int
    })
}

/// The properties named in `text` (every known flag name that appears as
/// a whole word).
///
/// # Safety
/// `text` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_string2prop(text: *const c_char) -> c_int {
    if text.is_null() {
        return 0;
    }
    // SAFETY: per the caller.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    Properties::parse(&text).bits() as c_int
}
