//! `timer` (alias `timestamp`): time offsets and durations.
//!
//! `time.offset.ns`: nanoseconds since the service started;
//! `time.duration.ns`: since the thread's previous snapshot in the channel
//! (the first one: since the service started); with
//! `CALI_TIMER_INCLUSIVE_DURATION`, `time.inclusive.duration.ns` on end
//! events: since the matching begin.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::service::{EventKind, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::{Snapshot, Stamps};
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "timer",
    aliases: &["timestamp"],
    description: "Add time offsets and durations to snapshots",
    stage: Stage::Other,
    settings: &[SettingSpec {
        key: "inclusive_duration",
        kind: SettingKind::Bool,
        default: "false",
        description: "Also record time.inclusive.duration.ns on region ends",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Timer::new(setup)))) },
};

/// The timer service of a channel.
pub struct Timer {
    /// The clock reading when the service started.
    start: u64,
    offset: Attribute,
    duration: Attribute,
    inclusive: Option<Attribute>,
}

/// A thread's timer: its clock readings and, for inclusive durations, the
/// begin times of its open regions.
struct TimerThread {
    stamps: Stamps,
    inclusive: Option<Id>,
    /// Begin times of open regions: (attribute, ns).
    open: Vec<(Id, u64)>,
}

impl Timer {
    /// The service, with its attributes created.
    pub fn new(setup: &Setup<'_>) -> Timer {
        let cali = setup.cali;
        let unit = cali.create_attribute("time.unit", AttrType::String, Properties::SKIP_EVENTS, &[]);
        let meta = [(unit.id(), Variant::string("nsec"))];
        let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let metric = value | Properties::AGGREGATABLE;
        Timer {
            start: crate::clock::clock().now_ns(),
            offset: cali.create_attribute("time.offset.ns", AttrType::Uint, value, &meta),
            duration: cali.create_attribute("time.duration.ns", AttrType::Uint, metric, &meta),
            inclusive: setup
                .settings
                .bool("inclusive_duration")
                .then(|| cali.create_attribute("time.inclusive.duration.ns", AttrType::Uint, metric, &meta)),
        }
    }
}

impl Timer {
    fn stamps(&self) -> Stamps {
        Stamps::new(self.start, self.offset.id(), self.duration.id())
    }
}

impl Service for Timer {
    fn name(&self) -> &'static str {
        "timer"
    }

    fn measures(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(TimerThread { stamps: self.stamps(), inclusive: self.inclusive.map(Attribute::id), open: Vec::new() })
    }

    /// Inclusive durations depend on the trigger: only a plain timer runs
    /// inline.
    fn inline_timer(&self) -> Option<Stamps> {
        self.inclusive.is_none().then(|| self.stamps())
    }
}

impl ThreadService for TimerThread {
    #[inline]
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, trigger: &Trigger) {
        let time = self.stamps.stamp();
        time.write_to(snapshot);
        let now = time.offset;
        if let (Some(inclusive), Some(attr)) = (self.inclusive, trigger.attr) {
            match trigger.kind {
                EventKind::Begin => self.open.push((attr.id(), now)),
                EventKind::End => {
                    if let Some(i) = self.open.iter().rposition(|(a, _)| *a == attr.id()) {
                        let (_, begin) = self.open.remove(i);
                        snapshot.push_value(inclusive, ValueKey::uint(now.saturating_sub(begin)));
                    }
                }
                _ => {}
            }
        }
    }
}
