//! Async tasks with a region path of their own (`caliper::Instrument`) on
//! a multi-threaded tokio runtime: each request's time goes to
//! main > request, whichever worker polls it, and its wait does not.
//!
//!     CALI_CONFIG=runtime-report cargo run -p caliper --example tasks

use caliper::Instrument;
use std::time::{Duration, Instant};

/// Keeps the thread busy for `ms` milliseconds.
fn work(ms: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        std::hint::spin_loop();
    }
}

/// Parsing, then a wait (the task is suspended), then a reply.
async fn request() {
    {
        let _parse = caliper::region!("parse"); // main > request > parse, on any worker
        work(3);
    }
    let _wait = caliper::region!("wait");
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(_wait);
    let _reply = caliper::region!("reply");
    work(1);
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("runtime");
    let _main = caliper::region!("main");
    rt.block_on(async {
        // The path of each: the regions open here, then request.
        let requests: Vec<_> = (0..4).map(|_| tokio::spawn(request().in_region("request"))).collect();
        for r in requests {
            r.await.expect("request");
        }
    });
}
