//! `trace`: keeps every snapshot, in compact per-thread buffers.
//!
//! A snapshot is encoded as varints: the entry count, then per entry a
//! head, the node or attribute id shifted by two with a tag in the low
//! bits, and for an attribute value its payload:
//!
//! - tag 0: a node;
//! - tag 1: an unsigned integer, as the zigzag difference to the previous
//!   value of the same attribute in the chunk when a small direct-mapped
//!   table still holds that value, else in full. Times (`time.offset.ns`)
//!   and durations change little from one snapshot to the next, so this
//!   keeps a timed snapshot at about a dozen bytes;
//! - tag 2: any other value: the type code, then 8 bytes for a double, a
//!   zigzag varint for an integer, the symbol of an interned string or
//!   blob, or the value's bits.
//!
//! Buffers grow in chunks of `CALI_TRACE_BUFFER_SIZE` MiB, each decoded on
//! its own; with `CALI_TRACE_BUFFER_POLICY=stop` a thread stops recording
//! when its first chunk is full.

use crate::channel::{Service, ServiceState, ThreadService, state_mut};
use crate::config::RuntimeConfig;
use crate::log;
use crate::runtime::Caliper;
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::node::{INV_ID, Id};
use caliper_data::{AttrType, Record};
use std::sync::Arc;

#[derive(Copy, Clone, PartialEq, Eq)]
enum Policy {
    Grow,
    Stop,
}

pub struct Trace {
    channel: Arc<str>,
    chunk_bytes: usize,
    policy: Policy,
}

/// A thread's trace: the service's settings and the thread's buffers.
struct TraceThread {
    channel: Arc<str>,
    chunk_bytes: usize,
    policy: Policy,
    chunks: Vec<Vec<u8>>,
    /// The encoder's state for the last chunk.
    deltas: Deltas,
    records: u64,
    stopped: bool,
    dropped: u64,
}

impl Trace {
    pub fn new(channel: &str, config: &RuntimeConfig) -> Trace {
        let mib: f64 = config.get_number("CALI_TRACE_BUFFER_SIZE", 2.0);
        let policy = match config.get_or("CALI_TRACE_BUFFER_POLICY", "grow").as_str() {
            "grow" => Policy::Grow,
            "stop" => Policy::Stop,
            // Flushing from inside an update is not possible here; growing
            // keeps the data, which is what a flush policy is for.
            "flush" => Policy::Grow,
            other => {
                log::error(&format!("trace: error: unknown buffer policy \"{other}\""));
                Policy::Grow
            }
        };
        let chunk_bytes = ((mib.max(0.0) * 1024.0 * 1024.0) as usize).max(4096);
        Trace { channel: channel.into(), chunk_bytes, policy }
    }
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
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

#[inline]
fn encode(snapshot: &Snapshot, deltas: &mut Deltas, out: &mut Vec<u8>) {
    put_varint(out, (snapshot.nodes().len() + snapshot.values().len()) as u64);
    for &n in snapshot.nodes() {
        put_varint(out, (n << 2) | TAG_NODE);
    }
    for &(a, v) in snapshot.values() {
        match v.as_uint() {
            Some(u) => {
                put_varint(out, (a << 2) | TAG_UINT);
                let slot = deltas.slot(a);
                put_varint(out, if slot.0 == a { zigzag(u.wrapping_sub(slot.1) as i64) } else { u });
                *slot = (a, u);
            }
            None => {
                put_varint(out, (a << 2) | TAG_OTHER);
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

fn decode(data: &[u8], pos: &mut usize, deltas: &mut Deltas, out: &mut Record) {
    out.clear();
    let n = get_varint(data, pos);
    for _ in 0..n {
        let head = get_varint(data, pos);
        let id = head >> 2;
        let value = match head & 3 {
            TAG_NODE => {
                out.push_ref(id);
                continue;
            }
            TAG_UINT => {
                let raw = get_varint(data, pos);
                let slot = deltas.slot(id);
                let u = if slot.0 == id { slot.1.wrapping_add(unzigzag(raw) as u64) } else { raw };
                *slot = (id, u);
                ValueKey::uint(u)
            }
            _ => {
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

impl Service for Trace {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn processes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(TraceThread {
            channel: self.channel.clone(),
            chunk_bytes: self.chunk_bytes,
            policy: self.policy,
            chunks: Vec::new(),
            deltas: Deltas::new(),
            records: 0,
            stopped: false,
            dropped: 0,
        })
    }

    fn flush(&self, _cali: &Caliper, states: &mut [&mut ServiceState], emit: &mut dyn FnMut(&Record)) {
        let mut record = Record::ctx();
        let (mut flushed, mut bytes) = (0u64, 0usize);
        for state in states.iter_mut() {
            let Some(t) = state_mut::<TraceThread>(state) else { continue };
            // Oldest first: the reference emits the newest chunk first.
            for chunk in &t.chunks {
                let (mut pos, mut deltas) = (0, Deltas::new());
                while pos < chunk.len() {
                    decode(chunk, &mut pos, &mut deltas, &mut record);
                    emit(&record);
                    flushed += 1;
                }
                bytes += chunk.len();
            }
            if t.dropped > 0 {
                log::error(&format!("{}: trace: {} snapshots were dropped", self.channel, t.dropped));
            }
        }
        log::info(&format!("{}: trace: Flushed {flushed} snapshots.", self.channel));
        log::log(2, &format!("{}: trace: {bytes} bytes of buffer in use.", self.channel));
    }

    fn clear(&self, states: &mut [&mut ServiceState]) {
        for state in states.iter_mut() {
            if let Some(t) = state_mut::<TraceThread>(state) {
                t.chunks.clear();
                t.deltas = Deltas::new();
                (t.records, t.stopped, t.dropped) = (0, false, 0);
            }
        }
    }
}

impl ThreadService for TraceThread {
    fn process(&mut self, _cali: &Caliper, snapshot: &Snapshot) {
        if self.stopped {
            self.dropped += 1;
            return;
        }
        let full = self.chunks.last().is_none_or(|c| c.len() + 256 > self.chunk_bytes);
        if full {
            if self.policy == Policy::Stop && !self.chunks.is_empty() {
                self.stopped = true;
                self.dropped += 1;
                log::error(&format!("{}: trace: Trace buffer full, recording stopped!", self.channel));
                return;
            }
            self.chunks.push(Vec::with_capacity(self.chunk_bytes));
            self.deltas = Deltas::new();
        }
        if let Some(chunk) = self.chunks.last_mut() {
            encode(snapshot, &mut self.deltas, chunk);
            self.records += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::{Entry, Variant};

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
        let (mut buf, mut deltas) = (Vec::new(), Deltas::new());
        let mut expected = Record::ctx();
        s.to_record(&mut expected);
        encode(&s, &mut deltas, &mut buf);
        let first = buf.len();
        // The unsigned values come back from their differences.
        s.clear();
        s.push_value(12, ValueKey::uint(990));
        s.push_value(7, ValueKey::uint(3));
        encode(&s, &mut deltas, &mut buf);
        let (mut pos, mut deltas, mut back) = (0, Deltas::new(), Record::ctx());
        decode(&buf, &mut pos, &mut deltas, &mut back);
        assert_eq!(back, expected);
        assert_eq!(pos, first);
        decode(&buf, &mut pos, &mut deltas, &mut back);
        assert_eq!(back.entries, [Entry::Immediate(12, Variant::Uint(990)), Entry::Immediate(7, Variant::Uint(3))]);
        assert_eq!(pos, buf.len());
        assert_eq!(buf.len() - first, 1 + 2 + 2, "a small difference takes one byte");
    }
}
