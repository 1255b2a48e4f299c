//! `cali_variant_t` (`caliper/common/cali_variant.h`): the reference's
//! 16-byte value, its helper functions, and conversion to and from the
//! runtime's [`Variant`].
//!
//! As in the reference, a variant does not own string or blob data: a
//! variant the library returns points to a copy that lives as long as the
//! process, with a terminating NUL counted in the size (the reference's
//! strings made from C strings carry it too).

use crate::entry::{guard, static_cstr};
use caliper_data::text::Blob;
use caliper_data::{AttrType, Variant};
use std::cmp::Ordering;
use std::ffi::{c_char, c_int, c_void};

/// `cali_variant_t`: `type_and_size` (low byte the type; for strings and
/// blobs bits 8-31 a tiny hash and the top 32 bits the size) and an 8-byte
/// value union (bool, int64, uint64, double, type or pointer).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct cali_variant_t {
    pub type_and_size: u64,
    pub value: u64,
}

const EMPTY: cali_variant_t = cali_variant_t { type_and_size: 0, value: 0 };

fn type_of(v: &cali_variant_t) -> AttrType {
    AttrType::from_code((v.type_and_size & 0xff) as u8).unwrap_or(AttrType::Inv)
}

fn is_blob(ty: AttrType) -> bool {
    matches!(ty, AttrType::String | AttrType::Usr)
}

/// The reference's tiny hash of a blob: its first, middle and last byte,
/// so that unequal blobs usually differ in `type_and_size` already.
fn blob_word(ty: AttrType, bytes: &[u8]) -> u64 {
    let hash = match bytes {
        [] => 0,
        b => u64::from(b[0]) | u64::from(b[b.len() / 2]) << 8 | u64::from(b[b.len() - 1]) << 16,
    };
    (ty as u64) | hash << 8 | (bytes.len() as u64) << 32
}

fn scalar(ty: AttrType, value: u64) -> cali_variant_t {
    cali_variant_t { type_and_size: ty as u64, value }
}

/// The string or blob bytes a variant points to.
///
/// # Safety
/// A string or blob variant points to at least its size in bytes.
unsafe fn blob_bytes<'a>(v: &cali_variant_t) -> &'a [u8] {
    let size = (v.type_and_size >> 32) as usize;
    if v.value == 0 || size == 0 {
        return &[];
    }
    // SAFETY: per the caller.
    unsafe { std::slice::from_raw_parts(v.value as *const u8, size) }
}

/// A C variant as a runtime value (string and blob data copied; a
/// string's trailing NUL dropped).
///
/// # Safety
/// A string or blob variant points to at least its size in bytes.
pub(crate) unsafe fn to_variant(v: &cali_variant_t) -> Variant {
    match type_of(v) {
        AttrType::Inv => Variant::Empty,
        AttrType::Usr => Variant::Usr(Blob::new(unsafe { blob_bytes(v) })),
        AttrType::String => {
            let bytes = unsafe { blob_bytes(v) };
            let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
            Variant::string(&String::from_utf8_lossy(bytes))
        }
        AttrType::Int => Variant::Int(v.value as i64),
        AttrType::Uint => Variant::Uint(v.value),
        AttrType::Addr => Variant::Addr(v.value),
        AttrType::Ptr => Variant::Ptr(v.value),
        AttrType::Double => Variant::Double(f64::from_bits(v.value)),
        AttrType::Bool => Variant::Bool(v.value & 0xff != 0),
        AttrType::Type => AttrType::from_code(v.value as u8).map_or(Variant::Empty, Variant::Type),
    }
}

