//! `perf_topdown`: Intel's top-down microarchitecture analysis through the
//! kernel's perf metrics (Ice Lake and later): each thread counts the
//! `slots` event with the `topdown-*` metric events in one group, and
//! every snapshot adds the share of the slots since the thread's previous
//! snapshot that went to each top-down category, in percent:
//! `topdown.retiring`, `topdown.bad_spec`, `topdown.fe_bound`,
//! `topdown.be_bound`, and with `CALI_PERF_TOPDOWN_LEVEL=all` the second
//! level (`topdown.heavy_ops`, `topdown.light_ops`, `topdown.br_mispred`,
//! `topdown.machine_clears`, `topdown.fetch_lat`, `topdown.fetch_bw`,
//! `topdown.mem_bound`, `topdown.core_bound`); the slot counts themselves
//! as `topdown.slots` and `topdown.<category>.slots`.
//!
//! The events are found by name where the kernel describes the processor's
//! PMU (`/sys/bus/event_source/devices/cpu` or `cpu_core`: its `type`, its
//! `events/` and the bit layout of their terms in `format/`). A processor
//! or virtual machine without them gets a one-line message and no
//! top-down metrics; the program and the rest of its profile are not
//! affected.

use super::perf_events::{CounterGroup, EXCLUDE_HV, EXCLUDE_KERNEL, EventCode, Mode, open};
use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::log;
use crate::service::{Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties};
use std::path::Path;
use std::sync::Arc;

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "perf_topdown",
    aliases: &[],
    description: "Top-down microarchitecture analysis (Intel perf metrics): topdown.* shares of the slots per snapshot",
    stage: Stage::Other,
    settings: &[SettingSpec {
        key: "level",
        kind: SettingKind::String,
        default: "top",
        description: "top: the four top-level categories; all: the second level too",
    }],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Topdown::new(setup, Path::new(PMU_DEVICES)).map(|s| Created::Service(Arc::new(s)))
    },
};

/// Where the kernel describes the PMUs.
const PMU_DEVICES: &str = "/sys/bus/event_source/devices";

/// The events read, in group order: `slots` leads, then the top level,
/// then the second level (read only at level `all`).
const SLOTS: &str = "slots";
const TOP_LEVEL: [&str; 4] = ["topdown-retiring", "topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound"];
const SECOND_LEVEL: [&str; 4] =
    ["topdown-heavy-ops", "topdown-br-mispredict", "topdown-fetch-lat", "topdown-mem-bound"];

/// A top-down category: its name, and how its slots come from the counts
/// of the group (index into the events read, or a parent minus a child).
#[derive(Clone, Copy)]
enum Share {
    Event(usize),
    Difference(usize, usize),
}

/// The categories, as (name, share); event indices count from the first
/// metric event (after `slots`).
const TOP_CATEGORIES: [(&str, Share); 4] = [
    ("retiring", Share::Event(0)),
    ("bad_spec", Share::Event(1)),
    ("fe_bound", Share::Event(2)),
    ("be_bound", Share::Event(3)),
];
const SECOND_CATEGORIES: [(&str, Share); 8] = [
    ("heavy_ops", Share::Event(4)),
    ("light_ops", Share::Difference(0, 4)),
    ("br_mispred", Share::Event(5)),
    ("machine_clears", Share::Difference(1, 5)),
    ("fetch_lat", Share::Event(6)),
    ("fetch_bw", Share::Difference(2, 6)),
    ("mem_bound", Share::Event(7)),
    ("core_bound", Share::Difference(3, 7)),
];

struct Topdown {
    /// `slots` and the metric events, in group order.
    events: Vec<EventCode>,
    flags: u64,
    slots: Attribute,
    /// Per category: its share, its percentage and its slot-count attributes.
    categories: Vec<(Share, Attribute, Attribute)>,
}

impl Topdown {
    fn new(setup: &Setup<'_>, devices: &Path) -> Result<Topdown, NotCreated> {
        let all = match setup.settings.text("level").as_str() {
            "top" => false,
            "all" => true,
            other => {
                log::error(format_args!("perf_topdown: invalid level \"{other}\" (top or all)"));
                return Err(NotCreated::BadSettings);
            }
        };
        let names: Vec<&str> = std::iter::once(SLOTS)
            .chain(TOP_LEVEL)
            .chain(if all { &SECOND_LEVEL[..] } else { &[][..] }.iter().copied())
            .collect();
        let events = match find_events(devices, &names) {
            Ok(events) => events,
            Err(why) => {
                log::error(format_args!("perf_topdown: {why}; no top-down metrics"));
                return Err(NotCreated::BadSettings);
            }
        };
        let flags = match open_flags(&events) {
            Ok(flags) => flags,
            Err(e) => {
                log::error(format_args!(
                    "perf_topdown: the kernel refuses the top-down events ({e}); no top-down metrics"
                ));
                return Err(NotCreated::BadSettings);
            }
        };
        let counts = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
        let shares = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let categories = TOP_CATEGORIES
            .iter()
            .chain(if all { &SECOND_CATEGORIES[..] } else { &[][..] })
            .map(|&(name, share)| {
                let percent = setup.cali.create_attribute(&format!("topdown.{name}"), AttrType::Double, shares, &[]);
                let slots = setup.cali.create_attribute(&format!("topdown.{name}.slots"), AttrType::Uint, counts, &[]);
                (share, percent, slots)
            })
            .collect();
        let slots = setup.cali.create_attribute("topdown.slots", AttrType::Uint, counts, &[]);
        Ok(Topdown { events, flags, slots, categories })
    }
}

