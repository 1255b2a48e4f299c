//! Reading an event trace as a timeline, for the formatters that lay it
//! out in time (`trace-event`, `perfetto`).
//!
//! Each record of an event trace is one moment of one thread: where it
//! happened (the process and thread, from the `pid-attributes` and
//! `tid-attributes`, as the reference's `cali2traceevent.py` takes them:
//! `mpi.rank`, then `omp.thread.id` and `pthread.id`; 0 without them),
//! when (`time.offset.ns`), which regions began and ended there
//! (`event.begin#A`, `event.end#A`, and `event.set#A`, which ends the open
//! value of `A` and begins the new one), and the numbers it carries.
//! Records without a time are no moment and are skipped.
//!
//! A CUDA program traced with its device's activities (`cuda.activities`)
//! has two more kinds: host records stamped in CUPTI's clock
//! (`cupti.timestamp`, which then is their time, as it is the clock of
//! the activities), and activity records (`cupti.activity.start` and
//! `.end`), which are device work, not a thread's moment.

use crate::spec::FormatSpec;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Properties, Record, Variant};

/// The reference converter's process attributes.
const PID_ATTRIBUTES: &[&str] = &["mpi.rank"];
/// The reference converter's thread attributes.
const TID_ATTRIBUTES: &[&str] = &["omp.thread.id", "pthread.id"];
/// The attribute holding a record's time since the start, in nanoseconds.
const TIME_ATTRIBUTE: &str = "time.offset.ns";
/// The attribute holding a host record's time in CUPTI's clock (ns).
const CUPTI_TIME_ATTRIBUTE: &str = "cupti.timestamp";
/// The names of device work, best first: a kernel's, a copy's direction
/// (else the activity's kind names it).
const DEVICE_NAME_ATTRIBUTES: &[&str] = &["cupti.kernel.name", "cupti.memcpy.kind"];

/// The index of a region attribute (`region`, `loop`, ...) among those a
/// timeline has met: the name of `event.begin#region` minus its prefix.
/// (By name, not id: a stream may define the attribute after the records
/// that use it.)
pub(crate) type Target = usize;

/// A region that began or ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Mark {
    /// Region attribute `attr` took `value`.
    Begin { attr: Target, value: Variant },
    /// `attr`'s innermost value ended; `value` names it.
    End { attr: Target, value: Variant },
}

/// One record read as a moment of a thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct Moment {
    /// The process: the first pid attribute's value, else 0.
    pub pid: i64,
    /// The attribute `pid` came from, if any.
    pub pid_attr: Option<Id>,
    /// The thread: the first tid attribute's value, else 0.
    pub tid: i64,
    /// The attribute `tid` came from, if any.
    pub tid_attr: Option<Id>,
    /// The time since the start, in nanoseconds.
    pub time_ns: u64,
    /// The regions that began and ended, in the record's order.
    pub marks: Vec<Mark>,
    /// The record's counter values: attribute and number.
    pub counters: Vec<(Id, f64)>,
    /// The device work the record describes, if it is an activity record
    /// (its time is then the work's start).
    pub device: Option<DeviceWork>,
}

/// Work a device did (a kernel, a copy), in CUPTI's clock.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeviceWork {
    /// The kernel's name, the copy's direction, or the activity's kind.
    pub name: Variant,
    /// The activity's kind (`kernel`, `memcpy`), its category.
    pub kind: Variant,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The stream it ran on (`cupti.streamID`): work on one stream runs
    /// in order, on several at once.
    pub stream: i64,
}

/// What an attribute means in a timeline.
#[derive(Copy, Clone, Debug)]
enum Role {
    Begin(Target),
    End(Target),
    Set(Target),
    /// A process attribute, with its rank among them (lower wins).
    Pid(usize),
    /// A thread attribute, with its rank among them.
    Tid(usize),
    Time,
    /// A host record's time in CUPTI's clock.
    CuptiTime,
    DeviceStart,
    DeviceEnd,
    DeviceStream,
    /// A name of device work, with its rank among them.
    DeviceName(usize),
    /// The kind of device work (`kernel`, `memcpy`).
    DeviceKind,
    Counter,
    Other,
}

/// Which numeric attributes are counters.
#[derive(Clone, Debug)]
enum Counters {
    /// Every measurement: numeric immediate attributes with the
    /// `aggregatable` property (what the measuring services record, such
    /// as `memstat.vmrss`, `libpfm.counter.*` or `io.bytes.read`), but the
    /// timer's (`time.*`, which the slices show) and `region.count`.
    Measurements,
    /// Those named in the `counters` argument (none if it is empty).
    Named(Vec<String>),
}

/// Reads records as moments, remembering each attribute's role.
pub(crate) struct Timeline {
    pid_attributes: Vec<String>,
    tid_attributes: Vec<String>,
    counters: Counters,
    roles: FxHashMap<Id, Role>,
    /// The region attributes' names, by [`Target`].
    targets: Vec<String>,
    path: Vec<Id>,
}

