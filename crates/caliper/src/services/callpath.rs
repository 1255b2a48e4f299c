//! `callpath`: the call stack of every snapshot, as a path of
//! `callpath.address` nodes (outermost first; an address of class
//! `symboladdress`, so `symbollookup` names each frame), leaving out the
//! `CALI_CALLPATH_SKIP_FRAMES` innermost frames; each thread that meets the
//! channel gets what unwinding needs beforehand (see [`crate::unwind`]).
//! A sample's stack is unwound in the sampler's handler from the
//! interrupted instruction; a region snapshot's here, from the
//! annotation's caller: the runtime's own frames (functions of the
//! `caliper` crates and the C ABI's `cali_*`) are left out unless
//! `CALI_CALLPATH_SKIP_INTERNAL=false`.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use super::symbollookup::address_paths;
use crate::attributes::Attribute;
use crate::capture::MAX_FRAMES;
use crate::service::{ChannelView, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::symbols::Symbolizer;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Record, Variant};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "callpath",
    aliases: &[],
    description: "Record the call stack of each sample (callpath.address)",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "use_name",
            kind: SettingKind::Bool,
            default: "false",
            description: "Record the frames' function names (callpath.regname, looked up at flush)",
        },
        SettingSpec {
            key: "use_address",
            kind: SettingKind::Bool,
            default: "true",
            description: "Record the frames' addresses (callpath.address)",
        },
        SettingSpec {
            key: "skip_frames",
            kind: SettingKind::Int,
            default: "0",
            description: "Innermost frames to leave out",
        },
        SettingSpec {
            key: "skip_internal",
            kind: SettingKind::Bool,
            default: "true",
            description: "Leave out the runtime's own frames of region snapshots (samples have none: their unwinding \
                          starts where the signal interrupted)",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(CallPath::new(setup)))) },
};

/// What the sampler's handler records: `callpath.address`'s id (low half)
/// and the frames to skip (high half); [`NONE`] when no channel records
/// call paths.
static REQUEST: AtomicU64 = AtomicU64::new(NONE);
const NONE: u64 = u64::MAX;

/// The attribute to record call paths under and the innermost frames to
/// leave out, if a channel records them. Async-signal-safe.
pub(super) fn request() -> Option<(Id, usize)> {
    let request = REQUEST.load(Ordering::Acquire);
    (request != NONE).then_some((request & 0xffff_ffff, (request >> 32) as usize))
}

struct CallPath {
    /// `callpath.address`, unless `use_address` and `use_name` are off.
    address: Option<Attribute>,
    /// `callpath.regname`, with `use_name`: the frames' names, added at
    /// flush.
    names: Option<Attribute>,
    skip: usize,
    skip_internal: bool,
    /// Names the frames, to tell the runtime's own (shared by the
    /// threads, which each remember the answers).
    symbols: Arc<Mutex<Symbolizer>>,
}

impl CallPath {
    fn new(setup: &Setup<'_>) -> CallPath {
        let settings = &setup.settings;
        let skip = settings.number::<i64>("skip_frames").clamp(0, u32::MAX.into()) as u64;
        let mut address = None;
        // The names are looked up from the addresses.
        if settings.bool("use_address") || settings.bool("use_name") {
            let cali = setup.cali;
            let class = cali.create_attribute("class.symboladdress", AttrType::Bool, Properties::SKIP_EVENTS, &[]);
            let props = Properties::NOMERGE | Properties::SKIP_EVENTS;
            let attr =
                cali.create_attribute("callpath.address", AttrType::Addr, props, &[(class.id(), Variant::Bool(true))]);
            // Attribute ids are node ids, which take 32 bits.
            REQUEST.store((skip << 32) | (attr.id() & 0xffff_ffff), Ordering::Release);
            address = Some(attr);
        }
        let names = settings.bool("use_name").then(|| {
            let props = Properties::NOMERGE | Properties::SKIP_EVENTS;
            setup.cali.create_attribute("callpath.regname", AttrType::String, props, &[])
        });
        CallPath {
            address,
            names,
            skip: skip as usize,
            skip_internal: settings.bool("skip_internal"),
            symbols: Arc::default(),
        }
    }
}

