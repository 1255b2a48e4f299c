//! Reading and writing a tracee's memory through `/proc/PID/mem`: one
//! system call per block whatever its size, and writes to read-only code
//! pages work (the kernel forces them for a tracer), so breakpoints and
//! jumps need no `mprotect` in the tracee.
//!
//! Work that touches thousands of places at once (instrumenting every
//! function of a library as it loads) would pay a system call for each
//! few bytes; inside a batch ([`Memory::begin_batch`]), reads and writes
//! go to a copy of the pages instead, which reaches the tracee in a few
//! large writes when the batch ends.

use crate::ptrace::Pid;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;
/// The most pages [`Memory::prefetch`] reads at once.
const MAX_PREFETCH_PAGES: usize = 256;

/// The address space of one traced process.
#[derive(Debug)]
pub struct Memory {
    file: File,
    /// The pages read or written during a batch, while one is open.
    batch: RefCell<Option<Pages>>,
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
        Ok(Memory { file, batch: RefCell::new(None) })
    }

    /// Fills `buf` from address `addr`; an error if any byte is unmapped.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        if self.read_partial(addr, buf)? < buf.len() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("{addr:#x} is not all mapped")));
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
            let Some(page) = pages.get(&self.file, at) else { break };
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
        let Some(pages) = batch.as_mut() else { return self.file.write_all_at(bytes, addr) };
        let mut done = 0;
        while done < bytes.len() {
            let at = addr + done as u64;
            let Some(page) = pages.get(&self.file, at) else {
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
        self.prefetch_from(addrs, |at, buffer| self.file.read_at(buffer, at));
    }

    /// As [`Memory::prefetch`], with each run of pages read by `read` (its
    /// address and a buffer of its bytes; the bytes it filled): for a caller
    /// that knows the pages without reading the tracee (a module's code
    /// from its file). The pages `read` fails for are left as they were.
    pub fn prefetch_from(
        &self,
        addrs: impl IntoIterator<Item = u64>,
        read: impl Fn(u64, &mut [u8]) -> io::Result<usize>,
    ) {
        let mut batch = self.batch.borrow_mut();
        let Some(pages) = batch.as_mut() else { return };
        let mut wanted: Vec<u64> = addrs.into_iter().map(|a| a - a % PAGE).collect();
        wanted.sort_unstable();
        wanted.dedup();
        wanted.retain(|p| !pages.pages.contains_key(p));
        let mut buffer = Vec::new();
        for run in wanted.chunk_by(|a, b| a + PAGE == *b).flat_map(|run| run.chunks(MAX_PREFETCH_PAGES)) {
            buffer.resize(run.len() * PAGE as usize, 0);
            let Ok(n) = read(run[0], &mut buffer) else { continue };
            for (&at, page) in run.iter().zip(buffer[..n].chunks_exact(PAGE as usize)) {
                let bytes = Box::<[u8]>::from(page).try_into().expect("a page's bytes");
                pages.pages.insert(at, Page { bytes, dirty: None });
            }
        }
    }

    /// The pages the open batch holds, by address (for tests).
    #[cfg(test)]
    pub fn batch_pages(&self) -> Vec<u64> {
        self.batch.borrow().as_ref().map(|p| p.pages.keys().copied().collect()).unwrap_or_default()
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
                self.file.write_all_at(&run, start)?;
                run.clear();
            }
            if run.is_empty() {
                start = at;
            }
            run.extend_from_slice(&page.bytes[low..high]);
        }
        if !run.is_empty() {
            self.file.write_all_at(&run, start)?;
        }
        Ok(())
    }

    fn read_direct(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read_at(buf, addr)
    }
}

impl Pages {
    /// The copy of the page holding `addr`, read on first use; None where
    /// the page is not mapped.
    fn get(&mut self, file: &File, addr: u64) -> Option<&mut Page> {
        let base = addr - addr % PAGE;
        match self.pages.entry(base) {
            Entry::Occupied(page) => Some(page.into_mut()),
            Entry::Vacant(place) => {
                let mut bytes = Box::new([0u8; PAGE as usize]);
                file.read_exact_at(&mut bytes[..], base).ok()?;
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
    fn reads_stop_at_the_end_of_the_mapping() {
        let memory = own();
        let mut out = [0u8; 16];
        memory.begin_batch();
        assert!(memory.read(8, &mut out).is_err());
        memory.end_batch().unwrap();
        assert!(memory.read(8, &mut out).is_err());
    }
}
