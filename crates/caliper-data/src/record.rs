//! Entries and records: what a snapshot or the run metadata consists of.

use crate::node::Id;
use crate::variant::Variant;

/// Whether a record is a snapshot or the run metadata.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum RecordKind {
    /// A snapshot (`__rec=ctx`).
    #[default]
    Ctx,
    /// The globals (`__rec=globals`).
    Globals,
}

impl RecordKind {
    /// The `__rec=` tag of the kind.
    pub fn tag(self) -> &'static str {
        match self {
            RecordKind::Ctx => "ctx",
            RecordKind::Globals => "globals",
        }
    }
}

/// One entry of a record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    /// A context-tree node: stands for every `attribute=value` pair on the
    /// path from the node up to the root.
    Reference(Id),
    /// An attribute and its value, stored in the record itself.
    Immediate(Id, Variant),
}

impl Entry {
    /// The node a writer must have written before this entry: the node
    /// itself for a reference, the attribute for an immediate.
    pub fn node(&self) -> Id {
        match *self {
            Entry::Reference(id) | Entry::Immediate(id, _) => id,
        }
    }
}

/// A record: its entries in the order they were taken.
///
/// A `.cali` line lists reference and immediate entries separately, but the
/// order of all entries decides the order in which a writer emits the nodes
/// they need, so a record keeps them interleaved, as snapshots are built.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// Snapshot or globals.
    pub kind: RecordKind,
    /// The entries.
    pub entries: Vec<Entry>,
}

impl Record {
    /// An empty snapshot record.
    pub fn ctx() -> Record {
        Record::default()
    }

    /// An empty globals record.
    pub fn globals() -> Record {
        Record { kind: RecordKind::Globals, entries: Vec::new() }
    }

    /// Whether the record has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes all entries, keeping the allocation (readers reuse one
    /// record for every line).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Appends a reference entry.
    pub fn push_ref(&mut self, node: Id) {
        self.entries.push(Entry::Reference(node));
    }

    /// Appends an immediate entry.
    pub fn push_imm(&mut self, attribute: Id, value: Variant) {
        self.entries.push(Entry::Immediate(attribute, value));
    }

    /// The reference entries, in order.
    pub fn refs(&self) -> impl Iterator<Item = Id> + '_ {
        self.entries.iter().filter_map(|e| match e {
            Entry::Reference(id) => Some(*id),
            Entry::Immediate(..) => None,
        })
    }

    /// The immediate entries, in order.
    pub fn immediates(&self) -> impl Iterator<Item = (Id, &Variant)> + '_ {
        self.entries.iter().filter_map(|e| match e {
            Entry::Immediate(a, v) => Some((*a, v)),
            Entry::Reference(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_compact() {
        assert_eq!(std::mem::size_of::<Entry>(), 24);
    }

    #[test]
    fn refs_and_immediates_keep_their_order() {
        let mut r = Record::ctx();
        r.push_ref(5);
        r.push_imm(7, Variant::Uint(1));
        r.push_ref(3);
        r.push_imm(2, Variant::Int(-1));
        assert_eq!(r.refs().collect::<Vec<_>>(), [5, 3]);
        assert_eq!(r.immediates().map(|(a, _)| a).collect::<Vec<_>>(), [7, 2]);
        assert_eq!(r.entries.iter().map(Entry::node).collect::<Vec<_>>(), [5, 7, 3, 2]);
    }
}
