//! Futures that keep their region path across polls and threads.
//!
//! An async runtime polls a task on whatever worker thread is free, and a
//! worker runs many tasks in turn: a thread's region stack says nothing
//! about the task it runs now. [`Instrument::in_region`] gives a future
//! its own region path (by default the regions open where it is made, and
//! one more). Each poll puts that path on the polling thread's region
//! stack, in place of the thread's own entries, and puts the thread's back
//! after; regions the future opens and leaves open across an `.await` go
//! with it to the next poll, on whichever thread that runs. So time is
//! attributed to the task's path, and the time the task spends suspended
//! goes to whatever the thread does meanwhile, not to the task, unless
//! asked for with [`Instrumented::counting_suspended_time`].
//!
//! ```
//! use caliper::Instrument;
//!
//! async fn fetch() {
//!     let _parse = caliper::region!("parse"); // task > parse, on any thread
//! }
//!
//! let _main = caliper::region!("main");
//! let task = fetch().in_region("task"); // main > task
//! # let _ = task;
//! ```

use crate::blackboard::StackEntry;
use crate::runtime::Caliper;
use crate::value::ValueKey;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::cell::Cell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// A region path for a task: region-stack entries, outermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskPath {
    entries: Vec<StackEntry>,
}

impl TaskPath {
    /// The calling thread's open regions (empty without a runtime).
    pub fn current() -> TaskPath {
        let mut entries = Vec::new();
        if let Some(cali) = Caliper::instance() {
            cali.region_stack(&mut entries);
        }
        TaskPath { entries }
    }

    /// No region: a task that runs at the root of the profile.
    pub fn root() -> TaskPath {
        TaskPath::default()
    }

    /// A path of these entries.
    pub fn from_entries(entries: Vec<StackEntry>) -> TaskPath {
        TaskPath { entries }
    }

    /// This path with `region=name` below it.
    pub fn region(mut self, name: &str) -> TaskPath {
        if let Some(cali) = Caliper::instance() {
            self.entries.push(StackEntry { attr: cali.builtins().region, value: ValueKey::string(name) });
        }
        self
    }

    /// The entries, outermost first.
    pub fn entries(&self) -> &[StackEntry] {
        &self.entries
    }
}

/// Gives futures a region path of their own: `.in_region("name")`.
pub trait Instrument: Future + Sized {
    /// Runs the future in `region=name`, below the regions open on the
    /// calling thread now, on whatever thread polls it.
    fn in_region(self, name: &str) -> Instrumented<Self> {
        self.in_path(TaskPath::current().region(name))
    }

    /// Runs the future in `path`, on whatever thread polls it.
    fn in_path(self, path: TaskPath) -> Instrumented<Self> {
        Instrumented { future: ManuallyDrop::new(self), task: TaskStack::new(path.entries) }
    }
}

impl<F: Future> Instrument for F {}

/// A future that runs in its own region path (see [`Instrument`]).
pub struct Instrumented<F> {
    /// Pinned with the whole: never moved out, dropped in place by `drop`.
    future: ManuallyDrop<F>,
    task: TaskStack,
}

impl<F> Instrumented<F> {
    /// Counts the time the task spends suspended (from the end of a poll
    /// that returned `Pending` to the start of the next) as the exclusive
    /// time of its path at the time: see [`count_suspended_time`]. When
    /// futures that count it are nested, the innermost one suspended
    /// counts it, once.
    pub fn counting_suspended_time(mut self) -> Instrumented<F> {
        self.task.counts_suspended = true;
        self
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned (never moved, dropped in
        // place); `task` is not, and may be used by `&mut`.
        let this = unsafe { self.get_unchecked_mut() };
        let future = unsafe { Pin::new_unchecked(&mut *this.future) };
        let mut inside = this.task.enter();
        let poll = future.poll(cx);
        inside.pending = poll.is_pending();
        poll
    }
}

impl<F> Drop for Instrumented<F> {
    /// Drops the future inside its path when it holds regions open (a task
    /// cancelled at an `.await` inside a region), so that their guards end
    /// them on the task's stack rather than the dropping thread's.
    fn drop(&mut self) {
        let _inside = self.task.holds_regions().then(|| self.task.enter());
        // SAFETY: dropped once, here, in place.
        unsafe { ManuallyDrop::drop(&mut self.future) }
    }
}

/// A task's region stack between polls, and the buffers a poll swaps it
/// through (kept, so that a poll allocates nothing once they have grown).
struct TaskStack {
    /// The task's region stack.
    path: Vec<StackEntry>,
    /// How many entries the task was given: more are regions it opened.
    given: usize,
    /// The polling thread's entries set aside during a poll.
    thread: Vec<StackEntry>,
    /// Whether time suspended counts, and when the last poll ended.
    counts_suspended: bool,
    suspended_since: Option<Instant>,
    /// The task's entries above the common ones, taken off at a poll's end.
    taken: Vec<StackEntry>,
}

impl TaskStack {
    fn new(path: Vec<StackEntry>) -> TaskStack {
        TaskStack {
            given: path.len(),
            path,
            thread: Vec::new(),
            counts_suspended: false,
            suspended_since: None,
            taken: Vec::new(),
        }
    }

    fn holds_regions(&self) -> bool {
        self.path.len() > self.given
    }

    /// Puts the task's stack on the calling thread's until the guard drops.
    fn enter(&mut self) -> Inside<'_> {
        let Some(cali) = Caliper::instance() else { return Inside { cali: None, keep: 0, pending: false, task: self } };
        let keep = cali.switch_regions(&self.path, &mut self.thread);
        if let Some(since) = self.suspended_since.take() {
            count_suspended_time(since);
        }
        SUSPENSION_COUNTED.set(false);
        Inside { cali: Some(cali), keep, pending: false, task: self }
    }
}

thread_local! {
    /// Set when a future suspended at the end of its poll on this thread
    /// counts its time suspended, or is inside one that does: the futures
    /// around it, suspended with it, leave that time to it.
    static SUSPENSION_COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// A poll in progress: puts the thread's entries back when dropped (after
/// the poll, or when it panics), keeping the task's for the next poll.
struct Inside<'a> {
    cali: Option<&'static Caliper>,
    /// Entries below this index were common to both stacks and stayed.
    keep: usize,
    /// Whether the poll returned `Pending`.
    pending: bool,
    task: &'a mut TaskStack,
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        let Some(cali) = self.cali else { return };
        let TaskStack { path, thread, taken, counts_suspended, suspended_since, .. } = &mut *self.task;
        let kept = cali.replace_regions(self.keep, thread, taken);
        path.truncate(kept);
        path.extend_from_slice(taken);
        let counted_inside = SUSPENSION_COUNTED.get();
        *suspended_since = (*counts_suspended && self.pending && !counted_inside).then(Instant::now);
        SUSPENSION_COUNTED.set(self.pending && (counted_inside || *counts_suspended));
    }
}

/// Counts the time since `since`, which a task spent suspended, as the
/// exclusive time of the calling thread's current context (the task's
/// path, once resumed): a snapshot there whose `time.duration.ns` counts
/// it too, with `task.suspended.ns` saying how much of it was suspended.
/// The suspended time is then counted twice in a profile's total: once
/// for the task, once for what the threads did meanwhile.
pub fn count_suspended_time(since: Instant) {
    let Some(cali) = Caliper::instance() else { return };
    let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let props = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
    let attr = cali.create_attribute("task.suspended.ns", AttrType::Uint, props, &[]);
    cali.push_snapshot_with_time(&[Entry::Immediate(attr.id(), Variant::Uint(ns))], ns);
}
