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
//! goes to whatever the thread does meanwhile, not to the task.
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
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

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
    /// The task's region path as it stands between polls: its path and
    /// the regions it has left open across an `.await`.
    pub fn path(&self) -> TaskPath {
        TaskPath::from_entries(self.task.path.clone())
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned (never moved, dropped in
        // place); `task` is not, and may be used by `&mut`.
        let this = unsafe { self.get_unchecked_mut() };
        let future = unsafe { Pin::new_unchecked(&mut *this.future) };
        let _inside = this.task.enter();
        future.poll(cx)
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
    /// The task's entries above the common ones, taken off at a poll's end.
    taken: Vec<StackEntry>,
}

impl TaskStack {
    fn new(path: Vec<StackEntry>) -> TaskStack {
        TaskStack { given: path.len(), path, thread: Vec::new(), taken: Vec::new() }
    }

    fn holds_regions(&self) -> bool {
        self.path.len() > self.given
    }

    /// Puts the task's stack on the calling thread's until the guard drops.
    fn enter(&mut self) -> Inside<'_> {
        let Some(cali) = Caliper::instance() else { return Inside { cali: None, keep: 0, task: self } };
        let common = cali.common_regions(&self.path);
        let keep = cali.replace_regions(common, &self.path[common..], &mut self.thread);
        Inside { cali: Some(cali), keep, task: self }
    }
}

/// A poll in progress: puts the thread's entries back when dropped (after
/// the poll, or when it panics), keeping the task's for the next poll.
struct Inside<'a> {
    cali: Option<&'static Caliper>,
    /// Entries below this index were common to both stacks and stayed.
    keep: usize,
    task: &'a mut TaskStack,
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        let Some(cali) = self.cali else { return };
        let TaskStack { path, thread, taken, .. } = &mut *self.task;
        let kept = cali.replace_regions(self.keep, thread, taken);
        path.truncate(kept);
        path.extend_from_slice(taken);
    }
}
