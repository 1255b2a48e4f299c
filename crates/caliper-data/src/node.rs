//! Context-tree nodes and the bootstrap nodes every stream shares.

use crate::types::AttrType;
use crate::variant::Variant;

/// A node or attribute id (`cali_id_t`). Attributes are nodes, so they
/// share the id space.
pub type Id = u64;

/// The invalid id (`CALI_INV_ID`).
pub const INV_ID: Id = u64::MAX;

/// Id of the attribute `cali.attribute.name` (string): a node with this
/// attribute defines an attribute, its value being the name.
pub const NAME_ATTR_ID: Id = 8;
/// Id of the attribute `cali.attribute.type` (type).
pub const TYPE_ATTR_ID: Id = 9;
/// Id of the attribute `cali.attribute.prop` (int).
pub const PROP_ATTR_ID: Id = 10;
/// Number of bootstrap nodes (ids 0 to 11) that exist implicitly in every
/// stream and are never written.
pub const BOOTSTRAP_NODE_COUNT: Id = 12;
/// Writers skip nodes with ids below this bound (the reference writes node
/// 11, the `ptr` type node, and readers merge it with their own).
pub const FIRST_WRITTEN_ID: Id = 11;

/// A context-tree node: `attribute = value` under `parent`.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's attribute (an attribute node id).
    pub attribute: Id,
    /// The value.
    pub value: Variant,
    /// The parent node; `None` for children of the (virtual) root.
    pub parent: Option<Id>,
}

/// The bootstrap nodes 0 to 11 in id order: type nodes for every type and the
/// three attributes that describe attributes.
pub fn bootstrap_nodes() -> [Node; 12] {
    let type_node = |t: AttrType| Node { attribute: TYPE_ATTR_ID, value: Variant::Type(t), parent: None };
    let attr_node =
        |name: &str, parent: Id| Node { attribute: NAME_ATTR_ID, value: Variant::string(name), parent: Some(parent) };
    [
        type_node(AttrType::Usr),
        type_node(AttrType::Int),
        type_node(AttrType::Uint),
        type_node(AttrType::String),
        type_node(AttrType::Addr),
        type_node(AttrType::Double),
        type_node(AttrType::Bool),
        type_node(AttrType::Type),
        attr_node("cali.attribute.name", 3),
        attr_node("cali.attribute.type", 7),
        attr_node("cali.attribute.prop", 1),
        type_node(AttrType::Ptr),
    ]
}

/// A borrowed view of a node, as a [`NodeStore`] hands it out.
#[derive(Clone, Copy, Debug)]
pub struct NodeRef<'a> {
    /// The node's attribute.
    pub attribute: Id,
    /// The value.
    pub value: &'a Variant,
    /// The parent, `None` under the root.
    pub parent: Option<Id>,
}

impl<'a> From<&'a Node> for NodeRef<'a> {
    fn from(n: &'a Node) -> NodeRef<'a> {
        NodeRef { attribute: n.attribute, value: &n.value, parent: n.parent }
    }
}

/// Anything that can look nodes up by id: the reader's metadata database,
/// the runtime's context tree. The `.cali` writer works on any of them.
pub trait NodeStore {
    /// The node with this id, if it exists.
    fn node(&self, id: Id) -> Option<NodeRef<'_>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_table_matches_the_reference() {
        let nodes = bootstrap_nodes();
        assert_eq!(nodes[3].value, Variant::Type(AttrType::String));
        assert_eq!(nodes[11].value, Variant::Type(AttrType::Ptr));
        assert_eq!(nodes[8].value, Variant::string("cali.attribute.name"));
        assert_eq!(nodes[8].parent, Some(3));
        assert_eq!(nodes[9].parent, Some(7));
        assert_eq!(nodes[10].parent, Some(1));
        assert!(nodes.iter().all(|n| n.attribute == NAME_ATTR_ID || n.attribute == TYPE_ATTR_ID));
    }
}
