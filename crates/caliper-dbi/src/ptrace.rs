//! Thin, typed wrappers over the ptrace and wait calls the engine uses.
//!
//! Every call returns an `io::Result`: a tracee can vanish between any two
//! calls (killed, exited), and the engine must treat that as an ordinary
//! event, never as a reason to panic.

use std::io;

/// A thread or process id.
pub type Pid = libc::pid_t;

/// The ptrace options every tracee gets: events for new threads, forks,
/// vforks, execs and exits, and the process killed if the tool dies while
/// it is stopped with instrumentation half applied.
pub fn trace_options(kill_on_exit: bool) -> libc::c_int {
    let mut opts = libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_TRACEEXIT
        | libc::PTRACE_O_TRACESYSGOOD;
    if kill_on_exit {
        opts |= libc::PTRACE_O_EXITKILL;
    }
    opts
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

fn request(req: libc::c_uint, tid: Pid, addr: usize, data: usize) -> io::Result<libc::c_long> {
    // SAFETY: the requests used here read or write only the buffers the
    // callers pass (sized for the request) or nothing at all.
    check(unsafe { libc::ptrace(req, tid, addr as *mut libc::c_void, data as *mut libc::c_void) })
}

/// The word at `addr` in the memory of stopped thread `tid`.
pub fn peek(tid: Pid, addr: u64) -> io::Result<u64> {
    // PEEKDATA returns the word itself, which may be -1: errno tells.
    // SAFETY: errno is this thread's; the request writes nothing of ours.
    unsafe {
        *libc::__errno_location() = 0;
        let word =
            libc::ptrace(libc::PTRACE_PEEKDATA, tid, addr as *mut libc::c_void, std::ptr::null_mut::<libc::c_void>());
        match *libc::__errno_location() {
            0 => Ok(word as u64),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// Writes `word` at `addr` in the memory of stopped thread `tid` (code
/// pages too, as a tracer may).
pub fn poke(tid: Pid, addr: u64, word: u64) -> io::Result<()> {
    request(libc::PTRACE_POKEDATA, tid, addr as usize, word as usize).map(drop)
}

/// Resumes a stopped thread, delivering `signal` (0 for none).
pub fn cont(tid: Pid, signal: i32) -> io::Result<()> {
    request(libc::PTRACE_CONT, tid, 0, signal as usize).map(drop)
}

/// Executes one instruction of a stopped thread.
pub fn single_step(tid: Pid) -> io::Result<()> {
    request(libc::PTRACE_SINGLESTEP, tid, 0, 0).map(drop)
}

/// Detaches from a stopped thread, delivering `signal` (0 for none).
pub fn detach(tid: Pid, signal: i32) -> io::Result<()> {
    request(libc::PTRACE_DETACH, tid, 0, signal as usize).map(drop)
}

/// Attaches to a running thread without stopping it (`PTRACE_SEIZE`), with
/// ptrace `options`. Unlike `PTRACE_ATTACH`, a seized thread reports job
/// control stops as such, which [`listen`] keeps stopped as without a
/// tracer; the threads and children it starts are seized too.
pub fn seize(tid: Pid, options: libc::c_int) -> io::Result<()> {
    request(libc::PTRACE_SEIZE, tid, 0, options as usize).map(drop)
}

/// Stops a seized thread (it reports a `PTRACE_EVENT_STOP`), with no signal.
pub fn interrupt(tid: Pid) -> io::Result<()> {
    request(libc::PTRACE_INTERRUPT, tid, 0, 0).map(drop)
}

/// Leaves a thread in its job control stop ([`Status::JobStop`]) stopped
/// as the program's job, as without a tracer: a `SIGCONT` wakes it, and it
/// reports to the tracer again then (a `PTRACE_EVENT_STOP`).
pub fn listen(tid: Pid) -> io::Result<()> {
    request(libc::PTRACE_LISTEN, tid, 0, 0).map(drop)
}

/// Sets the ptrace options of a stopped thread.
pub fn set_options(tid: Pid, options: libc::c_int) -> io::Result<()> {
    request(libc::PTRACE_SETOPTIONS, tid, 0, options as usize).map(drop)
}

/// The message of the last ptrace event (a new thread's id, an exit code).
pub fn event_message(tid: Pid) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    request(libc::PTRACE_GETEVENTMSG, tid, 0, &mut msg as *mut _ as usize)?;
    Ok(msg)
}

/// The signal information of a signal-delivery stop; an error (EINVAL)
/// for a group stop, which has none.
pub fn signal_info(tid: Pid) -> io::Result<libc::siginfo_t> {
    // SAFETY: siginfo_t is plain data; zero is a valid bit pattern.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    request(libc::PTRACE_GETSIGINFO, tid, 0, &mut info as *mut _ as usize)?;
    Ok(info)
}

/// The general registers of a stopped thread.
pub fn registers(tid: Pid) -> io::Result<libc::user_regs_struct> {
    // SAFETY: user_regs_struct is plain data; zero is a valid bit pattern.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    request(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _ as usize)?;
    Ok(regs)
}

/// Takes `signal` out of the signals pending for stopped thread `tid`,
/// if it is among them; whether it was. A thread that executed an `int3`
/// just as the tool interrupted it reports the interrupt's stop first, the
/// `SIGTRAP` waiting behind it: detached so, the thread would die of it.
/// Resumed, the thread reports the pending signal at once, before running
/// an instruction, and stays in that stop with the signal not delivered.
/// Another signal that comes first is sent to the thread again, to be
/// delivered later.
pub fn discard_pending(tid: Pid, signal: i32) -> io::Result<bool> {
    if !pending(tid)?.contains(&signal) {
        return Ok(false);
    }
    let mut others = Vec::new();
    cont(tid, 0)?;
    let found = loop {
        match wait(Some(tid))? {
            Some((_, Status::Stopped(sig))) if sig == signal => break Ok(true),
            Some((_, Status::Stopped(sig))) => others.push(sig),
            Some((_, Status::Exited(_) | Status::Killed(_))) | None => {
                break Err(io::Error::new(io::ErrorKind::NotFound, format!("thread {tid} is gone")));
            }
            Some(_) => {}
        }
        cont(tid, 0)?;
    };
    let pid = thread_group(tid);
    for sig in others {
        kill_thread(pid, tid, sig)?;
    }
    found
}

/// The signals pending for thread `tid` alone (not those of its process),
/// from `/proc`.
fn pending(tid: Pid) -> io::Result<Vec<i32>> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigPnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("no SigPnd in /proc/{tid}/status")))?;
    Ok((1..=64).filter(|&sig| mask & (1 << (sig - 1)) != 0).collect())
}

