//! The C ConfigManager wrapper of `cali-manager.h`, with the reference's
//! (Shroud-generated) names and layouts: `cali_ConfigManager` is a
//! capsule `{ void* addr; int idtor; }` the caller owns, filled by
//! `cali_ConfigManager_new` and emptied by `cali_ConfigManager_delete`.

use crate::entry::{CALI_INV_ID, guard, static_cstr, text};
use crate::setup::cali;
use runtime::configmgr::ChannelController;
use runtime::{ConfigManager, log};
use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::Arc;

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
        self.last = c_string(&s);
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
        log::error(format_args!("{entry}: no ConfigManager (NULL or deleted), call ignored"));
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
            log::error(format_args!("cali_ConfigManager_new: NULL capsule, call ignored"));
            return rv;
        };
        let boxed = Box::new(Manager { mgr: ConfigManager::new(), last: CString::default() });
        cap.addr = Box::into_raw(boxed) as *mut c_void;
        cap.idtor = 1;
        rv
    })
}

/// Deletes the manager in `cap` (its channels stay). A capsule that
/// borrows its manager (`idtor` 0, as the Fortran type's `set_instance`
/// fills it) is emptied only: the manager stays with its owner.
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
            if c.idtor != 0 {
                // SAFETY: `addr` came from Box::into_raw in `new`.
                drop(unsafe { Box::from_raw(c.addr as *mut Manager) });
            }
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
        let msg = c_string(&m.mgr.error_msg());
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
/// "" if it is fine (with `allow_extra_kv_pairs`, unknown keys are fine).
/// Valid until the next call on this manager that returns a string.
///
/// # Safety
/// `cap` is a live capsule; `config` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_check(
    cap: *mut Capsule,
    config: *const c_char,
    allow_extra_kv_pairs: bool,
) -> *const c_char {
    with_str("cali_ConfigManager_check", c"".as_ptr(), cap, config, |m, s| {
        let msg = m.mgr.check(s, allow_extra_kv_pairs).unwrap_or_default();
        m.hand_out(msg)
    })
}

/// `cali_kv_fn`: receives key/value pairs; the strings live for the call.
type KvFn = unsafe extern "C" fn(user_arg: *mut c_void, key: *const c_char, value: *const c_char);

/// `cali_string_fn`: receives strings one by one; each lives for the call.
type StringFn = unsafe extern "C" fn(user_arg: *mut c_void, s: *const c_char);

/// `s` as a C string for a callback (an interior NUL would end it early,
/// so it becomes a space).
fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Adds the configs of a config string, handing keys that are neither
/// configs nor options to `extra` (`key`, and `value` or "") instead of
/// failing on them: the C form of the C++ `add(config, argmap_t&)`, for
/// programs that mix their own settings into the config string. A NULL
/// `extra` drops those keys. False on error.
///
/// # Safety
/// `cap` is a live capsule; `config` is NULL or a NUL-terminated string;
/// `extra`, if not NULL, may be called with `user_arg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_add_with_extra(
    cap: *mut Capsule,
    config: *const c_char,
    extra: Option<KvFn>,
    user_arg: *mut c_void,
) -> bool {
    with_str("cali_ConfigManager_add_with_extra", false, cap, config, |m, s| {
        let mut pairs = Vec::new();
        let ok = m.mgr.add_with_extra(s, &mut pairs);
        if let Some(extra) = extra {
            for (key, value) in pairs {
                let (key, value) = (c_string(&key), c_string(&value));
                // SAFETY: per the caller; the strings outlive the call.
                unsafe { extra(user_arg, key.as_ptr(), value.as_ptr()) };
            }
        }
        ok
    })
}

/// Reads config and option specs from a JSON file; a failure is the
/// manager's error.
///
/// # Safety
/// `cap` is a live capsule; `filename` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_load(cap: *mut Capsule, filename: *const c_char) {
    with_str("cali_ConfigManager_load", (), cap, filename, |m, s| {
        // The error is kept by the manager (error(), error_msg()).
        let _ = m.mgr.load(s);
    })
}

/// Hands the names (and aliases) of the configs that can run here to
/// `each`.
///
/// # Safety
/// `cap` is NULL or a live capsule; `each` may be called with `user_arg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_available_config_specs(
    cap: *mut Capsule,
    each: Option<StringFn>,
    user_arg: *mut c_void,
) {
    const ENTRY: &str = "cali_ConfigManager_available_config_specs";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let (Some(m), Some(each)) = (unsafe { manager(ENTRY, cap) }, each) else { return };
        for name in m.mgr.available_config_specs() {
            let name = c_string(&name);
            // SAFETY: per the caller; the string outlives the call.
            unsafe { each(user_arg, name.as_ptr()) };
        }
    })
}

/// A config's one-line description ("" if there is no such config),
/// valid until the next call on this manager that returns a string.
///
/// # Safety
/// `cap` is a live capsule; `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_get_description_for_spec(
    cap: *mut Capsule,
    name: *const c_char,
) -> *const c_char {
    with_str("cali_ConfigManager_get_description_for_spec", c"".as_ptr(), cap, name, |m, s| {
        let description = m.mgr.description_for_spec(s).unwrap_or_default();
        m.hand_out(description)
    })
}

