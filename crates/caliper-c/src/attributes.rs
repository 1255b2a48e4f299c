//! Attributes: creation, lookup by name and by id, and loop iteration
//! attributes. (The ids of built-in attributes that C code reads from
//! global variables are published by `setup`.)

use crate::entry::{CALI_INV_ID, cali_id_t, guard, static_cstr, text};
use crate::setup::cali;
use crate::variant::{cali_variant_t, from_variant, to_variant};
use caliper_data::{AttrType, Properties, Variant};
use runtime::log;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// The version of the Caliper API implemented, e.g. `2.15.0` (that of
/// `cali.caliper.version` and `CALIPER_VERSION`).
#[unsafe(no_mangle)]
pub extern "C" fn cali_caliper_version() -> *const c_char {
    static VERSION: OnceLock<&'static CStr> = OnceLock::new();
    VERSION.get_or_init(|| static_cstr(runtime::runtime::API_VERSION)).as_ptr()
}

fn create(entry: &str, name: *const c_char, ty: c_int, props: c_int, metadata: &[(u64, Variant)]) -> cali_id_t {
    // SAFETY: the C API passes a NUL-terminated name (NULL is checked).
    let Some(name) = (unsafe { text(entry, name) }) else { return CALI_INV_ID };
    let Some(ty) = AttrType::from_code(ty as u8).filter(|_| (0..=9).contains(&ty)) else {
        log::error(format_args!("{entry}: invalid type {ty} for attribute \"{name}\""));
        return CALI_INV_ID;
    };
    let Some(c) = cali() else { return CALI_INV_ID };
    c.create_attribute(&name, ty, Properties::from_bits(props as u32), metadata).id()
}

/// Creates attribute `name` (or returns the existing one's id).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_create_attribute(name: *const c_char, ty: c_int, props: c_int) -> cali_id_t {
    guard("cali_create_attribute", CALI_INV_ID, || create("cali_create_attribute", name, ty, props, &[]))
}

/// Creates attribute `name` with `n` metadata entries (meta-attribute
/// ids and values).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; with `n > 0`, the lists
/// hold `n` elements each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_create_attribute_with_metadata(
    name: *const c_char,
    ty: c_int,
    props: c_int,
    n: c_int,
    meta_attr_list: *const cali_id_t,
    meta_val_list: *const cali_variant_t,
) -> cali_id_t {
    const ENTRY: &str = "cali_create_attribute_with_metadata";
    guard(ENTRY, CALI_INV_ID, || {
        let n = usize::try_from(n).unwrap_or(0);
        if n > 0 && (meta_attr_list.is_null() || meta_val_list.is_null()) {
            log::error(format_args!("{ENTRY}: NULL metadata lists, metadata ignored"));
            return create(ENTRY, name, ty, props, &[]);
        }
        let metadata: Vec<(u64, Variant)> = (0..n)
            // SAFETY: both lists hold `n` elements per the caller.
            .map(|i| unsafe { (*meta_attr_list.add(i), to_variant(&*meta_val_list.add(i))) })
            .collect();
        create(ENTRY, name, ty, props, &metadata)
    })
}

/// The id of attribute `name`, or `CALI_INV_ID`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_find_attribute(name: *const c_char) -> cali_id_t {
    guard("cali_find_attribute", None, || {
        // SAFETY: per the caller.
        let name = unsafe { text("cali_find_attribute", name) }?;
        cali()?.find_attribute(&name).map(|a| a.id())
    })
    .unwrap_or(CALI_INV_ID)
}

/// The name of attribute `id` (a string that lives as long as the
/// process), or NULL.
#[unsafe(no_mangle)]
pub extern "C" fn cali_attribute_name(id: cali_id_t) -> *const c_char {
    guard("cali_attribute_name", std::ptr::null(), || {
        cali().and_then(|c| c.attribute_info(id)).map_or(std::ptr::null(), |info| static_cstr(&info.name).as_ptr())
    })
}

/// The type of attribute `id`, or `CALI_TYPE_INV`.
#[unsafe(no_mangle)]
pub extern "C" fn cali_attribute_type(id: cali_id_t) -> c_int {
    guard("cali_attribute_type", 0, || {
        cali().and_then(|c| c.attribute_info(id)).map_or(0, |info| info.attr.attr_type() as c_int)
    })
}

/// The effective properties of attribute `id` (0 if there is none).
#[unsafe(no_mangle)]
pub extern "C" fn cali_attribute_properties(id: cali_id_t) -> c_int {
    guard("cali_attribute_properties", 0, || {
        cali().and_then(|c| c.attribute_info(id)).map_or(0, |info| info.attr.properties().bits() as c_int)
    })
}

/// The attribute `iteration#<name>` of a loop (int, as-value, with
/// `class.iteration=true`).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_make_loop_iteration_attribute(name: *const c_char) -> cali_id_t {
    const ENTRY: &str = "cali_make_loop_iteration_attribute";
    guard(ENTRY, None, || {
        // SAFETY: per the caller.
        let name = unsafe { text(ENTRY, name) }?;
        Some(cali()?.iteration_attribute(&name).id())
    })
    .unwrap_or(CALI_INV_ID)
}

/// The value of metadata attribute `meta_attr` on attribute `attr`, or
/// an empty variant: the C++ `Attribute::get`.
#[unsafe(no_mangle)]
pub extern "C" fn cali_attribute_metadata(attr: cali_id_t, meta_attr: cali_id_t) -> cali_variant_t {
    guard("cali_attribute_metadata", cali_variant_t::default(), || {
        let info = cali().and_then(|c| c.attribute_info(attr));
        let value = info.and_then(|i| i.metadata.into_iter().find(|(m, _)| *m == meta_attr).map(|(_, v)| v));
        value.map(|v| from_variant(&v)).unwrap_or_default()
    })
}

/// `cali_id_fn`: receives one id.
pub type cali_id_fn = Option<unsafe extern "C" fn(*mut c_void, cali_id_t)>;

/// Hands the id of every attribute of the process to `each`, in creation
/// order: the C++ `Caliper::get_all_attributes`. An attribute's id is
/// that of its name node in the context tree (a node of
/// `cali.attribute.name`, id 8), so the tree is walked for those.
///
/// # Safety
/// `each`, if not NULL, may be called with `user_arg` and must not unwind.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_all_attributes(each: cali_id_fn, user_arg: *mut c_void) {
    const ENTRY: &str = "cali_all_attributes";
    /// The attribute of attribute-name nodes.
    const NAME_ATTR_ID: cali_id_t = 8;
    guard(ENTRY, (), || {
        let Some(each) = each else {
            log::error(format_args!("{ENTRY}: NULL callback, call ignored"));
            return;
        };
        let Some(c) = cali() else { return };
        let ids: Vec<cali_id_t> = (0..c.tree().len())
            .filter(|&id| c.tree().get(id).is_some_and(|n| n.attribute == NAME_ATTR_ID))
            .filter(|&id| c.attribute_info(id).is_some())
            .collect();
        for id in ids {
            // SAFETY: per the caller.
            unsafe { each(user_arg, id) };
        }
    })
}
