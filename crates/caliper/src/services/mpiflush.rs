//! `mpiflush`: the channel writes its output before `MPI_Finalize`, while
//! the ranks can still reduce it across each other (see
//! [`crate::mpi::finalize`]). Available once an MPI binding registered.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::service::Service;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "mpiflush",
    aliases: &[],
    description: "Flush and write the channel's output at MPI_Finalize",
    stage: Stage::Other,
    settings: &[],
    create: |_: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(MpiFlush))) },
};

struct MpiFlush;

impl Service for MpiFlush {
    fn name(&self) -> &'static str {
        "mpiflush"
    }

    fn flushes_at_finalize(&self) -> bool {
        true
    }
}
