//! `cupti`: the program's CUDA calls as regions. Runtime API calls begin
//! and end `cupti.runtimeAPI` (named as the function, `cudaMemcpy`),
//! driver API calls `cupti.driverAPI`; contexts and streams made and
//! destroyed, and synchronisations, are snapshots with `cupti.resource`
//! or `cupti.sync` and the ids (`cupti.contextID`, `cupti.deviceID`,
//! `cupti.streamID`); the program's own NVTX ranges become `nvtx.range`
//! regions. `CALI_CUPTI_CALLBACK_DOMAINS` picks which of these.

use super::super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use super::api::{self, CallbackData, Domain, NvtxData, NvtxEventAttributes, ResourceData, SynchronizeData};
use super::subscription;
use crate::attributes::Attribute;
use crate::log;
use crate::service::{GlobalRuntime, Runtime, Service};
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_char};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

pub(in crate::services) const SPEC: ServiceSpec = ServiceSpec {
    name: "cupti",
    aliases: &[],
    description: "CUDA runtime and driver API calls as regions, CUDA context, stream and synchronisation events (CUPTI)",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "callback_domains",
            kind: SettingKind::StringList,
            default: "runtime,sync",
            description: "CUPTI callback domains to record: runtime, driver, resource, sync, nvtx, or none",
        },
        SettingSpec {
            key: "record_symbol",
            kind: SettingKind::Bool,
            default: "false",
            description: "Record the kernel's name (cupti.symbolName) under each kernel launch",
        },
        SettingSpec {
            key: "sample_events",
            kind: SettingKind::String,
            default: "",
            description: "CUPTI event API counters (not supported: the event API is gone from current GPUs)",
        },
        SettingSpec {
            key: "sample_event_id",
            kind: SettingKind::Uint,
            default: "0",
            description: "CUPTI event API counter id (not supported)",
        },
    ],
    create,
};

/// Each domain a callback domain name stands for.
fn domains_named(name: &str) -> Option<&'static [Domain]> {
    Some(match name {
        "runtime" => &[Domain::Runtime],
        "driver" => &[Domain::Driver],
        "resource" => &[Domain::Resource],
        "sync" => &[Domain::Synchronize],
        "nvtx" => &[Domain::Nvtx],
        "none" => &[],
        _ => return None,
    })
}

fn create(setup: &Setup<'_>) -> Result<Created, NotCreated> {
    let s = &setup.settings;
    let mut domains = Vec::new();
    for name in s.list("callback_domains", false) {
        let Some(named) = domains_named(&name) else {
            log::error(format_args!(
                "cupti: unknown callback domain \"{name}\" (runtime, driver, resource, sync, nvtx or none)"
            ));
            return Err(NotCreated::BadSettings);
        };
        domains.extend_from_slice(named);
    }
    if !s.text("sample_events").is_empty() {
        log::error(format_args!("cupti: CALI_CUPTI_SAMPLE_EVENTS is not supported (CUPTI's event API): ignored"));
    }
    let state = STATE.get_or_init(|| Regions::new(setup.cali));
    if s.bool("record_symbol") {
        state.record_symbol.store(1, Ordering::Relaxed);
    }
    let enabled = subscription().and_then(|sub| sub.enable(&domains));
    match enabled {
        Ok(()) => {
            let mask = domains.iter().fold(0, |m, &d| m | 1 << d as u32);
            state.domains.fetch_or(mask, Ordering::Relaxed);
        }
        Err(why) => super::unavailable(&why),
    }
    Ok(Created::Service(Arc::new(CuptiRegions)))
}

static STATE: OnceLock<Regions> = OnceLock::new();

/// What the callback needs: the runtime, the attributes and the domains
/// enabled (a bit per [`Domain`]), shared by every channel with the
/// service.
struct Regions {
    runtime: GlobalRuntime,
    runtime_api: Attribute,
    driver_api: Attribute,
    symbol: Attribute,
    resource: Attribute,
    sync: Attribute,
    context_id: Attribute,
    device_id: Attribute,
    stream_id: Attribute,
    nvtx_range: Attribute,
    domains: AtomicU32,
    /// 1 if a channel asked for `cupti.symbolName`.
    record_symbol: AtomicU32,
}

