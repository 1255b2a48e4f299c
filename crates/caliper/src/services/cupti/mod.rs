//! CUDA through CUPTI: `cupti` marks the program's CUDA runtime and driver
//! API calls as regions (`cupti.runtimeAPI`, `cupti.driverAPI`), with
//! context and stream events and NVTX ranges; `cuptitrace` records the
//! device's activities (kernels, memory copies and sets) with their GPU
//! times, each tied to the host region that launched it, and emits them
//! as records when the channel flushes.
//!
//! CUPTI takes one subscriber per process: both services share the
//! subscription made here, and its callback hands each CUDA call to
//! whichever of them a channel has enabled. CUPTI is loaded at run time
//! (see [`api`]); without it, or without a usable GPU, each service says
//! so in one line and the program runs as it would without them.

mod activity;
mod api;
mod regions;
mod trace;

pub(super) use regions::SPEC as CUPTI_SPEC;
pub(super) use trace::SPEC as TRACE_SPEC;

use crate::contain::contain;
use crate::{log, sync};
use api::{CallbackData, Cupti, Domain, Subscriber};
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

/// The process's CUPTI subscription and the callback domains enabled so
/// far.
struct Subscription {
    cupti: &'static Cupti,
    subscriber: Subscriber,
    domains: Mutex<Vec<Domain>>,
}

/// The subscription, made on the first call; later calls get the same, or
/// the same reason there is none.
fn subscription() -> Result<&'static Subscription, String> {
    static SUBSCRIPTION: OnceLock<Result<Subscription, String>> = OnceLock::new();
    let made = SUBSCRIPTION.get_or_init(|| {
        let cupti = Cupti::get()?;
        let subscriber = cupti.subscribe(callback)?;
        Ok(Subscription { cupti, subscriber, domains: Mutex::new(Vec::new()) })
    });
    made.as_ref().map_err(String::clone)
}

/// Says once for the process that CUPTI cannot be used, and why: the
/// `cupti` and `cuptitrace` services of every channel then do nothing.
fn unavailable(why: &str) {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| log::error(format_args!("cupti: {why}: CUDA calls and GPU activities are not recorded")));
}

impl Subscription {
    /// Makes CUPTI call back for every function of `domains`.
    fn enable(&self, domains: &[Domain]) -> Result<(), String> {
        let mut enabled = sync::lock(&self.domains);
        for &domain in domains {
            if !enabled.contains(&domain) {
                self.cupti.enable_domain(self.subscriber, domain)?;
                enabled.push(domain);
            }
        }
        Ok(())
    }
}

/// CUPTI's callback, on the thread that makes the CUDA call: the regions
/// of `cupti`, and the host context `cuptitrace` ties the call's device
/// work to. An API call's region begins before its context is noted, so
/// that a kernel's GPU time lands under the `cudaLaunchKernel` that
/// launched it.
unsafe extern "C" fn callback(_userdata: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    if data.is_null() {
        return;
    }
    contain("cupti", || match Domain::from_raw(domain) {
        Some(domain @ (Domain::Runtime | Domain::Driver)) => {
            // SAFETY: the data of the API domains.
            let call = unsafe { &*data.cast::<CallbackData>() };
            if call.site == api::API_ENTER {
                regions::api_enter(domain, cbid, call);
                trace::api_enter(call.correlation_id);
            } else {
                regions::api_exit(domain);
            }
        }
        Some(Domain::Resource) => {
            if cbid == api::resource::CONTEXT_DESTROY_STARTING {
                trace::context_destroy_starting();
            }
            // SAFETY: the resource domain's data.
            regions::resource(cbid, unsafe { &*data.cast() });
        }
        // SAFETY: each domain's data, as CUPTI hands it.
        Some(Domain::Synchronize) => regions::synchronize(cbid, unsafe { &*data.cast() }),
        Some(Domain::Nvtx) => regions::nvtx(cbid, unsafe { &*data.cast() }),
        None => {}
    });
}
