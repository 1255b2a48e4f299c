//! Files mapped into the tool: read-only, a module file whose bytes are
//! looked up at tens of thousands of places (reading it whole would copy
//! tens of megabytes) and a module cache entry whose lists are searched
//! where they lie (see [`SharedBytes`]); writable, the table of call arcs
//! in the counter file, which the traced processes write while the tool
//! reads it and frees the entries of programs that have ended.

use std::fs::File;
use std::io;
use std::ops::{Deref, Range};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// `len` bytes of a file from `offset`, mapped shared (read-only unless
/// made by [`Mapped::writable`]).
#[derive(Debug)]
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; its bytes are read as
// plain bytes only where nobody writes them, and as words through atomic
// loads and stores elsewhere, from any thread as from one.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps `len` bytes of `file` from `offset` (a multiple of the page
    /// size), read-only.
    pub fn new(file: &File, offset: u64, len: usize) -> io::Result<Mapped> {
        Mapped::with_protection(file, offset, len, libc::PROT_READ)
    }

    /// Maps `len` bytes of `file` from `offset` (a multiple of the page
    /// size), readable and writable through [`Mapped::store`].
    pub fn writable(file: &File, offset: u64, len: usize) -> io::Result<Mapped> {
        Mapped::with_protection(file, offset, len, libc::PROT_READ | libc::PROT_WRITE)
    }

    fn with_protection(file: &File, offset: u64, len: usize, protection: libc::c_int) -> io::Result<Mapped> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty mapping"));
        }
        let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
        // SAFETY: a new mapping at an address the kernel picks, of a file
        // this process has open; nothing else refers to it.
        let ptr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, protection, libc::MAP_SHARED, file.as_raw_fd(), offset) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapped { ptr, len })
    }

    /// A whole file, mapped.
    pub fn file(path: &std::path::Path) -> io::Result<Mapped> {
        let file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).map_err(io::Error::other)?;
        Mapped::new(&file, 0, len)
    }

    /// The bytes of a file that nobody writes while it is mapped (a
    /// module's file, which the program runs from).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes at `ptr`, for as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }

    /// The 8-byte words of memory that other processes write meanwhile,
    /// as atomics: read through loads (plain moves, `Relaxed`), so that a
    /// scan of a table of megabytes runs at the speed of memory.
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: `len / 8` words inside the mapping, for as long as
        // `self`, 8-byte aligned (the mapping starts on a page); other
        // processes' writes to it are atomic stores or read-modify-writes
        // of whole words.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<AtomicU64>(), self.len / 8) }
    }

    /// The word at `index` of [`Mapped::words`].
    pub fn word(&self, index: usize) -> Option<u64> {
        self.words().get(index).map(|word| word.load(Ordering::Relaxed))
    }

    /// Stores `value` in the 8-byte word at `index` of a mapping made by
    /// [`Mapped::writable`], after every store before it (other processes
    /// see the stores in order); false outside the mapping.
    pub fn store(&self, index: usize, value: u64) -> bool {
        let Some(word) = self.words().get(index) else { return false };
        word.store(value, Ordering::Release);
        true
    }
}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer referred to.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// Bytes shared without a copy: the tool's own, or a stretch of a file
/// mapped (a module cache entry, whose lists of branch targets are
/// searched in place instead of decoded into fresh memory at each start).
#[derive(Clone)]
pub struct SharedBytes {
    whole: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: Range<usize>,
}

impl SharedBytes {
    /// The bytes at `range` of these, if they hold it.
    pub fn slice(&self, range: Range<usize>) -> Option<SharedBytes> {
        let start = self.range.start.checked_add(range.start)?;
        let end = self.range.start.checked_add(range.end)?;
        (start <= end && end <= self.range.end).then(|| SharedBytes { whole: self.whole.clone(), range: start..end })
    }

    /// Where `part`, a slice of these bytes, lies in them.
    pub fn range_of(&self, part: &[u8]) -> Option<Range<usize>> {
        let start = (part.as_ptr() as usize).checked_sub(self.as_ptr() as usize)?;
        (start + part.len() <= self.len()).then(|| start..start + part.len())
    }
}

impl Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &(*self.whole).as_ref()[self.range.clone()]
    }
}

impl<T: AsRef<[u8]> + Send + Sync + 'static> From<T> for SharedBytes {
    fn from(whole: T) -> SharedBytes {
        let len = whole.as_ref().len();
        SharedBytes { whole: Arc::new(whole), range: 0..len }
    }
}

impl Default for SharedBytes {
    fn default() -> SharedBytes {
        SharedBytes::from(Vec::new())
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn sees_what_is_written_to_the_file_after_it_is_mapped() {
        let file = tempfile::tempfile().unwrap();
        file.set_len(8192).unwrap();
        let mapped = Mapped::new(&file, 4096, 4096).unwrap();
        assert_eq!(mapped.word(0), Some(0));
        file.write_all_at(&42u64.to_le_bytes(), 4096 + 16).unwrap();
        assert_eq!(mapped.word(2), Some(42));
        assert_eq!(mapped.word(512), None, "past the end");
        assert_eq!(mapped.bytes()[16], 42);
    }

    #[test]
    fn shared_bytes_are_sliced_without_a_copy_and_within_their_range_only() {
        let file = tempfile::tempfile().unwrap();
        file.write_all_at(b"0123456789", 0).unwrap();
        let whole = SharedBytes::from(Mapped::new(&file, 0, 10).unwrap());
        let middle = whole.slice(2..8).expect("inside");
        assert_eq!(&*middle, b"234567");
        assert_eq!(middle.as_ptr(), whole[2..].as_ptr(), "the same bytes");
        assert_eq!(&*middle.slice(1..3).expect("inside the slice"), b"34");
        assert!(middle.slice(4..7).is_none(), "past the slice's end");
        assert_eq!(whole.range_of(&middle[1..3]), Some(3..5));
        assert_eq!(middle.range_of(&whole[0..2]), None, "before it");
        assert_eq!(middle.range_of(&whole[7..9]), None, "past its end");
    }
}
