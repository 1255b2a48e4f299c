//! `async_event`: turns asynchronous events (e.g. [`crate::TimedAsyncEvent`])
//! into snapshots of the channel. Without it a channel ignores them.

use crate::channel::Service;

pub struct AsyncEvent;

impl Service for AsyncEvent {
    fn name(&self) -> &'static str {
        "async_event"
    }

    fn takes_async_events(&self) -> bool {
        true
    }
}
