//! Events of the measured program, reported to an observer while the
//! engine runs: a process exits, a library is loaded, a timer fires, a
//! signal is delivered to the program. The observer sees the engine
//! (to read the counts so far) and may ask to stop measuring; the loop
//! acts on that between two ptrace events, never in the middle of one.
//!
//! The periodic timer is a [`PeriodicTimer`] on `SIGRTMIN`.

use super::timer::PeriodicTimer;
use super::{Engine, Exit, Outcome};
use crate::ptrace::Pid;
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

impl Engine {
    /// Reports events to `observer` from now on, and [`Event::Timer`]
    /// every `period` (at least a millisecond) if given.
    pub fn observe(&mut self, observer: Box<dyn Observer>, period: Option<Duration>) -> std::io::Result<()> {
        self.events.timer = match period {
            Some(period) => {
                let period = period.max(Duration::from_millis(1));
                Some(PeriodicTimer::start(period, libc::SIGRTMIN())?)
            }
            None => None,
        };
        self.events.observer = Some(observer);
        Ok(())
    }

    /// The results as they stand: the counts so far, the functions and
    /// arcs seen so far; the exit is [`Exit::Detached`] while the main
    /// process runs.
    pub fn results_so_far(&self) -> Outcome {
        let counters = self.read_counters();
        let mut functions = self.functions.clone();
        functions.cover_counted(&counters);
        // The images that have ended named first: their arcs are in the table.
        self.ended_images.wait_idle();
        let arc_counts = self.read_arc_counts();
        let arcs = std::sync::Mutex::new(self.arcs().clone());
        for (&image_id, image) in &self.images {
            let ids = self.image_ids(image_id, &[]);
            super::arcs::join_entries(image, ids.entries_in(&arc_counts), &ids, &self.arc_callees, &arcs);
        }
        let arcs = arcs.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        Outcome {
            exit: self.exit.unwrap_or(Exit::Detached),
            functions,
            arcs: arcs.taken(&arc_counts, &counters),
            counters,
            stacks: self.stacks.clone(),
            samples_lost: self.sampler.as_ref().map_or(0, |s| s.lost),
            samples_truncated: self.samples_truncated,
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
        if self.events.timer.as_ref().is_some_and(PeriodicTimer::fired) {
            self.notify(Event::Timer);
        }
        self.events.stop
    }
}
