//! The context tree: the append-only tree of `attribute=value` nodes that
//! every thread shares. Region paths, attributes and event information are
//! all nodes of it.
//!
//! Reading a node takes no lock: nodes live in fixed chunks that are never
//! moved or freed, and a node is published (the length advanced with
//! release ordering) only after it is written. Creating a node takes a lock;
//! threads keep their own caches of child lookups, so in the steady state
//! they never ask the tree.
//!
//! Nodes are kept in 24 bytes, ids in 32 bits (the tree holds at most
//! 2^24 nodes), rather than as [`Node`]s of 40: a program with a million
//! region names makes three million nodes.
//!
//! The index of children hashes a node's parent, attribute and value with
//! strings as their interned symbols, so that a lookup never hashes a
//! string, and keeps node ids only (see `IdIndex`), not a copy of each
//! node's key.

use crate::id_index::{IdIndex, fold};
use crate::value::ValueKey;
use crate::{log, sync};
use caliper_data::node::{INV_ID, Id, bootstrap_nodes};
use caliper_data::{Node, NodeRef, NodeStore, Variant};
use std::mem::MaybeUninit;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Nodes per chunk.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks at most: 16 million nodes.
const MAX_CHUNKS: usize = 4096;

/// The shared context tree.
pub struct ContextTree {
    chunks: Box<[AtomicPtr<MaybeUninit<Stored>>]>,
    len: AtomicU64,
    index: Mutex<IdIndex>,
    /// Whether a node was refused for want of room (said once).
    full: AtomicBool,
    /// Whether a node was refused for an attribute or parent id past 32
    /// bits (said once).
    out_of_range: AtomicBool,
}

/// A node as the tree keeps it.
struct Stored {
    attribute: u32,
    /// [`NO_PARENT`] under the root.
    parent: u32,
    value: Variant,
}

const NO_PARENT: u32 = u32::MAX;

impl Stored {
    /// The stored form of `node`, if its ids fit.
    fn new(node: Node) -> Option<Stored> {
        let parent = match node.parent {
            None => NO_PARENT,
            Some(p) => u32::try_from(p).ok().filter(|&p| p != NO_PARENT)?,
        };
        Some(Stored { attribute: u32::try_from(node.attribute).ok()?, parent, value: node.value })
    }

    fn to_ref(&self) -> NodeRef<'_> {
        NodeRef {
            attribute: Id::from(self.attribute),
            value: &self.value,
            parent: (self.parent != NO_PARENT).then_some(Id::from(self.parent)),
        }
    }
}

impl Default for ContextTree {
    fn default() -> ContextTree {
        ContextTree::new()
    }
}

impl ContextTree {
    /// Whether another thread is adding a node (see [`crate::sync::is_held`]).
    pub(crate) fn is_locked(&self) -> bool {
        crate::sync::is_held(&self.index)
    }

    /// A tree holding the bootstrap nodes 0 to 11.
    pub fn new() -> ContextTree {
        ContextTree::with_chunks(MAX_CHUNKS)
    }

    /// A tree with room for `chunks` chunks (tests fill a small one).
    fn with_chunks(chunks: usize) -> ContextTree {
        let chunks = (0..chunks).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect();
        let tree = ContextTree {
            chunks,
            len: AtomicU64::new(0),
            index: Mutex::new(IdIndex::default()),
            full: AtomicBool::new(false),
            out_of_range: AtomicBool::new(false),
        };
        {
            let mut index = sync::lock(&tree.index);
            for node in bootstrap_nodes() {
                let hash = child_hash(node.parent, node.attribute, ValueKey::from_variant(&node.value));
                tree.append(&mut index, hash, node);
            }
        }
        tree
    }

