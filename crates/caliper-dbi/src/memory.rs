//! Reading and writing a tracee's memory through `/proc/PID/mem`: one
//! system call per block whatever its size, and writes to read-only code
//! pages work (the kernel forces them for a tracer), so breakpoints and
//! jumps need no `mprotect` in the tracee. Where the tool has no
//! descriptor left to open that file (a program with thousands of
//! processes at once), ptrace's words do, eight bytes a call.
//!
//! Work that touches thousands of places at once (instrumenting every
//! function of a library as it loads) would pay a system call for each
//! few bytes; inside a batch ([`Memory::begin_batch`]), reads and writes
//! go to a copy of the pages instead, which reaches the tracee in a few
//! large writes when the batch ends.

use crate::ptrace::{self, Pid};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;
/// The most pages [`Memory::prefetch`] reads at once.
const MAX_PREFETCH_PAGES: usize = 256;
/// The most pages [`Memory::overwrite_each`] changes at once: its buffer
/// stays small enough for the allocator to reuse.
const MAX_OVERWRITE_PAGES: usize = 16;
/// The most threads [`Memory::overwrite_each`] shares its pages among.
const MAX_OVERWRITE_THREADS: usize = 4;
/// The fewest pages [`Memory::overwrite_each`] shares among threads (a
/// megabyte of code, whose writes take 3 ms; a thread costs tens of
/// microseconds).
const PARALLEL_OVERWRITE_PAGES: u64 = 256;

/// The address space of one traced process.
#[derive(Debug)]
pub struct Memory {
    access: Access,
    /// The pages read or written during a batch, while one is open.
    batch: RefCell<Option<Pages>>,
}

/// How the tool reaches a tracee's memory.
#[derive(Debug)]
enum Access {
    /// Its `/proc/PID/mem`.
    File(File),
    /// Ptrace's `PEEKDATA` and `POKEDATA`, a word a call, from the thread
    /// that traces it only.
    Words(Pid),
}

impl Access {
    /// As [`FileExt::read_at`]: the bytes read, fewer where memory ends.
    fn read_at(&self, buf: &mut [u8], addr: u64) -> io::Result<usize> {
        let tid = match self {
            Access::File(file) => return file.read_at(buf, addr),
            Access::Words(tid) => *tid,
        };
        let mut read = 0;
        for Piece { word_at, from, n, done } in pieces(addr, buf.len()) {
            let word = match ptrace::peek(tid, word_at) {
                Ok(word) => word.to_le_bytes(),
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            buf[done..done + n].copy_from_slice(&word[from..from + n]);
            read = done + n;
        }
        Ok(read)
    }

    /// As [`FileExt::read_exact_at`].
    fn read_exact_at(&self, buf: &mut [u8], addr: u64) -> io::Result<()> {
        match self.read_at(buf, addr)? {
            n if n == buf.len() => Ok(()),
            _ => Err(not_all_mapped(addr)),
        }
    }

    /// As [`FileExt::write_all_at`]; a word only partly written is read
    /// first.
    fn write_all_at(&self, bytes: &[u8], addr: u64) -> io::Result<()> {
        let tid = match self {
            Access::File(file) => return file.write_all_at(bytes, addr),
            Access::Words(tid) => *tid,
        };
        for Piece { word_at, from, n, done } in pieces(addr, bytes.len()) {
            let mut word = if n == 8 { [0; 8] } else { ptrace::peek(tid, word_at)?.to_le_bytes() };
            word[from..from + n].copy_from_slice(&bytes[done..done + n]);
            ptrace::poke(tid, word_at, u64::from_le_bytes(word))?;
        }
        Ok(())
    }
}

/// The part of `len` bytes from some address that lies in one word: the
/// word's address, the offset in it of the part's first byte, the part's
/// bytes, and how many bytes came before it.
struct Piece {
    word_at: u64,
    from: usize,
    n: usize,
    done: usize,
}

/// The words that `len` bytes from `addr` lie in, in order.
fn pieces(addr: u64, len: usize) -> impl Iterator<Item = Piece> {
    let mut done = 0;
    std::iter::from_fn(move || {
        let at = addr + done as u64;
        let from = (at % 8) as usize;
        let n = (8 - from).min(len.checked_sub(done).filter(|&left| left > 0)?);
        let piece = Piece { word_at: at - from as u64, from, n, done };
        done += n;
        Some(piece)
    })
}

/// The error of a read that found `addr..` not all mapped.
fn not_all_mapped(addr: u64) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, format!("{addr:#x} is not all mapped"))
}

