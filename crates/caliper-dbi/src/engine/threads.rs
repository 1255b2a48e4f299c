//! Thread and process control: stopping every thread of an address space
//! while its code changes, resuming, and letting processes go.

use super::{Engine, Exit};
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
        for &(tid, pid) in &targets {
            if ptrace::kill_thread(pid, tid, libc::SIGSTOP).is_ok()
                && let Some(t) = self.threads.get_mut(&tid)
            {
                t.expect_stop = true;
            }
        }
        let mut stopped = Vec::new();
        for (tid, _) in targets {
            let Ok(Some((_, status))) = ptrace::wait(Some(tid)) else { continue };
            if let Some(t) = self.threads.get_mut(&tid) {
                t.running = false;
                if status == Status::Stopped(libc::SIGSTOP) && t.expect_stop {
                    t.expect_stop = false;
                    stopped.push(tid);
                    continue;
                }
            }
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

    /// Stops every thread, takes all probes out and detaches.
    pub(super) fn let_go_all(&mut self) {
        self.take_samples();
        let tids: Vec<(Pid, Pid)> =
            self.threads.iter().filter(|(_, t)| t.running).map(|(&tid, t)| (tid, t.pid)).collect();
        for &(tid, pid) in &tids {
            let _ = ptrace::kill_thread(pid, tid, libc::SIGSTOP);
        }
        let mut signals = HashMap::new();
        for &(tid, _) in &tids {
            // Whatever each reports, it is stopped now; a SIGSTOP of ours
            // still queued is cancelled by the SIGCONT below.
            if let Ok(Some((_, Status::Stopped(sig)))) = ptrace::wait(Some(tid))
                && sig != libc::SIGSTOP
            {
                signals.insert(tid, sig);
            }
        }
        // So are the threads whose stops wait in `pending`.
        for (tid, status) in std::mem::take(&mut self.pending) {
            if let Status::Stopped(sig) = status {
                signals.insert(tid, sig);
            }
        }
        // A thread stopped at one of our breakpoints goes back to the
        // instruction, which is the program's own again after the strip.
        let trapped: Vec<Pid> = signals.iter().filter(|(_, s)| **s == libc::SIGTRAP).map(|(t, _)| *t).collect();
        for tid in trapped {
            let Some(image) =
                self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).and_then(|p| self.images.get(&p.image))
            else {
                continue;
            };
            if let Ok(mut regs) = ptrace::registers(tid)
                && image.probes.contains_key(&regs.rip.wrapping_sub(1))
            {
                regs.rip -= 1;
                let _ = ptrace::set_registers(tid, &regs);
                signals.remove(&tid);
            }
        }
        let pids: Vec<Pid> = self.processes.keys().copied().collect();
        for pid in &pids {
            self.let_go(*pid, &signals);
        }
        for pid in pids {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
        if !self.attached {
            // The launched program is still our child: its exit code is ours.
            let mut raw = 0;
            // SAFETY: waitpid writes the status only.
            if unsafe { libc::waitpid(self.main, &mut raw, 0) } == self.main {
                self.exit = Some(if libc::WIFEXITED(raw) {
                    Exit::Code(libc::WEXITSTATUS(raw))
                } else {
                    Exit::Signal(libc::WTERMSIG(raw))
                });
            }
        }
    }
}

/// The thread group (process) of thread `tid`, from `/proc`.
pub(super) fn thread_group(tid: Pid) -> Pid {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok())))
        .unwrap_or(tid)
}
