//! A program instrumented with `tracing` only, measured by Caliper through
//! the layer: synchronous spans with fields, an event, and tasks on a
//! multi-threaded tokio runtime.
//!
//!     CALI_CONFIG=runtime-report cargo run -p caliper-tracing --example traced

use std::time::{Duration, Instant};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Keeps the thread busy for `ms` milliseconds.
fn work(ms: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        std::hint::spin_loop();
    }
}

#[tracing::instrument]
fn assemble(cells: u64) {
    work(cells / 1000);
}

#[tracing::instrument]
fn solve(iterations: u64) {
    // region=solve, iterations=<value>
    for _ in 0..iterations {
        work(2);
    }
    tracing::info!(residual = 1e-9, "converged"); // a snapshot with residual and message
}

/// A request: parsing, then a wait (not its time), then a reply.
#[tracing::instrument]
async fn request(id: u64) {
    tracing::info_span!("parse").in_scope(|| work(3));
    tokio::time::sleep(Duration::from_millis(20)).await;
    tracing::info_span!("reply").in_scope(|| work(1));
}

fn main() {
    let subscriber = tracing_subscriber::registry().with(caliper_tracing::CaliperLayer::new());
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let _main = tracing::info_span!("main").entered();
    assemble(5000);
    solve(10);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("runtime");
    rt.block_on(
        async {
            // `in_current_span`: an `#[instrument]`ed async fn makes its span
            // at its first poll, on a worker, whose current span is the
            // spawner's only this way (as for any `tracing` subscriber).
            let requests: Vec<_> = (0..4).map(|id| tokio::spawn(request(id).in_current_span())).collect();
            for r in requests {
                r.await.expect("request");
            }
        }
        .instrument(tracing::info_span!("serve")),
    );
}
