//! The host's signal dispositions, kept across a run: the engine routes
//! the tool's signals to itself, which in a library must not outlive the
//! run.

use crate::engine::HANDLED_SIGNALS;

/// The handlers as they were, restored on drop (with the real-time
/// interval timer of the start and duration delays disarmed).
pub(super) struct Saved {
    actions: Vec<(libc::c_int, libc::sigaction)>,
}

impl Saved {
    pub(super) fn now() -> Saved {
        let actions = HANDLED_SIGNALS
            .iter()
            .filter_map(|&sig| {
                // SAFETY: sigaction with a NULL new action only reads the old one.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    (libc::sigaction(sig, std::ptr::null(), &mut old) == 0).then_some((sig, old))
                }
            })
            .collect();
        Saved { actions }
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        let off = libc::itimerval {
            it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 },
            it_value: libc::timeval { tv_sec: 0, tv_usec: 0 },
        };
        // SAFETY: the structs are plain data; the actions were read by sigaction.
        unsafe {
            libc::setitimer(libc::ITIMER_REAL, &off, std::ptr::null_mut());
            for (sig, action) in &self.actions {
                libc::sigaction(*sig, action, std::ptr::null_mut());
            }
        }
    }
}
