//! `cpuinfo`: which processor and NUMA node the thread ran on at every
//! snapshot (`cpuinfo.cpu`, `cpuinfo.numa_node`), from `getcpu`.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::service::{Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties};
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "cpuinfo",
    aliases: &[],
    description: "Record the processor and NUMA node of every snapshot (getcpu)",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Ok(Created::Service(Arc::new(CpuInfo::new(setup.cali))))
    },
};

struct CpuInfo {
    cpu: Attribute,
    node: Attribute,
}

impl CpuInfo {
    fn new(cali: &dyn Runtime) -> CpuInfo {
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        CpuInfo {
            cpu: cali.create_attribute("cpuinfo.cpu", AttrType::Uint, props, &[]),
            node: cali.create_attribute("cpuinfo.numa_node", AttrType::Uint, props, &[]),
        }
    }
}

impl Service for CpuInfo {
    fn name(&self) -> &'static str {
        "cpuinfo"
    }

    fn measures(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(Where { cpu: self.cpu, node: self.node })
    }
}

/// A thread's part: the attributes.
struct Where {
    cpu: Attribute,
    node: Attribute,
}

impl ThreadService for Where {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        let (mut cpu, mut node) = (0u32, 0u32);
        // SAFETY: getcpu writes two integers made here.
        if unsafe { libc::syscall(libc::SYS_getcpu, &mut cpu as *mut u32, &mut node as *mut u32, 0usize) } == 0 {
            snapshot.push_value(self.cpu.id(), ValueKey::uint(cpu.into()));
            snapshot.push_value(self.node.id(), ValueKey::uint(node.into()));
        }
    }
}
