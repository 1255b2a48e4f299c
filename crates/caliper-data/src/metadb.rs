//! The metadata database: the merged context tree, attributes and globals of
//! every stream read so far.
//!
//! Node ids are only meaningful inside one stream. Importing a stream maps
//! each of its nodes onto the database: a node equal to an existing one
//! (same parent, attribute and value) is reused, otherwise a new node is
//! created, and an [`IdMap`] remembers the translation for the stream's
//! later records. That is how several files merge into one tree.

use crate::attribute::{ALIAS_ATTR_NAME, Attribute, AttributeError, UNIT_ATTR_NAME};
use crate::hash::FxHashMap;
use crate::idmap::IdMap;
use crate::node::{
    BOOTSTRAP_NODE_COUNT, Id, NAME_ATTR_ID, Node, NodeRef, NodeStore, PROP_ATTR_ID, TYPE_ATTR_ID, bootstrap_nodes,
};
use crate::properties::Properties;
use crate::record::{Entry, Record};
use crate::text::Text;
use crate::types::AttrType;
use crate::variant::{ValueError, Variant};
use std::fmt;

/// How a database numbers the nodes it creates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IdPolicy {
    /// Consecutive ids in creation order, after the bootstrap nodes and the
    /// `attribute.alias` / `attribute.unit` attributes, as the reference's
    /// reader numbers them (query output that shows ids or orders by id
    /// depends on this). Like that reader, it drops the values of hidden
    /// attributes' nodes, which then merge.
    Sequential,
    /// Keep the id a node has in its stream where that id is still free.
    /// Reading one file then yields the file's own ids, so writing it back
    /// reproduces it exactly.
    KeepStreamIds,
}

/// How far beyond the current table a kept stream id may lie; beyond it the
/// node gets the next free id instead, so a huge id cannot inflate memory.
const MAX_KEPT_ID_GAP: u64 = 1 << 20;

