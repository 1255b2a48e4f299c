//! The orders in which aggregation entries met their metrics, each kept
//! once.
//!
//! An entry flushes its statistics in the order it first saw their
//! metrics. Nearly every entry of a thread sees the same metrics in the
//! same order (a region's begin its duration, its end a count and a
//! duration), so an entry holds the number of its order here instead of a
//! list of its own: four bytes instead of a vector and its allocation,
//! which were most of an entry's memory in programs with many regions.

use caliper_data::hash::FxHashMap;

/// A set of orders, as a trie: each order is an earlier one extended by one
/// metric slot.
pub(super) struct Orders {
    /// The metric slots of each order; order [`Orders::EMPTY`] has none.
    lists: Vec<Box<[u32]>>,
    /// The order that extends order `o` with slot `s`, by `(o, s)`.
    next: FxHashMap<(u32, u32), u32>,
}

impl Default for Orders {
    fn default() -> Orders {
        Orders { lists: vec![Box::default()], next: FxHashMap::default() }
    }
}

impl Orders {
    /// The order of an entry that has seen no metric yet.
    pub const EMPTY: u32 = 0;

    /// The metric slots of order `o`, in order (none for an unknown order).
    pub fn slots(&self, o: u32) -> &[u32] {
        self.lists.get(o as usize).map_or(&[], |l| l)
    }

    /// The order of `o` followed by `slot`, made if new.
    pub fn then(&mut self, o: u32, slot: u32) -> u32 {
        if let Some(&next) = self.next.get(&(o, slot)) {
            return next;
        }
        let list: Box<[u32]> = self.slots(o).iter().copied().chain([slot]).collect();
        let next = self.lists.len() as u32;
        self.lists.push(list);
        self.next.insert((o, slot), next);
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_orders_are_one() {
        let mut orders = Orders::default();
        let a = orders.then(Orders::EMPTY, 3);
        let ab = orders.then(a, 1);
        let again = orders.then(Orders::EMPTY, 3);
        assert_eq!(orders.then(again, 1), ab);
        assert_eq!(orders.slots(ab), [3, 1]);
        let other = orders.then(Orders::EMPTY, 1);
        assert_ne!(orders.then(other, 3), ab);
        assert_eq!(orders.slots(Orders::EMPTY), [] as [u32; 0]);
    }
}
