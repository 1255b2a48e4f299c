//! Annotations: regions, phases and communication regions by name;
//! begin/set/end by attribute id and by attribute name; globals; and the
//! blackboard queries.

use crate::channels::channel;
use crate::entry::{attribute, cali_id_t, guard, static_cstr, text};
use crate::names::key_of;
use crate::setup::cali;
use crate::variant::{cali_variant_t, from_raw, from_variant, to_variant};
use caliper_data::Variant;
use runtime::api::{begin_by_name, end_by_name, set_by_name, set_global};
use runtime::attributes::Builtins;
use runtime::value::ValueKey;
use runtime::{Attribute, log};
use std::ffi::{c_char, c_int, c_void};

/// Begins (`END == false`) or ends a built-in region attribute with the
/// value `name`; ending checks that `name` is the innermost value.
/// Inlined into each entry point with its own `which` and `END`: these
/// are the calls an annotated C program makes most, and each then runs
/// straight through without a call through a function pointer.
#[inline(always)]
fn region<const END: bool>(entry: &str, which: impl Fn(&Builtins) -> Attribute, name: *const c_char) {
    guard(entry, (), || {
        if name.is_null() {
            log::error(format_args!("{entry}: NULL region name, call ignored"));
            return;
        }
        let Some(c) = cali() else { return };
        // SAFETY: non-NULL; the C API passes a NUL-terminated name.
        let key = unsafe { key_of(name) };
        let attr = which(c.builtins());
        if END { c.end(attr, Some(key)) } else { c.begin(attr, key) }
    })
}

macro_rules! region_functions {
    ($($begin:ident, $end:ident => $field:ident;)*) => {$(
        /// Begins a region of this kind (see `cali.h`).
        ///
        /// # Safety
        /// `name` is NULL or a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $begin(name: *const c_char) {
            region::<false>(stringify!($begin), |b| b.$field, name)
        }

        /// Ends the innermost region of this kind, which must be `name`.
        ///
        /// # Safety
        /// `name` is NULL or a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $end(name: *const c_char) {
            region::<true>(stringify!($end), |b| b.$field, name)
        }
    )*};
}

region_functions! {
    cali_begin_region, cali_end_region => region;
    cali_begin_phase, cali_end_phase => phase;
    cali_begin_comm_region, cali_end_comm_region => comm_region;
}

#[derive(Copy, Clone)]
enum Op {
    Begin,
    Set,
}

/// Begins or sets `value` on attribute `id`. The value must have the
/// attribute's type (the reference's by-id calls convert nothing); a
/// mismatch is logged and dropped.
fn update(entry: &str, id: cali_id_t, op: Op, value: impl FnOnce() -> Option<ValueKey>) {
    guard(entry, (), || {
        let Some(c) = cali() else { return };
        let Some(attr) = attribute(entry, c, id) else { return };
        let Some(value) = value() else { return };
        if value.attr_type() != attr.attr_type() {
            log::error(format_args!(
                "{entry}: attribute type mismatch: {} value for {} attribute {id}",
                value.attr_type().name(),
                attr.attr_type().name()
            ));
            return;
        }
        match op {
            Op::Begin => c.begin(attr, value),
            Op::Set => c.set(attr, value),
        }
    })
}

/// The value of a string argument; NULL is logged.
fn string_value(entry: &str, s: *const c_char) -> Option<ValueKey> {
    if s.is_null() {
        log::error(format_args!("{entry}: NULL string value, call ignored"));
        return None;
    }
    // SAFETY: non-NULL; the C API passes NUL-terminated strings.
    Some(unsafe { key_of(s) })
}

/// Begins the value `true` (the reference's `cali_begin`, for boolean
/// attributes).
#[unsafe(no_mangle)]
pub extern "C" fn cali_begin(attr: cali_id_t) {
    update("cali_begin", attr, Op::Begin, || Some(ValueKey::from_variant(&Variant::Bool(true))))
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_begin_double(attr: cali_id_t, val: f64) {
    update("cali_begin_double", attr, Op::Begin, || Some(ValueKey::from_variant(&Variant::Double(val))))
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_begin_int(attr: cali_id_t, val: c_int) {
    update("cali_begin_int", attr, Op::Begin, || Some(ValueKey::int(i64::from(val))))
}

/// # Safety
/// `val` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_begin_string(attr: cali_id_t, val: *const c_char) {
    update("cali_begin_string", attr, Op::Begin, || string_value("cali_begin_string", val))
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_set_double(attr: cali_id_t, val: f64) {
    update("cali_set_double", attr, Op::Set, || Some(ValueKey::from_variant(&Variant::Double(val))))
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_set_int(attr: cali_id_t, val: c_int) {
    update("cali_set_int", attr, Op::Set, || Some(ValueKey::int(i64::from(val))))
}

/// # Safety
/// `val` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_set_string(attr: cali_id_t, val: *const c_char) {
    update("cali_set_string", attr, Op::Set, || string_value("cali_set_string", val))
}

/// Sets `size` bytes at `value`, read as a value of the attribute's type.
///
/// # Safety
/// `value` is NULL or points to `size` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_set(attr: cali_id_t, value: *const c_void, size: usize) {
    const ENTRY: &str = "cali_set";
    guard(ENTRY, (), || {
        let Some(c) = cali() else { return };
        let Some(a) = attribute(ENTRY, c, attr) else { return };
        if value.is_null() {
            log::error(format_args!("{ENTRY}: NULL value, call ignored"));
            return;
        }
        // SAFETY: `size` readable bytes per the caller; the copy is taken
        // before the call returns.
        let v = unsafe { to_variant(&from_raw(a.attr_type(), value, size)) };
        c.set(a, ValueKey::from_variant(&v));
    })
}

/// Begins any value on attribute `attr` (an extension the header-only
/// C++ `cali::Annotation` uses for values the typed calls cannot carry,
/// such as 64-bit and unsigned integers).
///
/// # Safety
/// A string or blob `value` points to its data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_begin_variant(attr: cali_id_t, value: cali_variant_t) {
    // SAFETY: per the caller.
    update("cali_begin_variant", attr, Op::Begin, || Some(ValueKey::from_variant(&unsafe { to_variant(&value) })))
}

