//! Kokkos programs, through the Kokkos tools interface: Kokkos loads the
//! library named by `KOKKOS_TOOLS_LIBS` (or `KOKKOS_PROFILE_LIBRARY`) and
//! calls its `kokkosp_*` functions, which libcaliper exports and turns
//! into the events of this module. Two services use them:
//!
//! * `kokkostime` (`time`): kernels, fences and the program's profile
//!   regions become `region` entries, with their kind in `kernel_type`;
//! * `kokkoslookup` (`lookup`): the views Kokkos allocates are kept, and
//!   memory-address values in snapshots are resolved to the view that holds
//!   them; deep copies are snapshots with their source, destination and
//!   size.
//!
//! A service, once a channel enables it, handles the events for the rest
//! of the process (as the reference's callbacks stay connected); before
//! that, or in a program where no channel enables one, an event costs a
//! load.

mod lookup;
mod time;

use crate::value::ValueKey;

pub(super) use lookup::SPEC as LOOKUP_SPEC;
pub(super) use time::SPEC as TIME_SPEC;

/// What Kokkos begins and ends: the `kernel_type` of its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `Kokkos::parallel_for`.
    ParallelFor,
    /// `Kokkos::parallel_reduce`.
    ParallelReduce,
    /// `Kokkos::parallel_scan`.
    ParallelScan,
    /// `Kokkos::fence`: a wait, which the profile shows apart from work.
    Fence,
    /// `Kokkos::Profiling::pushRegion`.
    UserRegion,
}

impl Kernel {
    const ALL: [Kernel; 5] =
        [Kernel::ParallelFor, Kernel::ParallelReduce, Kernel::ParallelScan, Kernel::Fence, Kernel::UserRegion];

    /// The value of `kernel_type`, as the reference names it.
    pub fn kernel_type(self) -> &'static str {
        match self {
            Kernel::ParallelFor => "kokkos.parallel_for",
            Kernel::ParallelReduce => "kokkos.parallel_reduce",
            Kernel::ParallelScan => "kokkos.parallel_scan",
            Kernel::Fence => "kokkos.fence",
            Kernel::UserRegion => "kokkos.user_region",
        }
    }
}

/// A view's memory as Kokkos describes it: its memory space's name
/// (`Host`, `Cuda`, ...), its label, its address and its size in bytes.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// The memory space (`Host`, `Cuda`, ...): which device's memory the
    /// view takes.
    pub space: &'a str,
    /// The view's label.
    pub name: &'a str,
    /// The first byte of its data.
    pub address: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// Begins a kernel, fence or profile region on the calling thread, named
/// by `name` (called only if a service marks it: a name is interned).
#[inline]
pub fn begin(kernel: Kernel, name: impl FnOnce() -> ValueKey) {
    if let Some(time) = time::installed() {
        time.begin(kernel, name());
    }
}

/// Ends the calling thread's innermost kernel, fence or profile region.
#[inline]
pub fn end() {
    if let Some(time) = time::installed() {
        time.end();
    }
}

/// Kokkos allocated `view`.
pub fn allocate(view: &View<'_>) {
    if let Some(lookup) = lookup::installed() {
        lookup.allocate(view);
    }
}

/// Kokkos freed the view at `address`.
pub fn deallocate(address: u64) {
    if let Some(lookup) = lookup::installed() {
        lookup.deallocate(address);
    }
}

/// A deep copy of `size` bytes from `src` to `dst` begins on the calling
/// thread.
pub fn begin_deep_copy(dst: &View<'_>, src: &View<'_>, size: u64) {
    if let Some(lookup) = lookup::installed() {
        lookup.begin_deep_copy(dst, src, size);
    }
}

/// The calling thread's deep copy ends.
pub fn end_deep_copy() {
    if let Some(lookup) = lookup::installed() {
        lookup.end_deep_copy();
    }
}
