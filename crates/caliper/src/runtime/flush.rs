//! Flushes and the end of the program: stopping updates while the
//! channels write, the flush at exit, and a forked child's start.

use super::*;

pub(super) extern "C" fn finish_at_exit() {
    let Some(c) = CALIPER.get() else { return };
    // Checked before anything allocates (`contain` does).
    if !c.may_finish() {
        return;
    }
    // Never let a panic cross into the C runtime's exit path.
    contain("Flush at exit", || c.finish());
}

/// In a forked child, where only the forking thread exists: the parent's
/// other threads must not hold up the child. Their data, copied at the
/// fork, is flushed with the child's own unless a thread was inside an
/// update then. If one of them held a runtime lock, which stays held for
/// good in the child (and guards data it may have left half-changed), the
/// runtime is off in the child: its annotations do nothing and it writes
/// no report, rather than wait for ever.
pub(super) extern "C" fn after_fork_in_child() {
    if let Some(c) = CALIPER.get() {
        let own = SLOT.with(Cell::get);
        if let Ok(threads) = c.threads.try_lock() {
            for slot in threads.iter().filter(|s| !std::ptr::eq(Arc::as_ptr(s), own)) {
                slot.busy.settle_after_fork();
            }
        }
        sync::reset_after_fork();
        if let Some(lock) = c.lock_held_by_another_thread() {
            c.finished.store(true, Ordering::Release);
            log::error_in_forked_child(format_args!(
                "Forked child process: Caliper is off in this process: another thread held {lock} at the fork"
            ));
        }
        c.forked_pid.store(std::process::id(), Ordering::Release);
    }
}

/// Whether a signal handler running on the calling thread interrupted the
/// runtime holding a lock, or an allocation: a flush now would wait for
/// itself or corrupt the heap.
pub(super) fn interrupted_in_runtime() -> bool {
    sync::holds_runtime_lock() || crate::alloc_guard::interrupted_allocation()
}

/// What happens to the updates other threads try while a flush runs.
pub(super) enum Stop {
    /// They wait for it: during the run, a dropped begin or end would put
    /// the thread's region stack out of step with the program.
    Waited,
    /// They are dropped: at exit, when updates stay stopped for good.
    Dropped,
}

/// Stops updates on every thread of `slots` (see [`StopUpdates::new`]),
/// and says how many threads' data the flush must leave out.
pub(super) fn stop_updates(slots: &[Arc<ThreadSlot>], stop: Stop) -> StopUpdates<'_> {
    let own = own_slot().map(|s| &s.busy);
    let flags = slots.iter().map(|s| &s.busy);
    let guard = match stop {
        Stop::Waited => StopUpdates::waited(flags, own),
        Stop::Dropped => StopUpdates::new(flags, own),
    };
    if guard.abandoned() > 0 {
        log::error(format_args!(
            "Flush: {} thread(s) stayed inside an annotation update (stopped, or interrupted by a signal); \
             their data is not included",
            guard.abandoned()
        ));
    }
    guard
}

impl Caliper {
    /// Hands every record the channel gathered to `emit` (records refer to
    /// the context tree).
    pub fn flush(&self, channel: &Channel, emit: &mut dyn FnMut(&Record)) {
        self.with_updates_stopped(|| {
            self.prepare_flush(channel);
            channel.flush(self, emit)
        });
    }

    /// Runs the channel's services' [`Service::pre_flush`] hooks, before a
    /// flush reads its records and globals. Updates must be stopped. A
    /// service that fails costs its own preparation only.
    pub(crate) fn prepare_flush(&self, channel: &Channel) {
        for service in channel.services() {
            contain(&format!("{}: {}", channel.name(), service.name()), || {
                service.pre_flush(self, &ChannelOutput::new(self, channel))
            });
        }
    }

    /// Flushes a channel and writes its outputs (reports, files). A service
    /// that fails costs its own output only (see [`contain`]).
    pub fn flush_and_write(&self, channel: &Channel) {
        log::info(format_args!("{}: Flushing Caliper data", channel.name()));
        self.with_updates_stopped(|| {
            self.prepare_flush(channel);
            for service in channel.services() {
                if service.writes_output() {
                    contain(&format!("{}: {}", channel.name(), service.name()), || {
                        service.write_output(self, &ChannelOutput::new(self, channel))
                    });
                }
            }
        });
    }

