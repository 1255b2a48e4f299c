//! Per-thread snapshot buffers: the data a thread's processing services
//! gather, in the shapes the channel's fast path feeds directly. A
//! channel whose only processing service keeps one of these keeps it
//! inline ([`InlineProcessor`]), so that its fused path calls it without a
//! virtual call and the compiler inlines it there.

pub mod aggregation;
pub mod trace;

use crate::service::{Runtime, ServiceState, ThreadService};
use crate::snapshot::{RegionSnapshot, Snapshot};
use aggregation::AggThread;
use std::any::Any;
use trace::TraceThread;

/// A processing service's thread object kept inline by the channel: a
/// closed set of the buffers whose speed matters most.
pub struct InlineProcessor(Processor);

// One per thread and channel; a box would cost a pointer chase per snapshot.
#[allow(clippy::large_enum_variant)]
enum Processor {
    Aggregate(AggThread),
    Trace(TraceThread),
}

impl InlineProcessor {
    /// The thread object `state` made by a service, inline if it is one of
    /// the set; given back otherwise.
    pub fn from_boxed(state: ServiceState) -> Result<InlineProcessor, ServiceState> {
        let any: &dyn Any = &*state;
        let processor = if any.is::<AggThread>() {
            Processor::Aggregate(*unbox(state)?)
        } else if any.is::<TraceThread>() {
            Processor::Trace(*unbox(state)?)
        } else {
            return Err(state);
        };
        Ok(InlineProcessor(processor))
    }

    /// The thread object, for the generic pipeline and the flush.
    pub fn as_dyn(&mut self) -> &mut dyn ThreadService {
        match &mut self.0 {
            Processor::Aggregate(a) => a,
            Processor::Trace(t) => t,
        }
    }

    /// The thread object on its own, when the thread exits.
    pub fn into_boxed(self) -> ServiceState {
        match self.0 {
            Processor::Aggregate(a) => Box::new(a),
            Processor::Trace(t) => Box::new(t),
        }
    }

    /// The aggregation, if that is what the processor is (see the
    /// channel's express path).
    #[inline(always)]
    pub fn aggregation(&mut self) -> Option<&mut AggThread> {
        match &mut self.0 {
            Processor::Aggregate(a) => Some(a),
            Processor::Trace(_) => None,
        }
    }

    /// [`ThreadService::process_region`] without a virtual call.
    #[inline(always)]
    pub fn process_region(&mut self, cali: &dyn Runtime, region: &RegionSnapshot<'_>, scratch: &mut Snapshot) {
        match &mut self.0 {
            Processor::Aggregate(a) => a.process_region(cali, region, scratch),
            Processor::Trace(t) => t.process_region(cali, region, scratch),
        }
    }
}

/// `state` as its concrete type `T` (checked by the caller).
fn unbox<T: ThreadService>(state: ServiceState) -> Result<Box<T>, ServiceState> {
    let any: Box<dyn Any> = state;
    // The caller checked the type: the state is never lost here.
    any.downcast::<T>().map_err(|_| -> ServiceState { Box::new(()) })
}
