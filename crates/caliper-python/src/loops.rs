//! `pycaliper.loop.Loop`: a loop and its iterations, as the reference's
//! C++ `cali::Loop` (`loop=<name>` and `iteration#<name>`).

use crate::instrumentation::{begin, end};
use crate::runtime::{INV_ID, Id, api};
use crate::text::owned;
use crate::value::Value;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

/// `Loop(name)` begins `loop=name`; `start_iteration(i)` and
/// `end_iteration()` mark iteration `i` (`iteration#name=i`); `end()`
/// ends the loop (once; later calls do nothing).
#[pyclass(module = "pycaliper.loop", frozen)]
pub(crate) struct Loop {
    name: CString,
    loop_attr: Id,
    iteration: Id,
    ended: AtomicBool,
}

#[pymethods]
impl Loop {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        let c_name = owned(name)?;
        let api = api();
        // SAFETY: NUL-terminated names.
        let (loop_attr, iteration) = unsafe {
            ((api.cali_find_attribute)(c"loop".as_ptr()), (api.cali_make_loop_iteration_attribute)(c_name.as_ptr()))
        };
        if loop_attr == INV_ID || iteration == INV_ID {
            return Err(PyRuntimeError::new_err("the Caliper runtime has finished: no loop can begin"));
        }
        begin(loop_attr, Value::Str(&c_name));
        Ok(Loop { name: c_name, loop_attr, iteration, ended: AtomicBool::new(false) })
    }

    /// Begins iteration `i`.
    fn start_iteration(&self, i: i64) {
        begin(self.iteration, Value::Int(i));
    }

    /// Ends the current iteration.
    fn end_iteration(&self) {
        end(self.iteration);
    }

    /// Ends the loop, which must be the innermost (else a one-line
    /// `== CALIPER:` message).
    fn end(&self) {
        if !self.ended.swap(true, Ordering::AcqRel) {
            // SAFETY: a NUL-terminated value.
            unsafe { (api().cali_safe_end_string)(self.loop_attr, self.name.as_ptr()) };
        }
    }

    fn __repr__(&self) -> String {
        format!("Loop({:?})", self.name)
    }
}
