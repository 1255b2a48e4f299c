//! The cost of a region begin/end pair, with nothing measured and with
//! the aggregate and trace pipelines (the paths of the annotation
//! perftest). Channels are switched on and off between the benchmarks.

use caliper::value::ValueKey;
use caliper::{AttrType, Caliper, Properties, RuntimeConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use std::time::Instant;

fn pairs(c: &mut Criterion) {
    let cali = Caliper::instance().expect("runtime");
    let attr = cali.create_attribute("bench.region", AttrType::String, Properties::NESTED, &[]);
    let names: Vec<ValueKey> = (0..20).map(|i| ValueKey::string(&format!("r{i}"))).collect();
    let outer = ValueKey::string("outer");
    cali.begin(attr, outer);
    let mut run = |name: &str, services: Option<&str>| {
        let channel = services.map(|s| {
            let cfg = RuntimeConfig::from_pairs(
                [("CALI_SERVICES_ENABLE", s), ("CALI_CHANNEL_FLUSH_ON_EXIT", "false")],
                false,
            );
            let ch = cali.create_channel(name, cfg);
            cali.set_channel_active(&ch, true);
            ch
        });
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for i in 0..iters {
                    let v = names[(i % 20) as usize];
                    cali.begin(attr, v);
                    cali.end(attr, Some(v));
                }
                let elapsed = start.elapsed();
                if let Some(ch) = &channel {
                    cali.clear(ch);
                }
                elapsed
            })
        });
        if let Some(ch) = channel {
            cali.set_channel_active(&ch, false);
        }
    };
    run("begin_end_pair/no_channel", None);
    run("begin_end_pair/aggregate_event_timer", Some("aggregate,event,timer"));
    run("begin_end_pair/event_trace_timer", Some("event,trace,timer"));
}

criterion_group!(benches, pairs);
criterion_main!(benches);
