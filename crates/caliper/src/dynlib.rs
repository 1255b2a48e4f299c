//! Libraries that services load at run time (`dlopen`), so that
//! `libcaliper` requires none of them: PAPI, CUPTI.

use std::ffi::{CStr, c_void};

/// `name`'s address in `handle` (a library `dlopen` returned), as the
/// function type `T`; `library` names the library in the error.
///
/// # Safety
/// `T` must be the C signature of `name`.
pub(crate) unsafe fn symbol<T: Copy>(handle: *mut c_void, name: &CStr, library: &str) -> Result<T, String> {
    // SAFETY: dlsym on a handle dlopen returned, with a NUL-terminated name.
    let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if address.is_null() {
        return Err(format!("{library} has no {}", name.to_string_lossy()));
    }
    // SAFETY: a function pointer of the signature the caller names.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&address) })
}

/// The first of `names` that `dlopen` loads (each a file name the dynamic
/// loader searches for, or a path), with the name it was loaded by.
pub(crate) fn open_first<'a>(names: impl IntoIterator<Item = &'a CStr>) -> Option<(*mut c_void, &'a CStr)> {
    names.into_iter().find_map(|name| {
        // SAFETY: dlopen with a NUL-terminated name.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        (!handle.is_null()).then_some((handle, name))
    })
}
