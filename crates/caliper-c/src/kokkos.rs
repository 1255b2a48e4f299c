//! The Kokkos tools interface (`Kokkos_Profiling_C_Interface.h`): the
//! `kokkosp_*` functions that Kokkos looks up by name in the library
//! `KOKKOS_TOOLS_LIBS` (or `KOKKOS_PROFILE_LIBRARY`) names, so that
//! `KOKKOS_TOOLS_LIBS=libcaliper.so ./app` measures a Kokkos program under
//! the `kokkostime` and `kokkoslookup` services (see the runtime's
//! `services::kokkos`). As the reference, Kokkos' tool arguments
//! (`--kokkos-tools-args="runtime-report,profile.kokkos"`) are a config
//! string of a manager of their own, flushed when Kokkos finalizes.
//!
//! Kokkos passes well-formed arguments; a NULL name is still logged and
//! stands as `(null)`, so that every begin keeps its end.

use crate::entry::guard;
use crate::names::key_of;
use crate::setup::cali;
use runtime::ConfigManager;
use runtime::log;
use runtime::services::kokkos::{self, Kernel, View};
use runtime::value::ValueKey;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// `Kokkos_Profiling_SpaceHandle`: a memory space's name, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Kokkos_Profiling_SpaceHandle {
    name: [c_char; 64],
}

impl Kokkos_Profiling_SpaceHandle {
    /// The name, up to its NUL or the 64 bytes.
    fn name(&self) -> String {
        let bytes: Vec<u8> = self.name.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// The configs of Kokkos' tool arguments.
static MANAGER: Mutex<Option<ConfigManager>> = Mutex::new(None);

/// The ids handed to Kokkos for its kernels and fences, which it gives
/// back at their end: the regions end innermost first, so the id is only
/// a token.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The name of a Kokkos region as a value; NULL is logged.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn region_name(entry: &str, name: *const c_char) -> ValueKey {
    if name.is_null() {
        log::error(format_args!("{entry}: NULL name"));
        return ValueKey::string("(null)");
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    unsafe { key_of(name) }
}

/// A C string argument as text; NULL is empty.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn lossy(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// Kokkos loaded the library: the runtime starts (and with it the
/// channels of `CALI_CONFIG` and the services they enable).
#[unsafe(no_mangle)]
pub extern "C" fn kokkosp_init_library(
    _load_seq: c_int,
    _interface_ver: u64,
    _dev_info_count: u32,
    _device_info: *mut c_void,
) {
    guard("kokkosp_init_library", (), || {
        cali();
    })
}

/// Kokkos finalizes: the configs of its tool arguments write their output.
#[unsafe(no_mangle)]
pub extern "C" fn kokkosp_finalize_library() {
    guard("kokkosp_finalize_library", (), || {
        let manager = MANAGER.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(manager) = manager {
            manager.flush();
        }
    })
}

/// Kokkos' tool arguments: `argv[1]` is a config string (`argv[0]` is the
/// library's name), whose channels start at once.
///
/// # Safety
/// `argv` holds `argc` NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kokkosp_parse_args(argc: c_int, argv: *mut *mut c_char) {
    guard("kokkosp_parse_args", (), || {
        if argc < 2 || argv.is_null() || cali().is_none() {
            return;
        }
        // SAFETY: argv has argc > 1 entries per the caller.
        let config = unsafe { lossy(*argv.add(1)) };
        let mut manager = ConfigManager::new();
        manager.add(&config);
        if manager.error() {
            log::error(format_args!("kokkosp_parse_args: {}", manager.error_msg()));
            return;
        }
        manager.start();
        let mut slot = MANAGER.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(earlier) = slot.replace(manager) {
            earlier.flush();
        }
    })
}

/// `--kokkos-tools-help`: the configs the tool arguments may name.
#[unsafe(no_mangle)]
pub extern "C" fn kokkosp_print_help(_program: *mut c_char) {
    guard("kokkosp_print_help", (), || {
        eprintln!("{}", ConfigManager::new().configs_help());
    })
}

/// Begins a region of `kernel` and hands Kokkos its token.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `id` is NULL or writable.
#[inline(always)]
unsafe fn begin(entry: &str, kernel: Kernel, name: *const c_char, id: *mut u64) {
    guard(entry, (), || {
        // SAFETY: per the caller.
        kokkos::begin(kernel, || unsafe { region_name(entry, name) });
        if !id.is_null() {
            // SAFETY: writable per the caller.
            unsafe { *id = NEXT_ID.fetch_add(1, Ordering::Relaxed) };
        }
    })
}

/// Ends the innermost Kokkos region.
#[inline(always)]
fn end(entry: &str) {
    guard(entry, (), kokkos::end)
}

macro_rules! kernel_functions {
    ($($begin:ident, $end:ident => $kernel:ident;)*) => {$(
        /// Kokkos begins a kernel or fence named `name` on device `dev_id`.
        ///
        /// # Safety
        /// `name` is NULL or a NUL-terminated string; `id` is NULL or
        /// writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $begin(name: *const c_char, _dev_id: u32, id: *mut u64) {
            // SAFETY: per the caller.
            unsafe { begin(stringify!($begin), Kernel::$kernel, name, id) }
        }

        /// Kokkos ends the kernel or fence of token `id`.
        #[unsafe(no_mangle)]
        pub extern "C" fn $end(_id: u64) {
            end(stringify!($end))
        }
    )*};
}