    /// The number of nodes.
    pub fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// Whether the tree has no nodes (never: it has the bootstrap nodes).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The node with this id.
    #[inline]
    pub fn get(&self, id: Id) -> Option<NodeRef<'_>> {
        if id >= self.len.load(Ordering::Acquire) {
            return None;
        }
        // In range: `len` never passes the chunks' capacity.
        let chunk = self.chunks[(id >> CHUNK_BITS) as usize].load(Ordering::Acquire);
        // SAFETY: ids below `len` were written before `len` was advanced
        // (release), their chunk pointer was published before that, and
        // chunks are never freed or moved.
        Some(unsafe { (*chunk.add(id as usize & (CHUNK - 1))).assume_init_ref() }.to_ref())
    }

    /// The child `attribute = value` of `parent` (`None`: the root),
    /// created if it does not exist yet.
    pub fn get_child(&self, attribute: Id, value: Variant, parent: Option<Id>) -> Id {
        let key = ValueKey::from_variant(&value);
        self.child(attribute, key, value, parent)
    }

    /// [`ContextTree::get_child`] of a value already interned.
    pub fn get_child_key(&self, attribute: Id, value: ValueKey, parent: Option<Id>) -> Id {
        self.child(attribute, value, value.to_variant(), parent)
    }

    /// The child `attribute = value` of `parent`, `key` being the value's
    /// key.
    fn child(&self, attribute: Id, key: ValueKey, value: Variant, parent: Option<Id>) -> Id {
        let hash = child_hash(parent, attribute, key);
        let mut index = sync::lock(&self.index);
        let found = index.find(hash, |id| {
            self.get(Id::from(id)).is_some_and(|n| n.parent == parent && n.attribute == attribute && *n.value == value)
        });
        match found {
            Some(id) => Id::from(id),
            None => self.append(&mut index, hash, Node { attribute, value, parent }),
        }
    }

    /// The node for a list of (attribute, value) pairs, each the child of
    /// the previous one, under `parent`.
    pub fn get_path(&self, pairs: &[(Id, Variant)], mut parent: Option<Id>) -> Option<Id> {
        for (attr, value) in pairs {
            parent = Some(self.get_child(*attr, value.clone(), parent));
        }
        parent
    }

    /// Adds a node (not in the tree yet) whose [`child_hash`] is `hash`.
    fn append(&self, index: &mut IdIndex, hash: u32, node: Node) -> Id {
        let id = self.len.load(Ordering::Relaxed);
        let chunk_no = (id >> CHUNK_BITS) as usize;
        let Some(slot) = self.chunks.get(chunk_no) else {
            // Full: the new context is folded into the last node created,
            // a real node, so that the host goes on and every id in use
            // stays below the bound that per-thread tables rely on.
            if !self.full.swap(true, Ordering::Relaxed) {
                log::error(format_args!("Context tree full ({id} nodes): new context is not recorded"));
            }
            return id - 1;
        };
        let (attribute, parent) = (node.attribute, node.parent);
        let Some(node) = Stored::new(node) else {
            // Not a node of this tree: folded in the same way.
            if !self.out_of_range.swap(true, Ordering::Relaxed) {
                log::error(format_args!(
                    "Context node with attribute {attribute} under {parent:?}: no such node, context is not recorded"
                ));
            }
            return id - 1;
        };
        let mut chunk = slot.load(Ordering::Relaxed);
        if chunk.is_null() {
            let storage: Box<[MaybeUninit<Stored>]> = (0..CHUNK).map(|_| MaybeUninit::uninit()).collect();
            chunk = Box::leak(storage).as_mut_ptr();
            slot.store(chunk, Ordering::Release);
        }
        // SAFETY: the slot is past `len`, so no reader looks at it, and the
        // index lock keeps other writers out.
        unsafe { (*chunk.add(id as usize & (CHUNK - 1))).write(node) };
        self.len.store(id + 1, Ordering::Release);
        // Below 2^24: the chunks hold no more.
        index.insert(hash, id as u32);
        id
    }

    /// Appends the nodes from the root down to `node`.
    pub fn path_to(&self, node: Id, out: &mut Vec<Id>) {
        let start = out.len();
        let mut next = Some(node);
        while let Some(id) = next {
            let Some(n) = self.get(id) else { break };
            out.push(id);
            next = n.parent;
        }
        out[start..].reverse();
    }
}

/// The hash of the node `attribute = value` under `parent` in the index.
fn child_hash(parent: Option<Id>, attribute: Id, value: ValueKey) -> u32 {
    let parent = parent.unwrap_or(INV_ID);
    fold(
        (parent.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) ^ attribute).wrapping_mul(0x1656_67B1_9E37_79F9)
            ^ value.hash_bits(),
    )
}

impl NodeStore for ContextTree {
    fn node(&self, id: Id) -> Option<NodeRef<'_>> {
        self.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::node::NAME_ATTR_ID;

    #[test]
    fn bootstrap_nodes_and_children() {
        let tree = ContextTree::new();
        assert_eq!(tree.len(), 12);
        assert_eq!(*tree.get(8).unwrap().value, Variant::string("cali.attribute.name"));
        let a = tree.get_child(NAME_ATTR_ID, Variant::string("x"), Some(3));
        assert_eq!(a, 12);
        assert_eq!(tree.get_child(NAME_ATTR_ID, Variant::string("x"), Some(3)), a);
        let b = tree.get_child(a, Variant::Int(1), None);
        assert_eq!(tree.get(b).unwrap().parent, None);
        assert!(tree.get(10_000).is_none());
    }

    #[test]
    fn a_full_tree_folds_new_context_into_its_last_node() {
        let tree = ContextTree::with_chunks(1);
        let mut last = 0;
        for i in 0..CHUNK as i64 {
            last = tree.get_child(NAME_ATTR_ID, Variant::Int(i), None);
        }
        assert_eq!(tree.len(), CHUNK as u64);
        assert_eq!(last, CHUNK as u64 - 1, "the tree filled up");
        let refused = tree.get_child(NAME_ATTR_ID, Variant::Int(-1), Some(last));
        assert_eq!(refused, last);
        assert!(tree.get(refused).is_some());
        assert_eq!(tree.len(), CHUNK as u64);
    }

    #[test]
    fn a_node_of_ids_past_32_bits_is_folded_into_the_last_node() {
        let tree = ContextTree::new();
        let last = tree.get_child(NAME_ATTR_ID, Variant::Int(1), None);
        assert_eq!(tree.get_child(1 << 40, Variant::Int(2), None), last);
        assert_eq!(tree.get_child(NAME_ATTR_ID, Variant::Int(3), Some(1 << 40)), last);
        assert_eq!(tree.len(), last + 1);
        let n = tree.get(last).unwrap();
        assert_eq!((n.attribute, n.parent, n.value), (NAME_ATTR_ID, None, &Variant::Int(1)));
    }

    #[test]
    fn concurrent_creation_and_reading() {
        let tree = ContextTree::new();
        std::thread::scope(|s| {
            for t in 0..4 {
                let tree = &tree;
                s.spawn(move || {
                    let mut parent = None;
                    for i in 0..5000 {
                        let id = tree.get_child(NAME_ATTR_ID, Variant::Int((i % 100) as i64), parent);
                        assert_eq!(*tree.get(id).unwrap().value, Variant::Int((i % 100) as i64));
                        parent = if i % 10 == 9 { None } else { Some(id) };
                    }
                    t
                });
            }
        });
        // Every thread built the same nodes; they were merged.
        let mut path = Vec::new();
        tree.path_to(tree.len() - 1, &mut path);
        assert!(path.len() <= 10);
        assert!(tree.len() < 12 + 4 * 5000);
    }
}
