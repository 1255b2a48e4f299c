//! The C wrappers of the reference's `cali::Annotation` and
//! `cali::ScopeAnnotation` classes (`wrapAnnotation.h`,
//! `wrapScopeAnnotation.h`), which its Fortran module calls: objects in
//! Shroud capsules (see `capsule`).
//!
//! An annotation's attribute is created on its first begin or set, with
//! that value's type, as in C++; a later value of another type is dropped
//! (an int given to a double or uint attribute is converted).

use crate::capsule::{Capsule, Class, fill, get, take};
use crate::entry::{guard, text};
use crate::setup::cali;
use caliper_data::{Properties, Variant};
use runtime::Annotation;
use std::ffi::{c_char, c_int};

impl Class for Annotation {
    const NAME: &'static str = "Annotation";
    const IDTOR: c_int = 2;
}

/// What a `cali_ScopeAnnotation` capsule holds: the region it began is
/// open while the capsule is filled.
struct Scope;

impl Class for Scope {
    const NAME: &'static str = "ScopeAnnotation";
    const IDTOR: c_int = 3;
}

/// Creates an annotation of attribute `name` with properties `props` in
/// `rv`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `rv` is NULL or a capsule.
unsafe fn new_annotation(entry: &str, name: *const c_char, props: c_int, rv: *mut Capsule) -> *mut Capsule {
    guard(entry, rv, || {
        // SAFETY: per the caller.
        let Some(name) = (unsafe { text(entry, name) }) else { return rv };
        let annotation = Annotation::with_properties(&name, Properties::from_bits(props as u32));
        // SAFETY: per the caller.
        unsafe { fill(entry, rv, annotation) }
    })
}

/// An annotation of attribute `name` (default properties), in the
/// caller's capsule `SHC_rv`; returns `SHC_rv`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `rv` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_new(name: *const c_char, rv: *mut Capsule) -> *mut Capsule {
    // SAFETY: per the caller.
    unsafe { new_annotation("cali_Annotation_new", name, 0, rv) }
}

/// An annotation of attribute `name` created with properties `opt`
/// (`CALI_ATTR_*` flags), in the caller's capsule `SHC_rv`.
///
/// # Safety
/// As [`cali_Annotation_new`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_new_with_properties(
    name: *const c_char,
    opt: c_int,
    rv: *mut Capsule,
) -> *mut Capsule {
    // SAFETY: per the caller.
    unsafe { new_annotation("cali_Annotation_new_with_properties", name, opt, rv) }
}

/// Deletes the annotation (an open value stays open, as in C++).
///
/// # Safety
/// `cap` is NULL or a capsule (zeroed or filled by a `_new` function).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_delete(cap: *mut Capsule) {
    guard("cali_Annotation_delete", (), || {
        // SAFETY: per the caller.
        drop(unsafe { take::<Annotation>("cali_Annotation_delete", cap) });
    })
}

#[derive(Copy, Clone)]
enum Op {
    Begin,
    Set,
}

/// Begins or sets `value` on the annotation in `cap`.
///
/// # Safety
/// `cap` is NULL or a capsule.
unsafe fn update(entry: &str, cap: *mut Capsule, op: Op, value: impl FnOnce() -> Option<Variant>) {
    guard(entry, (), || {
        if cali().is_none() {
            return;
        }
        // SAFETY: per the caller.
        let (Some(annotation), Some(value)) = (unsafe { get::<Annotation>(entry, cap) }, value()) else { return };
        match op {
            // Not ended here: the caller ends it with cali_Annotation_end.
            Op::Begin => std::mem::forget(annotation.begin(value)),
            Op::Set => annotation.set(value),
        }
    })
}

/// Begins the int value `data`.
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_begin_int(cap: *mut Capsule, data: c_int) {
    // SAFETY: per the caller.
    unsafe { update("cali_Annotation_begin_int", cap, Op::Begin, || Some(Variant::Int(data.into()))) }
}

/// Begins the string value `data`.
///
/// # Safety
/// `cap` is NULL or a capsule; `data` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_begin_string(cap: *mut Capsule, data: *const c_char) {
    const ENTRY: &str = "cali_Annotation_begin_string";
    // SAFETY: per the caller.
    unsafe { update(ENTRY, cap, Op::Begin, || text(ENTRY, data).map(|s| Variant::string(&s))) }
}

/// Sets the int value `data` (replacing the innermost value).
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_set_int(cap: *mut Capsule, data: c_int) {
    // SAFETY: per the caller.
    unsafe { update("cali_Annotation_set_int", cap, Op::Set, || Some(Variant::Int(data.into()))) }
}

/// Sets the string value `data` (replacing the innermost value).
///
/// # Safety
/// `cap` is NULL or a capsule; `data` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_set_string(cap: *mut Capsule, data: *const c_char) {
    const ENTRY: &str = "cali_Annotation_set_string";
    // SAFETY: per the caller.
    unsafe { update(ENTRY, cap, Op::Set, || text(ENTRY, data).map(|s| Variant::string(&s))) }
}

/// Ends the annotation's innermost value.
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_Annotation_end(cap: *mut Capsule) {
    guard("cali_Annotation_end", (), || {
        // SAFETY: per the caller.
        if cali().is_some()
            && let Some(annotation) = unsafe { get::<Annotation>("cali_Annotation_end", cap) }
        {
            annotation.end();
        }
    })
}

/// Begins region `name` and fills the caller's capsule `SHC_rv` with the
/// scope that [`cali_ScopeAnnotation_end`] ends.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `rv` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ScopeAnnotation_begin(name: *const c_char, rv: *mut Capsule) -> *mut Capsule {
    const ENTRY: &str = "cali_ScopeAnnotation_begin";
    guard(ENTRY, rv, || {
        // SAFETY: per the caller.
        let Some(name) = (unsafe { text(ENTRY, name) }) else { return rv };
        if rv.is_null() {
            // Nothing could end the region.
            runtime::log::error(format_args!("{ENTRY}: NULL capsule, call ignored"));
            return rv;
        }
        if let Some(c) = cali() {
            c.begin(c.builtins().region, runtime::value::ValueKey::string(&name));
        }
        // SAFETY: per the caller.
        unsafe { fill(ENTRY, rv, Scope) }
    })
}

/// Ends the region the scope began (the innermost region, unchecked, as
/// the C++ destructor does) and empties the capsule.
///
/// # Safety
/// `cap` is NULL or a capsule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_ScopeAnnotation_end(cap: *mut Capsule) {
    const ENTRY: &str = "cali_ScopeAnnotation_end";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        if unsafe { take::<Scope>(ENTRY, cap) }.is_some()
            && let Some(c) = cali()
        {
            c.end(c.builtins().region, None);
        }
    })
}