/// Why a node or record of a stream cannot be imported.
#[derive(Clone, Debug, PartialEq)]
pub enum ImportError {
    /// A reference to a node id the stream has not defined.
    UnknownNode(u64),
    /// An attribute id the stream has not defined.
    UnknownAttribute(u64),
    /// An id that names a node which is not an attribute.
    NotAnAttribute(u64),
    /// A node that claims to be an attribute but is malformed.
    BadAttribute(AttributeError),
    /// A value that does not parse as its attribute's type.
    BadValue(ValueError),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::UnknownNode(id) => write!(f, "unknown node id {id}"),
            ImportError::UnknownAttribute(id) => write!(f, "unknown attribute id {id}"),
            ImportError::NotAnAttribute(id) => write!(f, "node {id} is not an attribute"),
            ImportError::BadAttribute(e) => write!(f, "malformed attribute: {e}"),
            ImportError::BadValue(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ImportError {}

/// The run metadata collected from `globals` records.
#[derive(Clone, Debug, Default)]
struct Globals {
    /// Context-tree globals, without duplicates, in first-seen order.
    refs: Vec<Id>,
    /// Immediate globals, one value per attribute (the last one read).
    imm: Vec<(Id, Variant)>,
}

/// The merged metadata of any number of streams. See the module docs.
#[derive(Clone, Debug)]
pub struct MetadataDb {
    nodes: Vec<Option<Node>>,
    /// The value type of every attribute node, by node id; `None` for nodes
    /// that are not attributes. Kept beside `nodes` for the reader's hot
    /// path, which types every immediate value.
    attr_types: Vec<Option<AttrType>>,
    attributes: FxHashMap<Id, Attribute>,
    names: FxHashMap<Text, Id>,
    /// (parent or `INV_ID`, attribute, value) → node, for merging.
    children: FxHashMap<(Id, Id, Variant), Id>,
    globals: Globals,
    policy: IdPolicy,
    /// Nodes that some stream defined (as opposed to nodes the database or
    /// a query created), by id.
    from_stream: Vec<bool>,
}

impl Default for MetadataDb {
    fn default() -> MetadataDb {
        MetadataDb::new()
    }
}

impl MetadataDb {
    /// A database that numbers its nodes like the reference's reader.
    pub fn new() -> MetadataDb {
        let mut db = MetadataDb::with_policy(IdPolicy::Sequential);
        db.alias_attribute();
        db.unit_attribute();
        db
    }

    /// A database that keeps stream ids where it can (see [`IdPolicy`]).
    pub fn keeping_stream_ids() -> MetadataDb {
        MetadataDb::with_policy(IdPolicy::KeepStreamIds)
    }

    fn with_policy(policy: IdPolicy) -> MetadataDb {
        let mut db = MetadataDb {
            nodes: Vec::new(),
            attr_types: Vec::new(),
            attributes: FxHashMap::default(),
            names: FxHashMap::default(),
            children: FxHashMap::default(),
            globals: Globals::default(),
            policy,
            from_stream: Vec::new(),
        };
        for node in bootstrap_nodes() {
            let id = db.nodes.len() as Id;
            db.insert_node(id, node);
        }
        for id in [NAME_ATTR_ID, TYPE_ATTR_ID, PROP_ATTR_ID] {
            db.register_attribute(id).expect("bootstrap attributes are well-formed");
        }
        db
    }

    /// The node with this id.
    pub fn node(&self, id: Id) -> Option<&Node> {
        self.nodes.get(usize::try_from(id).ok()?)?.as_ref()
    }

    /// The number of id slots in use (the largest id plus one).
    pub fn id_bound(&self) -> Id {
        self.nodes.len() as Id
    }

    /// Whether a stream read into the database defined this node (rather
    /// than the database itself or a query).
    pub fn is_from_stream(&self, id: Id) -> bool {
        usize::try_from(id).ok().and_then(|i| self.from_stream.get(i)).copied().unwrap_or(false)
    }

    /// The attribute with this id.
    pub fn attribute(&self, id: Id) -> Option<&Attribute> {
        self.attributes.get(&id)
    }

    /// The attribute with this name (the first one created, if several
    /// merged streams define it differently).
    pub fn attribute_by_name(&self, name: &str) -> Option<&Attribute> {
        self.names.get(name).and_then(|id| self.attributes.get(id))
    }

    /// The value of `attr`'s metadata entry whose meta-attribute is named
    /// `meta` (e.g. `attribute.alias`). By name, not id: streams may define
    /// the meta-attribute with other properties, as separate attributes.
    pub fn metadata_by_name<'a>(&self, attr: &'a Attribute, meta: &str) -> Option<&'a Variant> {
        attr.metadata().iter().find(|(m, _)| self.attribute(*m).is_some_and(|a| a.name() == meta)).map(|(_, v)| v)
    }

    /// Every attribute, in id order.
    pub fn attributes(&self) -> Vec<&Attribute> {
        let mut all: Vec<&Attribute> = self.attributes.values().collect();
        all.sort_by_key(|a| a.id());
        all
    }

    /// The value type of an attribute, quickly; `None` if `id` is not an
    /// attribute.
    #[inline]
    pub fn attribute_type(&self, id: Id) -> Option<AttrType> {
        *self.attr_types.get(usize::try_from(id).ok()?)?
    }

    /// The `attribute.alias` metadata attribute, created on first use.
    pub fn alias_attribute(&mut self) -> Id {
        self.create_attribute(ALIAS_ATTR_NAME, AttrType::String, Properties::SKIP_EVENTS, &[])
    }

    /// The `attribute.unit` metadata attribute, created on first use.
    pub fn unit_attribute(&mut self) -> Id {
        self.create_attribute(UNIT_ATTR_NAME, AttrType::String, Properties::SKIP_EVENTS, &[])
    }

