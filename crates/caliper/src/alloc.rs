//! Allocation tracking for Rust programs: a global allocator that hands
//! every allocation and free to the memory tracking services (`alloc`,
//! `allocstats`), as `sysalloc` does for C programs by wrapping `malloc`,
//! without rewriting anything at run time. Allocations show as `malloc`
//! (zeroed ones as `calloc`, reallocations as `realloc`) regions.
//!
//! ```
//! #[global_allocator]
//! static ALLOC: caliper::alloc::Tracking = caliper::alloc::Tracking::system();
//! ```
//!
//! With `CALI_CONFIG=runtime-report,alloc.stats` (or
//! `CALI_SERVICES_ENABLE=...,allocstats,...`) each region then gets its
//! allocation statistics. Allocations the runtime makes for itself are not
//! handed on, and when `sysalloc` wraps `malloc` too, the allocations that
//! pass through this allocator are counted here only.

use crate::interpose::Reentry;
use crate::runtime::Caliper;
use crate::service::{MemoryEvent, MemoryRegion};
use std::alloc::{GlobalAlloc, Layout, System};

/// A global allocator over `A` that tracks what it allocates.
pub struct Tracking<A = System> {
    inner: A,
}

impl Tracking<System> {
    /// Over the system allocator.
    pub const fn system() -> Tracking<System> {
        Tracking { inner: System }
    }
}

impl<A> Tracking<A> {
    /// Over `inner`.
    pub const fn new(inner: A) -> Tracking<A> {
        Tracking { inner }
    }
}

/// Hands an event to the runtime if it is ready; `_inside` proves the
/// thread is not inside the runtime (and keeps the runtime's own
/// allocations from coming back here).
fn track(_inside: &Reentry, event: MemoryEvent<'_>) {
    if let Some(cali) = Caliper::if_ready() {
        cali.track_memory(&event);
    }
}

fn begin(inside: &Reentry, address: *mut u8, label: &str, size: usize) {
    if !address.is_null() {
        let dims = [size as u64];
        track(inside, MemoryEvent::Begin(MemoryRegion { address: address as u64, label, elem_size: 1, dims: &dims }));
    }
}

// SAFETY: every call goes to `inner` unchanged; the tracking around it
// neither allocates through this allocator (the guard makes nested
// allocations pass through) nor touches the memory.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Tracking<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let inside = Reentry::enter();
        // SAFETY: the caller's layout.
        let p = unsafe { self.inner.alloc(layout) };
        if let Some(inside) = &inside {
            begin(inside, p, "malloc", layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let inside = Reentry::enter();
        // SAFETY: the caller's layout.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if let Some(inside) = &inside {
            begin(inside, p, "calloc", layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let inside = Reentry::enter();
        if let Some(inside) = &inside {
            track(inside, MemoryEvent::End { address: p as u64 });
        }
        // SAFETY: the caller's block and layout.
        unsafe { self.inner.dealloc(p, layout) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let inside = Reentry::enter();
        // SAFETY: the caller's block, layout and size.
        let q = unsafe { self.inner.realloc(p, layout, new_size) };
        if let Some(inside) = &inside
            && !q.is_null()
        {
            track(inside, MemoryEvent::End { address: p as u64 });
            begin(inside, q, "realloc", new_size);
        }
        q
    }
}
