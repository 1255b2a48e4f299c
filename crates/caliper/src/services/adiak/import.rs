//! `adiak_import`: before each flush, every name/value of the chosen
//! categories that the program gave Adiak becomes a global (run
//! metadata) of the process, with the metadata `adiak.type` (Adiak's type
//! name), `adiak.category` and `adiak.subcategory`, so that `.cali`,
//! json-split and report outputs carry it as Hatchet, Thicket and Spot
//! expect. Read at each flush, so values set late in the run count.

use super::api::{Datatype, Tool, Value};
use super::decode::{Decoded, decode};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{ChannelView, Runtime, Service};
use crate::services::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::sync;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties, Variant};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

pub(in crate::services) const SPEC: ServiceSpec = ServiceSpec {
    name: "adiak_import",
    aliases: &[],
    description: "Import Adiak name/value metadata as globals (run metadata) before each flush",
    stage: Stage::Other,
    settings: &[SettingSpec {
        key: "categories",
        kind: SettingKind::StringList,
        default: "2,3",
        description: "Adiak categories to import (1: all, 2: general, 3: performance, 4: control)",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        let categories = categories(&setup.settings.list("categories", false))?;
        if Tool::find().is_none() {
            log::error(format_args!(
                "{}: adiak_import: Adiak is not loaded in this program: there is no Adiak metadata to import",
                setup.channel
            ));
        }
        Ok(Created::Service(Arc::new(AdiakImport::new(setup.cali, categories))))
    },
};

/// The category numbers of the setting; a word that is not one is an
/// error.
fn categories(words: &[String]) -> Result<Vec<c_int>, NotCreated> {
    words
        .iter()
        .map(|w| {
            w.trim().parse::<c_int>().map_err(|_| {
                log::error(format_args!("adiak_import: \"{w}\" is not an Adiak category number"));
                NotCreated::BadSettings
            })
        })
        .collect()
}

struct AdiakImport {
    categories: Vec<c_int>,
    /// The metadata attributes: `adiak.type`, `adiak.category`,
    /// `adiak.subcategory`.
    type_meta: Attribute,
    category_meta: Attribute,
    subcategory_meta: Attribute,
    /// The values set at the last flush, by name: a flush sets only what
    /// is new or changed since.
    last: Mutex<HashMap<String, Variant>>,
}

/// One name/value as Adiak listed it.
struct Imported {
    name: String,
    category: c_int,
    subcategory: String,
    decoded: Decoded,
}

impl AdiakImport {
    fn new(cali: &dyn Runtime, categories: Vec<c_int>) -> AdiakImport {
        let meta = |name, ty| cali.create_attribute(name, ty, Properties::SKIP_EVENTS, &[]);
        AdiakImport {
            categories,
            type_meta: meta("adiak.type", AttrType::String),
            category_meta: meta("adiak.category", AttrType::Int),
            subcategory_meta: meta("adiak.subcategory", AttrType::String),
            last: Mutex::new(HashMap::new()),
        }
    }

    /// The values of the chosen categories, read from Adiak.
    fn read(&self, tool: &Tool) -> Vec<Imported> {
        let mut listing = Listing { tool: *tool, values: Vec::new() };
        for &category in &self.categories {
            // SAFETY: `collect` reads `opaque` as the Listing passed here.
            unsafe { tool.list(category, collect, &mut listing as *mut Listing as *mut c_void) };
        }
        listing.values
    }

    /// The global attribute of `value`, or `None` (said) where the name is
    /// already an attribute of another type, or not a global one.
    fn attribute(&self, cali: &dyn Runtime, value: &Imported) -> Option<Attribute> {
        let ty = value.decoded.value.attr_type();
        let metadata = [
            (self.type_meta.id(), Variant::string(&value.decoded.type_name)),
            (self.category_meta.id(), Variant::Int(value.category.into())),
            (self.subcategory_meta.id(), Variant::string(&value.subcategory)),
        ];
        let props = Properties::GLOBAL | Properties::UNALIGNED | Properties::SKIP_EVENTS;
        let attr = cali.create_attribute(&value.name, ty, props, &metadata);
        if attr.attr_type() != ty || !attr.properties().is_global() {
            log::error(format_args!(
                "adiak_import: {} is already an attribute of the program (of type {}): not imported",
                value.name,
                attr.attr_type().name()
            ));
            return None;
        }
        Some(attr)
    }
}

/// What the listing callback fills.
struct Listing {
    tool: Tool,
    values: Vec<Imported>,
}

/// Adiak's name/value callback: decodes the value while Adiak's data is
/// valid. Never unwinds into Adiak.
unsafe extern "C" fn collect(
    name: *const c_char,
    category: c_int,
    subcategory: *const c_char,
    value: *mut Value,
    datatype: *mut Datatype,
    opaque: *mut c_void,
) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `opaque` is the Listing of `AdiakImport::read`, and the
        // strings and value are Adiak's, valid for the call.
        let listing = unsafe { &mut *(opaque as *mut Listing) };
        let text = |s: *const c_char| {
            if s.is_null() { String::new() } else { unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned() }
        };
        let name = text(name);
        if name.is_empty() {
            return;
        }
        if let Some(decoded) = unsafe { decode(datatype, value, listing.tool.get_subval) } {
            listing.values.push(Imported { name, category, subcategory: text(subcategory), decoded });
        }
    }));
}

impl Service for AdiakImport {
    fn name(&self) -> &'static str {
        "adiak_import"
    }

    fn pre_flush(&self, cali: &dyn Runtime, channel: &dyn ChannelView) {
        let Some(tool) = Tool::find() else { return };
        let values = self.read(&tool);
        let mut last = sync::lock(&self.last);
        let changed: Vec<(Attribute, ValueKey)> = values
            .iter()
            .filter(|v| last.get(&v.name) != Some(&v.decoded.value))
            .filter_map(|v| Some((self.attribute(cali, v)?, ValueKey::from_variant(&v.decoded.value))))
            .collect();
        cali.set_globals(&changed);
        log::log(
            2,
            format_args!(
                "{}: adiak_import: {} Adiak values, {} new or changed",
                channel.name(),
                values.len(),
                changed.len()
            ),
        );
        last.extend(values.into_iter().map(|v| (v.name, v.decoded.value)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_numbers() {
        let words = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(categories(&words(&["2", " 3"])).ok(), Some(vec![2, 3]));
        assert!(categories(&words(&["general"])).is_err());
    }
}
