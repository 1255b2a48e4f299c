//! Signal snapshots in a channel (see [`crate::capture`]): a thread's state
//! made ready for them, the measurements a handler takes, and the
//! processing of a capture afterwards.

use super::*;

impl Channel {
    /// Makes the calling thread's state in this channel if it has none
    /// yet, so that a signal handler finds it (see [`crate::capture`]).
    pub(crate) fn prepare_thread<H: Host>(&self, cali: &H, t: &mut ThreadData) {
        self.thread_state(cali, &mut t.channels, &mut t.blackboard);
    }

    /// Measures a capture in a signal handler (see [`crate::capture`]):
    /// the timer's reading and the region measurements, into `time` and
    /// `measured`. `false` if the channel has more region measurements
    /// than a capture holds. Async-signal-safe: the region counters are
    /// loads.
    pub(crate) fn measure_capture(
        &self,
        ct: &mut ChannelThread,
        time: &mut Option<Time>,
        measured: &mut [u64; MAX_MEASURED],
    ) -> bool {
        let Some(out) = measured.get_mut(..self.measured.len()) else { return false };
        *time = ct.timer.as_mut().map(Stamps::stamp);
        read_counters(&mut ct.counters, out);
        true
    }

    /// Processes a capture taken in a signal handler on thread `t` (see
    /// [`crate::capture`]) as the explicit snapshot it stands for: the
    /// captured context, the process's context as it is now, the trigger
    /// entries, the measurements taken in the handler, those of the
    /// services that measure only here, then the processing services.
    pub(crate) fn process_capture<H: Host>(&self, cali: &H, t: &mut ThreadData, capture: &Capture) {
        let Some(Some(ct)) = t.channels.get_mut(self.id) else { return };
        let snapshot = &mut t.snapshot;
        snapshot.clear();
        for cut in [&capture.regions, &capture.unaligned] {
            let mut node = cut.node;
            for &(attr, value) in cut.open.as_slice() {
                node = Some(t.cache.child(cali.tree(), node, attr, value));
            }
            if let Some(node) = node {
                snapshot.push_node(node);
            }
        }
        let mut frame = None;
        for &address in capture.path.frames() {
            let value = ValueKey::from_variant(&Variant::Addr(address));
            frame = Some(t.cache.child(cali.tree(), frame, capture.path.attr, value));
        }
        if let Some(frame) = frame {
            snapshot.push_node(frame);
        }
        let values = capture.values.as_slice();
        let (context, trigger) = values.split_at(values.len().saturating_sub(capture.trigger));
        for &(attr, value) in context {
            snapshot.push_value(attr, value);
        }
        cali.refresh_process_entries(&mut t.process_entries, &mut t.process_version);
        snapshot.append(&t.process_entries);
        for &(attr, value) in trigger {
            snapshot.push_value(attr, value);
        }
        if let Some(time) = capture.time {
            time.write_to(snapshot);
        }
        for &i in &self.measure {
            ct.states[i].measure(cali, snapshot, &SIGNAL);
        }
        for (&attr, &value) in self.measured.iter().zip(&capture.measured) {
            snapshot.push_value(attr, ValueKey::uint(value));
        }
        for &i in &self.process {
            ct.state(i).process(cali, snapshot);
        }
    }
}
