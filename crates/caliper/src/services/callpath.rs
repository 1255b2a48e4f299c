//! `callpath`: the call stack of every sample, as a path of
//! `callpath.address` nodes (outermost first; an address of class
//! `symboladdress`, so `symbollookup` names each frame). The sampler's
//! handler unwinds the interrupted code (see [`crate::unwind`]), leaving
//! out the `CALI_CALLPATH_SKIP_FRAMES` innermost frames; each thread that
//! meets the channel gets what unwinding needs beforehand. The handler's
//! own frames are never part of it: unwinding starts at the interrupted
//! instruction.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::log;
use crate::service::{ChannelView, Runtime, Service, ServiceState};
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
            description: "Record function names (callpath.regname); here names come from symbollookup at flush \
                          (source.function#callpath.address) instead",
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
            description: "Leave out the runtime's own frames (always: unwinding starts where the signal interrupted)",
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

struct CallPath;

impl CallPath {
    fn new(setup: &Setup<'_>) -> CallPath {
        let settings = &setup.settings;
        if settings.bool("use_name") {
            log::error(format_args!(
                "callpath: use_name records no callpath.regname here; add symbollookup for \
                 source.function#callpath.address"
            ));
        }
        if settings.bool("use_address") {
            let cali = setup.cali;
            let class = cali.create_attribute("class.symboladdress", AttrType::Bool, Properties::SKIP_EVENTS, &[]);
            let props = Properties::NOMERGE | Properties::SKIP_EVENTS;
            let address =
                cali.create_attribute("callpath.address", AttrType::Addr, props, &[(class.id(), Variant::Bool(true))]);
            let skip = settings.number::<i64>("skip_frames").clamp(0, u32::MAX.into()) as u64;
            // Attribute ids are node ids, which take 32 bits.
            REQUEST.store((skip << 32) | (address.id() & 0xffff_ffff), Ordering::Release);
        }
        CallPath
    }
}

impl Service for CallPath {
    fn name(&self) -> &'static str {
        "callpath"
    }

    /// Makes the calling thread ready for unwinding in its handler.
    fn thread_state(&self) -> ServiceState {
        crate::unwind::prepare_thread();
        Box::new(())
    }

    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        REQUEST.store(NONE, Ordering::Release);
    }
}
