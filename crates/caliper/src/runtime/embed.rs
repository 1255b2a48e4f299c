//! Runtime operations the C API needs beyond the Rust annotation API:
//! per-channel snapshots (pushed and pulled), channel deletion, channel
//! blackboard reads and the current region of the calling thread.

use super::{Caliper, ProcessContext};
use crate::channel::Channel;
use crate::sync;
use caliper_data::{Entry, Record, Variant};
use std::sync::Mutex;

/// Ids of deleted channels: they stay in the channel list (ids are list
/// positions, and threads index their per-channel state by id) but never
/// measure or write again.
static DELETED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Whether another thread reads or writes the deleted-channel list (see
/// [`crate::sync::is_held`]).
pub(super) fn deleted_list_is_locked() -> bool {
    crate::sync::is_held(&DELETED)
}

impl Caliper {
    /// Takes an explicit snapshot on one channel, if it is active.
    pub fn push_snapshot_on(&self, channel: &Channel, trigger: &[Entry]) {
        if channel.is_active() {
            self.with_thread(|t, _| channel.push_snapshot(self, t, trigger));
            self.after_snapshots();
        }
    }

    /// The record `channel` would take now on the calling thread (context
    /// and measurements), without processing it. `None` while the thread
    /// cannot update (inside a flush, or re-entered from a signal handler).
    pub fn pull_snapshot(&self, channel: &Channel) -> Option<Record> {
        self.with_thread(|t, _| channel.pull_snapshot(self, t))
    }

    /// The innermost value of a nested attribute on the calling thread's
    /// region stack, or else on the process's.
    pub fn current_region(&self) -> Option<Variant> {
        let innermost = |bb: &crate::blackboard::Blackboard| {
            bb.regions.entries().iter().rev().find(|e| e.attr.is_nested()).map(|e| e.value.to_variant())
        };
        self.with_thread(|t, _| innermost(&t.blackboard))
            .flatten()
            .or_else(|| innermost(&self.lock_process().blackboard))
    }

    /// The context-tree node of the calling thread's region path: the
    /// innermost node of a nested attribute on its region stack (creating
    /// the stack's nodes), or else on the process's; `None` if neither
    /// has one. The reference's `Caliper::get_path_node`.
    pub fn path_node(&self) -> Option<caliper_data::node::Id> {
        let innermost_nested = |mut node: Option<caliper_data::node::Id>| {
            while let Some(id) = node {
                let n = self.tree.get(id)?;
                if self.attribute_info(n.attribute).is_some_and(|a| a.attr.is_nested()) {
                    return Some(id);
                }
                node = n.parent;
            }
            None
        };
        let thread = self.with_thread(|t, _| t.blackboard.regions.node(&self.tree, &mut t.cache)).flatten();
        innermost_nested(thread).or_else(|| {
            let mut p = self.lock_process();
            let ProcessContext { blackboard, cache, .. } = &mut *p;
            innermost_nested(blackboard.regions.node(&self.tree, cache))
        })
    }

    /// The value of `attr` on a channel's own blackboard (its run metadata).
    pub fn channel_get(&self, channel: &Channel, attr: crate::Attribute) -> Option<Variant> {
        sync::lock(channel.blackboard()).get(attr).map(|v| v.to_variant())
    }

    /// Deletes a channel: it stops measuring, and neither flushes nor
    /// writes at program exit.
    pub fn delete_channel(&self, channel: &Channel) {
        self.set_channel_active(channel, false);
        sync::lock(&DELETED).push(channel.id());
    }

    /// Whether a channel was deleted.
    pub fn is_deleted(&self, channel: &Channel) -> bool {
        sync::lock(&DELETED).contains(&channel.id())
    }
}
