//! The `sample` collector: the program's instruction pointer and call
//! chain, sampled by the kernel through `perf_event_open` on the CPU time
//! of each of its threads (by default the software `task-clock` event,
//! which needs no PMU; or on any event, `cycles` say, at a frequency the
//! kernel keeps by adjusting the period), with `inherit` so that threads
//! and children started later are sampled too. The kernel maps no buffer for an inherited event that
//! follows a task on every processor, so there is one event and one ring
//! buffer per processor, each following the task there.
//!
//! The kernel walks user call chains by frame pointers: in code built
//! without them a chain is short (the sampled function and whatever the
//! frame-pointer walk finds, which the engine cuts at the first return
//! address outside the process's code). So each sample also carries the
//! thread's PC, SP and BP and a copy of the top of its stack, from which
//! the engine unwinds by the modules' CFI.

use crate::ptrace::Pid;
use caliper_perf::{
    EXCLUDE_CALLCHAIN_KERNEL, EXCLUDE_HV, EXCLUDE_KERNEL, EventCode, FREQ, INHERIT, PERF_FLAG_FD_CLOEXEC,
    PERF_TYPE_SOFTWARE, PerfEventAttr, RECORD_LOST, RECORD_SAMPLE, REG_X86_BP, REG_X86_IP, REG_X86_SP,
    SAMPLE_CALLCHAIN, SAMPLE_IP, SAMPLE_REGS_USER, SAMPLE_STACK_USER, SAMPLE_TID,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The software clocks, whose period is in nanoseconds of CPU time.
const CPU_CLOCK: u64 = 0;
const TASK_CLOCK: u64 = 1;
/// The default event: each thread's CPU time.
pub const TASK_CLOCK_EVENT: EventCode = EventCode { kind: PERF_TYPE_SOFTWARE, config: TASK_CLOCK };

/// Call-chain entries at or above this are context markers, not addresses.
const CONTEXT_MARKERS: u64 = 0xffff_ffff_ffff_f000;
/// Data pages of the ring buffer (16 MiB).
const DATA_PAGES: usize = 4096;
/// The bytes of user stack copied with each sample: room for the frames
/// of a few dozen calls, at 1 kHz a few MB/s through the buffer.
const STACK_BYTES: u32 = 8192;

/// One sample: the process, the call chain the kernel found (innermost
/// first), and the thread's user state where the kernel copied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub pid: Pid,
    pub chain: Vec<u64>,
    pub user: Option<UserState>,
}

/// A thread's registers at a sample, and the top of its stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserState {
    pub pc: u64,
    pub sp: u64,
    pub bp: u64,
    /// The bytes from `sp` up.
    pub stack: Vec<u8>,
}

impl UserState {
    /// The stack word at `addr`, where the copy holds it.
    pub fn read(&self, addr: u64) -> Option<u64> {
        let at = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let word = self.stack.get(at..at.checked_add(8)?)?;
        Some(u64::from_le_bytes(word.try_into().ok()?))
    }
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
    /// Samples process `pid` (and what it starts later) on `event`:
    /// `frequency` times per second of each thread's CPU time for the
    /// software clocks, else about `frequency` times per second of the
    /// event's occurrence.
    pub fn open(pid: Pid, event: EventCode, frequency: u64) -> io::Result<Sampler> {
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as i32;
        let frequency = frequency.clamp(1, 100_000);
        let clock = event.kind == PERF_TYPE_SOFTWARE && matches!(event.config, CPU_CLOCK | TASK_CLOCK);
        let attr = PerfEventAttr {
            kind: event.kind,
            config: event.config,
            // A clock's period is its nanoseconds; with FREQ, the field is
            // the frequency and the kernel sets the period.
            sample_period: if clock { 1_000_000_000 / frequency } else { frequency },
            sample_type: SAMPLE_IP | SAMPLE_TID | SAMPLE_CALLCHAIN | SAMPLE_REGS_USER | SAMPLE_STACK_USER,
            sample_regs_user: REG_X86_BP | REG_X86_SP | REG_X86_IP,
            sample_stack_user: STACK_BYTES,
            flags: INHERIT | EXCLUDE_KERNEL | EXCLUDE_HV | EXCLUDE_CALLCHAIN_KERNEL | if clock { 0 } else { FREQ },
            wakeup_events: 1,
            ..PerfEventAttr::default()
        };
        let rings = (0..cpus).map(|cpu| Ring::open(&attr, pid, cpu)).collect::<io::Result<Vec<Ring>>>()?;
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
    fn open(attr: &PerfEventAttr, pid: Pid, cpu: i32) -> io::Result<Ring> {
        // The event follows process `pid` (and, inherited, its new threads
        // and children) on `cpu`.
        let fd = caliper_perf::open(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC)?;
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
                    let user = user_state(body + 24 + nr * 8, at + len, read, |from, n| {
                        (0..n).map(|i| byte(from + i as u64)).collect()
                    });
                    samples.push(Sample { pid, chain, user });
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

/// The registers and stack copy of a sample record whose call chain ends
/// at `at` and the record at `end`: `{ abi, bp, sp, ip }` (no registers
/// where `abi` is 0, for a kernel thread) then `{ size, bytes[size],
/// dyn_size }`, of which the first `dyn_size` bytes hold the stack.
fn user_state(
    at: u64,
    end: u64,
    read: impl Fn(u64, usize) -> u64,
    copy: impl Fn(u64, usize) -> Vec<u8>,
) -> Option<UserState> {
    if at + 8 > end || read(at, 8) == 0 || at + 40 > end {
        return None;
    }
    let (bp, sp, pc) = (read(at + 8, 8), read(at + 16, 8), read(at + 24, 8));
    let size = read(at + 32, 8);
    let bytes = at + 40;
    if size == 0 || bytes + size + 8 > end {
        return None;
    }
    let used = read(bytes + size, 8).min(size);
    Some(UserState { pc, sp, bp, stack: copy(bytes, used as usize) })
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once.
        unsafe { libc::munmap(self.ring.cast(), self.ring_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads little-endian words and bytes of `record` as the ring's
    /// readers do.
    fn parse(record: &[u8]) -> Option<UserState> {
        let read = |at: u64, n: usize| -> u64 { (0..n).map(|i| u64::from(record[at as usize + i]) << (8 * i)).sum() };
        user_state(0, record.len() as u64, read, |from, n| record[from as usize..from as usize + n].to_vec())
    }

    fn words(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn the_stack_copy_is_the_part_the_kernel_filled() {
        // abi 2 (64-bit), BP, SP, IP, size 24, three words of which two
        // were filled (dyn_size 16).
        let record = words(&[2, 0x7000, 0x6ff0, 0x401000, 24, 0x11, 0x401234, 0xdead, 16]);
        let user = parse(&record).unwrap();
        assert_eq!((user.pc, user.sp, user.bp), (0x401000, 0x6ff0, 0x7000));
        assert_eq!(user.read(0x6ff0), Some(0x11));
        assert_eq!(user.read(0x6ff8), Some(0x401234));
        assert_eq!(user.read(0x7000), None, "past what the kernel copied");
        assert_eq!(user.read(0x6fe8), None, "below the stack pointer");
    }

    #[test]
    fn no_registers_or_no_stack_give_no_state() {
        assert_eq!(parse(&words(&[0, 0])), None, "abi 0: no registers");
        assert_eq!(parse(&words(&[2, 1, 2, 3, 0])), None, "no stack copied");
        assert_eq!(parse(&words(&[2, 1, 2, 3, 64, 0])), None, "a record shorter than it says");
    }
}
