//! `allocstats`: allocation statistics per region path. Every memory
//! region begun (by `sysalloc` or `cali_datatracker_track`) counts
//! against the region path of the thread that allocated it, until it is
//! freed, from whatever thread. At flush, one record per region path:
//! `alloc.tally` (the most bytes allocated in that path and alive at
//! once), `alloc.count`, `max#alloc.size` and `avg#alloc.size`. With
//! `record_highwatermark`, every snapshot gets the most bytes alive in the
//! process since the previous snapshot (`alloc.region.highwatermark`),
//! which aggregation keeps as its maximum per region.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::service::{MemoryEvent, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::sync;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, Variant};
use std::sync::{Arc, Mutex};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "allocstats",
    aliases: &[],
    description: "Allocation statistics per region path (alloc.tally, alloc.count, alloc.size)",
    stage: Stage::Other,
    settings: &[SettingSpec {
        key: "record_highwatermark",
        kind: SettingKind::Bool,
        default: "false",
        description: "Add the most bytes allocated since the previous snapshot (alloc.region.highwatermark)",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(AllocStats::new(setup))))
    },
};

/// One region path's allocations.
#[derive(Default, Clone, Copy)]
struct PathStats {
    /// Bytes allocated in the path and not yet freed.
    live: u64,
    /// The most `live` has been.
    tally: u64,
    count: u64,
    total_size: u64,
    max_size: u64,
}

/// What every thread's allocations and frees update.
#[derive(Default)]
struct Stats {
    /// Live allocations: their size and the index of the path they count
    /// against.
    live: FxHashMap<u64, (u64, u32)>,
    /// Per path index: the path and its allocations.
    paths: Vec<(Option<Id>, PathStats)>,
    index_of: FxHashMap<Option<Id>, u32>,
    /// The path of the previous allocation and its index: allocations
    /// come in runs from one region.
    last_path: Option<(Option<Id>, u32)>,
    live_bytes: u64,
    /// The most bytes live since the previous snapshot.
    highwatermark: u64,
}

impl Stats {
    fn path_index(&mut self, path: Option<Id>) -> u32 {
        if let Some((last, i)) = self.last_path
            && last == path
        {
            return i;
        }
        let next = self.paths.len() as u32;
        let i = *self.index_of.entry(path).or_insert(next);
        if i == next {
            self.paths.push((path, PathStats::default()));
        }
        self.last_path = Some((path, i));
        i
    }

    fn allocated(&mut self, address: u64, size: u64, path: Option<Id>) {
        let i = self.path_index(path);
        if let Some((old, old_path)) = self.live.insert(address, (size, i)) {
            self.freed_bytes(old, old_path);
        }
        let p = &mut self.paths[i as usize].1;
        p.live += size;
        p.tally = p.tally.max(p.live);
        p.count += 1;
        p.total_size += size;
        p.max_size = p.max_size.max(size);
        self.live_bytes += size;
        self.highwatermark = self.highwatermark.max(self.live_bytes);
    }

    fn freed(&mut self, address: u64) {
        if let Some((size, path)) = self.live.remove(&address) {
            self.freed_bytes(size, path);
        }
    }

    fn freed_bytes(&mut self, size: u64, path: u32) {
        if let Some((_, p)) = self.paths.get_mut(path as usize) {
            p.live = p.live.saturating_sub(size);
        }
        self.live_bytes = self.live_bytes.saturating_sub(size);
    }
}

struct Attributes {
    tally: Attribute,
    count: Attribute,
    max_size: Attribute,
    avg_size: Attribute,
}

struct AllocStats {
    attrs: Attributes,
    highwatermark: Option<Attribute>,
    stats: Arc<Mutex<Stats>>,
}

impl AllocStats {
    fn new(setup: &Setup<'_>) -> AllocStats {
        let cali = setup.cali;
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let attr = |name, ty, props| cali.create_attribute(name, ty, props, &[]);
        AllocStats {
            attrs: Attributes {
                tally: attr("alloc.tally", AttrType::Uint, props),
                count: attr("alloc.count", AttrType::Uint, props),
                max_size: attr("max#alloc.size", AttrType::Uint, props),
                avg_size: attr("avg#alloc.size", AttrType::Double, props),
            },
            highwatermark: setup
                .settings
                .bool("record_highwatermark")
                .then(|| attr("alloc.region.highwatermark", AttrType::Uint, props | Properties::AGGREGATABLE)),
            stats: Arc::default(),
        }
    }
}

impl Service for AllocStats {
    fn name(&self) -> &'static str {
        "allocstats"
    }

    fn tracks_memory(&self) -> bool {
        true
    }

    fn track_memory(&self, _cali: &dyn Runtime, event: &MemoryEvent<'_>, path: Option<Id>, _snapshot: &mut Vec<Entry>) {
        let mut stats = sync::lock(&self.stats);
        match event {
            MemoryEvent::Begin(region) => stats.allocated(region.address, region.total_size(), path),
            MemoryEvent::End { address } => stats.freed(*address),
        }
    }

    fn measures(&self) -> bool {
        self.highwatermark.is_some()
    }

    fn thread_state(&self) -> ServiceState {
        match self.highwatermark {
            Some(attr) => Box::new(Highwatermark { attr, stats: self.stats.clone() }),
            None => Box::new(()),
        }
    }

    fn flushes(&self) -> bool {
        true
    }

    fn flush(&self, _cali: &dyn Runtime, _states: &mut [&mut dyn ThreadService], emit: &mut dyn FnMut(&Record)) {
        let by_path: Vec<(Option<Id>, PathStats)> = sync::lock(&self.stats).paths.clone();
        let a = &self.attrs;
        for (path, s) in by_path.into_iter().filter(|(_, s)| s.count > 0) {
            let mut record = Record::ctx();
            if let Some(node) = path {
                record.entries.push(Entry::Reference(node));
            }
            record.entries.extend([
                Entry::Immediate(a.tally.id(), Variant::Uint(s.tally)),
                Entry::Immediate(a.count.id(), Variant::Uint(s.count)),
                Entry::Immediate(a.max_size.id(), Variant::Uint(s.max_size)),
                Entry::Immediate(a.avg_size.id(), Variant::Double(s.total_size as f64 / s.count as f64)),
            ]);
            emit(&record);
        }
    }

    fn clear(&self, _states: &mut [&mut dyn ThreadService]) {
        let mut stats = sync::lock(&self.stats);
        for (_, p) in stats.paths.iter_mut() {
            *p = PathStats { live: p.live, tally: p.live, ..PathStats::default() };
        }
    }
}

/// A thread's part with `record_highwatermark`.
struct Highwatermark {
    attr: Attribute,
    stats: Arc<Mutex<Stats>>,
}

impl ThreadService for Highwatermark {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        let highwatermark = {
            let mut stats = sync::lock(&self.stats);
            let mark = stats.highwatermark;
            stats.highwatermark = stats.live_bytes;
            mark
        };
        snapshot.push_value(self.attr.id(), ValueKey::uint(highwatermark));
    }
}
