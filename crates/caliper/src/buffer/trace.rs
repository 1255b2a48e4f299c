//! The trace buffer: one thread's snapshots of a channel, kept in compact
//! chunks. It is the `trace` service's per-thread part, which the channel
//! keeps inline in its fast path; the service (`services::trace`) sets it
//! up, flushes and clears it.
//!
//! A snapshot is encoded as varints. Its *shape* is the list of its
//! entries' heads: per entry a tag, and for an attribute value the
//! attribute id shifted by two with the tag in the low bits. A program's
//! snapshots take a handful of shapes (a region begin, a region end), so
//! each chunk numbers the shapes it has seen: a snapshot starts with its
//! shape's number, followed by the shape (entry count and heads) the
//! first time, then one payload per entry:
//!
//! - tag 0: a node: its id;
//! - tag 1: an unsigned integer, as the zigzag difference to the previous
//!   value of the same attribute in the chunk when a small direct-mapped
//!   table still holds that value, else in full. Times (`time.offset.ns`)
//!   and durations change little from one snapshot to the next;
//! - tag 2: any other value: the type code, then 8 bytes for a double, a
//!   zigzag varint for an integer, the symbol of an interned string or
//!   blob, or the value's bits.
//!
//! A timed region snapshot thus takes about 8 bytes.

use crate::log;
use crate::service::{Runtime, ThreadService};
use crate::snapshot::{RegionSnapshot, Snapshot};
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::{INV_ID, Id};
use caliper_data::{AttrType, Record};
use std::alloc::Layout;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What a thread does when its last chunk is full.
#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Policy {
    /// Add a chunk when one is full.
    Grow,
    /// Stop recording when the first chunk is full.
    Stop,
    /// Write the channel's output and clear the buffers when a chunk is
    /// full (after the update that filled it, which adds a chunk meanwhile).
    Flush,
}

/// What the threads of a channel's trace share.
pub struct Shared {
    /// The size of new chunks: `CALI_TRACE_BUFFER_SIZE`, or the default once
    /// a chunk of that size could not be allocated.
    pub chunk_bytes: AtomicUsize,
    /// Set by a thread whose chunk filled up under the flush policy.
    pub flush_requested: AtomicBool,
    /// Set when a thread stopped recording under the stop policy, so that
    /// the channel says so once.
    pub stopped: AtomicBool,
}

/// A thread's trace: the service's settings and the thread's buffers.
pub struct TraceThread {
    channel: Arc<str>,
    policy: Policy,
    chunks: Vec<Chunk>,
    /// The encoder's state for the last chunk.
    encoder: Encoder,
    records: u64,
    stopped: bool,
    /// Snapshots not recorded: after the stop policy stopped recording, or
    /// when no chunk could be allocated.
    dropped: u64,
    shared: Arc<Shared>,
}

/// The chunk size when `CALI_TRACE_BUFFER_SIZE` is unset or unusable: 2 MiB.
pub const DEFAULT_CHUNK_BYTES: usize = 2 << 20;

/// The smallest chunk: a page.
pub const MIN_CHUNK_BYTES: usize = 4096;

/// A chunk of encoded snapshots. Its storage is allocated zeroed, which
/// for a chunk this large maps fresh pages that the kernel provides as
/// they are first written, and it never grows: the writer checks the room
/// for a snapshot once ([`max_bytes`]) and then writes bytes with no
/// capacity checks or reallocation.
struct Chunk {
    data: Box<[u8]>,
    len: usize,
}

/// An upper bound of the bytes of a snapshot of `entries` entries: the
/// shape's number and entry count, and per entry a head and a payload (a
/// type code and a varint), each varint at most 10 bytes.
fn max_bytes(entries: usize) -> usize {
    21 * (entries + 2)
}

