//! The C ConfigManager wrapper of `cali-manager.h`, with the reference's
//! (Shroud-generated) names and layouts: `cali_ConfigManager` is a
//! capsule `{ void* addr; int idtor; }` the caller owns, filled by
//! `cali_ConfigManager_new` and emptied by `cali_ConfigManager_delete`.

use crate::entry::{cali, guard, text};
use runtime::{ConfigManager, log};
use std::ffi::{CString, c_char, c_int, c_void};

/// `cali_ConfigManager` / `cali_SHROUD_capsule_data`.
#[repr(C)]
pub struct Capsule {
    addr: *mut c_void,
    idtor: c_int,
}

/// `cali_SHROUD_array`: a string result handed to C or Fortran.
#[repr(C)]
pub struct ShroudArray {
    cxx: Capsule,
    addr: *const c_char,
    ty: c_int,
    elem_len: usize,
    size: usize,
    rank: c_int,
    shape: [libc::c_long; 7],
}

/// What a capsule holds: the manager, and the last string handed out
/// (valid until the next call that returns one).
struct Manager {
    mgr: ConfigManager,
    last: CString,
}

impl Manager {
    fn hand_out(&mut self, s: String) -> *const c_char {
        self.last = CString::new(s.replace('\0', " ")).unwrap_or_default();
        self.last.as_ptr()
    }
}

/// The manager in a capsule; NULL or empty capsules are logged.
///
/// # Safety
/// `cap` is NULL or a capsule filled by `cali_ConfigManager_new` (or
/// zeroed).
unsafe fn manager<'a>(entry: &str, cap: *mut Capsule) -> Option<&'a mut Manager> {
    // SAFETY: per the caller.
    let found = unsafe { cap.as_ref() }.and_then(|c| unsafe { (c.addr as *mut Manager).as_mut() });
    if found.is_none() {
        log::error(&format!("{entry}: no ConfigManager (NULL or deleted), call ignored"));
    }
    found
}

/// Creates a manager in `rv` (a caller-owned capsule); returns `rv`.
///
/// # Safety
/// `rv` is NULL or points to a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_new(rv: *mut Capsule) -> *mut Capsule {
    guard("cali_ConfigManager_new", rv, || {
        // SAFETY: per the caller.
        let Some(cap) = (unsafe { rv.as_mut() }) else {
            log::error("cali_ConfigManager_new: NULL capsule, call ignored");
            return rv;
        };
        let boxed = Box::new(Manager { mgr: ConfigManager::new(), last: CString::default() });
        cap.addr = Box::into_raw(boxed) as *mut c_void;
        cap.idtor = 1;
        rv
    })
}

/// Deletes the manager in `cap` (its channels stay).
///
/// # Safety
/// `cap` is NULL or a capsule from `cali_ConfigManager_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_delete(cap: *mut Capsule) {
    guard("cali_ConfigManager_delete", (), || {
        // SAFETY: per the caller.
        if let Some(c) = unsafe { cap.as_mut() }
            && !c.addr.is_null()
        {
            // SAFETY: `addr` came from Box::into_raw in `new`.
            drop(unsafe { Box::from_raw(c.addr as *mut Manager) });
            c.addr = std::ptr::null_mut();
            c.idtor = 0;
        }
    })
}

/// Runs `f` on the manager of `cap` with a string argument.
fn with_str<R: Copy>(
    entry: &str,
    fallback: R,
    cap: *mut Capsule,
    s: *const c_char,
    f: impl FnOnce(&mut Manager, &str) -> R,
) -> R {
    guard(entry, fallback, || {
        // SAFETY: the C API passes a capsule and a NUL-terminated string
        // (NULL is checked for both).
        match unsafe { (manager(entry, cap), text(entry, s)) } {
            (Some(m), Some(s)) => f(m, &s),
            _ => fallback,
        }
    })
}

/// Adds the configs of a config string; false on error.
///
/// # Safety
/// `cap` is a live capsule; `config` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_add(cap: *mut Capsule, config: *const c_char) -> bool {
    with_str("cali_ConfigManager_add", false, cap, config, |m, s| m.mgr.add(s))
}

/// Registers a config spec (JSON).
///
/// # Safety
/// As [`cali_ConfigManager_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_add_config_spec(cap: *mut Capsule, spec: *const c_char) {
    with_str("cali_ConfigManager_add_config_spec", (), cap, spec, |m, s| {
        m.mgr.add_config_spec(s);
    })
}

/// Registers option specs (a JSON list).
///
/// # Safety
/// As [`cali_ConfigManager_add`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_add_option_spec(cap: *mut Capsule, spec: *const c_char) {
    with_str("cali_ConfigManager_add_option_spec", (), cap, spec, |m, s| {
        m.mgr.add_option_spec(s);
    })
}

