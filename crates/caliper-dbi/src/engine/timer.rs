//! A POSIX timer on a real-time signal aimed at the thread that runs the
//! engine (a host such as Python may have other threads): each expiry
//! sets the signal's flag and interrupts the engine's wait, so the loop
//! acts on it ([`PeriodicTimer::fired`]). It never touches the `SIGALRM`
//! that the start and duration delays use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether each signal's timer has fired since the loop last looked, by
/// signal number: the one handler sets them, so that each timer of the
/// loop needs no flag and handler of its own.
static FIRED: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];

/// The handler of every timer's signal: it sets the signal's flag (and
/// does nothing else).
extern "C" fn note_fired(signal: libc::c_int) {
    if let Some(fired) = usize::try_from(signal).ok().and_then(|n| FIRED.get(n)) {
        fired.store(true, Ordering::Relaxed);
    }
}

/// A timer firing every period at the calling thread, deleted (its flag
/// cleared, its signal's handler restored) on drop.
pub(super) struct PeriodicTimer {
    id: libc::timer_t,
    signal: libc::c_int,
    previous: libc::sigaction,
}

impl PeriodicTimer {
    /// Fires every `period` on `signal` (a real-time one, no other timer's).
    pub(super) fn start(period: Duration, signal: libc::c_int) -> std::io::Result<PeriodicTimer> {
        if usize::try_from(signal).ok().and_then(|n| FIRED.get(n)).is_none() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a signal number"));
        }
        // SAFETY: the handler only stores into an atomic; the structs are
        // plain data, zeroed then filled; the timer id is written by
        // timer_create before it is used.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_fired as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut previous) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = signal;
            event.sigev_notify_thread_id = libc::gettid();
            let mut id: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut id) != 0 {
                let error = std::io::Error::last_os_error();
                libc::sigaction(signal, &previous, std::ptr::null_mut());
                return Err(error);
            }
            let every =
                libc::timespec { tv_sec: period.as_secs() as libc::time_t, tv_nsec: period.subsec_nanos() as _ };
            let spec = libc::itimerspec { it_interval: every, it_value: every };
            libc::timer_settime(id, 0, &spec, std::ptr::null_mut());
            Ok(PeriodicTimer { id, signal, previous })
        }
    }

    /// Whether the timer has fired since this was last asked.
    pub(super) fn fired(&self) -> bool {
        self.flag().swap(false, Ordering::Relaxed)
    }

    fn flag(&self) -> &'static AtomicBool {
        // A signal number `start` took: an index of the flags.
        &FIRED[self.signal as usize]
    }
}

impl Drop for PeriodicTimer {
    fn drop(&mut self) {
        // SAFETY: the id came from timer_create; the old action from sigaction.
        unsafe {
            libc::timer_delete(self.id);
            libc::sigaction(self.signal, &self.previous, std::ptr::null_mut());
        }
        self.flag().store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_says_it_fired_clears_its_flag_when_deleted_and_refuses_what_is_no_signal() {
        let timer = PeriodicTimer::start(Duration::from_millis(1), libc::SIGRTMIN() + 5).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(timer.fired(), "fired within 20 periods");
        drop(timer);
        assert!(!FIRED[(libc::SIGRTMIN() + 5) as usize].load(Ordering::Relaxed), "cleared when deleted");
        assert!(PeriodicTimer::start(Duration::from_millis(1), 100).is_err());
        assert!(PeriodicTimer::start(Duration::from_millis(1), -1).is_err());
    }
}
