//! Aggregation keys in eight bytes.
//!
//! Nearly every key is one or two context-tree nodes (the event node, under
//! the process context), and node ids fit 32 bits (the tree holds at most
//! 2^24 nodes). Such keys are kept inline in the entry; the few others
//! (more nodes, or the values of key attributes) are snapshots in a side
//! table, which the key points to. A heap-allocated snapshot per entry
//! cost more than the entry's statistics in programs with many regions.

use crate::snapshot::Snapshot;
use caliper_data::node::Id;
use caliper_data::{Entry, Record};

/// A key: `(ONE, n)` the node `n`; `(LONG, i)` the `i`th long key; else
/// the nodes `(a, b)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Key {
    first: u32,
    second: u32,
}

/// Markers of `Key::first`, past every node id.
const ONE: u32 = u32::MAX;
const LONG: u32 = u32::MAX - 1;

/// What a key stands for.
pub(super) enum Kind {
    One(Id),
    Pair(Id, Id),
    /// The index of a snapshot in the long keys.
    Long(usize),
}

impl Key {
    /// The key of one node, if its id fits.
    pub fn one(node: Id) -> Option<Key> {
        Some(Key { first: ONE, second: u32::try_from(node).ok()? })
    }

    /// The key of two nodes, if their ids fit.
    pub fn pair(a: Id, b: Id) -> Option<Key> {
        let first = u32::try_from(a).ok().filter(|&a| a < LONG)?;
        Some(Key { first, second: u32::try_from(b).ok()? })
    }

    /// The key of long key `i`.
    pub fn long(i: u32) -> Key {
        Key { first: LONG, second: i }
    }

    pub fn kind(self) -> Kind {
        match self.first {
            ONE => Kind::One(Id::from(self.second)),
            LONG => Kind::Long(self.second as usize),
            a => Kind::Pair(Id::from(a), Id::from(self.second)),
        }
    }

    /// Replaces `record`'s entries with the key's (a long key's from
    /// `long`).
    pub fn to_record(self, long: &[Snapshot], record: &mut Record) {
        record.clear();
        match self.kind() {
            Kind::One(n) => record.entries.push(Entry::Reference(n)),
            Kind::Pair(a, b) => record.entries.extend([Entry::Reference(a), Entry::Reference(b)]),
            Kind::Long(i) => {
                if let Some(key) = long.get(i) {
                    key.to_record(record);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::ValueKey;

    #[test]
    fn keys_read_back_as_records() {
        let mut long = Snapshot::default();
        long.push_node(4);
        long.push_value(9, ValueKey::uint(2));
        let mut record = Record::ctx();
        let records = [Key::one(7), Key::pair(3, 7), Some(Key::long(0))].map(|k| {
            k.expect("fits").to_record(std::slice::from_ref(&long), &mut record);
            record.entries.clone()
        });
        assert_eq!(records[0], [Entry::Reference(7)]);
        assert_eq!(records[1], [Entry::Reference(3), Entry::Reference(7)]);
        assert_eq!(records[2], [Entry::Reference(4), Entry::Immediate(9, caliper_data::Variant::Uint(2))]);
        assert!(Key::one(1 << 40).is_none());
        assert!(Key::pair(u64::from(LONG), 1).is_none());
        assert!(Key::pair(3, 7).is_some_and(|k| matches!(k.kind(), Kind::Pair(3, 7))));
    }
}
