//! The Rust annotation API.

use crate::attributes::Attribute;
use crate::runtime::Caliper;
use crate::value::ValueKey;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::sync::OnceLock;

/// Which built-in attribute a call site annotates.
#[doc(hidden)]
#[derive(Copy, Clone, Debug)]
pub enum SiteKind {
    /// `region`.
    Region,
    /// `phase`.
    Phase,
    /// `comm.region`.
    CommRegion,
}

/// A region annotation site: the name is interned once, on first use, so
/// entering the region costs no string hashing. Made by [`region!`](crate::region),
/// [`phase!`](crate::phase) and [`function!`](crate::function).
#[doc(hidden)]
pub struct CallSite {
    kind: SiteKind,
    name: fn() -> &'static str,
    key: OnceLock<ValueKey>,
}

impl CallSite {
    /// A site for the region named by `name()`.
    pub const fn new(kind: SiteKind, name: fn() -> &'static str) -> CallSite {
        CallSite { kind, name, key: OnceLock::new() }
    }

    /// Enters the region; it ends when the guard is dropped.
    #[inline]
    pub fn enter(&'static self) -> RegionGuard {
        let Some(cali) = Caliper::instance() else { return RegionGuard { inner: None } };
        let key = *self.key.get_or_init(|| ValueKey::string((self.name)()));
        let b = cali.builtins();
        let attr = match self.kind {
            SiteKind::Region => b.region,
            SiteKind::Phase => b.phase,
            SiteKind::CommRegion => b.comm_region,
        };
        cali.begin(attr, key);
        RegionGuard { inner: Some((attr, key)) }
    }
}

/// Ends a region when dropped.
#[must_use = "the region ends when the guard is dropped"]
pub struct RegionGuard {
    inner: Option<(Attribute, ValueKey)>,
}

impl RegionGuard {
    /// Ends the region now.
    pub fn end(self) {}
}

impl Drop for RegionGuard {
    #[inline]
    fn drop(&mut self) {
        if let (Some((attr, key)), Some(cali)) = (self.inner, Caliper::instance()) {
            cali.end(attr, Some(key));
        }
    }
}

/// The last path segment of a function's type name: its name.
#[doc(hidden)]
pub fn function_name(type_name: &'static str) -> &'static str {
    let path = type_name.strip_suffix("::f").unwrap_or(type_name);
    let path = path.trim_end_matches("::{{closure}}");
    path.rsplit("::").next().unwrap_or(path)
}

/// Marks a region of code: `let _r = caliper::region!("solve");` begins
/// `region=solve` and ends it when `_r` goes out of scope.
///
/// ```
/// fn solve() {
///     let _r = caliper::region!("solve");
///     // ... work ...
/// }
/// # solve();
/// ```
#[macro_export]
macro_rules! region {
    ($name:expr) => {{
        static SITE: $crate::api::CallSite = $crate::api::CallSite::new($crate::api::SiteKind::Region, || $name);
        SITE.enter()
    }};
}

/// Marks a program phase (the `phase` attribute, level 4): coarse regions
/// that `level=phase` configurations keep.
#[macro_export]
macro_rules! phase {
    ($name:expr) => {{
        static SITE: $crate::api::CallSite = $crate::api::CallSite::new($crate::api::SiteKind::Phase, || $name);
        SITE.enter()
    }};
}

/// Marks a communication region (the `comm.region` attribute, level 1).
#[macro_export]
macro_rules! comm_region {
    ($name:expr) => {{
        static SITE: $crate::api::CallSite = $crate::api::CallSite::new($crate::api::SiteKind::CommRegion, || $name);
        SITE.enter()
    }};
}

/// Marks the enclosing function as a region named after it.
///
/// ```
/// fn assemble() {
///     let _f = caliper::function!();
/// }
/// # assemble();
/// ```
#[macro_export]
macro_rules! function {
    () => {{
        fn f() {}
        fn name_of<T>(_: T) -> &'static str {
            ::std::any::type_name::<T>()
        }
        static SITE: $crate::api::CallSite =
            $crate::api::CallSite::new($crate::api::SiteKind::Region, || $crate::api::function_name(name_of(f)));
        SITE.enter()
    }};
}

