//! Adiak's C interface, as `adiak.h` and `adiak_tool.h` declare it, found
//! in the process with `dlsym(RTLD_DEFAULT, ...)` when a service needs it:
//! a program that links Adiak (or loaded it globally) has it, and
//! `libcaliper` itself never requires it.
//!
//! Only what every Adiak release agrees on is read from its structures:
//! a datatype's type code and element count (its first and third `int`),
//! and a value's 8-byte union. The elements of container values (sets,
//! lists, ranges, tuples) are read through `adiak_get_subval`, which knows
//! the release's own layout (including zero-copy references).

use std::ffi::{CStr, c_char, c_int, c_long, c_uint, c_ulong, c_void};

/// `adiak_type_t`: the type code of a value.
pub mod dtype {
    use std::ffi::c_int;
    pub const LONG: c_int = 1;
    pub const ULONG: c_int = 2;
    pub const INT: c_int = 3;
    pub const UINT: c_int = 4;
    pub const DOUBLE: c_int = 5;
    pub const DATE: c_int = 6;
    pub const TIMEVAL: c_int = 7;
    pub const VERSION: c_int = 8;
    pub const STRING: c_int = 9;
    pub const CATSTRING: c_int = 10;
    pub const PATH: c_int = 11;
    pub const RANGE: c_int = 12;
    pub const SET: c_int = 13;
    pub const LIST: c_int = 14;
    pub const TUPLE: c_int = 15;
    pub const LONGLONG: c_int = 16;
    pub const ULONGLONG: c_int = 17;
}

/// `adiak_general`: the category of values Caliper hands to Adiak.
pub const CATEGORY_GENERAL: c_int = 2;

/// The head of `adiak_datatype_t` that is the same in every Adiak release
/// (later fields moved between releases and are not read).
#[repr(C)]
pub struct Datatype {
    pub dtype: c_int,
    pub numerical: c_int,
    pub num_elements: c_int,
}

/// `adiak_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union Value {
    pub v_int: c_int,
    pub v_uint: c_uint,
    pub v_long: c_long,
    pub v_ulong: c_ulong,
    pub v_longlong: i64,
    pub v_ulonglong: u64,
    pub v_double: f64,
    pub v_ptr: *mut c_void,
}

/// `adiak_nameval_cb_t`: called by `adiak_list_namevals` for each value.
pub type NamevalCallback = unsafe extern "C" fn(
    name: *const c_char,
    category: c_int,
    subcategory: *const c_char,
    value: *mut Value,
    datatype: *mut Datatype,
    opaque: *mut c_void,
);

/// `adiak_list_namevals(adiak_version, category, callback, opaque)`.
type ListNamevals = unsafe extern "C" fn(c_int, c_int, NamevalCallback, *mut c_void);

/// `adiak_get_subval(datatype, value, element, &subtype, &subvalue)`: 0 on
/// success.
pub type GetSubval = unsafe extern "C" fn(*mut Datatype, *mut Value, c_int, *mut *mut Datatype, *mut Value) -> c_int;

/// `adiak_namevalue(name, category, subcategory, typestr, ...)`: 0 on
/// success.
pub type Namevalue = unsafe extern "C" fn(*const c_char, c_int, *const c_char, *const c_char, ...) -> c_int;

/// The version of the tool interface this runtime speaks
/// (`adiak_list_namevals`' first argument).
const TOOL_VERSION: c_int = 1;

/// Adiak's tool interface in this process: what reads the program's values.
#[derive(Clone, Copy)]
pub struct Tool {
    list_namevals: ListNamevals,
    /// The element reader of containers; `None` in Adiak releases before
    /// it, whose containers are then left out.
    pub get_subval: Option<GetSubval>,
}

/// The address of `name` among the symbols the process has loaded
/// globally, if any.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!address.is_null()).then_some(address)
}

impl Tool {
    /// Adiak's tool interface, if the program has Adiak.
    pub fn find() -> Option<Tool> {
        let list = symbol(c"adiak_list_namevals")?;
        // SAFETY: the symbols are Adiak's functions of these C signatures.
        unsafe {
            Some(Tool {
                list_namevals: std::mem::transmute::<*mut c_void, ListNamevals>(list),
                get_subval: symbol(c"adiak_get_subval").map(|f| std::mem::transmute::<*mut c_void, GetSubval>(f)),
            })
        }
    }

    /// Calls `callback` with `opaque` for each value of `category` the
    /// program has given Adiak.
    ///
    /// # Safety
    /// `callback` must treat `opaque` as what the caller passes.
    pub unsafe fn list(&self, category: c_int, callback: NamevalCallback, opaque: *mut c_void) {
        // SAFETY: Adiak's function, called as its header declares.
        unsafe { (self.list_namevals)(TOOL_VERSION, category, callback, opaque) }
    }
}

/// `adiak_namevalue`, if the program has Adiak.
pub fn namevalue() -> Option<Namevalue> {
    let f = symbol(c"adiak_namevalue")?;
    // SAFETY: the symbol is Adiak's variadic function of this signature.
    Some(unsafe { std::mem::transmute::<*mut c_void, Namevalue>(f) })
}
