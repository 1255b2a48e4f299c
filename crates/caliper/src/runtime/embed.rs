//! Runtime operations the C API needs beyond the Rust annotation API:
//! per-channel snapshots (pushed and pulled), channel deletion, channel
//! blackboard reads and the current region of the calling thread.

use super::Caliper;
use crate::channel::Channel;
use caliper_data::{Entry, Record, Variant};
use std::sync::Mutex;

/// Ids of deleted channels: they stay in the channel list (ids are list
/// positions, and threads index their per-channel state by id) but never
/// measure or write again.
static DELETED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

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

    /// The value of `attr` on a channel's own blackboard (its run metadata).
    pub fn channel_get(&self, channel: &Channel, attr: crate::Attribute) -> Option<Variant> {
        channel.blackboard().lock().unwrap_or_else(|e| e.into_inner()).get(attr).map(|v| v.to_variant())
    }

    /// Deletes a channel: it stops measuring, and neither flushes nor
    /// writes at program exit.
    pub fn delete_channel(&self, channel: &Channel) {
        self.set_channel_active(channel, false);
        DELETED.lock().unwrap_or_else(|e| e.into_inner()).push(channel.id());
    }

    /// Whether a channel was deleted.
    pub fn is_deleted(&self, channel: &Channel) -> bool {
        DELETED.lock().unwrap_or_else(|e| e.into_inner()).contains(&channel.id())
    }
}
