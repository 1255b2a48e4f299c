//! Bringing an interrupted thread to a stop without waiting on it for
//! ever.
//!
//! A `PTRACE_INTERRUPT` stops a thread the next time it would run the
//! program's code, but a thread blocked in the kernel may not get there
//! for a long time: a `vfork` parent sleeps until its child execs or
//! exits, and if the tool holds that child at a breakpoint, a wait for the
//! parent never ends. Such a thread needs no stop, though: with the
//! interrupt pending it runs none of the program's instructions before its
//! stop, which the event loop takes whenever it comes, and the kernel says
//! where it will resume (`/proc/TID/syscall`). So the code may change
//! meanwhile, except at that address.
//!
//! A thread neither stopped nor blocked in the kernel within a generous
//! bound is stalled: something the tool cannot mend, which ends the
//! measurement rather than the program.

use crate::ptrace::{self, Pid, Status};
use std::time::{Duration, Instant};

/// How long an interrupted thread may stay runnable without stopping
/// before the tool gives up on it.
pub(super) const STALL_LIMIT: Duration = Duration::from_secs(10);

/// How long an interrupted thread is left to stop by itself before the
/// tool asks the kernel whether it is blocked (most stop in microseconds).
const SETTLE: Duration = Duration::from_millis(1);

/// How long the tool only yields the processor between two looks (a
/// sleep lasts 50 µs or more, the kernel's timer slack).
const SPIN: Duration = Duration::from_micros(100);

/// Where an interrupted thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Halt {
    /// It reported this change of state.
    Reported(Status),
    /// It is stopped for the tool, its stop taken earlier.
    Stopped,
    /// Blocked in the kernel, to resume at this address: it runs nothing
    /// before its stop, which is still to come.
    Held(u64),
    /// Neither stopped nor blocked after the limit.
    Stalled,
    /// No longer a thread the tool can wait for.
    Gone,
}

/// Waits up to `limit` for thread `tid`, which has been interrupted, to
/// stop or to be found blocked in the kernel.
pub(super) fn halt(tid: Pid, limit: Duration) -> Halt {
    let start = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        match ptrace::try_wait(tid) {
            Ok(Some(status)) => return Halt::Reported(status),
            Ok(None) => {}
            Err(_) => return Halt::Gone,
        }
        if start.elapsed() >= SETTLE {
            // Registers can be read only of a thread in a ptrace stop; if
            // its stop is not waiting to be taken, it was taken before.
            if ptrace::registers(tid).is_ok() {
                return match ptrace::try_wait(tid) {
                    Ok(Some(status)) => Halt::Reported(status),
                    Ok(None) => Halt::Stopped,
                    Err(_) => Halt::Gone,
                };
            }
            if let Some(pc) = blocked_at(tid) {
                return Halt::Held(pc);
            }
        }
        if start.elapsed() >= limit {
            return Halt::Stalled;
        }
        if start.elapsed() < SPIN {
            std::thread::yield_now();
            continue;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
}

/// Where thread `tid` resumes the program's code, if it is blocked in the
/// kernel (in a system call or otherwise asleep); None while it runs.
fn blocked_at(tid: Pid) -> Option<u64> {
    let line = std::fs::read_to_string(format!("/proc/{tid}/syscall")).ok()?;
    parse_blocked_at(&line)
}

/// The resume address of a `/proc/TID/syscall` line: `running`, or the
/// system call's number (-1 for none), its arguments, and the stack
/// pointer and program counter last.
fn parse_blocked_at(line: &str) -> Option<u64> {
    let line = line.trim();
    if line == "running" {
        return None;
    }
    let pc = line.split_whitespace().last()?;
    u64::from_str_radix(pc.strip_prefix("0x")?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_resume_address_of_a_blocked_thread() {
        assert_eq!(parse_blocked_at("running\n"), None);
        let in_read = "0 0x3 0x7ffd1 0x10 0x0 0x0 0x0 0x7ffd1a0 0x7f12345678\n";
        assert_eq!(parse_blocked_at(in_read), Some(0x7f12345678));
        assert_eq!(parse_blocked_at("-1 0x7ffc8 0x401136\n"), Some(0x401136), "asleep outside a system call");
        assert_eq!(parse_blocked_at(""), None);
    }
}
