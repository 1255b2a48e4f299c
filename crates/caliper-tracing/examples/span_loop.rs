//! Enters and exits one span (or opens one `region!`) N times, for counting
//! instructions per pair under callgrind (the difference of two run
//! lengths, so that start-up cancels out):
//!
//!     cargo build --release -p caliper-tracing --example span_loop
//!     valgrind --tool=callgrind target/release/examples/span_loop span aggregate,event,timer 20000
//!     valgrind --tool=callgrind target/release/examples/span_loop span aggregate,event,timer 40000
//!
//! `span` goes through the layer, `bare` through a registry without it,
//! `region` is the native region; the second argument lists the services
//! of a measuring channel (`none` for none).

use caliper::{Caliper, RuntimeConfig};
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, services, n] = &args[..] else {
        eprintln!("usage: span_loop span|bare|region SERVICES|none COUNT");
        std::process::exit(2);
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("span_loop: not a count: {n}");
        std::process::exit(2);
    };
    let cali = Caliper::instance().expect("runtime");
    let installed = match mode.as_str() {
        "bare" => tracing::subscriber::set_global_default(tracing_subscriber::registry()),
        _ => tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(caliper_tracing::CaliperLayer::new()),
        ),
    };
    installed.expect("the only subscriber");
    if services != "none" {
        let pairs = [("CALI_SERVICES_ENABLE", services.as_str()), ("CALI_CHANNEL_FLUSH_ON_EXIT", "false")];
        let channel = cali.create_channel("span_loop", RuntimeConfig::from_pairs(pairs, false));
        cali.set_channel_active(&channel, true);
    }
    let _outer = caliper::region!("outer");
    let span = tracing::info_span!("loop");
    for _ in 0..n {
        match mode.as_str() {
            "region" => drop(caliper::region!("loop")),
            _ => drop(span.enter()),
        }
    }
}
