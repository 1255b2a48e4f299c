//! The cost of a poll of a future with a region path of its own
//! (`caliper::Instrument`): its path (main > task) put on the thread's
//! stack (a worker's own region, worker) and the thread's put back, with
//! nothing measured and with the aggregate and trace pipelines; against a
//! region begin/end pair in the same channels.

use caliper::{Caliper, Instrument, RuntimeConfig, TaskPath};
use criterion::{Criterion, criterion_group, criterion_main};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// A future that is never ready: polled again and again.
struct Pending;

impl Future for Pending {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

fn polls(c: &mut Criterion) {
    let cali = Caliper::instance().expect("runtime");
    let mut task = pin!(Pending.in_path(TaskPath::root().region("main").region("task")));
    let mut cx = Context::from_waker(Waker::noop());
    let _worker = caliper::region!("worker");
    let configs = [
        ("no_channel", None),
        ("aggregate_event_timer", Some("aggregate,event,timer")),
        ("event_trace_timer", Some("event,trace,timer")),
    ];
    for (name, services) in configs {
        let channel = services.map(|s| {
            let cfg = RuntimeConfig::from_pairs(
                [("CALI_SERVICES_ENABLE", s), ("CALI_CHANNEL_FLUSH_ON_EXIT", "false")],
                false,
            );
            let ch = cali.create_channel(name, cfg);
            cali.set_channel_active(&ch, true);
            ch
        });
        let timed = |iters: u64, f: &mut dyn FnMut()| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            let elapsed = start.elapsed();
            if let Some(ch) = &channel {
                cali.clear(ch);
            }
            elapsed
        };
        c.bench_function(&format!("region_pair/{name}"), |b| {
            b.iter_custom(|iters| timed(iters, &mut || drop(caliper::region!("bench.region"))))
        });
        c.bench_function(&format!("instrumented_poll/{name}"), |b| {
            b.iter_custom(|iters| timed(iters, &mut || assert!(task.as_mut().poll(&mut cx).is_pending())))
        });
        if let Some(ch) = channel {
            cali.set_channel_active(&ch, false);
        }
    }
}

criterion_group!(benches, polls);
criterion_main!(benches);
