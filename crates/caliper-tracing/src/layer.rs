//! The layer: spans begin their entries when entered and end them when
//! exited; events take snapshots.

use crate::entered::{self, Entered};
use crate::mapping::{Fields, Mapping, field_entry};
use crate::span_path::{self, SpanPath};
use caliper::Caliper;
use caliper::blackboard::StackEntry;
use std::sync::Arc;
use std::time::Instant;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// A `tracing_subscriber` layer that measures spans and events with
/// Caliper (see the crate's documentation).
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let layer = caliper_tracing::CaliperLayer::new()
///     .target_attribute("solver::phases", "phase") // phase=<span name>
///     .field_attribute("kernel", "kernel"); // kernel=<the field's value>
/// let subscriber = tracing_subscriber::registry().with(layer);
/// # let _ = subscriber;
/// ```
#[derive(Debug)]
pub struct CaliperLayer {
    mapping: Mapping,
    events: bool,
    counts_suspended: bool,
}

impl Default for CaliperLayer {
    fn default() -> CaliperLayer {
        CaliperLayer::new()
    }
}

impl CaliperLayer {
    /// Spans begin `region=<span name>`, their fields are attributes, and
    /// events take snapshots.
    pub fn new() -> CaliperLayer {
        CaliperLayer { mapping: Mapping::default(), events: true, counts_suspended: false }
    }

    /// Spans whose target starts with `prefix` begin
    /// `attribute=<span name>` (a nested attribute, so part of the path)
    /// instead of `region`. The first matching rule applies.
    pub fn target_attribute(mut self, prefix: &str, attribute: &str) -> CaliperLayer {
        self.mapping.by_target(prefix, attribute);
        self
    }

    /// Spans with a field `field` begin `attribute=<the field's value>`
    /// (a nested attribute of the value's type) instead of `region`.
    pub fn field_attribute(mut self, field: &str, attribute: &str) -> CaliperLayer {
        self.mapping.by_field(field, attribute);
        self
    }

    /// Whether span fields become attributes while the span is entered
    /// (default: yes).
    pub fn span_fields(mut self, on: bool) -> CaliperLayer {
        self.mapping.span_fields = on;
        self
    }

    /// Whether the time between a span's exit and its next enter counts as
    /// the exclusive time of its path (default: no). Meant for spans that
    /// instrument futures (entered at each poll): their time suspended,
    /// counted once, by the innermost span still open when they suspend.
    /// See [`caliper::task::count_suspended_time`].
    pub fn count_suspended_time(mut self, on: bool) -> CaliperLayer {
        self.counts_suspended = on;
        self
    }

    /// Whether events take snapshots with their fields (default: yes).
    pub fn events(mut self, on: bool) -> CaliperLayer {
        self.events = on;
        self
    }

    /// Enters `path`, the path of span `id`, on the calling thread.
    fn enter(&self, cali: &Caliper, id: &Id, path: &SpanPath) {
        let entered = path.with_stack(|stack| {
            let mut replaced = Vec::new();
            let keep = cali.switch_regions(stack, &mut replaced);
            Entered { id: id.clone(), keep, replaced, len: stack.len(), top: stack.last().copied() }
        });
        entered::push(entered);
        if self.counts_suspended {
            entered::reset_suspension(None);
            if let Some(since) = path.exited_at.lock().ok().and_then(|mut at| at.take()) {
                caliper::task::count_suspended_time(since);
            }
        }
    }
}

/// Runs `f` with the path of span `id`: from the thread's cache, or
/// looked up (and cached).
fn with_path<S, R>(id: &Id, ctx: &Context<'_, S>, f: impl FnOnce(&SpanPath) -> R) -> Option<R>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let mut f = Some(f);
    if let Some(r) = span_path::with_recent(id, |path| f.take().map(|f| f(path))).flatten() {
        return Some(r);
    }
    let span = ctx.span(id)?;
    let ext = span.extensions();
    let path = ext.get::<Arc<SpanPath>>()?;
    span_path::remember(id, path);
    f.map(|f| f(path))
}