/// A config's documentation (description and options; `<name>: Not
/// available` if there is no such config), valid until the next call on
/// this manager that returns a string.
///
/// # Safety
/// `cap` is a live capsule; `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_get_documentation_for_spec(
    cap: *mut Capsule,
    name: *const c_char,
) -> *const c_char {
    with_str("cali_ConfigManager_get_documentation_for_spec", c"".as_ptr(), cap, name, |m, s| {
        let doc = m.mgr.documentation_for_spec(s);
        m.hand_out(doc)
    })
}

/// The number of channel controllers the manager's `add` calls created;
/// they are numbered from 0 in that order, and the numbers stay valid as
/// long as the manager.
///
/// # Safety
/// `cap` is NULL or a live capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_channel_count(cap: *mut Capsule) -> usize {
    guard("cali_ConfigManager_channel_count", 0, || {
        // SAFETY: per the caller.
        unsafe { manager("cali_ConfigManager_channel_count", cap) }.map_or(0, |m| m.mgr.channels().len())
    })
}

/// Controller `index` of the manager in `cap`; a bad index is logged.
///
/// # Safety
/// `cap` is NULL or a live capsule.
unsafe fn controller(entry: &str, cap: *mut Capsule, index: usize) -> Option<Arc<ChannelController>> {
    // SAFETY: per the caller.
    let m = unsafe { manager(entry, cap) }?;
    let found = m.mgr.channels().get(index).cloned();
    if found.is_none() {
        log::error(format_args!("{entry}: no channel controller {index}, call ignored"));
    }
    found
}

/// The name of controller `index` (its config's name), or NULL. The
/// string lives as long as the process.
///
/// # Safety
/// `cap` is NULL or a live capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_channel_name(cap: *mut Capsule, index: usize) -> *const c_char {
    const ENTRY: &str = "cali_ConfigManager_channel_name";
    guard(ENTRY, std::ptr::null(), || {
        // SAFETY: per the caller.
        unsafe { controller(ENTRY, cap, index) }.map_or(std::ptr::null(), |c| static_cstr(c.name()).as_ptr())
    })
}

macro_rules! controller_query {
    ($($(#[$doc:meta])* $func:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `cap` is NULL or a live capsule.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $func(cap: *mut Capsule, index: usize) -> bool {
            guard(stringify!($func), false, || {
                // SAFETY: per the caller.
                unsafe { controller(stringify!($func), cap, index) }.is_some_and(|c| c.$method())
            })
        }
    )*};
}

controller_query! {
    /// Whether controller `index`'s channel measures now.
    cali_ConfigManager_channel_is_active => is_active;
    /// Whether controller `index`'s channel exists (it has been started).
    cali_ConfigManager_channel_is_instantiated => is_instantiated;
}

macro_rules! controller_control {
    ($($(#[$doc:meta])* $func:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `cap` is NULL or a live capsule.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $func(cap: *mut Capsule, index: usize) {
            guard(stringify!($func), (), || {
                // SAFETY: per the caller.
                if let Some(c) = unsafe { controller(stringify!($func), cap, index) } {
                    c.$method();
                }
            })
        }
    )*};
}

controller_control! {
    /// Creates (the first time) and activates controller `index`'s channel.
    cali_ConfigManager_channel_start => start;
    /// Deactivates controller `index`'s channel.
    cali_ConfigManager_channel_stop => stop;
    /// Writes controller `index`'s output (a report, a file).
    cali_ConfigManager_channel_flush => flush;
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

/// The id of controller `index`'s channel, or `CALI_INV_ID` before it has
/// been started: the C++ `ChannelController::channel()`.
///
/// # Safety
/// `cap` is NULL or a live capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_channel_id(cap: *mut Capsule, index: usize) -> u64 {
    const ENTRY: &str = "cali_ConfigManager_channel_id";
    guard(ENTRY, CALI_INV_ID, || {
        // SAFETY: per the caller.
        let found = unsafe { controller(ENTRY, cap, index) }.and_then(|c| c.channel());
        found.map_or(CALI_INV_ID, |ch| ch.id() as u64)
    })
}

/// Hands controller `index`'s channel settings (`CALI_*` keys and values)
/// to `each`: the C++ `ChannelController::copy_config()`.
///
/// # Safety
/// `cap` is NULL or a live capsule; `each`, if not NULL, may be called
/// with `user_arg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ConfigManager_channel_config(
    cap: *mut Capsule,
    index: usize,
    each: Option<KvFn>,
    user_arg: *mut c_void,
) {
    const ENTRY: &str = "cali_ConfigManager_channel_config";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let (Some(c), Some(each)) = (unsafe { controller(ENTRY, cap, index) }, each) else { return };
        for (key, value) in c.config() {
            let (key, value) = (c_string(key), c_string(value));
            // SAFETY: per the caller; the strings outlive the call.
            unsafe { each(user_arg, key.as_ptr(), value.as_ptr()) };
        }
    })
}
