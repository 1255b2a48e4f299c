//! The wrapped MPI functions' `mpi.function` regions, begun and ended on
//! the runtime directly rather than through the service interface: a
//! message loop's wrappers make four region updates per exchange, and the
//! indirect call cost each of them a few nanoseconds.

use crate::mpi::{function_attribute, function_region};
use crate::runtime::Caliper;

/// Begins the `mpi.function` region of wrapped function `index` (an index
/// into [`MpiLayer::functions`](crate::mpi::MpiLayer::functions)).
#[inline]
pub fn begin(index: usize) {
    if let Some((attr, name)) = function_region(index)
        && let Some(cali) = Caliper::if_ready()
    {
        cali.begin(attr, name);
    }
}

/// Ends the innermost `mpi.function` region (begun by [`begin`]).
#[inline]
pub fn end() {
    if let Some(attr) = function_attribute()
        && let Some(cali) = Caliper::if_ready()
    {
        cali.end(attr, None);
    }
}
