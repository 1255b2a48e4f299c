//! MPI message tracing (`CALI_MPI_MSG_TRACING`): the MPI binding reports
//! each point-to-point message and collective a wrapped function completes,
//! and this module takes a snapshot of it, inside the function's region,
//! as the reference's `mpi` service does: `mpi.msg.dst` or `mpi.msg.src`,
//! `mpi.msg.tag`, `mpi.msg.size` (bytes), and one of the counters
//! `mpi.send.count`, `mpi.recv.count`, `mpi.coll.count`; collectives carry
//! `mpi.coll.type` (1 barrier, 2 N-to-N, 3 1-to-N, 4 N-to-1) and
//! `mpi.coll.root`. Sizes and counters are aggregatable, so profiles sum
//! them (`mpi.message.size`, `mpi.message.count`). The same reports feed
//! the communication pattern ([`crate::mpi::pattern`]).

use crate::attributes::Attribute;
use crate::mpi::{self, Message};
use crate::runtime::Caliper;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::sync::OnceLock;

/// The attributes of message snapshots.
struct Attributes {
    src: Attribute,
    dst: Attribute,
    tag: Attribute,
    size: Attribute,
    send_count: Attribute,
    recv_count: Attribute,
    coll_count: Attribute,
    coll_type: Attribute,
    coll_root: Attribute,
}

static ATTRIBUTES: OnceLock<Attributes> = OnceLock::new();

impl Attributes {
    fn new(cali: &Caliper) -> Attributes {
        let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let summed = value | Properties::AGGREGATABLE;
        let attr = |name: &str, props| cali.create_attribute(name, AttrType::Int, props, &[]);
        Attributes {
            src: attr("mpi.msg.src", value),
            dst: attr("mpi.msg.dst", value),
            tag: attr("mpi.msg.tag", value),
            size: attr("mpi.msg.size", summed),
            send_count: attr("mpi.send.count", summed),
            recv_count: attr("mpi.recv.count", summed),
            coll_count: attr("mpi.coll.count", summed),
            coll_type: attr("mpi.coll.type", value),
            coll_root: attr("mpi.coll.root", value),
        }
    }
}

/// Accounts for `message` on the calling thread: its snapshot, if an
/// `mpi` service traces messages, and its part of the communication
/// pattern (see [`crate::mpi::pattern`]), if one keeps that.
pub fn record(message: Message) {
    if mpi::message_pattern() {
        crate::mpi::pattern::tally(&message);
    }
    if !mpi::message_tracing() {
        return;
    }
    let Some(cali) = Caliper::instance() else { return };
    let a = ATTRIBUTES.get_or_init(|| Attributes::new(cali));
    let entry = |attr: Attribute, v: i64| Entry::Immediate(attr.id(), Variant::Int(v));
    // On the stack: a message's snapshot allocates nothing of its own.
    let (entries, n) = match message {
        Message::Sent { dst, tag, bytes } => {
            ([entry(a.dst, dst), entry(a.tag, tag), entry(a.size, bytes), entry(a.send_count, 1)], 4)
        }
        Message::Received { src, tag, bytes } => {
            ([entry(a.src, src), entry(a.tag, tag), entry(a.size, bytes), entry(a.recv_count, 1)], 4)
        }
        Message::Collective { kind, root, bytes } => {
            let n = if root.is_some() { 4 } else { 3 };
            let root = entry(a.coll_root, root.unwrap_or(0));
            ([entry(a.coll_type, kind), entry(a.size, bytes), entry(a.coll_count, 1), root], n)
        }
    };
    cali.push_snapshot(&entries[..n]);
}

/// A receive posted `gap_ns` before the wait or test that completed it:
/// its `irecv.req_wait_gap` event for the communication pattern (see
/// [`crate::mpi::pattern`]), if the calling thread is in a comm region.
pub fn irecv_wait_gap(gap_ns: u64) {
    let Some(cali) = Caliper::instance() else { return };
    if cali.get(cali.builtins().comm_region).is_some() {
        crate::api::emit_async_event("async.end", "irecv.req_wait_gap", Some(gap_ns));
    }
}

/// Now, on the runtime's clock (what [`irecv_wait_gap`] measures with).
pub fn now_ns() -> u64 {
    crate::clock::clock().now_ns()
}
