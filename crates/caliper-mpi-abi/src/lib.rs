//! The C interface between libcaliper-mpi and libcaliper, declared once
//! for both sides (and in C in `caliper/cali-mpi-binding.h`).
//!
//! libcaliper-mpi holds what depends on an MPI library: the PMPI wrappers
//! and the few calls that need `mpi.h`. The runtime is libcaliper's alone:
//! libcaliper-mpi links libcaliper and reports to it through the functions
//! declared here, so a program that links either library, or both, or
//! preloads one, has one runtime. In the other direction libcaliper-mpi
//! hands the runtime a [`Binding`]: its wrapped functions, and the
//! communication cross-rank reports need.
//!
//! The binding is found either way round: libcaliper-mpi registers it in
//! a library constructor ([`cali_mpi_binding_register`]), and libcaliper,
//! whose constructors run first when the program links libcaliper-mpi (a
//! library's dependencies are initialised before it), asks for it by
//! name ([`BINDING_SYMBOL`]) before the runtime starts.

#![no_std]

use core::ffi::{c_char, c_int, c_void};

/// An MPI binding as libcaliper uses it. Communicators are passed as
/// pointers to their handles (`MPI_Comm *`; NULL: Caliper's own
/// duplicate of `MPI_COMM_WORLD`), so that libcaliper needs not know the
/// handle type of the MPI library.
#[repr(C)]
pub struct Binding {
    /// `size_of::<Binding>()` as the binding was built: a registration
    /// of another layout is refused.
    pub size: usize,
    /// The wrapped functions' names, each NUL-terminated, one after the
    /// other; an index into this list names a function in
    /// [`Binding::set_enabled`] and [`cali_mpi_call_begin`].
    pub functions: *const c_char,
    /// How many names [`Binding::functions`] holds.
    pub function_count: usize,
    /// Makes the wrapper of function `index` annotate its calls (`on`
    /// non-zero) or not.
    pub set_enabled: unsafe extern "C" fn(index: usize, on: c_int),
    /// 0: MPI not initialised, 1: running, 2: finalised.
    pub state: unsafe extern "C" fn() -> c_int,
    /// The bytes of an MPI handle (at most 8).
    pub handle_size: unsafe extern "C" fn() -> c_int,
    /// Whether `*comm` is `MPI_COMM_NULL`.
    pub is_null: unsafe extern "C" fn(comm: *const c_void) -> c_int,
    /// This process's rank in `*comm`.
    pub rank: unsafe extern "C" fn(comm: *const c_void) -> c_int,
    /// The ranks of `*comm`.
    pub comm_size: unsafe extern "C" fn(comm: *const c_void) -> c_int,
    /// Sends `len` bytes to rank `dest` of `*comm`; 0 on success.
    pub send: unsafe extern "C" fn(comm: *const c_void, dest: c_int, buf: *const c_void, len: c_int) -> c_int,
    /// Receives `len` bytes from rank `source` of `*comm`; 0 on success.
    pub recv: unsafe extern "C" fn(comm: *const c_void, source: c_int, buf: *mut c_void, len: c_int) -> c_int,
}

// SAFETY: a binding is immutable data and functions that may be called
// from any thread.
unsafe impl Sync for Binding {}

/// The function of libcaliper-mpi that returns its [`Binding`]
/// (`const cali_mpi_binding_t *cali_mpi_binding(void)`), by name.
pub const BINDING_SYMBOL: &core::ffi::CStr = c"cali_mpi_binding";

/// Bit of [`cali_mpi_message_flags`]: an `mpi` service traces messages.
pub const MESSAGE_TRACING: c_int = 1;
/// Bit of [`cali_mpi_message_flags`]: an `mpi` service keeps the
/// communication pattern.
pub const MESSAGE_PATTERN: c_int = 2;

unsafe extern "C" {
    /// Registers the process's MPI binding; the first registration
    /// counts. Returns non-zero if this one did.
    pub fn cali_mpi_binding_register(binding: *const Binding) -> c_int;
    /// Begins the `mpi.function` region of wrapped function `index`;
    /// returns what [`cali_mpi_call_end`] of the same call takes.
    pub fn cali_mpi_call_begin(index: usize) -> *const c_void;
    /// Ends the region that [`cali_mpi_call_begin`] began, on the same
    /// thread.
    pub fn cali_mpi_call_end(begun: *const c_void);
    /// After `MPI_Init`: `mpi.rank` and `mpi.world.size`.
    pub fn cali_mpi_initialized();
    /// Before `MPI_Finalize`: the outputs due while the ranks can still
    /// talk.
    pub fn cali_mpi_finalizing();
    /// What the wrappers report about messages: [`MESSAGE_TRACING`] and
    /// [`MESSAGE_PATTERN`] bits (0: nothing).
    pub fn cali_mpi_message_flags() -> c_int;
    /// A send of `bytes` to rank `dst` with `tag` completed.
    pub fn cali_mpi_message_sent(dst: i64, tag: i64, bytes: i64);
    /// A receive of `bytes` from rank `src` with `tag` completed.
    pub fn cali_mpi_message_received(src: i64, tag: i64, bytes: i64);
    /// A collective of the reference's `kind` (1 barrier, 2 N-to-N, 3
    /// 1-to-N, 4 N-to-1) rooted at `root` (negative: none) moved `bytes`.
    pub fn cali_mpi_message_collective(kind: i64, root: i64, bytes: i64);
    /// A receive posted `gap_ns` before the wait or test that completed
    /// it.
    pub fn cali_mpi_irecv_wait_gap(gap_ns: u64);
    /// Now, in nanoseconds on the runtime's clock.
    pub fn cali_mpi_now_ns() -> u64;
    /// Writes `message` as one log line at `level` (0: error).
    pub fn cali_log_write(level: c_int, message: *const c_char);
    /// Runs `flush(arg)` with its cross-rank outputs reduced over the
    /// communicator `*comm` (see `caliper/cali-mpi-binding.h`).
    pub fn cali_mpi_flush_on(comm: *const c_void, flush: Option<unsafe extern "C" fn(*mut c_void)>, arg: *mut c_void);
}
