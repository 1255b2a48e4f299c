//! The express path: a region begin or end in a channel that only
//! aggregates it, taken by the runtime's update directly (see
//! [`Caliper::begin`](crate::runtime::Caliper::begin)) when that channel is
//! the only one that sees updates. It is the fused path without what only
//! other channels need: no loop over the channels, no dispatch on the
//! channel's shape, no [`RegionSnapshot`] handed to a processor; the
//! snapshot's node comes from the thread's memo as on the fused path, and
//! goes with the timer's reading straight into the aggregation's row. A
//! begin from a call site that began the same region under the same
//! parent before (a wrapped MPI function in a message loop) skips the
//! memo and the aggregation's lookups, and so does its end: the site
//! remembers the node and both snapshots' entries (see [`Sites`]).
//! Anything else (a first update on the thread, unaligned or as-value
//! context, a process context the aggregation keys otherwise) is left to
//! the general path.

use super::*;
use crate::buffer::aggregation::AggThread;

/// Updates taken on the express path, which tests check it takes.
#[cfg(test)]
pub(super) static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Begins among them that a call site remembered.
#[cfg(test)]
pub(super) static FROM_SITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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
/// makes the update on the thread's region stack. A begin may name its
/// call `site` (see [`Sites`]). False, having changed nothing, if the
/// update needs the general path: the thread's first update in the
/// channel, unaligned or as-value context, a process context the
/// aggregation keys otherwise, a stack without its nodes, or a begin or
/// end the memo does not know (yet).
#[inline(always)]
pub(crate) fn express_update<H: Host>(
    channel: usize,
    cali: &H,
    t: &mut ThreadData,
    kind: EventKind,
    attr: Attribute,
    value: ValueKey,
    site: Option<usize>,
) -> bool {
    cali.refresh_process_entries(&mut t.process_entries, &mut t.process_version);
    if !(t.blackboard.values.is_empty() && t.blackboard.unaligned.is_empty()) {
        return false;
    }
    let Some(Some(ct)) = t.channels.get_mut(channel) else { return false };
    let ChannelThread { inline, memo, sites, timer, .. } = ct;
    let Some(aggregation) = inline.as_mut().and_then(|(_, p)| p.aggregation()) else { return false };
    let (context, values) = (t.process_entries.nodes(), t.process_entries.values());
    if context.len() > 2 || !aggregation.keys_regions_by_nodes(cali, values, t.process_version) {
        return false;
    }
    let regions = &mut t.blackboard.regions;
    let Some(top) = regions.materialized_node() else { return false };
    sites.keep_if((aggregation.generation(), t.process_version));
    // The snapshot's entry (its node is the stack's before the update),
    // and the node a begin pushes.
    let (entry, child) = match (kind, top) {
        (EventKind::Begin, _) => {
            let parent = top.unwrap_or(0);
            match site.and_then(|site| sites.begin(site, parent, attr.id(), value)) {
                Some(known) => {
                    memo.foreseen();
                    #[cfg(test)]
                    FROM_SITES.fetch_add(1, Ordering::Relaxed);
                    (Some(known.entry), Some(known.child))
                }
                None => {
                    let Some((child, event)) = memo.foresee(parent, attr.id(), value) else { return false };
                    let entry = aggregation.region_entry(context, top);
                    if let Some(site) = site
                        && let Some(begin) = ChildMemo::new(parent, attr.id(), value, (child, event))
                    {
                        remember(sites, memo, aggregation, context, site, begin, entry);
                    }
                    (entry, Some(child))
                }
            }
        }
        (_, Some(node)) => match sites.end(node) {
            Some(entry) => {
                memo.ended(node);
                (Some(entry), None)
            }
            // An end the memo knows triggers snapshots (see
            // `ChannelThread::region_node`).
            None if memo.ends_at_itself(node) => {
                memo.ended(node);
                (aggregation.region_entry(context, top), None)
            }
            None => return false,
        },
        (_, None) => return false,
    };
    let time = timer.as_mut().map(Stamps::stamp);
    if let Some(e) = entry {
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

/// Remembers at `site` the begin `begin`, whose snapshot went to
/// `entry`, once the end of its node is known to take its snapshot at
/// the node itself, in an entry the aggregation then has.
#[inline(never)]
fn remember(
    sites: &mut Sites,
    memo: &Memo,
    aggregation: &mut AggThread,
    context: &[Id],
    site: usize,
    begin: ChildMemo,
    entry: Option<usize>,
) {
    let child = Id::from(begin.child);
    if memo.ends_at_itself(child)
        && let Some(child_entry) = aggregation.region_entry(context, Some(child))
    {
        sites.remember(site, begin, entry, child_entry);
    }
}
