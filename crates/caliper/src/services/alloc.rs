//! `alloc`: tracks the memory regions the program names
//! (`cali_datatracker_track`) or that `sysalloc` sees allocated. Each
//! region gets a unique id (`alloc.uid`, from 1); its allocation and its
//! free are snapshots with `mem.alloc` or `mem.free` (the label) and the
//! region's address, element size, element count and size. With
//! `resolve_addresses`, every snapshot value of an address attribute of
//! class `memoryaddress` that falls inside a tracked region gets that
//! region's label, id and element index (`alloc.label#A`, `alloc.uid#A`,
//! `alloc.index#A`). `record_active_mem` adds the bytes tracked at each
//! snapshot (`mem.active`), `record_highwatermark` the most tracked since
//! the previous snapshot (`alloc.region.highwatermark`).

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::service::{MemoryEvent, MemoryRegion, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::sync;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Text, Variant};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "alloc",
    aliases: &[],
    description: "Track memory regions (allocations and cali_datatracker calls) and resolve addresses into them",
    stage: Stage::Trigger,
    settings: &[
        SettingSpec {
            key: "resolve_addresses",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add the label, id and element index of the tracked region of memory-address attributes",
        },
        SettingSpec {
            key: "track_allocations",
            kind: SettingKind::Bool,
            default: "true",
            description: "Take a snapshot at every allocation and free of a tracked region",
        },
        SettingSpec {
            key: "record_active_mem",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add the bytes in tracked regions to every snapshot (mem.active)",
        },
        SettingSpec {
            key: "record_highwatermark",
            kind: SettingKind::Bool,
            default: "false",
            description: "Add the most bytes tracked since the previous snapshot (alloc.region.highwatermark)",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Alloc::new(setup)))) },
};

/// A tracked region, by its start address.
struct Tracked {
    end: u64,
    label: Text,
    uid: u64,
    elem_size: u64,
    elements: u64,
}

/// The regions tracked, shared by every thread (a region may be freed on
/// another thread than the one that allocated it).
#[derive(Default)]
struct Regions {
    by_start: BTreeMap<u64, Tracked>,
    last_uid: u64,
    active_bytes: u64,
    /// The most bytes tracked since the previous snapshot.
    highwatermark: u64,
}

impl Regions {
    /// The region that holds `address`.
    fn holding(&self, address: u64) -> Option<(&u64, &Tracked)> {
        self.by_start.range(..=address).next_back().filter(|(_, r)| address < r.end)
    }
}

/// The attributes of an allocation or free snapshot.
struct EventAttributes {
    alloc: Attribute,
    free: Attribute,
    uid: Attribute,
    address: Attribute,
    elem_size: Attribute,
    num_elems: Attribute,
    total_size: Attribute,
}

/// Where the resolution of one address attribute goes.
#[derive(Clone, Copy)]
struct Resolved {
    label: Attribute,
    uid: Attribute,
    index: Attribute,
}

struct Alloc {
    resolve_addresses: bool,
    track_allocations: bool,
    events: EventAttributes,
    active_mem: Option<Attribute>,
    highwatermark: Option<Attribute>,
    memory_address: Option<Attribute>,
    regions: Arc<Mutex<Regions>>,
    /// Per attribute id: the attributes its resolution goes to, `None` if
    /// it is not a memory address.
    resolved: Arc<Mutex<FxHashMap<Id, Option<Resolved>>>>,
}

impl Alloc {
    fn new(setup: &Setup<'_>) -> Alloc {
        let (cali, s) = (setup.cali, &setup.settings);
        let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let attr = |name, ty, props| cali.create_attribute(name, ty, props, &[]);
        let events = EventAttributes {
            alloc: attr("mem.alloc", AttrType::String, value),
            free: attr("mem.free", AttrType::String, value),
            uid: attr("alloc.uid", AttrType::Uint, value),
            address: attr("alloc.address", AttrType::Addr, value),
            elem_size: attr("alloc.elem_size", AttrType::Uint, value),
            num_elems: attr("alloc.num_elems", AttrType::Uint, value),
            total_size: attr("alloc.total_size", AttrType::Uint, value),
        };
        let aggregatable = value | Properties::AGGREGATABLE;
        Alloc {
            resolve_addresses: s.bool("resolve_addresses"),
            track_allocations: s.bool("track_allocations"),
            events,
            active_mem: s.bool("record_active_mem").then(|| attr("mem.active", AttrType::Uint, aggregatable)),
            highwatermark: s
                .bool("record_highwatermark")
                .then(|| attr("alloc.region.highwatermark", AttrType::Uint, aggregatable)),
            memory_address: cali.find_attribute("class.memoryaddress"),
            regions: Arc::default(),
            resolved: Arc::default(),
        }
    }

