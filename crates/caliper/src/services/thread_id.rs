//! `pthread`: marks every thread's snapshots with its thread id
//! (`pthread.id`, the kernel thread id) and whether it is the process's
//! main thread (`pthread.is_master`), so output tells threads apart.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::blackboard::Blackboard;
use crate::service::Runtime;
use crate::service::Service;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties, Variant};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "pthread",
    aliases: &[],
    description: "Mark snapshots with the thread id (pthread.id) and whether it is the main thread",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(ThreadId::new(setup.cali))))
    },
};

pub struct ThreadId {
    id: Attribute,
    is_master: Attribute,
}

impl ThreadId {
    pub fn new(cali: &dyn Runtime) -> ThreadId {
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        ThreadId {
            id: cali.create_attribute("pthread.id", AttrType::Uint, props, &[]),
            is_master: cali.create_attribute("pthread.is_master", AttrType::Bool, props, &[]),
        }
    }
}

impl Service for ThreadId {
    fn name(&self) -> &'static str {
        "pthread"
    }

    fn on_new_thread(&self, _cali: &dyn Runtime, blackboard: &mut Blackboard) {
        // SAFETY: plain syscalls without arguments.
        let (tid, pid) = unsafe { (libc::gettid(), libc::getpid()) };
        blackboard.set(self.id, ValueKey::from_variant(&Variant::Uint(tid as u64)));
        blackboard.set(self.is_master, ValueKey::from_variant(&Variant::Bool(tid == pid)));
    }
}
