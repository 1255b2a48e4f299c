//! The layer: spans begin their entries when entered and end them when
//! exited; events take snapshots.

use crate::entered::{self, Entered};
use crate::mapping::{Fields, Mapping, field_entry};
use caliper::Caliper;
use caliper::blackboard::StackEntry;
use std::sync::Mutex;
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
#[derive(Debug, Default)]
pub struct CaliperLayer {
    mapping: Mapping,
    events: bool,
    counts_suspended: bool,
}

/// A span's region path: the path it was made in, its own entries, and
/// the regions it left open at its last exit (a future suspended inside a
/// region), which its next enter puts back.
struct SpanRegions {
    stack: Vec<StackEntry>,
    /// Where the span's own entries start.
    own_start: usize,
    /// Where they end: above are the regions it left open.
    own_end: usize,
    /// When the span was last exited, if its time suspended counts.
    exited_at: Mutex<Option<Instant>>,
}

impl SpanRegions {
    /// The path the span makes, without what it left open.
    fn own_path(&self) -> &[StackEntry] {
        &self.stack[..self.own_end]
    }

    /// Sets a field among the span's own entries: in place, or (a new one)
    /// before the span's region, the last of them.
    fn set_field(&mut self, entry: StackEntry) {
        let own = self.stack.get_mut(self.own_start..self.own_end).unwrap_or_default();
        match own.iter_mut().find(|e| e.attr.id() == entry.attr.id()) {
            Some(old) => *old = entry,
            None if self.own_end > self.own_start => {
                self.stack.insert(self.own_end - 1, entry);
                self.own_end += 1;
            }
            None => {}
        }
    }

    /// Replaces the entries from `from` up with `entries`. Code that ended
    /// the span's own entries inside it (a stack error, reported by the
    /// runtime) leaves a shorter path.
    fn replace_from(&mut self, from: usize, entries: &[StackEntry]) {
        self.stack.truncate(from);
        self.stack.extend_from_slice(entries);
        self.own_end = self.own_end.min(self.stack.len());
        self.own_start = self.own_start.min(self.own_end);
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
        } else if let Some(parent) = attrs.parent().and_then(|p| ctx.span(p))
            && let Some(regions) = parent.extensions().get::<SpanRegions>()
        {
            stack.extend_from_slice(regions.own_path());
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let own_start = stack.len();
        self.mapping.span_entries(cali, span.metadata(), &fields, &mut stack);
        let own_end = stack.len();
        span.extensions_mut().insert(SpanRegions { stack, own_start, own_end, exited_at: Mutex::new(None) });
    }

    /// Fields recorded later are attributes from the span's next enter on.
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !self.mapping.span_fields {
            return;
        }
        let (Some(cali), Some(span)) = (Caliper::instance(), ctx.span(id)) else { return };
        let mut fields = Fields::default();
        values.record(&mut fields);
        let mut ext = span.extensions_mut();
        let Some(regions) = ext.get_mut::<SpanRegions>() else { return };
        for (name, value) in &fields.0 {
            let Some(entry) = field_entry(cali, name, value) else { continue };
            regions.set_field(entry);
        }
    }

    /// Puts the span's path on the thread's region stack in place of what
    /// differs from it: one begin when the span is entered inside its
    /// parent.
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let (Some(cali), Some(span)) = (Caliper::instance(), ctx.span(id)) else { return };
        let ext = span.extensions();
        let Some(regions) = ext.get::<SpanRegions>() else { return };
        let mut replaced = Vec::new();
        let keep = cali.switch_regions(&regions.stack, &mut replaced);
        let (len, top) = (regions.stack.len(), regions.stack.last().copied());
        entered::push(Entered { id: id.clone(), keep, replaced, len, top });
        if self.counts_suspended {
            entered::reset_suspension(None);
            if let Some(since) = regions.exited_at.lock().ok().and_then(|mut at| at.take()) {
                caliper::task::count_suspended_time(since);
            }
        }
    }

    /// Puts back what the enter replaced; regions the span leaves open stay
    /// with it for its next enter.
    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(cali) = Caliper::instance() else { return };
        entered::exit(id, |entered, left_open| {
            let kept = cali.replace_regions(entered.keep, &entered.replaced, left_open);
            if !entered.unchanged(kept, left_open)
                && let Some(span) = ctx.span(id)
                && let Some(regions) = span.extensions_mut().get_mut::<SpanRegions>()
            {
                regions.replace_from(kept, left_open);
            }
        });
        if self.counts_suspended
            && entered::suspension_counted(id)
            && let Some(span) = ctx.span(id)
            && let Some(regions) = span.extensions().get::<SpanRegions>()
            && let Ok(mut at) = regions.exited_at.lock()
        {
            *at = Some(Instant::now());
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if self.counts_suspended {
            entered::reset_suspension(Some(&id));
        }
    }

    /// A snapshot in the current context with the event's fields.
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !self.events {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let entries: Vec<(&str, caliper::Variant)> = fields.0.into_iter().collect();
        caliper::push_snapshot(&entries);
    }
}
