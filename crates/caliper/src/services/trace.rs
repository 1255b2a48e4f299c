//! `trace`: keeps every snapshot, in compact per-thread buffers.
//!
//! A snapshot is encoded as varints: the entry count, then per entry the
//! node or attribute id (shifted, low bit: immediate), and for an
//! immediate the value (type code, then a varint, 8 bytes for a double, or
//! the symbol of an interned string). Buffers grow in chunks of
//! `CALI_TRACE_BUFFER_SIZE` MiB; with `CALI_TRACE_BUFFER_POLICY=stop` a
//! thread stops recording when its first chunk is full.

use crate::channel::{Service, ServiceState};
use crate::config::RuntimeConfig;
use crate::log;
use crate::runtime::Caliper;
use crate::value::ValueKey;
use caliper_data::{AttrType, Entry, Record, Variant};

#[derive(Copy, Clone, PartialEq, Eq)]
enum Policy {
    Grow,
    Stop,
}

pub struct Trace {
    channel: String,
    chunk_bytes: usize,
    policy: Policy,
}

#[derive(Default)]
struct TraceThread {
    chunks: Vec<Vec<u8>>,
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
        Trace { channel: channel.to_string(), chunk_bytes, policy }
    }
}

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

fn encode(record: &Record, out: &mut Vec<u8>) {
    put_varint(out, record.entries.len() as u64);
    for entry in &record.entries {
        match entry {
            Entry::Reference(n) => put_varint(out, n << 1),
            Entry::Immediate(a, v) => {
                put_varint(out, (a << 1) | 1);
                out.push(v.attr_type() as u8);
                match v {
                    Variant::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
                    Variant::Int(i) => put_varint(out, ((i << 1) ^ (i >> 63)) as u64),
                    Variant::Str(_) | Variant::Usr(_) => {
                        put_varint(out, crate::value::symbol_of(ValueKey::from_variant(v)));
                    }
                    other => put_varint(out, other.to_u64().unwrap_or(0)),
                }
            }
        }
    }
}

fn decode(data: &[u8], pos: &mut usize, out: &mut Record) {
    out.clear();
    let n = get_varint(data, pos);
    for _ in 0..n {
        let id = get_varint(data, pos);
        if id & 1 == 0 {
            out.push_ref(id >> 1);
            continue;
        }
        let ty = AttrType::from_code(data[*pos]).unwrap_or(AttrType::Inv);
        *pos += 1;
        let value = match ty {
            AttrType::Double => {
                let bytes: [u8; 8] = data[*pos..*pos + 8].try_into().expect("8 bytes");
                *pos += 8;
                Variant::Double(f64::from_le_bytes(bytes))
            }
            AttrType::Int => {
                let z = get_varint(data, pos);
                Variant::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
            }
            AttrType::String | AttrType::Usr => crate::value::from_symbol_bits(ty, get_varint(data, pos)),
            AttrType::Uint => Variant::Uint(get_varint(data, pos)),
            AttrType::Addr => Variant::Addr(get_varint(data, pos)),
            AttrType::Ptr => Variant::Ptr(get_varint(data, pos)),
            AttrType::Bool => Variant::Bool(get_varint(data, pos) != 0),
            AttrType::Type => Variant::Type(AttrType::from_code(get_varint(data, pos) as u8).unwrap_or(AttrType::Inv)),
            AttrType::Inv => {
                get_varint(data, pos);
                Variant::Empty
            }
        };
        out.push_imm(id >> 1, value);
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
        Box::new(TraceThread::default())
    }

    fn process(&self, _cali: &Caliper, state: &mut ServiceState, snapshot: &Record) {
        let Some(t) = state.downcast_mut::<TraceThread>() else { return };
        if t.stopped {
            t.dropped += 1;
            return;
        }
        let full = t.chunks.last().is_none_or(|c| c.len() + 256 > self.chunk_bytes);
        if full {
            if self.policy == Policy::Stop && !t.chunks.is_empty() {
                t.stopped = true;
                t.dropped += 1;
                log::error(&format!("{}: trace: Trace buffer full, recording stopped!", self.channel));
                return;
            }
            t.chunks.push(Vec::with_capacity(self.chunk_bytes));
        }
        encode(snapshot, t.chunks.last_mut().expect("a chunk"));
        t.records += 1;
    }

    fn flush(&self, _cali: &Caliper, states: &mut [&mut ServiceState], emit: &mut dyn FnMut(&Record)) {
        let mut record = Record::ctx();
        let mut flushed = 0u64;
        for state in states.iter_mut() {
            let Some(t) = state.downcast_mut::<TraceThread>() else { continue };
            // Oldest first: the reference emits the newest chunk first.
            for chunk in &t.chunks {
                let mut pos = 0;
                while pos < chunk.len() {
                    decode(chunk, &mut pos, &mut record);
                    emit(&record);
                    flushed += 1;
                }
            }
            if t.dropped > 0 {
                log::error(&format!("{}: trace: {} snapshots were dropped", self.channel, t.dropped));
            }
        }
        log::info(&format!("{}: trace: Flushed {flushed} snapshots.", self.channel));
    }

    fn clear(&self, states: &mut [&mut ServiceState]) {
        for state in states.iter_mut() {
            if let Some(t) = state.downcast_mut::<TraceThread>() {
                *t = TraceThread::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut r = Record::ctx();
        r.push_ref(123456);
        r.push_imm(7, Variant::Uint(u64::MAX));
        r.push_imm(8, Variant::Int(-42));
        r.push_imm(9, Variant::Double(0.5));
        r.push_imm(10, Variant::string("région"));
        r.push_imm(11, Variant::Bool(true));
        r.push_ref(3);
        let mut buf = Vec::new();
        encode(&r, &mut buf);
        encode(&r, &mut buf);
        let mut pos = 0;
        let mut back = Record::ctx();
        decode(&buf, &mut pos, &mut back);
        assert_eq!(back, r);
        decode(&buf, &mut pos, &mut back);
        assert_eq!(back, r);
        assert_eq!(pos, buf.len());
    }
}
