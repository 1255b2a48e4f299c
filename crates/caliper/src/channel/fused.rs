//! The fused path: a region begin or end in the shape nearly every
//! snapshot has, taken without building a [`Snapshot`] and handed to the
//! processing services as a [`RegionSnapshot`].

use super::*;

impl Channel {
    /// [`Channel::fused_update`] in a channel with region counters: out
    /// of line, so that the other channels' path stays short (inlined
    /// beside it, it cost the plain path 14 instructions per update and
    /// the trace path 28, and saved the counters' path 59).
    #[inline(never)]
    pub(super) fn measured_fused_update<H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) -> bool {
        self.fused_update::<true, false, H>(cali, t, kind, attr, value)
    }

    /// [`Channel::fused_update`] in a process with as-value entries (e.g.
    /// `mpi.rank`), which its region snapshots carry: out of line, so that
    /// the path of other processes does not hold them.
    #[inline(never)]
    pub(super) fn valued_fused_update<const MEASURED: bool, H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) -> bool {
        self.fused_update::<MEASURED, true, H>(cali, t, kind, attr, value)
    }

    /// Handles an update in a channel that takes fused region snapshots:
    /// takes the snapshot of a region begin or end without building a
    /// [`Snapshot`] if it has the common shape (see [`RegionSnapshot`]):
    /// the attribute is on the region stack, and the thread's context has
    /// no other entries than its region stack, its unaligned node (e.g.
    /// `pthread.id`) and the process's entries (e.g. `mpi.rank`).
    /// Returns whether the update is handled; if not, the generic path
    /// takes it. Inlined into the runtime's loop over the active channels
    /// (a call less per update); the generic path stays out of line, so
    /// that the common case is a short function that spills little.
    /// `MEASURED`: whether the channel has region counters (see
    /// [`Service::region_counters`]); a channel without compiles to a
    /// path without them. `VALUED`: whether the process has as-value
    /// entries (see [`Channel::valued_fused_update`]).
    #[inline(always)]
    pub(super) fn fused_update<const MEASURED: bool, const VALUED: bool, H: Host>(
        &self,
        cali: &H,
        t: &mut ThreadData,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) -> bool {
        if !attr.on_thread_regions() || kind == EventKind::Set {
            return false;
        }
        cali.refresh_process_entries(&mut t.process_entries, &mut t.process_version);
        if !VALUED && !t.process_entries.values().is_empty() {
            return self.valued_fused_update::<MEASURED, H>(cali, t, kind, attr, value);
        }
        // The thread state before the thread's context: a thread's first
        // use of the channel may add to it (e.g. the pthread service's
        // thread ids).
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        if !t.blackboard.values.is_empty() {
            return false;
        }
        let unaligned = match t.blackboard.unaligned.is_empty() {
            true => None,
            false => t.blackboard.unaligned.node(cali.tree(), &mut t.cache),
        };
        let regions = &mut t.blackboard.regions;
        let entry = StackEntry { attr, value };
        let event = match self.events.as_ref().is_some_and(|e| e.snapshot_info) {
            true => {
                let info = |ct: &mut ChannelThread| ct.event_attribute(cali, self, attr.id(), kind);
                // An end's entry is on top: the end has checked it.
                let on_top = true;
                match ct.event_node(cali.tree(), &mut t.cache, regions, kind, info, entry, on_top) {
                    Some(event) => Some(event),
                    None => return true,
                }
            }
            // Without snapshot info the snapshot's node is the region
            // stack's, before the begin or the end changes it; a begin on
            // an empty stack has none.
            false => {
                let triggers = |ct: &mut ChannelThread| ct.event_attribute(cali, self, attr.id(), kind).is_some();
                match ct.region_node(cali.tree(), &mut t.cache, regions, kind, triggers, entry) {
                    Some(node) => node,
                    None => return true,
                }
            }
        };
        let measured = match MEASURED {
            false => Measured::default(),
            true => {
                read_counters(&mut ct.counters, &mut ct.measured);
                Measured::new(&self.measured, &ct.measured)
            }
        };
        let context = match unaligned {
            None => t.process_entries.nodes(),
            Some(node) => t.fused_context.of(&t.process_entries, t.process_version, node),
        };
        let region = RegionSnapshot {
            context,
            values: if VALUED { t.process_entries.values() } else { &[] },
            values_version: t.process_version,
            event,
            count: (kind == EventKind::End).then_some(self.region_count.id()),
            time: ct.timer.as_mut().map(Stamps::stamp),
            measured,
        };
        match &mut ct.inline {
            Some((_, processor)) => processor.process_region(cali, &region, &mut t.snapshot),
            None => self.process_region_boxed(cali, &mut ct.states, region, &mut t.snapshot),
        }
        true
    }

    /// Hands a region snapshot to processing services that are not kept
    /// inline. Out of line, and given the snapshot by value, so that the
    /// inline case keeps its parts in registers.
    #[inline(never)]
    pub(super) fn process_region_boxed<H: Host>(
        &self,
        cali: &H,
        states: &mut [ServiceState],
        region: RegionSnapshot<'_>,
        scratch: &mut Snapshot,
    ) {
        for &i in &self.process {
            states[i].process_region(cali, &region, scratch);
        }
    }
}
