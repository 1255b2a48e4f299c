//! Snapshots as the pipeline passes them between services.
//!
//! A snapshot is taken on every triggering update, so it must be cheap to
//! build, read and drop. Its entries are plain copyable values (strings
//! are interned, see [`ValueKey`]): building one writes a few words,
//! clearing it runs no destructor and touches no reference count. It
//! becomes a [`Record`] of [`Variant`]s only when it leaves the runtime
//! (at flush).

use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{Entry, Record};

/// One entry of a snapshot.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SnapshotEntry {
    /// A context-tree node: stands for the `attribute=value` pairs on its
    /// path to the root.
    Node(Id),
    /// An attribute and its value.
    Value(Id, ValueKey),
}

impl SnapshotEntry {
    /// The entry of a record entry (interning string values).
    pub fn from_entry(entry: &Entry) -> SnapshotEntry {
        match entry {
            Entry::Reference(n) => SnapshotEntry::Node(*n),
            Entry::Immediate(a, v) => SnapshotEntry::Value(*a, ValueKey::from_variant(v)),
        }
    }

    /// The record entry.
    pub fn to_entry(self) -> Entry {
        match self {
            SnapshotEntry::Node(n) => Entry::Reference(n),
            SnapshotEntry::Value(a, v) => Entry::Immediate(a, v.to_variant()),
        }
    }
}

/// A snapshot: its entries in the order they were added.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    entries: Vec<SnapshotEntry>,
}

impl Snapshot {
    /// Removes every entry, keeping the allocation.
    #[inline]
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Adds a node.
    #[inline]
    pub fn push_node(&mut self, node: Id) {
        self.entries.push(SnapshotEntry::Node(node));
    }

    /// Adds an attribute's value.
    #[inline]
    pub fn push_value(&mut self, attr: Id, value: ValueKey) {
        self.entries.push(SnapshotEntry::Value(attr, value));
    }

    /// Adds entries.
    #[inline]
    pub fn extend(&mut self, entries: &[SnapshotEntry]) {
        self.entries.extend_from_slice(entries);
    }

    /// The entries, in order.
    #[inline]
    pub fn entries(&self) -> &[SnapshotEntry] {
        &self.entries
    }

    /// The nodes, in order.
    #[inline]
    pub fn nodes(&self) -> impl Iterator<Item = Id> + '_ {
        self.entries.iter().filter_map(|e| match *e {
            SnapshotEntry::Node(n) => Some(n),
            SnapshotEntry::Value(..) => None,
        })
    }

    /// The attribute values, in order.
    #[inline]
    pub fn values(&self) -> impl Iterator<Item = (Id, ValueKey)> + '_ {
        self.entries.iter().filter_map(|e| match *e {
            SnapshotEntry::Value(a, v) => Some((a, v)),
            SnapshotEntry::Node(_) => None,
        })
    }

    /// Replaces `record`'s entries with this snapshot's.
    pub fn to_record(&self, record: &mut Record) {
        record.clear();
        record.entries.extend(self.entries.iter().map(|e| e.to_entry()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::Variant;

    #[test]
    fn converts_to_a_record_in_order() {
        let mut s = Snapshot::default();
        s.push_node(5);
        s.push_value(7, ValueKey::uint(3));
        s.extend(&[SnapshotEntry::from_entry(&Entry::Immediate(9, Variant::string("x")))]);
        s.push_node(2);
        assert_eq!(s.nodes().collect::<Vec<_>>(), [5, 2]);
        assert_eq!(s.values().map(|(a, _)| a).collect::<Vec<_>>(), [7, 9]);
        let mut r = Record::ctx();
        s.to_record(&mut r);
        assert_eq!(
            r.entries,
            [
                Entry::Reference(5),
                Entry::Immediate(7, Variant::Uint(3)),
                Entry::Immediate(9, Variant::string("x")),
                Entry::Reference(2)
            ]
        );
    }
}
