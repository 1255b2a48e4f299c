//! Snapshots as the pipeline passes them between services.
//!
//! A snapshot is taken on every triggering update, so it must be cheap to
//! build, read and drop. It holds plain copyable values (strings are
//! interned, see [`ValueKey`]): building one writes a few words, clearing
//! it runs no destructor and touches no reference count. Nodes and
//! attribute values are kept apart, each in the order added, because the
//! services read them apart (an aggregation key is made of the nodes, the
//! metrics are values); the `.cali` format keeps them apart too. A
//! snapshot becomes a [`Record`] of [`Variant`](caliper_data::Variant)s
//! only when it leaves the runtime (at flush).

use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{Entry, Record};

/// A snapshot: context-tree nodes (each standing for the
/// `attribute=value` pairs on its path to the root) and attribute values.
#[derive(Default, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Snapshot {
    nodes: Vec<Id>,
    values: Vec<(Id, ValueKey)>,
}

impl Snapshot {
    /// Removes every entry, keeping the allocations.
    #[inline]
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.values.clear();
    }

    /// Adds a node.
    #[inline]
    pub fn push_node(&mut self, node: Id) {
        self.nodes.push(node);
    }

    /// Adds an attribute's value.
    #[inline]
    pub fn push_value(&mut self, attr: Id, value: ValueKey) {
        self.values.push((attr, value));
    }

    /// Adds a record entry (interning a string value).
    pub fn push_entry(&mut self, entry: &Entry) {
        match entry {
            Entry::Reference(n) => self.push_node(*n),
            Entry::Immediate(a, v) => self.push_value(*a, ValueKey::from_variant(v)),
        }
    }

    /// Adds another snapshot's entries.
    #[inline]
    pub fn append(&mut self, other: &Snapshot) {
        // Element by element: the lists are short, shorter than a memcpy
        // call is worth.
        for &n in &other.nodes {
            self.nodes.push(n);
        }
        for &v in &other.values {
            self.values.push(v);
        }
    }

    /// The nodes, in the order added.
    #[inline]
    pub fn nodes(&self) -> &[Id] {
        &self.nodes
    }

    /// The attribute values, in the order added.
    #[inline]
    pub fn values(&self) -> &[(Id, ValueKey)] {
        &self.values
    }

    /// Replaces `record`'s entries with this snapshot's: the nodes, then
    /// the values.
    pub fn to_record(&self, record: &mut Record) {
        record.clear();
        record.entries.extend(self.nodes.iter().map(|&n| Entry::Reference(n)));
        record.entries.extend(self.values.iter().map(|&(a, v)| Entry::Immediate(a, v.to_variant())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::Variant;

    #[test]
    fn converts_to_a_record_nodes_first() {
        let mut s = Snapshot::default();
        s.push_node(5);
        s.push_value(7, ValueKey::uint(3));
        s.push_entry(&Entry::Immediate(9, Variant::string("x")));
        let mut other = Snapshot::default();
        other.push_node(2);
        s.append(&other);
        assert_eq!(s.nodes(), [5, 2]);
        assert_eq!(s.values().iter().map(|(a, _)| *a).collect::<Vec<_>>(), [7, 9]);
        let mut r = Record::ctx();
        s.to_record(&mut r);
        assert_eq!(
            r.entries,
            [
                Entry::Reference(5),
                Entry::Reference(2),
                Entry::Immediate(7, Variant::Uint(3)),
                Entry::Immediate(9, Variant::string("x")),
            ]
        );
    }
}