    /// The node `attribute = value` under `parent`: the existing one if there
    /// is one, else a new one. Panics if `attribute` is not an attribute or
    /// `parent` does not exist; see [`Self::import_node`] for untrusted input.
    pub fn get_or_create_node(&mut self, attribute: Id, value: Variant, parent: Option<Id>) -> Id {
        self.merge_node(None, attribute, value, parent).expect("valid node")
    }

    /// The attribute `name`: the existing one if there is one (its type and
    /// properties win), else a new one with the given type, properties and
    /// metadata entries (meta-attribute id, value; outermost first).
    pub fn create_attribute(&mut self, name: &str, ty: AttrType, props: Properties, metadata: &[(Id, Variant)]) -> Id {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let mut parent = ty.bootstrap_node();
        for (meta, value) in metadata {
            parent = Some(self.get_or_create_node(*meta, value.clone(), parent));
        }
        let prop_value = Variant::Int(i64::from(props.bits()));
        let prop_node = self.get_or_create_node(PROP_ATTR_ID, prop_value, parent);
        self.get_or_create_node(NAME_ATTR_ID, Variant::string(name), Some(prop_node))
    }

    /// Imports a node record of a stream: `stream_id` is defined as
    /// `attr = value_text` under `parent` (all stream ids, translated through
    /// `ids`). The text is parsed with the attribute's type. Returns the
    /// database id, which `ids` now maps `stream_id` to.
    pub fn import_node(
        &mut self,
        ids: &mut IdMap,
        stream_id: u64,
        attr: u64,
        value_text: &str,
        parent: Option<u64>,
    ) -> Result<Id, ImportError> {
        let attr_id = ids.get(attr).ok_or(ImportError::UnknownAttribute(attr))?;
        let ty = self.attribute_type(attr_id).ok_or(ImportError::NotAnAttribute(attr))?;
        let parent_id = match parent {
            Some(p) => Some(ids.get(p).ok_or(ImportError::UnknownNode(p))?),
            None => None,
        };
        // The reference's reader leaves the values of hidden attributes
        // (stream-private ids such as `cali.event.begin`) unparsed, so their
        // nodes merge whatever the value; numbering like it means doing the
        // same. A database that keeps stream ids keeps them to reproduce
        // the stream.
        let unparsed = self.policy == IdPolicy::Sequential && self.attribute(attr_id).is_some_and(|a| a.is_hidden());
        let value =
            if unparsed { Variant::Empty } else { Variant::parse(ty, value_text).map_err(ImportError::BadValue)? };
        let id = self.merge_node(Some(stream_id), attr_id, value, parent_id)?;
        ids.insert(stream_id, id);
        let slot = id as usize;
        if slot >= self.from_stream.len() {
            self.from_stream.resize(slot + 1, false);
        }
        self.from_stream[slot] = true;
        Ok(id)
    }

    /// Imports node `id` of another node store (say the runtime's context
    /// tree) with its attribute and parent chain, merging equal nodes, and
    /// returns its id here. `ids` remembers what was imported from that
    /// store, so each node is imported once.
    pub fn import_from(&mut self, ids: &mut IdMap, store: &impl NodeStore, id: Id) -> Result<Id, ImportError> {
        // Iterative: attribute first, then parent, then the node itself.
        let mut stack = vec![(id, false)];
        while let Some((n, ready)) = stack.pop() {
            if ids.get(n).is_some() {
                continue;
            }
            let node = store.node(n).ok_or(ImportError::UnknownNode(n))?;
            let deps = [Some(node.attribute), node.parent];
            if !ready {
                stack.push((n, true));
                stack
                    .extend(deps.into_iter().flatten().filter(|&d| d != n && ids.get(d).is_none()).map(|d| (d, false)));
                continue;
            }
            let attr = ids.get(node.attribute).ok_or(ImportError::UnknownAttribute(node.attribute))?;
            self.attribute_type(attr).ok_or(ImportError::NotAnAttribute(node.attribute))?;
            let parent = match node.parent {
                Some(p) => Some(ids.get(p).ok_or(ImportError::UnknownNode(p))?),
                None => None,
            };
            let merged = self.merge_node(Some(n), attr, node.value.clone(), parent)?;
            ids.insert(n, merged);
        }
        ids.get(id).ok_or(ImportError::UnknownNode(id))
    }