/// The thread group (process) of thread `tid`, from `/proc`.
pub fn thread_group(tid: Pid) -> Pid {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok())))
        .unwrap_or(tid)
}

/// Sets the general registers of a stopped thread.
pub fn set_registers(tid: Pid, regs: &libc::user_regs_struct) -> io::Result<()> {
    request(libc::PTRACE_SETREGS, tid, 0, regs as *const _ as usize).map(drop)
}

/// Sends `signal` to one thread of process `pid`.
pub fn kill_thread(pid: Pid, tid: Pid, signal: i32) -> io::Result<()> {
    // SAFETY: a plain system call with integer arguments.
    check(unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) }).map(drop)
}

/// The event of a seized thread's stops for the tracer and job control.
pub const PTRACE_EVENT_STOP: i32 = 128;

/// What `wait` reported for a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The thread's process exited with this code.
    Exited(i32),
    /// The thread's process was killed by this signal.
    Killed(i32),
    /// The thread stopped with this signal (a signal-delivery or group stop).
    Stopped(i32),
    /// The thread stopped at a ptrace event (`PTRACE_EVENT_*`; for
    /// `PTRACE_EVENT_STOP`, a stop for the tracer: a new thread's first
    /// stop, an [`interrupt`], or the end of a job control stop).
    Event(i32),
    /// The thread's process entered a job control stop (group stop) for
    /// this signal: `SIGSTOP`, `SIGTSTP`, `SIGTTIN` or `SIGTTOU`.
    JobStop(i32),
    /// The thread stopped at a system call (not requested; passed on).
    Syscall,
}

