//! What the generated wrappers report to message tracing
//! (`CALI_MPI_MSG_TRACING`, see `caliper::mpi_messages`): the peer, tag
//! and bytes of each completed send and receive, and the kind, root and
//! bytes of each collective, worked out from the call's arguments with
//! `mpi.h`'s help (`src/shim.c`). Handles come as pointers to them, so that
//! this side needs not know their type.

use runtime::mpi_messages::{Message, record};
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
}

/// An MPI handle's bytes (a pointer or an `int`).
type Handle = [u8; 8];

/// A receive posted with `MPI_Irecv`, reported when a wait or test
/// completes its request.
struct Posted {
    request: Handle,
    count: c_int,
    datatype: Handle,
    src: c_int,
    tag: c_int,
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
    record(Message::Sent { dst: dst.into(), tag: tag.into(), bytes: bytes(count, datatype) });
}

/// A receive of at most `count` elements of `*datatype` completed, with
/// `status` (or `MPI_STATUS_IGNORE`).
pub(crate) fn received(count: c_int, datatype: *const c_void, src: c_int, tag: c_int, status: *const c_void) {
    let (mut src, mut tag, mut size) = (src, tag, bytes(count, datatype));
    // SAFETY: the caller's status (or MPI_STATUS_IGNORE) and datatype.
    unsafe { cali_mpi_shim_received(status, datatype, &mut src, &mut tag, &mut size) };
    record(Message::Received { src: src.into(), tag: tag.into(), bytes: size });
}

/// A collective of the reference's `kind` moving `count` elements of
/// `*datatype` per rank, rooted at `root` (negative: none).
pub(crate) fn collective(kind: i64, root: c_int, count: c_int, datatype: *const c_void) {
    let bytes = if datatype.is_null() { 0 } else { bytes(count, datatype) };
    record(Message::Collective { kind, root: (root >= 0).then_some(root.into()), bytes });
}

/// `MPI_Irecv` posted a receive: it is reported when a wait or test
/// completes `*request`.
pub(crate) fn posted(count: c_int, datatype: *const c_void, src: c_int, tag: c_int, request: *const c_void) {
    let posted = Posted { request: handle_at(request), count, datatype: handle_at(datatype), src, tag };
    if let Ok(mut pending) = POSTED.lock() {
        pending.push(posted);
    }
}

/// Before a wait or test on `count` requests at `requests`: their handles
/// (the call replaces completed ones), if any receive is pending.
pub(crate) fn watch(requests: *const c_void, count: c_int) -> Vec<Handle> {
    if POSTED.lock().map_or(true, |p| p.is_empty()) {
        return Vec::new();
    }
    // SAFETY: as `handle_at`: the handles are `size` bytes apart.
    let size = unsafe { cali_mpi_shim_handle_size() } as usize;
    (0..count.max(0) as usize).map(|i| handle_at(requests.cast::<u8>().wrapping_add(i * size).cast())).collect()
}

/// After a wait or test completed the `watched` requests (with `statuses`,
/// one or an array of them, or ignored): each that was a posted receive is
/// reported with its status.
pub(crate) fn completed(watched: &[Handle], statuses: *const c_void, array: bool) {
    let Ok(mut pending) = POSTED.lock() else { return };
    for (i, request) in watched.iter().enumerate() {
        let Some(at) = pending.iter().position(|p| p.request == *request) else { continue };
        let p = pending.swap_remove(at);
        let status = match array {
            // SAFETY: the caller's status array (or MPI_STATUSES_IGNORE).
            true => unsafe { cali_mpi_shim_status_at(statuses, i as c_int) },
            false => statuses,
        };
        received(p.count, p.datatype.as_ptr().cast(), p.src, p.tag, status);
    }
}

/// [`completed`] for a test, which completed the requests only if `*flag`.
pub(crate) fn completed_if(flag: *const c_int, watched: &[Handle], statuses: *const c_void, array: bool) {
    // SAFETY: the caller's flag, set by the test.
    if !watched.is_empty() && unsafe { *flag } != 0 {
        completed(watched, statuses, array);
    }
}
