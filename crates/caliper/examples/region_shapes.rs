//! Opens regions in extreme shapes, to measure what the measurement
//! configs (e.g. `runtime-report`) cost on them at flush.
//!
//! `region_shapes DEPTH SIBLINGS`: a chain of DEPTH nested regions, then
//! SIBLINGS distinct regions one after the other under `main`. Run as
//! `CALI_CONFIG=runtime-report cargo run --release --example region_shapes -- 10000 100000`.

fn main() {
    let arg = |i: usize| -> usize { std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(0) };
    let (depth, siblings) = (arg(1), arg(2));
    let _main = caliper::region!("main");
    let names: Vec<String> = (0..depth).map(|i| format!("d{i}")).collect();
    for name in &names {
        caliper::begin_region(name);
    }
    for name in names.iter().rev() {
        caliper::end_region(name);
    }
    for i in 0..siblings {
        let name = format!("s{i}");
        caliper::begin_region(&name);
        caliper::end_region(&name);
    }
}
