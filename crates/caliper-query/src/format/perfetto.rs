//! `perfetto`: an event trace as a native Perfetto trace (protobuf
//! `Trace` of `TracePacket`s), which the Perfetto UI and trace processor
//! load directly.
//!
//! Each process of the timeline gets a process track and each of its
//! threads a thread track, named after the attribute that told them apart
//! (`mpi.rank=3`, `pthread.id=1402...`); Perfetto's pid and tid are numbers
//! given in order of appearance, as the timeline's may be 0 (Perfetto's
//! idle task) or wider than 32 bits. Regions are slices on their thread's
//! track (`TYPE_SLICE_BEGIN`/`END`, the value as the name, the region
//! attribute as the category), measurements counters on counter tracks
//! under the thread. A CUDA trace's device work (`cuda.activities`) is
//! slices on a track per stream under the process (`cuda stream 7`), named
//! as the kernel or the copy's direction. Names and categories are
//! interned, so a begin or end of a known region takes about 21 bytes.
//!
//! Streaming: each record becomes packets as it arrives; memory holds the
//! tracks, the interned names and each thread's open regions. A region
//! that ends while one of another attribute begun inside it is still open
//! (the records do not nest) ends that one too and begins it again, so
//! that the slices on a track always nest.

use super::RecordFormatter;
use super::protowire::{bytes, double, int, length_delimited_header, message, uint};
use super::timeline::{DeviceWork, Mark, Moment, Target, Timeline};
use crate::spec::FormatSpec;
use caliper_data::hash::FxHashMap;
use caliper_data::node::Id;
use caliper_data::{MetadataDb, Record, RecordKind, Variant};
use std::io::{self, BufWriter, Write};

/// Field numbers of the Perfetto messages written (from
/// `protos/perfetto/trace/trace_packet.proto` and
/// `protos/perfetto/trace/track_event/*.proto`).
mod field {
    pub const TRACE_PACKET: u32 = 1;

    pub const PACKET_TIMESTAMP: u32 = 8;
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    pub const PACKET_TRACK_EVENT: u32 = 11;
    pub const PACKET_INTERNED_DATA: u32 = 12;
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
    pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;

    pub const TRACK_UUID: u32 = 1;
    pub const TRACK_NAME: u32 = 2;
    pub const TRACK_PROCESS: u32 = 3;
    pub const TRACK_THREAD: u32 = 4;
    pub const TRACK_PARENT_UUID: u32 = 5;
    pub const TRACK_COUNTER: u32 = 8;

    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_NAME: u32 = 6;
    pub const THREAD_PID: u32 = 1;
    pub const THREAD_TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;

    pub const EVENT_CATEGORY_IIDS: u32 = 3;
    pub const EVENT_TYPE: u32 = 9;
    pub const EVENT_NAME_IID: u32 = 10;
    pub const EVENT_TRACK_UUID: u32 = 11;
    pub const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;

    pub const INTERNED_CATEGORIES: u32 = 1;
    pub const INTERNED_NAMES: u32 = 2;
    pub const INTERNED_IID: u32 = 1;
    pub const INTERNED_NAME: u32 = 2;
}

/// `TrackEvent.Type` values.
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const COUNTER: u64 = 4;
/// `TracePacket.SequenceFlags`: the first packet clears the interning
/// state, every packet uses it.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// The one packet sequence this writer uses.
const SEQUENCE_ID: u64 = 1;

/// A thread's track and its open regions.
struct Thread {
    uuid: u64,
    /// Open slices, innermost last: region attribute and name iid.
    open: Vec<(Target, u64)>,
    /// Counter track per attribute.
    counters: FxHashMap<Id, u64>,
}

