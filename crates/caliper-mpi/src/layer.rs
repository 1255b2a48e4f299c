//! The MPI binding as the runtime sees it ([`runtime::mpi::MpiLayer`]): the
//! wrapped functions and which of them are enabled, MPI's state, and the
//! communicator of cross-rank reports (byte messages over Caliper's own
//! duplicate of `MPI_COMM_WORLD`, made in `src/shim.c`, or the program's
//! communicator of a collective flush). Also what the
//! generated wrappers call around the real function.

use crate::wrappers::FUNCTIONS;
use runtime::mpi::{Comm, MpiLayer, SelfComm};
use runtime::mpi_functions::Begun;
use std::cell::Cell;
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
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

/// The binding.
pub(crate) struct PmpiLayer;

/// MPI's state, from the shim.
fn state() -> c_int {
    // SAFETY: MPI_Initialized and MPI_Finalized may be called at any time.
    unsafe { cali_mpi_shim_state() }
}

impl MpiLayer for PmpiLayer {
    fn functions(&self) -> &'static [&'static str] {
        &FUNCTIONS
    }

    fn set_enabled(&self, index: usize, on: bool) {
        if let Some(flag) = ENABLED.get(index) {
            flag.store(on, Ordering::Relaxed);
        }
    }

    fn is_finalized(&self) -> bool {
        state() == 2
    }

    fn world(&self) -> Option<Box<dyn Comm>> {
        if state() != 1 {
            return None;
        }
        match FLUSH_COMM.with(Cell::get) {
            None => Some(Box::new(Ranks { handle: None })),
            // SAFETY: a handle copied from the program's MPI_Comm.
            Some(h) if unsafe { cali_mpi_shim_is_null(h.as_ptr().cast()) } != 0 => Some(Box::new(SelfComm)),
            Some(h) => Some(Box::new(Ranks { handle: Some(h) })),
        }
    }
}

/// The bytes of an MPI handle (a pointer or an `int`).
type Handle = [u8; 8];

thread_local! {
    /// The program's communicator for the flush running on this thread
    /// ([`collective_flush`]), if not Caliper's own.
    static FLUSH_COMM: Cell<Option<Handle>> = const { Cell::new(None) };
}

/// Runs `flush` with cross-rank outputs reduced over the program's
/// communicator `comm` (a pointer to its `MPI_Comm`), on this thread.
///
/// # Safety
/// `comm` points to a valid `MPI_Comm`.
pub unsafe fn collective_flush(comm: *const c_void, flush: impl FnOnce()) {
    // SAFETY: the shim's answer; MPI handles are at most 8 bytes (checked).
    let size = unsafe { cali_mpi_shim_handle_size() } as usize;
    let mut handle = [0u8; 8];
    // SAFETY: the caller's handle is `size` bytes.
    unsafe { std::ptr::copy_nonoverlapping(comm.cast::<u8>(), handle.as_mut_ptr(), size.min(8)) };
    let previous = FLUSH_COMM.with(|c| c.replace(Some(handle)));
    guarded(flush);
    FLUSH_COMM.with(|c| c.set(previous));
}

/// A communicator's ranks: Caliper's own (`None`) or the program's.
struct Ranks {
    handle: Option<Handle>,
}

impl Ranks {
    fn comm(&self) -> *const c_void {
        self.handle.as_ref().map_or(std::ptr::null(), |h| h.as_ptr().cast())
    }
}

/// The largest piece of a message sent at once (an MPI count is an `int`).
const PIECE: usize = 1 << 30;

impl Comm for Ranks {
    fn rank(&self) -> usize {
        // SAFETY: MPI runs (a Ranks exists only then).
        unsafe { cali_mpi_shim_rank(self.comm()) as usize }
    }

    fn size(&self) -> usize {
        // SAFETY: as above.
        unsafe { cali_mpi_shim_size(self.comm()) as usize }
    }

    /// The length (8 bytes), then the data in pieces.
    fn send(&self, to: usize, data: &[u8]) -> Result<(), String> {
        let length = (data.len() as u64).to_le_bytes();
        send_piece(self.comm(), to, &length)?;
        data.chunks(PIECE).try_for_each(|piece| send_piece(self.comm(), to, piece))
    }

    fn recv(&self, from: usize) -> Result<Vec<u8>, String> {
        let mut length = [0u8; 8];
        recv_piece(self.comm(), from, &mut length)?;
        let mut data = vec![0u8; u64::from_le_bytes(length) as usize];
        data.chunks_mut(PIECE).try_for_each(|piece| recv_piece(self.comm(), from, piece))?;
        Ok(data)
    }
}

fn send_piece(comm: *const c_void, to: usize, piece: &[u8]) -> Result<(), String> {
    // SAFETY: a buffer of `piece.len()` bytes (at most PIECE) we own.
    match unsafe { cali_mpi_shim_send(comm, to as c_int, piece.as_ptr().cast(), piece.len() as c_int) } {
        0 => Ok(()),
        e => Err(format!("MPI_Send to rank {to} failed ({e})")),
    }
}

fn recv_piece(comm: *const c_void, from: usize, piece: &mut [u8]) -> Result<(), String> {
    // SAFETY: as above, written by the receive.
    match unsafe { cali_mpi_shim_recv(comm, from as c_int, piece.as_mut_ptr().cast(), piece.len() as c_int) } {
        0 => Ok(()),
        e => Err(format!("MPI_Recv from rank {from} failed ({e})")),
    }
}

/// Runs a call into the runtime; a panic there stops at the wrapper and
/// never reaches the program's MPI call.
#[inline(always)]
pub(crate) fn guarded(f: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(f));
}

/// Before the real call of function `index`: begins its region if it is
/// enabled; if so, what the end needs.
#[inline]
pub(crate) fn enter(index: usize) -> Option<Begun> {
    if !ENABLED[index].load(Ordering::Relaxed) {
        return None;
    }
    Some(catch_unwind(|| runtime::mpi_functions::begin(index)).unwrap_or_default())
}

/// After the real call: ends the region [`enter`] began.
#[inline]
pub(crate) fn leave(entered: Option<Begun>) {
    if let Some(begun) = entered {
        guarded(|| runtime::mpi_functions::end(begun));
    }
}

/// After `MPI_Init`: Caliper's communicator, the rank.
pub(crate) fn initialized() {
    // SAFETY: called on every rank after MPI_Init.
    unsafe { cali_mpi_shim_open() };
    guarded(runtime::mpi::on_init);
}

/// Before `MPI_Finalize`: the outputs due, then Caliper's communicator
/// goes.
pub(crate) fn finalizing() {
    guarded(runtime::mpi_finalize::on_finalize);
    // SAFETY: called on every rank before MPI_Finalize.
    unsafe { cali_mpi_shim_close() };
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
            runtime::log::error(format_args!("mpi: {} not found in the MPI library", self.name.to_string_lossy()));
            return None;
        }
        self.address.store(found, Ordering::Release);
        Some(found)
    }
}

/// Registers the binding (a program that links this crate as a Rust
/// library calls it; the library constructor below does it otherwise).
pub fn register() {
    runtime::mpi::register_layer(&PmpiLayer);
}

/// Registers the binding before the runtime's own constructor (in
/// `.init_array` without a priority) can start the runtime, so that the
/// configs of `CALI_CONFIG` know they run under MPI.
extern "C" fn register_at_load() {
    guarded(register);
}

#[used]
#[unsafe(link_section = ".init_array.00099")]
static REGISTER: extern "C" fn() = register_at_load;
