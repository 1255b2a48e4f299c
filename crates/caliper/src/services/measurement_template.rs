//! `measurement_template`: the reference's example of a measuring service,
//! and the shape of one here: for each name in
//! `CALI_MEASUREMENT_TEMPLATE_NAMES`, every snapshot gets the source's
//! absolute value as `measurement.val.<name>` and its change since the
//! thread's previous snapshot as `measurement.<name>` (aggregatable, so
//! profiles sum it per region). The source stands in for a counter a real
//! service would read (a perf event, a memory statistic): a per-thread
//! count of the snapshots taken, so each snapshot adds 1.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::service::{Service, ServiceState, ThreadService};
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

    /// Every snapshot gets the same values: the service joins the
    /// channel's fused path.
    fn region_measurements(&self) -> Vec<Id> {
        self.attributes.iter().flat_map(|&(absolute, delta)| [absolute, delta]).collect()
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(Counter { count: 0 })
    }
}

/// A thread's source: its count of snapshots so far.
struct Counter {
    count: u64,
}

impl ThreadService for Counter {
    /// Per name, the absolute value and the change since the previous
    /// snapshot (which is 1, as the source counts snapshots).
    fn measure_region(&mut self, values: &mut [u64]) {
        let previous = self.count;
        self.count += 1;
        let pair = [self.count, self.count - previous];
        for values in values.as_chunks_mut::<2>().0 {
            *values = pair;
        }
    }
}
