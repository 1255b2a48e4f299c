//! Blackboards: the current context of a thread (or of the process).
//!
//! All non-as-value, aligned attributes share one region stack (they must
//! nest properly relative to each other); unaligned ones share a second
//! stack that allows ending out of order; as-value attributes have a slot
//! each. Stack entries turn into context-tree nodes only when a snapshot
//! needs them, so begin and end are a push and a pop.

use crate::attributes::Attribute;
use crate::tree::ContextTree;
use crate::value::ValueKey;
use caliper_data::hash::FxHashMap;
use caliper_data::node::{INV_ID, Id};

/// Child lookups a thread has made: (parent, attribute, value) → node.
/// A small direct-mapped table in front of a hash map answers the lookups
/// a program repeats (the same regions in a loop) without hashing into
/// the map. The table grows with the map, up to 1024 slots: a
/// thread that makes few lookups (most of them) keeps a small one. The
/// map is a cache too, emptied when it reaches 65,536 lookups: a
/// thread that meets many distinct paths (a million region names) would
/// otherwise keep a second copy of the tree's index.
#[derive(Default)]
pub struct ChildCache {
    recent: Box<[(Id, Id, ValueKey, Id)]>,
    map: FxHashMap<(Id, Id, ValueKey), Id>,
}

/// log2 of the largest direct-mapped table (1024 slots of 40 bytes).
const RECENT_MAX_BITS: u32 = 10;
/// The most lookups the map keeps (about 3 MB).
const MAP_MAX: usize = 1 << 16;

impl ChildCache {
    /// The node `attr = value` under `parent`, from the cache or the tree.
    #[inline]
    pub fn child(&mut self, tree: &ContextTree, parent: Option<Id>, attr: Id, value: ValueKey) -> Id {
        let parent = parent.unwrap_or(INV_ID);
        let h = parent.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ attr.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            ^ value.hash_bits().wrapping_mul(0x1656_67B1_9E37_79F9);
        // The top bits, as many as the table's size has (none when empty).
        let slot = h.checked_shr(64 - self.recent.len().trailing_zeros()).unwrap_or(0) as usize;
        if let Some(&(p, a, v, id)) = self.recent.get(slot)
            && p == parent
            && a == attr
            && v == value
        {
            return id;
        }
        let key = (parent, attr, value);
        let id = match self.map.get(&key) {
            Some(&id) => id,
            None => {
                let id = tree.get_child_key(attr, value, (parent != INV_ID).then_some(parent));
                if self.map.len() >= MAP_MAX {
                    self.map = FxHashMap::default();
                }
                self.map.insert(key, id);
                self.grow();
                id
            }
        };
        if let Some(slot) = self.recent.get_mut(slot) {
            *slot = (parent, attr, value, id);
        }
        id
    }

    /// Doubles the direct-mapped table (emptied: it is only a cache) when
    /// the map has outgrown it.
    #[cold]
    fn grow(&mut self) {
        let len = self.recent.len();
        if self.map.len() > len && len < 1 << RECENT_MAX_BITS {
            let empty = (INV_ID, INV_ID, ValueKey::int(0), INV_ID);
            self.recent = vec![empty; (len * 2).max(16)].into_boxed_slice();
        }
    }
}

/// One open value on a stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StackEntry {
    /// The attribute.
    pub attr: Attribute,
    /// The value.
    pub value: ValueKey,
}

/// A stack of open values and, for a prefix of it, their tree nodes.
#[derive(Clone, Debug)]
pub struct Stack {
    entries: Vec<StackEntry>,
    nodes: Vec<Id>,
    /// The node the next push makes if no other change comes first (see
    /// [`Stack::expect_push`]); [`INV_ID`] if none.
    pending: Id,
}

impl Default for Stack {
    fn default() -> Stack {
        Stack { entries: Vec::new(), nodes: Vec::new(), pending: INV_ID }
    }
}

impl Stack {
    /// The entries, outermost first.
    pub fn entries(&self) -> &[StackEntry] {
        &self.entries
    }

    /// Whether nothing is open.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The innermost entry.
    #[inline]
    pub fn top(&self) -> Option<StackEntry> {
        self.entries.last().copied()
    }

    /// Tells the stack that the next push makes `node`, the child of its
    /// current (materialized) node: a snapshot taken before a begin knows
    /// it, and the push then keeps the whole stack materialized without a
    /// lookup. Any other change forgets it. Only for the begin being
    /// notified, which pushes next: the push does not compare its entry
    /// with the node's, as nothing else can come between.
    #[inline]
    pub fn expect_push(&mut self, node: Id) {
        self.pending = node;
    }

