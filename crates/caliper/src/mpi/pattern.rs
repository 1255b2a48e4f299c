//! The communication pattern (`CALI_MPI_MSG_PATTERN`, the `comm.stats`
//! option): what each instance of a `comm.region` communicated, as the
//! reference's `mpi` service computes it. Each thread tallies the messages
//! the MPI binding reports (see [`crate::mpi::messages`]) in running totals;
//! the `mpi` service marks the totals where a `comm.region` begins, and
//! where it ends takes a snapshot, inside the region, of the difference:
//!
//! * `total.send.count`, `total.recv.count`, `total.coll.count`: messages
//!   sent, received, and collectives;
//! * `mpi.send.size`, `mpi.recv.size`, `mpi.coll.size`: their bytes;
//! * `total.dest.ranks`, `total.src.ranks`: how many distinct ranks (of
//!   the messages' communicators) were sent to and received from.
//!
//! All are aggregatable, so profiles keep their minimum, maximum, sum and
//! average per region. Nested comm regions each count what happened
//! inside them, their inner regions' messages included.
//!
//! A receive posted with `MPI_Irecv` and completed inside a `comm.region`
//! also gives an asynchronous event `async.end=irecv.req_wait_gap` whose
//! `event.duration.ns` is the time from the post to the wait or test that
//! completed it: the time the program had to overlap the transfer
//! ([`crate::mpi::messages::irecv_wait_gap`]).

use crate::attributes::Attribute;
use crate::mpi::Message;
use crate::service::Runtime;
use caliper_data::hash::FxHashMap;
use caliper_data::{AttrType, Entry, Properties, Variant};
use std::cell::RefCell;

/// A thread's running totals of the messages its MPI calls reported.
#[derive(Default)]
struct Tally {
    counts: Counts,
    /// The sequence number of the last message to each destination rank,
    /// and from each source rank (the thread's messages numbered from 1).
    last_to: FxHashMap<i64, u64>,
    last_from: FxHashMap<i64, u64>,
}

/// The running counts of a thread, and the mark a region keeps of them.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Counts {
    /// The number of messages and collectives so far.
    messages: u64,
    sends: i64,
    recvs: i64,
    colls: i64,
    send_bytes: i64,
    recv_bytes: i64,
    coll_bytes: i64,
}

/// What a thread communicated since a [`mark`].
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Totals {
    /// Messages sent (`total.send.count`).
    pub sends: i64,
    /// Messages received (`total.recv.count`).
    pub recvs: i64,
    /// Collectives taken part in (`total.coll.count`).
    pub colls: i64,
    /// Bytes sent (`mpi.send.size`).
    pub send_bytes: i64,
    /// Bytes received (`mpi.recv.size`).
    pub recv_bytes: i64,
    /// Bytes of collectives (`mpi.coll.size`).
    pub coll_bytes: i64,
    /// Distinct ranks sent to (`total.dest.ranks`): a rank counts once
    /// however many messages went to it.
    pub dest_ranks: i64,
    /// Distinct ranks received from (`total.src.ranks`).
    pub src_ranks: i64,
}

thread_local! {
    static TALLY: RefCell<Tally> = RefCell::new(Tally::default());
}

impl Tally {
    fn add(&mut self, message: &Message) {
        let c = &mut self.counts;
        c.messages += 1;
        match *message {
            Message::Sent { dst, bytes, .. } => {
                (c.sends, c.send_bytes) = (c.sends + 1, c.send_bytes + bytes);
                self.last_to.insert(dst, c.messages);
            }
            Message::Received { src, bytes, .. } => {
                (c.recvs, c.recv_bytes) = (c.recvs + 1, c.recv_bytes + bytes);
                self.last_from.insert(src, c.messages);
            }
            Message::Collective { bytes, .. } => (c.colls, c.coll_bytes) = (c.colls + 1, c.coll_bytes + bytes),
        }
    }

