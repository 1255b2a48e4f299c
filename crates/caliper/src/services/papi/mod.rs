//! `papi`: PAPI counters per snapshot. Each thread that meets the channel
//! counts the events of `CALI_PAPI_COUNTERS` in event sets of its own (one
//! per PAPI component, as PAPI wants), and every snapshot adds, per
//! event, `papi.<event>`: the count since the thread's previous snapshot
//! (aggregatable, so that profiles sum it per region). Events whose value
//! is a ratio rather than a count (PAPI's `topdown:::TOPDOWN_*_PERC`
//! percentages) are doubles over the interval since the previous
//! snapshot: their event sets are reset at each read.
//!
//! PAPI is loaded when the service is made (see [`api`]); an event that
//! PAPI does not know, or cannot count here (a component disabled, a
//! counter missing), is left out with one line naming it and PAPI's
//! reason, and without any event the service is not made.

mod api;

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use api::{EventSet, Papi};
use caliper_data::{AttrType, Properties};
use std::ffi::{CString, c_int};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "papi",
    aliases: &[],
    description: "Record PAPI counters per snapshot (papi.<event>: the count since the thread's previous snapshot)",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "counters",
            kind: SettingKind::StringList,
            default: "",
            description: "The PAPI events to count: presets (PAPI_TOT_INS) or native events (perf::PAGE-FAULTS)",
        },
        SettingSpec {
            key: "enable_multiplexing",
            kind: SettingKind::Bool,
            default: "false",
            description: "Multiplex the event sets: more events than counters, each counted part of the time",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        PapiService::new(setup).map(|s| Created::Service(Arc::new(s)))
    },
};

/// An event counted, and the attribute its values go to.
struct Event {
    name: CString,
    attr: Attribute,
    /// Whether the value is a double (a ratio) rather than a count.
    float: bool,
}

/// The events of one PAPI component: one event set per thread.
struct Group {
    component: c_int,
    events: Vec<Event>,
}

impl Group {
    /// The group's event set on the calling thread, counting. Fails with
    /// the index of the event that could not be added, or none if the set
    /// could not be made or started.
    fn open(&self, papi: &'static Papi, multiplex: bool) -> Result<EventSet, (Option<usize>, api::Error)> {
        let mut set = EventSet::new(papi, self.component, multiplex).map_err(|e| (None, e))?;
        for (i, event) in self.events.iter().enumerate() {
            set.add(&event.name).map_err(|e| (Some(i), e))?;
        }
        set.start().map_err(|e| (None, e))?;
        Ok(set)
    }

    /// Whether the set is reset at each read: its values are then the
    /// interval's own, which ratios need.
    fn resets(&self) -> bool {
        self.events.iter().any(|e| e.float)
    }
}

struct PapiService {
    papi: &'static Papi,
    groups: Vec<Group>,
    multiplex: bool,
}

impl PapiService {
    fn new(setup: &Setup<'_>) -> Result<PapiService, NotCreated> {
        let s = &setup.settings;
        let counters = s.list("counters", false);
        if counters.is_empty() {
            log::error(format_args!("papi: no counters given (CALI_PAPI_COUNTERS); papi disabled"));
            return Err(NotCreated::BadSettings);
        }
        let multiplex = s.bool("enable_multiplexing");
        let papi = Papi::get(multiplex).map_err(|why| {
            log::error(format_args!("papi: {why}; papi disabled"));
            NotCreated::BadSettings
        })?;
        papi.register_thread();
        let mut groups: Vec<Group> = Vec::new();
        for name in counters {
            let Some(c_name) = api::c_name(&name) else { continue };
            let kind = match papi.event_kind(&c_name) {
                Ok(kind) => kind,
                Err(e) => {
                    log::error(format_args!("papi: cannot count \"{name}\": {}; left out", papi.error(e)));
                    continue;
                }
            };
            let ty = if kind.float { AttrType::Double } else { AttrType::Uint };
            let props = Properties::ASVALUE | Properties::SKIP_EVENTS | Properties::AGGREGATABLE;
            let attr = setup.cali.create_attribute(&format!("papi.{name}"), ty, props, &[]);
            let event = Event { name: c_name, attr, float: kind.float };
            match groups.iter_mut().find(|g| g.component == kind.component) {
                Some(group) => group.events.push(event),
                None => groups.push(Group { component: kind.component, events: vec![event] }),
            }
        }
        // Tried on this thread: what PAPI cannot count here, it cannot
        // count on any thread.
        groups.retain_mut(|group| keep_countable(papi, group, multiplex));
        if groups.is_empty() {
            log::error(format_args!("papi: no event to count; papi disabled"));
            return Err(NotCreated::BadSettings);
        }
        Ok(PapiService { papi, groups, multiplex })
    }
}

