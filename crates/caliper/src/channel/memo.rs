//! What a thread remembers of the context tree in a channel, so that the
//! snapshot of a region begin or end finds its nodes without hashing into
//! the tree: per region-stack node, its end event, its last child, and the
//! sibling begun after it ended ([`Memo`]: a loop calling `a`, then `b`,
//! then `c` finds each begin from the end before it); and the begins seen
//! recently ([`BeginCache`]).
//!
//! Node and attribute ids fit in 32 bits (the context tree holds at most
//! 2^24 nodes), which keeps the tables small; 0 stands for "not known"
//! (node 0 is a bootstrap attribute, never a stack or event node).

use crate::sparse::{PAGE, Sparse};
use crate::value::ValueKey;
use caliper_data::node::Id;

/// What a thread remembers of the region-stack nodes, by node id (the
/// empty stack at 0). Separate tables: every node ended has an end event,
/// but only nodes with children have a last child, and ids are dense (a
/// region's node, then its event nodes), so one table of all cost the
/// child's 32 bytes for every node id of a program with many regions.
pub(super) struct Memo {
    /// The node of the snapshot of ending each node's innermost entry
    /// (its event node; the node itself in a channel without snapshot
    /// info), 0: unknown.
    ends: Sparse<u32>,
    /// Per node, the child last begun under it.
    children: Sparse<ChildMemo>,
    /// Per node, the sibling begun after it last ended: the next region of
    /// a loop body, which the last child (the body's first region) is not.
    next: Sparse<ChildMemo>,
    /// The node the thread's last update in the channel ended (0: the last
    /// update was a begin), whose `next` predicts a begin.
    last_ended: u32,
}

/// A begin: the child of `parent` with the entry `child_attr =
/// child_value`, and the event node of beginning it. Loops begin the same
/// children again and again, usually in the same order.
#[derive(Copy, Clone)]
pub(super) struct ChildMemo {
    pub parent: u32,
    pub child: u32,
    pub child_attr: u32,
    pub begin: u32,
    pub child_value: ValueKey,
}

impl ChildMemo {
    /// No begin.
    pub const NONE: ChildMemo =
        ChildMemo { parent: 0, child: 0, child_attr: 0, begin: 0, child_value: ValueKey::uint(0) };

    /// The begin of `attr = value` under `parent` that makes node `child`
    /// and event node `begin`, if all ids fit 32 bits.
    pub fn new(parent: Id, attr: Id, value: ValueKey, (child, begin): (Id, Id)) -> Option<ChildMemo> {
        let id = |id: Id| u32::try_from(id).ok();
        Some(ChildMemo {
            parent: id(parent)?,
            child: id(child)?,
            child_attr: id(attr)?,
            begin: id(begin)?,
            child_value: value,
        })
    }

    /// The child and event node of beginning `attr = value` under
    /// `parent`, if this is that begin.
    #[inline(always)]
    pub fn of(&self, parent: Id, attr: Id, value: ValueKey) -> Option<(Id, Id)> {
        let known = self.child != 0
            && Id::from(self.parent) == parent
            && Id::from(self.child_attr) == attr
            && self.child_value == value;
        known.then(|| (Id::from(self.child), Id::from(self.begin)))
    }
}

/// Pages of unknown nodes (see [`Sparse`]).
static NO_ENDS: [u32; PAGE] = [0; PAGE];
static NO_CHILDREN: [ChildMemo; PAGE] = [ChildMemo::NONE; PAGE];

impl Memo {
    pub const fn new() -> Memo {
        Memo {
            ends: Sparse::new(&NO_ENDS),
            children: Sparse::new(&NO_CHILDREN),
            next: Sparse::new(&NO_CHILDREN),
            last_ended: 0,
        }
    }

    /// The end event of node `i` (0: unknown).
    #[inline(always)]
    pub fn end(&self, i: usize) -> u32 {
        self.ends.get(i).copied().unwrap_or(0)
    }

