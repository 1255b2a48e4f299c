//! The watchdog: a thread of the program stopped for the tool that the
//! tool has lost track of (its stop taken and never answered) would wait
//! for ever, and the program with it. Every [`PERIOD`] the loop wakes and
//! looks for threads in a ptrace stop with nothing to report and nothing
//! the tool holds them for; one found so twice in a row ends the
//! measurement: one line, the probes out, the program let go.

use super::Engine;
use super::timer::PeriodicTimer;
use crate::ptrace::{self, Pid};
use std::collections::HashSet;
use std::time::Duration;

/// How often the watchdog looks.
pub(super) const PERIOD: Duration = Duration::from_secs(2);

/// The watchdog's timer and the threads found waiting at its last look.
#[derive(Default)]
pub(super) struct Watchdog {
    timer: Option<PeriodicTimer>,
    waiting: HashSet<Pid>,
}

impl Engine {
    /// Starts the watchdog's timer (on `SIGRTMIN + 1`; the observer's
    /// timer has `SIGRTMIN`). Without it the loop runs unwatched, as it
    /// does under a debugger, which holds threads as its user says.
    pub(super) fn start_watchdog(&mut self) {
        if self.debugger.is_some() {
            return;
        }
        match PeriodicTimer::start(PERIOD, libc::SIGRTMIN() + 1) {
            Ok(timer) => self.watchdog.timer = Some(timer),
            Err(e) => eprintln!("== CALIPER: cali-run: no watchdog ({e})"),
        }
    }

    /// Looks for lost threads when the period is up; ends the measurement
    /// (sets `stalled`) at one lost at two looks in a row.
    pub(super) fn watch(&mut self) {
        if !self.watchdog.timer.as_ref().is_some_and(PeriodicTimer::fired) {
            return;
        }
        let candidates: Vec<Pid> = self
            .threads
            .iter()
            .filter(|(tid, t)| {
                !t.listening
                    && t.held_at.is_none()
                    && !self.early.contains(tid)
                    && !self.pending.iter().any(|(p, _)| p == *tid)
            })
            .map(|(&tid, _)| tid)
            .filter(|&tid| in_ptrace_stop(tid))
            .collect();
        let mut waiting = HashSet::new();
        for tid in candidates {
            match ptrace::try_wait(tid) {
                // A stop not taken yet: the loop takes it next.
                Ok(Some(status)) => self.pending.push_back((tid, status)),
                Ok(None) => {
                    waiting.insert(tid);
                }
                Err(_) => {}
            }
        }
        let lost = waiting.iter().find(|tid| self.watchdog.waiting.contains(tid)).copied();
        self.watchdog.waiting = waiting;
        if let Some(tid) = lost {
            eprintln!(
                "== CALIPER: cali-run: thread {tid} has waited for the tool for {}s or more; the program runs on unmeasured",
                PERIOD.as_secs()
            );
            self.stalled = true;
        }
    }
}

/// Whether thread `tid` is in a ptrace stop (state `t` in `/proc`).
fn in_ptrace_stop(tid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{tid}/stat")).is_ok_and(|stat| stat_state(&stat) == Some('t'))
}

/// The state letter of a `/proc/TID/stat` line (after the command name,
/// which may hold spaces and parentheses).
fn stat_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_state_after_any_command_name() {
        assert_eq!(stat_state("42 (python3) t 1 42 42 0 -1"), Some('t'));
        assert_eq!(stat_state("42 (a (b) c) S 1 42"), Some('S'));
        assert_eq!(stat_state("42 (x"), None);
    }
}
