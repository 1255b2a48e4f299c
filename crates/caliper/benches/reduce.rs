//! One round of the cross-rank reduction (`caliper::mpi::reduce`): a rank
//! sends its merged profile (the aggregation's results as a `.cali`
//! stream) and its partner reads it and merges it into its own, for
//! profiles of 1,000, 10,000 and 100,000 paths under `runtime-report`'s
//! cross-rank query. A reduction over P ranks takes ceil(log2 P) such
//! rounds one after the other (plus the messages' transfer); the README's
//! cost model is built on these figures.

use caliper::mpi::{Comm, reduce};
use caliper_data::{AttrType, MetadataDb, Properties, Record, Variant};
use caliper_query::aggregate::Aggregator;
use caliper_query::parse_query;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::cell::RefCell;

const CROSS: &str = "select min(inclusive#report.t),max(inclusive#report.t),avg(inclusive#report.t),\
                     inclusive_percent_total(sum#report.t) group by path";

/// Two ranks in one thread: what rank 1 sends, rank 0 receives.
struct Pair {
    rank: usize,
    mailbox: RefCell<Vec<u8>>,
}

impl Comm for &Pair {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        2
    }
    fn send(&self, _to: usize, data: &[u8]) -> Result<(), String> {
        *self.mailbox.borrow_mut() = data.to_vec();
        Ok(())
    }
    fn recv(&self, _from: usize) -> Result<Vec<u8>, String> {
        Ok(self.mailbox.take())
    }
}

/// A rank's cross aggregation over a local profile of `paths` paths
/// (`main/r<i>`).
fn profile(paths: usize, seed: f64) -> (MetadataDb, Aggregator) {
    let mut db = MetadataDb::new();
    let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
    let sum = db.create_attribute("sum#report.t", AttrType::Double, Properties::ASVALUE, &[]);
    let inclusive = db.create_attribute("inclusive#report.t", AttrType::Double, Properties::ASVALUE, &[]);
    let main = db.get_or_create_node(region, Variant::string("main"), None);
    let mut agg = Aggregator::new(&parse_query(CROSS).unwrap()).unwrap();
    for i in 0..paths {
        let node = db.get_or_create_node(region, Variant::string(&format!("r{i}")), Some(main));
        let mut record = Record::ctx();
        record.push_ref(node);
        record.push_imm(sum, Variant::Double(seed + i as f64 * 1e-6));
        record.push_imm(inclusive, Variant::Double(seed + i as f64 * 1e-6));
        agg.add(&mut db, &record);
    }
    (db, agg)
}

fn rounds(c: &mut Criterion) {
    let mut group = c.benchmark_group("reduce round");
    group.sample_size(10);
    for paths in [1_000, 10_000, 100_000] {
        group.bench_function(format!("{paths} paths"), |b| {
            b.iter_batched(
                || (profile(paths, 1.0), profile(paths, 2.0)),
                |((mut db0, mut agg0), (mut db1, mut agg1))| {
                    let pair = Pair { rank: 1, mailbox: RefCell::new(Vec::new()) };
                    reduce(&&pair, &mut db1, &mut agg1).unwrap();
                    let pair = Pair { rank: 0, mailbox: RefCell::new(pair.mailbox.take()) };
                    reduce(&&pair, &mut db0, &mut agg0).unwrap();
                    (db0, agg0)
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, rounds);
criterion_main!(benches);