impl Chunk {
    /// A chunk of `bytes` bytes, or `None` if the memory cannot be had.
    ///
    /// Allocated with `alloc_zeroed` and a check, rather than
    /// `Vec::try_reserve` and zeroes written: writing them would commit
    /// every page of the chunk at once, and `vec![0; n]` (which maps them
    /// lazily) aborts the program when the allocation fails.
    fn new(bytes: usize) -> Option<Chunk> {
        let layout = Layout::array::<u8>(bytes.max(1)).ok()?;
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: `ptr` is a fresh, zeroed allocation of the global
        // allocator of `layout` (bytes of alignment 1), which a boxed slice
        // of that length frees with the same layout.
        let data = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, layout.size())) };
        Some(Chunk { data, len: 0 })
    }

    /// Whether a snapshot of `bytes` bytes at most fits.
    #[inline(always)]
    fn has_room(&self, bytes: usize) -> bool {
        self.len + bytes <= self.data.len()
    }

    /// The bytes written.
    fn bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// The chunk cut to the bytes written, to be kept but no longer
    /// written (an exited thread's): a thread's chunk is mostly free space.
    fn shrunk(self) -> Chunk {
        Chunk { data: self.bytes().into(), len: self.len }
    }

    /// A writer of the chunk's free space.
    #[inline(always)]
    fn writer(&mut self) -> Writer<'_> {
        let start = self.len;
        Writer { buf: &mut self.data[start..], pos: 0, len: &mut self.len }
    }
}

/// Writes a snapshot into a chunk. Its position is a local, which the
/// compiler keeps in a register (it could not for the chunk's length, as
/// any byte written might alias it); the chunk's length is updated once,
/// when the writer is dropped.
struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
    len: &'a mut usize,
}

impl Writer<'_> {
    /// Writes a byte; the caller has checked the room.
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        if let Some(b) = self.buf.get_mut(self.pos) {
            *b = byte;
            self.pos += 1;
        }
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }
}

impl Drop for Writer<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        *self.len += self.pos;
    }
}