/// A runtime value as a C variant; strings and blobs point to copies that
/// live as long as the process.
pub(crate) fn from_variant(v: &Variant) -> cali_variant_t {
    match v {
        Variant::Empty => EMPTY,
        Variant::Str(s) => {
            let c = static_cstr(s);
            let bytes = c.to_bytes_with_nul();
            cali_variant_t { type_and_size: blob_word(AttrType::String, bytes), value: c.as_ptr() as u64 }
        }
        Variant::Usr(b) => {
            let copy: &'static [u8] = Box::leak(b.as_bytes().to_vec().into_boxed_slice());
            cali_variant_t { type_and_size: blob_word(AttrType::Usr, copy), value: copy.as_ptr() as u64 }
        }
        Variant::Int(i) => scalar(AttrType::Int, *i as u64),
        Variant::Uint(u) => scalar(AttrType::Uint, *u),
        Variant::Addr(a) => scalar(AttrType::Addr, *a),
        Variant::Ptr(p) => scalar(AttrType::Ptr, *p),
        Variant::Double(d) => scalar(AttrType::Double, d.to_bits()),
        Variant::Bool(b) => scalar(AttrType::Bool, u64::from(*b)),
        Variant::Type(t) => scalar(AttrType::Type, *t as u64),
    }
}

/// A value of type `ty` from `size` raw bytes at `ptr` (`cali_set`,
/// `cali_make_variant`): strings and blobs point to the data, other types
/// copy up to 8 bytes of it.
///
/// # Safety
/// `ptr` is NULL or points to `size` readable bytes.
pub(crate) unsafe fn from_raw(ty: AttrType, ptr: *const c_void, size: usize) -> cali_variant_t {
    if ptr.is_null() {
        return EMPTY;
    }
    if is_blob(ty) {
        // SAFETY: per the caller.
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, size) };
        return cali_variant_t { type_and_size: blob_word(ty, bytes), value: ptr as u64 };
    }
    let mut raw = [0u8; 8];
    let n = size.min(8);
    // SAFETY: per the caller; at most 8 bytes into an 8-byte buffer.
    unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, raw.as_mut_ptr(), n) };
    let mut value = u64::from_le_bytes(raw);
    // Sign-extend narrower signed integers (an `int` given to an int attribute).
    if ty == AttrType::Int && (1..8).contains(&n) && raw[n - 1] & 0x80 != 0 {
        value |= u64::MAX << (8 * n);
    }
    scalar(ty, value)
}

fn set_ok(ok: *mut bool, value: bool) {
    if !ok.is_null() {
        // SAFETY: a non-NULL `ok` points to a bool, per the C API.
        unsafe { *ok = value };
    }
}

