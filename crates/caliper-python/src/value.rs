//! Python values as Caliper values: `bool`, `int`, `float` and `str`.

use crate::runtime::{Api, Variant};
use crate::text::borrowed;
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use std::ffi::{CStr, c_int, c_void};

/// Attribute type codes (`cali_attr_type`).
pub(crate) mod types {
    use std::ffi::c_int;
    pub const INV: c_int = 0;
    pub const INT: c_int = 2;
    pub const UINT: c_int = 3;
    pub const STRING: c_int = 4;
    pub const ADDR: c_int = 5;
    pub const DOUBLE: c_int = 6;
    pub const BOOL: c_int = 7;
    /// The largest code (`CALI_MAXTYPE`).
    pub const MAX: c_int = 9;

    /// The type's name, for messages (as `cali_type2string`).
    pub fn name(ty: c_int) -> &'static str {
        ["inv", "usr", "int", "uint", "string", "addr", "double", "bool", "type", "ptr"]
            .get(ty as usize)
            .copied()
            .unwrap_or("unknown")
    }
}

/// A value taken from Python. Strings borrow the str object's UTF-8 data
/// (NUL-terminated, see `text::borrowed`), which libcaliper interns during
/// the call it is passed to.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Value<'a> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Addr(u64),
    Double(f64),
    Str(&'a CStr),
}

impl<'a> Value<'a> {
    /// The value of `obj` with the type Python gives it: a `bool` is
    /// BOOL, an `int` INT (UINT above the signed 64-bit range), a `float`
    /// DOUBLE and a `str` STRING. Anything else raises `TypeError`; an
    /// `int` outside 64 bits raises `OverflowError`, a `str` holding a NUL
    /// `ValueError`.
    pub(crate) fn of(obj: &'a Bound<'_, PyAny>) -> PyResult<Value<'a>> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Value::Str(borrowed(s)?));
        }
        if obj.is_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.is_truthy()?));
        }
        if obj.is_instance_of::<PyInt>() {
            if let Ok(i) = obj.extract::<i64>() {
                return Ok(Value::Int(i));
            }
            return obj
                .extract::<u64>()
                .map(Value::Uint)
                .map_err(|_| PyOverflowError::new_err(format!("{obj} does not fit in 64 bits")));
        }
        if obj.is_instance_of::<PyFloat>() {
            return Ok(Value::Double(obj.extract::<f64>()?));
        }
        Err(PyTypeError::new_err(format!(
            "a Caliper value is a bool, int, float or str, not {}",
            obj.get_type().name()?
        )))
    }

    /// The value's own attribute type.
    pub(crate) fn attr_type(&self) -> c_int {
        match self {
            Value::Bool(_) => types::BOOL,
            Value::Int(_) => types::INT,
            Value::Uint(_) => types::UINT,
            Value::Addr(_) => types::ADDR,
            Value::Double(_) => types::DOUBLE,
            Value::Str(_) => types::STRING,
        }
    }

    /// The value as one of attribute type `ty`, converting where no
    /// information is lost or changed in meaning: an `int` to a double,
    /// unsigned or address attribute (as the reference's `Annotation`
    /// converts an `int` for a double or unsigned attribute). Another
    /// mismatch raises `TypeError` (a `bool` is a BOOL value only, so a
    /// valueless `begin` of another attribute raises), a negative number
    /// for an unsigned attribute `OverflowError`.
    pub(crate) fn for_type(self, ty: c_int, attr_name: &str) -> PyResult<Value<'a>> {
        let converted = match (self, ty) {
            (v, t) if v.attr_type() == t => Some(v),
            (Value::Int(i), types::DOUBLE) => Some(Value::Double(i as f64)),
            (Value::Uint(u), types::DOUBLE) => Some(Value::Double(u as f64)),
            (Value::Int(i), types::UINT | types::ADDR) => {
                let u = u64::try_from(i).map_err(|_| {
                    PyOverflowError::new_err(format!("{i} is negative: attribute {attr_name:?} is unsigned"))
                })?;
                Some(if ty == types::UINT { Value::Uint(u) } else { Value::Addr(u) })
            }
            (Value::Uint(u), types::ADDR) => Some(Value::Addr(u)),
            _ => None,
        };
        converted.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "attribute {attr_name:?} has type {}, the value is of type {}",
                types::name(ty),
                types::name(self.attr_type())
            ))
        })
    }

    /// The `cali_variant_t` of the value (a string one points to the
    /// borrowed data).
    pub(crate) fn variant(&self, api: &Api) -> Variant {
        let scalar = |ty: c_int, value: u64| Variant { type_and_size: ty as u64, value };
        match *self {
            Value::Bool(b) => scalar(types::BOOL, u64::from(b)),
            Value::Int(i) => scalar(types::INT, i as u64),
            Value::Uint(u) => scalar(types::UINT, u),
            Value::Addr(a) => scalar(types::ADDR, a),
            Value::Double(d) => scalar(types::DOUBLE, d.to_bits()),
            // SAFETY: `s` is readable for its length; the variant does not
            // outlive the borrow.
            Value::Str(s) => unsafe {
                (api.cali_make_variant)(types::STRING, s.as_ptr() as *const c_void, s.to_bytes().len())
            },
        }
    }
}

/// Checks an attribute type code from Python: one of the `CALI_TYPE_*`
/// values other than `CALI_TYPE_INV`.
pub(crate) fn checked_type(ty: c_int) -> PyResult<c_int> {
    if (types::INV + 1..=types::MAX).contains(&ty) {
        Ok(ty)
    } else {
        Err(PyValueError::new_err(format!("{ty} is not an attribute type (CALI_TYPE_USR .. CALI_TYPE_PTR)")))
    }
}