    /// Imports a record of another node store (see [`Self::import_from`]).
    pub fn import_record(
        &mut self,
        ids: &mut IdMap,
        store: &impl NodeStore,
        record: &Record,
    ) -> Result<Record, ImportError> {
        let mut out = Record { kind: record.kind, entries: Vec::with_capacity(record.entries.len()) };
        for entry in &record.entries {
            out.entries.push(match entry {
                Entry::Reference(n) => Entry::Reference(self.import_from(ids, store, *n)?),
                Entry::Immediate(a, v) => Entry::Immediate(self.import_from(ids, store, *a)?, v.clone()),
            });
        }
        Ok(out)
    }

    /// Translates a stream's node id.
    #[inline]
    pub fn map_node(&self, ids: &IdMap, stream_id: u64) -> Result<Id, ImportError> {
        ids.get(stream_id).ok_or(ImportError::UnknownNode(stream_id))
    }

    /// Translates a stream's attribute id and returns it with the type.
    #[inline]
    pub fn map_attribute(&self, ids: &IdMap, stream_id: u64) -> Result<(Id, AttrType), ImportError> {
        let id = ids.get(stream_id).ok_or(ImportError::UnknownAttribute(stream_id))?;
        let ty = self.attribute_type(id).ok_or(ImportError::NotAnAttribute(stream_id))?;
        Ok((id, ty))
    }

    fn merge_node(
        &mut self,
        stream_id: Option<u64>,
        attribute: Id,
        value: Variant,
        parent: Option<Id>,
    ) -> Result<Id, ImportError> {
        let key = (parent.unwrap_or(crate::node::INV_ID), attribute, value);
        if let Some(&id) = self.children.get(&key) {
            return Ok(id);
        }
        let (_, _, value) = key;
        let id = self.next_id(stream_id);
        self.insert_node(id, Node { attribute, value, parent });
        if attribute == NAME_ATTR_ID
            && let Err(e) = self.register_attribute(id)
        {
            self.remove_node(id);
            return Err(ImportError::BadAttribute(e));
        }
        Ok(id)
    }

    fn next_id(&self, stream_id: Option<u64>) -> Id {
        let end = self.nodes.len() as Id;
        match (self.policy, stream_id) {
            (IdPolicy::KeepStreamIds, Some(s))
                if s >= BOOTSTRAP_NODE_COUNT && s < end.saturating_add(MAX_KEPT_ID_GAP) && self.node(s).is_none() =>
            {
                s
            }
            _ => end,
        }
    }

    fn insert_node(&mut self, id: Id, node: Node) {
        let slot = id as usize;
        if slot >= self.nodes.len() {
            self.nodes.resize(slot + 1, None);
            self.attr_types.resize(slot + 1, None);
        }
        let key = (node.parent.unwrap_or(crate::node::INV_ID), node.attribute, node.value.clone());
        self.children.insert(key, id);
        self.nodes[slot] = Some(node);
    }

    fn remove_node(&mut self, id: Id) {
        if let Some(node) = self.nodes[id as usize].take() {
            self.children.remove(&(node.parent.unwrap_or(crate::node::INV_ID), node.attribute, node.value));
        }
        while self.nodes.last().is_some_and(Option::is_none) {
            self.nodes.pop();
            self.attr_types.pop();
        }
    }

    fn register_attribute(&mut self, id: Id) -> Result<(), AttributeError> {
        let attr = Attribute::from_store(self, id)?;
        self.attr_types[id as usize] = Some(attr.attr_type());
        self.names.entry(attr.name_text().clone()).or_insert(id);
        self.attributes.insert(id, attr);
        Ok(())
    }

