//! `kokkostime`: Kokkos' kernels (`parallel_for`, `parallel_reduce`,
//! `parallel_scan`), fences and profile regions (`pushRegion`) become
//! regions of the `region` attribute named as Kokkos names them, so that
//! they nest with the program's own regions and every region config
//! reports them; `kernel_type` (`kokkos.parallel_for`, ...) says which
//! kind each is.
//!
//! `kernel_type` holds the kind of the innermost Kokkos region only (the
//! kinds of the enclosing ones are kept per thread and set back as each
//! ends), so that `kernel_type=kokkos.parallel_for` selects the kernels
//! themselves, not what runs inside a `pushRegion`. It is set after the
//! region begins and after it ends, so that the snapshots at the region's
//! begin and end see the kind of the enclosing and of the ending region:
//! it stays off the region stack (unaligned) and takes no snapshots of
//! its own.

use super::super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use super::Kernel;
use crate::attributes::Attribute;
use crate::service::{GlobalRuntime, Runtime, Service};
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

pub(in crate::services) const SPEC: ServiceSpec = ServiceSpec {
    name: "kokkostime",
    aliases: &[],
    description: "Kokkos kernels, fences and profile regions as regions, with their kernel_type",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        STATE.get_or_init(|| Time::new(setup.cali));
        Ok(Created::Service(Arc::new(KokkosTime)))
    },
};

static STATE: OnceLock<Time> = OnceLock::new();

thread_local! {
    /// The kinds of the thread's open Kokkos regions, innermost last.
    static OPEN: RefCell<Vec<Kernel>> = const { RefCell::new(Vec::new()) };
}

/// The handler of kernel events, once a channel has the service.
#[inline]
pub(super) fn installed() -> Option<&'static Time> {
    STATE.get()
}

pub(super) struct Time {
    runtime: GlobalRuntime,
    region: Attribute,
    kernel_type: Attribute,
    /// The values of `kernel_type`, by [`Kernel`].
    types: [ValueKey; Kernel::ALL.len()],
}

impl Time {
    fn new(cali: &dyn Runtime) -> Time {
        let props = Properties::UNALIGNED | Properties::SKIP_EVENTS;
        Time {
            runtime: cali.global(),
            region: cali.builtins().region,
            kernel_type: cali.create_attribute("kernel_type", AttrType::String, props, &[]),
            types: Kernel::ALL.map(|k| ValueKey::string(k.kernel_type())),
        }
    }

    pub(super) fn begin(&self, kernel: Kernel, name: ValueKey) {
        if let Some(cali) = (self.runtime)() {
            cali.begin(self.region, name);
            cali.set(self.kernel_type, self.types[kernel as usize]);
            let _ = OPEN.try_with(|open| open.borrow_mut().push(kernel));
        }
    }

    pub(super) fn end(&self) {
        if let Some(cali) = (self.runtime)() {
            cali.end(self.region);
            let enclosing = OPEN.try_with(|open| {
                let mut open = open.borrow_mut();
                open.pop();
                open.last().copied()
            });
            match enclosing {
                Ok(Some(kernel)) => cali.set(self.kernel_type, self.types[kernel as usize]),
                _ => cali.end(self.kernel_type),
            }
        }
    }
}

/// The channel's part: nothing but its name; the regions are the
/// program's, measured by whatever the channel measures.
struct KokkosTime;

impl Service for KokkosTime {
    fn name(&self) -> &'static str {
        "kokkostime"
    }
}