    /// Remembers the end event of node `i`, if its id fits 32 bits.
    pub fn set_end(&mut self, i: usize, end: u32) {
        if u32::try_from(i).is_ok() {
            *self.ends.get_mut(i) = end;
        }
    }

    /// Notes that the thread ended node `node`: a begin that follows is
    /// predicted by what followed it last time.
    #[inline(always)]
    pub fn ended(&mut self, node: Id) {
        self.last_ended = u32::try_from(node).unwrap_or(0);
    }

    /// The predicted begin under `parent`: the one that followed the node
    /// just ended, or else `parent`'s last child. Check it with
    /// [`ChildMemo::of`].
    #[inline(always)]
    pub fn predicted(&self, parent: Id) -> Option<&ChildMemo> {
        match self.last_ended {
            0 => self.children.get(parent as usize),
            ended => self.next.get(ended as usize),
        }
    }

    /// The child and event node of beginning `attr = value` under
    /// `parent` if the memo predicts it, noted as foreseen.
    #[inline(always)]
    pub fn foresee(&mut self, parent: Id, attr: Id, value: ValueKey) -> Option<(Id, Id)> {
        let begin = self.predicted(parent)?.of(parent, attr, value)?;
        self.foreseen();
        Some(begin)
    }

    /// Whether ending node `node`'s innermost entry is known to take its
    /// snapshot at the node itself (a channel without snapshot info, once
    /// the entry's attribute is known to trigger snapshots).
    #[inline(always)]
    pub fn ends_at_itself(&self, node: Id) -> bool {
        Id::from(self.end(node as usize)) == node
    }

    /// Notes a begin that was foreseen: by [`Memo::predicted`], or by a
    /// call site (see [`Sites`](super::sites::Sites)).
    #[inline(always)]
    pub fn foreseen(&mut self) {
        self.last_ended = 0;
    }

    /// Remembers a begin it did not foresee: as `parent`'s last child and
    /// as what follows the node just ended.
    pub fn begun(&mut self, begin: ChildMemo) {
        let ended = std::mem::take(&mut self.last_ended);
        if ended != 0 {
            *self.next.get_mut(ended as usize) = begin;
        }
        *self.children.get_mut(begin.parent as usize) = begin;
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
        let value = ValueKey::uint(1);
        assert!(memo.predicted(5).is_none_or(|c| c.of(5, 7, value).is_none()), "an end makes no child");
        memo.begun(ChildMemo { parent: 5, child: 6, child_attr: 7, begin: 8, child_value: value });
        assert_eq!(memo.predicted(5).and_then(|c| c.of(5, 7, value)), Some((6, 8)));
        assert_eq!(memo.end(5), 9);
    }

    #[test]
    fn a_begin_after_an_end_is_predicted_by_the_node_ended() {
        let mut memo = Memo::new();
        let (a, b) = (ValueKey::uint(1), ValueKey::uint(2));
        let begin = |child, value| ChildMemo { parent: 5, child, child_attr: 7, begin: child + 1, child_value: value };
        // Under node 5: begin a (node 10), end it, begin b (node 20).
        memo.begun(begin(10, a));
        memo.ended(10);
        memo.begun(begin(20, b));
        memo.ended(20);
        // Next round: the last child is b, and nothing followed b yet.
        assert!(memo.predicted(5).and_then(|c| c.of(5, 7, a)).is_none(), "nothing followed 20 yet");
        memo.begun(begin(10, a));
        memo.ended(10);
        assert_eq!(memo.predicted(5).and_then(|c| c.of(5, 7, b)), Some((20, 21)), "b follows a");
        memo.foreseen();
        memo.ended(20);
        assert_eq!(memo.predicted(5).and_then(|c| c.of(5, 7, a)), Some((10, 11)), "a follows b");
        // The prediction holds for its parent only.
        assert!(memo.predicted(6).and_then(|c| c.of(6, 7, a)).is_none());
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