    /// Adds a `globals` record (in database ids): context-tree entries join
    /// the globals unless already there, immediate entries replace earlier
    /// values of their attribute.
    pub fn import_globals(&mut self, record: &Record) {
        for node in record.refs() {
            if !self.globals.refs.contains(&node) {
                self.globals.refs.push(node);
            }
        }
        for (attr, value) in record.immediates() {
            match self.globals.imm.iter_mut().find(|(a, _)| *a == attr) {
                Some(slot) => slot.1 = value.clone(),
                None => self.globals.imm.push((attr, value.clone())),
            }
        }
    }

    /// The globals of everything read so far, as one record.
    pub fn globals(&self) -> Record {
        let mut record = Record::globals();
        record.entries.extend(self.globals.refs.iter().map(|&id| Entry::Reference(id)));
        record.entries.extend(self.globals.imm.iter().map(|(a, v)| Entry::Immediate(*a, v.clone())));
        record
    }

    /// Appends the nodes on the path from the root down to `node`.
    pub fn path_to(&self, node: Id, out: &mut Vec<Id>) {
        let start = out.len();
        let mut next = Some(node);
        while let Some(id) = next {
            match self.node(id) {
                Some(n) => {
                    out.push(id);
                    next = n.parent;
                }
                None => break,
            }
        }
        out[start..].reverse();
    }

    /// Expands a record into (attribute, value) pairs, entry by entry: a
    /// reference entry gives every node on its path, root first; an
    /// immediate entry gives itself. An attribute that occurs several times
    /// on one path (nested regions) yields several pairs, outermost first.
    pub fn expand(&self, record: &Record) -> Vec<(Id, Variant)> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        for entry in &record.entries {
            match entry {
                Entry::Reference(node) => {
                    path.clear();
                    self.path_to(*node, &mut path);
                    for &id in &path {
                        let node = self.node(id).expect("path nodes exist");
                        out.push((node.attribute, node.value.clone()));
                    }
                }
                Entry::Immediate(attr, value) => out.push((*attr, value.clone())),
            }
        }
        out
    }

    /// Expands a record with nested values grouped into paths: per entry,
    /// one `(attribute, values)` pair for each attribute on a reference's
    /// path (in order of first appearance, values outermost first, so
    /// `region` on `main/foo` gives `["main", "foo"]`), and one pair with a
    /// single value for each immediate entry.
    pub fn expand_paths(&self, record: &Record) -> Vec<(Id, Vec<Variant>)> {
        let mut out: Vec<(Id, Vec<Variant>)> = Vec::new();
        let mut path = Vec::new();
        for entry in &record.entries {
            match entry {
                Entry::Reference(node) => {
                    let first = out.len();
                    path.clear();
                    self.path_to(*node, &mut path);
                    for &id in &path {
                        let node = self.node(id).expect("path nodes exist");
                        match out[first..].iter_mut().find(|(a, _)| *a == node.attribute) {
                            Some((_, values)) => values.push(node.value.clone()),
                            None => out.push((node.attribute, vec![node.value.clone()])),
                        }
                    }
                }
                Entry::Immediate(attr, value) => out.push((*attr, vec![value.clone()])),
            }
        }
        out
    }
}