/// Copies of the tracee's pages, by page address.
#[derive(Debug, Default)]
struct Pages {
    pages: BTreeMap<u64, Page>,
}

#[derive(Debug)]
struct Page {
    bytes: Box<[u8; PAGE as usize]>,
    /// The offsets of the first and past the last byte written.
    dirty: Option<(usize, usize)>,
}

impl Memory {
    /// Opens the memory of process `pid` (which must be traced by us).
    pub fn open(pid: Pid) -> io::Result<Memory> {
        let file = OpenOptions::new().read(true).write(true).open(format!("/proc/{pid}/mem"))?;
        Ok(Memory { access: Access::File(file), batch: RefCell::new(None) })
    }

    /// Opens the memory of process `pid` (stopped, and traced by the
    /// calling thread) as [`Memory::open`] does, or through ptrace's words
    /// where the tool has no descriptor left for it: a process the tool
    /// cannot reach is one it cannot follow, nor let go of with its probes
    /// taken out.
    pub fn open_or_by_words(pid: Pid) -> io::Result<Memory> {
        match Memory::open(pid) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                Ok(Memory { access: Access::Words(pid), batch: RefCell::new(None) })
            }
            opened => opened,
        }
    }

    /// Fills `buf` from address `addr`; an error if any byte is unmapped.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        if self.read_partial(addr, buf)? < buf.len() {
            return Err(not_all_mapped(addr));
        }
        Ok(())
    }

    /// Reads as many bytes as are mapped from `addr`, up to `buf.len()`.
    pub fn read_partial(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut batch = self.batch.borrow_mut();
        let Some(pages) = batch.as_mut() else { return self.read_direct(addr, buf) };
        let mut done = 0;
        while done < buf.len() {
            let at = addr + done as u64;
            let Some(page) = pages.get(&self.access, at) else { break };
            let from = (at % PAGE) as usize;
            let n = (PAGE as usize - from).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&page.bytes[from..from + n]);
            done += n;
        }
        if done == 0 && !buf.is_empty() {
            // Unmapped: the kernel's own error.
            return self.read_direct(addr, buf);
        }
        Ok(done)
    }

    /// Writes `bytes` at address `addr`.
    pub fn write(&self, addr: u64, bytes: &[u8]) -> io::Result<()> {
        let mut batch = self.batch.borrow_mut();
        let Some(pages) = batch.as_mut() else { return self.access.write_all_at(bytes, addr) };
        let mut done = 0;
        while done < bytes.len() {
            let at = addr + done as u64;
            let Some(page) = pages.get(&self.access, at) else {
                return Err(io::Error::other(format!("cannot write at {at:#x}: not mapped")));
            };
            let from = (at % PAGE) as usize;
            let n = (PAGE as usize - from).min(bytes.len() - done);
            page.bytes[from..from + n].copy_from_slice(&bytes[done..done + n]);
            let (low, high) = page.dirty.unwrap_or((from, from + n));
            page.dirty = Some((low.min(from), high.max(from + n)));
            done += n;
        }
        Ok(())
    }

    /// Inside a batch, copies the pages holding `addrs` that the batch
    /// has not read yet, each run of consecutive pages in one read: for
    /// work that touches most pages of a module (every function entry of
    /// it), a read per page was a system call per 4 KiB. Pages that cannot
    /// be read are left to the batch's own read (and its error).
    pub fn prefetch(&self, addrs: impl IntoIterator<Item = u64>) {
        let mut batch = self.batch.borrow_mut();
        let Some(pages) = batch.as_mut() else { return };
        let mut wanted: Vec<u64> = addrs.into_iter().map(|a| a - a % PAGE).collect();
        wanted.sort_unstable();
        wanted.dedup();
        wanted.retain(|p| !pages.pages.contains_key(p));
        let mut buffer = Vec::new();
        for run in wanted.chunk_by(|a, b| a + PAGE == *b).flat_map(|run| run.chunks(MAX_PREFETCH_PAGES)) {
            buffer.resize(run.len() * PAGE as usize, 0);
            let Ok(n) = self.access.read_at(&mut buffer, run[0]) else { continue };
            for (&at, page) in run.iter().zip(buffer[..n].chunks_exact(PAGE as usize)) {
                let bytes = Box::<[u8]>::from(page).try_into().expect("a page's bytes");
                pages.pages.insert(at, Page { bytes, dirty: None });
            }
        }
    }

    /// Writes `byte` over the byte at each of `addrs` (ascending) and gives
    /// back the bytes it replaced, None where the page cannot be read. Each
    /// run of consecutive pages is read (by `read`, given the run's address
    /// and a buffer for its bytes; from the tracee where `read` fails or
    /// falls short), changed and written back in one piece, through one
    /// buffer: arming every entry of a module changes a byte on most of its
    /// code pages, and a batch's copy of each page cost a compiler's 25 MB
    /// of code 4,000 fresh pages of the tool's memory. Inside a batch, the
    /// batch's reads and writes do it.
    ///
    /// Where the addresses span many pages, the runs are shared among
    /// threads, one per processor (four at most): the
    /// kernel copies each page written on the tracee's behalf (its code is
    /// a private mapping of the module file), 3.6 µs a page, and arming a
    /// compiler's 3,800 pages of code took 14 ms of its start-up while the
    /// program waited, stopped, and the other processors idled (7 ms on
    /// two).
    pub fn overwrite_each(
        &self,
        addrs: &[u64],
        byte: u8,
        read: impl Fn(u64, &mut [u8]) -> io::Result<usize> + Sync,
    ) -> io::Result<Vec<Option<u8>>> {
        debug_assert!(addrs.is_sorted(), "addresses in order");
        if self.batch.borrow().is_some() {
            return addrs.iter().map(|&at| self.overwrite_one(at, byte)).collect();
        }
        let runs = overwrite_runs(addrs);
        let pages: u64 = runs.iter().map(|run| run.pages).sum();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_OVERWRITE_THREADS);
        // Only the tracing thread may use ptrace's words.
        let by_file = matches!(self.access, Access::File(_));
        let parts = if pages >= PARALLEL_OVERWRITE_PAGES && by_file { threads } else { 1 };
        let access = &self.access;
        let overwrite = |part: &[OverwriteRun]| overwrite_runs_in(access, part, byte, &read);
        let done: Vec<io::Result<Vec<Option<u8>>>> = match split_by_pages(&runs, pages, parts).as_slice() {
            [only] => vec![overwrite(only)],
            split => std::thread::scope(|scope| {
                // A part no thread can be made for is done here, after the first.
                let spawn = |part| std::thread::Builder::new().spawn_scoped(scope, move || overwrite(part)).ok();
                let others: Vec<_> = split[1..].iter().map(|&part| (part, spawn(part))).collect();
                let first = overwrite(split[0]);
                let joined = others.into_iter().map(|(part, thread)| match thread {
                    Some(thread) => {
                        thread.join().unwrap_or_else(|_| Err(io::Error::other("a thread writing the code panicked")))
                    }
                    None => overwrite(part),
                });
                std::iter::once(first).chain(joined).collect()
            }),
        };
        let mut replaced = Vec::with_capacity(addrs.len());
        for part in done {
            replaced.extend(part?);
        }
        Ok(replaced)
    }

    /// [`Memory::overwrite_each`] of one address, through the batch.
    fn overwrite_one(&self, at: u64, byte: u8) -> io::Result<Option<u8>> {
        let mut original = [0u8];
        if self.read(at, &mut original).is_err() {
            return Ok(None);
        }
        self.write(at, &[byte])?;
        Ok(Some(original[0]))
    }

    /// Reads a little-endian u64.
    pub fn read_u64(&self, addr: u64) -> io::Result<u64> {
        let mut b = [0; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// From now until [`Memory::end_batch`], reads and writes go to
    /// copies of the pages. The tracee must not change those pages
    /// meanwhile, nor run code the batch writes before it ends: code that
    /// runs the tracee inside a batch does so in a [`Memory::unbatched`].
    /// Batches do not nest: in one already, this does nothing.
    pub fn begin_batch(&self) {
        let mut batch = self.batch.borrow_mut();
        if batch.is_none() {
            *batch = Some(Pages::default());
        }
    }

    /// Writes the pages the batch changed to the tracee, and ends it.
    pub fn end_batch(&self) -> io::Result<()> {
        let pages = self.batch.borrow_mut().take();
        pages.map_or(Ok(()), |pages| self.write_back(pages))
    }

    /// Runs `work` against the tracee's memory itself: what a batch has
    /// written so far is written first, and the batch (if one is open)
    /// starts afresh after it, since the tracee may have run meanwhile.
    pub fn unbatched<T>(&self, work: impl FnOnce() -> T) -> io::Result<T> {
        let Some(pages) = self.batch.borrow_mut().take() else { return Ok(work()) };
        let written = self.write_back(pages);
        let result = work();
        *self.batch.borrow_mut() = Some(Pages::default());
        written.map(|()| result)
    }

    /// Writes the changed bytes of each page, from its first to its last
    /// change (the bytes between are as read: code, which the tracee does
    /// not change), runs that meet across pages at once.
    fn write_back(&self, pages: Pages) -> io::Result<()> {
        let mut run: Vec<u8> = Vec::new();
        let mut start = 0;
        for (page_at, page) in pages.pages {
            let Some((low, high)) = page.dirty else { continue };
            let at = page_at + low as u64;
            if !run.is_empty() && start + run.len() as u64 != at {
                self.access.write_all_at(&run, start)?;
                run.clear();
            }
            if run.is_empty() {
                start = at;
            }
            run.extend_from_slice(&page.bytes[low..high]);
        }
        if !run.is_empty() {
            self.access.write_all_at(&run, start)?;
        }
        Ok(())
    }

    fn read_direct(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.access.read_at(buf, addr)
    }
}

/// The addresses of one read-change-write of [`Memory::overwrite_each`]:
/// those on a run of consecutive pages (at most [`MAX_OVERWRITE_PAGES`]).
struct OverwriteRun<'a> {
    start: u64,
    pages: u64,
    addrs: &'a [u64],
}

