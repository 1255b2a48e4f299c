//! `libpfm`: hardware and software event counters through
//! `perf_event_open`, with the reference's settings. Each thread that
//! meets the channel opens the events of `CALI_LIBPFM_EVENTS` as one group
//! (counting its own execution), and every snapshot reads the group with
//! one `read` and adds, per event, the count since the thread's previous
//! snapshot as `libpfm.counter.<event>` (aggregatable: profiles sum it per
//! region, as the reference's papi service's deltas).
//!
//! Software events (`task-clock`, `cpu-clock`, `page-faults`,
//! `minor-faults`, `major-faults`, `context-switches`, `cpu-migrations`,
//! `alignment-faults`, `emulation-faults`) work everywhere; hardware events
//! (`cycles`, `instructions`, `cache-references`, `cache-misses`,
//! `branches`, `branch-misses`, `bus-cycles`, `ref-cycles`,
//! `stalled-cycles-frontend`, `stalled-cycles-backend`) where the machine
//! has a PMU. An event the kernel refuses (no PMU in a virtual machine, or
//! `perf_event_paranoid`) is left out with a one-line message, once. Event
//! sampling (`CALI_LIBPFM_ENABLE_SAMPLING`) is not implemented: asked
//! for, it says so once and the service counts.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::io::AsRawFd;
use std::sync::{Arc, Once};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "libpfm",
    aliases: &[],
    description: "Count hardware and software events per snapshot through perf_event_open (libpfm.counter.<event>)",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "events",
            kind: SettingKind::StringList,
            default: "cycles",
            description: "The events to count",
        },
        SettingSpec {
            key: "record_counters",
            kind: SettingKind::Bool,
            default: "true",
            description: "Add the counts since the previous snapshot to every snapshot",
        },
        SettingSpec {
            key: "enable_sampling",
            kind: SettingKind::Bool,
            default: "true",
            description: "Sample events (not implemented here: the service counts)",
        },
        SettingSpec {
            key: "sample_attributes",
            kind: SettingKind::StringList,
            default: "ip,time,tid,cpu",
            description: "What each sample records (with sampling)",
        },
        SettingSpec {
            key: "sample_period",
            kind: SettingKind::Uint,
            default: "20000000",
            description: "Events between samples (with sampling)",
        },
        SettingSpec { key: "precise_ip", kind: SettingKind::Uint, default: "0", description: "Skid constraint" },
        SettingSpec { key: "config1", kind: SettingKind::Uint, default: "0", description: "Extra event configuration" },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Libpfm::new(setup).map(|s| Created::Service(Arc::new(s)))
    },
};

/// An event: its `perf_event_attr` type and config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EventCode {
    kind: u32,
    config: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;