/// The flags the group opens with on this machine: user and kernel, or
/// user only where the kernel allows no more.
fn open_flags(events: &[EventCode]) -> std::io::Result<u64> {
    let count = Mode::Count { group: -1 };
    match open(events[0], count, EXCLUDE_HV, 0) {
        Ok(_) => Ok(EXCLUDE_HV),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            open(events[0], count, EXCLUDE_HV | EXCLUDE_KERNEL, 0).map(|_| EXCLUDE_HV | EXCLUDE_KERNEL)
        }
        Err(e) => Err(e),
    }
}

/// The codes of the events `names` on the processor's PMU under
/// `devices`, or why they cannot be had.
fn find_events(devices: &Path, names: &[&str]) -> Result<Vec<EventCode>, String> {
    let pmu = ["cpu_core", "cpu"]
        .iter()
        .map(|name| devices.join(name))
        .find(|dir| dir.join("events").join(SLOTS).exists())
        .ok_or("this processor has no top-down events (Intel Ice Lake or later with a PMU the kernel exposes)")?;
    let kind = read(&pmu.join("type"))?.trim().parse::<u32>().map_err(|e| format!("{}/type: {e}", pmu.display()))?;
    names
        .iter()
        .map(|name| {
            let spec = read(&pmu.join("events").join(name))?;
            let config = encode(&pmu, spec.trim()).map_err(|e| format!("event {name} (\"{}\"): {e}", spec.trim()))?;
            Ok(EventCode { kind, config })
        })
        .collect()
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The `config` value of an event description such as
/// `event=0x00,umask=0x81`: each term's value put into the bits its
/// `format/<term>` file gives (e.g. `config:8-15`, or several ranges
/// filled low bits first). A term without a value is 1.
fn encode(pmu: &Path, spec: &str) -> Result<u64, String> {
    let mut config = 0u64;
    for term in spec.split(',').filter(|t| !t.is_empty()) {
        let (name, value) = term.split_once('=').unwrap_or((term, "1"));
        let value = parse_number(value).ok_or_else(|| format!("bad value in \"{term}\""))?;
        let layout = read(&pmu.join("format").join(name))?;
        config |= place(layout.trim(), value).ok_or_else(|| format!("unsupported format \"{}\"", layout.trim()))?;
    }
    Ok(config)
}

fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `value` spread over the bit ranges of a `config:` layout (`config:0-7`,
/// `config:21`, `config:0-7,32-35`); `None` for other fields (`config1:`).
fn place(layout: &str, mut value: u64) -> Option<u64> {
    let ranges = layout.strip_prefix("config:")?;
    let mut out = 0u64;
    for range in ranges.split(',') {
        let (lo, hi) = match range.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?),
            None => (range.parse::<u32>().ok()?, range.parse::<u32>().ok()?),
        };
        if lo > hi || hi > 63 {
            return None;
        }
        let width = hi - lo + 1;
        let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
        out |= (value & mask) << lo;
        value = value.checked_shr(width).unwrap_or(0);
    }
    Some(out)
}

impl Service for Topdown {
    fn name(&self) -> &'static str {
        "perf_topdown"
    }

    fn measures(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(TopdownThread {
            group: CounterGroup::open(&self.events, self.flags, 0),
            counts: vec![0; self.events.len()],
            slots: self.slots,
            categories: self.categories.clone(),
        })
    }
}

/// A thread's group, and room for one read of it.
struct TopdownThread {
    group: CounterGroup,
    /// The counts since the previous snapshot, `slots` first.
    counts: Vec<u64>,
    slots: Attribute,
    categories: Vec<(Share, Attribute, Attribute)>,
}

impl ThreadService for TopdownThread {
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, _trigger: &Trigger) {
        self.counts.fill(0);
        for (i, delta) in self.group.deltas() {
            self.counts[i] = delta;
        }
        let (slots, metrics) = self.counts.split_first().expect("slots leads the group");
        snapshot.push_value(self.slots.id(), ValueKey::uint(*slots));
        for &(share, percent, slots) in &self.categories {
            let (n, of_whole) = share.of(metrics);
            snapshot.push_value(slots.id(), ValueKey::uint(n));
            if let Some(p) = of_whole {
                snapshot.push_value(percent.id(), ValueKey::double(p));
            }
        }
    }
}

