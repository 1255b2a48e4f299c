//! Snapshots from C: pushed with trigger information, pulled into a
//! caller's buffer, and unpacked.
//!
//! A pulled snapshot is encoded compactly, as in the reference (only
//! meaningful inside this process: nodes are referred to by id): the
//! number of reference entries and their node ids, then the number of
//! immediate entries and their attribute ids and packed variants, all
//! numbers LEB128.

use crate::channels::channel;
use crate::entry::{cali_id_t, guard};
use crate::setup::cali;
use crate::variant::{MAX_PACKED, cali_variant_t, from_variant, pack, read_vl, to_variant, unpack, write_vl};
use caliper_data::{Entry, Record, Variant};
use runtime::{Caliper, log};
use std::ffi::{c_int, c_void};

/// `cali_entry_proc_fn`: called per entry; returning 0 stops.
pub type cali_entry_proc_fn = Option<unsafe extern "C" fn(*mut c_void, cali_id_t, cali_variant_t) -> c_int>;

/// The reference's limits: 64 trigger entries, 127 entries per record.
const MAX_TRIGGER: usize = 64;
const MAX_ENTRIES: usize = 127;

/// Trigger information from C lists: as-value attributes become immediate
/// entries, the others one context-tree path.
///
/// # Safety
/// With `n > 0` the lists hold `n` elements (NULL lists are checked).
unsafe fn trigger_entries(
    entry: &str,
    c: &Caliper,
    n: c_int,
    attrs: *const cali_id_t,
    vals: *const cali_variant_t,
) -> Vec<Entry> {
    let mut n = usize::try_from(n).unwrap_or(0);
    if n > MAX_TRIGGER {
        log::error(format_args!("{entry}: {n} trigger entries, only the first {MAX_TRIGGER} used"));
        n = MAX_TRIGGER;
    }
    if n > 0 && (attrs.is_null() || vals.is_null()) {
        log::error(format_args!("{entry}: NULL trigger lists, no trigger information"));
        return Vec::new();
    }
    let mut entries = Vec::new();
    let mut path = Vec::new();
    for i in 0..n {
        // SAFETY: both lists hold `n` elements per the caller.
        let (id, value) = unsafe { (*attrs.add(i), to_variant(&*vals.add(i))) };
        match c.attribute_info(id) {
            Some(info) if info.attr.is_asvalue() => entries.push(Entry::Immediate(id, value)),
            Some(_) => path.push((id, value)),
            None => log::error(format_args!("{entry}: invalid attribute id {id}, entry ignored")),
        }
    }
    if let Some(node) = c.tree().get_path(&path, None) {
        entries.insert(0, Entry::Reference(node));
    }
    entries
}

/// Takes a snapshot on every active channel with the given trigger
/// information. `scope` is accepted and ignored, as in the reference.
///
/// # Safety
/// With `n > 0` the lists hold `n` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_push_snapshot(
    _scope: c_int,
    n: c_int,
    trigger_info_attr_list: *const cali_id_t,
    trigger_info_val_list: *const cali_variant_t,
) {
    const ENTRY: &str = "cali_push_snapshot";
    guard(ENTRY, (), || {
        let Some(c) = cali() else { return };
        // SAFETY: per the caller.
        let trigger = unsafe { trigger_entries(ENTRY, c, n, trigger_info_attr_list, trigger_info_val_list) };
        c.push_snapshot(&trigger);
    })
}

/// Takes a snapshot on channel `chn` (if active).
///
/// # Safety
/// With `n > 0` the lists hold `n` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_channel_push_snapshot(
    chn: cali_id_t,
    _scope: c_int,
    n: c_int,
    trigger_info_attr_list: *const cali_id_t,
    trigger_info_val_list: *const cali_variant_t,
) {
    const ENTRY: &str = "cali_channel_push_snapshot";
    guard(ENTRY, (), || {
        let Some((c, channel)) = channel(ENTRY, chn) else { return };
        // SAFETY: per the caller.
        let trigger = unsafe { trigger_entries(ENTRY, c, n, trigger_info_attr_list, trigger_info_val_list) };
        c.push_snapshot_on(&channel, &trigger);
    })
}

/// Hands an asynchronous event, with the given information entries, to
/// every active channel that takes them (the C++ `Caliper::async_event`;
/// the `async_event` service makes a snapshot of it).
///
/// # Safety
/// With `n > 0` the lists hold `n` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_async_event(
    n: c_int,
    info_attr_list: *const cali_id_t,
    info_val_list: *const cali_variant_t,
) {
    const ENTRY: &str = "cali_async_event";
    guard(ENTRY, (), || {
        let Some(c) = cali() else { return };
        // SAFETY: per the caller.
        let info = unsafe { trigger_entries(ENTRY, c, n, info_attr_list, info_val_list) };
        c.async_event(&info);
    })
}

