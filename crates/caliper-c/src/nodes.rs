//! Context-tree nodes for the C++ `cali::Node` and `cali::Entry`: a node
//! read by id. A snapshot's reference entries and an attribute's id are
//! node ids; the C++ classes walk a path from a node up to the root.

use crate::entry::{CALI_INV_ID, cali_id_t, guard};
use crate::setup::cali;
use crate::variant::{cali_variant_t, from_variant};
use std::ffi::c_int;

/// Reads node `node`: its attribute, its value (string data lives as long
/// as the process) and its parent (`CALI_INV_ID` under the root). Returns
/// 1, or 0 (the outputs untouched) if there is no such node. NULL outputs
/// are skipped.
///
/// # Safety
/// Each output is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_node_info(
    node: cali_id_t,
    attr: *mut cali_id_t,
    value: *mut cali_variant_t,
    parent: *mut cali_id_t,
) -> c_int {
    guard("cali_node_info", 0, || {
        let Some(c) = cali() else { return 0 };
        let Some(n) = c.tree().get(node) else { return 0 };
        // SAFETY: each pointer is NULL or writable per the caller.
        unsafe {
            if let Some(a) = attr.as_mut() {
                *a = n.attribute;
            }
            if let Some(v) = value.as_mut() {
                *v = from_variant(n.value);
            }
            if let Some(p) = parent.as_mut() {
                *p = n.parent.unwrap_or(CALI_INV_ID);
            }
        }
        1
    })
}

/// The node of the calling thread's region path (the innermost node of a
/// nested attribute on its region stack, or else on the process's), or
/// `CALI_INV_ID`: what the C++ `Caliper::get_path_node` returns.
#[unsafe(no_mangle)]
pub extern "C" fn cali_path_node() -> cali_id_t {
    guard("cali_path_node", CALI_INV_ID, || cali().and_then(|c| c.path_node()).unwrap_or(CALI_INV_ID))
}
