//! The counter file: one 8-byte counter per slot, shared by the tool and
//! every traced process.
//!
//! Each process maps the file (`MAP_SHARED`) next to each of its
//! trampoline regions, so a trampoline's `lock inc` reaches its counter
//! with a RIP-relative operand. Because the pages are shared, the counts
//! survive the process (its exit, its `exec`), a forked child counts into
//! the same slots, and the tool reads the totals from the file at the end.
//!
//! Where the processor has `rdpid`, the file holds, after the slots, one
//! copy of them per processor (each [`BYTES`] long, so the copies share no
//! cache line): once several threads run the trampolines, each increments
//! its processor's copy (see [`Increment::PerCpu`]), and a count is the
//! sum of its copies.

use crate::relocate::Increment;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The size of the counter file: 2^20 slots (8 MiB, sparse: only the
/// pages touched take memory).
pub const SLOTS: usize = 1 << 20;
/// Bytes of the counter file.
pub const BYTES: u64 = (SLOTS * 8) as u64;

/// The most processors that get a copy of the counters each (beyond, the
/// copies would take more address space near each module than is sane).
const MAX_COPIES: usize = 64;

/// The counter file and the next free slot.
pub struct Counters {
    file: tempfile::NamedTempFile,
    next: usize,
    /// Copies of the slots: 1, or 1 and one per processor.
    copies: usize,
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
        let copies = per_processor_copies();
        file.as_file().set_len(BYTES * copies as u64)?;
        Ok(Counters { file, next: 0, copies })
    }

    /// The bytes of the file, which each traced process maps.
    pub fn mapped_len(&self) -> u64 {
        BYTES * self.copies as u64
    }

    /// How trampolines increment the counters: unlocked while one thread
    /// runs them (`shared` false), else atomically, in each processor's
    /// copy where there are copies.
    pub fn increment(&self, shared: bool) -> Increment {
        match (shared, self.copies) {
            (false, _) => Increment::Unlocked,
            (true, 1) => Increment::Locked,
            (true, _) => Increment::PerCpu { stride_log2: BYTES.trailing_zeros() },
        }
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

    /// How many slots are left.
    pub fn free(&self) -> usize {
        SLOTS - self.next
    }

    /// Takes the next slot.
    pub fn allocate(&mut self) -> Option<usize> {
        let slot = self.peek_next()?;
        self.next += 1;
        Some(slot)
    }

    /// The current value of every allocated slot (over all its copies).
    pub fn read_all(&self) -> io::Result<Vec<u64>> {
        self.read(0, self.next)
    }

    /// The current values of the `n` slots from `first` (over all their
    /// copies).
    pub fn read(&self, first: usize, n: usize) -> io::Result<Vec<u64>> {
        let mut totals = vec![0u64; n];
        let mut bytes = vec![0u8; n * 8];
        let file: &File = self.file.as_file();
        for copy in 0..self.copies as u64 {
            file.read_exact_at(&mut bytes, copy * BYTES + first as u64 * 8)?;
            let values = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
            for (total, value) in totals.iter_mut().zip(values) {
                *total = total.wrapping_add(value);
            }
        }
        Ok(totals)
    }
}

/// 1 and one copy per possible processor number where `rdpid` tells a
/// thread its processor (Linux lists the flag in `/proc/cpuinfo` when it
/// keeps the number there) and there are several processors; else 1.
fn per_processor_copies() -> usize {
    let rdpid = std::fs::read_to_string("/proc/cpuinfo")
        .is_ok_and(|info| info.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "rdpid")));
    let processors = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|list| highest_in_list(&list))
        .map_or(1, |highest| highest + 1);
    if rdpid && (2..=MAX_COPIES).contains(&processors) { 1 + processors } else { 1 }
}

/// The highest number of a kernel CPU list (`0-3,8,10-11`).
fn highest_in_list(list: &str) -> Option<usize> {
    list.trim().split(',').map(|range| range.rsplit('-').next().and_then(|n| n.trim().parse().ok())).max().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_highest_processor_number() {
        assert_eq!(highest_in_list("0-1\n"), Some(1));
        assert_eq!(highest_in_list("0-3,8,10-11"), Some(11));
        assert_eq!(highest_in_list("0"), Some(0));
        assert_eq!(highest_in_list("x"), None);
    }

    #[test]
    fn a_count_is_the_sum_of_its_copies() {
        let mut counters = Counters::create().unwrap();
        let slot = counters.allocate().unwrap();
        counters.file.as_file().write_all_at(&5u64.to_le_bytes(), slot as u64 * 8).unwrap();
        if counters.copies > 1 {
            let last = (counters.copies as u64 - 1) * BYTES;
            counters.file.as_file().write_all_at(&7u64.to_le_bytes(), last + slot as u64 * 8).unwrap();
        }
        let extra = if counters.copies > 1 { 7 } else { 0 };
        assert_eq!(counters.read_all().unwrap(), [5 + extra]);
        assert_eq!(counters.mapped_len(), BYTES * counters.copies as u64);
        assert_eq!(counters.increment(false), Increment::Unlocked);
    }
}