fn encode(record: &Record) -> Vec<u8> {
    let refs: Vec<u64> = record.refs().take(MAX_ENTRIES).collect();
    let imms: Vec<(u64, &Variant)> = record.immediates().take(MAX_ENTRIES - refs.len()).collect();
    let mut out = Vec::with_capacity(2 + refs.len() * 3 + imms.len() * (3 + MAX_PACKED));
    out.push(refs.len() as u8);
    for id in refs {
        write_vl(id, &mut out);
    }
    out.push(imms.len() as u8);
    for (attr, value) in imms {
        write_vl(attr, &mut out);
        pack(&from_variant(value), &mut out);
    }
    out
}

/// Takes a snapshot of channel `chn` on the calling thread (its context
/// and measurements, not processed) into `buf`. Returns the size the
/// snapshot needs: 0 if none was taken, more than `len` if `buf` was too
/// small (then nothing is written).
///
/// # Safety
/// `buf` is NULL or has room for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_channel_pull_snapshot(chn: cali_id_t, _scope: c_int, len: usize, buf: *mut u8) -> usize {
    const ENTRY: &str = "cali_channel_pull_snapshot";
    guard(ENTRY, 0, || {
        let Some((c, channel)) = channel(ENTRY, chn) else { return 0 };
        let Some(record) = c.pull_snapshot(&channel) else { return 0 };
        // SAFETY: per the caller.
        unsafe { copy_out(&record, len, buf) }
    })
}

/// Copies `record`, encoded as a pulled snapshot, into `buf` if it fits;
/// returns the size it needs.
///
/// # Safety
/// `buf` is NULL or has room for `len` bytes.
unsafe fn copy_out(record: &Record, len: usize, buf: *mut u8) -> usize {
    let bytes = encode(record);
    if bytes.len() <= len && !buf.is_null() {
        // SAFETY: `buf` has room for `len` >= bytes.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len()) };
    }
    bytes.len()
}

/// The run metadata of channel `chn` (the process's and the channel's
/// global entries), encoded as a pulled snapshot into `buf`: the C++
/// `Caliper::get_globals`. Returns the size needed (more than `len`: `buf`
/// too small, nothing written; 0: no such channel).
///
/// # Safety
/// `buf` is NULL or has room for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_channel_pull_globals(chn: cali_id_t, len: usize, buf: *mut u8) -> usize {
    const ENTRY: &str = "cali_channel_pull_globals";
    guard(ENTRY, 0, || {
        let Some((c, channel)) = channel(ENTRY, chn) else { return 0 };
        // SAFETY: per the caller.
        unsafe { copy_out(&c.globals(&channel), len, buf) }
    })
}

/// `cali_record_fn`: receives one record encoded as a pulled snapshot
/// (`len` bytes, valid for the call).
pub type cali_record_fn = Option<unsafe extern "C" fn(*mut c_void, *const u8, usize)>;

/// Flushes channel `chn` without writing its outputs: hands each record
/// it gathered (its buffers are kept) to `proc_fn`, encoded as a pulled
/// snapshot: the C++ `Caliper::flush`. Records of more than 127 entries
/// keep their first 127, the limit of the encoding.
///
/// # Safety
/// `proc_fn`, if not NULL, may be called with `user_arg` and must not
/// unwind.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_channel_flush_records(chn: cali_id_t, proc_fn: cali_record_fn, user_arg: *mut c_void) {
    const ENTRY: &str = "cali_channel_flush_records";
    guard(ENTRY, (), || {
        let Some((c, channel)) = channel(ENTRY, chn) else { return };
        let Some(proc_fn) = proc_fn else {
            log::error(format_args!("{ENTRY}: NULL callback, call ignored"));
            return;
        };
        c.flush(&channel, &mut |record| {
            let bytes = encode(record);
            // SAFETY: per the caller; the bytes outlive the call.
            unsafe { proc_fn(user_arg, bytes.as_ptr(), bytes.len()) };
        });
    })
}

/// One decoded entry: an attribute and its value, innermost first for
/// reference entries (every node up to the root).
struct Decoded {
    entries: Vec<(cali_id_t, cali_variant_t)>,
    len: usize,
}

/// Decodes a pulled snapshot at `buf`; a NULL or malformed buffer is
/// logged as an error of `entry` (the caller's callbacks are then not
/// called, rather than called with garbage).
///
/// # Safety
/// `buf` holds a snapshot written by `cali_channel_pull_snapshot`.
unsafe fn decode(entry: &str, buf: *const u8) -> Option<Decoded> {
    if buf.is_null() {
        log::error(format_args!("{entry}: NULL snapshot buffer"));
        return None;
    }
    let c = cali()?;
    // SAFETY: per the caller.
    let decoded = unsafe { decode_with(c, buf) };
    if decoded.is_none() {
        log::error(format_args!("{entry}: malformed snapshot buffer, call ignored"));
    }
    decoded
}

