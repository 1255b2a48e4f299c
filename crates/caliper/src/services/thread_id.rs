//! `pthread`: marks every thread with its POSIX thread id (`pthread.id`,
//! `pthread_self()`) and whether it is the process's main thread
//! (`pthread.is_master`), so that output tells threads apart and the
//! `main_thread_only` option keeps the main thread's data. Both are
//! unaligned context attributes, not values, so they are part of a
//! profile's key; `pthread.id` takes part in events. A thread the program
//! starts through `pthread_create` (wrapped by libcaliper) sets its id as
//! an update before its start routine runs, as the reference's wrapper
//! does; any other thread gets both when it first meets the channel.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::blackboard::Blackboard;
use crate::service::{GlobalRuntime, Runtime, Service};
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties, Variant};
use std::sync::{Arc, OnceLock};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "pthread",
    aliases: &[],
    description: "Mark each thread with its thread id (pthread.id) and whether it is the main thread",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        let service = ThreadId::new(setup.cali);
        ACTIVE.get_or_init(|| (setup.cali.global(), service.id, service.is_master));
        Ok(Created::Service(Arc::new(service)))
    },
};

/// The runtime and the attributes, once a channel has the service: what
/// a thread the program starts needs.
static ACTIVE: OnceLock<(GlobalRuntime, Attribute, Attribute)> = OnceLock::new();

pub struct ThreadId {
    id: Attribute,
    is_master: Attribute,
}

impl ThreadId {
    pub fn new(cali: &dyn Runtime) -> ThreadId {
        ThreadId {
            id: cali.create_attribute("pthread.id", AttrType::Uint, Properties::UNALIGNED, &[]),
            is_master: cali.create_attribute(
                "pthread.is_master",
                AttrType::Bool,
                Properties::UNALIGNED | Properties::SKIP_EVENTS,
                &[],
            ),
        }
    }
}

/// The calling thread's id and whether it is the main thread.
fn this_thread() -> (ValueKey, ValueKey) {
    // SAFETY: plain calls without arguments.
    let (id, tid, pid) = unsafe { (libc::pthread_self(), libc::gettid(), libc::getpid()) };
    (ValueKey::from_variant(&Variant::Uint(id)), ValueKey::from_variant(&Variant::Bool(tid == pid)))
}

impl Service for ThreadId {
    fn name(&self) -> &'static str {
        "pthread"
    }

    fn on_new_thread(&self, _cali: &dyn Runtime, blackboard: &mut Blackboard) {
        let (id, is_master) = this_thread();
        if blackboard.get(self.is_master).is_none() {
            blackboard.set(self.is_master, is_master);
        }
        if blackboard.get(self.id).is_none() {
            blackboard.set(self.id, id);
        }
    }
}

/// Called by a thread the program started, before its start routine: sets
/// `pthread.is_master` (false) and `pthread.id` as updates, if a channel
/// has the `pthread` service.
pub fn program_thread_started() {
    let Some(&(runtime, id, is_master)) = ACTIVE.get() else { return };
    let Some(cali) = runtime() else { return };
    let (id_value, master_value) = this_thread();
    cali.set(is_master, master_value);
    cali.set(id, id_value);
}

/// Whether a channel has the `pthread` service: threads the program starts
/// should then call [`program_thread_started`].
pub fn program_threads_wanted() -> bool {
    ACTIVE.get().is_some()
}
