//! `pycaliper.annotation.Annotation`: an attribute by name whose type is
//! that of its first value, as the reference's C++ `cali::Annotation`.

use crate::instrumentation::{begin, end, set, value_or_true};
use crate::runtime::{INV_ID, Id, api};
use crate::text::owned;
use crate::value::Value;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::ffi::{CString, c_int};
use std::sync::OnceLock;

/// `Annotation(name, opt=CALI_ATTR_DEFAULT)`: `begin`, `set` and `end`
/// values of attribute `name`, created with properties `opt` and the type
/// of the first value given.
#[pyclass(module = "pycaliper.annotation", frozen)]
pub(crate) struct Annotation {
    name: String,
    c_name: CString,
    properties: c_int,
    /// The attribute and its type, once created. Creation is
    /// create-or-get, so threads racing to create it agree.
    attr: OnceLock<(Id, c_int)>,
}

#[pymethods]
impl Annotation {
    #[new]
    #[pyo3(signature = (name, opt = 0))]
    fn new(name: &str, opt: c_int) -> PyResult<Self> {
        Ok(Annotation { name: name.to_owned(), c_name: owned(name)?, properties: opt, attr: OnceLock::new() })
    }

    /// Begins `value` (without one, `true`).
    #[pyo3(signature = (value = None))]
    fn begin(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let (id, value) = self.typed(value_or_true(value)?)?;
        begin(id, value);
        Ok(())
    }

    /// Sets `value` (replaces the innermost one).
    fn set(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (id, value) = self.typed(Value::of(value)?)?;
        set(id, value);
        Ok(())
    }

    /// Ends the innermost value (nothing if no value was ever given).
    fn end(&self) {
        if let Some(&(id, _)) = self.attr.get() {
            end(id);
        }
    }

    fn __repr__(&self) -> String {
        format!("Annotation({:?})", self.name)
    }
}

impl Annotation {
    /// The attribute (created with `value`'s type the first time) and
    /// `value` converted to its type.
    fn typed<'a>(&self, value: Value<'a>) -> PyResult<(Id, Value<'a>)> {
        let (id, ty) = match self.attr.get() {
            Some(&attr) => attr,
            None => {
                let attr = self.create(value.attr_type())?;
                let _ = self.attr.set(attr);
                attr
            }
        };
        Ok((id, value.for_type(ty, &self.name)?))
    }

    /// Creates (or gets) the attribute with type `ty`; returns it and its
    /// type, which is another if it existed.
    fn create(&self, ty: c_int) -> PyResult<(Id, c_int)> {
        let api = api();
        // SAFETY: a NUL-terminated name.
        let id = unsafe { (api.cali_create_attribute)(self.c_name.as_ptr(), ty, self.properties) };
        if id == INV_ID {
            return Err(PyValueError::new_err(format!("cannot create attribute {:?}", self.name)));
        }
        // SAFETY: plain id query.
        Ok((id, unsafe { (api.cali_attribute_type)(id) }))
    }
}