impl Share {
    /// The category's slots among the metric counts `metrics` (in group
    /// order after `slots`), and their percentage of all slots (none if
    /// no slot passed). The kernel splits the slots among the top-level
    /// categories; their sum is the whole even where rounding leaves it off
    /// `slots` by one.
    fn of(self, metrics: &[u64]) -> (u64, Option<f64>) {
        let n = match self {
            Share::Event(i) => metrics[i],
            Share::Difference(parent, child) => metrics[parent].saturating_sub(metrics[child]),
        };
        let whole: u64 = metrics.iter().take(TOP_LEVEL.len()).sum();
        (n, (whole > 0).then(|| 100.0 * n as f64 / whole as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A PMU description as the kernel writes it for an Ice Lake core.
    fn fake_pmu(root: &Path) -> PathBuf {
        let pmu = root.join("cpu");
        std::fs::create_dir_all(pmu.join("events")).unwrap();
        std::fs::create_dir_all(pmu.join("format")).unwrap();
        std::fs::write(pmu.join("type"), "4\n").unwrap();
        std::fs::write(pmu.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(pmu.join("format/umask"), "config:8-15\n").unwrap();
        std::fs::write(pmu.join("format/any"), "config:21\n").unwrap();
        std::fs::write(pmu.join("format/offcore"), "config1:0-63\n").unwrap();
        std::fs::write(pmu.join("events/slots"), "event=0x00,umask=0x4\n").unwrap();
        for (i, name) in TOP_LEVEL.iter().chain(&SECOND_LEVEL).enumerate() {
            std::fs::write(pmu.join("events").join(name), format!("event=0x00,umask=0x{:x}\n", 0x80 + i)).unwrap();
        }
        pmu
    }

    #[test]
    fn events_are_encoded_from_the_kernels_pmu_description() {
        let root = tempfile::tempdir().unwrap();
        let pmu = fake_pmu(root.path());
        let events = find_events(root.path(), &[SLOTS, "topdown-bad-spec", "topdown-mem-bound"]).unwrap();
        let configs: Vec<(u32, u64)> = events.iter().map(|e| (e.kind, e.config)).collect();
        assert_eq!(configs, [(4, 0x0400), (4, 0x8100), (4, 0x8700)]);
        assert_eq!(encode(&pmu, "event=0xc0,umask=0x01,any").unwrap(), 0x2001c0);
        assert!(encode(&pmu, "offcore=0x1").unwrap_err().contains("unsupported format"));
        assert!(encode(&pmu, "event=zz").unwrap_err().contains("bad value"));
        assert!(encode(&pmu, "nosuchterm=1").is_err());
    }

    #[test]
    fn the_categories_share_the_slots_of_the_top_level() {
        // retiring, bad speculation, front end, back end; then heavy ops,
        // branch mispredictions, fetch latency, memory bound.
        let metrics = [400, 100, 200, 300, 150, 60, 120, 250];
        let shares: Vec<(&str, u64, f64)> = TOP_CATEGORIES
            .iter()
            .chain(&SECOND_CATEGORIES)
            .map(|&(name, share)| {
                let (n, p) = share.of(&metrics);
                (name, n, p.unwrap())
            })
            .collect();
        let expected = [
            ("retiring", 400, 40.0),
            ("bad_spec", 100, 10.0),
            ("fe_bound", 200, 20.0),
            ("be_bound", 300, 30.0),
            ("heavy_ops", 150, 15.0),
            ("light_ops", 250, 25.0),
            ("br_mispred", 60, 6.0),
            ("machine_clears", 40, 4.0),
            ("fetch_lat", 120, 12.0),
            ("fetch_bw", 80, 8.0),
            ("mem_bound", 250, 25.0),
            ("core_bound", 50, 5.0),
        ];
        assert_eq!(shares, expected);
        assert_eq!(Share::Event(0).of(&[0; 8]), (0, None));
    }

    #[test]
    fn a_value_spreads_over_split_bit_ranges() {
        assert_eq!(place("config:0-7,32-35", 0x3ff), Some(0x3_0000_00ff));
        assert_eq!(place("config:63", 1), Some(1 << 63));
        assert_eq!(place("config:0-63", u64::MAX), Some(u64::MAX));
        assert_eq!(place("config:8-4", 1), None);
        assert_eq!(place("config2:0-7", 1), None);
    }

    #[test]
    fn a_processor_without_top_down_events_says_so() {
        let root = tempfile::tempdir().unwrap();
        let why = find_events(root.path(), &[SLOTS]).unwrap_err();
        assert!(why.contains("no top-down events"), "{why}");
        let pmu = fake_pmu(root.path());
        std::fs::remove_file(pmu.join("events/topdown-fe-bound")).unwrap();
        let why = find_events(root.path(), &[SLOTS, "topdown-fe-bound"]).unwrap_err();
        assert!(why.contains("topdown-fe-bound"), "{why}");
    }
}
