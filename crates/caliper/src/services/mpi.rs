//! `mpi`: makes the wrapped MPI functions regions of `mpi.function` and
//! records `mpi.rank` and `mpi.world.size` (at `MPI_Init`, or now if MPI
//! runs already). Which functions: `CALI_MPI_WHITELIST` (`all` first
//! means every one) and `CALI_MPI_BLACKLIST`; with neither, none (the rank
//! is still recorded), as in the reference. Available once an MPI binding
//! registered (see [`crate::mpi`]). `CALI_MPI_MSG_TRACING` takes a snapshot
//! of each message ([`crate::mpi::messages`]);
//! `CALI_MPI_MSG_PATTERN` one of what each `comm.region` communicated
//! ([`crate::mpi::pattern`]).

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::mpi;
use crate::mpi::pattern::{Counts, PatternAttributes};
use crate::service::{EventKind, Observation, Runtime, Service, ServiceState, ThreadService};
use crate::value::ValueKey;
use caliper_data::Entry;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "mpi",
    aliases: &[],
    description: "Wrap MPI functions as mpi.function regions; record mpi.rank and mpi.world.size",
    stage: Stage::Other,
    settings: &[
        SettingSpec {
            key: "whitelist",
            kind: SettingKind::StringList,
            default: "",
            description: "MPI functions to instrument (\"all\" first: every one)",
        },
        SettingSpec {
            key: "blacklist",
            kind: SettingKind::StringList,
            default: "",
            description: "MPI functions not to instrument",
        },
        SettingSpec {
            key: "msg_tracing",
            kind: SettingKind::Bool,
            default: "false",
            description: "Take a snapshot of each message and collective: size, peer, tag, counts",
        },
        SettingSpec {
            key: "msg_pattern",
            kind: SettingKind::Bool,
            default: "false",
            description: "Record what each comm.region communicated: messages, bytes, distinct ranks; Irecv wait gaps",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        let layer = mpi::layer().ok_or(NotCreated::Unknown)?;
        let names = layer.functions();
        mpi::prepare_functions(setup.cali, names);
        let white = setup.settings.list("whitelist", false);
        let black = setup.settings.list("blacklist", false);
        for (list, which) in [(&white, "whitelist"), (&black, "blacklist")] {
            for name in list.iter().filter(|n| *n != "all" && !names.contains(&n.as_str())) {
                log::error(format_args!("Unknown MPI function {name} in MPI function {which}"));
            }
        }
        for (index, name) in names.iter().enumerate() {
            if selected(name, &white, &black) {
                layer.set_enabled(index, true);
            }
        }
        if setup.settings.bool("msg_tracing") {
            mpi::trace_messages();
        }
        let pattern = setup.settings.bool("msg_pattern").then(|| {
            mpi::keep_message_pattern();
            Arc::new(PatternAttributes::new(setup.cali))
        });
        mpi::record_rank(setup.cali);
        Ok(Created::Service(Arc::new(Mpi { pattern })))
    },
};

/// Whether function `name` is instrumented: with neither list none is;
/// with a whitelist only those listed (all with `all` first), less those
/// of the blacklist; with a blacklist only, all but those.
fn selected(name: &str, white: &[String], black: &[String]) -> bool {
    let listed = |list: &[String]| list.iter().any(|n| n == name);
    let whitelisted = match white.first() {
        None => !black.is_empty(),
        Some(first) if first == "all" => true,
        Some(_) => listed(white),
    };
    whitelisted && !listed(black)
}

struct Mpi {
    /// The attributes of comm regions' snapshots, if the service keeps
    /// the communication pattern.
    pattern: Option<Arc<PatternAttributes>>,
}

impl Service for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn subscriptions(&self) -> &'static [&'static str] {
        &["mpi.function"]
    }

    /// With the communication pattern on: sees comm regions begin and end.
    fn observes(&self) -> bool {
        self.pattern.is_some()
    }

    fn thread_state(&self) -> ServiceState {
        match &self.pattern {
            Some(attributes) => Box::new(CommRegions { attributes: attributes.clone(), marks: Vec::new() }),
            None => Box::new(()),
        }
    }
}

/// A thread's open comm regions: the communication totals at each begin.
struct CommRegions {
    attributes: Arc<PatternAttributes>,
    marks: Vec<Counts>,
}

impl ThreadService for CommRegions {
    /// A comm region's begin marks the totals; its end takes a snapshot,
    /// inside the region, of what was communicated since.
    fn observe(
        &mut self,
        cali: &dyn Runtime,
        kind: EventKind,
        attr: Attribute,
        _value: ValueKey,
        trigger: &mut Vec<Entry>,
    ) -> Observation {
        if attr != cali.builtins().comm_region {
            return Observation::Ignore;
        }
        match kind {
            EventKind::Begin => self.marks.push(mpi::pattern::mark()),
            EventKind::End => {
                if let Some(mark) = self.marks.pop() {
                    self.attributes.entries(&mpi::pattern::since(&mark), trigger);
                    return Observation::Snapshot;
                }
            }
            EventKind::Set | EventKind::Explicit => {}
        }
        Observation::Ignore
    }
}

#[cfg(test)]
mod tests {
    use super::selected;

    #[test]
    fn white_and_black_lists_select_as_the_reference_does() {
        let list = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!selected("MPI_Send", &[], &[]), "neither list: nothing");
        assert!(selected("MPI_Send", &list(&["MPI_Send"]), &[]));
        assert!(!selected("MPI_Recv", &list(&["MPI_Send"]), &[]));
        assert!(selected("MPI_Recv", &list(&["all"]), &[]));
        assert!(selected("MPI_Recv", &[], &list(&["MPI_Send"])), "blacklist only: all but those");
        assert!(!selected("MPI_Send", &[], &list(&["MPI_Send"])));
        assert!(!selected("MPI_Send", &list(&["all"]), &list(&["MPI_Send"])), "both: white minus black");
    }
}
