//! The generic path: any update or explicit snapshot, built as a
//! [`Snapshot`] from the thread's context, measured, then processed.

use super::*;

impl Channel {
    /// [`Channel::on_update`] for any channel and update.
    #[inline(never)]
    pub(super) fn generic_update<H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        if !self.observe.is_empty() {
            self.observe_update(cali, t, kind, attr, value);
        }
        let Some(events) = &self.events else { return };
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let Some(info) = ct.event_attribute(cali, self, attr.id(), kind) else { return };
        if (!events.filter.is_empty() || !events.branches.is_empty()) && !ct.passes_filters(events, kind, attr, value) {
            return;
        }
        t.snapshot.clear();
        let process_scope = attr.is_process_scope();
        // The slot the event node replaces: the updated attribute's stack.
        let replaced = if events.snapshot_info && !attr.is_asvalue() && !process_scope {
            Some(attr.properties().is_unaligned())
        } else {
            None
        };
        context_entries(cali, context_of!(t), replaced);
        let snapshot = &mut t.snapshot;
        if events.snapshot_info {
            match replaced {
                Some(unaligned_slot) => {
                    let stack = if unaligned_slot { &mut t.blackboard.unaligned } else { &mut t.blackboard.regions };
                    let entry = StackEntry { attr, value };
                    let on_top = stack.top() == Some(entry);
                    // Always a node: the event attribute is known.
                    let event = ct.event_node(cali.tree(), &mut t.cache, stack, kind, |_| Some(info), entry, on_top);
                    if let Some(event) = event {
                        snapshot.push_node(event);
                    }
                }
                None => snapshot.push_value(info.id(), value),
            }
        }
        if kind == EventKind::End {
            snapshot.push_value(self.region_count.id(), ValueKey::uint(1));
        }
        self.run_pipeline(cali, ct, snapshot, &Trigger { kind, attr: Some(attr), in_signal: false });
    }

    /// Lets the observing services see an update and takes the snapshots
    /// they ask for.
    pub(super) fn observe_update<H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let mut trigger = std::mem::take(&mut ct.observed);
        for &i in &self.observe {
            trigger.clear();
            match ct.states[i].observe(cali, kind, attr, value, &mut trigger) {
                Observation::Ignore => {}
                Observation::Measure => {
                    t.snapshot.clear();
                    self.run_measure(cali, ct, &mut t.snapshot, &EXPLICIT);
                }
                Observation::Snapshot => self.explicit_snapshot(cali, ct, context_of!(t), &trigger),
            }
        }
        ct.observed = trigger;
    }

    /// Takes an explicit snapshot with extra trigger entries.
    pub(crate) fn push_snapshot<H: Host>(&self, cali: &H, t: &mut ThreadData, trigger: &[Entry]) {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        self.explicit_snapshot(cali, ct, context_of!(t), trigger);
    }

    pub(super) fn explicit_snapshot<H: Host>(
        &self,
        cali: &H,
        ct: &mut ChannelThread,
        c: Context<'_>,
        trigger: &[Entry],
    ) {
        c.snapshot.clear();
        let snapshot = context_entries(cali, c, None);
        for entry in trigger {
            snapshot.push_entry(entry);
        }
        self.run_pipeline(cali, ct, snapshot, &EXPLICIT);
    }

    /// Takes an explicit snapshot whose duration (the value of attribute
    /// `duration`, if the channel measures it) counts `extra_ns` more: time
    /// the thread did not spend in this context but that belongs to it (a
    /// task's time suspended, see [`crate::task`]).
    pub(crate) fn push_snapshot_with_time<H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        trigger: &[Entry],
        duration: Id,
        extra_ns: u64,
    ) {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let c = context_of!(t);
        c.snapshot.clear();
        let snapshot = context_entries(cali, c, None);
        for entry in trigger {
            snapshot.push_entry(entry);
        }
        self.run_measure(cali, ct, snapshot, &EXPLICIT);
        snapshot.add_to_value(duration, extra_ns);
        self.run_process(cali, ct, snapshot);
    }

    pub(super) fn run_measure<H: Host>(
        &self,
        cali: &H,
        ct: &mut ChannelThread,
        snapshot: &mut Snapshot,
        trigger: &Trigger,
    ) {
        if let Some(timer) = &mut ct.timer {
            timer.stamp().write_to(snapshot);
        }
        for &i in &self.measure {
            ct.states[i].measure(cali, snapshot, trigger);
        }
        if !self.counters.is_empty() {
            read_counters(&mut ct.counters, &mut ct.measured);
            for (&attr, &value) in self.measured.iter().zip(&*ct.measured) {
                snapshot.push_value(attr, ValueKey::uint(value));
            }
        }
    }

    pub(super) fn run_pipeline<H: Host>(
        &self,
        cali: &H,
        ct: &mut ChannelThread,
        snapshot: &mut Snapshot,
        trigger: &Trigger,
    ) {
        self.run_measure(cali, ct, snapshot, trigger);
        self.run_process(cali, ct, snapshot);
    }

    /// Hands a measured snapshot to the services that keep it.
    #[inline(always)]
    fn run_process<H: Host>(&self, cali: &H, ct: &mut ChannelThread, snapshot: &Snapshot) {
        for &i in &self.process {
            ct.state(i).process(cali, snapshot);
        }
    }
}
