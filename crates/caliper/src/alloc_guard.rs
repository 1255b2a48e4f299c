//! An allocator that knows when the calling thread is inside it.
//!
//! A program whose signal handler calls `exit()` runs the flush at exit on
//! the interrupted thread. If the signal came while that thread was inside
//! `malloc` or `free` on the runtime's behalf, the allocator's state is
//! half-updated (glibc takes no lock while the process has one thread, and
//! its lock is not re-entrant when it has more): the flush, which
//! allocates, would corrupt the heap or wait for ever. With this allocator
//! in place the flush sees that and leaves the report out, with a message.
//!
//! libcaliper (the C ABI) installs it as its global allocator; a Rust
//! program may too:
//!
//! ```
//! #[global_allocator]
//! static ALLOC: caliper::TrackedAllocator = caliper::TrackedAllocator;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{Ordering, compiler_fence};

thread_local! {
    /// How deep the calling thread is inside the allocator.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// The system allocator, counting per thread the calls in progress.
pub struct TrackedAllocator;

/// Runs `f` counted as inside the allocator.
#[inline(always)]
fn counted<R>(f: impl FnOnce() -> R) -> R {
    // A thread being torn down has no counter left: it runs uncounted.
    let _ = INSIDE.try_with(|n| n.set(n.get() + 1));
    compiler_fence(Ordering::SeqCst);
    let result = f();
    compiler_fence(Ordering::SeqCst);
    let _ = INSIDE.try_with(|n| n.set(n.get().saturating_sub(1)));
    result
}

// SAFETY: every method forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for TrackedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        counted(|| unsafe { System.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        counted(|| unsafe { System.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        counted(|| unsafe { System.dealloc(ptr, layout) })
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        counted(|| unsafe { System.realloc(ptr, layout, new_size) })
    }
}

/// Whether the calling thread is inside the allocator: a signal handler
/// that interrupted an allocation is running.
pub(crate) fn interrupted_allocation() -> bool {
    INSIDE.try_with(Cell::get).is_ok_and(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_covers_the_call_only() {
        assert!(!interrupted_allocation());
        assert!(counted(interrupted_allocation));
        assert!(!interrupted_allocation());
        // SAFETY: a valid layout; the block is freed with it.
        unsafe {
            let layout = Layout::from_size_align(64, 8).unwrap();
            let p = TrackedAllocator.alloc(layout);
            assert!(!p.is_null());
            TrackedAllocator.dealloc(p, layout);
        }
        assert!(!interrupted_allocation());
    }
}
