//! The express path: a region begin or end in a channel that only
//! aggregates it, taken by the runtime's update directly (see
//! [`Caliper::begin`](crate::runtime::Caliper::begin)) when that channel is
//! the only one that sees updates. It is the fused path without what only
//! other channels need: no loop over the channels, no dispatch on the
//! channel's shape, no [`RegionSnapshot`] handed to a processor; the
//! snapshot's node comes from the thread's memo as on the fused path, and
//! goes with the timer's reading straight into the aggregation's row.
//! Anything else (a first update on the thread, unaligned or as-value
//! context, a process context the aggregation keys otherwise) is left to
//! the general path.

use super::*;

/// Updates taken on the express path, which tests check it takes.
#[cfg(test)]
pub(super) static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Channel {
    /// Whether region updates in this channel may take the express path:
    /// it takes fused region snapshots without snapshot info or region
    /// counters, and has one processing service (which a thread keeps
    /// inline if it is an aggregation, see [`express_update`]).
    pub(crate) fn takes_express(&self) -> bool {
        self.fused == Fused::Plain && self.events.as_ref().is_some_and(|e| !e.snapshot_info) && self.process.len() == 1
    }
}

/// Takes the snapshot of a region begin or end (`attr` on the thread's
/// region stack; an end's entry on top, checked) on the express path,
/// in channel `channel`, which [`takes_express`](Channel::takes_express), and
/// makes the update on the thread's region stack. False, having changed
/// nothing, if the update needs the general path: the thread's first
/// update in the channel, unaligned or as-value context, a process
/// context the aggregation keys otherwise, a stack without its nodes,
/// or a begin or end the memo does not know (yet).
#[inline(always)]
pub(crate) fn express_update<H: Host>(
    channel: usize,
    cali: &H,
    t: &mut ThreadData,
    kind: EventKind,
    attr: Attribute,
    value: ValueKey,
) -> bool {
    cali.refresh_process_entries(&mut t.process_entries, &mut t.process_version);
    if !(t.blackboard.values.is_empty() && t.blackboard.unaligned.is_empty()) {
        return false;
    }
    let Some(Some(ct)) = t.channels.get_mut(channel) else { return false };
    let ChannelThread { inline, memo, timer, .. } = ct;
    let Some(aggregation) = inline.as_mut().and_then(|(_, p)| p.aggregation()) else { return false };
    let (context, values) = (t.process_entries.nodes(), t.process_entries.values());
    if context.len() > 2 || !aggregation.keys_regions_by_nodes(cali, values, t.process_version) {
        return false;
    }
    let regions = &mut t.blackboard.regions;
    let Some(top) = regions.materialized_node() else { return false };
    // The snapshot's node is the stack's before the update.
    let child = match (kind, top) {
        (EventKind::Begin, _) => match memo.foresee(top.unwrap_or(0), attr.id(), value) {
            Some((child, _)) => Some(child),
            None => return false,
        },
        // An end the memo knows triggers snapshots (see
        // `ChannelThread::region_node`).
        (_, Some(node)) if memo.ends_at_itself(node) => {
            memo.ended(node);
            None
        }
        _ => return false,
    };
    let time = timer.as_mut().map(Stamps::stamp);
    if let Some(e) = aggregation.region_entry(context, top) {
        aggregation.add_region(e, child.is_none(), time, &[]);
    }
    match child {
        Some(child) => regions.push_materialized(StackEntry { attr, value }, child),
        None => regions.pop(),
    }
    #[cfg(test)]
    TAKEN.fetch_add(1, Ordering::Relaxed);
    true
}
