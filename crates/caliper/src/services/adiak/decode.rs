//! An Adiak value as a Caliper value, with its Adiak type name (the
//! `adiak.type` metadata): integers stay integers (signed or unsigned),
//! doubles doubles, dates their seconds since the epoch (unsigned), a
//! `timeval` its seconds as a double, versions, strings, categorical
//! strings and paths strings. Containers become a string of their
//! elements in the brackets of their type: `[1, 2]` for a list of ints
//! (type `[int]`), `{a, b}` for a set of strings (`{string}`), `<1, 8>`
//! for a range (`<int>`), `(4, x)` for a tuple (`(int, string)`).

use super::api::{Datatype, GetSubval, Value, dtype};
use caliper_data::Variant;
use std::ffi::{CStr, c_char};

/// A decoded value.
#[derive(Debug, PartialEq)]
pub struct Decoded {
    /// Adiak's name of the type (`int`, `{string}`, ...).
    pub type_name: String,
    pub value: Variant,
}

/// How deep containers may nest (deeper values are left out).
const MAX_DEPTH: usize = 8;

/// The most elements of one container read (a bad count reads no more).
const MAX_ELEMENTS: i32 = 1 << 16;

/// Decodes the value `value` of type `datatype`; `None` for an unset or
/// unknown type, and for containers without `get_subval`.
///
/// # Safety
/// `datatype` and `value` are what Adiak handed a name/value callback (or
/// `adiak_get_subval`), valid for the call.
pub unsafe fn decode(datatype: *mut Datatype, value: *mut Value, get_subval: Option<GetSubval>) -> Option<Decoded> {
    // SAFETY: the caller's.
    unsafe { decode_at(datatype, value, get_subval, 0) }
}

unsafe fn decode_at(
    datatype: *mut Datatype,
    value: *mut Value,
    get_subval: Option<GetSubval>,
    depth: usize,
) -> Option<Decoded> {
    if datatype.is_null() || value.is_null() || depth > MAX_DEPTH {
        return None;
    }
    // SAFETY: both point to Adiak's data, valid for the call; each union
    // field read is the one Adiak writes for the type code.
    let (t, v) = unsafe { (&*datatype, *value) };
    let scalar = |name: &str, value: Variant| Some(Decoded { type_name: name.to_string(), value });
    unsafe {
        match t.dtype {
            dtype::LONG => scalar("long", Variant::Int(v.v_long)),
            dtype::ULONG => scalar("unsigned long", Variant::Uint(v.v_ulong)),
            dtype::INT => scalar("int", Variant::Int(v.v_int.into())),
            dtype::UINT => scalar("unsigned int", Variant::Uint(v.v_uint.into())),
            dtype::LONGLONG => scalar("long long", Variant::Int(v.v_longlong)),
            dtype::ULONGLONG => scalar("unsigned long long", Variant::Uint(v.v_ulonglong)),
            dtype::DOUBLE => scalar("double", Variant::Double(v.v_double)),
            dtype::DATE => scalar("date", Variant::Uint(v.v_long as u64)),
            dtype::TIMEVAL => {
                let tv = v.v_ptr as *const libc::timeval;
                let seconds = (!tv.is_null()).then(|| (*tv).tv_sec as f64 + (*tv).tv_usec as f64 * 1e-6)?;
                scalar("timeval", Variant::Double(seconds))
            }
            dtype::VERSION => scalar("version", text(v)?),
            dtype::STRING => scalar("string", text(v)?),
            dtype::CATSTRING => scalar("catstring", text(v)?),
            dtype::PATH => scalar("path", text(v)?),
            dtype::RANGE => container(datatype, value, get_subval?, depth, ('<', '>')),
            dtype::SET => container(datatype, value, get_subval?, depth, ('{', '}')),
            dtype::LIST => container(datatype, value, get_subval?, depth, ('[', ']')),
            dtype::TUPLE => container(datatype, value, get_subval?, depth, ('(', ')')),
            _ => None,
        }
    }
}

/// A string value (`v_ptr` is the C string).
///
/// # Safety
/// `v_ptr` is null or a NUL-terminated string.
unsafe fn text(v: Value) -> Option<Variant> {
    let s = unsafe { v.v_ptr } as *const c_char;
    // SAFETY: the caller's.
    (!s.is_null()).then(|| Variant::string(&unsafe { CStr::from_ptr(s) }.to_string_lossy()))
}

