//! What `MPI_Finalize` does before the real one: the channels with
//! `mpiflush` (the `CALI_CONFIG` configs among them) and those whose
//! `mpireport` writes at finalize write their output while the ranks can
//! still talk to each other (see [`crate::mpi`]).

use crate::mpi;
use crate::runtime::Caliper;

/// Writes the outputs due at `MPI_Finalize`, once; the MPI binding calls
/// it before the real `MPI_Finalize`.
pub fn on_finalize() {
    if !mpi::begin_finalize() {
        return;
    }
    let Some(cali) = Caliper::instance() else { return };
    for channel in cali.all_channels() {
        if channel.services().iter().any(|s| s.flushes_at_finalize()) {
            cali.flush_and_write(&channel);
        }
    }
}
