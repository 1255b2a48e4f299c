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
//!
//! After the copies comes the table of call arcs (see [`crate::arc_table`]).

use crate::arc_table::{self, COPIES_AT, ENTRY_BYTES, Entry, HEADER_BYTES, TABLE_BYTES, bytes_with_copies};
use crate::mapped::Mapped;
use crate::relocate::Increment;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;

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
    /// Slots given back (see [`Counters::recycle`]) with the count each
    /// held then, taken again before new ones.
    recycled: Vec<(usize, u64)>,
    /// Copies of the slots: 1, or 1 and one per processor.
    copies: usize,
    /// The table of call arcs, mapped (read at every process's end: a
    /// mapping reads its pages in place).
    arcs: Mapped,
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
        let table = bytes_with_copies(copies as u64 - 1);
        file.as_file().set_len(BYTES * copies as u64 + table)?;
        let arcs = Mapped::writable(file.as_file(), BYTES * copies as u64, table as usize)?;
        Ok(Counters { file, next: 0, recycled: Vec::new(), copies, arcs })
    }

    /// The bytes of the file, which each traced process maps.
    pub fn mapped_len(&self) -> u64 {
        self.arc_table_offset() + bytes_with_copies(self.copies as u64 - 1)
    }

    /// Where the table of call arcs starts in the file.
    pub fn arc_table_offset(&self) -> u64 {
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
        self.recycled.last().map(|&(slot, _)| slot).or((self.next < SLOTS).then_some(self.next))
    }

    /// How many slots were taken at most at once.
    pub fn high_water(&self) -> usize {
        self.next
    }

    /// How many slots are left.
    pub fn free(&self) -> usize {
        SLOTS - self.next + self.recycled.len()
    }

    /// Takes the next slot, with the count it holds already: a recycled
    /// slot's last count (its new user's calls are what it counts beyond
    /// that), 0 for a new one.
    pub fn allocate(&mut self) -> Option<(usize, u64)> {
        if let Some(recycled) = self.recycled.pop() {
            return Some(recycled);
        }
        let slot = self.peek_next()?;
        self.next += 1;
        Some((slot, 0))
    }

    /// Gives back `slot`, which holds `count` now and which no trampoline
    /// counts in any more, for another function to count in.
    pub fn recycle(&mut self, slot: usize, count: u64) {
        self.recycled.push((slot, count));
    }

    /// The current value of every allocated slot (over all its copies).
    pub fn read_all(&self) -> io::Result<Vec<u64>> {
        self.read(0, self.next)
    }

    /// The current values of `slots` (over all their copies), in their
    /// order: each run of slots near one another read at once, not the whole
    /// stretch between the lowest and the highest (a program's slots, some
    /// taken again from the programs before it, lie anywhere below the
    /// highest ever taken, and each copy of the stretch would be read).
    pub fn read_slots(&self, slots: &[usize]) -> io::Result<Vec<u64>> {
        const GAP: usize = 512;
        let mut order: Vec<usize> = (0..slots.len()).collect();
        order.sort_unstable_by_key(|&i| slots[i]);
        let mut values = vec![0; slots.len()];
        for run in order.chunk_by(|&a, &b| slots[b] - slots[a] <= GAP) {
            let (low, high) = (slots[run[0]], slots[run[run.len() - 1]]);
            let read = self.read(low, high + 1 - low)?;
            for &i in run {
                values[i] = read[slots[i] - low];
            }
        }
        Ok(values)
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

/// The claimed entries of the table of call arcs, by their index.
#[derive(Debug, Default, Clone)]
pub struct ArcCounts {
    pub entries: Vec<arc_table::Entry>,
    /// The calls that found no room in the table.
    pub overflow: u64,
}

impl ArcCounts {
    /// The count of the entry at `index`.
    pub fn count(&self, index: usize) -> u64 {
        self.entries.binary_search_by_key(&index, |e| e.index).map_or(0, |n| self.entries[n].count)
    }
}

impl Counters {
    /// The claimed entries of the table of call arcs, in the order of
    /// their index. Only the pages of the file that hold data are looked
    /// at: the table is 15 MiB, of which a small run uses a few pages.
    pub fn read_arcs(&self) -> io::Result<ArcCounts> {
        let table = self.arc_table_offset();
        let (processors, held) = self.table_data()?;
        let word = |at: u64| if held(at) { self.arcs.word((at / 8) as usize).unwrap_or(0) } else { 0 };
        let mut counts = ArcCounts { entries: Vec::new(), overflow: word(0) };
        // Whether the entry at `index` has a return address: tested first,
        // in a loop of a few instructions an entry, as most of the first
        // level is free (read whole, a compiler's run read 1.4 million
        // entries at 60 instructions each).
        let words = self.arcs.words();
        let claimed = |index: &usize| {
            let at = (HEADER_BYTES + *index as u64 * ENTRY_BYTES) / 8;
            words.get(at as usize).is_some_and(|ret| ret.load(Ordering::Relaxed) != 0)
        };
        let first = table + HEADER_BYTES;
        for (low, high) in data_ranges(self.file.as_file(), first, table + TABLE_BYTES)? {
            // The entries that have a byte in the range.
            let (low, high) = (((low - first) / ENTRY_BYTES) as usize, (high - first).div_ceil(ENTRY_BYTES) as usize);
            let start = counts.entries.last().map_or(low, |last| low.max(last.index + 1));
            counts
                .entries
                .extend((start..high).filter(claimed).filter_map(|index| Entry::read(index as u64, processors, word)));
        }
        Ok(counts)
    }

    /// Whether a word of the table (by its offset from the table) may hold
    /// data: not where the processors' copies have a hole, which reads as
    /// 0, and which a read or a write through the mapping would fault a page
    /// into (two copies of each page of claimed entries, on two processors:
    /// half the tool's page faults under sed).
    ///
    /// With it, the number of processors whose copies to read: none where
    /// no copy holds data (no image has counted per processor), so that an
    /// entry is read as its own three words.
    fn table_data(&self) -> io::Result<(u64, impl Fn(u64) -> bool)> {
        let table = self.arc_table_offset();
        let copies = (table + COPIES_AT, table + bytes_with_copies(self.copies as u64 - 1));
        let copied = data_ranges(self.file.as_file(), copies.0, copies.1)?;
        let processors = if copied.is_empty() { 0 } else { self.copies as u64 - 1 };
        Ok((processors, move |at: u64| {
            at < COPIES_AT || {
                let n = copied.partition_point(|&(_, high)| high <= table + at);
                copied.get(n).is_some_and(|&(low, _)| low <= table + at)
            }
        }))
    }

    /// Frees the entries at `indexes` of the table of call arcs, whose
    /// pairs' programs have all ended (their counts read): the id and the
    /// counts cleared first, then the return address, after which a pair of
    /// a program still running may claim the entry. A running pair whose
    /// search passed over it claims it, as the first free one, beside its
    /// entry further on: the tool adds the counts of equal pairs. A build
    /// that runs a compiler many times, each run claiming 40,000 entries,
    /// filled the table by the 17th, and the calls of new pairs searched
    /// both levels to the end, unnamed.
    pub fn free_arc_entries(&self, indexes: &[usize]) -> io::Result<()> {
        let (processors, held) = self.table_data()?;
        let clear = |at: u64| self.arcs.store((at / 8) as usize, 0);
        for &index in indexes {
            let at = HEADER_BYTES + index as u64 * ENTRY_BYTES;
            clear(at + 8);
            for count in arc_table::count_offsets(index as u64, processors).filter(|&c| held(c)) {
                clear(count);
            }
            clear(at);
        }
        Ok(())
    }
}

/// The ranges of `file` between `low` and `high` that hold data, in
/// order (`SEEK_DATA`/`SEEK_HOLE`; where the file system cannot say, the
/// whole range).
fn data_ranges(file: &File, low: u64, high: u64) -> io::Result<Vec<(u64, u64)>> {
    use std::os::fd::AsRawFd;
    let seek = |at: u64, whence: i32| {
        // SAFETY: lseek on a descriptor this file owns; it moves only the
        // file offset, which the reads here do not use.
        let to = unsafe { libc::lseek(file.as_raw_fd(), at as libc::off_t, whence) };
        if to < 0 { Err(io::Error::last_os_error()) } else { Ok(to as u64) }
    };
    let mut ranges = Vec::new();
    let mut at = low;
    while at < high {
        let start = match seek(at, libc::SEEK_DATA) {
            Ok(start) => start,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => break,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(vec![(low, high)]),
            Err(e) => return Err(e),
        };
        if start >= high {
            break;
        }
        let end = seek(start, libc::SEEK_HOLE)?.min(high);
        ranges.push((start, end));
        at = end;
    }
    Ok(ranges)
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
        let (slot, _) = counters.allocate().unwrap();
        counters.file.as_file().write_all_at(&5u64.to_le_bytes(), slot as u64 * 8).unwrap();
        if counters.copies > 1 {
            let last = (counters.copies as u64 - 1) * BYTES;
            counters.file.as_file().write_all_at(&7u64.to_le_bytes(), last + slot as u64 * 8).unwrap();
        }
        let extra = if counters.copies > 1 { 7 } else { 0 };
        assert_eq!(counters.read_all().unwrap(), [5 + extra]);
        let table = bytes_with_copies(counters.copies as u64 - 1);
        assert_eq!(counters.mapped_len(), BYTES * counters.copies as u64 + table);
        assert_eq!(counters.increment(false), Increment::Unlocked);
    }

    #[test]
    fn scattered_slots_are_read_in_their_order() {
        let counters = Counters::create().unwrap();
        let slots = [70_000, 3, 5, 200_000, 4];
        for &slot in &slots {
            counters.file.as_file().write_all_at(&(slot as u64 * 10).to_le_bytes(), slot as u64 * 8).unwrap();
        }
        assert_eq!(counters.read_slots(&slots).unwrap(), [700_000, 30, 50, 2_000_000, 40]);
        assert!(counters.read_slots(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_recycled_slot_is_taken_again_with_its_count() {
        let mut counters = Counters::create().unwrap();
        assert_eq!(counters.allocate(), Some((0, 0)));
        assert_eq!(counters.allocate(), Some((1, 0)));
        let free = counters.free();
        counters.recycle(0, 42);
        assert_eq!((counters.peek_next(), counters.free()), (Some(0), free + 1));
        assert_eq!(counters.allocate(), Some((0, 42)), "the recycled one first, with its count");
        assert_eq!(counters.allocate(), Some((2, 0)));
    }

    #[test]
    fn a_freed_entry_is_cleared_return_address_and_all() {
        let counters = Counters::create().unwrap();
        let file = counters.file.as_file();
        let table = counters.arc_table_offset();
        for (n, ret) in [(3u64, 0x4010u64), (5, 0x4020)] {
            let words: Vec<u8> = [ret, 2, 10 + n].iter().flat_map(|w| w.to_le_bytes()).collect();
            file.write_all_at(&words, table + HEADER_BYTES + n * ENTRY_BYTES).unwrap();
        }
        let processors = counters.copies as u64 - 1;
        if processors > 0 {
            file.write_all_at(&6u64.to_le_bytes(), table + arc_table::copied_count_at(3, 0)).unwrap();
            assert_eq!(counters.read_arcs().unwrap().count(3), 13 + 6, "with its copy's count");
        }
        counters.free_arc_entries(&[3]).unwrap();
        let read = counters.read_arcs().unwrap();
        let left: Vec<(usize, u64)> = read.entries.iter().map(|e| (e.index, e.count)).collect();
        assert_eq!(left, [(5, 15)], "the other entry as it was");
        let mut entry = [0u8; 24];
        file.read_exact_at(&mut entry, table + HEADER_BYTES + 3 * ENTRY_BYTES).unwrap();
        assert_eq!(entry, [0; 24], "free again");
        if processors > 0 {
            let mut copy = [0u8; 8];
            file.read_exact_at(&mut copy, table + arc_table::copied_count_at(3, 0)).unwrap();
            assert_eq!(copy, [0; 8], "its copy's count cleared");
            let copies =
                (table + COPIES_AT + (1 << arc_table::COPY_STRIDE_LOG2), table + bytes_with_copies(processors));
            assert!(data_ranges(file, copies.0, copies.1).unwrap().is_empty(), "the other copies' holes left alone");
        }
    }

    #[test]
    fn reads_the_claimed_arc_entries_and_the_overflow() {
        let counters = Counters::create().unwrap();
        let file = counters.file.as_file();
        let table = counters.arc_table_offset();
        assert!(counters.read_arcs().unwrap().entries.is_empty());
        file.write_all_at(&4u64.to_le_bytes(), table).unwrap();
        // Entries far apart (pages of holes between) and at the last place.
        let last = arc_table::ENTRIES - 1;
        for (n, ret) in [(0u64, 0x4010u64), (70_000, 0x4020), (last, 0x4030)] {
            let words: Vec<u8> = [ret, 2, n + 1].iter().flat_map(|w| w.to_le_bytes()).collect();
            file.write_all_at(&words, table + HEADER_BYTES + n * ENTRY_BYTES).unwrap();
        }
        let read = counters.read_arcs().unwrap();
        assert_eq!(read.overflow, 4);
        let got: Vec<(usize, u64, u32, u64)> = read.entries.iter().map(|e| (e.index, e.ret, e.id, e.count)).collect();
        let last = last as usize;
        assert_eq!(got, [(0, 0x4010, 2, 1), (70_000, 0x4020, 2, 70_001), (last, 0x4030, 2, last as u64 + 1)]);
        assert_eq!((read.count(70_000), read.count(1)), (70_001, 0));
        let processors = counters.copies as u64 - 1;
        let copies = (table + COPIES_AT, table + bytes_with_copies(processors));
        assert!(data_ranges(file, copies.0, copies.1).unwrap().is_empty(), "no page of the copies read into the file");
        // A first-level entry's count, over the processors' copies.
        if counters.copies > 1 {
            let last_copy = counters.copies as u64 - 2;
            file.write_all_at(&5u64.to_le_bytes(), table + arc_table::copied_count_at(0, last_copy)).unwrap();
            assert_eq!(counters.read_arcs().unwrap().count(0), 1 + 5);
        }
    }
}
