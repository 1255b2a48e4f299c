//! Which Caliper runtime the bindings drive: one process has one.
//!
//! The runtime is libcaliper's, and the bindings reach it only through its
//! C ABI, resolved once at import into the [`Api`] table. This extension
//! module is itself a libcaliper: it links the C ABI in, exports it, and
//! carries libcaliper's soname `libcaliper.so.2` (see build.rs). So:
//!
//! - when a libcaliper is already loaded as the module is imported (the
//!   program was linked or preloaded with it, or loaded a C library that
//!   needs it), the table points at that one, and this module's own copy
//!   of the runtime is never started;
//! - otherwise the table points at this module's own exports, and a C
//!   library loaded later that needs `libcaliper.so.2` is bound by the
//!   dynamic loader to this module (it matches loaded objects by soname
//!   before searching the disk), so it annotates the same runtime.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

/// `cali_id_t`.
pub(crate) type Id = u64;
/// `CALI_INV_ID`.
pub(crate) const INV_ID: Id = u64::MAX;

/// `cali_variant_t`: 16 bytes, built and read by libcaliper's helpers.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Variant {
    pub type_and_size: u64,
    pub value: u64,
}

macro_rules! api {
    ($($name:ident($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The C ABI entry points the bindings call, by their C names.
        #[allow(non_snake_case)]
        pub(crate) struct Api {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            /// Every entry point from the library behind `handle`.
            ///
            /// # Safety
            /// `handle` is a live `dlopen` handle of a libcaliper, whose
            /// symbols have the C ABI's signatures.
            unsafe fn resolve(handle: *mut c_void) -> Result<Api, String> {
                Ok(Api {$($name: {
                    let name = concat!(stringify!($name), "\0");
                    // SAFETY: a live handle and a NUL-terminated name.
                    let address = unsafe { libc::dlsym(handle, name.as_ptr() as *const c_char) };
                    if address.is_null() {
                        return Err(format!("libcaliper has no {}", stringify!($name)));
                    }
                    // SAFETY: the symbol is the C ABI's function of that name.
                    unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(address) }
                },)*})
            }
        }
    };
}

api! {
    cali_caliper_version() -> *const c_char;
    cali_init();
    cali_is_initialized() -> c_int;
    cali_config_preset(*const c_char, *const c_char);
    cali_begin_region(*const c_char);
    cali_end_region(*const c_char);
    cali_begin_phase(*const c_char);
    cali_end_phase(*const c_char);
    cali_begin_comm_region(*const c_char);
    cali_end_comm_region(*const c_char);
    cali_create_attribute(*const c_char, c_int, c_int) -> Id;
    cali_create_attribute_with_metadata(*const c_char, c_int, c_int, c_int, *const Id, *const Variant) -> Id;
    cali_find_attribute(*const c_char) -> Id;
    cali_attribute_name(Id) -> *const c_char;
    cali_attribute_type(Id) -> c_int;
    cali_attribute_properties(Id) -> c_int;
    cali_begin_string(Id, *const c_char);
    cali_set_string(Id, *const c_char);
    cali_begin_variant(Id, Variant);
    cali_set_variant(Id, Variant);
    cali_end(Id);
    cali_safe_end_string(Id, *const c_char);
    cali_end_byname(*const c_char);
    cali_make_variant(c_int, *const c_void, usize) -> Variant;
    cali_make_loop_iteration_attribute(*const c_char) -> Id;
    cali_ConfigManager_new(*mut Capsule) -> *mut Capsule;
    cali_ConfigManager_delete(*mut Capsule);
    cali_ConfigManager_add(*mut Capsule, *const c_char) -> bool;
    cali_ConfigManager_add_config_spec(*mut Capsule, *const c_char);
    cali_ConfigManager_add_option_spec(*mut Capsule, *const c_char);
    cali_ConfigManager_set_default_parameter(*mut Capsule, *const c_char, *const c_char);
    cali_ConfigManager_set_default_parameter_for_config(*mut Capsule, *const c_char, *const c_char, *const c_char);
    cali_ConfigManager_load(*mut Capsule, *const c_char);
    cali_ConfigManager_error(*mut Capsule) -> bool;
    cali_ConfigManager_error_msg(*mut Capsule) -> *const c_char;
    cali_ConfigManager_check(*mut Capsule, *const c_char, bool) -> *const c_char;
    cali_ConfigManager_available_config_specs(*mut Capsule, Option<StringFn>, *mut c_void);
    cali_ConfigManager_get_documentation_for_spec(*mut Capsule, *const c_char) -> *const c_char;
    cali_ConfigManager_start(*mut Capsule);
    cali_ConfigManager_stop(*mut Capsule);
    cali_ConfigManager_flush(*mut Capsule);
}

/// `cali_ConfigManager`: the C wrapper's handle, owned by the caller.
#[repr(C)]
pub(crate) struct Capsule {
    pub addr: *mut c_void,
    pub idtor: c_int,
}

/// `cali_string_fn`: receives strings one by one.
pub(crate) type StringFn = unsafe extern "C" fn(user_arg: *mut c_void, s: *const c_char);

/// The table and the file it was resolved from.
struct Bound {
    api: Api,
    path: String,
}

static BOUND: OnceLock<Bound> = OnceLock::new();

/// Binds the table (at import; later calls keep the first binding).
pub(crate) fn bind() -> Result<(), String> {
    if BOUND.get().is_some() {
        return Ok(());
    }
    let own = own_path()?;
    let path = loaded_libcaliper(&own).unwrap_or(own);
    let c_path = CString::new(path.clone()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path. RTLD_NOLOAD: the object is loaded
    // already (it is this module or was found among the loaded ones), and
    // the handle keeps it so.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return Err(format!("cannot open {path}: {}", dl_error()));
    }
    // SAFETY: a live handle of a libcaliper.
    let api = unsafe { Api::resolve(handle) }.map_err(|e| format!("{path}: {e}"))?;
    let _ = BOUND.set(Bound { api, path });
    Ok(())
}

/// The bound table. Every call into the bindings comes after the module's
/// import, which bound it.
#[inline]
pub(crate) fn api() -> &'static Api {
    &BOUND.get().expect("pycaliper._native is bound at import").api
}