    #[inline]
    fn push(&mut self, entry: StackEntry) {
        // Checked before taking it: without channels there is never one.
        if self.pending != INV_ID {
            if self.nodes.len() == self.entries.len() {
                self.nodes.push(self.pending);
            }
            self.pending = INV_ID;
        }
        self.entries.push(entry);
    }

    /// The node of the whole stack if it is materialized (`Some(None)`:
    /// the stack is empty), without a lookup.
    #[inline(always)]
    pub fn materialized_node(&self) -> Option<Option<Id>> {
        (self.nodes.len() == self.entries.len()).then(|| self.nodes.last().copied())
    }

    /// Pushes `entry`, whose node is `node`, onto a materialized stack (see
    /// [`Stack::materialized_node`]), which stays so.
    #[inline(always)]
    pub fn push_materialized(&mut self, entry: StackEntry, node: Id) {
        self.pending = INV_ID;
        self.entries.push(entry);
        self.nodes.push(node);
    }

    /// Pops the innermost entry.
    #[inline(always)]
    pub fn pop(&mut self) {
        self.truncate(self.entries.len().saturating_sub(1));
    }

    #[inline]
    fn truncate(&mut self, len: usize) {
        self.pending = INV_ID;
        self.entries.truncate(len);
        self.nodes.truncate(len);
    }

    fn remove(&mut self, index: usize) {
        self.pending = INV_ID;
        self.entries.remove(index);
        self.nodes.truncate(index);
    }

    /// The innermost entry of `attr`.
    fn innermost(&self, attr: Attribute) -> Option<usize> {
        self.entries.iter().rposition(|e| e.attr.id() == attr.id())
    }

    /// The node of the entries that have one (the outermost ones), and the
    /// entries above them: the stack as it is without a lookup.
    pub fn cut(&self) -> (Option<Id>, &[StackEntry]) {
        let made = self.nodes.len().min(self.entries.len());
        (self.nodes[..made].last().copied(), &self.entries[made..])
    }

    /// The tree node of the whole stack (`None` if empty), creating nodes
    /// for the entries that have none yet.
    #[inline(always)]
    pub fn node(&mut self, tree: &ContextTree, cache: &mut ChildCache) -> Option<Id> {
        if self.nodes.len() == self.entries.len() {
            return self.nodes.last().copied();
        }
        self.materialize(tree, cache)
    }

    #[inline(never)]
    fn materialize(&mut self, tree: &ContextTree, cache: &mut ChildCache) -> Option<Id> {
        while self.nodes.len() < self.entries.len() {
            let e = self.entries[self.nodes.len()];
            let parent = self.nodes.last().copied();
            self.nodes.push(cache.child(tree, parent, e.attr.id(), e.value));
        }
        self.nodes.last().copied()
    }
}

/// Why an end could not be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndError {
    /// The stack holds nothing of this kind.
    Empty,
    /// The innermost region is of another attribute.
    OtherRegion(StackEntry),
    /// The innermost value of the attribute is not the one being ended.
    OtherValue(StackEntry),
}

/// A thread's or the process's current context.
#[derive(Default, Clone, Debug)]
pub struct Blackboard {
    /// The region stack of aligned, non-as-value attributes.
    pub regions: Stack,
    /// The stack of unaligned attributes.
    pub unaligned: Stack,
    /// As-value attributes and their values.
    pub values: Vec<(Attribute, ValueKey)>,
}

impl Blackboard {
    /// The number of entries: open values on both stacks and as-value
    /// attributes.
    pub fn entry_count(&self) -> usize {
        self.regions.entries().len() + self.unaligned.entries().len() + self.values.len()
    }

    fn stack_mut(&mut self, attr: Attribute) -> &mut Stack {
        if attr.on_region_stack() { &mut self.regions } else { &mut self.unaligned }
    }

    /// Begins `attr = value`: pushes it on its stack, or sets the slot of an
    /// as-value attribute.
    #[inline]
    pub fn begin(&mut self, attr: Attribute, value: ValueKey) {
        if attr.on_region_stack() {
            self.regions.push(StackEntry { attr, value });
        } else {
            self.begin_other(attr, value);
        }
    }

    /// [`Blackboard::begin`] of an as-value or unaligned attribute.
    #[inline(never)]
    fn begin_other(&mut self, attr: Attribute, value: ValueKey) {
        if attr.is_asvalue() {
            self.set_value(attr, value);
        } else {
            self.unaligned.push(StackEntry { attr, value });
        }
    }