impl Timeline {
    /// A timeline reader for a FORMAT's arguments: `pid-attributes` and
    /// `tid-attributes` add attributes after the reference's own,
    /// `counters` names the counter attributes; `default_counters` says
    /// whether measurements are counters when it is not given.
    pub(crate) fn new(format: &FormatSpec, default_counters: bool) -> Timeline {
        let with_builtin = |builtin: &[&str], arg: &str| -> Vec<String> {
            builtin.iter().map(|s| s.to_string()).chain(list_arg(format, arg).unwrap_or_default()).collect()
        };
        let counters = match list_arg(format, "counters") {
            Some(names) => Counters::Named(names),
            None if default_counters => Counters::Measurements,
            None => Counters::Named(Vec::new()),
        };
        Timeline {
            pid_attributes: with_builtin(PID_ATTRIBUTES, "pid-attributes"),
            tid_attributes: with_builtin(TID_ATTRIBUTES, "tid-attributes"),
            counters,
            roles: FxHashMap::default(),
            targets: Vec::new(),
            path: Vec::new(),
        }
    }

    /// Reads `record` into `moment`; false if it has no time.
    pub(crate) fn read(&mut self, db: &MetadataDb, record: &Record, moment: &mut Moment) -> bool {
        moment.marks.clear();
        moment.counters.clear();
        let mut place = Place::default();
        let mut path = std::mem::take(&mut self.path);
        for node in record.refs() {
            path.clear();
            db.path_to(node, &mut path);
            for &id in &path {
                let Some(n) = db.node(id) else { continue };
                self.take(db, n.attribute, &n.value, false, moment, &mut place);
            }
        }
        self.path = path;
        for (attr, value) in record.immediates() {
            self.take(db, attr, value, true, moment, &mut place);
        }
        (moment.pid, moment.pid_attr) = (place.pid.value, place.pid.attr);
        (moment.tid, moment.tid_attr) = (place.tid.value, place.tid.attr);
        moment.device = match (place.device_start, place.device_end) {
            (Some(start_ns), Some(end_ns)) => Some(DeviceWork {
                name: match place.device_name.rank {
                    Some(_) => place.device_name.value.clone(),
                    None => place.device_kind.clone(),
                },
                kind: place.device_kind.clone(),
                start_ns,
                end_ns,
                stream: place.device_stream.unwrap_or(0),
            }),
            _ => None,
        };
        let device_start = moment.device.as_ref().map(|d| d.start_ns);
        match device_start.or(place.cupti_ns).or(place.time_ns) {
            Some(t) => {
                moment.time_ns = t;
                true
            }
            None => false,
        }
    }

    /// Files one (attribute, value) entry of a record into the moment, or
    /// into where and when it happened.
    fn take(
        &mut self,
        db: &MetadataDb,
        attr: Id,
        value: &Variant,
        immediate: bool,
        moment: &mut Moment,
        place: &mut Place,
    ) {
        match self.role(db, attr) {
            Role::Begin(target) => moment.marks.push(Mark::Begin { attr: target, value: value.clone() }),
            Role::End(target) => moment.marks.push(Mark::End { attr: target, value: value.clone() }),
            Role::Set(target) => {
                moment.marks.push(Mark::End { attr: target, value: value.clone() });
                moment.marks.push(Mark::Begin { attr: target, value: value.clone() });
            }
            Role::Pid(rank) => place.pid.offer(rank, attr, value),
            Role::Tid(rank) => place.tid.offer(rank, attr, value),
            Role::Time => place.time_ns = value.to_u64(),
            Role::CuptiTime => place.cupti_ns = value.to_u64(),
            Role::DeviceStart => place.device_start = value.to_u64(),
            Role::DeviceEnd => place.device_end = value.to_u64(),
            Role::DeviceStream => place.device_stream = value.to_i64(),
            Role::DeviceName(rank) => place.device_name.offer(rank, value),
            Role::DeviceKind => place.device_kind = value.clone(),
            Role::Counter if immediate => {
                if let Some(number) = value.to_f64() {
                    moment.counters.push((attr, number));
                }
            }
            Role::Counter | Role::Other => {}
        }
    }

    fn role(&mut self, db: &MetadataDb, attr: Id) -> Role {
        if let Some(role) = self.roles.get(&attr) {
            return *role;
        }
        let role = self.classify(db, attr);
        self.roles.insert(attr, role);
        role
    }

    /// The name of a region attribute.
    pub(crate) fn target_name(&self, target: Target) -> &str {
        &self.targets[target]
    }

    /// The [`Target`] of `name` (a region attribute, or a kind of device
    /// work), made on first use.
    pub(crate) fn target(&mut self, name: &str) -> Target {
        match self.targets.iter().position(|t| t == name) {
            Some(t) => t,
            None => {
                self.targets.push(name.to_string());
                self.targets.len() - 1
            }
        }
    }

