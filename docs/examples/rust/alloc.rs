//! Allocations under regions in Rust, counted by the global allocator
//! (`caliper::alloc::Tracking`) rather than by rewriting `malloc`: `phase`
//! allocates 1 MB and 0.5 MB, and `inner`, within it, 0.3 MB while they
//! are still live.
use std::hint::black_box;

#[global_allocator]
static ALLOC: caliper::alloc::Tracking = caliper::alloc::Tracking::system();

fn filled(bytes: usize) -> Vec<u8> {
    black_box(vec![1u8; bytes])
}

fn main() {
    let phase = caliper::region!("phase");
    let a = filled(1_000_000);
    let b = filled(500_000);
    {
        let _inner = caliper::region!("inner");
        drop(filled(300_000));
    }
    drop((b, a));
    drop(phase);
}
