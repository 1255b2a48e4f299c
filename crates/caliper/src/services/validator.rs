//! `validator`: checks annotation nesting. Mismatched ends are reported
//! when they happen (by the runtime); at the end of the program the
//! validator lists the regions each thread left open and says whether any
//! nesting error was found.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::log;
use crate::service::Service;
use crate::service::{ChannelView, Runtime};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "validator",
    aliases: &[],
    description: "Check annotation nesting; report regions left open at the end of the program",
    stage: Stage::Other,
    settings: &[],
    create: |_: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Validator))) },
};

pub struct Validator;

impl Service for Validator {
    fn name(&self) -> &'static str {
        "validator"
    }

    fn finish(&self, cali: &dyn Runtime, _channel: &dyn ChannelView) {
        let open = cali.open_regions();
        for path in &open {
            log::error(format_args!("validator: Regions not closed: {path}"));
        }
        if cali.stack_errors() > 0 || !open.is_empty() {
            log::error(format_args!("validator: Annotation nesting errors found"));
        } else {
            log::info(format_args!("validator: No annotation nesting errors found"));
        }
    }
}