/// The variant as a runtime value, for conversions (strings parsed).
fn convertible(v: &cali_variant_t) -> Variant {
    // SAFETY: variants given to the library point to their data.
    let value = unsafe { to_variant(v) };
    match &value {
        Variant::Str(s) => {
            let s = s.trim();
            [AttrType::Int, AttrType::Uint, AttrType::Double, AttrType::Bool]
                .into_iter()
                .find_map(|t| Variant::parse(t, s).ok())
                .unwrap_or(Variant::Empty)
        }
        _ => value,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_empty_variant() -> cali_variant_t {
    EMPTY
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_is_empty(v: cali_variant_t) -> bool {
    v.type_and_size == 0
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_get_type(v: cali_variant_t) -> c_int {
    type_of(&v) as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_get_size(v: cali_variant_t) -> usize {
    match type_of(&v) {
        AttrType::Inv => 0,
        AttrType::String | AttrType::Usr => (v.type_and_size >> 32) as usize,
        AttrType::Bool => size_of::<bool>(),
        AttrType::Type => size_of::<c_int>(),
        _ => 8,
    }
}

/// The address of the value: the data of strings and blobs, the value
/// union itself for other types.
///
/// # Safety
/// `v` is NULL or points to a variant.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_variant_get_data(v: *const cali_variant_t) -> *const c_void {
    if v.is_null() {
        return std::ptr::null();
    }
    // SAFETY: per the caller.
    let r = unsafe { &*v };
    match type_of(r) {
        AttrType::Inv => std::ptr::null(),
        AttrType::String | AttrType::Usr => r.value as *const c_void,
        _ => &r.value as *const u64 as *const c_void,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_get_ptr(v: cali_variant_t) -> *mut c_void {
    if type_of(&v) == AttrType::Ptr { v.value as *mut c_void } else { std::ptr::null_mut() }
}

/// # Safety
/// `ptr` is NULL or points to `size` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_make_variant(ty: c_int, ptr: *const c_void, size: usize) -> cali_variant_t {
    match AttrType::from_code(ty as u8).filter(|_| (0..=9).contains(&ty)) {
        // SAFETY: per the caller.
        Some(t) => unsafe { from_raw(t, ptr, size) },
        None => EMPTY,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_bool(value: bool) -> cali_variant_t {
    scalar(AttrType::Bool, u64::from(value))
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_int(value: c_int) -> cali_variant_t {
    scalar(AttrType::Int, i64::from(value) as u64)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_int64(value: i64) -> cali_variant_t {
    scalar(AttrType::Int, value as u64)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_uint(value: u64) -> cali_variant_t {
    scalar(AttrType::Uint, value)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_double(value: f64) -> cali_variant_t {
    scalar(AttrType::Double, value.to_bits())
}

/// A string variant pointing to `value` (not copied), its NUL counted.
///
/// # Safety
/// `value` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_make_variant_from_string(value: *const c_char) -> cali_variant_t {
    if value.is_null() {
        return EMPTY;
    }
    // SAFETY: per the caller.
    let len = unsafe { libc::strlen(value) } + 1;
    // SAFETY: `len` bytes (with the NUL) are readable.
    unsafe { from_raw(AttrType::String, value as *const c_void, len) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_type(value: c_int) -> cali_variant_t {
    scalar(AttrType::Type, value as u64)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_make_variant_from_ptr(value: *mut c_void) -> cali_variant_t {
    scalar(AttrType::Ptr, value as u64)
}

/// Converts a variant with `convert`; `ok` (if not NULL) says whether it
/// could.
fn convert<T: Default>(v: cali_variant_t, ok: *mut bool, convert: impl FnOnce(&Variant) -> Option<T>) -> T {
    guard("cali_variant_to_*", T::default(), || {
        let r = convert(&convertible(&v));
        set_ok(ok, r.is_some());
        r.unwrap_or_default()
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_to_int(v: cali_variant_t, ok: *mut bool) -> c_int {
    convert(v, ok, |x| x.to_i64().and_then(|i| c_int::try_from(i).ok()))
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_to_int64(v: cali_variant_t, ok: *mut bool) -> i64 {
    convert(v, ok, Variant::to_i64)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_to_uint(v: cali_variant_t, ok: *mut bool) -> u64 {
    convert(v, ok, Variant::to_u64)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_to_double(v: cali_variant_t, ok: *mut bool) -> f64 {
    convert(v, ok, Variant::to_f64)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_to_bool(v: cali_variant_t, ok: *mut bool) -> bool {
    convert(v, ok, Variant::to_bool)
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_to_type(v: cali_variant_t, ok: *mut bool) -> c_int {
    convert(v, ok, |x| match x {
        Variant::Type(t) => Some(*t as c_int),
        _ => None,
    })
}

/// Orders by type code first, then by value (strings and blobs bytewise).
#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_compare(lhs: cali_variant_t, rhs: cali_variant_t) -> c_int {
    guard("cali_variant_compare", 0, || {
        // SAFETY: variants given to the library point to their data.
        let (l, r) = unsafe { (to_variant(&lhs), to_variant(&rhs)) };
        match l.cmp(&r) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cali_variant_eq(lhs: cali_variant_t, rhs: cali_variant_t) -> bool {
    if lhs.type_and_size != rhs.type_and_size {
        return false;
    }
    if is_blob(type_of(&lhs)) {
        // SAFETY: variants given to the library point to their data.
        return unsafe { blob_bytes(&lhs) == blob_bytes(&rhs) };
    }
    lhs.value == rhs.value
}

/// LEB128 encoding, as the reference's compact formats use.
pub(crate) fn write_vl(mut value: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads a LEB128 number at `*pos`, advancing it; `None` if `buf` ends
/// first or the number is too long.
pub(crate) fn read_vl(buf: &[u8], pos: &mut usize) -> Option<u64> {
    read_vl_with(|i| buf.get(i).copied(), pos)
}

/// [`read_vl`] over any byte source: reads only the bytes it needs.
fn read_vl_with(byte_at: impl Fn(usize) -> Option<u8>, pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = byte_at(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The longest packed variant: two 10-byte LEB128 numbers.
pub(crate) const MAX_PACKED: usize = 20;

pub(crate) fn pack(v: &cali_variant_t, out: &mut Vec<u8>) {
    write_vl(v.type_and_size, out);
    write_vl(v.value, out);
}

pub(crate) fn unpack(buf: &[u8], pos: &mut usize) -> Option<cali_variant_t> {
    Some(cali_variant_t { type_and_size: read_vl(buf, pos)?, value: read_vl(buf, pos)? })
}

/// Packs `v` into `buf` (at least 20 bytes); returns the bytes written.
/// As in the reference, string data is not copied: only meaningful in
/// this process.
///
/// # Safety
/// `buf` is NULL or has room for 20 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_variant_pack(v: cali_variant_t, buf: *mut u8) -> usize {
    if buf.is_null() {
        return 0;
    }
    let mut out = Vec::with_capacity(MAX_PACKED);
    pack(&v, &mut out);
    // SAFETY: per the caller, and `out` holds at most 20 bytes.
    unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), buf, out.len()) };
    out.len()
}

/// Unpacks a variant packed by [`cali_variant_pack`]; adds the bytes read
/// to `inc` and sets `ok` (each if not NULL).
///
/// # Safety
/// `buf` is NULL or holds a packed variant.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_variant_unpack(buf: *const u8, inc: *mut usize, ok: *mut bool) -> cali_variant_t {
    if buf.is_null() {
        set_ok(ok, false);
        return EMPTY;
    }
    // SAFETY: the reader stops at the end of the encoding, which is in
    // the buffer per the caller.
    let byte_at = |i: usize| (i < MAX_PACKED).then(|| unsafe { *buf.add(i) });
    let mut pos = 0;
    let v = read_vl_with(byte_at, &mut pos)
        .and_then(|type_and_size| Some(cali_variant_t { type_and_size, value: read_vl_with(byte_at, &mut pos)? }));
    set_ok(ok, v.is_some());
    if !inc.is_null() {
        // SAFETY: per the C API. Wrapping, as C's size_t does: an
        // overflow check must not fire (and abort the program) in a call
        // with no panic guard.
        unsafe { *inc = (*inc).wrapping_add(pos) };
    }
    v.unwrap_or(EMPTY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        for v in [
            Variant::Int(-3),
            Variant::Uint(1 << 40),
            Variant::Double(2.5),
            Variant::Bool(true),
            Variant::string("a=b,c"),
            Variant::Type(AttrType::Double),
            Variant::Empty,
        ] {
            assert_eq!(unsafe { to_variant(&from_variant(&v)) }, v);
        }
    }

    #[test]
    fn narrow_ints_are_sign_extended() {
        let x: i32 = -7;
        let v = unsafe { from_raw(AttrType::Int, &x as *const i32 as *const c_void, 4) };
        assert_eq!(unsafe { to_variant(&v) }, Variant::Int(-7));
    }

    #[test]
    fn pack_round_trip() {
        let v = cali_make_variant_from_double(-1.25);
        let mut buf = [0u8; MAX_PACKED];
        let n = unsafe { cali_variant_pack(v, buf.as_mut_ptr()) };
        let (mut inc, mut ok) = (0, false);
        let back = unsafe { cali_variant_unpack(buf.as_ptr(), &mut inc, &mut ok) };
        assert!(ok);
        assert_eq!(inc, n);
        assert!(cali_variant_eq(v, back));
    }
}
