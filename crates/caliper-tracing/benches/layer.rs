//! The cost of a span enter/exit through the layer against the native
//! `region!` begin/end pair, with nothing measured and with the aggregate
//! and trace pipelines (the channels of the runtime's annotation
//! benchmark), and of a whole instrumented call (span made, entered,
//! exited and closed). For reference, what `tracing` costs alone: a span
//! entered and exited with a bare registry, and with a layer that only
//! looks the span and its extensions up at each enter, as ours must (both
//! as scoped dispatchers, which add a thread-local lookup).

use caliper::{Caliper, RuntimeConfig};
use caliper_tracing::CaliperLayer;
use criterion::{Criterion, black_box, criterion_group, criterion_main};
use std::time::Instant;
use tracing::Subscriber;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A layer that keeps a value in each span's extensions and reads it at
/// each enter: the part of a layer's cost that is `tracing`'s.
struct LookupOnly;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for LookupOnly {
    fn on_new_span(&self, _: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(0_u64);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            black_box(span.extensions().get::<u64>().copied());
        }
    }
}

fn tracing_alone(c: &mut Criterion) {
    let bare = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::dispatcher::with_default(&bare, || {
        let span = tracing::info_span!("bench.region");
        c.bench_function("span_enter_exit/registry_alone", |b| b.iter(|| drop(span.enter())));
    });
    let lookup = tracing::Dispatch::new(tracing_subscriber::registry().with(LookupOnly));
    tracing::dispatcher::with_default(&lookup, || {
        let span = tracing::info_span!("bench.region");
        c.bench_function("span_enter_exit/registry_and_lookup", |b| b.iter(|| drop(span.enter())));
    });
}

fn enter_exit(c: &mut Criterion) {
    let cali = Caliper::instance().expect("runtime");
    let subscriber = tracing_subscriber::registry().with(CaliperLayer::new());
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let _outer = caliper::region!("outer");
    let span = tracing::info_span!("bench.region");
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
        // Times `iters` runs of `f`, emptying the channel's buffers after.
        let timed = |iters: u64, f: &dyn Fn()| {
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
            b.iter_custom(|iters| timed(iters, &|| drop(caliper::region!("bench.region"))))
        });
        c.bench_function(&format!("span_enter_exit/{name}"), |b| {
            b.iter_custom(|iters| timed(iters, &|| drop(span.enter())))
        });
        c.bench_function(&format!("instrumented_call/{name}"), |b| {
            b.iter_custom(|iters| timed(iters, &|| tracing::info_span!("bench.call").in_scope(|| black_box(()))))
        });
        if let Some(ch) = channel {
            cali.set_channel_active(&ch, false);
        }
    }
}

criterion_group!(benches, tracing_alone, enter_exit);
criterion_main!(benches);
