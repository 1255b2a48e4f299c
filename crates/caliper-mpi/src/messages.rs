//! What the generated wrappers report to message tracing and the
//! communication pattern (`CALI_MPI_MSG_TRACING`, `CALI_MPI_MSG_PATTERN`,
//! see `caliper::mpi::messages`, `caliper::mpi::pattern`): the peer, tag
//! and bytes of each completed send and receive, and the kind, root and
//! bytes of each collective, worked out from the call's arguments with
//! `mpi.h`'s help (`src/shim.c`). Handles come as pointers to them, so that
//! this side needs not know their type.

use crate::layer::message_pattern;
use caliper_mpi_abi as abi;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

unsafe extern "C" {
    fn cali_mpi_shim_bytes(count: c_int, datatype: *const c_void) -> i64;
    fn cali_mpi_shim_received(
        status: *const c_void,
        datatype: *const c_void,
        source: *mut c_int,
        tag: *mut c_int,
        bytes: *mut i64,
    );
    fn cali_mpi_shim_status_at(statuses: *const c_void, i: c_int) -> *const c_void;
    fn cali_mpi_shim_handle_size() -> c_int;
    fn cali_mpi_shim_bytes_v(counts: *const c_int, datatype: *const c_void, comm: *const c_void) -> i64;
    fn cali_mpi_shim_undefined() -> c_int;
}

/// An MPI handle's bytes (a pointer or an `int`).
pub(crate) type Handle = [u8; 8];

/// A receive posted with `MPI_Irecv`, reported when a wait or test
/// completes its request.
struct Posted {
    request: Handle,
    count: c_int,
    datatype: Handle,
    src: c_int,
    tag: c_int,
    /// When it was posted (with the communication pattern on), on the
    /// runtime's clock.
    posted_ns: Option<u64>,
}

/// The receives posted and not yet completed.
static POSTED: Mutex<Vec<Posted>> = Mutex::new(Vec::new());

/// The handle `handle` points to.
fn handle_at(handle: *const c_void) -> Handle {
    let mut bytes = [0u8; 8];
    // SAFETY: the shim's handle size (at most 8, checked there); `handle`
    // points to a handle of the caller's.
    unsafe {
        let size = (cali_mpi_shim_handle_size() as usize).min(8);
        std::ptr::copy_nonoverlapping(handle.cast::<u8>(), bytes.as_mut_ptr(), size);
    }
    bytes
}

/// The bytes of `count` elements of the datatype `*datatype`.
fn bytes(count: c_int, datatype: *const c_void) -> i64 {
    // SAFETY: a pointer to the caller's datatype handle.
    unsafe { cali_mpi_shim_bytes(count, datatype) }
}

/// A send of `count` elements of `*datatype` to `dst` completed.
pub(crate) fn sent(count: c_int, datatype: *const c_void, dst: c_int, tag: c_int) {
    // SAFETY: a function of libcaliper.
    unsafe { abi::cali_mpi_message_sent(dst.into(), tag.into(), bytes(count, datatype)) };
}

/// A receive of at most `count` elements of `*datatype` completed, with
/// `status` (or `MPI_STATUS_IGNORE`).
pub(crate) fn received(count: c_int, datatype: *const c_void, src: c_int, tag: c_int, status: *const c_void) {
    let (mut src, mut tag, mut size) = (src, tag, bytes(count, datatype));
    // SAFETY: the caller's status (or MPI_STATUS_IGNORE) and datatype.
    unsafe { cali_mpi_shim_received(status, datatype, &mut src, &mut tag, &mut size) };
    // SAFETY: a function of libcaliper.
    unsafe { abi::cali_mpi_message_received(src.into(), tag.into(), size) };
}

/// A collective of the reference's `kind` moving `count` elements of
/// `*datatype` per rank, rooted at `root` (negative: none).
pub(crate) fn collective(kind: i64, root: c_int, count: c_int, datatype: *const c_void) {
    let bytes = if datatype.is_null() { 0 } else { bytes(count, datatype) };
    // SAFETY: a function of libcaliper.
    unsafe { abi::cali_mpi_message_collective(kind, root.into(), bytes) };
}

/// An N-to-N collective whose rank moves `counts[r]` elements of
/// `*datatype` for each rank `r` of `*comm`.
pub(crate) fn collective_v(counts: *const c_void, datatype: *const c_void, comm: *const c_void) {
    // SAFETY: the caller's counts (one per rank of the communicator),
    // datatype and communicator.
    let bytes = unsafe { cali_mpi_shim_bytes_v(counts.cast(), datatype, comm) };
    // SAFETY: a function of libcaliper.
    unsafe { abi::cali_mpi_message_collective(2, -1, bytes) };
}

