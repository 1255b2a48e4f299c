//! `adiak_export`: at each flush, the channel's globals (the Caliper
//! version, the config's options, `cali_set_global_*` values, ...) become
//! Adiak name/values of category `general`, subcategory `caliper`, so that
//! tools reading Adiak see them. Globals that came from Adiak
//! (`adiak_import`, with `adiak.type` metadata) are not handed back.

use super::api::{CATEGORY_GENERAL, Namevalue, namevalue};
use crate::log;
use crate::service::{ChannelView, Runtime, Service};
use crate::services::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::services::report::import_globals;
use caliper_data::{MetadataDb, Variant};
use std::ffi::{CString, c_int, c_long, c_ulong};
use std::sync::Arc;

pub(in crate::services) const SPEC: ServiceSpec = ServiceSpec {
    name: "adiak_export",
    aliases: &[],
    description: "Export the channel's globals (run metadata) to Adiak at each flush",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        if namevalue().is_none() {
            log::error(format_args!(
                "{}: adiak_export: Adiak is not loaded in this program: there is nothing to export to",
                setup.channel
            ));
        }
        Ok(Created::Service(Arc::new(AdiakExport)))
    },
};

struct AdiakExport;

/// The subcategory of exported values.
const SUBCATEGORY: &std::ffi::CStr = c"caliper";

/// Hands `name = value` to Adiak with the type string of its kind; `false`
/// for a kind Adiak has no type for, or a name or string with a NUL.
fn export(adiak: Namevalue, name: &str, value: &Variant) -> bool {
    let Ok(name) = CString::new(name) else { return false };
    let (n, category, sub) = (name.as_ptr(), CATEGORY_GENERAL, SUBCATEGORY.as_ptr());
    // SAFETY: Adiak's variadic function, with the one argument of the type
    // its type string names; it copies the value.
    let status: c_int = unsafe {
        match value {
            Variant::Int(i) => adiak(n, category, sub, c"%ld".as_ptr(), *i as c_long),
            Variant::Uint(u) => adiak(n, category, sub, c"%lu".as_ptr(), *u as c_ulong),
            Variant::Bool(b) => adiak(n, category, sub, c"%d".as_ptr(), c_int::from(*b)),
            Variant::Double(d) => adiak(n, category, sub, c"%f".as_ptr(), *d),
            Variant::Str(_) => {
                let Ok(text) = CString::new(value.to_string()) else { return false };
                adiak(n, category, sub, c"%s".as_ptr(), text.as_ptr())
            }
            _ => return false,
        }
    };
    status == 0
}

impl Service for AdiakExport {
    fn name(&self) -> &'static str {
        "adiak_export"
    }

    fn pre_flush(&self, cali: &dyn Runtime, channel: &dyn ChannelView) {
        let Some(adiak) = namevalue() else { return };
        let mut db = MetadataDb::new();
        import_globals(cali, channel, &mut db);
        let mut exported = 0;
        for (id, values) in db.expand_paths(&db.globals()) {
            let Some(attr) = db.attribute(id) else { continue };
            if db.metadata_by_name(attr, "adiak.type").is_some() {
                continue;
            }
            // A global set more than once on a path is its values joined,
            // as the readers print them.
            let value = match values.as_slice() {
                [one] => one.clone(),
                many => Variant::string(&many.iter().map(Variant::to_string).collect::<Vec<_>>().join("/")),
            };
            exported += usize::from(export(adiak, attr.name(), &value));
        }
        log::log(2, format_args!("{}: adiak_export: exported {exported} globals", channel.name()));
    }
}
