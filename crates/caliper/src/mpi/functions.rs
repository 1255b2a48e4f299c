//! The wrapped MPI functions' `mpi.function` regions, begun and ended on
//! the runtime directly rather than through the service interface: a
//! message loop's wrappers make four region updates per exchange, and the
//! indirect call cost each of them a few nanoseconds. The begin hands its
//! end the thread's slot, which the end would otherwise look up again
//! (a call into the dynamic loader's thread-local lookup, from a shared
//! library).

use crate::channel::thread::ThreadSlot;
use crate::mpi::{function_attribute, function_region};
use crate::runtime::{Caliper, current_slot};
use std::marker::PhantomData;

/// What [`begin`] leaves for the [`end`] of the same wrapped call: the
/// calling thread's slot, if the region was begun. Not `Send`: the slot
/// is the thread's own to update.
#[derive(Copy, Clone, Default)]
pub struct Begun(Option<&'static ThreadSlot>, PhantomData<*const ()>);

impl Begun {
    /// As a pointer, for the MPI binding to keep across the real call
    /// (NULL: the region was not begun on a known slot).
    pub fn into_raw(self) -> *const std::ffi::c_void {
        self.0.map_or(std::ptr::null(), |slot| std::ptr::from_ref(slot).cast())
    }

    /// Back from [`Begun::into_raw`].
    ///
    /// # Safety
    /// `raw` is what `into_raw` of a [`begin`] on this thread returned, in
    /// the same wrapped call.
    pub unsafe fn from_raw(raw: *const std::ffi::c_void) -> Begun {
        // SAFETY: per the caller, NULL or the thread's slot, which lives
        // as long as the thread.
        Begun(unsafe { raw.cast::<ThreadSlot>().as_ref() }, PhantomData)
    }
}

/// Begins the `mpi.function` region of wrapped function `index` (an index
/// into [`MpiLayer::functions`](crate::mpi::MpiLayer::functions)).
#[inline]
pub fn begin(index: usize) -> Begun {
    let slot = (|| {
        let (attr, name) = function_region(index)?;
        let cali = Caliper::if_ready()?;
        let slot = current_slot()?;
        cali.begin_in(slot, attr, name, Some(index));
        Some(slot)
    })();
    Begun(slot, PhantomData)
}

/// Ends the innermost `mpi.function` region (begun by [`begin`] in the
/// same wrapped call, on the same thread).
#[inline]
pub fn end(begun: Begun) {
    if let Some(attr) = function_attribute()
        && let Some(cali) = Caliper::if_ready()
    {
        match begun.0 {
            // The thread's slot lives as long as the thread, which is
            // still inside the wrapped call.
            Some(slot) => cali.end_in(slot, attr, None),
            None => cali.end(attr, None),
        }
    }
}