    fn begin(&self, region: &MemoryRegion<'_>, snapshot: &mut Vec<Entry>) {
        let (size, elements) = (region.total_size(), region.elements());
        let label = Text::new(region.label);
        let uid = {
            let mut regions = sync::lock(&self.regions);
            regions.last_uid += 1;
            let uid = regions.last_uid;
            let end = region.address.saturating_add(size.max(1));
            let tracked = Tracked { end, label: label.clone(), uid, elem_size: region.elem_size, elements };
            if let Some(replaced) = regions.by_start.insert(region.address, tracked) {
                // Tracked again without an untrack: the old one is gone.
                regions.active_bytes = regions.active_bytes.saturating_sub(replaced.end - region.address);
            }
            regions.active_bytes += size;
            regions.highwatermark = regions.highwatermark.max(regions.active_bytes);
            uid
        };
        if self.track_allocations {
            let e = &self.events;
            snapshot.extend([
                Entry::Immediate(e.alloc.id(), Variant::Str(label)),
                Entry::Immediate(e.uid.id(), Variant::Uint(uid)),
                Entry::Immediate(e.address.id(), Variant::Addr(region.address)),
                Entry::Immediate(e.elem_size.id(), Variant::Uint(region.elem_size)),
                Entry::Immediate(e.num_elems.id(), Variant::Uint(elements)),
                Entry::Immediate(e.total_size.id(), Variant::Uint(size)),
            ]);
        }
    }

    fn end(&self, address: u64, snapshot: &mut Vec<Entry>) {
        let Some(tracked) = ({
            let mut regions = sync::lock(&self.regions);
            let tracked = regions.by_start.remove(&address);
            if let Some(t) = &tracked {
                regions.active_bytes = regions.active_bytes.saturating_sub(t.elem_size * t.elements);
            }
            tracked
        }) else {
            return;
        };
        if self.track_allocations {
            let e = &self.events;
            let size = tracked.elem_size * tracked.elements;
            snapshot.extend([
                Entry::Immediate(e.free.id(), Variant::Str(tracked.label)),
                Entry::Immediate(e.uid.id(), Variant::Uint(tracked.uid)),
                Entry::Immediate(e.address.id(), Variant::Addr(address)),
                Entry::Immediate(e.elem_size.id(), Variant::Uint(tracked.elem_size)),
                Entry::Immediate(e.num_elems.id(), Variant::Uint(tracked.elements)),
                Entry::Immediate(e.total_size.id(), Variant::Uint(size)),
            ]);
        }
    }
}

impl Service for Alloc {
    fn name(&self) -> &'static str {
        "alloc"
    }

    fn tracks_memory(&self) -> bool {
        true
    }

    fn track_memory(&self, _cali: &dyn Runtime, event: &MemoryEvent<'_>, _path: Option<Id>, snapshot: &mut Vec<Entry>) {
        match event {
            MemoryEvent::Begin(region) => self.begin(region, snapshot),
            MemoryEvent::End { address } => self.end(*address, snapshot),
        }
    }

    fn measures(&self) -> bool {
        self.resolve_addresses || self.active_mem.is_some() || self.highwatermark.is_some()
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(Measure {
            resolve: self.resolve_addresses.then_some(self.memory_address).flatten(),
            active_mem: self.active_mem,
            highwatermark: self.highwatermark,
            regions: self.regions.clone(),
            resolved: self.resolved.clone(),
            found: Vec::new(),
        })
    }
}

/// A thread's part: what every snapshot gets.
struct Measure {
    /// The class of the attributes to resolve, if resolving.
    resolve: Option<Attribute>,
    active_mem: Option<Attribute>,
    highwatermark: Option<Attribute>,
    regions: Arc<Mutex<Regions>>,
    resolved: Arc<Mutex<FxHashMap<Id, Option<Resolved>>>>,
    /// The snapshot's resolutions, kept for reuse.
    found: Vec<(Resolved, Text, u64, u64)>,
}

impl Measure {
    /// Where the resolution of attribute `id` goes, if it is a memory
    /// address (of the class `class`).
    fn resolution(&self, cali: &dyn Runtime, class: Attribute, id: Id) -> Option<Resolved> {
        let mut known = sync::lock(&self.resolved);
        *known.entry(id).or_insert_with(|| {
            let info = cali.attribute_info(id)?;
            let is_address = info.metadata.iter().any(|(m, v)| *m == class.id() && v.to_bool() == Some(true));
            is_address.then(|| {
                let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
                let attr = |prefix: &str, ty| cali.create_attribute(&format!("{prefix}#{}", info.name), ty, props, &[]);
                Resolved {
                    label: attr("alloc.label", AttrType::String),
                    uid: attr("alloc.uid", AttrType::Uint),
                    index: attr("alloc.index", AttrType::Uint),
                }
            })
        })
    }
}

impl ThreadService for Measure {
    fn measure(&mut self, cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        let (active, highwatermark) = {
            let mut regions = sync::lock(&self.regions);
            if let Some(class) = self.resolve {
                for &(attr, value) in snapshot.values() {
                    let Some(address) = value.as_address() else { continue };
                    let Some(resolved) = self.resolution(cali, class, attr) else { continue };
                    if let Some((start, r)) = regions.holding(address) {
                        let index = (address - start) / r.elem_size.max(1);
                        found.push((resolved, r.label.clone(), r.uid, index));
                    }
                }
            }
            let marks = (regions.active_bytes, regions.highwatermark);
            regions.highwatermark = regions.active_bytes;
            marks
        };
        for (resolved, label, uid, index) in found.drain(..) {
            snapshot.push_value(resolved.label.id(), ValueKey::from_variant(&Variant::Str(label)));
            snapshot.push_value(resolved.uid.id(), ValueKey::uint(uid));
            snapshot.push_value(resolved.index.id(), ValueKey::uint(index));
        }
        self.found = found;
        if let Some(attr) = self.active_mem {
            snapshot.push_value(attr.id(), ValueKey::uint(active));
        }
        if let Some(attr) = self.highwatermark {
            snapshot.push_value(attr.id(), ValueKey::uint(highwatermark));
        }
    }
}