impl Service for CallPath {
    fn name(&self) -> &'static str {
        "callpath"
    }

    /// Region snapshots get their call stacks too.
    fn measures(&self) -> bool {
        self.address.is_some()
    }

    /// Makes the calling thread ready for unwinding (in its handler too).
    fn thread_state(&self) -> ServiceState {
        crate::unwind::prepare_thread();
        match self.address {
            Some(address) => Box::new(ThreadCallPath {
                address,
                skip: self.skip,
                skip_internal: self.skip_internal,
                symbols: self.symbols.clone(),
                internal: FxHashMap::default(),
            }),
            None => Box::new(()),
        }
    }

    fn postprocesses(&self) -> bool {
        self.names.is_some()
    }

    /// Adds the path of the frames' names (`callpath.regname`) to each
    /// record with a call path.
    fn postprocess(&self, cali: &dyn Runtime, record: &mut Record) {
        let (Some(address), Some(names)) = (self.address, self.names) else { return };
        let refs: Vec<Id> = record.refs().collect();
        let mut symbols = crate::sync::lock(&self.symbols);
        for node in refs {
            for (_, frames) in address_paths(cali.tree(), node, |attr| attr == address.id()) {
                let mut name = None;
                for frame in frames {
                    let function = symbols.lookup(frame).function.clone().unwrap_or_else(|| "UNKNOWN".to_string());
                    name = Some(cali.tree().get_child(names.id(), Variant::string(&function), name));
                }
                if let Some(name) = name {
                    record.push_ref(name);
                }
            }
        }
    }

    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        REQUEST.store(NONE, Ordering::Release);
    }
}

/// A thread's part: unwinds at region snapshots.
struct ThreadCallPath {
    address: Attribute,
    skip: usize,
    skip_internal: bool,
    symbols: Arc<Mutex<Symbolizer>>,
    /// Per frame address: whether it is in the runtime's own code.
    internal: FxHashMap<u64, bool>,
}

impl ThreadCallPath {
    fn is_internal(&mut self, address: u64) -> bool {
        let symbols = &self.symbols;
        *self.internal.entry(address).or_insert_with(|| {
            let info = crate::sync::lock(symbols).lookup(address);
            info.function.as_deref().is_some_and(is_runtime_function)
        })
    }
}

/// Whether a (demangled) function name is the runtime's: the `caliper`
/// crates (the runtime, and the C ABI library, also called `caliper`),
/// the C ABI's `cali_*` entry points, and the standard library's frames
/// between them (closures, thread locals).
fn is_runtime_function(name: &str) -> bool {
    let name = name.trim_start_matches('<');
    ["caliper::", "caliper_", "cali_", "std::", "core::", "alloc::"].iter().any(|p| name.starts_with(p))
}

impl ThreadService for ThreadCallPath {
    /// The call stack of the annotation's caller. Samples have theirs
    /// from the handler.
    fn measure(&mut self, cali: &dyn Runtime, snapshot: &mut Snapshot, trigger: &Trigger) {
        if trigger.in_signal {
            return;
        }
        let mut frames = [0u64; MAX_FRAMES];
        let n = crate::unwind::unwind_here(&mut frames);

        let frames = &frames[..n];
        let internal = match self.skip_internal {
            true => frames.iter().rev().take_while(|&&a| self.is_internal(a)).count(),
            false => 0,
        };
        let mut node = None;
        for &address in &frames[..n.saturating_sub(internal + self.skip)] {
            node = Some(cali.tree().get_child(self.address.id(), Variant::Addr(address), node));
        }
        if let Some(node) = node {
            snapshot.push_node(node);
        }
    }
}