/// Writes `v` as a varint: the room for the longest (10 bytes) is checked
/// once, and the bytes are written into that window without a check each.
/// The room for the snapshot was checked before ([`max_bytes`]), so the
/// window is there.
#[inline(always)]
fn put_varint(out: &mut Writer<'_>, mut v: u64) {
    let Some(window) = out.buf.get_mut(out.pos..).and_then(|b| b.first_chunk_mut::<10>()) else { return };
    let mut i = 0;
    // At most 9 bytes with the continuation bit: the 10th holds the
    // last bit of a u64.
    while v >= 0x80 && i < 9 {
        window[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    window[i] = v as u8;
    out.pos += i + 1;
}

fn get_varint(data: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = data[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[inline]
fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

const TAG_NODE: u64 = 0;
const TAG_UINT: u64 = 1;
const TAG_OTHER: u64 = 2;

const DELTA_BITS: u32 = 4;

/// The last unsigned value of recently seen attributes, direct-mapped by
/// attribute: the encoder and the decoder of a chunk update it alike, so
/// both know when a value is written as a difference.
struct Deltas([(Id, u64); 1 << DELTA_BITS]);

impl Deltas {
    fn new() -> Deltas {
        Deltas([(INV_ID, 0); 1 << DELTA_BITS])
    }

    /// The slot of `attr`: (attribute, its last value) if it holds `attr`.
    #[inline]
    fn slot(&mut self, attr: Id) -> &mut (Id, u64) {
        &mut self.0[(attr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - DELTA_BITS)) as usize]
    }
}

/// The shape of a region snapshot (see [`RegionSnapshot`]): its number
/// in a chunk depends on these only.
#[derive(Copy, Clone, PartialEq, Eq)]
struct RegionShape {
    /// The number of nodes: the context's and the event node if any.
    nodes: usize,
    count: Option<Id>,
    time: Option<(Id, Id)>,
    /// The number of other measurements (whose attributes the channel
    /// fixes when it starts).
    measured: usize,
}

impl RegionShape {
    fn of(region: &RegionSnapshot<'_>) -> RegionShape {
        RegionShape {
            nodes: region.nodes().count(),
            count: region.count,
            time: region.time.map(|t| (t.offset_attr, t.duration_attr)),
            measured: region.measured.len(),
        }
    }
}

/// The encoder's state for one chunk.
struct Encoder {
    deltas: Deltas,
    /// The shapes written so far, with their numbers.
    shapes: FxHashMap<Box<[u64]>, u64>,
    /// The shapes of region snapshots as last written, with their
    /// numbers, by whether they have a count and times: a channel's region
    /// snapshots carry the same attributes (see
    /// [`ThreadService::region_attributes`](crate::service::ThreadService::region_attributes)),
    /// so that only their number of nodes can differ.
    regions: [Option<(RegionShape, u64)>; 4],
    /// A reusable buffer for a shape.
    heads: Vec<u64>,
}

impl Encoder {
    fn new() -> Encoder {
        Encoder { deltas: Deltas::new(), shapes: FxHashMap::default(), regions: [None; 4], heads: Vec::new() }
    }

    /// Writes the number of the shape in `self.heads`, and the shape if it
    /// is new in the chunk; returns the number.
    fn put_shape(&mut self, out: &mut Writer<'_>) -> u64 {
        if let Some(&n) = self.shapes.get(self.heads.as_slice()) {
            put_varint(out, n);
            return n;
        }
        let n = self.shapes.len() as u64;
        self.shapes.insert(self.heads.as_slice().into(), n);
        put_varint(out, n);
        put_varint(out, self.heads.len() as u64);
        for &h in &self.heads {
            put_varint(out, h);
        }
        n
    }

    /// Writes an unsigned value of `attr`, as a difference if the delta
    /// table holds the attribute's previous value.
    #[inline(always)]
    fn put_uint(&mut self, out: &mut Writer<'_>, attr: Id, u: u64) {
        let slot = self.deltas.slot(attr);
        put_varint(out, if slot.0 == attr { zigzag(u.wrapping_sub(slot.1) as i64) } else { u });
        *slot = (attr, u);
    }

    fn encode(&mut self, snapshot: &Snapshot, out: &mut Writer<'_>) {
        self.heads.clear();
        self.heads.extend(snapshot.nodes().iter().map(|_| TAG_NODE));
        for &(a, v) in snapshot.values() {
            self.heads.push((a << 2) | if v.as_uint().is_some() { TAG_UINT } else { TAG_OTHER });
        }
        self.put_shape(out);
        for &n in snapshot.nodes() {
            put_varint(out, n);
        }
        for &(a, v) in snapshot.values() {
            match v.as_uint() {
                Some(u) => self.put_uint(out, a, u),
                None => {
                    out.push(v.attr_type() as u8);
                    match v.attr_type() {
                        AttrType::Double => out.extend_from_slice(&v.bits().to_le_bytes()),
                        AttrType::Int => put_varint(out, zigzag(v.bits() as i64)),
                        _ => put_varint(out, v.bits()),
                    }
                }
            }
        }
    }

    /// Encodes a region snapshot as [`Encoder::encode`] encodes the
    /// equivalent snapshot, remembering the shapes of begins and ends.
    #[inline]
    fn encode_region(&mut self, region: &RegionSnapshot<'_>, out: &mut Writer<'_>) {
        let which = usize::from(region.count.is_some()) | (usize::from(region.time.is_some()) << 1);
        match self.regions[which] {
            Some((known, n)) if known.nodes == region.nodes().count() => {
                // Our invariant, not the host's: the channel fixes the
                // region attributes of a shape when it starts.
                debug_assert!(known == RegionShape::of(region), "a channel's region attributes are fixed");
                put_varint(out, n);
            }
            _ => self.put_region_shape(RegionShape::of(region), region.measured.attrs(), which, out),
        }
        for n in region.nodes() {
            put_varint(out, n);
        }
        if let Some(count) = region.count {
            self.put_uint(out, count, 1);
        }
        if let Some(t) = region.time {
            self.put_uint(out, t.offset_attr, t.offset);
            self.put_uint(out, t.duration_attr, t.duration);
        }
        for (attr, value) in region.measured.iter() {
            self.put_uint(out, attr, value);
        }
    }

    #[cold]
    fn put_region_shape(&mut self, shape: RegionShape, measured: &[Id], which: usize, out: &mut Writer<'_>) {
        self.heads.clear();
        self.heads.resize(shape.nodes, TAG_NODE);
        if let Some(count) = shape.count {
            self.heads.push((count << 2) | TAG_UINT);
        }
        if let Some((offset, duration)) = shape.time {
            self.heads.extend([(offset << 2) | TAG_UINT, (duration << 2) | TAG_UINT]);
        }
        self.heads.extend(measured.iter().map(|&a| (a << 2) | TAG_UINT));
        let n = self.put_shape(out);
        self.regions[which] = Some((shape, n));
    }
}

/// The decoder's state for one chunk.
struct Decoder {
    deltas: Deltas,
    shapes: Vec<Vec<u64>>,
}

impl Decoder {
    fn new() -> Decoder {
        Decoder { deltas: Deltas::new(), shapes: Vec::new() }
    }

    fn decode(&mut self, data: &[u8], pos: &mut usize, out: &mut Record) {
        out.clear();
        let n = get_varint(data, pos) as usize;
        if n == self.shapes.len() {
            let len = get_varint(data, pos);
            let heads = (0..len).map(|_| get_varint(data, pos)).collect();
            self.shapes.push(heads);
        }
        for &head in &self.shapes[n] {
            let id = head >> 2;
            let value = match head & 3 {
                TAG_NODE => {
                    out.push_ref(get_varint(data, pos));
                    continue;
                }
                TAG_UINT => {
                    let raw = get_varint(data, pos);
                    let slot = self.deltas.slot(id);
                    let u = if slot.0 == id { slot.1.wrapping_add(unzigzag(raw) as u64) } else { raw };
                    *slot = (id, u);
                    ValueKey::uint(u)
                }
                _ => {
                    // Neither the indexing nor the 8-byte slice can fail:
                    // the chunk holds only whole entries `Encoder` wrote.
                    let ty = AttrType::from_code(data[*pos]).unwrap_or(AttrType::Inv);
                    *pos += 1;
                    let bits = match ty {
                        AttrType::Double => {
                            let bytes: [u8; 8] = data[*pos..*pos + 8].try_into().expect("8 bytes");
                            *pos += 8;
                            u64::from_le_bytes(bytes)
                        }
                        AttrType::Int => unzigzag(get_varint(data, pos)) as u64,
                        _ => get_varint(data, pos),
                    };
                    ValueKey::from_bits(ty, bits)
                }
            };
            out.push_imm(id, value.to_variant());
        }
    }
}

impl TraceThread {
    /// A new thread's trace in the channel `channel`.
    pub fn new(channel: Arc<str>, policy: Policy, shared: Arc<Shared>) -> TraceThread {
        TraceThread {
            channel,
            policy,
            chunks: Vec::new(),
            encoder: Encoder::new(),
            records: 0,
            stopped: false,
            dropped: 0,
            shared,
        }
    }

    /// Hands the thread's snapshots, oldest first, to `emit` as records;
    /// returns their number, the bytes of buffer they took, and the number
    /// of snapshots dropped.
    pub fn flush(&self, emit: &mut dyn FnMut(&Record)) -> (u64, usize, u64) {
        let (mut record, mut flushed, mut bytes) = (Record::ctx(), 0, 0);
        // Oldest first: the reference emits the newest chunk first.
        for chunk in &self.chunks {
            let (chunk, mut pos, mut decoder) = (chunk.bytes(), 0, Decoder::new());
            while pos < chunk.len() {
                decoder.decode(chunk, &mut pos, &mut record);
                emit(&record);
                flushed += 1;
            }
            bytes += chunk.len();
        }
        (flushed, bytes, self.dropped)
    }

    /// Drops the thread's snapshots.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.encoder = Encoder::new();
        (self.records, self.stopped, self.dropped) = (0, false, 0);
    }

    /// Keeps the chunks of `from` (an exited thread's, cut to their
    /// length) after this one's: each chunk is read on its own.
    pub fn absorb(&mut self, from: &mut TraceThread) {
        self.chunks.extend(from.chunks.drain(..).map(Chunk::shrunk));
        self.records += from.records;
        self.dropped += from.dropped;
    }

    /// The chunk to write the next snapshot, of `entries` entries, to;
    /// `None` if recording has stopped.
    #[inline(always)]
    fn chunk(&mut self, cali: &dyn Runtime, entries: usize) -> Option<(&mut Encoder, &mut Chunk)> {
        let bytes = max_bytes(entries);
        let room = self.chunks.last().is_some_and(|c| c.has_room(bytes));
        if !room || self.stopped {
            self.next_chunk(cali, bytes)?;
        }
        self.records += 1;
        Some((&mut self.encoder, self.chunks.last_mut()?))
    }

    /// Starts a new chunk with room for `bytes` at least, or stops
    /// recording (and counts the dropped snapshot).
    #[cold]
    fn next_chunk(&mut self, cali: &dyn Runtime, bytes: usize) -> Option<()> {
        if !self.stopped && self.policy == Policy::Stop && !self.chunks.is_empty() {
            self.stopped = true;
            if !self.shared.stopped.swap(true, Ordering::Relaxed) {
                log::error(format_args!("{}: trace: Trace buffer full, recording stopped!", self.channel));
            }
        }
        if self.stopped {
            self.dropped += 1;
            return None;
        }
        if self.policy == Policy::Flush && !self.chunks.is_empty() {
            self.shared.flush_requested.store(true, Ordering::Release);
            cali.request_flush();
        }
        let Some(chunk) = self.new_chunk(bytes) else {
            self.dropped += 1;
            return None;
        };
        self.chunks.push(chunk);
        self.encoder = Encoder::new();
        Some(())
    }

    /// A chunk of the channel's chunk size, with room for `bytes` at least.
    /// If the memory for one cannot be had, the channel falls back to the
    /// default size (and says so, once); `None` if even that fails.
    fn new_chunk(&self, bytes: usize) -> Option<Chunk> {
        let size = self.shared.chunk_bytes.load(Ordering::Relaxed);
        if let Some(chunk) = Chunk::new(size.max(bytes)) {
            return Some(chunk);
        }
        if size > DEFAULT_CHUNK_BYTES
            && self
                .shared
                .chunk_bytes
                .compare_exchange(size, DEFAULT_CHUNK_BYTES, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            log::error(format_args!(
                "{}: trace: could not allocate a trace buffer of {} MiB, using {} MiB",
                self.channel,
                size >> 20,
                DEFAULT_CHUNK_BYTES >> 20
            ));
        }
        Chunk::new(DEFAULT_CHUNK_BYTES.max(bytes))
    }
}

impl ThreadService for TraceThread {
    fn process(&mut self, cali: &dyn Runtime, snapshot: &Snapshot) {
        if let Some((encoder, chunk)) = self.chunk(cali, snapshot.nodes().len() + snapshot.values().len()) {
            encoder.encode(snapshot, &mut chunk.writer());
        }
    }

    #[inline]
    fn process_region(&mut self, cali: &dyn Runtime, region: &RegionSnapshot<'_>, scratch: &mut Snapshot) {
        // The region encoding has no place for the process's values.
        if !region.values.is_empty() {
            region.write_to(scratch);
            return self.process(cali, scratch);
        }
        if let Some((encoder, chunk)) = self.chunk(cali, region.context.len() + 4 + region.measured.len()) {
            encoder.encode_region(region, &mut chunk.writer());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Measured, Time};
    use caliper_data::{Entry, Variant};

    fn decode_all(buf: &[u8]) -> Vec<Record> {
        let (mut pos, mut decoder, mut out) = (0, Decoder::new(), Vec::new());
        while pos < buf.len() {
            let mut record = Record::ctx();
            decoder.decode(buf, &mut pos, &mut record);
            out.push(record);
        }
        out
    }
    #[test]
    fn a_chunk_that_cannot_be_allocated_is_none() {
        assert!(Chunk::new(usize::MAX).is_none(), "no layout");
        assert!(Chunk::new(isize::MAX as usize).is_none(), "no memory");
        let chunk = Chunk::new(MIN_CHUNK_BYTES).expect("a page");
        assert!(chunk.data.len() == MIN_CHUNK_BYTES && chunk.data.iter().all(|&b| b == 0));
    }

    #[test]
    fn snapshots_round_trip() {
        let mut s = Snapshot::default();
        s.push_node(123456);
        s.push_value(7, ValueKey::uint(u64::MAX));
        s.push_value(8, ValueKey::int(-42));
        s.push_value(9, ValueKey::from_variant(&Variant::Double(0.5)));
        s.push_value(10, ValueKey::string("région"));
        s.push_value(11, ValueKey::from_variant(&Variant::Bool(true)));
        s.push_value(12, ValueKey::uint(1000));
        s.push_node(3);
        let (mut buf, mut encoder) = (Chunk::new(4096).expect("a page"), Encoder::new());
        let mut expected = Record::ctx();
        s.to_record(&mut expected);
        encoder.encode(&s, &mut buf.writer());
        let first = buf.len;
        // The unsigned values come back from their differences.
        s.clear();
        s.push_value(12, ValueKey::uint(990));
        s.push_value(7, ValueKey::uint(3));
        encoder.encode(&s, &mut buf.writer());
        let second = buf.len;
        // A shape seen before is written as its number.
        encoder.encode(&s, &mut buf.writer());
        let back = decode_all(buf.bytes());
        assert_eq!(back[0], expected);
        assert_eq!(back[1].entries, [Entry::Immediate(12, Variant::Uint(990)), Entry::Immediate(7, Variant::Uint(3))]);
        assert_eq!(back[2], back[1]);
        assert_eq!(second - first, 1 + 1 + 2 + 2, "shape number, entry count, two heads, two payloads");
        assert_eq!(buf.len - second, 1 + 1 + 1, "small differences take one byte");
    }

    #[test]
    fn region_snapshots_decode_as_their_snapshots() {
        let (mut buf, mut encoder) = (Chunk::new(4096).expect("a page"), Encoder::new());
        let (mut scratch, mut expected) = (Snapshot::default(), Vec::new());
        let context = [40];
        for i in 0..6u64 {
            let time = Time { offset_attr: 20, offset: 1000 + 10 * i, duration_attr: 21, duration: 10 + i % 2 };
            // The channel's other measurements: the same attributes in
            // every region snapshot.
            let values = [5 * i, 7];
            let region = RegionSnapshot {
                context: &context[..(i % 3) as usize % 2],
                values: &[],
                values_version: 1,
                event: Some(300 + i),
                count: (i % 2 == 1).then_some(22),
                time: (i != 4).then_some(time),
                measured: Measured::new(&[23, 24], &values),
            };
            encoder.encode_region(&region, &mut buf.writer());
            region.write_to(&mut scratch);
            let mut record = Record::ctx();
            scratch.to_record(&mut record);
            expected.push(record);
            // A generic snapshot between them shares the chunk's tables.
            encoder.encode(&scratch, &mut buf.writer());
            expected.push(expected.last().expect("pushed").clone());
        }
        assert_eq!(decode_all(buf.bytes()), expected);
    }
}
