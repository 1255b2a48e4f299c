//! PAPI's C interface, as `papi.h` declares it (PAPI 6 and 7), loaded
//! with `dlopen` the first time a channel enables the `papi` service, so
//! that `libcaliper` never requires PAPI. The library is initialised once
//! for the process, for threads (`PAPI_thread_init`) and, when asked,
//! for multiplexing.

use crate::dynlib::{open_first, symbol};
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_ulong};
use std::sync::OnceLock;

/// `PAPI_OK`.
pub const OK: c_int = 0;
/// `PAPI_NULL`: an event set handle not yet created.
pub const NULL: c_int = -1;
/// `PAPI_DATATYPE_FP64`: the event's value is a `double` in its 64 bits.
const DATATYPE_FP64: c_int = 2;

/// `PAPI_HUGE_STR_LEN` and `PAPI_MIN_STR_LEN`.
const HUGE_STR_LEN: usize = 1024;
const MIN_STR_LEN: usize = 64;

/// The head of `PAPI_event_info_t` up to `data_type`, the field read;
/// `PAPI_get_event_info` writes the whole structure, which `rest` leaves
/// room for (with a margin for later releases).
#[repr(C)]
struct EventInfo {
    event_code: c_uint,
    symbol: [c_char; HUGE_STR_LEN],
    short_descr: [c_char; MIN_STR_LEN],
    long_descr: [c_char; HUGE_STR_LEN],
    component_index: c_int,
    units: [c_char; MIN_STR_LEN],
    location: c_int,
    data_type: c_int,
    rest: [u8; 16384],
}

/// The PAPI releases whose libraries are looked for, newest first: the
/// shared object's name, and `PAPI_VER_CURRENT` of its `papi.h` (major and
/// minor version: `PAPI_library_init` takes only its own).
const RELEASES: [(&CStr, c_int); 5] = [
    (c"libpapi.so.7.3", version(7, 3)),
    (c"libpapi.so.7.2", version(7, 2)),
    (c"libpapi.so.7.1", version(7, 1)),
    (c"libpapi.so.7.0", version(7, 0)),
    (c"libpapi.so.6.0", version(6, 0)),
];

/// `PAPI_VERSION_NUMBER(major, minor, 0, 0)`.
const fn version(major: c_int, minor: c_int) -> c_int {
    (major << 24) | (minor << 16)
}

type ThreadId = unsafe extern "C" fn() -> c_ulong;

/// The library's functions this runtime calls.
pub struct Papi {
    library_init: unsafe extern "C" fn(c_int) -> c_int,
    thread_init: unsafe extern "C" fn(ThreadId) -> c_int,
    multiplex_init: unsafe extern "C" fn() -> c_int,
    register_thread: unsafe extern "C" fn() -> c_int,
    unregister_thread: unsafe extern "C" fn() -> c_int,
    create_eventset: unsafe extern "C" fn(*mut c_int) -> c_int,
    assign_eventset_component: unsafe extern "C" fn(c_int, c_int) -> c_int,
    set_multiplex: unsafe extern "C" fn(c_int) -> c_int,
    add_named_event: unsafe extern "C" fn(c_int, *const c_char) -> c_int,
    event_name_to_code: unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int,
    get_event_info: unsafe extern "C" fn(c_int, *mut EventInfo) -> c_int,
    get_event_component: unsafe extern "C" fn(c_int) -> c_int,
    start: unsafe extern "C" fn(c_int) -> c_int,
    read: unsafe extern "C" fn(c_int, *mut i64) -> c_int,
    reset: unsafe extern "C" fn(c_int) -> c_int,
    stop: unsafe extern "C" fn(c_int, *mut i64) -> c_int,
    cleanup_eventset: unsafe extern "C" fn(c_int) -> c_int,
    destroy_eventset: unsafe extern "C" fn(*mut c_int) -> c_int,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
}

/// A PAPI error: its code, said with `PAPI_strerror`.
pub type Error = c_int;

