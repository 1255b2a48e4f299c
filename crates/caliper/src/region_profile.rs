//! Region profiles read from inside the program (the reference's
//! `cali::RegionProfile`): a channel of its own aggregates the time spent
//! in each region while the profile is started, and the program asks for
//! the times per region name whenever it likes, to steer its own work or
//! print its own summary, with no output file or report involved.
//!
//! Times are flat: nested regions of the same name are merged into one
//! entry. Exclusive times count a snapshot's time for its innermost
//! region only; inclusive times count it for every region on its path,
//! once per name (a region nested in itself is not counted twice).

use crate::channel::Channel;
use crate::config::RuntimeConfig;
use crate::runtime::Caliper;
use crate::sync;
use caliper_data::{Id, NodeStore, Properties, Record};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The profile channel's settings: region times aggregated per region
/// path, nothing written at exit (the program reads the profile itself).
const SETTINGS: &[(&str, &str)] = &[
    ("CALI_SERVICES_ENABLE", "aggregate,event,timer"),
    ("CALI_EVENT_ENABLE_SNAPSHOT_INFO", "false"),
    ("CALI_CHANNEL_FLUSH_ON_EXIT", "false"),
    ("CALI_CHANNEL_CONFIG_CHECK", "false"),
];

/// The aggregated time attribute the profile reads.
const DURATION: &str = "sum#time.duration.ns";

/// Seconds per nanosecond.
const NS: f64 = 1e-9;

/// Region times in seconds, as the reference's `RegionProfile` returns
/// them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionTimes {
    /// Seconds per region name.
    pub times: BTreeMap<String, f64>,
    /// Seconds spent inside at least one of the selected regions.
    pub total_region_time: f64,
    /// Seconds the profile measured, in regions or not.
    pub total_profiling_time: f64,
}

/// Exclusive or inclusive times.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Times {
    /// A snapshot's time goes to its innermost region.
    Exclusive,
    /// A snapshot's time goes to every region on its path.
    Inclusive,
}

/// A region profile. Its channel is created on the first
/// [`start`](RegionProfile::start) and deleted with the profile.
pub struct RegionProfile {
    channel: Mutex<Option<Arc<Channel>>>,
}

impl Default for RegionProfile {
    fn default() -> Self {
        RegionProfile::new()
    }
}

impl RegionProfile {
    /// A profile that measures nothing until started.
    pub fn new() -> RegionProfile {
        RegionProfile { channel: Mutex::new(None) }
    }

    /// Starts measuring (creating the channel the first time).
    pub fn start(&self) {
        let Some(cali) = Caliper::instance() else { return };
        let channel = sync::lock(&self.channel)
            .get_or_insert_with(|| {
                let config = RuntimeConfig::from_pairs(SETTINGS.iter().copied(), false);
                cali.create_channel("region-profile", config)
            })
            .clone();
        cali.set_channel_active(&channel, true);
    }

    /// Stops measuring; the times gathered so far stay.
    pub fn stop(&self) {
        if let (Some(cali), Some(channel)) = (Caliper::instance(), self.channel()) {
            cali.set_channel_active(&channel, false);
        }
    }

    /// Forgets the times gathered so far.
    pub fn clear(&self) {
        if let (Some(cali), Some(channel)) = (Caliper::instance(), self.channel()) {
            cali.clear(&channel);
        }
    }

    /// Whether the profile measures now.
    pub fn is_active(&self) -> bool {
        self.channel().is_some_and(|c| c.is_active())
    }

    /// The times per region of the attribute named `region_type`, or of
    /// every nested attribute (`region`, `phase`, `loop`, ...) if it is
    /// empty. An attribute that does not exist has no regions: its times
    /// are empty, and only the total profiling time counts.
    pub fn region_times(&self, region_type: &str, times: Times) -> RegionTimes {
        let (Some(cali), Some(channel)) = (Caliper::instance(), self.channel()) else {
            return RegionTimes::default();
        };
        let mut records = Vec::new();
        cali.flush(&channel, &mut |r| records.push(r.clone()));
        // Created by the first flush that has a time to report.
        let Some(duration) = cali.find_attribute(DURATION) else { return RegionTimes::default() };
        let wanted = (!region_type.is_empty()).then(|| cali.find_attribute(region_type).map(|a| a.id()));
        let is_region = |id: Id| match wanted {
            Some(wanted) => wanted == Some(id),
            None => cali.attribute_info(id).is_some_and(|i| i.attr.properties().contains(Properties::NESTED)),
        };
        collect(cali.tree(), &records, &is_region, duration.id(), times)
    }

    fn channel(&self) -> Option<Arc<Channel>> {
        sync::lock(&self.channel).clone()
    }
}

impl Drop for RegionProfile {
    fn drop(&mut self) {
        if let (Some(cali), Some(channel)) = (Caliper::instance(), self.channel()) {
            cali.delete_channel(&channel);
        }
    }
}

