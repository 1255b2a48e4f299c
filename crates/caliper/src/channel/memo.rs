//! What a thread remembers of the context tree in a channel, so that the
//! snapshot of a region begin or end finds its nodes without hashing into
//! the tree: per region-stack node, its last child and its end event
//! ([`NodeMemo`]); and, for programs that alternate between siblings (a
//! loop calling `a`, then `b`, then `c`), the begins seen recently
//! ([`BeginCache`]).
//!
//! Node and attribute ids fit in 32 bits (the context tree holds at most
//! 2^24 nodes), which keeps the tables small; 0 stands for "not known"
//! (node 0 is a bootstrap attribute, never a stack or event node).

use crate::sparse::PAGE;
use crate::value::ValueKey;
use caliper_data::node::Id;

/// What a thread remembers of a region-stack node.
#[derive(Copy, Clone)]
pub(super) struct NodeMemo {
    /// The event node of ending the node's innermost entry.
    pub end: u32,
    /// The child last begun under the node, with the attribute and value
    /// of its entry and the event node of beginning it. Loops begin the
    /// same children again and again, usually in the same order.
    pub child: u32,
    pub child_attr: u32,
    pub begin: u32,
    pub child_value: ValueKey,
}

impl NodeMemo {
    pub const UNKNOWN: NodeMemo =
        NodeMemo { end: 0, child: 0, child_attr: 0, begin: 0, child_value: ValueKey::uint(0) };
}

/// A page of unknown nodes (see [`Sparse`](crate::sparse::Sparse)).
pub(super) static UNKNOWN_PAGE: [NodeMemo; PAGE] = [NodeMemo::UNKNOWN; PAGE];

/// A begin: the entry `attr = value` under `parent`, the node it makes and
/// its event node.
#[derive(Copy, Clone)]
struct Begin {
    parent: u32,
    attr: u32,
    value: ValueKey,
    child: u32,
    event: u32,
}

/// Begins seen recently, in a direct-mapped table indexed by a hash of
/// (parent, attribute, value): the fallback of a [`NodeMemo`] that
/// remembers another child, at the cost of a hash instead of two child
/// lookups in the thread's [`ChildCache`](crate::blackboard::ChildCache).
/// Allocated on the first miss, as a program that repeats one path never
/// needs it.
#[derive(Default)]
pub(super) struct BeginCache {
    slots: Vec<Begin>,
}

/// log2 of the number of slots (1024 slots of 32 bytes).
const BEGIN_BITS: u32 = 10;

impl BeginCache {
    /// The slot of a begin.
    fn index(parent: u32, attr: u32, value: ValueKey) -> usize {
        let h = u64::from(parent).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ u64::from(attr).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            ^ value.hash_bits().wrapping_mul(0x1656_67B1_9E37_79F9);
        (h >> (u64::BITS - BEGIN_BITS)) as usize
    }

    /// The node and the event node of beginning `attr = value` under
    /// `parent` (0: the empty stack), if remembered.
    #[inline]
    pub fn get(&self, parent: u32, attr: u32, value: ValueKey) -> Option<(Id, Id)> {
        let b = self.slots.get(Self::index(parent, attr, value))?;
        (b.attr == attr && b.parent == parent && b.value == value).then(|| (Id::from(b.child), Id::from(b.event)))
    }

    /// Remembers a begin.
    pub fn put(&mut self, parent: u32, attr: u32, value: ValueKey, child: u32, event: u32) {
        if self.slots.is_empty() {
            let empty = Begin { parent: 0, attr: 0, value: ValueKey::uint(0), child: 0, event: 0 };
            self.slots = vec![empty; 1 << BEGIN_BITS];
        }
        let i = Self::index(parent, attr, value);
        self.slots[i] = Begin { parent, attr, value, child, event };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_begin_of_each_slot() {
        let mut cache = BeginCache::default();
        let (a, b) = (ValueKey::uint(1), ValueKey::uint(2));
        assert_eq!(cache.get(5, 7, a), None);
        cache.put(5, 7, a, 10, 11);
        cache.put(5, 7, b, 12, 13);
        assert_eq!(cache.get(5, 7, a), Some((10, 11)));
        assert_eq!(cache.get(5, 7, b), Some((12, 13)));
        // Another parent, attribute or value is another begin.
        assert_eq!(cache.get(6, 7, a), None);
        assert_eq!(cache.get(5, 8, a), None);
        assert_eq!(cache.get(5, 7, ValueKey::int(1)), None);
    }
}
