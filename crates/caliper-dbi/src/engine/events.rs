//! Events of the measured program, reported to an observer while the
//! engine runs: a process exits, a library is loaded, a timer fires, a
//! signal is delivered to the program. The observer sees the engine
//! (to read the counts so far) and may ask to stop measuring; the loop
//! acts on that between two ptrace events, never in the middle of one.
//!
//! The periodic timer is a POSIX timer of its own, on a real-time signal
//! aimed at the thread that runs the engine (a host such as Python may have
//! other threads), so that it interrupts the engine's wait and never
//! touches the `SIGALRM` that the start and duration delays use.

use super::{Engine, Exit, Outcome};
use crate::ptrace::Pid;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// A traced process ended.
    Exit { pid: Pid, exit: Exit },
    /// A process loaded a library (one not excluded by the filter): the
    /// dynamic linker announced it, before its constructors run.
    LibraryLoad { pid: Pid, path: &'a str },
    /// The observer's period passed.
    Timer,
    /// A signal is being delivered to a thread of the program.
    Signal { pid: Pid, tid: Pid, signal: i32 },
}

/// What the observer wants done after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    /// Stop measuring: probes out and every process let go, as when the
    /// duration runs out (a launched program is then waited for; an
    /// attached one is left running).
    Stop,
}

/// Receives the events; `engine` gives the results so far
/// ([`Engine::results_so_far`]).
pub trait Observer {
    fn notify(&mut self, event: &Event, engine: &Engine) -> Action;
}

/// The engine's side of the events: the observer, its timer, and a stop
/// asked for and not yet acted on.
#[derive(Default)]
pub(super) struct Events {
    observer: Option<Box<dyn Observer>>,
    timer: Option<PeriodicTimer>,
    stop: bool,
}

/// Set by the timer's signal handler, taken by the loop.
static TIMER_FIRED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_timer(_: libc::c_int) {
    TIMER_FIRED.store(true, Ordering::Relaxed);
}

/// A POSIX timer firing every period at the calling thread, deleted (and
/// its signal's handler restored) on drop.
struct PeriodicTimer {
    id: libc::timer_t,
    signal: libc::c_int,
    previous: libc::sigaction,
}

impl PeriodicTimer {
    fn start(period: Duration) -> std::io::Result<PeriodicTimer> {
        let signal = libc::SIGRTMIN();
        // SAFETY: the handler only stores into an atomic; the structs are
        // plain data, zeroed then filled; the timer id is written by
        // timer_create before it is used.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_timer as *const () as usize;
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
}

impl Drop for PeriodicTimer {
    fn drop(&mut self) {
        // SAFETY: the id came from timer_create; the old action from sigaction.
        unsafe {
            libc::timer_delete(self.id);
            libc::sigaction(self.signal, &self.previous, std::ptr::null_mut());
        }
        TIMER_FIRED.store(false, Ordering::Relaxed);
    }
}

impl Engine {
    /// Reports events to `observer` from now on, and [`Event::Timer`]
    /// every `period` (at least a millisecond) if given.
    pub fn observe(&mut self, observer: Box<dyn Observer>, period: Option<Duration>) -> std::io::Result<()> {
        self.events.timer = match period {
            Some(period) => Some(PeriodicTimer::start(period.max(Duration::from_millis(1)))?),
            None => None,
        };
        self.events.observer = Some(observer);
        Ok(())
    }

    /// The results as they stand: the counts so far, the functions and
    /// arcs seen so far; the exit is [`Exit::Detached`] while the main
    /// process runs.
    pub fn results_so_far(&self) -> Outcome {
        Outcome {
            exit: self.exit.unwrap_or(Exit::Detached),
            functions: self.functions.clone(),
            arcs: self.arcs.clone(),
            counters: self.read_counters(),
            stacks: self.stacks.clone(),
            samples_lost: self.sampler.as_ref().map_or(0, |s| s.lost),
            traps: self.traps,
        }
    }

    /// The collectors measured.
    pub fn collect(&self) -> super::Collect {
        self.config.collect
    }

    /// Tells the observer of `event`.
    pub(super) fn notify(&mut self, event: Event) {
        let Some(mut observer) = self.events.observer.take() else { return };
        if observer.notify(&event, self) == Action::Stop {
            self.events.stop = true;
        }
        self.events.observer = Some(observer);
    }

    /// Tells the observer of each library in `paths`, loaded by `pid`.
    pub(super) fn notify_loads(&mut self, pid: Pid, paths: &[std::sync::Arc<str>]) {
        for path in paths {
            self.notify(Event::LibraryLoad { pid, path });
        }
    }

    /// Reports a timer that fired; true when the observer has asked to
    /// stop (now or at an earlier event).
    pub(super) fn take_events(&mut self) -> bool {
        if self.events.timer.is_some() && TIMER_FIRED.swap(false, Ordering::Relaxed) {
            self.notify(Event::Timer);
        }
        self.events.stop
    }
}
