//! Memory regions in a channel: the tracking services see a region begun
//! or ended, and the channel takes the snapshot they ask for.

use super::*;
use crate::service::MemoryEvent;

impl Channel {
    /// Whether any of the channel's services tracks memory regions.
    pub fn tracks_memory(&self) -> bool {
        !self.memory.is_empty()
    }

    /// Hands a memory region begun or ended on thread `t` to the tracking
    /// services, with the thread's region path, then takes a snapshot with
    /// the entries they added, if any.
    pub(crate) fn track_memory<H: Host>(&self, cali: &H, t: &mut ThreadData, event: &MemoryEvent<'_>) {
        let path = t.blackboard.regions.node(cali.tree(), &mut t.cache);
        let mut entries = std::mem::take(&mut t.memory_entries);
        entries.clear();
        for &i in &self.memory {
            self.services[i].track_memory(cali, event, path, &mut entries);
        }
        if !entries.is_empty() {
            self.push_snapshot(cali, t, &entries);
        }
        t.memory_entries = entries;
    }
}
