//! The data tracking calls of `cali_datatracker.h`. Tracking memory
//! regions is the job of the reference's `alloc` service, which this
//! implementation does not have: the calls exist so that programs using
//! them build, link and run, and the first one says once per process that
//! they are ignored (rather than silently measuring nothing).

use crate::entry::guard;
use runtime::log;
use std::ffi::{c_char, c_void};
use std::sync::Once;

fn ignored(entry: &str) {
    static SAID: Once = Once::new();
    guard(entry, (), || {
        SAID.call_once(|| {
            log::error(format_args!(
                "{entry}: memory tracking needs the alloc service, which is not available; cali_datatracker calls are ignored"
            ))
        })
    })
}

/// Would track `size` bytes at `ptr` as `label`; ignored (see the module).
#[unsafe(no_mangle)]
pub extern "C" fn cali_datatracker_track(_ptr: *const c_void, _label: *const c_char, _size: usize) {
    ignored("cali_datatracker_track")
}

/// Would track an array of `dims` (`ndims` of them) elements of
/// `elem_size` bytes at `ptr` as `label`; ignored (see the module).
#[unsafe(no_mangle)]
pub extern "C" fn cali_datatracker_track_dimensional(
    _ptr: *const c_void,
    _label: *const c_char,
    _elem_size: usize,
    _dims: *const usize,
    _ndims: usize,
) {
    ignored("cali_datatracker_track_dimensional")
}

/// Would stop tracking the region at `ptr`; ignored (see the module).
#[unsafe(no_mangle)]
pub extern "C" fn cali_datatracker_untrack(_ptr: *const c_void) {
    ignored("cali_datatracker_untrack")
}
