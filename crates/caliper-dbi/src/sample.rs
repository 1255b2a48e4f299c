//! The `sample` collector: the program's instruction pointer and call
//! chain, sampled by the kernel through `perf_event_open` on the CPU time
//! of each of its threads (the software `task-clock` event, which needs no
//! PMU), with `inherit` so that threads and children started later are
//! sampled too. The kernel maps no buffer for an inherited event that
//! follows a task on every processor, so there is one event and one ring
//! buffer per processor, each following the task there.
//!
//! The kernel walks user call chains by frame pointers: in code built
//! without them a chain is short (the sampled function and whatever the
//! frame-pointer walk finds).

use crate::ptrace::Pid;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `struct perf_event_attr` up to `sample_max_stack` (`PERF_ATTR_SIZE_VER5`),
/// the kernel's layout.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const INHERIT: u64 = 1 << 1;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
const PERF_FLAG_FD_CLOEXEC: u64 = 8;
const RECORD_LOST: u32 = 2;
const RECORD_SAMPLE: u32 = 9;
/// Call-chain entries at or above this are context markers, not addresses.
const CONTEXT_MARKERS: u64 = 0xffff_ffff_ffff_f000;
/// Data pages of the ring buffer (16 MiB).
const DATA_PAGES: usize = 4096;

/// One sample: the process and the call chain, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub pid: Pid,
    pub chain: Vec<u64>,
}

/// The sampling events, one per processor.
pub struct Sampler {
    rings: Vec<Ring>,
    /// Samples the kernel could not write (a full buffer).
    pub lost: u64,
}

/// One processor's event and its ring buffer.
struct Ring {
    _fd: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    page: usize,
}

impl Sampler {
    /// Samples process `pid` (and what it starts later) `frequency` times
    /// per second of each thread's CPU time.
    pub fn open(pid: Pid, frequency: u64) -> io::Result<Sampler> {
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as i32;
        let rings = (0..cpus).map(|cpu| Ring::open(pid, cpu, frequency)).collect::<io::Result<Vec<Ring>>>()?;
        Ok(Sampler { rings, lost: 0 })
    }

    /// The samples written since the last drain.
    pub fn drain(&mut self) -> Vec<Sample> {
        let mut samples = Vec::new();
        for ring in &self.rings {
            self.lost += ring.drain(&mut samples);
        }
        samples
    }
}

impl Ring {
    fn open(pid: Pid, cpu: i32, frequency: u64) -> io::Result<Ring> {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_TASK_CLOCK,
            sample_period: 1_000_000_000 / frequency.clamp(1, 100_000),
            sample_type: SAMPLE_IP | SAMPLE_TID | SAMPLE_CALLCHAIN,
            flags: INHERIT | EXCLUDE_KERNEL | EXCLUDE_HV | EXCLUDE_CALLCHAIN_KERNEL,
            wakeup_events: 1,
            ..PerfEventAttr::default()
        };
        // SAFETY: a valid attribute struct; the event follows process
        // `pid` (and, inherited, its new threads and children) on `cpu`.
        let fd = unsafe {
            libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the kernel just gave, owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let ring_len = page * (1 + DATA_PAGES);
        // SAFETY: maps the event's buffer; checked below.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring { _fd: fd, ring: ring.cast(), ring_len, page })
    }

    /// Appends the samples written since the last drain to `samples`; the
    /// number the kernel reported lost.
    fn drain(&self, samples: &mut Vec<Sample>) -> u64 {
        // The control page: data_head at 1024, data_tail at 1032.
        // SAFETY: both lie in the mapped control page; head is read with
        // acquire order (the kernel's release), tail written with release.
        let (head_ptr, tail_ptr) = unsafe {
            (
                self.ring.add(1024) as *const std::sync::atomic::AtomicU64,
                self.ring.add(1032) as *const std::sync::atomic::AtomicU64,
            )
        };
        let (head, tail) = unsafe {
            (
                (*head_ptr).load(std::sync::atomic::Ordering::Acquire),
                (*tail_ptr).load(std::sync::atomic::Ordering::Relaxed),
            )
        };
        let size = (self.page * DATA_PAGES) as u64;
        // SAFETY: the data pages follow the control page.
        let data = unsafe { std::slice::from_raw_parts(self.ring.add(self.page), size as usize) };
        let byte = |at: u64| data[(at % size) as usize];
        let read = |at: u64, n: usize| -> u64 { (0..n).map(|i| u64::from(byte(at + i as u64)) << (8 * i)).sum() };
        let mut lost = 0;
        let mut at = tail;
        while at + 8 <= head {
            let kind = read(at, 4) as u32;
            let len = read(at + 6, 2);
            if len < 8 || at + len > head {
                break;
            }
            let body = at + 8;
            match kind {
                RECORD_SAMPLE if len >= 32 => {
                    let pid = read(body + 8, 4) as Pid;
                    let nr = read(body + 16, 8).min((len - 32) / 8);
                    let chain: Vec<u64> =
                        (0..nr).map(|i| read(body + 24 + i * 8, 8)).filter(|&ip| ip < CONTEXT_MARKERS).collect();
                    let chain = if chain.is_empty() { vec![read(body, 8)] } else { chain };
                    samples.push(Sample { pid, chain });
                }
                RECORD_LOST if len >= 24 => lost += read(body + 8, 8),
                _ => {}
            }
            at += len;
        }
        // SAFETY: see above.
        unsafe { (*tail_ptr).store(at, std::sync::atomic::Ordering::Release) };
        lost
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once.
        unsafe { libc::munmap(self.ring.cast(), self.ring_len) };
    }
}
