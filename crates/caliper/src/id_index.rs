//! A hash index of 32-bit ids whose keys live elsewhere: the context
//! tree's nodes by (parent, attribute, value), the interned strings by
//! content.
//!
//! A map from key to id keeps a copy of every key; for the tree and the
//! string table, which already hold their keys in place, that copy was
//! most of their memory (about 50 bytes per node, 30 per string, in
//! programs with a million region names). Here a slot is the id and 32
//! bits of its key's hash, 8 bytes: the hash both places the slot and, on
//! a lookup, skips the slots of other keys without reading them; the
//! caller tells whether the id of an equal hash has the key sought.
//! Linear probing, filled to at most 3/4.

/// The index.
#[derive(Default)]
pub(crate) struct IdIndex {
    slots: Box<[Slot]>,
    len: usize,
}

#[derive(Copy, Clone)]
struct Slot {
    /// The id + 1; 0: empty.
    id: u32,
    hash: u32,
}

const EMPTY: Slot = Slot { id: 0, hash: 0 };

impl IdIndex {
    /// The id whose hash is `hash` and for which `is` holds, if any.
    #[inline]
    pub fn find(&self, hash: u32, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        let mask = self.slots.len().checked_sub(1)?;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot.id == 0 {
                return None;
            }
            if slot.hash == hash && is(slot.id - 1) {
                return Some(slot.id - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `id` (not in the index yet, and below `u32::MAX`) with its
    /// key's hash.
    pub fn insert(&mut self, hash: u32, id: u32) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        self.put(Slot { id: id.saturating_add(1), hash });
        self.len += 1;
    }

    /// Puts a slot in the first empty place of its probe sequence (there
    /// is one: the index is never full).
    fn put(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = slot.hash as usize & mask;
        while self.slots[i].id != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// Doubles the slots.
    #[cold]
    fn grow(&mut self) {
        let slots = vec![EMPTY; (self.slots.len() * 2).max(16)].into_boxed_slice();
        let old = std::mem::replace(&mut self.slots, slots);
        for slot in old.iter().filter(|s| s.id != 0) {
            self.put(*slot);
        }
    }
}

/// Mixes a 64-bit hash into the 32 bits the index keeps (the high half of
/// a multiplicative hash is its well-mixed part).
#[inline]
pub(crate) fn fold(h: u64) -> u32 {
    let h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_ids_by_key_through_collisions() {
        let keys: Vec<u64> = (0..1000).map(|i| i * 7919).collect();
        let mut index = IdIndex::default();
        assert_eq!(index.find(0, |_| true), None);
        for (id, &k) in keys.iter().enumerate() {
            // Every tenth key has the hash of another: only the key tells.
            let h = if id % 10 == 9 { fold(keys[id - 1]) } else { fold(k) };
            index.insert(h, id as u32);
        }
        assert_eq!(index.len, 1000);
        for (id, &k) in keys.iter().enumerate() {
            let h = if id % 10 == 9 { fold(keys[id - 1]) } else { fold(k) };
            assert_eq!(index.find(h, |i| keys[i as usize] == k), Some(id as u32));
        }
        assert_eq!(index.find(fold(1), |i| keys[i as usize] == 1), None);
    }
}