/// The events known by name (the perf tool's names).
const EVENTS: &[(&str, EventCode)] = &[
    ("cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 0 }),
    ("cpu-cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 0 }),
    ("instructions", EventCode { kind: PERF_TYPE_HARDWARE, config: 1 }),
    ("cache-references", EventCode { kind: PERF_TYPE_HARDWARE, config: 2 }),
    ("cache-misses", EventCode { kind: PERF_TYPE_HARDWARE, config: 3 }),
    ("branches", EventCode { kind: PERF_TYPE_HARDWARE, config: 4 }),
    ("branch-instructions", EventCode { kind: PERF_TYPE_HARDWARE, config: 4 }),
    ("branch-misses", EventCode { kind: PERF_TYPE_HARDWARE, config: 5 }),
    ("bus-cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 6 }),
    ("stalled-cycles-frontend", EventCode { kind: PERF_TYPE_HARDWARE, config: 7 }),
    ("stalled-cycles-backend", EventCode { kind: PERF_TYPE_HARDWARE, config: 8 }),
    ("ref-cycles", EventCode { kind: PERF_TYPE_HARDWARE, config: 9 }),
    ("cpu-clock", EventCode { kind: PERF_TYPE_SOFTWARE, config: 0 }),
    ("task-clock", EventCode { kind: PERF_TYPE_SOFTWARE, config: 1 }),
    ("page-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 2 }),
    ("faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 2 }),
    ("context-switches", EventCode { kind: PERF_TYPE_SOFTWARE, config: 3 }),
    ("cs", EventCode { kind: PERF_TYPE_SOFTWARE, config: 3 }),
    ("cpu-migrations", EventCode { kind: PERF_TYPE_SOFTWARE, config: 4 }),
    ("migrations", EventCode { kind: PERF_TYPE_SOFTWARE, config: 4 }),
    ("minor-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 5 }),
    ("major-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 6 }),
    ("alignment-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 7 }),
    ("emulation-faults", EventCode { kind: PERF_TYPE_SOFTWARE, config: 8 }),
];

/// `struct perf_event_attr` up to `sample_max_stack` (`PERF_ATTR_SIZE_VER5`).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const PERF_FORMAT_GROUP: u64 = 1 << 3;
/// `exclude_hv`: the hypervisor's share is never the program's.
const EXCLUDE_HV: u64 = 1 << 6;
/// `exclude_kernel`, for when the kernel allows user counting only.
const EXCLUDE_KERNEL: u64 = 1 << 5;
const PRECISE_IP_SHIFT: u64 = 15;

/// Opens `event` on the calling thread, in `group` (-1: as a leader).
fn open(event: EventCode, group: i32, flags: u64, config1: u64) -> std::io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        kind: event.kind,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: event.config,
        read_format: PERF_FORMAT_GROUP,
        flags,
        config1,
        ..PerfEventAttr::default()
    };
    // SAFETY: a valid attribute struct; pid 0 and cpu -1 count the
    // calling thread on any processor.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, 0, -1, group, 0) };
    match fd {
        fd if fd >= 0 => {
            // SAFETY: a descriptor the kernel just gave, owned here.
            Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
        }
        _ => Err(std::io::Error::last_os_error()),
    }
}

struct Libpfm {
    /// The events counted, with their attributes (those the calling thread
    /// could open when the service was made).
    events: Vec<(EventCode, Attribute)>,
    flags: u64,
    config1: u64,
}

impl Libpfm {
    fn new(setup: &Setup<'_>) -> Result<Libpfm, NotCreated> {
        let s = &setup.settings;
        if s.bool("enable_sampling") {
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                log::info(format_args!("libpfm: event sampling is not implemented; counting only"));
            });
        }
        if !s.bool("record_counters") {
            return Err(NotCreated::BadSettings);
        }
        let precise = s.number::<u64>("precise_ip").min(3);
        let config1 = s.number::<u64>("config1");
        let mut flags = EXCLUDE_HV | (precise << PRECISE_IP_SHIFT);
        let mut events = Vec::new();
        for name in s.list("events", false) {
            let Some(&(_, code)) = EVENTS.iter().find(|(n, _)| *n == name) else {
                log::error(format_args!("libpfm: unknown event \"{name}\"; left out"));
                continue;
            };
            // Tried on this thread: what the kernel refuses here, it
            // refuses on every thread.
            let opened = open(code, -1, flags, config1).or_else(|e| match e.raw_os_error() {
                Some(libc::EACCES | libc::EPERM) => {
                    flags |= EXCLUDE_KERNEL;
                    open(code, -1, flags, config1)
                }
                _ => Err(e),
            });
            match opened {
                Ok(_) => {
                    let props = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
                    let name = format!("libpfm.counter.{name}");
                    events.push((code, setup.cali.create_attribute(&name, AttrType::Uint, props, &[])));
                }
                Err(e) => log::error(format_args!("libpfm: {name}: {}; left out", why_refused(code, &e))),
            }
        }
        if events.is_empty() {
            log::error(format_args!("libpfm: no event to count; libpfm disabled"));
            return Err(NotCreated::BadSettings);
        }
        Ok(Libpfm { events, flags, config1 })
    }
}

/// Why the kernel refused an event, in words.
fn why_refused(event: EventCode, e: &std::io::Error) -> String {
    match (event.kind, e.raw_os_error()) {
        (PERF_TYPE_HARDWARE, Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV)) => {
            "no hardware performance counters on this machine".to_string()
        }
        (_, Some(libc::EACCES | libc::EPERM)) => {
            format!("not permitted ({e}; see /proc/sys/kernel/perf_event_paranoid)")
        }
        _ => e.to_string(),
    }
}

impl Service for Libpfm {
    fn name(&self) -> &'static str {
        "libpfm"
    }

    fn measures(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(Counters::open(&self.events, self.flags, self.config1))
    }
}

/// A thread's counter group: the events it could open, their
/// attributes, and the counts at its previous snapshot.
struct Counters {
    /// The group's descriptors, the leader first.
    fds: Vec<OwnedFd>,
    attrs: Vec<Attribute>,
    last: Vec<u64>,
    /// The group as read: the number of events, then their counts.
    buffer: Vec<u64>,
}

impl Counters {
    /// Opens the events on the calling thread (the one that first meets
    /// the channel); an event that fails is left out of this thread.
    fn open(events: &[(EventCode, Attribute)], flags: u64, config1: u64) -> Counters {
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(events.len());
        let mut attrs = Vec::with_capacity(events.len());
        for &(code, attr) in events {
            let group = fds.first().map_or(-1, |leader| leader.as_raw_fd());
            if let Ok(fd) = open(code, group, flags, config1) {
                fds.push(fd);
                attrs.push(attr);
            }
        }
        let n = attrs.len();
        Counters { fds, attrs, last: vec![0; n], buffer: vec![0; n + 1] }
    }
}

impl ThreadService for Counters {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        let Some(leader) = self.fds.first() else { return };
        let bytes = std::mem::size_of_val(self.buffer.as_slice());
        // SAFETY: reads at most `bytes` into the buffer.
        let read = unsafe { libc::read(leader.as_raw_fd(), self.buffer.as_mut_ptr().cast(), bytes) };
        if read != bytes as isize || self.buffer[0] as usize != self.attrs.len() {
            return;
        }
        for ((attr, last), &now) in self.attrs.iter().zip(&mut self.last).zip(&self.buffer[1..]) {
            snapshot.push_value(attr.id(), ValueKey::uint(now.wrapping_sub(*last)));
            *last = now;
        }
    }
}