    /// Runs `f` while no thread updates its data, so that `f` can read
    /// every thread's measurements.
    ///
    /// A flush from a signal handler that interrupted the runtime while it
    /// held a lock would wait for itself: it is skipped (and logged), and
    /// `f` not run.
    pub(crate) fn with_updates_stopped<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let inside_update = || own_slot().is_some_and(|s| s.busy.is_busy());
        if interrupted_in_runtime() || (inside_update() && !sync::inside_flush()) {
            // Inside an update, too: the update cannot end before the flush
            // does, and other threads' flushes would wait for it. (Not so
            // a flush inside the flush at exit, which has left the
            // interrupted update's data out.)
            log::error(format_args!("Flush skipped: called from a signal handler that interrupted Caliper"));
            return None;
        }
        let slots = self.thread_slots();
        let guard = stop_updates(&slots, Stop::Waited);
        if capture::WANTED.load(Ordering::Acquire) {
            self.process_all_captures(&slots);
        }
        let result = f();
        drop(guard);
        Some(result)
    }

    /// Drops what a channel gathered.
    pub fn clear(&self, channel: &Channel) {
        self.with_updates_stopped(|| channel.clear(self));
    }

    /// The regions each thread has open, as `attr=value/...` paths
    /// (outermost first). Updates must be stopped.
    pub(crate) fn open_regions(&self) -> Vec<String> {
        let name = |a: Attribute| self.registry.info(a.id()).map(|i| i.name.to_string()).unwrap_or_default();
        let mut out = Vec::new();
        for slot in self.thread_slots().iter().filter(|s| s.busy.is_readable()) {
            // SAFETY: called with updates stopped (at finish), and the
            // slot's thread is not inside an update.
            let data = unsafe { slot.data_for_flush() };
            let entries = data.blackboard.regions.entries();
            if !entries.is_empty() {
                let path: Vec<String> =
                    entries.iter().map(|e| format!("{}={}", name(e.attr), e.value.to_variant())).collect();
                out.push(path.join("/"));
            }
        }
        out
    }

    /// Which of the runtime's locks another thread holds, if any: called in
    /// a forked child, where the thread that held it does not exist.
    pub(super) fn lock_held_by_another_thread(&self) -> Option<&'static str> {
        let held = [
            ("the thread list", sync::is_held(&self.threads)),
            ("the channel list", sync::is_rw_held(&self.channels)),
            ("the channel creation lock", sync::is_held(&self.creating_channel)),
            ("the process context", sync::is_held(&self.process)),
            ("the attribute registry", self.registry.is_locked()),
            ("the context tree", self.tree.is_locked()),
            ("the string table", crate::value::interner_is_locked()),
            ("the deleted-channel list", embed::deleted_list_is_locked()),
            ("the log", log::is_busy()),
        ];
        if let Some((name, _)) = held.iter().find(|(_, h)| *h) {
            return Some(name);
        }
        let channels = self.channels.try_read().ok()?;
        channels.iter().any(|c| c.is_locked()).then_some("a channel's metadata")
    }

    /// Whether the flush at exit may run on the calling thread: not when a
    /// signal handler calling `exit()` interrupted the runtime's
    /// initialisation (its channels are half made), a lock, an allocation
    /// or a flush on it. Allocates nothing; says why not, once.
    pub(super) fn may_finish(&self) -> bool {
        let reason = if !READY.load(Ordering::Acquire) {
            "Program exit interrupted Caliper's initialisation: not writing the report"
        } else if interrupted_in_runtime() || sync::inside_flush() {
            "Program exit interrupted Caliper on the exiting thread (exit() in a signal handler?): \
             not writing the report"
        } else {
            return true;
        };
        if !self.finished.swap(true, Ordering::AcqRel) {
            log::error(format_args!("{reason}"));
        }
        false
    }

    /// The end of the program: flush the channels that flush on exit, in
    /// creation order.
    ///
    /// A forked child flushes too, as the reference's does: its report
    /// holds what the process measured before the fork, on every thread,
    /// and what the child measured after. It does not when a thread of the
    /// parent held a runtime lock at the fork (the child would wait for it
    /// for ever), nor when the fork bypassed `pthread_atfork` (a raw
    /// `clone`), which leaves the parent's threads unaccounted for.
    /// Logs what the process leaves behind at exit (verbosity 2), under
    /// the reference's headings: the exiting thread's and the process's
    /// blackboards, the context tree and the string table.
    #[cold]
    fn log_release_statistics(&self) {
        if let Some(slot) = own_slot().filter(|s| s.busy.is_readable()) {
            // SAFETY: updates are stopped for good, and this thread is the
            // only one reading its own data here.
            log_thread_release(unsafe { slot.data_for_flush() });
        }
        let entries = self.lock_process().blackboard.entry_count();
        log::log(2, format_args!("Process blackboard: {entries} entries"));
        log::log(2, format_args!("Metadata tree: {} nodes", self.tree.len()));
        log::log(2, format_args!("Metadata memory pool: {} interned strings", crate::value::interned_count()));
    }

    /// Ends measurement for good, as at program exit: flushes and writes
    /// every channel that flushes on exit and finishes the services;
    /// annotations afterwards do nothing. The reference's
    /// `Caliper::release()`, for a program that wants its reports before
    /// it exits (calling it again, or exiting later, does nothing more).
    pub fn release(&self) {
        if self.may_finish() {
            contain("Release", || self.finish());
        }
    }

    pub(super) fn finish(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        let pid = std::process::id();
        if pid != self.pid && pid != self.forked_pid.load(Ordering::Acquire) {
            log::error(format_args!("Forked child process (without fork handlers): not writing a report"));
            return;
        }
        let slots = self.thread_slots();
        stop_updates(&slots, Stop::Dropped).forever();
        for channel in self.all_channels().into_iter().filter(|c| !self.is_deleted(c)) {
            if channel.flush_on_exit() {
                self.flush_and_write(&channel);
            }
            for service in channel.services() {
                contain(&format!("{}: {}", channel.name(), service.name()), || {
                    service.finish(self, &ChannelOutput::new(self, &channel))
                });
            }
        }
        if log::enabled(2) {
            self.log_release_statistics();
        }
        if capture::WANTED.load(Ordering::Acquire) {
            let c = capture::counts();
            log::info(format_args!(
                "Signal snapshots: {} taken, dropped {} (no thread state), {} (busy), {} (buffer full), {} (did not fit)",
                c.taken, c.no_thread, c.busy, c.full, c.unfit
            ));
        }
        log::info(format_args!("Finished"));
    }
}
