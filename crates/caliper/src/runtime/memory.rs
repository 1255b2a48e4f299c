//! Memory regions: the data tracking calls (`cali_datatracker_*`) and the
//! wrapped allocation functions hand the regions they begin and end to
//! the active channels' tracking services, on the calling thread.

use super::*;
use crate::service::{MemoryEvent, MemoryRegion};

impl Caliper {
    /// The runtime if it is ready and has not finished; unlike
    /// [`Caliper::instance`], never initialises it, so that a wrapper of a
    /// library function the runtime calls itself (`malloc`) can ask.
    #[inline]
    pub fn if_ready() -> Option<&'static Caliper> {
        if !READY.load(Ordering::Acquire) {
            return None;
        }
        CALIPER.get().filter(|c| !c.finished.load(Ordering::Relaxed))
    }

    /// Begins tracking a memory region (the reference's
    /// `memory_region_begin`).
    pub fn memory_region_begin(&self, region: &MemoryRegion<'_>) {
        self.track_memory(&MemoryEvent::Begin(*region));
    }

    /// Ends tracking the memory region that begins at `address`.
    pub fn memory_region_end(&self, address: u64) {
        self.track_memory(&MemoryEvent::End { address });
    }

    /// Hands a memory event to the active channels that track memory. A
    /// thread that cannot update now (inside a flush, or re-entered) drops
    /// it.
    pub fn track_memory(&self, event: &MemoryEvent<'_>) {
        self.with_thread(|t, active| {
            self.refresh_active(t, active);
            for channel in active.list.iter().filter(|c| c.tracks_memory()) {
                channel.track_memory(self, t, event);
            }
        });
        self.after_snapshots();
    }
}