/// A container's elements, read with `get_subval`, as one string; its type
/// name lists each element's type for a tuple, the first's otherwise.
///
/// # Safety
/// As [`decode`].
unsafe fn container(
    datatype: *mut Datatype,
    value: *mut Value,
    get_subval: GetSubval,
    depth: usize,
    (open, close): (char, char),
) -> Option<Decoded> {
    // SAFETY: the caller's.
    let count = unsafe { (*datatype).num_elements }.clamp(0, MAX_ELEMENTS);
    let mut types = Vec::new();
    let mut values = Vec::new();
    for i in 0..count {
        let mut subtype: *mut Datatype = std::ptr::null_mut();
        let mut subvalue = Value { v_ulonglong: 0 };
        // SAFETY: Adiak's function, with out-pointers made here.
        if unsafe { get_subval(datatype, value, i, &mut subtype, &mut subvalue) } != 0 {
            break;
        }
        // SAFETY: what Adiak handed back, valid while `value` is.
        let element = unsafe { decode_at(subtype, &mut subvalue, Some(get_subval), depth + 1) }?;
        types.push(element.type_name);
        values.push(match element.value {
            // The shortest text that reads back (0.5), as a stream prints it.
            Variant::Double(d) => d.to_string(),
            other => other.to_string(),
        });
    }
    let is_tuple = open == '(';
    let element_types = if is_tuple { types.join(", ") } else { types.into_iter().next().unwrap_or_default() };
    Some(Decoded {
        type_name: format!("{open}{element_types}{close}"),
        value: Variant::string(&format!("{open}{}{close}", values.join(", "))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_int;

    /// A container for the tests: its type head and its elements' types
    /// and values, read back by [`subval`] as Adiak's `adiak_get_subval`
    /// reads its own.
    #[repr(C)]
    struct TestContainer {
        head: Datatype,
        element_types: Vec<Datatype>,
        elements: Vec<Value>,
    }

    unsafe extern "C" fn subval(
        t: *mut Datatype,
        _v: *mut Value,
        i: c_int,
        subtype: *mut *mut Datatype,
        subvalue: *mut Value,
    ) -> c_int {
        // SAFETY: `t` is the head of a TestContainer (repr(C), first).
        let c = unsafe { &mut *(t as *mut TestContainer) };
        let i = i as usize;
        if i >= c.elements.len() {
            return -1;
        }
        // SAFETY: out-pointers of `container`.
        unsafe {
            *subtype = &mut c.element_types[i];
            *subvalue = c.elements[i];
        }
        0
    }

    fn head(dtype: c_int, n: c_int) -> Datatype {
        Datatype { dtype, numerical: 0, num_elements: n }
    }

    fn decoded(t: &mut Datatype, mut v: Value) -> Option<(String, Variant)> {
        unsafe { decode(t, &mut v, Some(subval)) }.map(|d| (d.type_name, d.value))
    }

    #[test]
    fn scalars_keep_their_kind() {
        let d = |ty, v| decoded(&mut head(ty, 0), v).unwrap();
        assert_eq!(d(dtype::INT, Value { v_int: -4 }), ("int".into(), Variant::Int(-4)));
        assert_eq!(d(dtype::ULONG, Value { v_ulong: 7 }), ("unsigned long".into(), Variant::Uint(7)));
        assert_eq!(d(dtype::DOUBLE, Value { v_double: 2.5 }), ("double".into(), Variant::Double(2.5)));
        assert_eq!(d(dtype::DATE, Value { v_long: 1_700_000_000 }), ("date".into(), Variant::Uint(1_700_000_000)));
        let path = c"/home/x";
        let v = Value { v_ptr: path.as_ptr() as *mut _ };
        assert_eq!(d(dtype::PATH, v), ("path".into(), Variant::string("/home/x")));
        let tv = libc::timeval { tv_sec: 3, tv_usec: 500_000 };
        let v = Value { v_ptr: &tv as *const _ as *mut _ };
        assert_eq!(d(dtype::TIMEVAL, v), ("timeval".into(), Variant::Double(3.5)));
    }

    #[test]
    fn unset_unknown_and_null_strings_are_left_out() {
        assert_eq!(decoded(&mut head(0, 0), Value { v_long: 1 }), None);
        assert_eq!(decoded(&mut head(99, 0), Value { v_long: 1 }), None);
        assert_eq!(decoded(&mut head(dtype::STRING, 0), Value { v_ptr: std::ptr::null_mut() }), None);
    }

    #[test]
    fn containers_are_strings_in_their_brackets() {
        let (a, b) = (c"a", c"b");
        let mut set = TestContainer {
            head: head(dtype::SET, 2),
            element_types: vec![head(dtype::STRING, 0), head(dtype::STRING, 0)],
            elements: vec![Value { v_ptr: a.as_ptr() as *mut _ }, Value { v_ptr: b.as_ptr() as *mut _ }],
        };
        let got = decoded(&mut set.head, Value { v_ptr: std::ptr::null_mut() });
        assert_eq!(got, Some(("{string}".into(), Variant::string("{a, b}"))));
        let mut tuple = TestContainer {
            head: head(dtype::TUPLE, 2),
            element_types: vec![head(dtype::INT, 0), head(dtype::DOUBLE, 0)],
            elements: vec![Value { v_int: 4 }, Value { v_double: 0.5 }],
        };
        let got = decoded(&mut tuple.head, Value { v_ptr: std::ptr::null_mut() });
        assert_eq!(got, Some(("(int, double)".into(), Variant::string("(4, 0.5)"))));
    }

    #[test]
    fn containers_need_the_element_reader() {
        let mut list = head(dtype::LIST, 0);
        assert!(unsafe { decode(&mut list, &mut Value { v_long: 0 }, None) }.is_none());
    }
}
