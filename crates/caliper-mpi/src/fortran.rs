//! Fortran's arguments as message reporting (`crate::messages`) takes C's:
//! the generated Fortran wrappers get every argument as a pointer, and
//! handles and statuses as Fortran's integers, which `src/shim.c`
//! converts (`MPI_Type_f2c`, `MPI_Status_f2c`, ...). The MPI library's
//! Fortran bindings call `PMPI_*` directly, past the C wrappers, so a
//! Fortran program's messages are reported here.

use crate::messages::{self, Handle, Watched};
use std::ffi::{c_int, c_void};

unsafe extern "C" {
    fn cali_mpi_shim_f2c_datatype(f: *const c_int, out: *mut c_void);
    fn cali_mpi_shim_f2c_comm(f: *const c_int, out: *mut c_void);
    fn cali_mpi_shim_f2c_requests(f: *const c_int, n: c_int, out: *mut c_void);
    fn cali_mpi_shim_status_size() -> c_int;
    fn cali_mpi_shim_f2c_statuses(f: *const c_int, n: c_int, single: c_int, out: *mut c_void) -> *const c_void;
    fn cali_mpi_shim_undefined() -> c_int;
}

/// The C datatype handle of the Fortran one `f` points to.
pub(crate) fn datatype(f: *mut c_void) -> Handle {
    let mut handle = Handle::default();
    // SAFETY: the caller's Fortran handle; a C handle fits 8 bytes.
    unsafe { cali_mpi_shim_f2c_datatype(f.cast(), handle.as_mut_ptr().cast()) };
    handle
}

/// The C communicator handle of the Fortran one `f` points to.
pub(crate) fn comm(f: *mut c_void) -> Handle {
    let mut handle = Handle::default();
    // SAFETY: as `datatype`.
    unsafe { cali_mpi_shim_f2c_comm(f.cast(), handle.as_mut_ptr().cast()) };
    handle
}

/// The C request handle of the Fortran one `f` points to.
pub(crate) fn request(f: *mut c_void) -> Handle {
    let mut handle = Handle::default();
    // SAFETY: as `datatype`.
    unsafe { cali_mpi_shim_f2c_requests(f.cast(), 1, handle.as_mut_ptr().cast()) };
    handle
}

/// The C index of the Fortran one (from 1) `f` points to; `MPI_UNDEFINED`
/// stays.
pub(crate) fn index(f: *mut c_void) -> c_int {
    let i = messages::int_at(f.cast());
    // SAFETY: a constant of the MPI library.
    if i == unsafe { cali_mpi_shim_undefined() } { i } else { i - 1 }
}

/// C statuses converted from Fortran's, or the C constant that ignores
/// them.
pub(crate) struct Statuses {
    /// The converted statuses (`u64`s, for their alignment).
    _buffer: Vec<u64>,
    at: *const c_void,
}

impl Statuses {
    /// The C status or status array (or `MPI_STATUS_IGNORE`,
    /// `MPI_STATUSES_IGNORE`), valid while `self` is.
    pub(crate) fn ptr(&self) -> *const c_void {
        self.at
    }
}

fn convert(f: *mut c_void, n: c_int, single: bool) -> Statuses {
    // SAFETY: the size of MPI_Status.
    let size = unsafe { cali_mpi_shim_status_size() } as usize;
    let mut buffer = vec![0u64; (n.max(0) as usize * size).div_ceil(8)];
    // SAFETY: the caller's `n` Fortran statuses (or the constant that
    // ignores them); `buffer` holds `n` C statuses.
    let at = unsafe { cali_mpi_shim_f2c_statuses(f.cast(), n.max(0), single.into(), buffer.as_mut_ptr().cast()) };
    Statuses { _buffer: buffer, at }
}

/// The C status of the Fortran one `f` points to.
pub(crate) fn status(f: *mut c_void) -> Statuses {
    convert(f, 1, true)
}

/// The `n` C statuses of the Fortran array `f`.
pub(crate) fn statuses(f: *mut c_void, n: c_int) -> Statuses {
    convert(f, n, false)
}

/// Before a wait or test on the `count` Fortran requests at `requests`:
/// as [`messages::watch`] on their C handles.
pub(crate) fn watch(requests: *mut c_void, count: c_int) -> Watched {
    if !messages::any_posted() {
        return Watched::default();
    }
    let mut handles = vec![Handle::default(); count.max(0) as usize];
    // SAFETY: the caller's `count` Fortran requests; `handles` holds as
    // many C ones (at most 8 bytes each, packed at their size: the shim
    // writes an array of MPI_Request, which `messages::watch` reads).
    unsafe { cali_mpi_shim_f2c_requests(requests.cast(), count.max(0), handles.as_mut_ptr().cast()) };
    messages::watch(handles.as_ptr().cast(), count)
}