/// Begins a region with a name known only at run time (interned on each
/// call: prefer [`region!`](crate::region) where the name is fixed).
pub fn begin_region(name: &str) {
    if let Some(c) = Caliper::instance() {
        c.begin(c.builtins().region, ValueKey::string(name));
    }
}

/// Ends the region `name`; a region other than the innermost one is a
/// stack error (logged; tracking stops on the thread).
pub fn end_region(name: &str) {
    if let Some(c) = Caliper::instance() {
        c.end(c.builtins().region, Some(ValueKey::string(name)));
    }
}

/// An attribute annotation: `attribute=value` pairs that begin, change and
/// end. The attribute is created on first use with the type of the first
/// value (unless it exists already).
///
/// ```
/// let step = caliper::Annotation::new("timestep");
/// for i in 0..3 {
///     step.set(i);
/// }
/// step.end();
/// ```
pub struct Annotation {
    name: String,
    props: Properties,
    metadata: Vec<(String, Variant)>,
    attr: OnceLock<Attribute>,
}

impl Annotation {
    /// An annotation for attribute `name` with default properties.
    pub fn new(name: &str) -> Annotation {
        Annotation::with_properties(name, Properties::DEFAULT)
    }

    /// An annotation with properties (e.g. `Properties::ASVALUE`).
    pub fn with_properties(name: &str, props: Properties) -> Annotation {
        Annotation { name: name.to_string(), props, metadata: Vec::new(), attr: OnceLock::new() }
    }

    /// Adds a metadata entry to the attribute (e.g. `("attribute.unit",
    /// "sec")`); the meta-attribute is created with the value's type.
    /// Metadata applies when the attribute is created, on first use.
    ///
    /// ```
    /// use caliper::{Annotation, Properties};
    /// let bytes = Annotation::with_properties("io.bytes", Properties::ASVALUE | Properties::AGGREGATABLE)
    ///     .metadata("attribute.unit", "B");
    /// bytes.set(4096);
    /// ```
    pub fn metadata(mut self, name: &str, value: impl Into<Variant>) -> Annotation {
        self.metadata.push((name.to_string(), value.into()));
        self
    }

    fn attribute(&self, cali: &Caliper, ty: AttrType) -> Attribute {
        *self.attr.get_or_init(|| {
            let metadata: Vec<(caliper_data::Id, Variant)> = self
                .metadata
                .iter()
                .map(|(name, value)| {
                    let meta = cali.create_attribute(name, value.attr_type(), Properties::DEFAULT, &[]);
                    (meta.id(), value.clone())
                })
                .collect();
            cali.create_attribute(&self.name, ty, self.props, &metadata)
        })
    }

    /// Converts `value` to the attribute's type as the reference does (an
    /// int given to a double or uint attribute); `None` if the types differ.
    fn typed(&self, cali: &Caliper, value: Variant) -> Option<(Attribute, ValueKey)> {
        let attr = self.attribute(cali, value.attr_type());
        let value = match (attr.attr_type(), value) {
            (AttrType::Double, Variant::Int(i)) => Variant::Double(i as f64),
            (AttrType::Uint, Variant::Int(i)) => Variant::Uint(i as u64),
            (_, v) => v,
        };
        (value.attr_type() == attr.attr_type()).then(|| (attr, ValueKey::from_variant(&value)))
    }

