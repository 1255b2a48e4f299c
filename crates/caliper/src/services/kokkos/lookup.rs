//! `kokkoslookup`: keeps the views Kokkos allocates (label, size, memory
//! space, by address range) and resolves memory-address values in the
//! channel's snapshots into the view that holds them:
//! `kokkos.variable_name#A`, `kokkos.variable_size#A` and
//! `kokkos.variable_space#A` for an address attribute `A`. The attributes
//! resolved are those `CALI_KOKKOSLOOKUP_ATTRIBUTES` names, or by default
//! every attribute of class `memoryaddress`.
//!
//! A deep copy is a region of `kokkos.space` (`<source space>-><destination
//! space>`, e.g. `Host->Host`), a subscription attribute: channels with the
//! service take snapshots of it. Its end snapshot carries the copy's
//! `kokkos.src.addr` and `kokkos.dst.addr` (memory addresses, so resolved to
//! their views) and `kokkos.size` (bytes, summed by profiles), set only
//! for that snapshot so that a profile counts each copy's bytes once.

use super::super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use super::View;
use crate::attributes::Attribute;
use crate::service::{GlobalRuntime, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::sync;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

pub(in crate::services) const SPEC: ServiceSpec = ServiceSpec {
    name: "kokkoslookup",
    aliases: &[],
    description: "Resolve memory addresses into the Kokkos views that hold them; deep copies as kokkos.space regions",
    stage: Stage::Other,
    settings: &[SettingSpec {
        key: "attributes",
        kind: SettingKind::StringList,
        default: "",
        description: "Address attributes to resolve (default: every attribute of class memoryaddress)",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        let cali = setup.cali;
        STATE.get_or_init(|| Lookup::new(cali));
        let names = setup.settings.list("attributes", false);
        let select = if names.is_empty() {
            Select::Class(cali.find_attribute("class.memoryaddress"))
        } else {
            Select::Named(names)
        };
        Ok(Created::Service(Arc::new(KokkosLookup { select: Arc::new(select), resolved: Arc::default() })))
    },
};

static STATE: OnceLock<Lookup> = OnceLock::new();

/// The handler of view and deep-copy events, once a channel has the
/// service.
pub(super) fn installed() -> Option<&'static Lookup> {
    STATE.get()
}

/// A live view, by its start address.
struct Tracked {
    end: u64,
    name: ValueKey,
    size: u64,
    space: ValueKey,
}

/// A deep copy under way on a thread: source, destination, size.
type Copy = (u64, u64, u64);

thread_local! {
    static COPYING: Cell<Option<Copy>> = const { Cell::new(None) };
}

/// What the process keeps for every channel: the views, and the deep-copy
/// attributes.
pub(super) struct Lookup {
    runtime: GlobalRuntime,
    views: Mutex<BTreeMap<u64, Tracked>>,
    space: Attribute,
    src: Attribute,
    dst: Attribute,
    size: Attribute,
}

impl Lookup {
    fn new(cali: &dyn Runtime) -> Lookup {
        let flag = |name| cali.find_attribute(name).map(|a| (a.id(), Variant::Bool(true)));
        let subscription: Vec<_> = flag("subscription_event").into_iter().collect();
        let address: Vec<_> = flag("class.memoryaddress").into_iter().collect();
        let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
        Lookup {
            runtime: cali.global(),
            views: Mutex::default(),
            space: cali.create_attribute("kokkos.space", AttrType::String, Properties::DEFAULT, &subscription),
            src: cali.create_attribute("kokkos.src.addr", AttrType::Addr, value, &address),
            dst: cali.create_attribute("kokkos.dst.addr", AttrType::Addr, value, &address),
            size: cali.create_attribute("kokkos.size", AttrType::Uint, value | Properties::AGGREGATABLE, &[]),
        }
    }

    pub(super) fn allocate(&self, view: &View<'_>) {
        let tracked = Tracked {
            end: view.address.saturating_add(view.size.max(1)),
            name: ValueKey::string(view.name),
            size: view.size,
            space: ValueKey::string(view.space),
        };
        sync::lock(&self.views).insert(view.address, tracked);
    }

    pub(super) fn deallocate(&self, address: u64) {
        sync::lock(&self.views).remove(&address);
    }

    /// The view that holds `address`: its name, size and space.
    fn holding(&self, address: u64) -> Option<(ValueKey, u64, ValueKey)> {
        let views = sync::lock(&self.views);
        let (_, view) = views.range(..=address).next_back().filter(|(_, v)| address < v.end)?;
        Some((view.name, view.size, view.space))
    }

    pub(super) fn begin_deep_copy(&self, dst: &View<'_>, src: &View<'_>, size: u64) {
        let Some(cali) = (self.runtime)() else { return };
        COPYING.set(Some((src.address, dst.address, size)));
        cali.begin(self.space, ValueKey::string(&format!("{}->{}", src.space, dst.space)));
    }

    pub(super) fn end_deep_copy(&self) {
        let Some(cali) = (self.runtime)() else { return };
        // A deep copy begun before the service was there has no region.
        let Some((src, dst, size)) = COPYING.take() else { return };
        let values = [
            (self.src, ValueKey::from_variant(&Variant::Addr(src))),
            (self.dst, ValueKey::from_variant(&Variant::Addr(dst))),
            (self.size, ValueKey::uint(size)),
        ];
        for (attr, value) in values {
            cali.set(attr, value);
        }
        cali.end(self.space);
        for (attr, _) in values {
            cali.end(attr);
        }
    }
}

/// Which address attributes a channel resolves.
enum Select {
    /// Those named.
    Named(Vec<String>),
    /// Those of this class (`class.memoryaddress`, if it exists).
    Class(Option<Attribute>),
}

/// Where the resolution of one address attribute goes.
#[derive(Clone, Copy)]
struct Resolved {
    name: Attribute,
    size: Attribute,
    space: Attribute,
}

/// Per attribute id: the attributes its resolution goes to, `None` if the
/// channel does not resolve it.
type Resolutions = Arc<Mutex<FxHashMap<Id, Option<Resolved>>>>;

struct KokkosLookup {
    select: Arc<Select>,
    resolved: Resolutions,
}

impl Service for KokkosLookup {
    fn name(&self) -> &'static str {
        "kokkoslookup"
    }

    fn measures(&self) -> bool {
        true
    }

    fn subscriptions(&self) -> &'static [&'static str] {
        &["kokkos.space"]
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(Measure { select: self.select.clone(), resolved: self.resolved.clone(), found: Vec::new() })
    }
}

