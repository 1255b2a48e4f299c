//! The example program: the region structure of the reference's examples.
//!
//! ```text
//! main            region
//!   init          region
//!   mainloop      loop, 4 iterations (iteration#mainloop = 0..3)
//!     foo         region, once per iteration
//! ```
//!
//! Run it under any configuration, e.g.
//! `CALI_SERVICES_ENABLE=event,trace,timer,recorder CALI_RECORDER_FILENAME=stdout cargo run --release --bin demo`.

use std::hint::black_box;

fn work(n: u64) -> u64 {
    (0..n).fold(0u64, |acc, i| acc.wrapping_mul(31).wrapping_add(i))
}

fn foo() {
    let _f = caliper::region!("foo");
    black_box(work(200_000));
}

fn main() {
    let iterations = 4;
    caliper::set_global("iterations", iterations);
    caliper::set_global("caliper.config", std::env::var("CALI_CONFIG").unwrap_or_default());
    let _main = caliper::region!("main");
    {
        let _init = caliper::region!("init");
        black_box(work(10_000));
    }
    let lp = caliper::Loop::new("mainloop");
    for i in 0..iterations {
        let _it = lp.iteration(i);
        foo();
    }
}