/// Writes a timeline as Perfetto trace packets.
pub struct PerfettoFormatter {
    out: BufWriter<Box<dyn Write>>,
    timeline: Timeline,
    moment: Moment,
    /// The packet being built.
    packet: Vec<u8>,
    /// The key and length in front of it.
    head: Vec<u8>,
    /// Names and categories first used by the packet being built
    /// (`InternedData` fields).
    interned: Vec<u8>,
    /// Whether no packet has been written yet.
    first: bool,
    /// Track uuids, pids and tids all come from this count.
    next_id: u64,
    /// Process track uuid and Perfetto pid per timeline pid.
    processes: FxHashMap<i64, (u64, u64)>,
    threads: FxHashMap<(i64, i64), Thread>,
    /// The track of each CUDA stream's device work, per timeline pid.
    streams: FxHashMap<(i64, i64), u64>,
    /// Event name iids by value.
    names: FxHashMap<Variant, u64>,
    /// Category iid per region attribute (`Target` + 1), once written.
    categories: Vec<bool>,
}

impl PerfettoFormatter {
    /// A formatter for the FORMAT's arguments (`pid-attributes`,
    /// `tid-attributes`, `counters`; every numeric attribute is a counter
    /// unless `counters` names some).
    pub fn new(format: &FormatSpec, out: Box<dyn Write>) -> PerfettoFormatter {
        PerfettoFormatter {
            out: BufWriter::with_capacity(256 * 1024, out),
            timeline: Timeline::new(format, true),
            moment: Moment::default(),
            packet: Vec::with_capacity(256),
            head: Vec::with_capacity(16),
            interned: Vec::with_capacity(256),
            first: true,
            next_id: 1,
            processes: FxHashMap::default(),
            threads: FxHashMap::default(),
            streams: FxHashMap::default(),
            names: FxHashMap::default(),
            categories: Vec::new(),
        }
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Writes the packet in `self.packet` (with the interned data gathered
    /// for it) as one `Trace.packet` entry.
    fn write_packet(&mut self) -> io::Result<()> {
        let packet = &mut self.packet;
        uint(packet, field::PACKET_SEQUENCE_ID, SEQUENCE_ID);
        let flags = match self.first {
            true => SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE,
            false => SEQ_NEEDS_INCREMENTAL_STATE,
        };
        uint(packet, field::PACKET_SEQUENCE_FLAGS, flags);
        self.first = false;
        if !self.interned.is_empty() {
            bytes(packet, field::PACKET_INTERNED_DATA, &self.interned);
            self.interned.clear();
        }
        self.head.clear();
        length_delimited_header(&mut self.head, field::TRACE_PACKET, packet.len());
        self.out.write_all(&self.head)?;
        self.out.write_all(packet)?;
        packet.clear();
        Ok(())
    }

    /// The process track of the moment's process (its uuid and Perfetto
    /// pid), described the first time.
    fn process_track(&mut self, db: &MetadataDb) -> io::Result<(u64, u64)> {
        let key = self.moment.pid;
        if let Some(&process) = self.processes.get(&key) {
            return Ok(process);
        }
        let (uuid, pid) = (self.new_id(), self.new_id());
        let name = label(db, self.moment.pid_attr, key, "process");
        message(&mut self.packet, field::PACKET_TRACK_DESCRIPTOR, |b| {
            uint(b, field::TRACK_UUID, uuid);
            message(b, field::TRACK_PROCESS, |b| {
                int(b, field::PROCESS_PID, pid as i64);
                bytes(b, field::PROCESS_NAME, name.as_bytes());
            });
        });
        self.write_packet()?;
        self.processes.insert(key, (uuid, pid));
        Ok((uuid, pid))
    }

    /// The track of the moment's thread, described (with its process) the
    /// first time.
    fn thread_track(&mut self, db: &MetadataDb) -> io::Result<u64> {
        let key = (self.moment.pid, self.moment.tid);
        if let Some(thread) = self.threads.get(&key) {
            return Ok(thread.uuid);
        }
        let (_, pid) = self.process_track(db)?;
        let (uuid, tid) = (self.new_id(), self.new_id());
        let name = label(db, self.moment.tid_attr, key.1, "thread");
        message(&mut self.packet, field::PACKET_TRACK_DESCRIPTOR, |b| {
            uint(b, field::TRACK_UUID, uuid);
            message(b, field::TRACK_THREAD, |b| {
                int(b, field::THREAD_PID, pid as i64);
                int(b, field::THREAD_TID, tid as i64);
                bytes(b, field::THREAD_NAME, name.as_bytes());
            });
        });
        self.write_packet()?;
        self.threads.insert(key, Thread { uuid, open: Vec::new(), counters: FxHashMap::default() });
        Ok(uuid)
    }

    /// The track of a CUDA stream's device work in the moment's process
    /// (`cuda stream N`, under the process), described the first time:
    /// work on one stream runs in order, so its slices never overlap.
    fn stream_track(&mut self, db: &MetadataDb, stream: i64) -> io::Result<u64> {
        let key = (self.moment.pid, stream);
        if let Some(&uuid) = self.streams.get(&key) {
            return Ok(uuid);
        }
        let (process, _) = self.process_track(db)?;
        let uuid = self.new_id();
        message(&mut self.packet, field::PACKET_TRACK_DESCRIPTOR, |b| {
            uint(b, field::TRACK_UUID, uuid);
            uint(b, field::TRACK_PARENT_UUID, process);
            bytes(b, field::TRACK_NAME, format!("cuda stream {stream}").as_bytes());
        });
        self.write_packet()?;
        self.streams.insert(key, uuid);
        Ok(uuid)
    }

    /// A slice of device work on its stream's track, from its start to its
    /// end, named as the kernel or the copy's direction, its category the
    /// activity's kind.
    fn device_slice(&mut self, db: &MetadataDb, work: &DeviceWork) -> io::Result<()> {
        let track = self.stream_track(db, work.stream)?;
        let kind = self.timeline.target(&work.kind.to_string());
        let name = self.name_iid(&work.name);
        self.slice_begin(track, work.start_ns, kind, name)?;
        self.slice_end(track, work.end_ns)
    }

    /// The iid of the event name of a region's value, interned in this
    /// packet if new.
    fn name_iid(&mut self, value: &Variant) -> u64 {
        if let Some(&iid) = self.names.get(value) {
            return iid;
        }
        let iid = self.names.len() as u64 + 1;
        self.names.insert(value.clone(), iid);
        let name = value.to_string();
        message(&mut self.interned, field::INTERNED_NAMES, |b| {
            uint(b, field::INTERNED_IID, iid);
            bytes(b, field::INTERNED_NAME, name.as_bytes());
        });
        iid
    }

    /// The iid of a region attribute's category, interned in this packet
    /// if new.
    fn category_iid(&mut self, target: Target) -> u64 {
        let iid = target as u64 + 1;
        if self.categories.len() <= target {
            self.categories.resize(target + 1, false);
        }
        if !self.categories[target] {
            self.categories[target] = true;
            let name = self.timeline.target_name(target).to_string();
            message(&mut self.interned, field::INTERNED_CATEGORIES, |b| {
                uint(b, field::INTERNED_IID, iid);
                bytes(b, field::INTERNED_NAME, name.as_bytes());
            });
        }
        iid
    }

    fn slice_begin(&mut self, track: u64, time_ns: u64, target: Target, name_iid: u64) -> io::Result<()> {
        let category = self.category_iid(target);
        let packet = &mut self.packet;
        uint(packet, field::PACKET_TIMESTAMP, time_ns);
        message(packet, field::PACKET_TRACK_EVENT, |b| {
            uint(b, field::EVENT_TYPE, SLICE_BEGIN);
            uint(b, field::EVENT_TRACK_UUID, track);
            uint(b, field::EVENT_CATEGORY_IIDS, category);
            uint(b, field::EVENT_NAME_IID, name_iid);
        });
        self.write_packet()
    }

    fn slice_end(&mut self, track: u64, time_ns: u64) -> io::Result<()> {
        let packet = &mut self.packet;
        uint(packet, field::PACKET_TIMESTAMP, time_ns);
        message(packet, field::PACKET_TRACK_EVENT, |b| {
            uint(b, field::EVENT_TYPE, SLICE_END);
            uint(b, field::EVENT_TRACK_UUID, track);
        });
        self.write_packet()
    }

    /// Ends the innermost open slice of `target` on the thread, and those
    /// begun inside it, which begin again.
    fn end_region(&mut self, track: u64, target: Target) -> io::Result<()> {
        let key = (self.moment.pid, self.moment.tid);
        let open = &mut self.threads.get_mut(&key).expect("thread track made").open;
        let Some(at) = open.iter().rposition(|&(t, _)| t == target) else {
            return Ok(()); // an end without its begin
        };
        let inner: Vec<(Target, u64)> = open.drain(at..).skip(1).collect();
        for _ in 0..=inner.len() {
            self.slice_end(track, self.moment.time_ns)?;
        }
        for &(t, name) in &inner {
            self.slice_begin(track, self.moment.time_ns, t, name)?;
        }
        self.threads.get_mut(&key).expect("thread track made").open.extend(inner);
        Ok(())
    }

    fn counter(&mut self, db: &MetadataDb, thread: u64, attr: Id, value: f64) -> io::Result<()> {
        let key = (self.moment.pid, self.moment.tid);
        let track = match self.threads[&key].counters.get(&attr) {
            Some(&uuid) => uuid,
            None => {
                let uuid = self.new_id();
                let name = db.attribute(attr).map(|a| a.name().to_string()).unwrap_or_default();
                message(&mut self.packet, field::PACKET_TRACK_DESCRIPTOR, |b| {
                    uint(b, field::TRACK_UUID, uuid);
                    uint(b, field::TRACK_PARENT_UUID, thread);
                    bytes(b, field::TRACK_NAME, name.as_bytes());
                    message(b, field::TRACK_COUNTER, |_| {});
                });
                self.write_packet()?;
                self.threads.get_mut(&key).expect("thread track made").counters.insert(attr, uuid);
                uuid
            }
        };
        let packet = &mut self.packet;
        uint(packet, field::PACKET_TIMESTAMP, self.moment.time_ns);
        message(packet, field::PACKET_TRACK_EVENT, |b| {
            uint(b, field::EVENT_TYPE, COUNTER);
            uint(b, field::EVENT_TRACK_UUID, track);
            double(b, field::EVENT_DOUBLE_COUNTER_VALUE, value);
        });
        self.write_packet()
    }
}

/// A track's name: the attribute and value that told it apart, or `kind`
/// and the value.
fn label(db: &MetadataDb, attr: Option<Id>, value: i64, kind: &str) -> String {
    match attr.and_then(|a| db.attribute(a)) {
        Some(a) => format!("{}={value}", a.name()),
        None => format!("{kind} {value}"),
    }
}

impl RecordFormatter for PerfettoFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        let mut moment = std::mem::take(&mut self.moment);
        let timed = self.timeline.read(db, record, &mut moment);
        self.moment = moment;
        if !timed {
            return Ok(());
        }
        if let Some(work) = self.moment.device.take() {
            return self.device_slice(db, &work);
        }
        let track = self.thread_track(db)?;
        let marks = std::mem::take(&mut self.moment.marks);
        let mut result = Ok(());
        for mark in &marks {
            result = result.and_then(|()| match mark {
                Mark::Begin { attr, value } => {
                    let iid = self.name_iid(value);
                    self.slice_begin(track, self.moment.time_ns, *attr, iid)?;
                    let key = (self.moment.pid, self.moment.tid);
                    self.threads.get_mut(&key).expect("thread track made").open.push((*attr, iid));
                    Ok(())
                }
                Mark::End { attr, .. } => self.end_region(track, *attr),
            });
        }
        self.moment.marks = marks;
        result?;
        for i in 0..self.moment.counters.len() {
            let (attr, value) = self.moment.counters[i];
            self.counter(db, track, attr, value)?;
        }
        Ok(())
    }

    fn finish(&mut self, _db: &mut MetadataDb) -> io::Result<()> {
        self.out.flush()
    }
}
