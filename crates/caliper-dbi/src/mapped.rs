//! Files mapped read-only into the tool: a module file whose bytes are
//! looked up at tens of thousands of places (reading it whole would copy
//! tens of megabytes), and the table of call arcs in the counter file,
//! which the traced processes write while the tool reads it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// `len` bytes of a file from `offset`, mapped shared and read-only.
#[derive(Debug)]
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; reading
// it from any thread is as safe as reading it from one.
unsafe impl Send for Mapped {}
// SAFETY: as above: shared references only read.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps `len` bytes of `file` from `offset` (a multiple of the page size).
    pub fn new(file: &File, offset: u64, len: usize) -> io::Result<Mapped> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty mapping"));
        }
        let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
        // SAFETY: a new mapping at an address the kernel picks, of a file
        // this process has open; nothing else refers to it.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), offset)
        };
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

    /// The 8-byte words of memory that other processes write meanwhile:
    /// read only through atomic loads.
    pub fn word(&self, index: usize) -> Option<u64> {
        if index >= self.len / 8 {
            return None;
        }
        // SAFETY: inside the mapping, 8-byte aligned (the mapping starts
        // on a page); other processes' writes to it are atomic stores or
        // read-modify-writes of whole words.
        let word = unsafe { AtomicU64::from_ptr(self.ptr.cast::<u64>().add(index)) };
        Some(word.load(Ordering::Relaxed))
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer referred to.
        unsafe { libc::munmap(self.ptr, self.len) };
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
}
