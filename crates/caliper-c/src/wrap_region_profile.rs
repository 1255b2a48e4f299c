//! The C wrapper of the reference's `BufferedRegionProfile`
//! (`wrapBufferedRegionProfile.h`), which its Fortran module calls: a
//! region profile (`runtime::region_profile`) whose times are fetched
//! into a buffer in one call and then read one region at a time, a shape
//! that C and Fortran can use without handing a map across.
//!
//! The C++ `cali::RegionProfile` and `cali::BufferedRegionProfile` of the
//! headers are built on these functions; `region_times` (an extension)
//! lets them read the whole buffer.

use crate::capsule::{Capsule, Class, fill, get, take};
use crate::entry::{guard, text};
use crate::setup::cali;
use runtime::region_profile::{RegionProfile, RegionTimes, Times};
use std::ffi::{CString, c_char, c_double, c_int, c_void};

/// A profile and the times last fetched from it.
struct Buffered {
    profile: RegionProfile,
    fetched: RegionTimes,
}

impl Class for Buffered {
    const NAME: &'static str = "BufferedRegionProfile";
    const IDTOR: c_int = 4;
}

/// Runs `f` on the profile in `cap` (NULL, empty or foreign capsules are
/// logged), or gives `fallback`.
fn with<R: Copy>(entry: &str, fallback: R, cap: *mut Capsule, f: impl FnOnce(&mut Buffered) -> R) -> R {
    guard(entry, fallback, || {
        // SAFETY: the C API passes NULL or a capsule.
        match unsafe { get::<Buffered>(entry, cap) } {
            Some(b) if cali().is_some() => f(b),
            _ => fallback,
        }
    })
}

/// A profile that measures nothing until started, in the caller's
/// capsule `SHC_rv`; returns `SHC_rv`.
///
/// # Safety
/// `rv` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_new(rv: *mut Capsule) -> *mut Capsule {
    const ENTRY: &str = "cali_BufferedRegionProfile_new";
    guard(ENTRY, rv, || {
        let profile = Buffered { profile: RegionProfile::new(), fetched: RegionTimes::default() };
        // SAFETY: per the caller.
        unsafe { fill(ENTRY, rv, profile) }
    })
}

/// Deletes the profile and its channel.
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_delete(cap: *mut Capsule) {
    guard("cali_BufferedRegionProfile_delete", (), || {
        // SAFETY: per the caller.
        drop(unsafe { take::<Buffered>("cali_BufferedRegionProfile_delete", cap) });
    })
}

macro_rules! control {
    ($($(#[$doc:meta])* $func:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `cap` is NULL or a capsule.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $func(cap: *mut Capsule) {
            with(stringify!($func), (), cap, |b| b.profile.$method())
        }
    )*};
}

control! {
    /// Starts measuring region times (creating the channel the first time).
    cali_BufferedRegionProfile_start => start;
    /// Stops measuring; the times gathered stay.
    cali_BufferedRegionProfile_stop => stop;
    /// Forgets the times gathered (the buffer of fetched times stays).
    cali_BufferedRegionProfile_clear => clear;
}

/// Fetches the times into the buffer.
fn fetch(entry: &str, cap: *mut Capsule, region_type: *const c_char, times: Times) {
    with(entry, (), cap, |b| {
        // NULL is the C++ default argument: every nested attribute.
        let region_type = if region_type.is_null() {
            String::new()
        } else {
            // SAFETY: the C API passes a NUL-terminated string.
            unsafe { text(entry, region_type) }.map(|s| s.into_owned()).unwrap_or_default()
        };
        b.fetched = b.profile.region_times(&region_type, times);
    })
}

/// Fetches the exclusive time per region (of the attribute named
/// `region_type`; all nested attributes if it is "" or NULL).
///
/// # Safety
/// `cap` is NULL or a capsule; `region_type` is NULL or a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_fetch_exclusive_region_times(
    cap: *mut Capsule,
    region_type: *const c_char,
) {
    fetch("cali_BufferedRegionProfile_fetch_exclusive_region_times", cap, region_type, Times::Exclusive)
}

/// Fetches the inclusive time per region, as
/// [`cali_BufferedRegionProfile_fetch_exclusive_region_times`].
///
/// # Safety
/// As there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_fetch_inclusive_region_times(
    cap: *mut Capsule,
    region_type: *const c_char,
) {
    fetch("cali_BufferedRegionProfile_fetch_inclusive_region_times", cap, region_type, Times::Inclusive)
}

/// Seconds the profile measured, at the last fetch.
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_total_profiling_time(cap: *mut Capsule) -> c_double {
    with("cali_BufferedRegionProfile_total_profiling_time", 0.0, cap, |b| b.fetched.total_profiling_time)
}

/// Seconds spent in the fetched regions, at the last fetch.
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_total_region_time(cap: *mut Capsule) -> c_double {
    with("cali_BufferedRegionProfile_total_region_time", 0.0, cap, |b| b.fetched.total_region_time)
}

/// Seconds in region `region` at the last fetch (0 if it was not
/// entered).
///
/// # Safety
/// `cap` is NULL or a capsule; `region` is NULL or a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_region_time(cap: *mut Capsule, region: *const c_char) -> c_double {
    const ENTRY: &str = "cali_BufferedRegionProfile_region_time";
    with(ENTRY, 0.0, cap, |b| {
        // SAFETY: the C API passes a NUL-terminated string (NULL checked).
        unsafe { text(ENTRY, region) }.and_then(|r| b.fetched.times.get(r.as_ref()).copied()).unwrap_or(0.0)
    })
}

/// `cali_region_time_fn`: receives a region name (living for the call)
/// and its seconds.
type RegionTimeFn = unsafe extern "C" fn(user_arg: *mut c_void, region: *const c_char, seconds: c_double);

/// Hands every region of the last fetch, in name order, with its seconds
/// to `each` (an extension, under the C++ classes' maps).
///
/// # Safety
/// `cap` is NULL or a capsule; `each` may be called with `user_arg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_BufferedRegionProfile_region_times(
    cap: *mut Capsule,
    each: Option<RegionTimeFn>,
    user_arg: *mut c_void,
) {
    const ENTRY: &str = "cali_BufferedRegionProfile_region_times";
    with(ENTRY, (), cap, |b| {
        let Some(each) = each else {
            runtime::log::error(format_args!("{ENTRY}: NULL callback, call ignored"));
            return;
        };
        for (name, seconds) in &b.fetched.times {
            // An interior NUL would end the name early: it becomes a space.
            let name = CString::new(name.replace('\0', " ")).unwrap_or_default();
            // SAFETY: per the caller; the name outlives the call.
            unsafe { each(user_arg, name.as_ptr(), *seconds) };
        }
    })
}
