//! C strings as interned values, without hashing them on every call.
//!
//! `CALI_MARK_BEGIN("solve")` passes the same pointer every time, so a
//! process-wide direct-mapped array, indexed by a multiplicative hash of
//! the pointer, remembers the interned name last seen at that pointer. A
//! hit is verified by comparing the bytes with the name's (the program may
//! have reused the buffer for another name), which for a short name costs
//! a few cycles; only a miss interns the string.
//!
//! Shared by all threads rather than one per thread: the names are the
//! same on every thread, and a plain static is reached without the
//! thread-local lookup a shared library pays on every access. A slot is
//! one atomic pointer to a string of the runtime's string table, which
//! are immutable and never freed, so a reader sees either the old name or
//! the new one, and the byte check tells which. The names are not copied:
//! a table of its own cost about a hundred bytes per distinct name, as
//! much as the runtime's table. (A name that is not valid UTF-8 is
//! interned with replacement characters, so its bytes never match: it is
//! interned on every call, slower but with the same value.)

use runtime::value::{Interned, ValueKey};
use std::ffi::{CStr, c_char};
use std::sync::atomic::{AtomicPtr, Ordering};

/// log2 of the number of slots (4096 pointers: 32 KiB). The multiplicative
/// hash spreads names allocated at regular strides, which thrashed a table
/// indexed by the pointer's low bits.
const SLOT_BITS: u32 = 12;

/// Per slot, the name last seen there (NULL: none).
static SLOTS: [AtomicPtr<Interned>; 1 << SLOT_BITS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 1 << SLOT_BITS];

/// The slot of pointer `s` (Fibonacci hashing: the top bits of the
/// product depend on all of the pointer's bits).
#[inline]
fn slot(s: *const c_char) -> &'static AtomicPtr<Interned> {
    &SLOTS[((s as usize as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (u64::BITS - SLOT_BITS)) as usize]
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

/// The interned value of the string at `s`.
///
/// # Safety
/// `s` is a non-NULL, NUL-terminated string.
#[inline]
pub(crate) unsafe fn key_of(s: *const c_char) -> ValueKey {
    let slot = slot(s);
    // SAFETY: slots hold NULL or strings of the table, never freed.
    if let Some(name) = unsafe { slot.load(Ordering::Acquire).as_ref() }
        // SAFETY: `s` is NUL-terminated per the caller.
        && unsafe { same(name.bytes(), s) }
    {
        return name.key();
    }
    // SAFETY: per the caller.
    unsafe { miss(slot, s) }
}

/// Interns the string at `s` and puts it in `slot`.
///
/// # Safety
/// `s` is a non-NULL, NUL-terminated string.
#[cold]
unsafe fn miss(slot: &AtomicPtr<Interned>, s: *const c_char) -> ValueKey {
    // SAFETY: per the caller.
    let name = String::from_utf8_lossy(unsafe { CStr::from_ptr(s) }.to_bytes());
    match Interned::of(&name) {
        Some(interned) => {
            slot.store(interned as *const Interned as *mut Interned, Ordering::Release);
            interned.key()
        }
        // The string table is full: the key of a string it refused.
        None => ValueKey::string(&name),
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