thread_local! {
    /// The thread's function names by (domain, callback id), interned.
    static NAMES: RefCell<FxHashMap<(u32, u32), ValueKey>> = RefCell::new(FxHashMap::default());
    /// For each open API region of the thread, innermost last, whether
    /// its kernel name was begun under it (a bit per level, up to 64).
    static SYMBOLS: Cell<u64> = const { Cell::new(0) };
    /// The NVTX ranges the thread has open as `nvtx.range` regions.
    static NVTX_OPEN: Cell<u32> = const { Cell::new(0) };
}

impl Regions {
    fn new(cali: &dyn Runtime) -> Regions {
        let nested = Properties::NESTED;
        let id = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let attr = |name, ty, props| cali.create_attribute(name, ty, props, &[]);
        Regions {
            runtime: cali.global(),
            runtime_api: attr("cupti.runtimeAPI", AttrType::String, nested),
            driver_api: attr("cupti.driverAPI", AttrType::String, nested),
            symbol: attr("cupti.symbolName", AttrType::String, nested),
            resource: attr("cupti.resource", AttrType::String, Properties::DEFAULT),
            sync: attr("cupti.sync", AttrType::String, Properties::DEFAULT),
            context_id: attr("cupti.contextID", AttrType::Uint, id),
            device_id: attr("cupti.deviceID", AttrType::Uint, id),
            stream_id: attr("cupti.streamID", AttrType::Uint, id),
            nvtx_range: attr("nvtx.range", AttrType::String, nested),
            domains: AtomicU32::new(0),
            record_symbol: AtomicU32::new(0),
        }
    }

    /// The service's state and the runtime, if `domain` is recorded.
    fn recording(domain: Domain) -> Option<(&'static Regions, &'static dyn Runtime)> {
        let state = STATE.get()?;
        if state.domains.load(Ordering::Relaxed) & (1 << domain as u32) == 0 {
            return None;
        }
        Some((state, (state.runtime)()?))
    }

    fn api_attribute(&self, domain: Domain) -> Attribute {
        if domain == Domain::Driver { self.driver_api } else { self.runtime_api }
    }
}

/// A NUL-terminated string CUPTI handed over, if any.
///
/// # Safety
/// `text` must be null or point to a NUL-terminated string.
unsafe fn text<'a>(text: *const c_char) -> Option<&'a CStr> {
    // SAFETY: the caller's promise.
    (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) })
}

/// Before an API call: its region begins (and its kernel's name, when
/// asked for).
pub(super) fn api_enter(domain: Domain, cbid: u32, call: &CallbackData) {
    let Some((state, cali)) = Regions::recording(domain) else { return };
    let name = NAMES.with_borrow_mut(|names| {
        *names.entry((domain as u32, cbid)).or_insert_with(|| {
            // SAFETY: CUPTI's function name, a static string.
            let name = unsafe { text(call.function_name) };
            ValueKey::string(&name.map_or_else(|| format!("cbid {cbid}"), |n| n.to_string_lossy().into_owned()))
        })
    });
    cali.begin(state.api_attribute(domain), name);
    // SAFETY: the launch's kernel name, or null.
    let symbol = unsafe { text(call.symbol_name) }.filter(|_| state.record_symbol.load(Ordering::Relaxed) != 0);
    if let Some(symbol) = symbol {
        cali.begin(state.symbol, ValueKey::string(&symbol.to_string_lossy()));
    }
    SYMBOLS.set(SYMBOLS.get() << 1 | u64::from(symbol.is_some()));
}

/// After an API call: its region (and kernel name) end.
pub(super) fn api_exit(domain: Domain) {
    let Some((state, cali)) = Regions::recording(domain) else { return };
    let symbols = SYMBOLS.get();
    SYMBOLS.set(symbols >> 1);
    if symbols & 1 != 0 {
        cali.end(state.symbol);
    }
    cali.end(state.api_attribute(domain));
}