/// A parameter for every config added later.
///
/// # Safety
/// `cap` is a live capsule; the strings are NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_set_default_parameter(
    cap: *mut Capsule,
    option: *const c_char,
    val: *const c_char,
) {
    const ENTRY: &str = "cali_ConfigManager_set_default_parameter";
    with_str(ENTRY, (), cap, option, |m, option| {
        // SAFETY: per the caller.
        if let Some(val) = unsafe { text(ENTRY, val) } {
            m.mgr.set_default_parameter(option, &val);
        }
    })
}

/// A parameter for config `config` added later.
///
/// # Safety
/// `cap` is a live capsule; the strings are NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_set_default_parameter_for_config(
    cap: *mut Capsule,
    config: *const c_char,
    option: *const c_char,
    val: *const c_char,
) {
    const ENTRY: &str = "cali_ConfigManager_set_default_parameter_for_config";
    with_str(ENTRY, (), cap, config, |m, config| {
        // SAFETY: per the caller.
        if let (Some(option), Some(val)) = unsafe { (text(ENTRY, option), text(ENTRY, val)) } {
            m.mgr.set_default_parameter_for_config(config, &option, &val);
        }
    })
}

/// Whether an error occurred.
///
/// # Safety
/// `cap` is NULL or a live capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_error(cap: *mut Capsule) -> bool {
    // SAFETY: per the caller.
    guard("cali_ConfigManager_error", false, || {
        unsafe { manager("cali_ConfigManager_error", cap) }.is_some_and(|m| m.mgr.error())
    })
}

/// The first error's message ("" if none), valid until the next call on
/// this manager that returns a string.
///
/// # Safety
/// `cap` is NULL or a live capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_error_msg(cap: *mut Capsule) -> *const c_char {
    guard("cali_ConfigManager_error_msg", c"".as_ptr(), || {
        // SAFETY: per the caller.
        match unsafe { manager("cali_ConfigManager_error_msg", cap) } {
            Some(m) => {
                let msg = m.mgr.error_msg();
                m.hand_out(msg)
            }
            None => c"".as_ptr(),
        }
    })
}

/// The first error's message as a Shroud array (the reference's C and
/// Fortran interface); release it with `cali_SHROUD_memory_destructor`.
///
/// # Safety
/// `cap` is NULL or a live capsule; `out` is NULL or a Shroud array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_error_msg_bufferify(cap: *mut Capsule, out: *mut ShroudArray) {
    guard("cali_ConfigManager_error_msg_bufferify", (), || {
        // SAFETY: per the caller.
        let (Some(m), Some(out)) =
            (unsafe { manager("cali_ConfigManager_error_msg_bufferify", cap) }, unsafe { out.as_mut() })
        else {
            return;
        };
        let msg = CString::new(m.mgr.error_msg().replace('\0', " ")).unwrap_or_default();
        let len = msg.as_bytes().len();
        let owned = Box::into_raw(Box::new(msg));
        // SAFETY: `owned` is a live box.
        out.addr = unsafe { (*owned).as_ptr() };
        out.cxx = Capsule { addr: owned as *mut c_void, idtor: 1 };
        out.ty = 0;
        out.elem_len = len;
        out.size = 1;
        out.rank = 0;
        out.shape = [0; 7];
    })
}

/// Releases a string handed out in a Shroud array.
///
/// # Safety
/// `cap` is NULL or the `cxx` capsule of such an array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_SHROUD_memory_destructor(cap: *mut Capsule) {
    // SAFETY: per the caller.
    if let Some(c) = unsafe { cap.as_mut() }
        && c.idtor == 1
        && !c.addr.is_null()
    {
        // SAFETY: filled by `cali_ConfigManager_error_msg_bufferify`.
        drop(unsafe { Box::from_raw(c.addr as *mut CString) });
        c.addr = std::ptr::null_mut();
        c.idtor = 0;
    }
}

/// Checks a config string without side effects: the error message, or
/// "" if it is fine. Valid until the next call on this manager that
/// returns a string.
///
/// # Safety
/// `cap` is a live capsule; `config` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_check(cap: *mut Capsule, config: *const c_char) -> *const c_char {
    with_str("cali_ConfigManager_check", c"".as_ptr(), cap, config, |m, s| {
        let msg = m.mgr.check(s, false).unwrap_or_default();
        m.hand_out(msg)
    })
}

macro_rules! control {
    ($($func:ident => $method:ident;)*) => {$(
        /// Calls the manager's method of the same name on every config.
        ///
        /// # Safety
        /// `cap` is NULL or a live capsule.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $func(cap: *mut Capsule) {
            guard(stringify!($func), (), || {
                // SAFETY: per the caller.
                if let (Some(m), Some(_)) = (unsafe { manager(stringify!($func), cap) }, cali()) {
                    m.mgr.$method();
                }
            })
        }
    )*};
}

control! {
    cali_ConfigManager_start => start;
    cali_ConfigManager_stop => stop;
    cali_ConfigManager_flush => flush;
}