/// Sets any value on attribute `attr` (see [`cali_begin_variant`]).
///
/// # Safety
/// A string or blob `value` points to its data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_set_variant(attr: cali_id_t, value: cali_variant_t) {
    // SAFETY: per the caller.
    update("cali_set_variant", attr, Op::Set, || Some(ValueKey::from_variant(&unsafe { to_variant(&value) })))
}

/// Ends the innermost value of attribute `attr` (no value check).
#[unsafe(no_mangle)]
pub extern "C" fn cali_end(attr: cali_id_t) {
    guard("cali_end", (), || {
        let Some(c) = cali() else { return };
        if let Some(a) = attribute("cali_end", c, attr) {
            c.end(a, None);
        }
    })
}

/// Ends the innermost value of attribute `attr`, which must be the string
/// `val`: a mismatch is a stack error, as for `cali_end_region`.
///
/// # Safety
/// `val` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_safe_end_string(attr: cali_id_t, val: *const c_char) {
    const ENTRY: &str = "cali_safe_end_string";
    guard(ENTRY, (), || {
        let Some(c) = cali() else { return };
        if let (Some(a), Some(expect)) = (attribute(ENTRY, c, attr), string_value(ENTRY, val)) {
            c.end(a, Some(expect));
        }
    })
}

/// Ends the innermost value of attribute `attr`, which must be `val`
/// (any type): the C++ `Caliper::end_with_value_check`. A mismatch is a
/// stack error, as for `cali_end_region`.
///
/// # Safety
/// A string or blob `val` points to its data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_safe_end_variant(attr: cali_id_t, val: cali_variant_t) {
    const ENTRY: &str = "cali_safe_end_variant";
    guard(ENTRY, (), || {
        let Some(c) = cali() else { return };
        if let Some(a) = attribute(ENTRY, c, attr) {
            // SAFETY: per the caller.
            c.end(a, Some(ValueKey::from_variant(&unsafe { to_variant(&val) })));
        }
    })
}

/// Replaces the value of the as-value attribute `attr` with `val` and
/// returns the value it had (empty if none): the C++ `Caliper::exchange`.
/// The reference exchanges only as-value attributes; for another one this
/// is logged and nothing changes. Get and set happen on the blackboard of
/// the attribute's scope: on the calling thread's, nothing can come
/// between them; on the process's, another thread's update can, as it
/// could between any two calls of the program. The new value is set as by
/// `cali_set`, so channels see the update as a set event unless the
/// attribute skips events (the reference's exchange raises none).
///
/// # Safety
/// A string or blob `val` points to its data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_exchange(attr: cali_id_t, val: cali_variant_t) -> cali_variant_t {
    const ENTRY: &str = "cali_exchange";
    guard(ENTRY, cali_variant_t::default(), || {
        let Some(c) = cali() else { return cali_variant_t::default() };
        let Some(a) = attribute(ENTRY, c, attr) else { return cali_variant_t::default() };
        if !a.is_asvalue() {
            log::error(format_args!("{ENTRY}: attribute {attr} is not as-value, nothing exchanged"));
            return cali_variant_t::default();
        }
        // SAFETY: per the caller.
        let value = ValueKey::from_variant(&unsafe { to_variant(&val) });
        if value.attr_type() != a.attr_type() {
            log::error(format_args!(
                "{ENTRY}: attribute type mismatch: {} value for {} attribute {attr}",
                value.attr_type().name(),
                a.attr_type().name()
            ));
            return cali_variant_t::default();
        }
        let old = c.get(a);
        c.set(a, value);
        old.map(|v| from_variant(&v)).unwrap_or_default()
    })
}

