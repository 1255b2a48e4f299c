//! `debug`: logs every update a channel sees (verbosity 1), e.g.
//! `Event: pre_begin (region=main)`.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::Runtime;
use crate::service::{EventKind, Observation, Service, ServiceState, ThreadService};
use crate::value::ValueKey;
use caliper_data::Entry;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "debug",
    aliases: &[],
    description: "Log every annotation update (verbosity 1)",
    stage: Stage::Other,
    settings: &[],
    create: |_: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Debug))) },
};

pub struct Debug;

impl Service for Debug {
    fn name(&self) -> &'static str {
        "debug"
    }

    fn observes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(DebugThread)
    }
}

struct DebugThread;

impl ThreadService for DebugThread {
    fn observe(
        &mut self,
        cali: &dyn Runtime,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
        _trigger: &mut Vec<Entry>,
    ) -> Observation {
        let event = match kind {
            EventKind::Begin => "pre_begin",
            EventKind::Set => "pre_set",
            EventKind::End => "pre_end",
            EventKind::Explicit => "snapshot",
        };
        // The name lookup and the value are not worth computing for a
        // message the verbosity drops.
        if log::enabled(1) {
            let name = cali.attribute_info(attr.id()).map(|i| i.name.to_string()).unwrap_or_default();
            log::info(format_args!("Event: {event} ({name}={})", value.to_variant()));
        }
        Observation::Ignore
    }
}