/// Adds up the `duration` (nanoseconds) of `records` per region name;
/// a region is a node whose attribute `is_region` accepts.
fn collect(
    tree: &dyn NodeStore,
    records: &[Record],
    is_region: &dyn Fn(Id) -> bool,
    duration: Id,
    times: Times,
) -> RegionTimes {
    let mut out = RegionTimes::default();
    let mut names: Vec<String> = Vec::new();
    for record in records {
        let Some(ns) = record.immediates().find(|(a, _)| *a == duration).and_then(|(_, v)| v.to_f64()) else {
            continue;
        };
        let seconds = ns * NS;
        out.total_profiling_time += seconds;
        names.clear();
        for leaf in record.refs() {
            let mut next = Some(leaf);
            while let Some(node) = next.and_then(|id| tree.node(id)) {
                if is_region(node.attribute) {
                    let name = node.value.to_string();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                next = node.parent;
            }
        }
        // Innermost first: the exclusive time goes to the first name found.
        let counted = match times {
            Times::Exclusive => &names[..names.len().min(1)],
            Times::Inclusive => &names[..],
        };
        for name in counted {
            *out.times.entry(name.clone()).or_default() += seconds;
        }
        if !names.is_empty() {
            out.total_region_time += seconds;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::{Node, NodeRef, Variant};

    /// Nodes 0..: (attribute, value, parent).
    struct Tree(Vec<Node>);

    impl NodeStore for Tree {
        fn node(&self, id: Id) -> Option<NodeRef<'_>> {
            self.0.get(id as usize).map(NodeRef::from)
        }
    }

    const REGION: Id = 100;
    const PHASE: Id = 101;
    const ITER: Id = 102;
    const DUR: Id = 103;

    fn node(attribute: Id, value: &str, parent: Option<Id>) -> Node {
        Node { attribute, value: Variant::string(value), parent }
    }

    /// main (0) > solve (1) > main (2); phase=setup (3) > main (4);
    /// iteration node (5) under 1.
    fn tree() -> Tree {
        Tree(vec![
            node(REGION, "main", None),
            node(REGION, "solve", Some(0)),
            node(REGION, "main", Some(1)),
            node(PHASE, "setup", None),
            node(REGION, "main", Some(3)),
            Node { attribute: ITER, value: Variant::Int(3), parent: Some(1) },
        ])
    }

    fn record(nodes: &[Id], ns: u64) -> Record {
        let mut r = Record::ctx();
        for n in nodes {
            r.push_ref(*n);
        }
        r.push_imm(DUR, Variant::Uint(ns));
        r
    }

    fn records() -> Vec<Record> {
        vec![
            record(&[0], 1_000_000_000),
            record(&[1], 2_000_000_000),
            record(&[2], 4_000_000_000),
            record(&[4], 8_000_000_000),
            record(&[5], 16_000_000_000),
            record(&[], 32_000_000_000),
            // No duration: not counted at all.
            {
                let mut r = Record::ctx();
                r.push_ref(1);
                r
            },
        ]
    }

    fn times(list: &[(&str, f64)]) -> BTreeMap<String, f64> {
        list.iter().map(|(n, t)| (n.to_string(), *t)).collect()
    }

    #[test]
    fn exclusive_times_go_to_the_innermost_region_of_the_kind() {
        let nested = |a: Id| a == REGION || a == PHASE;
        let p = collect(&tree(), &records(), &nested, DUR, Times::Exclusive);
        assert_eq!(p.times, times(&[("main", 13.0), ("solve", 18.0)]));
        assert_eq!((p.total_region_time, p.total_profiling_time), (31.0, 63.0));

        let phases = |a: Id| a == PHASE;
        let p = collect(&tree(), &records(), &phases, DUR, Times::Exclusive);
        assert_eq!(p.times, times(&[("setup", 8.0)]));
        assert_eq!((p.total_region_time, p.total_profiling_time), (8.0, 63.0));
    }

    #[test]
    fn inclusive_times_count_each_name_on_the_path_once() {
        let regions = |a: Id| a == REGION;
        let p = collect(&tree(), &records(), &regions, DUR, Times::Inclusive);
        // main: 1 + 2 + 4 (once, though nested in itself) + 8 + 16.
        assert_eq!(p.times, times(&[("main", 31.0), ("solve", 22.0)]));
        assert_eq!((p.total_region_time, p.total_profiling_time), (31.0, 63.0));
    }

    #[test]
    fn no_region_attribute_leaves_only_the_total() {
        let p = collect(&tree(), &records(), &|_| false, DUR, Times::Inclusive);
        assert!(p.times.is_empty());
        assert_eq!((p.total_region_time, p.total_profiling_time), (0.0, 63.0));
    }
}