/// `addrs` (ascending) cut into runs of consecutive pages.
fn overwrite_runs(addrs: &[u64]) -> Vec<OverwriteRun<'_>> {
    let mut runs = Vec::new();
    let mut rest = addrs;
    while let Some(&first) = rest.first() {
        let start = first - first % PAGE;
        let mut last_page = start;
        let in_run = rest
            .iter()
            .take_while(|&&at| {
                let page = at - at % PAGE;
                let joins = page <= last_page + PAGE && page < start + MAX_OVERWRITE_PAGES as u64 * PAGE;
                last_page = if joins { page } else { last_page };
                joins
            })
            .count();
        let (run, after) = rest.split_at(in_run);
        rest = after;
        runs.push(OverwriteRun { start, pages: (last_page - start) / PAGE + 1, addrs: run });
    }
    runs
}

/// `runs` (of `pages` pages in all) cut into at most `parts` consecutive
/// parts of about as many pages each.
fn split_by_pages<'r, 'a>(runs: &'r [OverwriteRun<'a>], pages: u64, parts: usize) -> Vec<&'r [OverwriteRun<'a>]> {
    let share = pages.div_ceil(parts.max(1) as u64).max(1);
    let mut split = Vec::with_capacity(parts);
    let (mut from, mut taken) = (0, 0);
    for (n, run) in runs.iter().enumerate() {
        taken += run.pages;
        if taken >= share * (split.len() as u64 + 1) && split.len() + 1 < parts {
            split.push(&runs[from..=n]);
            from = n + 1;
        }
    }
    split.push(&runs[from..]);
    split
}

