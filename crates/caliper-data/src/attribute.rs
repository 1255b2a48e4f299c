//! Attributes: named, typed keys with property flags and metadata.
//!
//! An attribute is a context-tree path: type node, optional metadata nodes,
//! a `cali.attribute.prop` node and finally the `cali.attribute.name` node,
//! whose id is the attribute's id. [`Attribute::from_store`] reads one back
//! from any [`NodeStore`].

use crate::node::{Id, NAME_ATTR_ID, NodeStore, PROP_ATTR_ID, TYPE_ATTR_ID};
use crate::properties::Properties;
use crate::text::Text;
use crate::types::AttrType;
use crate::variant::Variant;
use std::fmt;

/// Name of the metadata attribute that gives an attribute a display name.
pub const ALIAS_ATTR_NAME: &str = "attribute.alias";
/// Name of the metadata attribute that gives an attribute a unit.
pub const UNIT_ATTR_NAME: &str = "attribute.unit";

/// A resolved attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    id: Id,
    name: Text,
    ty: AttrType,
    props: Properties,
    metadata: Vec<(Id, Variant)>,
}

/// Why a node is not a well-formed attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeError {
    /// The id names no node.
    UnknownNode(Id),
    /// The node is not a `cali.attribute.name` node with a string value.
    NotAnAttribute(Id),
    /// No `cali.attribute.type` node above the name node.
    MissingType(Id),
    /// The property value is not a valid flag set.
    BadProperties(Id),
}

impl fmt::Display for AttributeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttributeError::UnknownNode(id) => write!(f, "unknown node {id}"),
            AttributeError::NotAnAttribute(id) => write!(f, "node {id} is not an attribute"),
            AttributeError::MissingType(id) => write!(f, "attribute {id} has no type"),
            AttributeError::BadProperties(id) => write!(f, "attribute {id} has invalid properties"),
        }
    }
}

impl std::error::Error for AttributeError {}

impl Attribute {
    /// An attribute with the given parts (metadata innermost first).
    pub fn new(id: Id, name: Text, ty: AttrType, props: Properties, metadata: Vec<(Id, Variant)>) -> Attribute {
        Attribute { id, name, ty, props, metadata }
    }

    /// Reads the attribute whose name node is `id` by walking its path to
    /// the root: the nearest `cali.attribute.type` node gives the type, the
    /// nearest `cali.attribute.prop` node the properties (0 if none), every
    /// other node is a metadata entry.
    pub fn from_store(store: &impl NodeStore, id: Id) -> Result<Attribute, AttributeError> {
        let node = store.node(id).ok_or(AttributeError::UnknownNode(id))?;
        let name = match (node.attribute, node.value) {
            (NAME_ATTR_ID, Variant::Str(name)) => name.clone(),
            _ => return Err(AttributeError::NotAnAttribute(id)),
        };
        let mut ty = None;
        let mut props = None;
        let mut metadata = Vec::new();
        let mut next = node.parent;
        while let Some(pid) = next {
            let p = store.node(pid).ok_or(AttributeError::UnknownNode(pid))?;
            match p.attribute {
                TYPE_ATTR_ID => {
                    if ty.is_none() {
                        ty = match p.value {
                            Variant::Type(t) => Some(*t),
                            _ => return Err(AttributeError::MissingType(id)),
                        };
                    }
                }
                PROP_ATTR_ID => {
                    if props.is_none() {
                        let bits = p.value.to_i64().and_then(|b| u32::try_from(b).ok());
                        props = Some(bits.ok_or(AttributeError::BadProperties(id))?);
                    }
                }
                _ => metadata.push((p.attribute, p.value.clone())),
            }
            next = p.parent;
        }
        let ty = ty.ok_or(AttributeError::MissingType(id))?;
        Ok(Attribute { id, name, ty, props: Properties::from_bits(props.unwrap_or(0)), metadata })
    }

    /// The attribute's id (the id of its name node).
    pub fn id(&self) -> Id {
        self.id
    }
    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The name as a shared string.
    pub fn name_text(&self) -> &Text {
        &self.name
    }
    /// The value type.
    pub fn attr_type(&self) -> AttrType {
        self.ty
    }
    /// The property flags.
    pub fn properties(&self) -> Properties {
        self.props
    }
    /// Metadata entries (meta-attribute id, value), innermost first.
    pub fn metadata(&self) -> &[(Id, Variant)] {
        &self.metadata
    }
    /// The value of the metadata entry with the meta-attribute `meta`.
    pub fn metadata_value(&self, meta: Id) -> Option<&Variant> {
        self.metadata.iter().find(|(a, _)| *a == meta).map(|(_, v)| v)
    }
    /// Whether values are stored in records directly.
    pub fn is_asvalue(&self) -> bool {
        self.props.is_asvalue()
    }
    /// Whether the attribute is hidden.
    pub fn is_hidden(&self) -> bool {
        self.props.is_hidden()
    }
    /// Whether the attribute nests (a region-like attribute).
    pub fn is_nested(&self) -> bool {
        self.props.is_nested()
    }
    /// Whether the attribute is run metadata.
    pub fn is_global(&self) -> bool {
        self.props.is_global()
    }
}