/// The context-tree node of `attr = value` (a string), as a snapshot's
/// entry.
fn node(cali: &dyn Runtime, attr: Attribute, value: &str) -> Entry {
    Entry::Reference(cali.tree().get_child_key(attr.id(), ValueKey::string(value), None))
}

/// A context or stream made or about to go: a snapshot with its ids.
pub(super) fn resource(cbid: u32, data: &ResourceData) {
    let Some((state, cali)) = Regions::recording(Domain::Resource) else { return };
    let Ok(sub) = subscription() else { return };
    let (event, stream) = match cbid {
        api::resource::CONTEXT_CREATED => ("create_context", false),
        api::resource::CONTEXT_DESTROY_STARTING => ("destroy_context", false),
        api::resource::STREAM_CREATED => ("create_stream", true),
        api::resource::STREAM_DESTROY_STARTING => ("destroy_stream", true),
        _ => return,
    };
    let (context_id, device_id) = sub.cupti.context_ids(data.context);
    let mut trigger = vec![
        node(cali, state.resource, event),
        Entry::Immediate(state.context_id.id(), Variant::Uint(context_id.into())),
        Entry::Immediate(state.device_id.id(), Variant::Uint(device_id.into())),
    ];
    if stream {
        let id = sub.cupti.stream_id(data.context, data.stream);
        trigger.push(Entry::Immediate(state.stream_id.id(), Variant::Uint(id.into())));
    }
    cali.push_snapshot(&trigger);
}

/// A synchronisation finished: a snapshot with what was synchronised.
pub(super) fn synchronize(cbid: u32, data: &SynchronizeData) {
    let Some((state, cali)) = Regions::recording(Domain::Synchronize) else { return };
    let Ok(sub) = subscription() else { return };
    let (context_id, _) = sub.cupti.context_ids(data.context);
    let mut trigger = vec![Entry::Immediate(state.context_id.id(), Variant::Uint(context_id.into()))];
    match cbid {
        api::synchronize::STREAM_SYNCHRONIZED => {
            let id = sub.cupti.stream_id(data.context, data.stream);
            trigger.push(node(cali, state.sync, "stream"));
            trigger.push(Entry::Immediate(state.stream_id.id(), Variant::Uint(id.into())));
        }
        api::synchronize::CONTEXT_SYNCHRONIZED => trigger.push(node(cali, state.sync, "context")),
        _ => return,
    }
    cali.push_snapshot(&trigger);
}

/// The program's NVTX ranges as `nvtx.range` regions.
pub(super) fn nvtx(cbid: u32, data: &NvtxData) {
    let Some((state, cali)) = Regions::recording(Domain::Nvtx) else { return };
    let message = match cbid {
        // SAFETY: nvtxRangePushA_params: the message.
        api::nvtx::RANGE_PUSH_A => unsafe { data.function_params.cast::<*const c_char>().as_ref() }.copied(),
        api::nvtx::RANGE_PUSH_EX => {
            // SAFETY: nvtxRangePushEx_params: the event attributes.
            let attributes = unsafe { data.function_params.cast::<*const NvtxEventAttributes>().as_ref() };
            // SAFETY: the program's attributes, valid during the call.
            let attributes = attributes.and_then(|&a| unsafe { a.as_ref() });
            attributes.filter(|a| a.message_type == api::NVTX_MESSAGE_ASCII).map(|a| a.message.cast())
        }
        api::nvtx::RANGE_POP => {
            if NVTX_OPEN.get() > 0 {
                NVTX_OPEN.set(NVTX_OPEN.get() - 1);
                cali.end(state.nvtx_range);
            }
            return;
        }
        _ => return,
    };
    // SAFETY: the program's message, valid during the call.
    if let Some(message) = message.and_then(|m| unsafe { text(m) }) {
        cali.begin(state.nvtx_range, ValueKey::string(&message.to_string_lossy()));
        NVTX_OPEN.set(NVTX_OPEN.get() + 1);
    }
}

/// The channel's part: nothing; the regions are the program's, measured
/// by whatever the channel measures.
struct CuptiRegions;

impl Service for CuptiRegions {
    fn name(&self) -> &'static str {
        "cupti"
    }
}
