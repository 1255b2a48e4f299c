//! Thread and process control: stopping every thread of an address space
//! while its code changes, resuming, and letting processes go.

use super::halt::{Halt, STALL_LIMIT, halt};
use super::{Engine, Exit};
use crate::image::ProbeState;
use crate::ptrace::{self, Pid, Status};
use std::collections::HashMap;

impl Engine {
    /// Stops every running thread that shares image `image_id`, other than
    /// `except`; the threads stopped (not those that reported something
    /// else first: their stops wait in `pending`). A thread blocked in the
    /// kernel is held instead (see [`super::halt`]): its stop comes later
    /// through the event loop, and [`Engine::held_at`] says where it
    /// resumes. A thread that does neither ends the measurement.
    pub(super) fn stop_world(&mut self, image_id: usize, except: Pid) -> Vec<Pid> {
        let targets: Vec<Pid> = self
            .threads
            .iter()
            .filter(|(tid, t)| {
                **tid != except
                    && t.running
                    && t.held_at.is_none()
                    && self.processes.get(&t.pid).is_some_and(|p| p.image == image_id)
            })
            .map(|(tid, _)| *tid)
            .collect();
        // An interrupt, not a SIGSTOP: no signal the program could see.
        let targets: Vec<Pid> = targets.into_iter().filter(|&tid| ptrace::interrupt(tid).is_ok()).collect();
        let mut stopped = Vec::new();
        for tid in targets {
            let status = match halt(tid, STALL_LIMIT) {
                Halt::Reported(status) => status,
                Halt::Stopped => Status::Event(ptrace::PTRACE_EVENT_STOP),
                Halt::Held(pc) => {
                    if let Some(t) = self.threads.get_mut(&tid) {
                        t.held_at = Some(pc);
                    }
                    continue;
                }
                Halt::Stalled => {
                    eprintln!(
                        "== CALIPER: cali-run: thread {tid} does not stop within {}s; the program runs on unmeasured",
                        STALL_LIMIT.as_secs()
                    );
                    self.stalled = true;
                    continue;
                }
                // No longer the tool's to wait for (gone, or untraced).
                Halt::Gone => {
                    self.threads.remove(&tid);
                    continue;
                }
            };
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

    /// Where the held threads of image `image_id` resume: the code there
    /// must not change under them. A thread blocked in a system call may
    /// also resume at the call itself (restarted), two bytes before.
    pub(super) fn held_at(&self, image_id: usize) -> Vec<u64> {
        self.threads
            .values()
            .filter(|t| self.processes.get(&t.pid).is_some_and(|p| p.image == image_id))
            .filter_map(|t| t.held_at)
            .flat_map(|pc| [pc, pc.wrapping_sub(2)])
            .collect()
    }

    /// Where the threads of image `image_id` are while the world is
    /// stopped, which code that changes must not lie under: the program
    /// counters of those not running (stopped for the tool, whether their
    /// stops are taken yet or wait in [`Engine::pending`]) and where the
    /// held ones resume (see [`Engine::held_at`]).
    pub(super) fn busy_at(&self, image_id: usize) -> Vec<u64> {
        let mut busy: Vec<u64> = self
            .threads
            .iter()
            .filter(|(_, t)| !t.running && self.processes.get(&t.pid).is_some_and(|p| p.image == image_id))
            .filter_map(|(&t, _)| ptrace::registers(t).ok())
            .map(|r| r.rip)
            .collect();
        busy.extend(self.held_at(image_id));
        busy
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
            if !shared && self.images.contains_key(&process.image) {
                self.take_site_arcs(&[process.image]);
            }
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
    /// a job control stop stay stopped. A thread blocked in the kernel
    /// (a `vfork` parent waiting for its child) is let go when its stop
    /// comes, after the others run free.
    pub(super) fn let_go_all(&mut self) {
        self.take_samples();
        // The running threads, and those left in a job control stop (which
        // must be stopped for the tool to detach, and stay in the job's
        // stop after).
        let tids: Vec<Pid> = self
            .threads
            .iter()
            .filter(|(_, t)| (t.running || t.listening) && t.held_at.is_none())
            .map(|(&tid, _)| tid)
            .collect();
        for &tid in &tids {
            let _ = ptrace::interrupt(tid);
        }
        let mut held: Vec<Pid> =
            self.threads.iter().filter(|(_, t)| t.held_at.is_some()).map(|(&tid, _)| tid).collect();
        let mut signals = HashMap::new();
        for &tid in &tids {
            // Whatever each reports, it is stopped now.
            match halt(tid, STALL_LIMIT) {
                Halt::Reported(Status::Stopped(sig)) => {
                    signals.insert(tid, sig);
                }
                Halt::Held(_) | Halt::Stalled => held.push(tid),
                Halt::Reported(status @ (Status::Exited(_) | Status::Killed(_))) if tid == self.main => {
                    self.exit = Some(exit_of(status));
                }
                Halt::Reported(_) | Halt::Stopped | Halt::Gone => {}
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
        // The trap of one that executed the `int3` just as it was
        // interrupted waits behind the interrupt's stop: it goes too, or
        // the thread would die of it once let go.
        let all: Vec<Pid> = self.threads.keys().copied().collect();
        for tid in all {
            if !self.rewind_from_breakpoint(tid) {
                continue;
            }
            if signals.get(&tid) == Some(&libc::SIGTRAP) {
                signals.remove(&tid);
            } else if let Err(e) = ptrace::discard_pending(tid, libc::SIGTRAP) {
                eprintln!("== CALIPER: cali-run: cannot take the breakpoint's trap from thread {tid}: {e}");
            }
        }
        // Every probe out before any thread runs free: processes sharing
        // an image (a vfork child and its parent) run its code.
        for image in self.images.values_mut() {
            let _ = image.strip();
        }
        // A held thread is detached once its stop is taken, below: detached
        // here, where its stop may have come meanwhile, it would be no
        // longer traced, and the wait for its stop a wait for its exit.
        for tid in &held {
            self.threads.remove(tid);
        }
        let pids: Vec<Pid> = self.processes.keys().copied().collect();
        for pid in &pids {
            self.let_go(*pid, &signals);
        }
        for tid in held {
            let signal = match ptrace::wait(Some(tid)) {
                Ok(Some((_, Status::Stopped(sig)))) => sig,
                Ok(Some((_, status @ (Status::Exited(_) | Status::Killed(_))))) if tid == self.main => {
                    self.exit = Some(exit_of(status));
                    continue;
                }
                _ => 0,
            };
            let _ = ptrace::detach(tid, signal);
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
    /// `int3`s. A thread just past an entry that a jump replaced since (its
    /// stop waited while another thread's first hit patched the module)
    /// can only have come there by the `int3`; so can the thread whose
    /// stop the tool was handling when it failed, whatever the probe has
    /// become.
    fn rewind_from_breakpoint(&self, tid: Pid) -> bool {
        let Some(image) =
            self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).and_then(|p| self.images.get(&p.image))
        else {
            return false;
        };
        let Ok(mut regs) = ptrace::registers(tid) else { return false };
        let at = regs.rip.wrapping_sub(1);
        let handled = self.at_breakpoint == Some((tid, at));
        let trapped = handled || image.probes.get(&at).is_some_and(|p| p.state != ProbeState::Removed);
        if trapped {
            regs.rip = at;
            let _ = ptrace::set_registers(tid, &regs);
        }
        trapped
    }
}

/// How the program ended, from the main thread's last status (an exit or
/// a kill).
fn exit_of(status: Status) -> Exit {
    match status {
        Status::Killed(sig) => Exit::Signal(sig),
        Status::Exited(code) => Exit::Code(code),
        _ => Exit::Detached,
    }
}