/// What an event is, for reading its values.
pub struct EventKind {
    /// The component that counts it (an event set holds one component's).
    pub component: c_int,
    /// Whether its value is a `double` (PAPI's topdown metrics) rather
    /// than a count.
    pub float: bool,
}

/// The calling thread's id, as PAPI asks of `PAPI_thread_init`.
unsafe extern "C" fn thread_id() -> c_ulong {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as c_ulong }
}

impl Papi {
    /// PAPI, loaded and initialised on the first call; later calls get the
    /// same library, or the same reason it is not there. Multiplexing is
    /// initialised the first time a caller wants it.
    pub fn get(multiplex: bool) -> Result<&'static Papi, String> {
        static PAPI: OnceLock<Result<Papi, String>> = OnceLock::new();
        let papi = PAPI.get_or_init(Papi::load).as_ref().map_err(String::clone)?;
        if multiplex {
            static MULTIPLEX: OnceLock<Result<(), String>> = OnceLock::new();
            // SAFETY: PAPI_multiplex_init takes no arguments.
            let init = || papi.check(unsafe { (papi.multiplex_init)() }).map_err(|e| papi.error(e));
            MULTIPLEX.get_or_init(init).clone().map_err(|e| format!("cannot multiplex: {e}"))?;
        }
        Ok(papi)
    }

    fn load() -> Result<Papi, String> {
        let (handle, loaded) =
            open_first(RELEASES.iter().map(|&(name, _)| name)).ok_or("PAPI library (libpapi.so.7 or .6) not found")?;
        let version = RELEASES.iter().find(|&&(name, _)| name == loaded).map_or(0, |&(_, version)| version);
        // SAFETY: each name with its signature in papi.h.
        let papi = unsafe {
            Papi {
                library_init: symbol(handle, c"PAPI_library_init", "libpapi")?,
                thread_init: symbol(handle, c"PAPI_thread_init", "libpapi")?,
                multiplex_init: symbol(handle, c"PAPI_multiplex_init", "libpapi")?,
                register_thread: symbol(handle, c"PAPI_register_thread", "libpapi")?,
                unregister_thread: symbol(handle, c"PAPI_unregister_thread", "libpapi")?,
                create_eventset: symbol(handle, c"PAPI_create_eventset", "libpapi")?,
                assign_eventset_component: symbol(handle, c"PAPI_assign_eventset_component", "libpapi")?,
                set_multiplex: symbol(handle, c"PAPI_set_multiplex", "libpapi")?,
                add_named_event: symbol(handle, c"PAPI_add_named_event", "libpapi")?,
                event_name_to_code: symbol(handle, c"PAPI_event_name_to_code", "libpapi")?,
                get_event_info: symbol(handle, c"PAPI_get_event_info", "libpapi")?,
                get_event_component: symbol(handle, c"PAPI_get_event_component", "libpapi")?,
                start: symbol(handle, c"PAPI_start", "libpapi")?,
                read: symbol(handle, c"PAPI_read", "libpapi")?,
                reset: symbol(handle, c"PAPI_reset", "libpapi")?,
                stop: symbol(handle, c"PAPI_stop", "libpapi")?,
                cleanup_eventset: symbol(handle, c"PAPI_cleanup_eventset", "libpapi")?,
                destroy_eventset: symbol(handle, c"PAPI_destroy_eventset", "libpapi")?,
                strerror: symbol(handle, c"PAPI_strerror", "libpapi")?,
            }
        };
        // SAFETY: PAPI's functions, called as papi.h declares them.
        let initialised = unsafe { (papi.library_init)(version) };
        if initialised != version {
            return Err(format!("PAPI_library_init failed: {}", papi.error(initialised)));
        }
        // SAFETY: a function that PAPI calls for the calling thread's id.
        papi.check(unsafe { (papi.thread_init)(thread_id) })
            .map_err(|e| format!("PAPI_thread_init failed: {}", papi.error(e)))?;
        Ok(papi)
    }

    fn check(&self, code: c_int) -> Result<(), Error> {
        if code == OK { Ok(()) } else { Err(code) }
    }

    /// PAPI's words for `code`.
    pub fn error(&self, code: Error) -> String {
        // SAFETY: PAPI_strerror returns a static string or NULL.
        let text = unsafe { (self.strerror)(code) };
        if text.is_null() {
            format!("PAPI error {code}")
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        }
    }

    /// The component and value type of the event called `name`.
    pub fn event_kind(&self, name: &CStr) -> Result<EventKind, Error> {
        let mut code = 0;
        // SAFETY: a NUL-terminated name and a place for the code.
        self.check(unsafe { (self.event_name_to_code)(name.as_ptr(), &mut code) })?;
        // SAFETY: PAPI fills the structure, which is larger than its own.
        let mut info: Box<EventInfo> = Box::new(unsafe { std::mem::zeroed() });
        self.check(unsafe { (self.get_event_info)(code, &mut *info) })?;
        // SAFETY: a valid event code.
        let component = unsafe { (self.get_event_component)(code) };
        if component < 0 {
            return Err(component);
        }
        Ok(EventKind { component, float: info.data_type == DATATYPE_FP64 })
    }

    /// Registers the calling thread with PAPI.
    pub fn register_thread(&self) {
        // SAFETY: no arguments; a thread registered twice is told so.
        unsafe { (self.register_thread)() };
    }

    /// Unregisters the calling thread.
    pub fn unregister_thread(&self) {
        // SAFETY: no arguments.
        unsafe { (self.unregister_thread)() };
    }
}

