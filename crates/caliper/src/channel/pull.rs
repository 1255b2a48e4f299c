//! Pulled snapshots: the record a channel would take now, handed to the
//! caller instead of the channel's processing services (the C API's
//! `cali_channel_pull_snapshot`, used by samplers and tools that keep
//! their own data).

use super::Host;
use super::{Channel, Context, EXPLICIT, context_entries};
use crate::channel::thread::ThreadData;
use caliper_data::Record;

impl Channel {
    /// The calling thread's context and the channel's measurements, as a
    /// record; nothing is processed or stored.
    pub(crate) fn pull_snapshot<H: Host>(&self, cali: &H, t: &mut ThreadData) -> Record {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        t.snapshot.clear();
        let snapshot = context_entries(cali, context_of!(t), None);
        self.run_measure(cali, ct, snapshot, &EXPLICIT);
        let mut record = Record::ctx();
        snapshot.to_record(&mut record);
        record
    }
}