/// The work of [`Memory::overwrite_each`] on `runs`, through `access` (to
/// the tracee's memory), in a buffer of its own.
fn overwrite_runs_in(
    access: &Access,
    runs: &[OverwriteRun],
    byte: u8,
    read: &impl Fn(u64, &mut [u8]) -> io::Result<usize>,
) -> io::Result<Vec<Option<u8>>> {
    let mut replaced = Vec::with_capacity(runs.iter().map(|run| run.addrs.len()).sum());
    let mut buffer = vec![0u8; MAX_OVERWRITE_PAGES * PAGE as usize];
    for run in runs {
        let code = &mut buffer[..(run.pages * PAGE) as usize];
        let mut filled = read(run.start, code).unwrap_or(0).min(code.len());
        if filled < code.len() {
            filled += access.read_at(&mut code[filled..], run.start + filled as u64).unwrap_or(0);
        }
        let mut changed: Option<(usize, usize)> = None;
        for &at in run.addrs {
            let offset = (at - run.start) as usize;
            if offset >= filled {
                replaced.push(None);
                continue;
            }
            replaced.push(Some(code[offset]));
            code[offset] = byte;
            changed = Some(changed.map_or((offset, offset), |(low, _)| (low, offset)));
        }
        if let Some((low, high)) = changed {
            access.write_all_at(&code[low..=high], run.start + low as u64)?;
        }
    }
    Ok(replaced)
}

