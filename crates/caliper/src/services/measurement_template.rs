//! `measurement_template`: the reference's example of a measuring service,
//! and the shape of one here: for each name in
//! `CALI_MEASUREMENT_TEMPLATE_NAMES`, every snapshot gets the source's
//! absolute value as `measurement.val.<name>` and its change since the
//! thread's previous snapshot as `measurement.<name>` (aggregatable, so
//! profiles sum it per region). The source stands in for a counter that
//! other code of a real service advances on its thread (bytes allocated,
//! bytes read): a per-thread count that the program advances with
//! [`advance`]. Declared as [region counters](crate::service::RegionCounter),
//! it keeps the channel on its fused path.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::service::{RegionCounter, Service, ThreadCounter};
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "measurement_template",
    aliases: &[],
    description: "Example measuring service: measurement.val.<name> (absolute) and measurement.<name> (delta)",
    stage: Stage::Other,
    settings: &[SettingSpec {
        key: "names",
        kind: SettingKind::StringList,
        default: "a,b",
        description: "The names of the measurements",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(MeasurementTemplate::new(setup))))
    },
};

struct MeasurementTemplate {
    /// Per name: the absolute and the delta attribute.
    attributes: Vec<(Id, Id)>,
}

impl MeasurementTemplate {
    fn new(setup: &Setup<'_>) -> MeasurementTemplate {
        let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let attributes = setup
            .settings
            .list("names", false)
            .iter()
            .map(|name| {
                let create = |attr: String, props| setup.cali.create_attribute(&attr, AttrType::Uint, props, &[]).id();
                (
                    create(format!("measurement.val.{name}"), value),
                    create(format!("measurement.{name}"), value | Properties::AGGREGATABLE),
                )
            })
            .collect();
        MeasurementTemplate { attributes }
    }
}

impl Service for MeasurementTemplate {
    fn name(&self) -> &'static str {
        "measurement_template"
    }

    fn measures(&self) -> bool {
        true
    }

    /// Each name reads the thread's source.
    fn region_counters(&self) -> Vec<RegionCounter> {
        let counter = |&(absolute, delta): &(Id, Id)| RegionCounter {
            absolute: Some(absolute),
            delta: Some(delta),
            counter: thread_source,
        };
        self.attributes.iter().map(counter).collect()
    }
}

thread_local! {
    /// The calling thread's source.
    static SOURCE: ThreadCounter = ThreadCounter::default();
}

/// The calling thread's source, for the channels.
fn thread_source() -> ThreadCounter {
    SOURCE.with(ThreadCounter::clone)
}

/// Advances the calling thread's source by `n`: the next snapshot's
/// `measurement.<name>` is the sum of the advances since the thread's
/// previous one.
pub fn advance(n: u64) {
    // A thread that exits has no source left to advance.
    let _ = SOURCE.try_with(|source| source.add(n));
}