impl<S> Layer<S> for CaliperLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let (Some(cali), Some(span)) = (Caliper::instance(), ctx.span(id)) else { return };
        // A span made in the current context goes below the thread's open
        // regions (its parent's path, and regions opened inside it); one
        // with an explicit parent below that parent's own path.
        let mut stack = Vec::new();
        if attrs.is_contextual() {
            cali.region_stack(&mut stack);
        } else if let Some(parent) = attrs.parent() {
            with_path(parent, &ctx, |path| stack.extend_from_slice(path.path()));
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let own_start = stack.len();
        self.mapping.span_entries(cali, span.metadata(), &fields, &mut stack);
        let path = SpanPath::new(stack, own_start);
        span_path::remember(id, &path);
        span.extensions_mut().insert(path);
    }

    /// Fields recorded later are attributes from the span's next enter on.
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !self.mapping.span_fields {
            return;
        }
        let (Some(cali), Some(span)) = (Caliper::instance(), ctx.span(id)) else { return };
        let mut fields = Fields::default();
        values.record(&mut fields);
        let entries: Vec<_> = fields.0.iter().filter_map(|(name, value)| field_entry(cali, name, value)).collect();
        let mut ext = span.extensions_mut();
        let Some(path) = ext.get_mut::<Arc<SpanPath>>() else { return };
        *path = path.edited(|stack, own_start| {
            for entry in entries {
                set_field(stack, own_start, entry);
            }
        });
        span_path::remember(id, path);
    }

    /// Puts the span's path on the thread's region stack in place of what
    /// differs from it: one begin when the span is entered inside its
    /// parent.
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(cali) = Caliper::instance() else { return };
        with_path(id, &ctx, |path| self.enter(cali, id, path));
    }

    /// Puts back what the enter replaced; regions the span leaves open stay
    /// with it for its next enter.
    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(cali) = Caliper::instance() else { return };
        entered::exit(id, |entered, left_open| {
            let kept = cali.replace_regions(entered.keep, &entered.replaced, left_open);
            if !entered.unchanged(kept, left_open) {
                with_path(id, &ctx, |path| path.set_left_open(kept, left_open));
            }
        });
        if self.counts_suspended && entered::suspension_counted(id) {
            with_path(id, &ctx, |path| {
                if let Ok(mut at) = path.exited_at.lock() {
                    *at = Some(Instant::now());
                }
            });
        }
    }

    /// Caches must not use the span's path any more: a new span may get
    /// its id.
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(path) = span.extensions().get::<Arc<SpanPath>>()
        {
            path.mark_stale();
        }
        span_path::forget(&id);
        if self.counts_suspended {
            entered::reset_suspension(Some(&id));
        }
    }

    /// A snapshot in the current context with the event's fields (but a
    /// field named as an attribute of another type, which its value would
    /// not fit).
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(cali) = Caliper::instance().filter(|_| self.events) else { return };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let fits = |(name, value): &(&str, caliper::Variant)| {
            cali.find_attribute(name).is_none_or(|attr| attr.attr_type() == value.attr_type())
        };
        let entries: Vec<(&str, caliper::Variant)> = fields.0.into_iter().filter(fits).collect();
        caliper::push_snapshot(&entries);
    }
}

/// Sets a field among a span's own entries (from `own_start`): in place,
/// or (a new one) before the span's region, the last of them.
fn set_field(stack: &mut Vec<StackEntry>, own_start: usize, entry: StackEntry) {
    let len = stack.len();
    match stack.get_mut(own_start..).unwrap_or_default().iter_mut().find(|e| e.attr.id() == entry.attr.id()) {
        Some(old) => *old = entry,
        None if len > own_start => stack.insert(len - 1, entry),
        None => {}
    }
}