/// [`decode`], once the runtime is there; `None` if the encoding is
/// malformed.
///
/// # Safety
/// As [`decode`].
unsafe fn decode_with(c: &Caliper, buf: *const u8) -> Option<Decoded> {
    // The encoding is self-delimiting: read its length first, byte by byte.
    let max = 2 + MAX_ENTRIES * (10 + MAX_PACKED);
    // SAFETY: only the bytes of the encoding are read: the scan below
    // stops at its end, and each number read is in it per the caller.
    let bytes = unsafe { std::slice::from_raw_parts(buf, encoded_len(buf, max)?) };
    let mut pos = 0;
    let mut entries = Vec::new();
    let n_refs = *bytes.first()?;
    pos += 1;
    for _ in 0..n_refs {
        let mut node = Some(read_vl(bytes, &mut pos)?);
        while let Some(n) = node.and_then(|id| c.tree().get(id)) {
            entries.push((n.attribute, from_variant(n.value)));
            node = n.parent;
        }
    }
    let n_imm = *bytes.get(pos)?;
    pos += 1;
    for _ in 0..n_imm {
        let attr = read_vl(bytes, &mut pos)?;
        entries.push((attr, unpack(bytes, &mut pos)?));
    }
    Some(Decoded { entries, len: pos })
}

/// The length of the encoding at `buf`, reading it one byte at a time.
///
/// # Safety
/// `buf` holds an encoding of at most `max` bytes.
unsafe fn encoded_len(buf: *const u8, max: usize) -> Option<usize> {
    // SAFETY: the closure is only called for bytes of the encoding.
    let byte = |i: usize| (i < max).then(|| unsafe { *buf.add(i) });
    let skip_vl = |pos: &mut usize| -> Option<()> {
        while byte(*pos)? & 0x80 != 0 {
            *pos += 1;
        }
        *pos += 1;
        Some(())
    };
    let mut pos = 1;
    for _ in 0..byte(0)? {
        skip_vl(&mut pos)?;
    }
    let n_imm = byte(pos)?;
    pos += 1;
    for _ in 0..n_imm {
        for _ in 0..3 {
            skip_vl(&mut pos)?;
        }
    }
    Some(pos)
}

fn add_read(bytes_read: *mut usize, len: usize) {
    if !bytes_read.is_null() {
        // SAFETY: a non-NULL counter points to a size_t, per the C API.
        // Wrapping, as C's size_t does: no overflow check may fire on
        // the caller's counter.
        unsafe { *bytes_read = (*bytes_read).wrapping_add(len) };
    }
}

/// Calls `proc_fn` for every entry of a pulled snapshot (nodes of
/// reference entries innermost first) until it returns 0; adds the
/// snapshot's length to `bytes_read`.
///
/// # Safety
/// `buf` holds a pulled snapshot; `bytes_read` is NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_unpack_snapshot(
    buf: *const u8,
    bytes_read: *mut usize,
    proc_fn: cali_entry_proc_fn,
    user_arg: *mut c_void,
) {
    const ENTRY: &str = "cali_unpack_snapshot";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let Some(decoded) = (unsafe { decode(ENTRY, buf) }) else { return };
        add_read(bytes_read, decoded.len);
        let Some(f) = proc_fn else { return };
        for (attr, value) in decoded.entries {
            // SAFETY: a C callback with the documented signature.
            if unsafe { f(user_arg, attr, value) } == 0 {
                break;
            }
        }
    })
}

/// The first (innermost) value of `attr` in a pulled snapshot, or an
/// empty variant.
///
/// # Safety
/// `buf` holds a pulled snapshot; `bytes_read` is NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_find_first_in_snapshot(
    buf: *const u8,
    attr: cali_id_t,
    bytes_read: *mut usize,
) -> cali_variant_t {
    const ENTRY: &str = "cali_find_first_in_snapshot";
    guard(ENTRY, cali_variant_t::default(), || {
        // SAFETY: per the caller.
        let Some(decoded) = (unsafe { decode(ENTRY, buf) }) else { return cali_variant_t::default() };
        add_read(bytes_read, decoded.len);
        decoded.entries.into_iter().find(|(a, _)| *a == attr).map(|(_, v)| v).unwrap_or_default()
    })
}

/// Calls `proc_fn` for every value of `attr` in a pulled snapshot until
/// it returns 0.
///
/// # Safety
/// `buf` holds a pulled snapshot; `bytes_read` is NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_find_all_in_snapshot(
    buf: *const u8,
    attr: cali_id_t,
    bytes_read: *mut usize,
    proc_fn: cali_entry_proc_fn,
    userdata: *mut c_void,
) {
    const ENTRY: &str = "cali_find_all_in_snapshot";
    guard(ENTRY, (), || {
        // SAFETY: per the caller.
        let Some(decoded) = (unsafe { decode(ENTRY, buf) }) else { return };
        add_read(bytes_read, decoded.len);
        let Some(f) = proc_fn else { return };
        for (_, value) in decoded.entries.into_iter().filter(|(a, _)| *a == attr) {
            // SAFETY: a C callback with the documented signature.
            if unsafe { f(userdata, attr, value) } == 0 {
                break;
            }
        }
    })
}
