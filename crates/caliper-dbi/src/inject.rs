//! System calls run inside a stopped tracee (the `mmap`s of the
//! trampoline and counter memory, and the `open` of the counter file).
//!
//! A `syscall` instruction is written over the two bytes at the thread's
//! program counter, the registers set for the call, one instruction is
//! stepped, and bytes and registers are put back. The caller must have
//! every other thread of the address space stopped, since for one step
//! those two bytes are not the program's.

use crate::memory::Memory;
use crate::ptrace::{self, Pid, Status};
use std::io;

/// Runs system call `nr` with `args` in stopped thread `tid`. Signals that
/// arrive meanwhile are returned for the caller to deliver later, so the
/// program loses none.
pub fn syscall(memory: &Memory, tid: Pid, nr: i64, args: [u64; 6], deferred: &mut Vec<i32>) -> io::Result<i64> {
    // The tracee runs: it must see what a batch wrote, and the step must
    // run the `syscall` written now.
    memory.unbatched(|| run_syscall(memory, tid, nr, args, deferred))?
}

fn run_syscall(memory: &Memory, tid: Pid, nr: i64, args: [u64; 6], deferred: &mut Vec<i32>) -> io::Result<i64> {
    const SYSCALL: [u8; 2] = [0x0f, 0x05];
    let saved = ptrace::registers(tid)?;
    let at = saved.rip;
    let mut original = [0u8; 2];
    memory.read(at, &mut original)?;
    memory.write(at, &SYSCALL)?;
    let mut regs = saved;
    regs.rax = nr as u64;
    regs.orig_rax = u64::MAX;
    regs.rdi = args[0];
    regs.rsi = args[1];
    regs.rdx = args[2];
    regs.r10 = args[3];
    regs.r8 = args[4];
    regs.r9 = args[5];
    let step = |deferred: &mut Vec<i32>| {
        ptrace::set_registers(tid, &regs).and_then(|()| step_once(tid, deferred)).and_then(|()| ptrace::registers(tid))
    };
    // A thread stopped inside a system call of its own (at its exec
    // event) first finishes that call, which sets RAX and runs none of
    // the thread's instructions: then the step is taken again.
    let result = step(deferred).and_then(|after| if after.rip == at { step(deferred) } else { Ok(after) });
    let restored = memory.write(at, &original).and_then(|()| ptrace::set_registers(tid, &saved));
    let after = result?;
    restored?;
    Ok(after.rax as i64)
}

/// Steps one instruction; a signal reported instead of the step is kept
/// in `deferred` and the step retried.
fn step_once(tid: Pid, deferred: &mut Vec<i32>) -> io::Result<()> {
    loop {
        ptrace::single_step(tid)?;
        match ptrace::wait(Some(tid))? {
            Some((_, Status::Stopped(libc::SIGTRAP))) => return Ok(()),
            // An interrupt of the tool's came first: step again.
            Some((_, Status::Event(ptrace::PTRACE_EVENT_STOP))) => {}
            Some((_, Status::Stopped(sig))) => deferred.push(sig),
            Some((_, other)) => {
                return Err(io::Error::other(format!("thread {tid} did not step: {other:?}")));
            }
            None => return Err(io::Error::other(format!("thread {tid} is gone"))),
        }
    }
}

/// A system call's result as the C library would return it: negative
/// values in the errno range are errors.
pub fn checked(ret: i64) -> io::Result<u64> {
    if (-4095..0).contains(&ret) { Err(io::Error::from_raw_os_error(-ret as i32)) } else { Ok(ret as u64) }
}

/// A mapping to create in the tracee.
#[derive(Debug, Clone, Copy)]
pub struct MapRequest {
    pub addr: u64,
    pub len: u64,
    pub prot: i32,
    pub flags: i32,
    /// The file descriptor (in the tracee) for a file mapping, -1 for none.
    pub fd: i64,
}

/// `mmap` in the tracee, at exactly `request.addr` or not at all
/// (`MAP_FIXED_NOREPLACE`); the mapped address.
pub fn mmap(memory: &Memory, tid: Pid, request: MapRequest, deferred: &mut Vec<i32>) -> io::Result<u64> {
    let flags = (request.flags | libc::MAP_FIXED_NOREPLACE) as u64;
    let args = [request.addr, request.len, request.prot as u64, flags, request.fd as u64, 0];
    let at = checked(syscall(memory, tid, libc::SYS_mmap, args, deferred)?)?;
    if at != request.addr {
        // A kernel older than 4.17 ignores MAP_FIXED_NOREPLACE and may map elsewhere.
        let _ = syscall(memory, tid, libc::SYS_munmap, [at, request.len, 0, 0, 0, 0], deferred);
        return Err(io::Error::other(format!("mapped at {at:#x}, not at {:#x}", request.addr)));
    }
    Ok(at)
}
