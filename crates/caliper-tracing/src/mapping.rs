//! What spans and events become in Caliper: the attribute a span begins
//! (`region`, or one chosen by target or field), and fields as typed
//! attribute values.

use caliper::blackboard::StackEntry;
use caliper::value::ValueKey;
use caliper::{Attribute, Caliper, Properties, Variant};
use std::fmt;
use std::sync::OnceLock;
use tracing::Metadata;
use tracing::field::{Field, Visit};

/// Which spans a [`Rule`] applies to.
#[derive(Clone, Debug)]
enum Selector {
    /// Spans whose target starts with this; the value is the span's name.
    Target(String),
    /// Spans with this field; the value is the field's.
    Field(String),
}

/// Spans that begin `attribute` instead of `region`.
#[derive(Debug)]
struct Rule {
    selector: Selector,
    attribute: String,
    /// The attribute once created (with the type of its first value).
    attr: OnceLock<Attribute>,
}

/// How spans map to region-stack entries.
#[derive(Debug)]
pub(crate) struct Mapping {
    rules: Vec<Rule>,
    /// Whether span fields become attributes.
    pub span_fields: bool,
}

impl Default for Mapping {
    fn default() -> Mapping {
        Mapping { rules: Vec::new(), span_fields: true }
    }
}

impl Mapping {
    /// Spans of targets starting with `prefix` begin `attribute=<span name>`.
    pub fn by_target(&mut self, prefix: &str, attribute: &str) {
        self.push(Selector::Target(prefix.to_string()), attribute);
    }

    /// Spans with field `field` begin `attribute=<the field's value>`.
    pub fn by_field(&mut self, field: &str, attribute: &str) {
        self.push(Selector::Field(field.to_string()), attribute);
    }

    fn push(&mut self, selector: Selector, attribute: &str) {
        self.rules.push(Rule { selector, attribute: attribute.to_string(), attr: OnceLock::new() });
    }

    /// Appends a span's entries to `out`: its fields, then its region (or
    /// the attribute a rule chooses). The fields come first so that both
    /// the region's begin and its end see them (they take no snapshots of
    /// their own), and a rule's field is not an attribute of its own.
    pub fn span_entries(&self, cali: &Caliper, meta: &Metadata<'_>, fields: &Fields, out: &mut Vec<StackEntry>) {
        let (main, used) = self.main_entry(cali, meta, fields);
        if self.span_fields {
            for (name, value) in fields.0.iter().filter(|(name, _)| Some(*name) != used) {
                if let Some(entry) = field_entry(cali, name, value) {
                    out.push(entry);
                }
            }
        }
        out.push(main);
    }

    /// The entry the span begins, and the field that gave its value.
    fn main_entry(&self, cali: &Caliper, meta: &Metadata<'_>, fields: &Fields) -> (StackEntry, Option<&'static str>) {
        for rule in &self.rules {
            let (value, used) = match &rule.selector {
                Selector::Target(prefix) if meta.target().starts_with(prefix.as_str()) => {
                    (Variant::string(meta.name()), None)
                }
                Selector::Field(field) => match fields.get(field) {
                    Some((name, value)) => (value.clone(), Some(name)),
                    None => continue,
                },
                Selector::Target(_) => continue,
            };
            let attr = *rule
                .attr
                .get_or_init(|| cali.create_attribute(&rule.attribute, value.attr_type(), Properties::NESTED, &[]));
            if attr.attr_type() == value.attr_type() {
                return (StackEntry { attr, value: ValueKey::from_variant(&value) }, used);
            }
        }
        (StackEntry { attr: cali.builtins().region, value: ValueKey::string(meta.name()) }, None)
    }
}

/// A field as an entry of attribute `name` (created on first use with the
/// value's type, taking no snapshots of its own); `None` if the attribute
/// has another type.
pub(crate) fn field_entry(cali: &Caliper, name: &str, value: &Variant) -> Option<StackEntry> {
    let attr = cali.create_attribute(name, value.attr_type(), Properties::SKIP_EVENTS, &[]);
    (attr.attr_type() == value.attr_type()).then(|| StackEntry { attr, value: ValueKey::from_variant(value) })
}

/// The fields of a span or an event, in the order given.
#[derive(Debug, Default)]
pub(crate) struct Fields(pub Vec<(&'static str, Variant)>);

impl Fields {
    /// The field named `name`, with its static name.
    fn get(&self, name: &str) -> Option<(&'static str, &Variant)> {
        self.0.iter().find(|(n, _)| *n == name).map(|(n, v)| (*n, v))
    }
}

impl Visit for Fields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.push((field.name(), Variant::Int(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name(), Variant::Uint(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.push((field.name(), Variant::Double(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.push((field.name(), Variant::Bool(value)));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name(), Variant::string(value)));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push((field.name(), Variant::string(&format!("{value:?}"))));
    }
}