kernel_functions! {
    kokkosp_begin_parallel_for, kokkosp_end_parallel_for => ParallelFor;
    kokkosp_begin_parallel_reduce, kokkosp_end_parallel_reduce => ParallelReduce;
    kokkosp_begin_parallel_scan, kokkosp_end_parallel_scan => ParallelScan;
    kokkosp_begin_fence, kokkosp_end_fence => Fence;
}

/// `Kokkos::Profiling::pushRegion(name)`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kokkosp_push_profile_region(name: *const c_char) {
    // SAFETY: per the caller.
    unsafe { begin("kokkosp_push_profile_region", Kernel::UserRegion, name, std::ptr::null_mut()) }
}

/// `Kokkos::Profiling::popRegion()`.
#[unsafe(no_mangle)]
pub extern "C" fn kokkosp_pop_profile_region() {
    end("kokkosp_pop_profile_region")
}

/// A view's description, copied out of Kokkos' arguments.
struct Described {
    space: String,
    name: String,
    address: u64,
    size: u64,
}

impl Described {
    /// # Safety
    /// `name` is NULL or a NUL-terminated string.
    unsafe fn new(
        space: &Kokkos_Profiling_SpaceHandle,
        name: *const c_char,
        ptr: *const c_void,
        size: u64,
    ) -> Described {
        // SAFETY: per the caller.
        Described { space: space.name(), name: unsafe { lossy(name) }, address: ptr as u64, size }
    }

    fn view(&self) -> View<'_> {
        View { space: &self.space, name: &self.name, address: self.address, size: self.size }
    }
}

/// Kokkos allocated `size` bytes at `ptr` for the view `name` in `space`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kokkosp_allocate_data(
    space: Kokkos_Profiling_SpaceHandle,
    name: *const c_char,
    ptr: *const c_void,
    size: u64,
) {
    guard("kokkosp_allocate_data", (), || {
        // SAFETY: per the caller.
        kokkos::allocate(&unsafe { Described::new(&space, name, ptr, size) }.view());
    })
}

/// Kokkos freed the view at `ptr`.
#[unsafe(no_mangle)]
pub extern "C" fn kokkosp_deallocate_data(
    _space: Kokkos_Profiling_SpaceHandle,
    _name: *const c_char,
    ptr: *const c_void,
    _size: u64,
) {
    guard("kokkosp_deallocate_data", (), || kokkos::deallocate(ptr as u64))
}

/// Kokkos begins a deep copy of `size` bytes from `src_ptr` to `dst_ptr`.
///
/// # Safety
/// The names are NULL or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kokkosp_begin_deep_copy(
    dst_space: Kokkos_Profiling_SpaceHandle,
    dst_name: *const c_char,
    dst_ptr: *const c_void,
    src_space: Kokkos_Profiling_SpaceHandle,
    src_name: *const c_char,
    src_ptr: *const c_void,
    size: u64,
) {
    guard("kokkosp_begin_deep_copy", (), || {
        // SAFETY: per the caller.
        let dst = unsafe { Described::new(&dst_space, dst_name, dst_ptr, size) };
        // SAFETY: per the caller.
        let src = unsafe { Described::new(&src_space, src_name, src_ptr, size) };
        kokkos::begin_deep_copy(&dst.view(), &src.view(), size);
    })
}

/// Kokkos ends the deep copy.
#[unsafe(no_mangle)]
pub extern "C" fn kokkosp_end_deep_copy() {
    guard("kokkosp_end_deep_copy", (), kokkos::end_deep_copy)
}
