//! `begin_region(name)`, `end_region(name)` and their phase and
//! communication-region kin: the calls annotated Python code makes most,
//! so they are plain CPython functions of one argument (`METH_O`), which
//! Python calls without packing or parsing arguments (about 10 ns less per
//! begin/end pair than a `#[pyfunction]`). Each hands the name, borrowed
//! from the str object, to the C call of the same name.

use crate::runtime::api;
use crate::text::borrowed;
use pyo3::exceptions::{PySystemError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A C call taking a region name.
type RegionCall = unsafe extern "C" fn(*const c_char);

macro_rules! region_calls {
    ($($name:ident => $c_call:ident, $doc:literal;)*) => {
        $(
            unsafe extern "C" fn $name(_module: *mut ffi::PyObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject {
                // SAFETY: called by Python with the GIL held and one argument.
                unsafe { call(stringify!($name), name, api().$c_call) }
            }
        )*

        /// Name, function and docstring (NUL-terminated) of each call.
        const CALLS: &[(&str, ffi::PyCFunction, &str)] =
            &[$((concat!(stringify!($name), "\0"), $name, concat!($doc, "\0")),)*];
    };
}

region_calls! {
    begin_region => cali_begin_region, "begin_region(name)\n--\n\nBegins region `name` (the `region` attribute).";
    end_region => cali_end_region,
        "end_region(name)\n--\n\nEnds region `name`, which must be the innermost (else one `== CALIPER:` line).";
    begin_phase => cali_begin_phase, "begin_phase(name)\n--\n\nBegins phase `name` (the `phase` attribute, level 4).";
    end_phase => cali_end_phase, "end_phase(name)\n--\n\nEnds phase `name`.";
    begin_comm_region => cali_begin_comm_region,
        "begin_comm_region(name)\n--\n\nBegins communication region `name` (`comm.region`, level 1).";
    end_comm_region => cali_end_comm_region, "end_comm_region(name)\n--\n\nEnds communication region `name`.";
}

/// Calls `c_call` with the name `arg`; returns None, or NULL with a
/// Python exception set (a non-str name, a name holding a NUL).
///
/// # Safety
/// The GIL is held and `arg` is a live object.
#[inline(always)]
unsafe fn call(func: &str, arg: *mut ffi::PyObject, c_call: RegionCall) -> *mut ffi::PyObject {
    // SAFETY: per the caller.
    let py = unsafe { Python::assume_attached() };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a live object, borrowed for the call.
        let arg = unsafe { pyo3::Borrowed::from_ptr(py, arg) };
        let name = arg.cast::<PyString>().map_err(|_| not_a_str(func, &arg))?;
        let name = borrowed(&name)?;
        // SAFETY: a NUL-terminated name that lives for the call.
        unsafe { c_call(name.as_ptr()) };
        Ok::<(), PyErr>(())
    }));
    match result {
        Ok(Ok(())) => {
            // SAFETY: the GIL is held.
            unsafe { ffi::Py_NewRef(ffi::Py_None()) }
        }
        Ok(Err(e)) => {
            e.restore(py);
            std::ptr::null_mut()
        }
        Err(_) => {
            PySystemError::new_err(format!("{func}: internal error")).restore(py);
            std::ptr::null_mut()
        }
    }
}

#[cold]
fn not_a_str(func: &str, arg: &Bound<'_, PyAny>) -> PyErr {
    let type_name = arg.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    PyTypeError::new_err(format!("{func}() argument must be str, not {type_name}"))
}

/// Adds the region calls to module `m`.
pub(crate) fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let module_name = m.name()?;
    for &(name, function, doc) in CALLS {
        // Python keeps a pointer to the definition for as long as the
        // function exists: it lives as long as the process.
        let def = Box::leak(Box::new(ffi::PyMethodDef {
            ml_name: name.as_ptr() as *const c_char,
            ml_meth: ffi::PyMethodDefPointer { PyCFunction: function },
            ml_flags: ffi::METH_O,
            ml_doc: doc.as_ptr() as *const c_char,
        }));
        // SAFETY: a complete definition and the module's name.
        let f = unsafe {
            Bound::from_owned_ptr_or_err(
                m.py(),
                ffi::PyCFunction_NewEx(def, std::ptr::null_mut(), module_name.as_ptr()),
            )
        }?;
        m.add(&name[..name.len() - 1], f)?;
    }
    Ok(())
}