    /// Begins `value`; the returned guard ends it when dropped.
    pub fn begin(&self, value: impl Into<Variant>) -> AnnotationGuard<'_> {
        if let Some(cali) = Caliper::instance()
            && let Some((attr, key)) = self.typed(cali, value.into())
        {
            cali.begin(attr, key);
            return AnnotationGuard { annotation: Some(self) };
        }
        AnnotationGuard { annotation: None }
    }

    /// Sets `value`, replacing the innermost value.
    pub fn set(&self, value: impl Into<Variant>) {
        if let Some(cali) = Caliper::instance()
            && let Some((attr, key)) = self.typed(cali, value.into())
        {
            cali.set(attr, key);
        }
    }

    /// Ends the innermost value.
    pub fn end(&self) {
        if let (Some(cali), Some(attr)) = (Caliper::instance(), self.attr.get()) {
            cali.end(*attr, None);
        }
    }
}

/// Ends an annotation's value when dropped.
#[must_use = "the value ends when the guard is dropped"]
pub struct AnnotationGuard<'a> {
    annotation: Option<&'a Annotation>,
}

impl Drop for AnnotationGuard<'_> {
    fn drop(&mut self) {
        if let Some(a) = self.annotation {
            a.end();
        }
    }
}

/// A loop annotation: `loop=<name>` while it lives, and
/// `iteration#<name>=<i>` for each iteration.
///
/// ```
/// let lp = caliper::Loop::new("mainloop");
/// for i in 0..4 {
///     let _it = lp.iteration(i);
/// }
/// ```
pub struct Loop {
    name: ValueKey,
    iteration: Option<Attribute>,
}

impl Loop {
    /// Begins the loop.
    pub fn new(name: &str) -> Loop {
        let Some(cali) = Caliper::instance() else { return Loop { name: ValueKey::string(name), iteration: None } };
        let key = ValueKey::string(name);
        let iteration = cali.iteration_attribute(name);
        cali.begin(cali.builtins().loop_attr, key);
        Loop { name: key, iteration: Some(iteration) }
    }

    /// Begins iteration `i`; it ends when the guard is dropped.
    pub fn iteration(&self, i: i64) -> IterationGuard {
        match (Caliper::instance(), self.iteration) {
            (Some(cali), Some(attr)) => {
                cali.begin(attr, ValueKey::int(i));
                IterationGuard { attr: Some(attr) }
            }
            _ => IterationGuard { attr: None },
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let (Some(cali), Some(_)) = (Caliper::instance(), self.iteration) {
            cali.end(cali.builtins().loop_attr, Some(self.name));
        }
    }
}

/// Ends a loop iteration when dropped.
#[must_use = "the iteration ends when the guard is dropped"]
pub struct IterationGuard {
    attr: Option<Attribute>,
}

impl Drop for IterationGuard {
    fn drop(&mut self) {
        if let (Some(cali), Some(attr)) = (Caliper::instance(), self.attr) {
            cali.end(attr, None);
        }
    }
}

fn by_name(name: &str, value: &Variant, props: Properties) -> Option<(&'static Caliper, Attribute, ValueKey)> {
    let cali = Caliper::instance()?;
    let attr = cali.create_attribute(name, value.attr_type(), props, &[]);
    (attr.attr_type() == value.attr_type()).then(|| (cali, attr, ValueKey::from_variant(value)))
}

/// Begins `name=value` (the attribute is created with default properties
/// and the value's type on first use).
pub fn begin_by_name(name: &str, value: impl Into<Variant>) {
    if let Some((cali, attr, key)) = by_name(name, &value.into(), Properties::DEFAULT) {
        cali.begin(attr, key);
    }
}

/// Sets `name=value` (the attribute is created unaligned on first use, as
/// the reference's `cali_set_*_byname`).
pub fn set_by_name(name: &str, value: impl Into<Variant>) {
    if let Some((cali, attr, key)) = by_name(name, &value.into(), Properties::UNALIGNED) {
        cali.set(attr, key);
    }
}

/// Ends the innermost value of attribute `name`; an unknown name is
/// ignored.
pub fn end_by_name(name: &str) {
    if let Some(cali) = Caliper::instance()
        && let Some(attr) = cali.find_attribute(name)
    {
        cali.end(attr, None);
    }
}

/// Sets a global: run metadata written with every output
/// (`iterations=4`, `problem=sedov`, ...).
pub fn set_global(name: &str, value: impl Into<Variant>) {
    let props = Properties::GLOBAL | Properties::UNALIGNED | Properties::SKIP_EVENTS;
    if let Some((cali, attr, key)) = by_name(name, &value.into(), props) {
        cali.set(attr, key);
    }
}

/// Takes a snapshot now on every active channel, with the given extra
/// `(attribute name, value)` entries.
pub fn push_snapshot(entries: &[(&str, Variant)]) {
    let Some(cali) = Caliper::instance() else { return };
    let trigger: Vec<Entry> = entries
        .iter()
        .map(|(name, value)| {
            let attr = cali.create_attribute(name, value.attr_type(), Properties::ASVALUE, &[]);
            Entry::Immediate(attr.id(), value.clone())
        })
        .collect();
    cali.push_snapshot(&trigger);
}

/// Flushes every channel and writes its outputs (reports and files), as
/// at the end of the program. Flushing does not clear what was measured.
pub fn flush() {
    if let Some(cali) = Caliper::instance() {
        for channel in cali.all_channels() {
            cali.flush_and_write(&channel);
        }
    }
}

/// A timed asynchronous event: `begin` emits `async.begin=<message>`,
/// [`TimedAsyncEvent::end`] emits `async.end=<message>` with
/// `event.duration.ns`, the time in between. Channels with the
/// `async_event` service (e.g. `event-trace`) take a snapshot of each.
///
/// ```
/// let ev = caliper::TimedAsyncEvent::begin("request");
/// // ... the event happens, possibly elsewhere ...
/// ev.end();
/// ```
#[must_use = "end() emits the event"]
pub struct TimedAsyncEvent {
    message: String,
    start_ns: u64,
}

impl TimedAsyncEvent {
    /// Emits `async.begin=<message>` and starts timing.
    pub fn begin(message: &str) -> TimedAsyncEvent {
        TimedAsyncEvent { message: message.to_string(), start_ns: async_event_begin(message) }
    }

