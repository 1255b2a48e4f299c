//! The counter file: one 8-byte counter per slot, shared by the tool and
//! every traced process.
//!
//! Each process maps the file (`MAP_SHARED`) next to each of its
//! trampoline regions, so a trampoline's `lock inc` reaches its counter
//! with a RIP-relative operand. Because the pages are shared, the counts
//! survive the process (its exit, its `exec`), a forked child counts into
//! the same slots, and the tool reads the totals from the file at the end.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The size of the counter file: 2^20 slots (8 MiB, sparse: only the
/// pages touched take memory).
pub const SLOTS: usize = 1 << 20;
/// Bytes of the counter file.
pub const BYTES: u64 = (SLOTS * 8) as u64;

/// The counter file and the next free slot.
pub struct Counters {
    file: tempfile::NamedTempFile,
    next: usize,
}

impl Counters {
    /// Creates the file in `/dev/shm` (memory-backed) or the temporary
    /// directory if there is none.
    pub fn create() -> io::Result<Counters> {
        let shm = Path::new("/dev/shm");
        let file = if shm.is_dir() {
            tempfile::Builder::new().prefix("cali-run-").tempfile_in(shm)?
        } else {
            tempfile::Builder::new().prefix("cali-run-").tempfile()?
        };
        file.as_file().set_len(BYTES)?;
        Ok(Counters { file, next: 0 })
    }

    /// The file's path, which the tracee opens.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The slot [`Counters::allocate`] will hand out next, or None when
    /// all are taken.
    pub fn peek_next(&self) -> Option<usize> {
        (self.next < SLOTS).then_some(self.next)
    }

    /// Takes the next slot.
    pub fn allocate(&mut self) -> Option<usize> {
        let slot = self.peek_next()?;
        self.next += 1;
        Some(slot)
    }

    /// Sets a slot (the return address of a call site, which trampolines
    /// compare with): the tracees see it at once through their mappings.
    pub fn write(&self, slot: usize, value: u64) -> io::Result<()> {
        self.file.as_file().write_all_at(&value.to_le_bytes(), slot as u64 * 8)
    }

    /// The current value of every allocated slot.
    pub fn read_all(&self) -> io::Result<Vec<u64>> {
        let mut bytes = vec![0u8; self.next * 8];
        let file: &File = self.file.as_file();
        file.read_exact_at(&mut bytes, 0)?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    }
}
