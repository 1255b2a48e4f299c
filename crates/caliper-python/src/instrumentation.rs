//! `pycaliper.instrumentation`: attributes by name, and the `Attribute`
//! class (the region calls are in `regions`).

use crate::runtime::{INV_ID, Id, Variant, api};
use crate::text::{from_c, owned};
use crate::value::{Value, checked_type, types};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::ffi::c_int;

/// Property bits the by-name calls create attributes with.
const UNALIGNED: c_int = 1024;
const GLOBAL_PROPS: c_int = 512 | UNALIGNED | 64; // global | unaligned | skip_events

/// The attribute `name` with a value's type and `props`, created on first
/// use, and the value converted to the attribute's type (it may exist
/// with another one).
fn by_name<'a>(name: &str, value: Value<'a>, props: c_int) -> PyResult<(Id, Value<'a>)> {
    let c_name = owned(name)?;
    let api = api();
    // SAFETY: a NUL-terminated name.
    let id = unsafe { (api.cali_create_attribute)(c_name.as_ptr(), value.attr_type(), props) };
    if id == INV_ID {
        return Err(PyValueError::new_err(format!("cannot create attribute {name:?}")));
    }
    // SAFETY: plain id query.
    let ty = unsafe { (api.cali_attribute_type)(id) };
    Ok((id, value.for_type(ty, name)?))
}

/// The value of an optional argument; none is the boolean `true` (the
/// reference's valueless `begin`).
pub(crate) fn value_or_true<'a>(value: Option<&'a Bound<'_, PyAny>>) -> PyResult<Value<'a>> {
    value.map_or(Ok(Value::Bool(true)), Value::of)
}

/// Begins `name=value` (the attribute is created with the value's type
/// and default properties on first use; without a value, `true`).
#[pyfunction]
#[pyo3(signature = (name, value = None))]
pub(crate) fn begin_byname(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let (id, value) = by_name(name, value_or_true(value)?, 0)?;
    begin(id, value);
    Ok(())
}

/// Sets `name=value` (the attribute is created unaligned on first use).
#[pyfunction]
pub(crate) fn set_byname(name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let (id, value) = by_name(name, Value::of(value)?, UNALIGNED)?;
    set(id, value);
    Ok(())
}

/// Ends the innermost value of attribute `name` (an unknown name is
/// ignored, as in C).
#[pyfunction]
pub(crate) fn end_byname(name: &str) -> PyResult<()> {
    let name = owned(name)?;
    // SAFETY: a NUL-terminated name.
    unsafe { (api().cali_end_byname)(name.as_ptr()) };
    Ok(())
}

/// Sets the global (run metadata) `name=value`.
#[pyfunction]
pub(crate) fn set_global_byname(name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let (id, value) = by_name(name, Value::of(value)?, GLOBAL_PROPS)?;
    set(id, value);
    Ok(())
}

/// Begins `value` on attribute `id` (of the value's type).
pub(crate) fn begin(id: Id, value: Value<'_>) {
    let api = api();
    match value {
        // SAFETY: a NUL-terminated string borrowed for the call.
        Value::Str(s) => unsafe { (api.cali_begin_string)(id, s.as_ptr()) },
        // SAFETY: a scalar variant.
        _ => unsafe { (api.cali_begin_variant)(id, value.variant(api)) },
    }
}

/// Sets `value` on attribute `id` (of the value's type).
pub(crate) fn set(id: Id, value: Value<'_>) {
    let api = api();
    match value {
        // SAFETY: as in `begin`.
        Value::Str(s) => unsafe { (api.cali_set_string)(id, s.as_ptr()) },
        // SAFETY: a scalar variant.
        _ => unsafe { (api.cali_set_variant)(id, value.variant(api)) },
    }
}

/// Ends the innermost value of attribute `id`.
pub(crate) fn end(id: Id) {
    // SAFETY: plain id call.
    unsafe { (api().cali_end)(id) }
}