impl Pages {
    /// The copy of the page holding `addr`, read on first use; None where
    /// the page is not mapped.
    fn get(&mut self, access: &Access, addr: u64) -> Option<&mut Page> {
        let base = addr - addr % PAGE;
        match self.pages.entry(base) {
            Entry::Occupied(page) => Some(page.into_mut()),
            Entry::Vacant(place) => {
                let mut bytes = Box::new([0u8; PAGE as usize]);
                access.read_exact_at(&mut bytes[..], base).ok()?;
                Some(place.insert(Page { bytes, dirty: None }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's own memory, through the same file a tracer uses.
    fn own() -> Memory {
        Memory::open(std::process::id() as Pid).expect("own /proc/self/mem")
    }

    /// The bytes at `at` as the process has them now (the test writes
    /// them behind the compiler's back).
    fn peek(at: u64, len: usize) -> Vec<u8> {
        // SAFETY: `at..at + len` lies in a live buffer of the caller's.
        (0..len).map(|i| unsafe { std::ptr::read_volatile((at + i as u64) as *const u8) }).collect()
    }

    #[test]
    fn a_batch_reads_its_own_writes_and_writes_them_back_at_its_end() {
        let memory = own();
        let buffer = vec![7u8; 3 * PAGE as usize];
        let at = buffer.as_ptr() as u64 + PAGE - 2;
        memory.begin_batch();
        memory.write(at, &[1, 2, 3, 4]).unwrap();
        let mut back = [0u8; 6];
        memory.read(at - 1, &mut back).unwrap();
        assert_eq!(back, [7, 1, 2, 3, 4, 7]);
        // Not in the process yet.
        assert_eq!(peek(at, 1), [7]);
        memory.end_batch().unwrap();
        assert_eq!(peek(at - 1, 6), [7, 1, 2, 3, 4, 7]);
    }

    #[test]
    fn unbatched_work_sees_what_the_batch_wrote() {
        let memory = own();
        let buffer = [0u8; 64];
        let at = buffer.as_ptr() as u64;
        memory.begin_batch();
        memory.write(at, &[9]).unwrap();
        memory.unbatched(|| assert_eq!(peek(at, 1), [9])).unwrap();
        memory.write(at + 1, &[8]).unwrap();
        memory.end_batch().unwrap();
        assert_eq!(peek(at, 2), [9, 8]);
    }

    #[test]
    fn prefetched_pages_are_read_as_they_are_and_keep_what_the_batch_wrote() {
        let memory = own();
        let buffer: Vec<u8> = (0..8 * PAGE).map(|i| (i % 251) as u8).collect();
        let at = buffer.as_ptr() as u64;
        memory.begin_batch();
        memory.write(at + 2 * PAGE, &[0xaa]).unwrap();
        memory.prefetch([at + 5 * PAGE, at, at + 2 * PAGE, at + PAGE + 7, 8]);
        let mut back = vec![0u8; buffer.len()];
        memory.read(at, &mut back).unwrap();
        let mut expected = buffer.clone();
        expected[2 * PAGE as usize] = 0xaa;
        assert_eq!(back, expected);
        memory.end_batch().unwrap();
        assert_eq!(peek(at + 2 * PAGE, 2), [0xaa, buffer[2 * PAGE as usize + 1]]);
    }

    #[test]
    fn each_address_is_overwritten_a_run_of_pages_at_a_time_and_its_byte_given_back() {
        let memory = own();
        let buffer: Vec<u8> = (0..40 * PAGE).map(|i| (i % 251) as u8).collect();
        let at = buffer.as_ptr() as u64;
        let addrs: Vec<u64> = (0..20).map(|p| at + p * PAGE + 3).chain([at + 30 * PAGE, at + 30 * PAGE + 1]).collect();
        let before: Vec<Option<u8>> = addrs.iter().map(|&a| Some(buffer[(a - at) as usize])).collect();
        let runs = std::sync::Mutex::new(Vec::new());
        let no_source = |start: u64, bytes: &mut [u8]| {
            runs.lock().unwrap().push((start, bytes.len() as u64));
            Err(io::ErrorKind::NotFound.into())
        };
        assert_eq!(memory.overwrite_each(&addrs, 0xcc, no_source).unwrap(), before, "read from the process");
        let page = |a: u64| a - a % PAGE;
        let expected = [(page(addrs[0]), 16 * PAGE), (page(addrs[16]), 4 * PAGE), (page(addrs[20]), PAGE)];
        assert_eq!(*runs.lock().unwrap(), expected, "16 pages at most, and a gap ends a run");
        for &a in &addrs {
            assert_eq!(peek(a - 1, 3), [buffer[(a - at - 1) as usize], 0xcc, buffer[(a - at + 1) as usize]]);
        }
        assert_eq!(memory.overwrite_each(&[8], 0xcc, no_source).unwrap(), [None], "not mapped");
    }

    #[test]
    fn a_span_of_many_pages_is_overwritten_in_parts_and_every_byte_given_back_in_order() {
        let memory = own();
        let pages = 3 * PARALLEL_OVERWRITE_PAGES + 5;
        let buffer: Vec<u8> = (0..pages * PAGE).map(|i| (i % 253) as u8).collect();
        let at = buffer.as_ptr() as u64;
        // Two addresses a page, a gap of a page every 50.
        let addrs: Vec<u64> =
            (0..pages).filter(|p| p % 50 != 49).flat_map(|p| [at + p * PAGE + 5, at + p * PAGE + 900]).collect();
        let before: Vec<Option<u8>> = addrs.iter().map(|&a| Some(buffer[(a - at) as usize])).collect();
        let no_source = |_: u64, _: &mut [u8]| Err(io::ErrorKind::NotFound.into());
        assert_eq!(memory.overwrite_each(&addrs, 0xcc, no_source).unwrap(), before);
        let mut expected = buffer.clone();
        for &a in &addrs {
            expected[(a - at) as usize] = 0xcc;
        }
        assert!(peek(at, buffer.len()) == expected, "each address changed, nothing else");
    }

    #[test]
    fn runs_are_shared_in_parts_of_about_as_many_pages_in_their_order() {
        let addrs: Vec<u64> = (0..100u64).map(|p| p * PAGE * if p < 50 { 1 } else { 3 }).collect();
        let runs = overwrite_runs(&addrs);
        let pages: u64 = runs.iter().map(|run| run.pages).sum();
        assert_eq!(pages, 100);
        for parts in 1..=5 {
            let split = split_by_pages(&runs, pages, parts);
            assert!(!split.is_empty() && split.len() <= parts);
            let joined: Vec<u64> =
                split.iter().flat_map(|part| part.iter().flat_map(|run| run.addrs)).copied().collect();
            assert_eq!(joined, addrs, "every address once, in order ({parts} parts)");
            let sizes: Vec<u64> = split.iter().map(|part| part.iter().map(|run| run.pages).sum()).collect();
            // Each part ends at the first run that reaches its share.
            let share = pages.div_ceil(parts as u64);
            let ends: Vec<u64> = sizes
                .iter()
                .scan(0, |sum, n| {
                    *sum += n;
                    Some(*sum)
                })
                .collect();
            for (k, &end) in ends[..ends.len() - 1].iter().enumerate() {
                let due = share * (k as u64 + 1);
                assert!(end >= due && end < due + MAX_OVERWRITE_PAGES as u64, "part {k} of {parts} ends at {end}");
            }
        }
    }

    #[test]
    fn a_source_of_the_pages_gives_the_bytes_written_back() {
        let memory = own();
        let buffer = vec![7u8; 2 * PAGE as usize];
        let at = buffer.as_ptr() as u64 + 100;
        let source = |_: u64, bytes: &mut [u8]| {
            bytes.fill(0x11);
            Ok(bytes.len())
        };
        let replaced = memory.overwrite_each(&[at, at + 3], 0xcc, source).unwrap();
        assert_eq!(replaced, [Some(0x11), Some(0x11)]);
        assert_eq!(peek(at - 1, 5), [7, 0xcc, 0x11, 0x11, 0xcc], "the source's bytes between the changes");
        memory.begin_batch();
        assert_eq!(memory.overwrite_each(&[at + 1], 0xcc, source).unwrap(), [Some(0x11)], "the batch's copy");
        assert_eq!(peek(at + 1, 1), [0x11], "not written before the batch ends");
        memory.end_batch().unwrap();
        assert_eq!(peek(at + 1, 1), [0xcc]);
    }

    #[test]
    fn reads_stop_at_the_end_of_the_mapping() {
        let memory = own();
        let mut out = [0u8; 16];
        memory.begin_batch();
        assert!(memory.read(8, &mut out).is_err());
        memory.end_batch().unwrap();
        assert!(memory.read(8, &mut out).is_err());
    }

    /// A child of this test, stopped and traced by the thread that forked
    /// it (its memory a copy of ours), killed when dropped.
    struct StoppedChild(Pid);

    impl StoppedChild {
        fn fork() -> StoppedChild {
            // SAFETY: the child makes system calls only, until it is killed.
            unsafe {
                let pid = libc::fork();
                if pid == 0 {
                    libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
                    libc::raise(libc::SIGSTOP);
                    libc::_exit(0);
                }
                let mut status = 0;
                assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
                assert!(libc::WIFSTOPPED(status));
                StoppedChild(pid)
            }
        }
    }

    impl Drop for StoppedChild {
        fn drop(&mut self) {
            // SAFETY: kills and reaps the child this test made.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }

    #[test]
    fn ptrace_words_read_and_write_what_the_memory_file_does() {
        // A page of ours with nothing mapped after it, copied into the child.
        // SAFETY: maps two fresh pages and unmaps the second.
        let page = unsafe {
            let at = libc::mmap(
                std::ptr::null_mut(),
                2 * PAGE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(at, libc::MAP_FAILED);
            libc::munmap(at.cast::<u8>().add(PAGE as usize).cast(), PAGE as usize);
            std::ptr::write_bytes(at.cast::<u8>(), 0x11, PAGE as usize);
            at as u64
        };
        let child = StoppedChild::fork();
        let words = Memory { access: Access::Words(child.0), batch: RefCell::new(None) };
        let file = Memory::open(child.0).unwrap();
        let at = page + 3;
        words.write(at, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap();
        let mut seen = [0u8; 16];
        file.read(at - 2, &mut seen).unwrap();
        assert_eq!(seen, [0x11, 0x11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x11, 0x11, 0x11]);
        let mut again = [0u8; 16];
        words.read(at - 2, &mut again).unwrap();
        assert_eq!(again, seen);
        assert_eq!(peek(at, 4), [0x11; 4], "our own copy left alone");
        // Through a batch, and up to the end of the mapping.
        words.begin_batch();
        words.write(page + PAGE - 1, &[0xaa]).unwrap();
        words.end_batch().unwrap();
        let mut end = [0u8; 8];
        assert_eq!(words.read_partial(page + PAGE - 4, &mut end).unwrap(), 4);
        assert_eq!(end[..4], [0x11, 0x11, 0x11, 0xaa]);
        assert_eq!(file.read_partial(page + PAGE - 4, &mut end).unwrap(), 4);
        assert!(words.read(page + PAGE, &mut end).is_err(), "nothing mapped there");
        assert_eq!(words.overwrite_each(&[at, page + 100], 0xcc, |_, _| Ok(0)).unwrap(), [Some(1), Some(0x11)]);
        assert_eq!(file.read_u64(page + 96).unwrap().to_le_bytes()[4], 0xcc);
        // SAFETY: unmaps the page this test mapped.
        unsafe { libc::munmap(page as *mut libc::c_void, PAGE as usize) };
    }
}