    fn classify(&mut self, db: &MetadataDb, attr: Id) -> Role {
        let Some(a) = db.attribute(attr) else { return Role::Other };
        let name = a.name();
        let measurement = a.attr_type().is_numeric() && a.properties().contains(Properties::AGGREGATABLE);
        if let Some(t) = name.strip_prefix("event.begin#") {
            return Role::Begin(self.target(t));
        }
        if let Some(t) = name.strip_prefix("event.end#") {
            return Role::End(self.target(t));
        }
        if let Some(t) = name.strip_prefix("event.set#") {
            return Role::Set(self.target(t));
        }
        if let Some(rank) = self.pid_attributes.iter().position(|p| *p == name) {
            return Role::Pid(rank);
        }
        if let Some(rank) = self.tid_attributes.iter().position(|t| *t == name) {
            return Role::Tid(rank);
        }
        match name {
            TIME_ATTRIBUTE => return Role::Time,
            CUPTI_TIME_ATTRIBUTE => return Role::CuptiTime,
            "cupti.activity.start" => return Role::DeviceStart,
            "cupti.activity.end" => return Role::DeviceEnd,
            "cupti.streamID" => return Role::DeviceStream,
            "cupti.activity.kind" => return Role::DeviceKind,
            _ => {}
        }
        if let Some(rank) = DEVICE_NAME_ATTRIBUTES.iter().position(|d| *d == name) {
            return Role::DeviceName(rank);
        }
        let counter = match &self.counters {
            Counters::Named(names) => names.iter().any(|n| n == name),
            Counters::Measurements => measurement && !name.starts_with("time.") && name != "region.count",
        };
        if counter { Role::Counter } else { Role::Other }
    }
}

/// Where and when a record happened, as its entries are read.
#[derive(Default)]
struct Place {
    pid: Ranked,
    tid: Ranked,
    time_ns: Option<u64>,
    cupti_ns: Option<u64>,
    device_start: Option<u64>,
    device_end: Option<u64>,
    device_stream: Option<i64>,
    device_name: RankedName,
    device_kind: Variant,
}

/// The best-ranked name of device work seen in a record.
#[derive(Default)]
struct RankedName {
    rank: Option<usize>,
    value: Variant,
}

impl RankedName {
    fn offer(&mut self, rank: usize, value: &Variant) {
        if self.rank.is_none_or(|r| rank < r) {
            self.rank = Some(rank);
            self.value = value.clone();
        }
    }
}

/// The value of the best-ranked attribute of a list seen in a record.
#[derive(Default)]
struct Ranked {
    rank: Option<usize>,
    attr: Option<Id>,
    value: i64,
}

impl Ranked {
    fn offer(&mut self, rank: usize, attr: Id, value: &Variant) {
        if self.rank.is_some_and(|r| r <= rank) {
            return;
        }
        if let Some(v) = value.to_i64() {
            self.rank = Some(rank);
            self.attr = Some(attr);
            self.value = v;
        }
    }
}

/// A comma-separated list argument, if given.
fn list_arg(format: &FormatSpec, name: &str) -> Option<Vec<String>> {
    format.arg(name).map(|list| list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Formatter;
    use caliper_data::AttrType;

    fn db_with(attrs: &[(&str, AttrType)]) -> (MetadataDb, Vec<Id>) {
        let mut db = MetadataDb::new();
        let ids = attrs.iter().map(|&(name, ty)| db.create_attribute(name, ty, Properties::ASVALUE, &[])).collect();
        (db, ids)
    }

    #[test]
    fn a_set_event_ends_the_open_value_and_begins_the_new_one() {
        let (db, ids) = db_with(&[("event.set#phase", AttrType::String), ("time.offset.ns", AttrType::Uint)]);
        let mut record = Record::ctx();
        record.push_imm(ids[0], Variant::string("solve"));
        record.push_imm(ids[1], Variant::Uint(5));
        let mut timeline = Timeline::new(&FormatSpec::new(Formatter::TraceEvent), false);
        let mut moment = Moment::default();
        assert!(timeline.read(&db, &record, &mut moment));
        let solve = Variant::string("solve");
        assert_eq!(moment.marks, [Mark::End { attr: 0, value: solve.clone() }, Mark::Begin { attr: 0, value: solve }]);
        assert_eq!((timeline.target_name(0), moment.time_ns), ("phase", 5));
    }

    #[test]
    fn the_first_thread_attribute_of_the_list_wins_and_records_without_time_are_no_moment() {
        let (db, ids) =
            db_with(&[("pthread.id", AttrType::Uint), ("omp.thread.id", AttrType::Int), ("my.worker", AttrType::Int)]);
        let mut record = Record::ctx();
        record.push_imm(ids[0], Variant::Uint(99));
        record.push_imm(ids[1], Variant::Int(3));
        record.push_imm(ids[2], Variant::Int(8));
        let mut format = FormatSpec::new(Formatter::Perfetto);
        format.args.push(("tid-attributes".to_string(), "my.worker".to_string()));
        let mut timeline = Timeline::new(&format, true);
        let mut moment = Moment::default();
        assert!(!timeline.read(&db, &record, &mut moment), "no time.offset.ns");
        assert_eq!((moment.tid, moment.tid_attr, moment.pid, moment.pid_attr), (3, Some(ids[1]), 0, None));
    }
}