/// The file of the libcaliper in use.
pub(crate) fn library_path() -> &'static str {
    BOUND.get().map_or("", |b| b.path.as_str())
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    let e = unsafe { libc::dlerror() };
    if e.is_null() { "unknown error".into() } else { unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned() }
}

/// The file this module was loaded from.
fn own_path() -> Result<String, String> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: the address of a function of this object; `info` is written.
    let found = unsafe { libc::dladdr(own_path as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return Err("cannot find the file of pycaliper._native".into());
    }
    // SAFETY: dladdr filled a NUL-terminated file name.
    Ok(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

/// A loaded object named `libcaliper.so*` other than `own`, if any.
fn loaded_libcaliper(own: &str) -> Option<String> {
    struct Search {
        own: std::path::PathBuf,
        found: Option<String>,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes the search given below and a
        // valid info whose name is NULL or NUL-terminated.
        let (search, info) = unsafe { (&mut *(data as *mut Search), &*info) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned();
        let path = std::path::Path::new(&name);
        let is_libcaliper = path.file_name().is_some_and(|f| f.to_string_lossy().starts_with("libcaliper.so"));
        if is_libcaliper && std::fs::canonicalize(path).ok().as_ref() != Some(&search.own) {
            search.found = Some(name);
            return 1;
        }
        0
    }
    let own = std::fs::canonicalize(own).ok()?;
    let mut search = Search { own, found: None };
    // SAFETY: `visit` reads `search` only during the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut c_void) };
    search.found
}
