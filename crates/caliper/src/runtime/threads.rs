//! The runtime's threads: each thread's slot, registered on its first
//! update and handed over to the channels when the thread exits.

use super::*;

/// The calling thread's slot for as long as the thread lives. At thread
/// exit its drop hands what the thread measured to the channels and frees
/// the slot, so that threads that have come and gone cost no memory.
pub(super) struct Registration {
    cali: &'static Caliper,
    slot: Arc<ThreadSlot>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: plain queries without pointers.
        if unsafe { libc::gettid() == libc::getpid() } {
            // The main thread's destructors run in `exit()`, before the
            // flush at exit and the C++ static destructors, which may still
            // annotate; the slot stays (the list keeps it), as the process
            // ends anyway.
            return;
        }
        // The slot stays the thread's during the hand-over, so that a
        // signal handler's flush or update on this thread sees it busy.
        contain("Thread exit", || self.cali.retire_thread(&self.slot));
        // Other thread-local destructors may still annotate: they find no
        // slot (`THREAD` is gone) and are not recorded.
        SLOT.with(|s| s.set(std::ptr::null()));
    }
}

/// The calling thread's slot; `None` while the thread is being torn down.
#[inline]
pub(crate) fn current_slot() -> Option<&'static ThreadSlot> {
    let p = SLOT.with(|s| s.get());
    if !p.is_null() {
        // SAFETY: the pointer comes from the `Arc` of the thread's
        // `Registration`, which clears it before letting go of the slot.
        return Some(unsafe { &*p });
    }
    let slot = THREAD.try_with(|h| h.as_ref().map(|h| Arc::as_ptr(&h.slot))).ok().flatten()?;
    SLOT.with(|s| s.set(slot));
    // SAFETY: as above.
    Some(unsafe { &*slot })
}

/// The calling thread's slot if it has one, without registering it.
pub(super) fn own_slot() -> Option<&'static ThreadSlot> {
    let own = SLOT.with(Cell::get);
    // SAFETY: a non-null pointer is valid until the thread's registration
    // goes (see `current_slot`).
    (!own.is_null()).then(|| unsafe { &*own })
}

impl Caliper {
    pub(super) fn register_thread(&'static self) -> Registration {
        let mut threads = sync::lock(&self.threads);
        let slot = Arc::new(ThreadSlot::new());
        threads.push(slot.clone());
        Registration { cali: self, slot }
    }

    /// At thread exit: the channels take over what the thread measured
    /// (see [`Channel::retire`]), and the thread list lets go of its slot.
    ///
    /// The hand-over is an update of the thread's data, made inside its
    /// busy flag like any other: a flush either has read the data before
    /// (and the hand-over waited for it), or reads it after, in the
    /// channels, finding the slot empty (a flush that took its list of
    /// slots before the slot left it). So the data is flushed once. When
    /// updates are refused (stopped for good at exit, or the thread exits
    /// from a signal handler that interrupted an update), the slot stays in
    /// the list as it is, and a flush still reads it there. So it does when
    /// the thread exits with regions open, which the validator's report at
    /// exit names (a rare case: a program's threads close what they open),
    /// or when a signal handler that interrupted the runtime ends the
    /// thread or the program.
    pub(super) fn retire_thread(&self, slot: &Arc<ThreadSlot>) {
        if interrupted_in_runtime() {
            // `exit()` from a signal handler runs the exiting thread's
            // destructors: the locks and allocations below could wait for
            // the interrupted code or corrupt the heap.
            return;
        }
        let handed_over = slot.update(|t, _| {
            if log::enabled(2) {
                log_thread_release(t);
            }
            if !(t.blackboard.regions.is_empty() && t.blackboard.unaligned.is_empty()) {
                return false;
            }
            let channels = self.all_channels();
            self.process_captures(t, &channels);
            for (ct, channel) in std::mem::take(&mut t.channels).into_iter().zip(&channels) {
                if let Some(ct) = ct {
                    channel.retire(self, ct);
                }
            }
            true
        });
        if handed_over == Some(true) {
            sync::lock(&self.threads).retain(|s| !Arc::ptr_eq(s, slot));
        }
    }

    /// Every thread that uses the runtime, and threads that have exited
    /// while updates were refused.
    pub(crate) fn thread_slots(&self) -> Vec<Arc<ThreadSlot>> {
        sync::lock(&self.threads).clone()
    }

    /// Runs `f` with the calling thread's data and active channels, if the
    /// thread may update them.
    #[inline]
    pub(super) fn with_thread<R>(&self, f: impl FnOnce(&mut ThreadData, &mut ActiveChannels) -> R) -> Option<R> {
        current_slot()?.update(f)
    }
}

/// Logs what a thread leaves behind (verbosity 2), under the reference's
/// headings.
#[cold]
pub(super) fn log_thread_release(t: &ThreadData) {
    let bb = &t.blackboard;
    let (regions, unaligned, values) = (bb.regions.entries().len(), bb.unaligned.entries().len(), bb.values.len());
    log::log(2, format_args!("Releasing Caliper thread data:"));
    log::log(
        2,
        format_args!(
            "  Thread blackboard: {} entries ({regions} region, {unaligned} unaligned, {values} as-value)",
            bb.entry_count()
        ),
    );
}
