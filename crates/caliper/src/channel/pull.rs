//! Pulled snapshots: the record a channel would take now, handed to the
//! caller instead of the channel's processing services (the C API's
//! `cali_channel_pull_snapshot`, used by samplers and tools that keep
//! their own data).

use super::{Channel, Context, EventKind, Trigger, context_entries};
use crate::runtime::Caliper;
use crate::thread::ThreadData;
use caliper_data::Record;

impl Channel {
    /// The calling thread's context and the channel's measurements, as a
    /// record; nothing is processed or stored.
    pub(crate) fn pull_snapshot(&self, cali: &Caliper, t: &mut ThreadData) -> Record {
        let ct = self.thread_state(cali, &mut t.channels, &mut t.blackboard);
        let mut record = Record::ctx();
        context_entries(
            cali,
            Context {
                snapshot: &mut record,
                blackboard: &mut t.blackboard,
                cache: &mut t.cache,
                process_entries: &mut t.process_entries,
                process_version: &mut t.process_version,
            },
            None,
        );
        let trigger = Trigger { kind: EventKind::Explicit, attr: None };
        for &i in &self.measure {
            self.services[i].measure(&mut ct.states[i], &mut record, &trigger);
        }
        record
    }
}
