//! The data tracking calls of `cali_datatracker.h`: the program names
//! memory regions, which the runtime hands to the channels' tracking
//! services (`alloc`, `allocstats`).

use crate::entry::{guard, text};
use crate::setup::cali;
use runtime::log;
use runtime::service::MemoryRegion;
use std::ffi::{c_char, c_void};

/// Begins tracking a region; `dims` as given (checked by the callers).
fn track(entry: &str, ptr: *const c_void, label: *const c_char, elem_size: usize, dims: &[usize]) {
    guard(entry, (), || {
        if ptr.is_null() {
            log::error(format_args!("{entry}: NULL address, call ignored"));
            return;
        }
        // SAFETY: the C API passes NULL or a NUL-terminated label.
        let Some(label) = (unsafe { text(entry, label) }) else { return };
        let Some(c) = cali() else { return };
        let dims: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
        c.memory_region_begin(&MemoryRegion {
            address: ptr as u64,
            label: &label,
            elem_size: elem_size as u64,
            dims: &dims,
        });
    })
}

/// Tracks `size` bytes at `ptr` as `label`.
///
/// # Safety
/// `label` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_datatracker_track(ptr: *const c_void, label: *const c_char, size: usize) {
    track("cali_datatracker_track", ptr, label, 1, &[size])
}

/// Tracks an array of `ndims` dimensions (`dims`) of elements of
/// `elem_size` bytes at `ptr` as `label`.
///
/// # Safety
/// `label` is NULL or a NUL-terminated string; `dims` is NULL or points
/// to `ndims` sizes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_datatracker_track_dimensional(
    ptr: *const c_void,
    label: *const c_char,
    elem_size: usize,
    dims: *const usize,
    ndims: usize,
) {
    let entry = "cali_datatracker_track_dimensional";
    if dims.is_null() || ndims == 0 {
        return guard(entry, (), || log::error(format_args!("{entry}: no dimensions, call ignored")));
    }
    // SAFETY: the caller passes `ndims` sizes at `dims`.
    let dims = unsafe { std::slice::from_raw_parts(dims, ndims) };
    track(entry, ptr, label, elem_size, dims)
}

/// Stops tracking the region at `ptr`.
#[unsafe(no_mangle)]
pub extern "C" fn cali_datatracker_untrack(ptr: *const c_void) {
    guard("cali_datatracker_untrack", (), || {
        if let Some(c) = cali() {
            c.memory_region_end(ptr as u64);
        }
    })
}
