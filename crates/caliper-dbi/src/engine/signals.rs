//! Signals and stops that are not breakpoints: the tool's own signals
//! (timers, termination, job control), the program's job control stops,
//! and the tool's recovery from a bug of its own.
//!
//! A stop signal stops the program as without the tool: its threads are
//! left in their job control stop (`PTRACE_LISTEN`) until a `SIGCONT`.
//! When the tool itself got the stop signal (`Ctrl-Z` reaches both), it
//! stops too once the program has, so that the shell sees the job stopped.
//!
//! `SIGTERM`, `SIGHUP`, and `SIGINT` or `SIGQUIT` sent to the tool by a
//! process end the measurement: the probes come out and the program runs
//! on untraced to its own end (the tool waits for it and exits with its
//! code). `SIGINT` and `SIGQUIT` from the terminal reach the program too,
//! whose reaction decides. A panic of the tool ends the measurement the
//! same way.

use super::Engine;
use crate::ptrace::{self, Pid};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// The last signal the tool received (0 for none), for the loop to act on.
static TOOL_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether a process sent it (`kill`), rather than the kernel (a terminal).
static SENT_BY_PROCESS: AtomicBool = AtomicBool::new(false);

extern "C" fn note_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    // SI_USER, SI_TKILL, SI_QUEUE, ...: a process's; SI_KERNEL: a terminal's.
    SENT_BY_PROCESS.store(code <= 0, Ordering::Relaxed);
    TOOL_SIGNAL.store(sig, Ordering::Relaxed);
}

/// Every signal whose handler the engine may set (a library that runs the
/// engine restores them after a run).
pub const HANDLED_SIGNALS: [libc::c_int; 8] = [
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGALRM,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// Routes the tool's signals to `TOOL_SIGNAL` (without SA_RESTART, so a
/// blocked wait returns): SIGTERM, SIGHUP, SIGALRM, SIGINT and SIGQUIT, and
/// for a launched program the stop signals of job control.
pub(super) fn install_signal_handlers(attached: bool) {
    let job_control = [libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU];
    for sig in HANDLED_SIGNALS.into_iter().filter(|sig| !attached || !job_control.contains(sig)) {
        // SAFETY: the handler only stores into atomics.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Whether a signal that ends the measurement has come and is not yet
/// acted on: a wait of the tool outside its loop (the debugger's, for a
/// client or a command line) gives up on it, where the standard library's
/// waits would go back to waiting after the handler.
pub(crate) fn ending_signal_pending() -> bool {
    match TOOL_SIGNAL.load(Ordering::Relaxed) {
        libc::SIGTERM | libc::SIGHUP => true,
        libc::SIGINT | libc::SIGQUIT => SENT_BY_PROCESS.load(Ordering::Relaxed),
        _ => false,
    }
}

impl Engine {
    /// Acts on a signal to the tool; true when measuring should stop.
    pub(super) fn take_tool_signal(&mut self) -> bool {
        let sig = TOOL_SIGNAL.swap(0, Ordering::Relaxed);
        let sent = SENT_BY_PROCESS.load(Ordering::Relaxed);
        match sig {
            0 => false,
            libc::SIGALRM if !self.measuring => {
                self.begin_measuring();
                false
            }
            libc::SIGALRM => {
                // The timer may ring a little early.
                let slack = std::time::Duration::from_millis(10);
                let expired = self.deadline.is_some_and(|d| std::time::Instant::now() + slack >= d);
                if expired {
                    self.let_go_all();
                }
                expired
            }
            libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU => {
                // A terminal's reached the program too; a process's is passed on.
                if sent {
                    // SAFETY: kill has no memory preconditions.
                    unsafe { libc::kill(self.main, sig) };
                }
                self.stop_with_program = true;
                false
            }
            libc::SIGINT | libc::SIGQUIT if !self.attached && !sent => false,
            _ => {
                self.let_go_all();
                true
            }
        }
    }

    /// A thread in a job control stop: left stopped until a SIGCONT (and
    /// the tool stops too if it was asked to with the program).
    pub(super) fn on_job_stop(&mut self, tid: Pid) {
        if ptrace::listen(tid).is_ok()
            && let Some(t) = self.threads.get_mut(&tid)
        {
            t.running = false;
            t.listening = true;
        }
        if tid == self.main && std::mem::take(&mut self.stop_with_program) {
            // SAFETY: raise has no memory preconditions; the tool runs on
            // at the SIGCONT that continues the job.
            unsafe { libc::raise(libc::SIGSTOP) };
        }
    }

    /// After a panic in the event loop: one line, and the program let go
    /// with its probes out.
    pub(super) fn recover(&mut self, panic: &(dyn std::any::Any + Send)) {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("== CALIPER: cali-run: internal error ({what}); the program runs on unmeasured");
        let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.let_go_all()));
        if released.is_err() {
            eprintln!("== CALIPER: cali-run: cannot let the program go cleanly");
        }
    }
}

/// The breakpoint hits handled so far, for the debug points below.
static HITS: AtomicU64 = AtomicU64::new(0);

/// Counts a breakpoint hit; its number, from 1.
pub(super) fn count_hit() -> u64 {
    HITS.fetch_add(1, Ordering::Relaxed) + 1
}

/// The hit number in environment variable `name`, read once into `at`.
fn hit_in_env(at: &'static OnceLock<Option<u64>>, name: &str) -> Option<u64> {
    *at.get_or_init(|| std::env::var(name).ok().and_then(|v| v.parse().ok()))
}

/// Panics at the Nth breakpoint hit when `CALI_RUN_DEBUG_PANIC_AT_HIT=N`
/// is set: a way for tests to check that a bug of the tool leaves the
/// program unharmed.
pub(super) fn debug_panic_point(hit: u64) {
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    if hit_in_env(&AT, "CALI_RUN_DEBUG_PANIC_AT_HIT") == Some(hit) {
        panic!("CALI_RUN_DEBUG_PANIC_AT_HIT={hit}");
    }
}

/// Panics when the Nth breakpoint hit is a first hit, once its function's
/// entry is patched, when `CALI_RUN_DEBUG_PANIC_AFTER_PATCH_AT_HIT=N` is
/// set: the hitting thread is past an `int3` that a jump has replaced.
pub(super) fn debug_panic_after_patch() {
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    let hit = HITS.load(Ordering::Relaxed);
    if hit_in_env(&AT, "CALI_RUN_DEBUG_PANIC_AFTER_PATCH_AT_HIT") == Some(hit) {
        panic!("CALI_RUN_DEBUG_PANIC_AFTER_PATCH_AT_HIT={hit}");
    }
}

/// Whether the Nth breakpoint hit's thread is to be left stopped, never
/// resumed, when `CALI_RUN_DEBUG_LOSE_STOP_AT_HIT=N` is set: a way for
/// tests to check that the watchdog frees a thread the tool lost.
pub(super) fn debug_lose_stop(hit: u64) -> bool {
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    hit_in_env(&AT, "CALI_RUN_DEBUG_LOSE_STOP_AT_HIT") == Some(hit)
}