impl Status {
    fn decode(raw: i32) -> Status {
        if libc::WIFEXITED(raw) {
            Status::Exited(libc::WEXITSTATUS(raw))
        } else if libc::WIFSIGNALED(raw) {
            Status::Killed(libc::WTERMSIG(raw))
        } else {
            let sig = libc::WSTOPSIG(raw);
            let event = raw >> 16;
            let stopping = matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
            if event == PTRACE_EVENT_STOP && stopping {
                Status::JobStop(sig)
            } else if event != 0 {
                Status::Event(event)
            } else if sig == libc::SIGTRAP | 0x80 {
                Status::Syscall
            } else {
                Status::Stopped(sig)
            }
        }
    }
}

/// The change of state thread `tid` has to report, if any, without
/// waiting.
pub fn try_wait(tid: Pid) -> io::Result<Option<Status>> {
    let mut raw = 0;
    // SAFETY: waitpid writes the status into `raw` only.
    let ret = unsafe { libc::waitpid(tid, &mut raw, libc::__WALL | libc::WNOHANG) };
    match ret {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some(Status::decode(raw))),
    }
}

/// Waits for any traced thread (`tid` None) or one thread to change state.
/// `Ok(None)` when there is none left to wait for. A wait for any thread
/// interrupted by a signal to the tool comes back as
/// `ErrorKind::Interrupted`, so that the tool can act on the signal; a wait
/// for one thread (whose stop the caller needs) is resumed.
pub fn wait(tid: Option<Pid>) -> io::Result<Option<(Pid, Status)>> {
    let mut raw = 0;
    loop {
        // SAFETY: waitpid writes the status into `raw` only.
        let ret = unsafe { libc::waitpid(tid.unwrap_or(-1), &mut raw, libc::__WALL) };
        if ret != -1 {
            return Ok(Some((ret, Status::decode(raw))));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::ECHILD) => return Ok(None),
            Some(libc::EINTR) if tid.is_some() => continue,
            _ => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A child that sleeps until killed, seized and stopped by an
    /// interrupt, with `SIGTRAP` sent to it in that stop (as an `int3`
    /// executed just before the interrupt leaves it).
    fn stopped_child_with_a_trap_pending() -> Pid {
        // SAFETY: the child only sleeps, in async-signal-safe calls.
        let child = unsafe { libc::fork() };
        if child == 0 {
            loop {
                // SAFETY: a plain system call.
                unsafe { libc::pause() };
            }
        }
        seize(child, 0).unwrap();
        interrupt(child).unwrap();
        assert_eq!(wait(Some(child)).unwrap(), Some((child, Status::Event(PTRACE_EVENT_STOP))));
        kill_thread(child, child, libc::SIGTRAP).unwrap();
        assert!(pending(child).unwrap().contains(&libc::SIGTRAP));
        child
    }

    fn end(child: Pid) -> i32 {
        let mut raw = 0;
        // SAFETY: plain system calls on our own child.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            libc::waitpid(child, &mut raw, 0);
        }
        raw
    }

    #[test]
    fn a_trap_pending_behind_a_stop_is_discarded_and_the_thread_lives_on_after_a_detach() {
        let child = stopped_child_with_a_trap_pending();
        assert!(discard_pending(child, libc::SIGTRAP).unwrap());
        assert!(!pending(child).unwrap().contains(&libc::SIGTRAP));
        detach(child, 0).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(try_wait(child).unwrap(), None, "the child runs on");
        assert_eq!(libc::WTERMSIG(end(child)), libc::SIGKILL);
    }

    #[test]
    fn a_trap_left_pending_kills_the_thread_after_a_detach() {
        let child = stopped_child_with_a_trap_pending();
        detach(child, 0).unwrap();
        let mut raw = 0;
        // SAFETY: a plain system call on our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut raw, 0) }, child);
        assert!(libc::WIFSIGNALED(raw) && libc::WTERMSIG(raw) == libc::SIGTRAP, "what the discard prevents");
    }
}
