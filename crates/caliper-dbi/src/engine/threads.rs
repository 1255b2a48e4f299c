//! Thread and process control: stopping every thread of an address space
//! while its code changes, resuming, and letting processes go.

use super::{Engine, Exit};
use crate::image::ProbeState;
use crate::ptrace::{self, Pid, Status};
use std::collections::HashMap;

impl Engine {
    /// Stops every running thread that shares image `image_id`, other than
    /// `except`; the threads stopped (not those that reported something
    /// else first: their stops wait in `pending`).
    pub(super) fn stop_world(&mut self, image_id: usize, except: Pid) -> Vec<Pid> {
        let targets: Vec<(Pid, Pid)> = self
            .threads
            .iter()
            .filter(|(tid, t)| {
                **tid != except && t.running && self.processes.get(&t.pid).is_some_and(|p| p.image == image_id)
            })
            .map(|(tid, t)| (*tid, t.pid))
            .collect();
        // An interrupt, not a SIGSTOP: no signal the program could see.
        let targets: Vec<Pid> =
            targets.into_iter().filter(|&(tid, _)| ptrace::interrupt(tid).is_ok()).map(|t| t.0).collect();
        let mut stopped = Vec::new();
        for tid in targets {
            let Ok(Some((_, status))) = ptrace::wait(Some(tid)) else { continue };
            if let Some(t) = self.threads.get_mut(&tid) {
                t.running = false;
                if status == Status::Event(ptrace::PTRACE_EVENT_STOP) {
                    stopped.push(tid);
                    continue;
                }
            }
            // Something else came first (the interrupt's stop follows it).
            self.pending.push_back((tid, status));
        }
        stopped
    }

    pub(super) fn resume_world(&mut self, stopped: &[Pid]) {
        for &tid in stopped {
            self.resume(tid, 0);
        }
    }

    pub(super) fn resume(&mut self, tid: Pid, sig: i32) {
        if ptrace::cont(tid, sig).is_ok()
            && let Some(t) = self.threads.get_mut(&tid)
        {
            t.running = true;
        }
    }

    /// Takes the probes out of process `pid` and detaches from it; its
    /// threads get the signals they stopped with (`signals`, by thread).
    pub(super) fn let_go(&mut self, pid: Pid, signals: &HashMap<Pid, i32>) {
        if let Some(process) = self.processes.remove(&pid) {
            let shared = self.processes.values().any(|p| p.image == process.image);
            if !shared && let Some(mut image) = self.images.remove(&process.image) {
                let _ = image.strip();
            }
        }
        let tids: Vec<Pid> = self.threads.iter().filter(|(_, t)| t.pid == pid).map(|(&tid, _)| tid).collect();
        for tid in tids {
            self.threads.remove(&tid);
            let _ = ptrace::detach(tid, signals.get(&tid).copied().unwrap_or(0));
        }
    }

    /// Stops every thread, takes all probes out and detaches. Processes in
    /// a job control stop stay stopped.
    pub(super) fn let_go_all(&mut self) {
        self.take_samples();
        // The running threads, and those left in a job control stop (which
        // must be stopped for the tool to detach, and stay in the job's
        // stop after).
        let tids: Vec<Pid> =
            self.threads.iter().filter(|(_, t)| t.running || t.listening).map(|(&tid, _)| tid).collect();
        for &tid in &tids {
            let _ = ptrace::interrupt(tid);
        }
        let mut signals = HashMap::new();
        for &tid in &tids {
            // Whatever each reports, it is stopped now.
            if let Ok(Some((_, Status::Stopped(sig)))) = ptrace::wait(Some(tid)) {
                signals.insert(tid, sig);
            }
        }
        // So are the threads whose stops wait in `pending`.
        for (tid, status) in std::mem::take(&mut self.pending) {
            if let Status::Stopped(sig) = status {
                signals.insert(tid, sig);
            }
        }
        // A thread stopped at one of our breakpoints (or stopped at one
        // while the tool handled it) goes back to the instruction, which is
        // the program's own again after the strip.
        let all: Vec<Pid> = self.threads.keys().copied().collect();
        for tid in all {
            if self.rewind_from_breakpoint(tid) && signals.get(&tid) == Some(&libc::SIGTRAP) {
                signals.remove(&tid);
            }
        }
        let pids: Vec<Pid> = self.processes.keys().copied().collect();
        for pid in &pids {
            self.let_go(*pid, &signals);
        }
        if !self.attached {
            // The launched program is still our child: its exit code is ours.
            let mut raw = 0;
            let waited = loop {
                // SAFETY: waitpid writes the status only.
                let ret = unsafe { libc::waitpid(self.main, &mut raw, 0) };
                if ret != -1 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                    break ret;
                }
            };
            if waited == self.main {
                self.exit = Some(if libc::WIFEXITED(raw) {
                    Exit::Code(libc::WEXITSTATUS(raw))
                } else {
                    Exit::Signal(libc::WTERMSIG(raw))
                });
            }
        }
    }

    /// Moves stopped thread `tid` back onto the entry `int3` it has just
    /// executed, if it did; whether it had executed one of the tool's
    /// `int3`s. A thread at the new-call-site trap of an arc trampoline
    /// stays where it is, past the trap: the rest of the trampoline (which
    /// stays mapped) takes it on into the function, as the tool would have
    /// (its call goes without an arc); its SIGTRAP, passed on, would kill
    /// the program.
    fn rewind_from_breakpoint(&self, tid: Pid) -> bool {
        let Some(image) =
            self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).and_then(|p| self.images.get(&p.image))
        else {
            return false;
        };
        let Ok(mut regs) = ptrace::registers(tid) else { return false };
        let at = regs.rip.wrapping_sub(1);
        if image.traps.contains_key(&at) {
            return true;
        }
        let trapped =
            image.probes.get(&at).is_some_and(|p| matches!(p.state, ProbeState::Armed | ProbeState::Displaced { .. }));
        if trapped {
            regs.rip = at;
            let _ = ptrace::set_registers(tid, &regs);
        }
        trapped
    }
}

/// The thread group (process) of thread `tid`, from `/proc`.
pub(super) fn thread_group(tid: Pid) -> Pid {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok())))
        .unwrap_or(tid)
}