    /// Sets `attr = value`: replaces the innermost value of `attr` (which
    /// moves to the top of its stack), or sets the as-value slot.
    pub fn set(&mut self, attr: Attribute, value: ValueKey) {
        if attr.is_asvalue() {
            self.set_value(attr, value);
            return;
        }
        let stack = self.stack_mut(attr);
        if let Some(i) = stack.innermost(attr) {
            stack.remove(i);
        }
        stack.push(StackEntry { attr, value });
    }

    fn set_value(&mut self, attr: Attribute, value: ValueKey) {
        match self.values.iter_mut().find(|(a, _)| a.id() == attr.id()) {
            Some(slot) => slot.1 = value,
            None => self.values.push((attr, value)),
        }
    }

    /// What ending the innermost value of `attr` would end (with `expect`:
    /// only if it is that value), without changing anything.
    #[inline]
    pub fn check_end(&self, attr: Attribute, expect: Option<ValueKey>) -> Result<ValueKey, EndError> {
        if attr.on_region_stack() {
            // The common case, a region: inline, as in `end`.
            let top = *self.regions.entries.last().ok_or(EndError::Empty)?;
            return match expect {
                _ if top.attr.id() != attr.id() => Err(EndError::OtherRegion(top)),
                Some(v) if v != top.value => Err(EndError::OtherValue(top)),
                _ => Ok(top.value),
            };
        }
        self.check_end_other(attr, expect)
    }

    /// [`Blackboard::check_end`] of an as-value or unaligned attribute.
    #[inline(never)]
    fn check_end_other(&self, attr: Attribute, expect: Option<ValueKey>) -> Result<ValueKey, EndError> {
        let current = if attr.is_asvalue() {
            let value = self.values.iter().find(|(a, _)| a.id() == attr.id()).ok_or(EndError::Empty)?.1;
            StackEntry { attr, value }
        } else {
            self.unaligned.entries[self.unaligned.innermost(attr).ok_or(EndError::Empty)?]
        };
        match expect {
            Some(v) if v != current.value => Err(EndError::OtherValue(current)),
            _ => Ok(current.value),
        }
    }

    /// Ends the innermost value of `attr`; with `expect`, only if that
    /// value is `expect`. Returns the ended value.
    #[inline]
    pub fn end(&mut self, attr: Attribute, expect: Option<ValueKey>) -> Result<ValueKey, EndError> {
        if attr.on_region_stack() {
            // The common case, a region: check and pop the top in one go.
            let top = *self.regions.entries.last().ok_or(EndError::Empty)?;
            if top.attr.id() != attr.id() {
                return Err(EndError::OtherRegion(top));
            }
            if expect.is_some_and(|v| v != top.value) {
                return Err(EndError::OtherValue(top));
            }
            self.regions.pop();
            return Ok(top.value);
        }
        self.end_other(attr, expect)
    }

    /// Ends what [`Blackboard::check_end`] has just found for `attr` and
    /// `expect`, nothing having changed since: a region, then on top of
    /// its stack, is popped without a second check.
    #[inline]
    pub fn end_checked(&mut self, attr: Attribute, expect: Option<ValueKey>) {
        if attr.on_region_stack() {
            self.regions.pop();
        } else {
            // Checked again, but out of line: a rare case.
            let _ = self.end_other(attr, expect);
        }
    }

    /// Ends an as-value or unaligned attribute: out of line, so that the
    /// region case above inlines into the caller.
    #[inline(never)]
    fn end_other(&mut self, attr: Attribute, expect: Option<ValueKey>) -> Result<ValueKey, EndError> {
        let value = self.check_end(attr, expect)?;
        if attr.is_asvalue() {
            self.values.retain(|(a, _)| a.id() != attr.id());
        } else if let Some(i) = self.unaligned.innermost(attr) {
            // (Always found: `check_end` has just looked it up.)
            self.unaligned.remove(i);
        }
        Ok(value)
    }

