//! `nvtx` (alias `nvprof`): forwards the begin and end of Caliper's nested
//! attributes (regions, loops, functions, ...) as NVTX ranges, so that
//! Nsight Systems shows them on its timeline. Each attribute has its own
//! NVTX domain named after it (`region`, `loop`), whose ranges nest as
//! the attribute's values do; the range's message is the value, its
//! colour one of a small palette, the same for every range of one name.
//!
//! NVTX is reached through its injection protocol (see [`api`]): without
//! `NVTX_INJECTION64_PATH` (no tool listening) the service does nothing.

mod api;

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::region_filter::RegionFilter;
use crate::service::{EventKind, Observation, Runtime, Service, ServiceState, ThreadService};
use crate::sync;
use crate::value::ValueKey;
use api::{Domain, EventAttributes};
use caliper_data::Entry;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "nvtx",
    aliases: &["nvprof"],
    description: "Forward Caliper regions to NVTX ranges (through NVTX_INJECTION64_PATH)",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "cycle_colors",
            kind: SettingKind::Bool,
            default: "true",
            description: "Give each region name its own colour from a palette",
        },
        SettingSpec {
            key: "binding_trigger_attributes",
            kind: SettingKind::StringList,
            default: "",
            description: "Attributes forwarded as ranges (default: all nested attributes)",
        },
        SettingSpec {
            key: "binding_include_regions",
            kind: SettingKind::String,
            default: "",
            description: "Forward only these regions",
        },
        SettingSpec {
            key: "binding_exclude_regions",
            kind: SettingKind::String,
            default: "",
            description: "Do not forward these regions",
        },
    ],
    create,
};

/// Range colours (ARGB), given to region names in their order of first
/// appearance.
const PALETTE: [u32; 7] = [0xff00ff00, 0xff0000ff, 0xffffff00, 0xffff00ff, 0xff00ffff, 0xffff0000, 0xffffffff];

fn create(setup: &Setup<'_>) -> Result<Created, NotCreated> {
    let s = &setup.settings;
    let filter =
        RegionFilter::new(&s.text("binding_include_regions"), &s.text("binding_exclude_regions")).map_err(|e| {
            log::error(format_args!("nvtx: {e}"));
            NotCreated::BadSettings
        })?;
    let shared = Shared {
        triggers: s.list("binding_trigger_attributes", false),
        filter,
        cycle_colors: s.bool("cycle_colors"),
        colors: Mutex::new(HashMap::new()),
        domains: Mutex::new(HashMap::new()),
    };
    Ok(Created::Service(Arc::new(Nvtx { injected: api::injected(), shared: Arc::new(shared) })))
}

struct Nvtx {
    /// Whether a tool listens; if not, the service sees nothing.
    injected: bool,
    shared: Arc<Shared>,
}

/// What the threads share: the settings, and the colours and domains given
/// so far.
struct Shared {
    /// The attributes forwarded by name; empty: every nested one.
    triggers: Vec<String>,
    filter: RegionFilter,
    cycle_colors: bool,
    colors: Mutex<HashMap<String, u32>>,
    domains: Mutex<HashMap<Id, Option<Domain>>>,
}

impl Shared {
    /// The range a begin of `attr = value` pushes, or `None` if it is not
    /// forwarded.
    fn range(&self, cali: &dyn Runtime, attr: Attribute, value: ValueKey) -> Option<Range> {
        let name = cali.attribute_info(attr.id())?.name.to_string();
        let forwarded = if self.triggers.is_empty() { attr.is_nested() } else { self.triggers.contains(&name) };
        let text = value.to_variant().to_string();
        if !forwarded || !self.filter.pass(&text) {
            return None;
        }
        let domain = *sync::lock(&self.domains).entry(attr.id()).or_insert_with(|| {
            let name = CString::new(name.replace('\0', "")).unwrap_or_default();
            api::domain_create(&name)
        });
        let color = if self.cycle_colors {
            let mut colors = sync::lock(&self.colors);
            let next = PALETTE[colors.len() % PALETTE.len()];
            *colors.entry(text.clone()).or_insert(next)
        } else {
            PALETTE[0]
        };
        Some(Range { message: CString::new(text.replace('\0', "")).unwrap_or_default(), color, domain })
    }
}

/// A forwarded value: its range's message, colour and domain.
struct Range {
    message: CString,
    color: u32,
    domain: Option<Domain>,
}

impl Service for Nvtx {
    fn name(&self) -> &'static str {
        "nvtx"
    }

    fn observes(&self) -> bool {
        self.injected
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(NvtxThread { shared: self.shared.clone(), ranges: FxHashMap::default(), open: Vec::new() })
    }
}

/// A thread's ranges: each value's, computed once, and those it has open.
struct NvtxThread {
    shared: Arc<Shared>,
    ranges: FxHashMap<(Id, ValueKey), Option<Range>>,
    /// The values whose ranges are open, innermost last, with their
    /// domains: an end pops only what a begin pushed (not a region begun
    /// before the channel was, nor one the filters left out).
    open: Vec<((Id, ValueKey), Option<Domain>)>,
}

impl ThreadService for NvtxThread {
    fn observe(
        &mut self,
        cali: &dyn Runtime,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
        _trigger: &mut Vec<Entry>,
    ) -> Observation {
        let key = (attr.id(), value);
        match kind {
            EventKind::Begin => {
                let shared = &self.shared;
                let range = self.ranges.entry(key).or_insert_with(|| shared.range(cali, attr, value));
                if let Some(range) = range {
                    api::range_push(range.domain, &EventAttributes::new(&range.message, range.color));
                    self.open.push((key, range.domain));
                }
            }
            EventKind::End => {
                // The attribute's innermost open range: other attributes'
                // ranges (in their own domains) may have opened since.
                let innermost = self.open.iter().rposition(|&((id, _), _)| id == key.0);
                if let Some(at) = innermost.filter(|&at| self.open[at].0 == key) {
                    api::range_pop(self.open.remove(at).1);
                }
            }
            _ => {}
        }
        Observation::Ignore
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn event_attributes_have_nvtx_v3_layout() {
        // nvtxEventAttributes_v2 on 64-bit targets (NVTX_EVENT_ATTRIB_STRUCT_SIZE).
        assert_eq!(size_of::<super::EventAttributes>(), 48);
    }
}