/// Calls `f` with a by-name call's attribute name, after the runtime
/// check; NULL names are logged.
fn by_name(entry: &str, name: *const c_char, f: impl FnOnce(&str)) {
    guard(entry, (), || {
        // SAFETY: the C API passes NUL-terminated names (NULL is checked).
        if let (Some(name), Some(_)) = (unsafe { text(entry, name) }, cali()) {
            f(&name)
        }
    })
}

/// A string value argument of a by-name call, owned; NULL is logged.
fn owned(entry: &str, val: *const c_char) -> Option<String> {
    // SAFETY: the C API passes NUL-terminated strings (NULL is checked).
    unsafe { text(entry, val) }.map(|s| s.into_owned())
}

macro_rules! by_name_functions {
    ($($(#[$doc:meta])* $func:ident($($arg:ident: $ty:ty)?) => $call:ident($conv:expr);)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// The name (and a string value) are NULL or NUL-terminated strings.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $func(name: *const c_char $(, $arg: $ty)?) {
            const ENTRY: &str = stringify!($func);
            by_name(ENTRY, name, |name| {
                let conv: fn(&str, $($ty)?) -> Option<Variant> = $conv;
                if let Some(v) = conv(ENTRY, $($arg)?) {
                    $call(name, v)
                }
            })
        }
    )*};
}

by_name_functions! {
    /// Begins `true` on a boolean attribute `name` (deprecated in the reference).
    cali_begin_byname() => begin_by_name(|_| Some(Variant::Bool(true)));
    /// Begins a double value on attribute `name` (created with default properties).
    cali_begin_double_byname(val: f64) => begin_by_name(|_, v| Some(Variant::Double(v)));
    /// Begins an int value on attribute `name`.
    cali_begin_int_byname(val: c_int) => begin_by_name(|_, v| Some(Variant::Int(i64::from(v))));
    /// Begins a string value on attribute `name`.
    cali_begin_string_byname(val: *const c_char) => begin_by_name(|e, v| owned(e, v).map(Variant::from));
    /// Sets a double value on attribute `name` (created unaligned).
    cali_set_double_byname(val: f64) => set_by_name(|_, v| Some(Variant::Double(v)));
    /// Sets an int value on attribute `name`.
    cali_set_int_byname(val: c_int) => set_by_name(|_, v| Some(Variant::Int(i64::from(v))));
    /// Sets a string value on attribute `name`.
    cali_set_string_byname(val: *const c_char) => set_by_name(|e, v| owned(e, v).map(Variant::from));
    /// Sets the global (run metadata) `name` to a double.
    cali_set_global_double_byname(val: f64) => set_global(|_, v| Some(Variant::Double(v)));
    /// Sets the global `name` to an int.
    cali_set_global_int_byname(val: c_int) => set_global(|_, v| Some(Variant::Int(i64::from(v))));
    /// Sets the global `name` to a string.
    cali_set_global_string_byname(val: *const c_char) => set_global(|e, v| owned(e, v).map(Variant::from));
    /// Sets the global `name` to an unsigned int.
    cali_set_global_uint_byname(val: u64) => set_global(|_, v| Some(Variant::Uint(v)));
}

/// Ends the innermost value of attribute `name`; an unknown name is
/// ignored.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_end_byname(name: *const c_char) {
    by_name("cali_end_byname", name, end_by_name)
}

/// The innermost value of attribute `attr` on the calling thread (or the
/// process, for process-scope attributes), or an empty variant.
#[unsafe(no_mangle)]
pub extern "C" fn cali_get(attr: cali_id_t) -> cali_variant_t {
    guard("cali_get", cali_variant_t::default(), || {
        let Some(c) = cali() else { return cali_variant_t::default() };
        let value = attribute("cali_get", c, attr).and_then(|a| c.get(a));
        value.map(|v| from_variant(&v)).unwrap_or_default()
    })
}

/// The value of attribute `attr` on channel `chn`'s own blackboard (its
/// name, start time, run metadata), or an empty variant.
#[unsafe(no_mangle)]
pub extern "C" fn cali_channel_get(chn: cali_id_t, attr: cali_id_t) -> cali_variant_t {
    const ENTRY: &str = "cali_channel_get";
    guard(ENTRY, cali_variant_t::default(), || {
        let Some((c, channel)) = channel(ENTRY, chn) else { return cali_variant_t::default() };
        let value = attribute(ENTRY, c, attr).and_then(|a| c.channel_get(&channel, a));
        value.map(|v| from_variant(&v)).unwrap_or_default()
    })
}

/// The innermost region name (of any nested attribute) on the calling
/// thread, or `alt`.
#[unsafe(no_mangle)]
pub extern "C" fn cali_get_current_region_or(alt: *const c_char) -> *const c_char {
    guard("cali_get_current_region_or", alt, || match cali().and_then(|c| c.current_region()) {
        Some(Variant::Str(s)) => static_cstr(&s).as_ptr(),
        _ => alt,
    })
}