    /// Emits `async.end=<message>` and `event.duration.ns`.
    pub fn end(self) {
        async_event_end(&self.message, self.start_ns);
    }
}

/// The begin of a timed asynchronous event: emits `async.begin=<message>`
/// and gives the start time (on the runtime's clock) that
/// [`async_event_end`] measures from. For bindings that keep the event
/// themselves (the C++ `cali::TimedAsyncEvent`).
pub fn async_event_begin(message: &str) -> u64 {
    emit_async_event("async.begin", message, None);
    crate::clock::clock().now_ns()
}

/// The end of a timed asynchronous event begun at `start_ns` (see
/// [`async_event_begin`]): emits `async.end=<message>` and
/// `event.duration.ns`.
pub fn async_event_end(message: &str, start_ns: u64) {
    let elapsed = crate::clock::clock().now_ns().saturating_sub(start_ns);
    emit_async_event("async.end", message, Some(elapsed));
}

/// Sends an async event to the channels: `attr=message` as a node of its
/// own (it does not join the region path), and the duration if given.
pub(crate) fn emit_async_event(attr: &str, message: &str, duration_ns: Option<u64>) {
    let Some(cali) = Caliper::instance() else { return };
    let attr = cali.create_attribute(attr, AttrType::String, Properties::SKIP_EVENTS, &[]);
    let mut info = vec![Entry::Reference(cali.tree().get_child(attr.id(), Variant::string(message), None))];
    if let Some(ns) = duration_ns {
        let props = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
        let duration = cali.create_attribute("event.duration.ns", AttrType::Uint, props, &[]);
        info.push(Entry::Immediate(duration.id(), Variant::Uint(ns)));
    }
    cali.async_event(&info);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names() {
        assert_eq!(function_name("my_crate::module::solve::f"), "solve");
        assert_eq!(function_name("solve::f"), "solve");
        assert_eq!(function_name("a::b::{{closure}}::f"), "b");
    }
}
