//! `async_event`: turns asynchronous events (e.g. [`crate::TimedAsyncEvent`])
//! into snapshots of the channel. Without it a channel ignores them.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::service::Service;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "async_event",
    aliases: &[],
    description: "Take snapshots of asynchronous events (async.begin, async.end, event.duration.ns)",
    stage: Stage::Trigger,
    settings: &[],
    create: |_: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(AsyncEvent))) },
};

pub struct AsyncEvent;

impl Service for AsyncEvent {
    fn name(&self) -> &'static str {
        "async_event"
    }

    fn takes_async_events(&self) -> bool {
        true
    }
}
