//! Annotation updates: begin, set and end on the calling thread (or the
//! process), the snapshots the active channels take for them, and the
//! process context's snapshot entries.

use super::*;
use crate::channel::express::express_update;

impl Caliper {
    /// After an update that took snapshots: runs the flushes services asked
    /// for while processing them (a flush cannot run inside the update).
    #[inline(always)]
    pub(crate) fn after_snapshots(&self) {
        if DEFERRED_FLUSH.load(Ordering::Relaxed) {
            self.run_deferred_flushes();
        }
    }

    /// Flushes (writes and clears) the channels whose services asked for it.
    #[cold]
    pub(super) fn run_deferred_flushes(&self) {
        if !DEFERRED_FLUSH.swap(false, Ordering::AcqRel) {
            return;
        }
        for channel in self.all_channels() {
            if channel.services().iter().any(|s| s.take_flush_request()) {
                log::info(format_args!("{}: Trace buffer full, flushing", channel.name()));
                // One stop for the write and the clear, so that no snapshot
                // lands between them (cleared unwritten).
                self.with_updates_stopped(|| {
                    self.flush_and_write(&channel);
                    self.clear(&channel);
                });
            }
        }
    }

    /// Refreshes a thread's list of active channels if it changed.
    /// The same check tells an update that signal snapshots wait in the
    /// thread's buffer: the handler that takes one marks the list's version
    /// ([`CAPTURES_WAITING`]), so that updates pay nothing for it.
    #[inline]
    pub(super) fn refresh_active(&self, t: &mut ThreadData, active: &mut ActiveChannels) {
        let version = self.channels_version.load(Ordering::Acquire);
        if active.version != version {
            self.reload_active(t, active, version);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn reload_active(&self, t: &mut ThreadData, active: &mut ActiveChannels, version: u64) {
        if active.version & !CAPTURES_WAITING != version {
            active.set(self.all_channels().into_iter().filter(|c| c.is_active()).collect());
        }
        active.version = version;
        if capture::WANTED.load(Ordering::Acquire) {
            match &t.captures {
                None => t.captures = Some(capture::Captures::new()),
                Some(c) if !c.is_empty() => self.process_captures(t, &active.list),
                Some(_) => {}
            }
            // The thread's states in the channels, so that their signals
            // find them (and a sampler's timer runs on the thread).
            for channel in &active.list {
                channel.prepare_thread(self, t);
            }
            self.start_capture_drain();
            // A capture holds only a few stack entries without nodes: give
            // the thread's current entries theirs.
            t.blackboard.regions.node(&self.tree, &mut t.cache);
            t.blackboard.unaligned.node(&self.tree, &mut t.cache);
        }
    }

    /// Whether an update of `attr` may take snapshots. Checked inline by
    /// the updates, so that with no active channel they make no call.
    #[inline(always)]
    pub(super) fn notifies(&self, attr: Attribute) -> bool {
        !attr.properties().skips_events() && self.active_channels.load(Ordering::Relaxed) != 0
    }

    /// Lets every active channel see an update before it happens (call
    /// when [`Caliper::notifies`]).
    #[inline(never)]
    pub(super) fn notify(
        &self,
        t: &mut ThreadData,
        active: &mut ActiveChannels,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        self.refresh_active(t, active);
        for channel in &active.updated {
            channel.on_update(self, t, kind, attr, value);
        }
    }

    /// Takes the snapshots of a region update (begin, from call `site` if
    /// the caller names one, or end of the entry on top) and makes it on
    /// the express path if the thread's active channels allow it (see
    /// [`express_update`]); false if the update is for
    /// [`Caliper::notify`] and the blackboard (call when
    /// [`Caliper::notifies`]).
    #[inline(always)]
    pub(super) fn express(
        &self,
        t: &mut ThreadData,
        active: &ActiveChannels,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
        site: Option<usize>,
    ) -> bool {
        attr.on_thread_regions()
            && active.version == self.channels_version.load(Ordering::Acquire)
            && active.express.is_some_and(|channel| express_update(channel, self, t, kind, attr, value, site))
    }

    /// Begins `attr = value` on the calling thread (or the process, for a
    /// process-scope attribute).
    #[inline]
    pub fn begin(&self, attr: Attribute, value: ValueKey) {
        if let Some(slot) = current_slot() {
            self.begin_in(slot, attr, value, None);
        }
    }

    /// [`Caliper::begin`] on the calling thread, whose slot the caller
    /// has found, from call `site` if the caller names one: a small
    /// number the same for every begin from one place in the program (a
    /// wrapped function's index), under which the express path remembers
    /// the begin (see `channel::sites`).
    #[inline]
    pub(crate) fn begin_in(&self, slot: &ThreadSlot, attr: Attribute, value: ValueKey, site: Option<usize>) {
        let notified = slot.update(|t, active| {
            if !t.tracking {
                return false;
            }
            let notifies = self.notifies(attr);
            if notifies {
                if self.express(t, active, EventKind::Begin, attr, value, site) {
                    return true;
                }
                self.notify(t, active, EventKind::Begin, attr, value);
            }
            if attr.is_process_scope() {
                self.update_process(|bb| bb.begin(attr, value));
            } else {
                t.blackboard.begin(attr, value);
            }
            notifies
        });
        if notified == Some(true) {
            self.after_snapshots();
        }
    }

    /// Sets `attr = value`.
    pub fn set(&self, attr: Attribute, value: ValueKey) {
        let notified = self.with_thread(|t, active| {
            if !t.tracking {
                return false;
            }
            let notifies = self.notifies(attr);
            if notifies {
                self.notify(t, active, EventKind::Set, attr, value);
            }
            if attr.is_process_scope() {
                self.update_process(|bb| bb.set(attr, value));
            } else {
                t.blackboard.set(attr, value);
            }
            notifies
        });
        if notified == Some(true) {
            self.after_snapshots();
        }
    }

    /// Ends the innermost value of `attr`; with `expect`, only if it is
    /// that value. A mismatch is logged and stops tracking on the thread.
    #[inline]
    pub fn end(&self, attr: Attribute, expect: Option<ValueKey>) {
        if let Some(slot) = current_slot() {
            self.end_in(slot, attr, expect);
        }
    }

    /// [`Caliper::end`] on the calling thread, whose slot the caller has
    /// found.
    #[inline]
    pub(crate) fn end_in(&self, slot: &ThreadSlot, attr: Attribute, expect: Option<ValueKey>) {
        let notified = slot.update(|t, active| {
            if !t.tracking {
                return false;
            }
            if attr.is_process_scope() {
                self.end_in_process(t, active, attr, expect);
                return true;
            }
            if !self.notifies(attr) {
                // No snapshot to take before the update: end in one step.
                if let Err(e) = t.blackboard.end(attr, expect) {
                    self.stack_error(t, attr, expect, e);
                }
                return false;
            }
            match t.blackboard.check_end(attr, expect) {
                Ok(value) => {
                    if !self.express(t, active, EventKind::End, attr, value, None) {
                        self.notify(t, active, EventKind::End, attr, value);
                        t.blackboard.end_checked(attr, expect);
                    }
                }
                Err(e) => self.stack_error(t, attr, expect, e),
            }
            true
        });
        if notified == Some(true) {
            self.after_snapshots();
        }
    }

    /// Ends a process-scope attribute (out of line: rare, and it locks).
    #[inline(never)]
    pub(super) fn end_in_process(
        &self,
        t: &mut ThreadData,
        active: &mut ActiveChannels,
        attr: Attribute,
        expect: Option<ValueKey>,
    ) {
        let check = self.lock_process().blackboard.check_end(attr, expect);
        match check {
            Ok(value) => {
                if self.notifies(attr) {
                    self.notify(t, active, EventKind::End, attr, value);
                }
                let _ = self.update_process(|bb| bb.end(attr, expect));
            }
            Err(e) => self.stack_error(t, attr, expect, e),
        }
    }

    #[cold]
    pub(super) fn stack_error(&self, t: &mut ThreadData, attr: Attribute, expect: Option<ValueKey>, error: EndError) {
        let name = |a: Attribute| self.registry.info(a.id()).map(|i| i.name.to_string()).unwrap_or_default();
        match (&error, expect) {
            (EndError::Empty, None) => log::error(format_args!(
                "Region stack mismatch: Trying to end \"{}\" but region stack is empty!",
                name(attr)
            )),
            (EndError::Empty, Some(v)) => log::error(format_args!(
                "Stack value mismatch: Trying to end {}={} but stack is empty",
                name(attr),
                v.to_variant()
            )),
            (EndError::OtherRegion(top), _) => log::error(format_args!(
                "Region stack mismatch: Trying to end \"{}\" but current region is \"{}\".",
                name(attr),
                top.value.to_variant()
            )),
            (EndError::OtherValue(top), v) => log::error(format_args!(
                "Stack value mismatch: Trying to end {}={} but current value is {}={}",
                name(attr),
                v.map(|v| v.to_variant().to_string()).unwrap_or_default(),
                name(top.attr),
                top.value.to_variant()
            )),
        }
        self.stack_errors.fetch_add(1, Ordering::Relaxed);
        if matches!(error, EndError::OtherRegion(_)) || !attr.is_process_scope() {
            log::error(format_args!("Ceasing region tracking!"));
            t.tracking = false;
        }
    }

    /// Updates the process blackboard and republishes its snapshot entries.
    #[inline(never)]
    pub(super) fn update_process<R>(&self, f: impl FnOnce(&mut Blackboard) -> R) -> R {
        let mut p = self.lock_process();
        let r = f(&mut p.blackboard);
        self.rebuild_process_entries(&mut p);
        r
    }

    pub(super) fn rebuild_process_entries(&self, p: &mut ProcessContext) {
        let ProcessContext { blackboard, cache, entries } = p;
        let mut list = Snapshot::default();
        if let Some(n) = blackboard.regions.node(&self.tree, cache) {
            list.push_node(n);
        }
        if let Some(n) = blackboard.unaligned.node(&self.tree, cache) {
            list.push_node(n);
        }
        for (a, v) in &blackboard.values {
            if !a.properties().is_hidden() {
                list.push_value(a.id(), *v);
            }
        }
        *entries = Arc::new(list);
        self.process_version.fetch_add(1, Ordering::Release);
    }

    /// Refreshes a thread's copy of the process context's entries.
    #[inline(always)]
    pub(crate) fn refresh_process_entries(&self, cache: &mut Arc<Snapshot>, version: &mut u64) {
        let current = self.process_version.load(Ordering::Acquire);
        if *version != current {
            self.reload_process_entries(cache, version, current);
        }
    }

    #[cold]
    pub(super) fn reload_process_entries(&self, cache: &mut Arc<Snapshot>, version: &mut u64, current: u64) {
        *cache = self.lock_process().entries.clone();
        *version = current;
    }

    /// Takes an explicit snapshot on every active channel, with `trigger`
    /// entries added.
    pub fn push_snapshot(&self, trigger: &[Entry]) {
        self.snapshot_on(|_| true, trigger);
    }

    /// Takes an explicit snapshot on every active channel, as
    /// [`Caliper::push_snapshot`], whose `time.duration.ns` (in channels
    /// with a timer) counts `extra_ns` more: time spent away from the
    /// thread that belongs to the current context, such as a task's time
    /// suspended.
    pub fn push_snapshot_with_time(&self, trigger: &[Entry], extra_ns: u64) {
        let Some(duration) = self.find_attribute("time.duration.ns") else {
            return self.push_snapshot(trigger);
        };
        self.with_thread(|t, active| {
            self.refresh_active(t, active);
            for channel in &active.list {
                channel.push_snapshot_with_time(self, t, trigger, duration.id(), extra_ns);
            }
        });
        self.after_snapshots();
    }

    /// Takes a snapshot of an asynchronous event (with `info` as trigger
    /// entries) on every active channel that takes them.
    pub fn async_event(&self, info: &[Entry]) {
        self.snapshot_on(Channel::takes_async_events, info);
    }

    pub(super) fn snapshot_on(&self, takes: impl Fn(&Channel) -> bool, trigger: &[Entry]) {
        self.with_thread(|t, active| {
            self.refresh_active(t, active);
            for channel in active.list.iter().filter(|c| takes(c)) {
                channel.push_snapshot(self, t, trigger);
            }
        });
        self.after_snapshots();
    }

    /// The innermost value of `attr` on the calling thread (or process).
    pub fn get(&self, attr: Attribute) -> Option<Variant> {
        if attr.is_process_scope() {
            return self.lock_process().blackboard.get(attr).map(|v| v.to_variant());
        }
        self.with_thread(|t, _| t.blackboard.get(attr).map(|v| v.to_variant())).flatten()
    }
}
