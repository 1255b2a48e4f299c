//! What a thread remembers of the context tree in a channel, so that the
//! snapshot of a region begin or end finds its nodes without hashing into
//! the tree: per region-stack node, its end event and its last child
//! ([`Memo`]); and, for programs that alternate between siblings (a
//! loop calling `a`, then `b`, then `c`), the begins seen recently
//! ([`BeginCache`]).
//!
//! Node and attribute ids fit in 32 bits (the context tree holds at most
//! 2^24 nodes), which keeps the tables small; 0 stands for "not known"
//! (node 0 is a bootstrap attribute, never a stack or event node).

use crate::sparse::{PAGE, Sparse};
use crate::value::ValueKey;
use caliper_data::node::Id;

/// What a thread remembers of the region-stack nodes, by node id (the
/// empty stack at 0). Two tables: every node ended has an end event, but
/// only nodes with children have a last child, and ids are dense (a
/// region's node, then its event nodes), so one table of both cost the
/// child's 32 bytes for every node id of a program with many regions.
pub(super) struct Memo {
    /// The event node of ending each node's innermost entry (0: unknown).
    ends: Sparse<u32>,
    children: Sparse<ChildMemo>,
}

/// The child last begun under a node, with the attribute and value of its
/// entry and the event node of beginning it. Loops begin the same children
/// again and again, usually in the same order.
#[derive(Copy, Clone)]
pub(super) struct ChildMemo {
    pub child: u32,
    pub child_attr: u32,
    pub begin: u32,
    pub child_value: ValueKey,
}

/// Pages of unknown nodes (see [`Sparse`]).
static NO_ENDS: [u32; PAGE] = [0; PAGE];
static NO_CHILDREN: [ChildMemo; PAGE] =
    [ChildMemo { child: 0, child_attr: 0, begin: 0, child_value: ValueKey::uint(0) }; PAGE];

impl Memo {
    pub const fn new() -> Memo {
        Memo { ends: Sparse::new(&NO_ENDS), children: Sparse::new(&NO_CHILDREN) }
    }

    /// The end event of node `i` (0: unknown).
    #[inline(always)]
    pub fn end(&self, i: usize) -> u32 {
        self.ends.get(i).copied().unwrap_or(0)
    }

    /// The last child of node `i` (`child` 0: none).
    #[inline(always)]
    pub fn child(&self, i: usize) -> Option<&ChildMemo> {
        self.children.get(i)
    }

    /// Remembers the end event of node `i`, if its id fits 32 bits.
    pub fn set_end(&mut self, i: usize, end: u32) {
        if u32::try_from(i).is_ok() {
            *self.ends.get_mut(i) = end;
        }
    }

    /// The last child of node `i` to write, if its id fits 32 bits.
    pub fn child_mut(&mut self, i: usize) -> Option<&mut ChildMemo> {
        u32::try_from(i).ok()?;
        Some(self.children.get_mut(i))
    }
}

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
    fn ends_and_children_are_remembered_apart() {
        let mut memo = Memo::new();
        assert_eq!(memo.end(5), 0);
        memo.set_end(5, 9);
        assert_eq!(memo.end(5), 9);
        assert!(memo.child(5).is_none_or(|c| c.child == 0), "an end makes no child");
        if let Some(c) = memo.child_mut(5) {
            (c.child, c.child_attr, c.begin) = (6, 7, 8);
        }
        assert_eq!(memo.child(5).map(|c| c.child), Some(6));
        assert_eq!(memo.end(5), 9);
    }

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
