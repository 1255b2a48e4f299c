//! `debug`: logs every update a channel sees (verbosity 1), e.g.
//! `Event: pre_begin (region=main)`.

use crate::attributes::Attribute;
use crate::channel::{EventKind, Service};
use crate::log;
use crate::runtime::Caliper;
use crate::value::ValueKey;

pub struct Debug;

impl Service for Debug {
    fn name(&self) -> &'static str {
        "debug"
    }

    fn observes(&self) -> bool {
        true
    }

    fn observe(&self, cali: &Caliper, kind: EventKind, attr: Attribute, value: ValueKey) {
        let event = match kind {
            EventKind::Begin => "pre_begin",
            EventKind::Set => "pre_set",
            EventKind::End => "pre_end",
            EventKind::Explicit => "snapshot",
        };
        let name = cali.attribute_info(attr.id()).map(|i| i.name.to_string()).unwrap_or_default();
        log::info(&format!("Event: {event} ({name}={})", value.to_variant()));
    }
}