/// An event set of the calling thread, counting its events of one
/// component once started; stopped and destroyed when dropped.
pub struct EventSet {
    papi: &'static Papi,
    handle: c_int,
    len: usize,
}

impl EventSet {
    /// An empty event set of `component`, multiplexed if `multiplex`.
    pub fn new(papi: &'static Papi, component: c_int, multiplex: bool) -> Result<EventSet, Error> {
        let mut handle = NULL;
        // SAFETY: a place for the new handle.
        papi.check(unsafe { (papi.create_eventset)(&mut handle) })?;
        let set = EventSet { papi, handle, len: 0 };
        if multiplex {
            // SAFETY: a handle PAPI made; multiplexing needs the component
            // bound first.
            papi.check(unsafe { (papi.assign_eventset_component)(handle, component) })?;
            papi.check(unsafe { (papi.set_multiplex)(handle) })?;
        }
        Ok(set)
    }

    /// Adds the event called `name`.
    pub fn add(&mut self, name: &CStr) -> Result<(), Error> {
        // SAFETY: a handle PAPI made and a NUL-terminated name.
        self.papi.check(unsafe { (self.papi.add_named_event)(self.handle, name.as_ptr()) })?;
        self.len += 1;
        Ok(())
    }

    /// Starts counting.
    pub fn start(&mut self) -> Result<(), Error> {
        // SAFETY: a handle PAPI made.
        self.papi.check(unsafe { (self.papi.start)(self.handle) })
    }

    /// Reads the counts into `values` (one per event, in the order
    /// added), resetting them to zero after if `reset`.
    pub fn read(&mut self, values: &mut [i64], reset: bool) -> Result<(), Error> {
        debug_assert!(values.len() >= self.len);
        // SAFETY: room for one value per event of the set.
        self.papi.check(unsafe { (self.papi.read)(self.handle, values.as_mut_ptr()) })?;
        if reset {
            // SAFETY: a handle PAPI made.
            self.papi.check(unsafe { (self.papi.reset)(self.handle) })?;
        }
        Ok(())
    }
}

impl Drop for EventSet {
    fn drop(&mut self) {
        let mut values = vec![0i64; self.len.max(1)];
        // SAFETY: a handle PAPI made; stopping one that is not running,
        // or that a thread gone took with it, just fails.
        unsafe {
            (self.papi.stop)(self.handle, values.as_mut_ptr());
            (self.papi.cleanup_eventset)(self.handle);
            (self.papi.destroy_eventset)(&mut self.handle);
        }
    }
}

/// `name` as a C string, if it has no NUL.
pub fn c_name(name: &str) -> Option<CString> {
    CString::new(name).ok()
}
