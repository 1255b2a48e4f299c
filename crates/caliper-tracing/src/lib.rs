//! A [`tracing`] bridge: code instrumented with `tracing` spans and events
//! shows up in Caliper's measurements (`runtime-report`, `spot`,
//! `event-trace`, ...) with no other change.
//!
//! [`CaliperLayer`] is a `tracing_subscriber` layer: a span becomes a
//! region (`region=<span name>`, or another attribute chosen by the span's
//! target or one of its fields), the span's fields become attributes while
//! it is entered, and an event becomes a snapshot carrying its fields.
//! A span keeps its region path wherever it is entered, so the futures
//! `tracing::Instrument` wraps (entered at each poll, on whatever worker
//! thread runs them) keep their path across polls and threads, as
//! [`caliper::Instrument`] does for Caliper's own regions.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let subscriber = tracing_subscriber::registry().with(caliper_tracing::CaliperLayer::new());
//! tracing::subscriber::with_default(subscriber, || {
//!     let _solve = tracing::info_span!("solve", n = 64).entered(); // region=solve, n=64
//!     tracing::info!(residual = 1e-6, "converged"); // a snapshot with residual and message
//! });
//! ```

#![warn(missing_docs)]

mod entered;
mod layer;
mod mapping;
mod span_path;

pub use layer::CaliperLayer;
