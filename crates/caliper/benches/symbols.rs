//! The flush cost of symbol lookup: 100,000 distinct addresses in this
//! program's code resolved by a fresh `Symbolizer` (module list, DWARF
//! and symbol tables read once, then each address looked up), as
//! `symbollookup` does for the samples of a flush.

use caliper::symbols::Symbolizer;
use criterion::{Criterion, criterion_group, criterion_main};

fn lookups(c: &mut Criterion) {
    // Addresses 16 bytes apart from this function on: 1.6 MB of the
    // program's code (its text holds the runtime and criterion).
    let start = lookups as *const () as u64;
    let addresses: Vec<u64> = (0..100_000).map(|i| start + 16 * i).collect();
    let mut group = c.benchmark_group("symbollookup");
    group.sample_size(10);
    group.bench_function("100000 distinct addresses", |b| {
        b.iter(|| {
            let mut symbols = Symbolizer::new();
            addresses.iter().filter(|&&a| symbols.lookup(a).function.is_some()).count()
        })
    });
    group.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
