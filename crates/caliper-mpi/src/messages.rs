//! What the generated wrappers report to message tracing
//! (`CALI_MPI_MSG_TRACING`, see `caliper::mpi_messages`): the peer, tag
//! and bytes of each completed send and receive, and the kind, root and
//! bytes of each collective, worked out from the call's arguments with
//! `mpi.h`'s help (`src/shim.c`). Handles come as pointers to them, so that
//! this side needs not know their type.

use runtime::mpi_messages::{Message, record};
use std::ffi::{c_int, c_void};

unsafe extern "C" {
    fn cali_mpi_shim_bytes(count: c_int, datatype: *const c_void) -> i64;
    fn cali_mpi_shim_received(
        status: *const c_void,
        datatype: *const c_void,
        source: *mut c_int,
        tag: *mut c_int,
        bytes: *mut i64,
    );
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