/// A thread's part: resolves the addresses of its snapshots.
struct Measure {
    select: Arc<Select>,
    resolved: Resolutions,
    /// The snapshot's resolutions, kept for reuse.
    found: Vec<(Resolved, (ValueKey, u64, ValueKey))>,
}

impl Measure {
    /// Where the resolution of attribute `id` goes, if the channel
    /// resolves it.
    fn resolution(&self, cali: &dyn Runtime, id: Id) -> Option<Resolved> {
        *sync::lock(&self.resolved).entry(id).or_insert_with(|| {
            let info = cali.attribute_info(id)?;
            let selected = match &*self.select {
                Select::Named(names) => names.iter().any(|n| **n == *info.name),
                Select::Class(class) => class.is_some_and(|class| {
                    info.metadata.iter().any(|(m, v)| *m == class.id() && v.to_bool() == Some(true))
                }),
            };
            selected.then(|| {
                let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
                let attr = |prefix: &str, ty| cali.create_attribute(&format!("{prefix}#{}", info.name), ty, props, &[]);
                Resolved {
                    name: attr("kokkos.variable_name", AttrType::String),
                    size: attr("kokkos.variable_size", AttrType::Uint),
                    space: attr("kokkos.variable_space", AttrType::String),
                }
            })
        })
    }
}

impl ThreadService for Measure {
    fn measure(&mut self, cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        let Some(lookup) = installed() else { return };
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        for &(attr, value) in snapshot.values() {
            let Some(address) = value.as_address() else { continue };
            let Some(resolved) = self.resolution(cali, attr) else { continue };
            if let Some(view) = lookup.holding(address) {
                found.push((resolved, view));
            }
        }
        for (resolved, (name, size, space)) in found.drain(..) {
            snapshot.push_value(resolved.name.id(), name);
            snapshot.push_value(resolved.size.id(), ValueKey::uint(size));
            snapshot.push_value(resolved.space.id(), space);
        }
        self.found = found;
    }
}