/// An attribute: a key with a name, a type and properties, created (or
/// found, if it exists: then its first type and properties stay) by the
/// constructor.
#[pyclass(module = "pycaliper.instrumentation", frozen)]
pub(crate) struct Attribute {
    id: Id,
    ty: c_int,
    name: String,
}

#[pymethods]
impl Attribute {
    /// `Attribute(name, type, properties=CALI_ATTR_DEFAULT, meta_attrs=None,
    /// meta_vals=None)`: the metadata are pairs of an attribute and a
    /// value of its type.
    #[new]
    #[pyo3(signature = (name, r#type, properties = 0, meta_attrs = None, meta_vals = None))]
    fn new(
        name: &str,
        r#type: c_int,
        properties: c_int,
        meta_attrs: Option<Vec<PyRef<'_, Attribute>>>,
        meta_vals: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Self> {
        let ty = checked_type(r#type)?;
        let c_name = owned(name)?;
        let meta_attrs = meta_attrs.unwrap_or_default();
        let meta_vals = meta_vals.unwrap_or_default();
        if meta_attrs.len() != meta_vals.len() {
            return Err(PyValueError::new_err(format!(
                "{} metadata attributes but {} values",
                meta_attrs.len(),
                meta_vals.len()
            )));
        }
        let api = api();
        let mut ids = Vec::with_capacity(meta_attrs.len());
        let mut variants: Vec<Variant> = Vec::with_capacity(meta_attrs.len());
        for (attr, value) in meta_attrs.iter().zip(&meta_vals) {
            ids.push(attr.id);
            variants.push(Value::of(value)?.for_type(attr.ty, &attr.name)?.variant(api));
        }
        // SAFETY: a NUL-terminated name; the lists hold `n` elements, and
        // string values point into `meta_vals`, alive for the call.
        let id = unsafe {
            (api.cali_create_attribute_with_metadata)(
                c_name.as_ptr(),
                ty,
                properties,
                ids.len() as c_int,
                ids.as_ptr(),
                variants.as_ptr(),
            )
        };
        Attribute::from_id(id).ok_or_else(|| PyValueError::new_err(format!("cannot create attribute {name:?}")))
    }

    /// The attribute named `name`, or None if there is none.
    #[staticmethod]
    fn find_attribute(name: &str) -> PyResult<Option<Attribute>> {
        let c_name = owned(name)?;
        // SAFETY: a NUL-terminated name.
        Ok(Attribute::from_id(unsafe { (api().cali_find_attribute)(c_name.as_ptr()) }))
    }

    #[getter]
    fn id(&self) -> Id {
        self.id
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The type (a `CALI_TYPE_*` value).
    #[getter]
    fn r#type(&self) -> c_int {
        self.ty
    }

    /// The effective properties (default scope added, presets applied).
    #[getter]
    fn properties(&self) -> c_int {
        // SAFETY: plain id query.
        unsafe { (api().cali_attribute_properties)(self.id) }
    }

    /// Begins `value` (converted to the attribute's type where that loses
    /// nothing, else `TypeError`); without a value, a boolean attribute's
    /// `true`.
    #[pyo3(signature = (value = None))]
    fn begin(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        begin(self.id, value_or_true(value)?.for_type(self.ty, &self.name)?);
        Ok(())
    }

    /// Sets `value` (replaces the innermost one).
    fn set(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        set(self.id, Value::of(value)?.for_type(self.ty, &self.name)?);
        Ok(())
    }

    /// Ends the innermost value.
    fn end(&self) {
        end(self.id)
    }

    fn __repr__(&self) -> String {
        format!("Attribute({:?}, {})", self.name, types::name(self.ty))
    }
}

impl Attribute {
    fn from_id(id: Id) -> Option<Attribute> {
        if id == INV_ID {
            return None;
        }
        let api = api();
        // SAFETY: plain id queries; the name lives as long as the process.
        let (ty, name) = unsafe { ((api.cali_attribute_type)(id), from_c((api.cali_attribute_name)(id))) };
        Some(Attribute { id, ty, name })
    }
}
