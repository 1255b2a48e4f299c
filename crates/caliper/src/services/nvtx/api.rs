//! NVTX v3's injection protocol, as its header-only implementation
//! (`nvToolsExt.h`, `nvtxDetail/nvtxInit.h`) runs it, so that
//! `libcaliper` needs neither CUDA nor an NVTX library: on first use the
//! library named by `NVTX_INJECTION64_PATH` (Nsight Systems' injection,
//! or any tool that speaks the protocol) is loaded and its
//! `InitializeInjectionNvtx2` called with our export-table function. The
//! tool asks for the callbacks table and writes its functions into our
//! slots, which every call reads; an empty slot is a call the tool does
//! not want.

use crate::log;
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// `NVTX_VERSION`.
const VERSION: u16 = 3;
/// `NVTX_COLOR_ARGB`.
const COLOR_ARGB: i32 = 1;
/// `NVTX_MESSAGE_TYPE_ASCII`.
const MESSAGE_TYPE_ASCII: i32 = 1;

/// `nvtxEventAttributes_t` (`nvtxEventAttributes_v2`): what a range
/// push carries, here a colour and an ASCII message.
#[repr(C)]
pub struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    /// The payload union (8 bytes); unused.
    payload: u64,
    message_type: i32,
    /// The message union: `ascii`.
    message: *const c_char,
}

impl EventAttributes {
    /// A range named `message`, coloured `argb`.
    pub fn new(message: &CStr, argb: u32) -> EventAttributes {
        EventAttributes {
            version: VERSION,
            size: size_of::<EventAttributes>() as u16,
            category: 0,
            color_type: COLOR_ARGB,
            color: argb,
            payload_type: 0,
            reserved0: 0,
            payload: 0,
            message_type: MESSAGE_TYPE_ASCII,
            message: message.as_ptr(),
        }
    }
}

/// An NVTX domain handle (`nvtxDomainHandle_t`), as an address so that
/// threads share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain(usize);

/// `NVTX_ETID_CALLBACKS` and `NVTX_ETID_VERSIONINFO`.
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;

/// `NvtxCallbackModule` values are the indices of [`MODULE_SIZES`]:
/// `CORE` = 1, `CUDA`, `OPENCL`, `CUDART`, `CORE2` = 5, `SYNC`.
const MODULE_CORE: usize = 1;
const MODULE_CORE2: usize = 5;
/// Each module's `NVTX_CBID_<MODULE>_SIZE`: a tool may fill any of their
/// slots, so all have storage, though only the core ones are called.
const MODULE_SIZES: [usize; 7] = [0, 16, 9, 15, 7, 16, 7];
/// The largest size, and the null entry that ends a table, as NVTX's do.
const MAX_SLOTS: usize = 17;

/// `NVTX_CBID_CORE_RangePushEx`, `NVTX_CBID_CORE_RangePop`.
const CORE_RANGE_PUSH_EX: usize = 8;
const CORE_RANGE_POP: usize = 11;
/// `NVTX_CBID_CORE2_DomainRangePushEx`, `_DomainRangePop`,
/// `_DomainCreateA`.
const CORE2_DOMAIN_RANGE_PUSH_EX: usize = 4;
const CORE2_DOMAIN_RANGE_POP: usize = 5;
const CORE2_DOMAIN_CREATE_A: usize = 12;

/// The function slots the tool writes (`NvtxFunctionPointer`), per module.
static SLOTS: [[AtomicPtr<c_void>; MAX_SLOTS]; 7] = [const { [const { AtomicPtr::new(null_mut()) }; MAX_SLOTS] }; 7];

/// A module's function table (`NvtxFunctionTable`): the addresses of its
/// slots, none for slot 0 (`INVALID`) and after the last.
struct Tables([[*const AtomicPtr<c_void>; MAX_SLOTS]; 7]);
// SAFETY: the tables are written once, before they are shared, and point
// at statics.
unsafe impl Sync for Tables {}
// SAFETY: as for Sync.
unsafe impl Send for Tables {}

static TABLES: OnceLock<Tables> = OnceLock::new();

fn tables() -> &'static Tables {
    TABLES.get_or_init(|| {
        let mut tables = [[std::ptr::null(); MAX_SLOTS]; 7];
        for (module, &size) in MODULE_SIZES.iter().enumerate() {
            for slot in 1..size {
                tables[module][slot] = &SLOTS[module][slot];
            }
        }
        Tables(tables)
    })
}

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct CallbacksTable {
    struct_size: usize,
    get_module_function_table: unsafe extern "C" fn(c_int, *mut *const *const AtomicPtr<c_void>, *mut c_uint) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct VersionInfoTable {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(u32),
}

static CALLBACKS: CallbacksTable =
    CallbacksTable { struct_size: size_of::<CallbacksTable>(), get_module_function_table };

static VERSION_INFO: VersionInfoTable = VersionInfoTable {
    struct_size: size_of::<VersionInfoTable>(),
    version: VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `NvtxGetExportTableFunc_t`: the tables a tool may ask for.
unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => (&raw const CALLBACKS).cast(),
        ETID_VERSIONINFO => (&raw const VERSION_INFO).cast(),
        _ => std::ptr::null(),
    }
}

/// `GetModuleFunctionTable`: a module's slots and their number; 0 for a
/// module NVTX v3 does not have.
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    table: *mut *const *const AtomicPtr<c_void>,
    size: *mut c_uint,
) -> c_int {
    let Some(&count) = usize::try_from(module).ok().filter(|&m| m > 0).and_then(|m| MODULE_SIZES.get(m)) else {
        return 0;
    };
    if table.is_null() || size.is_null() {
        return 0;
    }
    // SAFETY: the tool passes addresses to write the table and its size to.
    unsafe {
        *table = tables().0[module as usize].as_ptr();
        *size = count as c_uint;
    }
    1
}