    /// A rank was messaged since `mark` if its last message came after
    /// the mark: the number of such ranks is the number of distinct ranks
    /// messaged since.
    fn since(&self, mark: &Counts) -> Totals {
        let (now, after) =
            (&self.counts, |last: &FxHashMap<i64, u64>| last.values().filter(|&&n| n > mark.messages).count() as i64);
        Totals {
            sends: now.sends - mark.sends,
            recvs: now.recvs - mark.recvs,
            colls: now.colls - mark.colls,
            send_bytes: now.send_bytes - mark.send_bytes,
            recv_bytes: now.recv_bytes - mark.recv_bytes,
            coll_bytes: now.coll_bytes - mark.coll_bytes,
            dest_ranks: after(&self.last_to),
            src_ranks: after(&self.last_from),
        }
    }
}

// (A thread whose locals are gone, in a destructor at its exit, counts
// nothing more.)

/// Adds a message to the calling thread's totals.
pub(crate) fn tally(message: &Message) {
    let _ = TALLY.try_with(|t| t.borrow_mut().add(message));
}

/// The calling thread's totals now, to count from.
pub fn mark() -> Counts {
    TALLY.try_with(|t| t.borrow().counts).unwrap_or_default()
}

/// What the calling thread communicated since `mark`.
pub fn since(mark: &Counts) -> Totals {
    TALLY.try_with(|t| t.borrow().since(mark)).unwrap_or_default()
}

/// The attributes of a comm region's snapshot.
pub struct PatternAttributes {
    sends: Attribute,
    recvs: Attribute,
    colls: Attribute,
    send_bytes: Attribute,
    recv_bytes: Attribute,
    coll_bytes: Attribute,
    dest_ranks: Attribute,
    src_ranks: Attribute,
}

impl PatternAttributes {
    /// Makes the attributes, aggregatable, so that profiles keep their
    /// minimum, maximum, sum and average per comm region.
    pub fn new(cali: &dyn Runtime) -> PatternAttributes {
        let props = Properties::ASVALUE | Properties::SKIP_EVENTS | Properties::AGGREGATABLE;
        let attr = |name: &str| cali.create_attribute(name, AttrType::Int, props, &[]);
        PatternAttributes {
            sends: attr("total.send.count"),
            recvs: attr("total.recv.count"),
            colls: attr("total.coll.count"),
            send_bytes: attr("mpi.send.size"),
            recv_bytes: attr("mpi.recv.size"),
            coll_bytes: attr("mpi.coll.size"),
            dest_ranks: attr("total.dest.ranks"),
            src_ranks: attr("total.src.ranks"),
        }
    }

    /// The snapshot entries of `totals`.
    pub fn entries(&self, totals: &Totals, into: &mut Vec<Entry>) {
        let t = totals;
        into.extend(
            [
                (self.sends, t.sends),
                (self.recvs, t.recvs),
                (self.colls, t.colls),
                (self.send_bytes, t.send_bytes),
                (self.recv_bytes, t.recv_bytes),
                (self.coll_bytes, t.coll_bytes),
                (self.dest_ranks, t.dest_ranks),
                (self.src_ranks, t.src_ranks),
            ]
            .map(|(attr, v)| Entry::Immediate(attr.id(), Variant::Int(v))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(dst: i64, bytes: i64) -> Message {
        Message::Sent { dst, tag: 0, bytes }
    }

    fn received(src: i64, bytes: i64) -> Message {
        Message::Received { src, tag: 0, bytes }
    }

    #[test]
    fn totals_count_what_happened_since_the_mark_and_distinct_ranks() {
        let mut t = Tally::default();
        t.add(&sent(1, 8));
        t.add(&sent(2, 8));
        let outer = t.counts;
        t.add(&sent(2, 4));
        t.add(&received(3, 16));
        let inner = t.counts;
        t.add(&sent(1, 4));
        t.add(&sent(2, 4));
        t.add(&received(3, 16));
        t.add(&Message::Collective { kind: 2, root: None, bytes: 32 });
        assert_eq!(
            t.since(&inner),
            Totals {
                sends: 2,
                recvs: 1,
                colls: 1,
                send_bytes: 8,
                recv_bytes: 16,
                coll_bytes: 32,
                dest_ranks: 2,
                src_ranks: 1
            }
        );
        assert_eq!(
            t.since(&outer),
            Totals {
                sends: 3,
                recvs: 2,
                colls: 1,
                send_bytes: 12,
                recv_bytes: 32,
                coll_bytes: 32,
                dest_ranks: 2,
                src_ranks: 1
            }
        );
        let now = t.counts;
        assert_eq!(t.since(&now), Totals::default(), "nothing since now");
    }
}
