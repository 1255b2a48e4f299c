//! C strings as interned values, without hashing them on every call.
//!
//! `CALI_MARK_BEGIN("solve")` passes the same pointer every time, so each
//! thread keeps a table keyed by the pointer. A hit is verified by
//! comparing the bytes with the copy taken when the entry was made (the
//! program may have reused the buffer for another name), which for a short
//! name costs a few cycles; only a miss interns the string. The table is
//! a hash map (a direct-mapped one thrashed on names allocated at regular
//! strides) that starts over when it grows past `MAX_ENTRIES`, so a
//! program that builds names in ever new buffers cannot grow it without
//! bound.

use caliper_data::hash::FxHashMap;
use runtime::value::ValueKey;
use std::cell::RefCell;
use std::ffi::{CStr, c_char};

const MAX_ENTRIES: usize = 4096;

struct Entry {
    bytes: Box<[u8]>,
    key: ValueKey,
}

thread_local! {
    static TABLE: RefCell<FxHashMap<usize, Entry>> = RefCell::new(FxHashMap::default());
}

/// Whether the NUL-terminated string at `s` is exactly `bytes`.
///
/// # Safety
/// `s` is a NUL-terminated string. Bytes are read only up to the first
/// mismatch, and `bytes` holds no NUL, so nothing past the string's NUL
/// is read.
#[inline]
unsafe fn same(bytes: &[u8], s: *const c_char) -> bool {
    for (i, &b) in bytes.iter().enumerate() {
        // SAFETY: s[0..i] matched non-NUL bytes, so s[i] is in the string.
        if unsafe { *s.add(i) } as u8 != b {
            return false;
        }
    }
    // SAFETY: as above, s[len] is in the string (possibly its NUL).
    unsafe { *s.add(bytes.len()) == 0 }
}

/// Interns the string at `s`.
///
/// # Safety
/// `s` is a non-NULL, NUL-terminated string.
unsafe fn intern(s: *const c_char) -> (Box<[u8]>, ValueKey) {
    // SAFETY: per the caller.
    let c = unsafe { CStr::from_ptr(s) };
    (c.to_bytes().into(), ValueKey::string(&c.to_string_lossy()))
}

/// The interned value of the string at `s`.
///
/// # Safety
/// `s` is a non-NULL, NUL-terminated string.
#[inline]
pub(crate) unsafe fn key_of(s: *const c_char) -> ValueKey {
    let lookup = TABLE.try_with(|table| {
        // Busy (a signal handler re-entered the library): skip the table.
        let mut table = table.try_borrow_mut().ok()?;
        if let Some(e) = table.get(&(s as usize))
            // SAFETY: `s` is NUL-terminated per the caller.
            && unsafe { same(&e.bytes, s) }
        {
            return Some(e.key);
        }
        // SAFETY: per the caller.
        let (bytes, key) = unsafe { intern(s) };
        if table.len() >= MAX_ENTRIES {
            table.clear();
        }
        table.insert(s as usize, Entry { bytes, key });
        Some(key)
    });
    match lookup {
        Ok(Some(key)) => key,
        // SAFETY: per the caller.
        _ => unsafe { intern(s) }.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_buffer_is_noticed() {
        let mut buf = *b"main\0\0";
        let p = buf.as_ptr() as *const c_char;
        let main = unsafe { key_of(p) };
        assert_eq!(unsafe { key_of(p) }, main);
        buf[..4].copy_from_slice(b"fooo");
        let foo = unsafe { key_of(buf.as_ptr() as *const c_char) };
        assert_ne!(foo, main);
        assert_eq!(foo, ValueKey::string("fooo"));
        buf[2] = 0;
        assert_eq!(unsafe { key_of(buf.as_ptr() as *const c_char) }, ValueKey::string("fo"));
    }

    #[test]
    fn comparison_stops_at_the_nul() {
        assert!(unsafe { same(b"ab", c"ab".as_ptr()) });
        assert!(!unsafe { same(b"abc", c"ab".as_ptr()) });
        assert!(!unsafe { same(b"a", c"ab".as_ptr()) });
    }
}