    /// The innermost value of `attr`, if any.
    pub fn get(&self, attr: Attribute) -> Option<ValueKey> {
        if attr.is_asvalue() {
            return self.values.iter().find(|(a, _)| a.id() == attr.id()).map(|(_, v)| *v);
        }
        let stack = if attr.properties().is_unaligned() { &self.unaligned } else { &self.regions };
        stack.innermost(attr).map(|i| stack.entries[i].value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::Registry;
    use caliper_data::{AttrType, Properties};

    struct Env {
        tree: ContextTree,
        reg: Registry,
    }

    fn env() -> Env {
        let tree = ContextTree::new();
        let reg = Registry::new(&tree, "", Properties::SCOPE_THREAD);
        Env { tree, reg }
    }

    impl Env {
        fn attr(&self, name: &str, props: Properties) -> Attribute {
            self.reg.create(&self.tree, name, AttrType::String, props, &[]).0
        }
    }

    #[test]
    fn region_stack_nests() {
        let e = env();
        let region = e.attr("region", Properties::NESTED);
        let phase = e.attr("phase", Properties::NESTED);
        let mut bb = Blackboard::default();
        let mut cache = ChildCache::default();
        bb.begin(region, ValueKey::string("main"));
        bb.begin(phase, ValueKey::string("p"));
        bb.begin(region, ValueKey::string("foo"));
        let node = bb.regions.node(&e.tree, &mut cache).unwrap();
        let mut path = Vec::new();
        e.tree.path_to(node, &mut path);
        assert_eq!(path.len(), 3);
        // Ending phase while region=foo is on top is a stack error.
        assert_eq!(
            bb.end(phase, None),
            Err(EndError::OtherRegion(StackEntry { attr: region, value: ValueKey::string("foo") }))
        );
        assert_eq!(
            bb.end(region, Some(ValueKey::string("bar"))),
            Err(EndError::OtherValue(StackEntry { attr: region, value: ValueKey::string("foo") }))
        );
        assert_eq!(bb.end(region, Some(ValueKey::string("foo"))), Ok(ValueKey::string("foo")));
        assert_eq!(bb.end(phase, None), Ok(ValueKey::string("p")));
        // The cached node of the shorter stack is the parent of the old one.
        let main = bb.regions.node(&e.tree, &mut cache).unwrap();
        assert_eq!(main, path[0]);
        assert_eq!(bb.end(region, None), Ok(ValueKey::string("main")));
        assert_eq!(bb.end(region, None), Err(EndError::Empty));
    }

    #[test]
    fn an_expected_push_keeps_the_stack_materialized() {
        let e = env();
        let region = e.attr("region", Properties::NESTED);
        let (main, foo) = (ValueKey::string("main"), ValueKey::string("foo"));
        let mut bb = Blackboard::default();
        let mut cache = ChildCache::default();
        bb.begin(region, main);
        let parent = bb.regions.node(&e.tree, &mut cache);
        let child = e.tree.get_child(region.id(), foo.to_variant(), parent);
        bb.regions.expect_push(child);
        bb.begin(region, foo);
        assert_eq!(bb.regions.nodes, [parent.unwrap(), child]);
        // Another change in between forgets the expected node.
        bb.regions.expect_push(child);
        assert_eq!(bb.end(region, None), Ok(foo));
        bb.begin(region, foo);
        assert_eq!(bb.regions.nodes, [parent.unwrap()]);
        assert_eq!(bb.regions.node(&e.tree, &mut cache), Some(child));
    }

    #[test]
    fn set_replaces_the_innermost_value() {
        let e = env();
        let a = e.attr("a", Properties::DEFAULT);
        let b = e.attr("b", Properties::DEFAULT);
        let mut bb = Blackboard::default();
        bb.begin(a, ValueKey::string("1"));
        bb.begin(b, ValueKey::string("x"));
        bb.set(a, ValueKey::string("2"));
        let entries: Vec<_> = bb.regions.entries().iter().map(|e| e.value.to_variant().to_string()).collect();
        assert_eq!(entries, ["x", "2"]);
        assert_eq!(bb.get(a), Some(ValueKey::string("2")));
    }

    #[test]
    fn unaligned_and_asvalue() {
        let e = env();
        let u = e.attr("u", Properties::UNALIGNED);
        let w = e.attr("w", Properties::UNALIGNED);
        let v = e.reg.create(&e.tree, "v", AttrType::Int, Properties::ASVALUE, &[]).0;
        let mut bb = Blackboard::default();
        bb.begin(u, ValueKey::string("1"));
        bb.begin(w, ValueKey::string("2"));
        assert_eq!(bb.end(u, None), Ok(ValueKey::string("1")), "unaligned ends out of order");
        bb.begin(v, ValueKey::int(1));
        bb.begin(v, ValueKey::int(2));
        assert_eq!(bb.get(v), Some(ValueKey::int(2)), "as-value begin overwrites");
        assert_eq!(bb.end(v, None), Ok(ValueKey::int(2)));
        assert_eq!(bb.get(v), None);
        assert!(bb.regions.is_empty());
    }
}
