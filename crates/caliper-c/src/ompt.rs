//! `ompt_start_tool`, which an OpenMP runtime with the OpenMP tools
//! interface (LLVM's libomp) looks up in the program when it initializes:
//! the runtime starts here, with the channels of the program's
//! configuration, and the `ompt` service answers whether OpenMP events are
//! wanted (see the runtime's `services::ompt`).

use crate::entry::guard;
use crate::setup::cali;
use runtime::service::Runtime;
use runtime::services::ompt::{self, StartToolResult};
use std::ffi::{c_char, c_uint};

/// The OpenMP runtime asks for a tool: the tool's entry points, or NULL
/// (no tool) unless a channel enables `ompt` or `CALI_USE_OMPT=true`.
#[unsafe(no_mangle)]
pub extern "C" fn ompt_start_tool(_omp_version: c_uint, _runtime_version: *const c_char) -> *mut StartToolResult {
    guard("ompt_start_tool", std::ptr::null_mut(), || ompt::start_tool(cali().map(|c| c as &dyn Runtime)))
}
