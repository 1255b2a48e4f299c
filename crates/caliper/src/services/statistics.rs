//! `statistics`: counts what a channel saw (begin, end and set events, and
//! snapshots with their largest size) and logs the counts when the program
//! ends. A diagnostic: it sees every update, so the channel takes its
//! generic path.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{ChannelView, EventKind, Observation, Runtime, Service, ServiceState, ThreadService};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::Entry;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "statistics",
    aliases: &[],
    description: "Count begin, end and set events and snapshots, and log the counts at the end",
    stage: Stage::Other,
    settings: &[],
    create: |_: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Statistics::default()))) },
};

/// The channel's counts, over all threads.
#[derive(Default)]
struct Counts {
    begins: AtomicU64,
    ends: AtomicU64,
    sets: AtomicU64,
    snapshots: AtomicU64,
    max_snapshot_entries: AtomicU64,
    threads: AtomicU64,
}

#[derive(Default)]
struct Statistics {
    counts: Arc<Counts>,
}

impl Service for Statistics {
    fn name(&self) -> &'static str {
        "statistics"
    }

    fn observes(&self) -> bool {
        true
    }

    fn processes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        self.counts.threads.fetch_add(1, Ordering::Relaxed);
        Box::new(StatisticsThread { counts: self.counts.clone() })
    }

    fn finish(&self, _cali: &dyn Runtime, channel: &dyn ChannelView) {
        let c = &self.counts;
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let name = channel.name();
        log::info(format_args!("{name}: statistics:"));
        log::info(format_args!("  Number of begin events: {}", get(&c.begins)));
        log::info(format_args!("  Number of end events:   {}", get(&c.ends)));
        log::info(format_args!("  Number of set events:   {}", get(&c.sets)));
        log::info(format_args!("  Number of snapshots:    {}", get(&c.snapshots)));
        log::info(format_args!("  Max snapshot size:      {} entries", get(&c.max_snapshot_entries)));
        log::info(format_args!("  Number of threads:      {}", get(&c.threads)));
    }
}

struct StatisticsThread {
    counts: Arc<Counts>,
}

impl ThreadService for StatisticsThread {
    fn observe(
        &mut self,
        _cali: &dyn Runtime,
        kind: EventKind,
        _attr: Attribute,
        _value: ValueKey,
        _trigger: &mut Vec<Entry>,
    ) -> Observation {
        let counter = match kind {
            EventKind::Begin => &self.counts.begins,
            EventKind::End => &self.counts.ends,
            EventKind::Set => &self.counts.sets,
            EventKind::Explicit => return Observation::Ignore,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Observation::Ignore
    }

    /// Region snapshots come here too, built by the default
    /// `process_region`.
    fn process(&mut self, _cali: &dyn Runtime, snapshot: &Snapshot) {
        let entries = (snapshot.nodes().len() + snapshot.values().len()) as u64;
        self.counts.snapshots.fetch_add(1, Ordering::Relaxed);
        self.counts.max_snapshot_entries.fetch_max(entries, Ordering::Relaxed);
    }
}