/// `MPI_Irecv` posted a receive: it is reported when a wait or test
/// completes `*request`.
pub(crate) fn posted(count: c_int, datatype: *const c_void, src: c_int, tag: c_int, request: *const c_void) {
    let posted_ns = message_pattern().then(now_ns);
    let posted = Posted { request: handle_at(request), count, datatype: handle_at(datatype), src, tag, posted_ns };
    if let Ok(mut pending) = POSTED.lock() {
        pending.push(posted);
    }
}

/// Whether a receive posted with `MPI_Irecv` waits to be completed.
pub(crate) fn any_posted() -> bool {
    POSTED.lock().is_ok_and(|p| !p.is_empty())
}

/// The requests a wait or test was given, as they were before the call
/// (it replaces completed ones), and when it began.
#[derive(Default)]
pub(crate) struct Watched {
    requests: Vec<Handle>,
    since_ns: u64,
}

impl Watched {
    /// Whether there is nothing to look for after the call: no receive
    /// was pending.
    pub(crate) fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

/// Before a wait or test on `count` requests at `requests` (C handles):
/// their handles, if any receive is pending.
pub(crate) fn watch(requests: *const c_void, count: c_int) -> Watched {
    if !any_posted() {
        return Watched::default();
    }
    // SAFETY: as `handle_at`: the handles are `size` bytes apart.
    let size = unsafe { cali_mpi_shim_handle_size() } as usize;
    let requests =
        (0..count.max(0) as usize).map(|i| handle_at(requests.cast::<u8>().wrapping_add(i * size).cast())).collect();
    let since_ns = if message_pattern() { now_ns() } else { 0 };
    Watched { requests, since_ns }
}

/// Reports the posted receives among the `completed` requests: each a
/// watched request's index and its status (or `MPI_STATUS_IGNORE`).
fn complete(watched: &Watched, completed: impl Iterator<Item = (usize, *const c_void)>) {
    let Ok(mut pending) = POSTED.lock() else { return };
    for (i, status) in completed {
        let Some(request) = watched.requests.get(i) else { continue };
        let Some(at) = pending.iter().position(|p| p.request == *request) else { continue };
        let p = pending.swap_remove(at);
        received(p.count, p.datatype.as_ptr().cast(), p.src, p.tag, status);
        if let Some(posted_ns) = p.posted_ns {
            // SAFETY: a function of libcaliper.
            unsafe { abi::cali_mpi_irecv_wait_gap(watched.since_ns.saturating_sub(posted_ns)) };
        }
    }
}

/// The `i`-th status of the array `statuses` (or `MPI_STATUS_IGNORE` for
/// `MPI_STATUSES_IGNORE`).
fn status_at(statuses: *const c_void, i: usize) -> *const c_void {
    // SAFETY: the caller's status array (or MPI_STATUSES_IGNORE).
    unsafe { cali_mpi_shim_status_at(statuses, i as c_int) }
}

/// After a wait or test completed the watched request, with `status`.
pub(crate) fn completed(watched: &Watched, status: *const c_void) {
    complete(watched, std::iter::once((0, status)));
}

/// After a wait or test completed all the watched requests, with the
/// array `statuses` (or `MPI_STATUSES_IGNORE`).
pub(crate) fn completed_all(watched: &Watched, statuses: *const c_void) {
    complete(watched, (0..watched.requests.len()).map(|i| (i, status_at(statuses, i))));
}

/// After `MPI_Waitany` or `MPI_Testany` completed the watched request
/// `index` (unless `MPI_UNDEFINED`: none was active), with `status`.
pub(crate) fn completed_one(watched: &Watched, index: c_int, status: *const c_void) {
    // SAFETY: a constant of the MPI library.
    if index != unsafe { cali_mpi_shim_undefined() } && index >= 0 {
        complete(watched, std::iter::once((index as usize, status)));
    }
}

/// After `MPI_Waitsome` or `MPI_Testsome` completed `outcount` of the
/// watched requests (unless `MPI_UNDEFINED`), those at `indices` (counted
/// from `base`), with the statuses of the array `statuses` in the same
/// order.
pub(crate) fn completed_some(
    watched: &Watched,
    outcount: c_int,
    indices: *const c_void,
    base: c_int,
    statuses: *const c_void,
) {
    // SAFETY: a constant of the MPI library.
    if outcount == unsafe { cali_mpi_shim_undefined() } || outcount <= 0 {
        return;
    }
    // SAFETY: the call wrote `outcount` indices.
    let indices = unsafe { std::slice::from_raw_parts(indices.cast::<c_int>(), outcount as usize) };
    complete(watched, indices.iter().enumerate().map(|(k, &i)| ((i - base) as usize, status_at(statuses, k))));
}

/// Now, on the runtime's clock (what the wait gaps are measured with).
fn now_ns() -> u64 {
    // SAFETY: a function of libcaliper.
    unsafe { abi::cali_mpi_now_ns() }
}

/// The `int` that `p` points to: an argument of a Fortran call, or one a
/// C call set.
pub(crate) fn int_at(p: *const c_int) -> c_int {
    // SAFETY: the caller's argument, an int.
    unsafe { *p }
}
