//! The MPI binding as libcaliper sees it (a [`Binding`] of the
//! `caliper-mpi-abi` crate): the wrapped functions and which of them are
//! enabled, MPI's state, and byte messages over Caliper's own duplicate of
//! `MPI_COMM_WORLD` (made in `src/shim.c`) or the program's communicator
//! of a collective flush. Also what the generated wrappers call around
//! the real function, each a call into libcaliper's runtime.

use crate::wrappers::{FUNCTION_NAMES, FUNCTIONS};
use caliper_mpi_abi::{self as abi, Binding};
use std::ffi::{CStr, CString, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

unsafe extern "C" {
    fn cali_mpi_shim_state() -> c_int;
    fn cali_mpi_shim_open();
    fn cali_mpi_shim_close();
    fn cali_mpi_shim_handle_size() -> c_int;
    fn cali_mpi_shim_is_null(comm: *const c_void) -> c_int;
    fn cali_mpi_shim_rank(comm: *const c_void) -> c_int;
    fn cali_mpi_shim_size(comm: *const c_void) -> c_int;
    fn cali_mpi_shim_send(comm: *const c_void, dest: c_int, buf: *const c_void, len: c_int) -> c_int;
    fn cali_mpi_shim_recv(comm: *const c_void, source: c_int, buf: *mut c_void, len: c_int) -> c_int;
}

/// Whether each wrapped function is annotated, by index into
/// [`FUNCTIONS`].
static ENABLED: [AtomicBool; FUNCTIONS.len()] = [const { AtomicBool::new(false) }; FUNCTIONS.len()];

/// Turns the annotation of wrapped function `index` on or off (the
/// runtime's `mpi` service does, through the binding).
unsafe extern "C" fn set_enabled(index: usize, on: c_int) {
    if let Some(flag) = ENABLED.get(index) {
        flag.store(on != 0, Ordering::Relaxed);
    }
}

/// The binding.
static BINDING: Binding = Binding {
    size: size_of::<Binding>(),
    functions: FUNCTION_NAMES.as_ptr().cast(),
    function_count: FUNCTIONS.len(),
    set_enabled,
    state: cali_mpi_shim_state,
    handle_size: cali_mpi_shim_handle_size,
    is_null: cali_mpi_shim_is_null,
    rank: cali_mpi_shim_rank,
    comm_size: cali_mpi_shim_size,
    send: cali_mpi_shim_send,
    recv: cali_mpi_shim_recv,
};

/// `cali_mpi_binding()`: the binding, which libcaliper looks up by this
/// name when it starts before this library's constructor has run.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_binding() -> *const Binding {
    &BINDING
}

/// What a wrapped call's region begin left for its end.
pub(crate) struct Entered(*const c_void);

/// Before the real call of function `index`: begins its region if it is
/// enabled; if so, what the end needs.
#[inline]
pub(crate) fn enter(index: usize) -> Option<Entered> {
    if !ENABLED[index].load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: a function of libcaliper (it never unwinds).
    Some(Entered(unsafe { abi::cali_mpi_call_begin(index) }))
}

/// After the real call: ends the region [`enter`] began.
#[inline]
pub(crate) fn leave(entered: Option<Entered>) {
    if let Some(Entered(begun)) = entered {
        // SAFETY: what this thread's begin of the same call returned.
        unsafe { abi::cali_mpi_call_end(begun) };
    }
}

/// Whether the wrappers report messages (see `crate::messages`).
#[inline]
pub(crate) fn reports_messages() -> bool {
    // SAFETY: a function of libcaliper.
    unsafe { abi::cali_mpi_message_flags() != 0 }
}

/// Whether messages feed the communication pattern (which times them).
pub(crate) fn message_pattern() -> bool {
    // SAFETY: as above.
    unsafe { abi::cali_mpi_message_flags() & abi::MESSAGE_PATTERN != 0 }
}

/// After `MPI_Init`: Caliper's communicator, the rank.
pub(crate) fn initialized() {
    // SAFETY: called on every rank after MPI_Init; then a function of
    // libcaliper.
    unsafe {
        cali_mpi_shim_open();
        abi::cali_mpi_initialized();
    }
}

/// Before `MPI_Finalize`: the outputs due, then Caliper's communicator
/// goes.
pub(crate) fn finalizing() {
    // SAFETY: as above, before MPI_Finalize.
    unsafe {
        abi::cali_mpi_finalizing();
        cali_mpi_shim_close();
    }
}

/// Runs a report into the runtime; a panic there stops at the wrapper and
/// never reaches the program's MPI call.
#[inline(always)]
pub(crate) fn guarded(f: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}

/// The next definition of a Fortran binding after this library's (the MPI
/// library's), found once.
pub(crate) struct Next {
    name: &'static CStr,
    address: AtomicPtr<c_void>,
}

impl Next {
    pub(crate) const fn new(name: &'static CStr) -> Next {
        Next { name, address: AtomicPtr::new(std::ptr::null_mut()) }
    }

    /// The address, or `None` (logged) if no later object defines it.
    pub(crate) fn get(&self) -> Option<*mut c_void> {
        let known = self.address.load(Ordering::Acquire);
        if !known.is_null() {
            return Some(known);
        }
        // SAFETY: dlsym with a NUL-terminated name.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        if found.is_null() {
            let message = format!("mpi: {} not found in the MPI library", self.name.to_string_lossy());
            if let Ok(message) = CString::new(message) {
                // SAFETY: a function of libcaliper, given a C string.
                unsafe { abi::cali_log_write(0, message.as_ptr()) };
            }
            return None;
        }
        self.address.store(found, Ordering::Release);
        Some(found)
    }
}

/// Registers the binding with the runtime (a Rust program that links
/// this crate calls it; the library constructor below does it otherwise).
pub fn register() {
    // SAFETY: a binding that lives as long as the process.
    unsafe { abi::cali_mpi_binding_register(&BINDING) };
}

/// Registers the binding from the library's constructor. Where libcaliper
/// started first (its constructors run before this library's), it has
/// found the binding already and this registration changes nothing; a
/// static program runs this before the runtime's own constructor.
extern "C" fn register_at_load() {
    register();
}

#[used]
#[unsafe(link_section = ".init_array.00099")]
static REGISTER: extern "C" fn() = register_at_load;
