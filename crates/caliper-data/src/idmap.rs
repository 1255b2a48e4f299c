//! Maps from the node ids of one stream to the ids of a database.

use crate::node::{BOOTSTRAP_NODE_COUNT, INV_ID, Id};
use std::collections::HashMap;

/// Below this size the dense table may always grow to hold an id.
const DENSE_MIN_CAPACITY: u64 = 1 << 16;

/// A map from stream ids to database ids, dense for the small ids streams
/// normally use and sparse for the rest, so that one huge id in a file
/// cannot make the reader allocate gigabytes.
#[derive(Clone, Debug)]
pub struct IdMap {
    dense: Vec<Id>,
    sparse: HashMap<u64, Id>,
}

impl Default for IdMap {
    fn default() -> IdMap {
        IdMap::new()
    }
}

impl IdMap {
    /// A map with the bootstrap ids mapped to themselves.
    pub fn new() -> IdMap {
        IdMap { dense: (0..BOOTSTRAP_NODE_COUNT).collect(), sparse: HashMap::new() }
    }

    /// The database id for a stream id.
    #[inline]
    pub fn get(&self, stream_id: u64) -> Option<Id> {
        match self.dense.get(stream_id as usize) {
            Some(&id) if id != INV_ID => Some(id),
            Some(_) => None,
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(&stream_id).copied(),
        }
    }

    /// Maps `stream_id` to `id`, replacing an earlier mapping.
    pub fn insert(&mut self, stream_id: u64, id: Id) {
        let len = self.dense.len() as u64;
        if stream_id < len {
            self.dense[stream_id as usize] = id;
        } else if stream_id < (2 * len).max(DENSE_MIN_CAPACITY) {
            self.dense.resize(stream_id as usize + 1, INV_ID);
            self.dense[stream_id as usize] = id;
        } else {
            self.sparse.insert(stream_id, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_ids_are_identity() {
        let m = IdMap::new();
        for i in 0..12 {
            assert_eq!(m.get(i), Some(i));
        }
        assert_eq!(m.get(12), None);
    }

    #[test]
    fn dense_and_sparse_ids() {
        let mut m = IdMap::new();
        m.insert(100, 12);
        m.insert(u64::MAX - 1, 13);
        m.insert(50_000_000_000, 14);
        assert_eq!(m.get(100), Some(12));
        assert_eq!(m.get(99), None);
        assert_eq!(m.get(u64::MAX - 1), Some(13));
        assert_eq!(m.get(50_000_000_000), Some(14));
        assert!(m.dense.len() < 1 << 17);
        m.insert(100, 15);
        assert_eq!(m.get(100), Some(15));
    }
}
