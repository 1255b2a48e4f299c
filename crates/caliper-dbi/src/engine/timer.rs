//! A POSIX timer on a real-time signal aimed at the thread that runs the
//! engine (a host such as Python may have other threads): each expiry
//! sets a flag and interrupts the engine's wait, so the loop acts on it.
//! It never touches the `SIGALRM` that the start and duration delays use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A timer firing every period at the calling thread, deleted (its flag
/// cleared, its signal's handler restored) on drop.
pub(super) struct PeriodicTimer {
    id: libc::timer_t,
    signal: libc::c_int,
    previous: libc::sigaction,
    fired: &'static AtomicBool,
}

impl PeriodicTimer {
    /// Fires every `period` on `signal`, whose handler `note` is to set
    /// `fired` (and do nothing else).
    pub(super) fn start(
        period: Duration,
        signal: libc::c_int,
        note: extern "C" fn(libc::c_int),
        fired: &'static AtomicBool,
    ) -> std::io::Result<PeriodicTimer> {
        // SAFETY: the handler only stores into an atomic; the structs are
        // plain data, zeroed then filled; the timer id is written by
        // timer_create before it is used.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note as *const () as usize;
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
            Ok(PeriodicTimer { id, signal, previous, fired })
        }
    }
}

impl Drop for PeriodicTimer {
    fn drop(&mut self) {
        // SAFETY: the id came from timer_create; the old action from sigaction.
        unsafe {
            libc::timer_delete(self.id);
            libc::sigaction(self.signal, &self.previous, std::ptr::null_mut());
        }
        self.fired.store(false, Ordering::Relaxed);
    }
}
