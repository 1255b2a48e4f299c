//! A signal that a sampling service takes over from the program while it
//! runs: its handler is installed only if the program has none of its
//! own, and the program's disposition comes back at the end.

/// The program's disposition of a signal, kept while a service handles
/// it.
pub(super) struct SignalClaim {
    signal: libc::c_int,
    previous: libc::sigaction,
}

// SAFETY: plain data (a handler address, flags and a mask).
unsafe impl Send for SignalClaim {}

/// A signal handler with `SA_SIGINFO`'s arguments.
pub(super) type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

impl SignalClaim {
    /// Installs `handler` for `signal`; refuses if the program handles the
    /// signal itself.
    pub(super) fn claim(signal: libc::c_int, name: &str, handler: Handler) -> Result<SignalClaim, String> {
        // SAFETY: sigaction with structures made here.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut previous) != 0 {
                return Err(format!("cannot read the {name} action ({})", std::io::Error::last_os_error()));
            }
            if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN {
                return Err(format!("the program handles {name} itself"));
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(format!("cannot handle {name} ({})", std::io::Error::last_os_error()));
            }
            Ok(SignalClaim { signal, previous })
        }
    }

    /// Gives the signal back to the program. Through `SIG_IGN` first, which
    /// discards a signal still pending: under the default disposition it
    /// could end the program.
    pub(super) fn release(self) {
        // SAFETY: sigaction with structures made here.
        unsafe {
            let mut ignore: libc::sigaction = std::mem::zeroed();
            ignore.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut ignore.sa_mask);
            libc::sigaction(self.signal, &ignore, std::ptr::null_mut());
            libc::sigaction(self.signal, &self.previous, std::ptr::null_mut());
        }
    }
}