impl NodeStore for MetadataDb {
    fn node(&self, id: Id) -> Option<NodeRef<'_>> {
        MetadataDb::node(self, id).map(NodeRef::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region_attr(db: &mut MetadataDb) -> Id {
        db.create_attribute("region", AttrType::String, Properties::NESTED | Properties::SCOPE_THREAD, &[])
    }

    #[test]
    fn bootstrap_and_reference_numbering() {
        let db = MetadataDb::new();
        assert_eq!(db.attribute(NAME_ATTR_ID).unwrap().name(), "cali.attribute.name");
        assert_eq!(db.attribute(TYPE_ATTR_ID).unwrap().attr_type(), AttrType::Type);
        assert_eq!(db.attribute(PROP_ATTR_ID).unwrap().attr_type(), AttrType::Int);
        // The reference's reader creates alias and unit right after the
        // bootstrap nodes: prop node 12, then 13 and 14.
        assert_eq!(db.attribute_by_name("attribute.alias").unwrap().id(), 13);
        assert_eq!(db.attribute_by_name("attribute.unit").unwrap().id(), 14);
        assert_eq!(db.id_bound(), 15);
        let kept = MetadataDb::keeping_stream_ids();
        assert_eq!(kept.id_bound(), 12);
    }

    #[test]
    fn attributes_read_back_with_metadata() {
        let mut db = MetadataDb::new();
        let unit = db.unit_attribute();
        let id = db.create_attribute(
            "time.duration",
            AttrType::Double,
            Properties::ASVALUE | Properties::AGGREGATABLE,
            &[(unit, Variant::string("sec"))],
        );
        let a = db.attribute(id).unwrap();
        assert_eq!(a.name(), "time.duration");
        assert_eq!(a.attr_type(), AttrType::Double);
        assert_eq!(a.properties().bits(), 2049);
        assert_eq!(a.metadata_value(unit), Some(&Variant::string("sec")));
        assert_eq!(db.attribute_type(id), Some(AttrType::Double));
        assert_eq!(db.create_attribute("time.duration", AttrType::Int, Properties::DEFAULT, &[]), id);
    }

    #[test]
    fn equal_nodes_merge() {
        let mut db = MetadataDb::new();
        let region = region_attr(&mut db);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let foo = db.get_or_create_node(region, Variant::string("foo"), Some(main));
        assert_eq!(db.get_or_create_node(region, Variant::string("main"), None), main);
        assert_eq!(db.get_or_create_node(region, Variant::string("foo"), Some(main)), foo);
        assert_ne!(db.get_or_create_node(region, Variant::string("foo"), None), foo);
        let mut path = Vec::new();
        db.path_to(foo, &mut path);
        assert_eq!(path, vec![main, foo]);
    }

    #[test]
    fn streams_merge_through_id_maps() {
        let mut db = MetadataDb::new();
        let mut a = IdMap::new();
        let mut b = IdMap::new();
        // Both streams define region=main, with different ids.
        db.import_node(&mut a, 20, 10, "276", Some(3)).unwrap();
        db.import_node(&mut a, 21, 8, "region", Some(20)).unwrap();
        let main_a = db.import_node(&mut a, 22, 21, "main", None).unwrap();
        db.import_node(&mut b, 40, 10, "276", Some(3)).unwrap();
        db.import_node(&mut b, 41, 8, "region", Some(40)).unwrap();
        let main_b = db.import_node(&mut b, 99, 41, "main", None).unwrap();
        assert_eq!(main_a, main_b);
        assert_eq!(db.map_node(&b, 99), Ok(main_a));
        assert_eq!(db.map_node(&b, 22), Err(ImportError::UnknownNode(22)));
        assert_eq!(db.map_attribute(&b, 41).unwrap().1, AttrType::String);
    }

    #[test]
    fn import_errors() {
        let mut db = MetadataDb::new();
        let mut ids = IdMap::new();
        assert_eq!(db.import_node(&mut ids, 20, 77, "x", None), Err(ImportError::UnknownAttribute(77)));
        assert_eq!(db.import_node(&mut ids, 20, 1, "x", None), Err(ImportError::NotAnAttribute(1)));
        assert_eq!(db.import_node(&mut ids, 20, 10, "7", Some(55)), Err(ImportError::UnknownNode(55)));
        assert!(matches!(db.import_node(&mut ids, 20, 10, "abc", Some(1)), Err(ImportError::BadValue(_))));
        // An attribute without a type node above it.
        let before = db.id_bound();
        assert!(matches!(db.import_node(&mut ids, 21, 8, "orphan", None), Err(ImportError::BadAttribute(_))));
        assert_eq!(db.id_bound(), before, "the rejected node is gone");
        assert!(db.attribute_by_name("orphan").is_none());
    }

    #[test]
    fn imports_records_of_another_store() {
        let mut source = MetadataDb::keeping_stream_ids();
        let region = region_attr(&mut source);
        let count = source.create_attribute("count", AttrType::Uint, Properties::ASVALUE, &[]);
        let main = source.get_or_create_node(region, Variant::string("main"), None);
        let foo = source.get_or_create_node(region, Variant::string("foo"), Some(main));
        let mut r = Record::ctx();
        r.push_ref(foo);
        r.push_imm(count, Variant::Uint(2));
        let mut db = MetadataDb::new();
        let mut ids = IdMap::new();
        let imported = db.import_record(&mut ids, &source, &r).unwrap();
        assert_eq!(
            db.expand(&imported),
            source.expand(&r).into_iter().map(|(a, v)| (ids.get(a).unwrap(), v)).collect::<Vec<_>>()
        );
        assert_eq!(db.attribute_by_name("region").unwrap().properties().bits(), 276);
        // A second import reuses the nodes.
        let before = db.id_bound();
        db.import_record(&mut ids, &source, &r).unwrap();
        assert_eq!(db.id_bound(), before);
        assert_eq!(db.import_from(&mut ids, &source, 999), Err(ImportError::UnknownNode(999)));
    }

    #[test]
    fn kept_ids_where_free() {
        let mut db = MetadataDb::keeping_stream_ids();
        let mut ids = IdMap::new();
        assert_eq!(db.import_node(&mut ids, 18, 10, "276", Some(3)), Ok(18));
        assert_eq!(db.import_node(&mut ids, 20, 8, "region", Some(18)), Ok(20));
        // A second stream whose id 18 means something else gets a fresh id.
        let mut other = IdMap::new();
        assert_eq!(db.import_node(&mut other, 18, 10, "21", Some(1)), Ok(21));
        // A huge id is not kept.
        assert_eq!(db.import_node(&mut other, u64::MAX - 5, 10, "5", Some(1)), Ok(22));
    }

    #[test]
    fn globals_merge() {
        let mut db = MetadataDb::new();
        let v = db.create_attribute("version", AttrType::String, Properties::GLOBAL, &[]);
        let n = db.create_attribute("n", AttrType::Int, Properties::GLOBAL | Properties::ASVALUE, &[]);
        let node = db.get_or_create_node(v, Variant::string("1.0"), None);
        let mut g = Record::globals();
        g.push_ref(node);
        g.push_imm(n, Variant::Int(1));
        db.import_globals(&g);
        g.entries[1] = Entry::Immediate(n, Variant::Int(2));
        db.import_globals(&g);
        assert_eq!(db.globals().entries, vec![Entry::Reference(node), Entry::Immediate(n, Variant::Int(2))]);
    }

    #[test]
    fn expansion_lists_paths_root_first() {
        let mut db = MetadataDb::new();
        let region = region_attr(&mut db);
        let count = db.create_attribute("count", AttrType::Uint, Properties::ASVALUE, &[]);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let foo = db.get_or_create_node(region, Variant::string("foo"), Some(main));
        let mut r = Record::ctx();
        r.push_imm(count, Variant::Uint(3));
        r.push_ref(foo);
        assert_eq!(
            db.expand_paths(&r),
            vec![(count, vec![Variant::Uint(3)]), (region, vec![Variant::string("main"), Variant::string("foo")]),]
        );
        assert_eq!(
            db.expand(&r),
            vec![(count, Variant::Uint(3)), (region, Variant::string("main")), (region, Variant::string("foo")),]
        );
    }
}