/// Leaves out of `group` the events PAPI cannot add, saying which and
/// why; whether any are left that it can count together.
fn keep_countable(papi: &'static Papi, group: &mut Group, multiplex: bool) -> bool {
    loop {
        match group.open(papi, multiplex) {
            Ok(_) => return true,
            Err((Some(i), e)) => {
                let event = group.events.remove(i);
                let name = event.name.to_string_lossy();
                log::error(format_args!("papi: cannot count \"{name}\": {}; left out", papi.error(e)));
                if group.events.is_empty() {
                    return false;
                }
            }
            Err((None, e)) => {
                let names: Vec<String> =
                    group.events.iter().map(|e| format!("\"{}\"", e.name.to_string_lossy())).collect();
                log::error(format_args!("papi: cannot count {}: {}; left out", names.join(", "), papi.error(e)));
                return false;
            }
        }
    }
}

impl Service for PapiService {
    fn name(&self) -> &'static str {
        "papi"
    }

    fn measures(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        self.papi.register_thread();
        let sets = self.groups.iter().filter_map(|group| match group.open(self.papi, self.multiplex) {
            Ok(mut set) => {
                // The first delta counts from here: an event whose value
                // is not zero at the start (a software-defined event's
                // instant value) would else give the thread's first
                // snapshot its whole value.
                let mut last = vec![0; group.events.len()];
                let reset = group.resets();
                let _ = set.read(&mut last, reset);
                Some(ThreadSet {
                    set,
                    events: group.events.iter().map(|e| (e.attr, e.float)).collect(),
                    last,
                    values: vec![0; group.events.len()],
                    reset,
                })
            }
            Err((_, e)) => {
                static SAID: AtomicBool = AtomicBool::new(false);
                if !SAID.swap(true, Ordering::Relaxed) {
                    log::error(format_args!("papi: a thread cannot count its events: {}", self.papi.error(e)));
                }
                None
            }
        });
        Box::new(PapiThread { papi: self.papi, owner: current_thread(), sets: sets.collect() })
    }
}

fn current_thread() -> libc::pthread_t {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() }
}

/// A thread's event sets, stopped and its registration with PAPI undone
/// when the thread's part of the channel goes.
struct PapiThread {
    papi: &'static Papi,
    owner: libc::pthread_t,
    sets: Vec<ThreadSet>,
}

/// An event set of a thread, with what its events' values become.
struct ThreadSet {
    set: EventSet,
    /// Each event's attribute, and whether it is a double.
    events: Vec<(Attribute, bool)>,
    /// The counts at the previous read (of sets that are not reset).
    last: Vec<i64>,
    /// The buffer PAPI reads into.
    values: Vec<i64>,
    reset: bool,
}

impl ThreadService for PapiThread {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        for s in &mut self.sets {
            if s.set.read(&mut s.values, s.reset).is_err() {
                continue;
            }
            for ((&(attr, float), &now), last) in s.events.iter().zip(&s.values).zip(&mut s.last) {
                let value = match (float, s.reset) {
                    (true, _) => ValueKey::double(f64::from_bits(now as u64)),
                    (false, true) => ValueKey::uint(now as u64),
                    (false, false) => ValueKey::uint(now.wrapping_sub(*last) as u64),
                };
                *last = now;
                snapshot.push_value(attr.id(), value);
            }
        }
    }
}

impl Drop for PapiThread {
    fn drop(&mut self) {
        // PAPI's event sets and registration are the thread's own: only
        // the thread itself undoes them (a state dropped elsewhere leaves
        // them to PAPI).
        if current_thread() == self.owner {
            self.sets.clear();
            self.papi.unregister_thread();
        } else {
            std::mem::take(&mut self.sets).into_iter().for_each(std::mem::forget);
        }
    }
}
