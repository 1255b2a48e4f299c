//! The `perf_event_open` binding that the runtime's counter services
//! (`libpfm`, `perf_topdown`) and `cali-run`'s sampling share: the
//! kernel's `struct perf_event_attr`, the system call, the flag and
//! sample-type bits they use, and the events known by name (the perf
//! tool's names, and raw `r<hex>` codes).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// `perf_event_attr.type`: a generalised hardware event (needs a PMU).
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `perf_event_attr.type`: a software event of the kernel's.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// `perf_event_attr.type`: a raw, model-specific PMU event code.
pub const PERF_TYPE_RAW: u32 = 4;

/// `sample_type` bits.
pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
/// The user registers chosen by `sample_regs_user`, and a copy of the
/// top `sample_stack_user` bytes of the user stack: what a sampler needs
/// to unwind by the modules' CFI.
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;

/// `sample_regs_user` bits of x86-64's registers (`perf_event_x86_regs`).
pub const REG_X86_BP: u64 = 1 << 6;
pub const REG_X86_SP: u64 = 1 << 7;
pub const REG_X86_IP: u64 = 1 << 8;

/// `read_format`: all the group's counts in one read.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;

/// `perf_event_attr` flag bits (the bit field after `read_format`).
pub const INHERIT: u64 = 1 << 1;
/// `exclude_kernel`, for when the kernel allows user counting only.
pub const EXCLUDE_KERNEL: u64 = 1 << 5;
/// `exclude_hv`: the hypervisor's share is never the program's.
pub const EXCLUDE_HV: u64 = 1 << 6;
/// `freq`: `sample_period` is a frequency, the kernel adjusting the period.
pub const FREQ: u64 = 1 << 10;
/// `precise_ip` (two bits) starts here.
pub const PRECISE_IP_SHIFT: u64 = 15;
pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;

/// `perf_event_open` flag: the descriptor closed on exec.
pub const PERF_FLAG_FD_CLOEXEC: u64 = 8;

/// Ring-buffer record types.
pub const RECORD_LOST: u32 = 2;
pub const RECORD_SAMPLE: u32 = 9;

/// `struct perf_event_attr` up to `sample_max_stack` (`PERF_ATTR_SIZE_VER5`),
/// the kernel's layout.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfEventAttr {
    pub kind: u32,
    /// Set by [`open`].
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved: u16,
}

/// `perf_event_open(attr, pid, cpu, group, flags)`: `pid` 0 and `cpu` -1
/// follow the calling thread on any processor; `group` -1 makes a leader.
pub fn open(attr: &PerfEventAttr, pid: i32, cpu: i32, group: i32, flags: u64) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr { size: std::mem::size_of::<PerfEventAttr>() as u32, ..*attr };
    // SAFETY: a valid attribute struct of the size it says; the kernel
    // reads it and returns a descriptor or an error.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, pid, cpu, group, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just gave, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// An event: its `perf_event_attr` type and config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventCode {
    pub kind: u32,
    pub config: u64,
}

/// The events known by name (the perf tool's names).
const EVENTS: &[(&str, EventCode)] = &[
    ("cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 0 }),
    ("cpu-cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 0 }),
    ("instructions", EventCode { kind: PERF_TYPE_HARDWARE, config: 1 }),
    ("cache-references", EventCode { kind: PERF_TYPE_HARDWARE, config: 2 }),
    ("cache-misses", EventCode { kind: PERF_TYPE_HARDWARE, config: 3 }),
    ("branches", EventCode { kind: PERF_TYPE_HARDWARE, config: 4 }),
    ("branch-instructions", EventCode { kind: PERF_TYPE_HARDWARE, config: 4 }),
    ("branch-misses", EventCode { kind: PERF_TYPE_HARDWARE, config: 5 }),
    ("bus-cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 6 }),
    ("stalled-cycles-frontend", EventCode { kind: PERF_TYPE_HARDWARE, config: 7 }),
    ("stalled-cycles-backend", EventCode { kind: PERF_TYPE_HARDWARE, config: 8 }),
    ("ref-cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 9 }),
    ("cpu-clock", EventCode { kind: PERF_TYPE_SOFTWARE, config: 0 }),
    ("task-clock", EventCode { kind: PERF_TYPE_SOFTWARE, config: 1 }),
    ("page-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 2 }),
    ("faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 2 }),
    ("context-switches", EventCode { kind: PERF_TYPE_SOFTWARE, config: 3 }),
    ("cs", EventCode { kind: PERF_TYPE_SOFTWARE, config: 3 }),
    ("cpu-migrations", EventCode { kind: PERF_TYPE_SOFTWARE, config: 4 }),
    ("migrations", EventCode { kind: PERF_TYPE_SOFTWARE, config: 4 }),
    ("minor-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 5 }),
    ("major-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 6 }),
    ("alignment-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 7 }),
    ("emulation-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 8 }),
];

/// The event called `name`: one of the perf tool's names (`cycles`,
/// `instructions`, `task-clock`, ...), or a raw PMU code `r<hex>` (as
/// `perf -e r00c0`).
pub fn event(name: &str) -> Option<EventCode> {
    if let Some(&(_, code)) = EVENTS.iter().find(|(n, _)| *n == name) {
        return Some(code);
    }
    let hex = name.strip_prefix('r').filter(|h| !h.is_empty() && h.len() <= 16)?;
    u64::from_str_radix(hex, 16).ok().map(|config| EventCode { kind: PERF_TYPE_RAW, config })
}

/// Why the kernel refused an event, in words.
pub fn why_refused(event: EventCode, e: &io::Error) -> String {
    let hardware = matches!(event.kind, PERF_TYPE_HARDWARE | PERF_TYPE_RAW);
    match (hardware, e.raw_os_error()) {
        (true, Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV)) => {
            "no hardware performance counters on this machine".to_string()
        }
        (_, Some(libc::EACCES | libc::EPERM)) => {
            format!("not permitted ({e}; see /proc/sys/kernel/perf_event_paranoid)")
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_raw_codes() {
        assert_eq!(event("instructions"), Some(EventCode { kind: PERF_TYPE_HARDWARE, config: 1 }));
        assert_eq!(event("task-clock"), Some(EventCode { kind: PERF_TYPE_SOFTWARE, config: 1 }));
        assert_eq!(event("r00c0"), Some(EventCode { kind: PERF_TYPE_RAW, config: 0xc0 }));
        assert_eq!(event("r"), None);
        assert_eq!(event("rzz"), None);
        assert_eq!(event("spoons"), None);
    }

    #[test]
    fn the_attribute_has_the_kernels_size() {
        // PERF_ATTR_SIZE_VER5
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
    }

    #[test]
    fn a_software_event_opens_on_the_calling_thread() {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            config: 1,
            flags: EXCLUDE_KERNEL | EXCLUDE_HV,
            ..PerfEventAttr::default()
        };
        match open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) {
            Ok(_) => {}
            // A kernel that forbids it (perf_event_paranoid) says so.
            Err(e) => assert!(why_refused(event("task-clock").unwrap(), &e).contains("not permitted"), "{e}"),
        }
    }
}
