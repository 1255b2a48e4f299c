//! Starting the program to measure, seized (`PTRACE_SEIZE`) before it
//! runs a single instruction of its own.
//!
//! `PTRACE_TRACEME` would be simpler, but a tracee attached so cannot be
//! left in a job control stop (`SIGSTOP`, `SIGTSTP`, ...) as without a
//! tracer, which needs `PTRACE_LISTEN` and so `PTRACE_SEIZE`. Seizing
//! must happen between the fork and the exec, so the child waits on a
//! pipe until the tool has seized it, and reports a failed `exec` on
//! another (closed by a successful one).

use crate::ptrace::{self, Pid, Status};
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The soft limit on open descriptors that the tool had before
/// [`raise_descriptor_limit`] raised it, which the program it starts gets
/// back; `u64::MAX` while unchanged.
static PROGRAM_DESCRIPTOR_LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Raises the tool's soft limit on open descriptors to its hard limit: the
/// tool holds one for each process it follows (its memory), and under the
/// usual soft limit of 1,024 a program that forked more children than that
/// at once had those past it stopped for ever, unfollowed. The program that
/// [`spawn_seized`] starts gets the soft limit back before it runs.
pub fn raise_descriptor_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the local struct only.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= limit.rlim_max {
            return;
        }
        let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
            PROGRAM_DESCRIPTOR_LIMIT.store(limit.rlim_cur, Ordering::Relaxed);
        }
    }
}

/// Starts `program` (searched in `PATH`) with `args`, seized with ptrace
/// `options`; it is stopped at its `exec` event when this returns.
pub fn spawn_seized(program: &OsStr, args: &[OsString], options: libc::c_int) -> io::Result<Pid> {
    let argv: Vec<CString> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| CString::new(a.as_bytes()).map_err(io::Error::other))
        .collect::<io::Result<_>>()?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let descriptor_limit = PROGRAM_DESCRIPTOR_LIMIT.load(Ordering::Relaxed);
    let go = pipe()?;
    let exec_error = pipe()?;
    // SAFETY: the tool is single-threaded when it launches; the child only
    // makes system calls (and execvp, which needs no lock then) before it
    // execs or exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above; the buffers are the parent's, copied by fork.
        unsafe {
            let mut byte = 0u8;
            libc::close(go.1);
            libc::close(exec_error.0);
            // No byte: the tool could not seize it; it must not run free.
            if libc::read(go.0, (&raw mut byte).cast(), 1) != 1 {
                libc::_exit(127);
            }
            // The tool ignores SIGPIPE (as Rust programs do); the program
            // gets the default, as from a shell.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            if descriptor_limit != u64::MAX && libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur = descriptor_limit;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            libc::execvp(argv_ptrs[0], argv_ptrs.as_ptr());
            let errno = *libc::__errno_location();
            libc::write(exec_error.1, (&raw const errno).cast(), std::mem::size_of::<i32>());
            libc::_exit(127);
        }
    }
    // SAFETY: closing the descriptors of this process that the child uses.
    unsafe {
        libc::close(go.0);
        libc::close(exec_error.1);
    }
    let seized = ptrace::seize(pid, options);
    // SAFETY: writes one byte from a local; closes our ends.
    unsafe {
        if seized.is_ok() {
            libc::write(go.1, [1u8].as_ptr().cast(), 1);
        }
        libc::close(go.1);
    }
    let mut errno = 0i32;
    // SAFETY: reads at most 4 bytes into a local.
    let read = unsafe { libc::read(exec_error.0, (&raw mut errno).cast(), std::mem::size_of::<i32>()) };
    // SAFETY: closes our end.
    unsafe { libc::close(exec_error.0) };
    let failure = match seized {
        Err(e) => Some(e),
        Ok(()) if read == std::mem::size_of::<i32>() as isize => Some(io::Error::from_raw_os_error(errno)),
        Ok(()) => None,
    };
    if let Some(e) = failure {
        reap(pid);
        return Err(e);
    }
    loop {
        match ptrace::wait(Some(pid))? {
            Some((_, Status::Event(libc::PTRACE_EVENT_EXEC))) => return Ok(pid),
            // A signal before the exec (a terminal's, say): delivered.
            Some((_, Status::Stopped(sig))) => ptrace::cont(pid, sig)?,
            Some((_, Status::Exited(_) | Status::Killed(_))) | None => {
                return Err(io::Error::other("it ended before it started"));
            }
            Some(_) => ptrace::cont(pid, 0)?,
        }
    }
}

/// A pipe (read end, write end), closed on exec.
fn pipe() -> io::Result<(i32, i32)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Ends a child that did not start and collects it. It is traced: its
/// stops on the way out (the exit event) are continued until it is gone,
/// so that no stopped child is left for a later wait.
fn reap(pid: Pid) {
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    while let Ok(Some((_, status))) = ptrace::wait(Some(pid)) {
        if matches!(status, Status::Exited(_) | Status::Killed(_)) {
            break;
        }
        let _ = ptrace::cont(pid, 0);
    }
}