/// The tool's NVTX version: nothing depends on it.
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

/// What became of `NVTX_INJECTION64_PATH`.
#[derive(Debug)]
enum Injection {
    /// Not set: no tool listens.
    Absent,
    /// Loaded and initialised.
    Loaded,
    /// Set, but its library could not be used.
    Unusable,
}

static INJECTION: OnceLock<Injection> = OnceLock::new();

/// Whether a tool listens: loads and initialises the injection library the
/// first time (once per process). A library that cannot be used is said
/// in one line, then ranges go nowhere.
pub fn injected() -> bool {
    let injection = INJECTION.get_or_init(|| match std::env::var_os("NVTX_INJECTION64_PATH") {
        Some(path) if !path.is_empty() => match load(&path.to_string_lossy()) {
            Ok(()) => Injection::Loaded,
            Err(why) => {
                log::error(format_args!("nvtx: {why}; regions are not forwarded to NVTX"));
                Injection::Unusable
            }
        },
        _ => Injection::Absent,
    });
    matches!(injection, Injection::Loaded)
}

/// `dlopen`s the injection library at `path` and runs its
/// `InitializeInjectionNvtx2`, which is to fill our slots.
fn load(path: &str) -> Result<(), String> {
    let name = CString::new(path).map_err(|_| format!("NVTX_INJECTION64_PATH {path:?} is not a path"))?;
    // SAFETY: dlopen with a NUL-terminated name.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY) };
    if handle.is_null() {
        return Err(format!("cannot load NVTX_INJECTION64_PATH={path}: {}", dlerror()));
    }
    // SAFETY: dlsym on a handle dlopen returned, with a NUL-terminated name.
    let init = unsafe { libc::dlsym(handle, c"InitializeInjectionNvtx2".as_ptr()) };
    if init.is_null() {
        return Err(format!("{path} has no InitializeInjectionNvtx2"));
    }
    type Initialize = unsafe extern "C" fn(unsafe extern "C" fn(u32) -> *const c_void) -> c_int;
    // SAFETY: NVTX's `NvtxInitializeInjectionNvtxFunc_t`.
    let init: Initialize = unsafe { std::mem::transmute::<*mut c_void, Initialize>(init) };
    // SAFETY: the protocol's call, with our export-table function.
    if unsafe { init(get_export_table) } == 0 {
        return Err(format!("{path}: InitializeInjectionNvtx2 failed"));
    }
    Ok(())
}

fn dlerror() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated message.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return String::from("unknown error");
    }
    // SAFETY: checked non-null above.
    unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
}

/// The function in a slot, if the tool filled it.
///
/// # Safety
/// `F` must be the C signature of the slot's function.
unsafe fn slot<F: Copy>(module: usize, id: usize) -> Option<F> {
    let f = SLOTS[module][id].load(Ordering::Acquire);
    // SAFETY: a function pointer of the signature the caller names.
    (!f.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) })
}

/// `nvtxDomainCreateA(name)`; `None` for the default domain (the tool
/// creates no domains).
pub fn domain_create(name: &CStr) -> Option<Domain> {
    type F = unsafe extern "C" fn(*const c_char) -> *mut c_void;
    // SAFETY: NVTX's nvtxDomainCreateA, with a NUL-terminated name.
    let f = unsafe { slot::<F>(MODULE_CORE2, CORE2_DOMAIN_CREATE_A) }?;
    let handle = unsafe { f(name.as_ptr()) };
    (!handle.is_null()).then_some(Domain(handle as usize))
}

/// `nvtxDomainRangePushEx`, or `nvtxRangePushEx` in the default domain.
pub fn range_push(domain: Option<Domain>, attributes: &EventAttributes) {
    match domain {
        Some(Domain(handle)) => {
            type F = unsafe extern "C" fn(*mut c_void, *const EventAttributes) -> c_int;
            // SAFETY: NVTX's nvtxDomainRangePushEx, with a handle the tool
            // made and attributes that outlive the call.
            if let Some(f) = unsafe { slot::<F>(MODULE_CORE2, CORE2_DOMAIN_RANGE_PUSH_EX) } {
                unsafe { f(handle as *mut c_void, attributes) };
            }
        }
        None => {
            type F = unsafe extern "C" fn(*const EventAttributes) -> c_int;
            // SAFETY: NVTX's nvtxRangePushEx.
            if let Some(f) = unsafe { slot::<F>(MODULE_CORE, CORE_RANGE_PUSH_EX) } {
                unsafe { f(attributes) };
            }
        }
    }
}

/// `nvtxDomainRangePop`, or `nvtxRangePop` in the default domain.
pub fn range_pop(domain: Option<Domain>) {
    match domain {
        Some(Domain(handle)) => {
            type F = unsafe extern "C" fn(*mut c_void) -> c_int;
            // SAFETY: NVTX's nvtxDomainRangePop, with a handle the tool made.
            if let Some(f) = unsafe { slot::<F>(MODULE_CORE2, CORE2_DOMAIN_RANGE_POP) } {
                unsafe { f(handle as *mut c_void) };
            }
        }
        None => {
            type F = unsafe extern "C" fn() -> c_int;
            // SAFETY: NVTX's nvtxRangePop.
            if let Some(f) = unsafe { slot::<F>(MODULE_CORE, CORE_RANGE_POP) } {
                unsafe { f() };
            }
        }
    }
}
