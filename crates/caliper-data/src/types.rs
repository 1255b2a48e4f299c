//! Value types (`cali_attr_type`) and their names.

use std::fmt;

/// The type of an attribute's values, with the reference's numeric codes
/// (`cali_attr_type`): the codes appear in the C ABI and the names in
/// `.cali` files and query output.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum AttrType {
    /// `inv`: invalid or empty.
    #[default]
    Inv = 0,
    /// `usr`: opaque binary blob.
    Usr = 1,
    /// `int`: 64-bit signed integer.
    Int = 2,
    /// `uint`: 64-bit unsigned integer.
    Uint = 3,
    /// `string`: text.
    String = 4,
    /// `addr`: 64-bit address, printed in hex.
    Addr = 5,
    /// `double`: IEEE 754 double.
    Double = 6,
    /// `bool`.
    Bool = 7,
    /// `type`: an [`AttrType`] value.
    Type = 8,
    /// `ptr`: raw pointer for internal bookkeeping.
    Ptr = 9,
}

impl AttrType {
    /// Every type, in code order.
    pub const ALL: [AttrType; 10] = [
        AttrType::Inv,
        AttrType::Usr,
        AttrType::Int,
        AttrType::Uint,
        AttrType::String,
        AttrType::Addr,
        AttrType::Double,
        AttrType::Bool,
        AttrType::Type,
        AttrType::Ptr,
    ];

    /// The name used in files and output (`cali_type2string`).
    pub const fn name(self) -> &'static str {
        match self {
            AttrType::Inv => "inv",
            AttrType::Usr => "usr",
            AttrType::Int => "int",
            AttrType::Uint => "uint",
            AttrType::String => "string",
            AttrType::Addr => "addr",
            AttrType::Double => "double",
            AttrType::Bool => "bool",
            AttrType::Type => "type",
            AttrType::Ptr => "ptr",
        }
    }

    /// Parses a type name (`cali_string2type`); `None` if unknown.
    pub fn from_name(name: &str) -> Option<AttrType> {
        AttrType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The type with the given numeric code, if any.
    pub fn from_code(code: u8) -> Option<AttrType> {
        AttrType::ALL.get(usize::from(code)).copied()
    }

    /// Whether values of this type are numbers (int, uint, double): such
    /// columns are right-aligned and can be aggregated.
    pub const fn is_numeric(self) -> bool {
        matches!(self, AttrType::Int | AttrType::Uint | AttrType::Double)
    }

    /// The id of the bootstrap context-tree node that stands for this type
    /// (attribute `cali.attribute.type`); `None` for `inv`, which has none.
    pub const fn bootstrap_node(self) -> Option<u64> {
        match self {
            AttrType::Inv => None,
            AttrType::Usr => Some(0),
            AttrType::Int => Some(1),
            AttrType::Uint => Some(2),
            AttrType::String => Some(3),
            AttrType::Addr => Some(4),
            AttrType::Double => Some(5),
            AttrType::Bool => Some(6),
            AttrType::Type => Some(7),
            AttrType::Ptr => Some(11),
        }
    }
}

impl fmt::Display for AttrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_codes_match_the_reference() {
        for t in AttrType::ALL {
            assert_eq!(AttrType::from_name(t.name()), Some(t));
            assert_eq!(AttrType::from_code(t as u8), Some(t));
        }
        assert_eq!(AttrType::Double as u8, 6);
        assert_eq!(AttrType::Ptr as u8, 9);
        assert_eq!(AttrType::from_name("float"), None);
        assert_eq!(AttrType::from_code(10), None);
    }

    #[test]
    fn bootstrap_type_nodes() {
        assert_eq!(AttrType::Usr.bootstrap_node(), Some(0));
        assert_eq!(AttrType::String.bootstrap_node(), Some(3));
        assert_eq!(AttrType::Type.bootstrap_node(), Some(7));
        assert_eq!(AttrType::Ptr.bootstrap_node(), Some(11));
        assert_eq!(AttrType::Inv.bootstrap_node(), None);
    }
}
