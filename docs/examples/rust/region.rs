//! Nested regions, a loop and run metadata in Rust; what is measured comes
//! from `CALI_CONFIG` (e.g. `CALI_CONFIG=runtime-report`).
use std::hint::black_box;

fn work(n: u64) -> u64 {
    let _work = caliper::region!("work"); // region=work until _work drops
    (0..n).fold(0u64, |acc, i| acc.wrapping_mul(31).wrapping_add(i))
}

fn main() {
    caliper::set_global("iterations", 4);
    let _main = caliper::region!("main");
    let lp = caliper::Loop::new("mainloop"); // loop=mainloop
    for i in 0..4 {
        let _it = lp.iteration(i); // iteration#mainloop=i
        black_box(work(1_000_000));
    }
}
