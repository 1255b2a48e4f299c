//! Attribute property flags (`cali_attr_properties`) with the reference's
//! bit values, which are written into `.cali` files as plain integers.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};

/// A set of attribute property flags.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Properties(u32);

/// The scope an attribute's values live in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One value for the whole process.
    Process,
    /// One value per thread.
    Thread,
    /// Per task (unused by the reference; values are dropped).
    Task,
    /// No (or an invalid combination of) scope bits.
    None,
}

impl Properties {
    /// No properties.
    pub const DEFAULT: Properties = Properties(0);
    /// Values are stored directly in records, not in the context tree.
    pub const ASVALUE: Properties = Properties(1);
    /// Deprecated: separate tree branch.
    pub const NOMERGE: Properties = Properties(2);
    /// Process scope.
    pub const SCOPE_PROCESS: Properties = Properties(12);
    /// Thread scope.
    pub const SCOPE_THREAD: Properties = Properties(20);
    /// Task scope.
    pub const SCOPE_TASK: Properties = Properties(24);
    /// Updates do not trigger event callbacks.
    pub const SKIP_EVENTS: Properties = Properties(64);
    /// Kept on the blackboard but left out of snapshots and outputs.
    pub const HIDDEN: Properties = Properties(128);
    /// Region-like: nests with the call stack and forms the path hierarchy.
    pub const NESTED: Properties = Properties(256);
    /// Run metadata, written as globals.
    pub const GLOBAL: Properties = Properties(512);
    /// May be ended out of stack order.
    pub const UNALIGNED: Properties = Properties(1024);
    /// A metric the aggregation computes statistics of.
    pub const AGGREGATABLE: Properties = Properties(2048);

    /// Mask of the scope bits.
    pub const SCOPE_MASK: u32 = 60;
    /// Mask of the level bits.
    pub const LEVEL_MASK: u32 = 0x70000;
    /// Shift of the level bits.
    pub const LEVEL_SHIFT: u32 = 16;

    /// The names of the flags in `cali_prop2string` order, with their values
    /// and masks. A flag matches when `bits & mask == value`.
    const NAMED: [(&'static str, u32, u32); 20] = [
        ("default", 0, u32::MAX),
        ("asvalue", 1, 1),
        ("nomerge", 2, 2),
        ("process_scope", 12, Self::SCOPE_MASK),
        ("thread_scope", 20, Self::SCOPE_MASK),
        ("task_scope", 24, Self::SCOPE_MASK),
        ("skip_events", 64, 64),
        ("hidden", 128, 128),
        ("nested", 256, 256),
        ("global", 512, 512),
        ("unaligned", 1024, 1024),
        ("aggregatable", 2048, 2048),
        ("level_0", 0, Self::LEVEL_MASK),
        ("level_1", 0x10000, Self::LEVEL_MASK),
        ("level_2", 0x20000, Self::LEVEL_MASK),
        ("level_3", 0x30000, Self::LEVEL_MASK),
        ("level_4", 0x40000, Self::LEVEL_MASK),
        ("level_5", 0x50000, Self::LEVEL_MASK),
        ("level_6", 0x60000, Self::LEVEL_MASK),
        ("level_7", 0x70000, Self::LEVEL_MASK),
    ];

    /// Flags from their numeric value.
    pub const fn from_bits(bits: u32) -> Properties {
        Properties(bits)
    }

    /// The numeric value, as written to `.cali` files.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every flag of `other` is set (for scopes, use [`Self::scope`]).
    pub const fn contains(self, other: Properties) -> bool {
        self.0 & other.0 == other.0
    }

    /// The scope selected by the scope bits.
    pub const fn scope(self) -> Scope {
        match self.0 & Self::SCOPE_MASK {
            12 => Scope::Process,
            20 => Scope::Thread,
            24 => Scope::Task,
            _ => Scope::None,
        }
    }

    /// These flags with the scope bits replaced by `scope`.
    pub const fn with_scope(self, scope: Properties) -> Properties {
        Properties((self.0 & !Self::SCOPE_MASK) | (scope.0 & Self::SCOPE_MASK))
    }

    /// The annotation level, 0 to 7.
    pub const fn level(self) -> u32 {
        (self.0 & Self::LEVEL_MASK) >> Self::LEVEL_SHIFT
    }

    /// These flags with the level set to `level` (taken modulo 8).
    pub const fn with_level(self, level: u32) -> Properties {
        Properties((self.0 & !Self::LEVEL_MASK) | ((level & 7) << Self::LEVEL_SHIFT))
    }

    /// Whether values are stored directly in records.
    pub const fn is_asvalue(self) -> bool {
        self.0 & 1 != 0
    }
    /// Whether the attribute is hidden from snapshots and outputs.
    pub const fn is_hidden(self) -> bool {
        self.0 & 128 != 0
    }
    /// Whether the attribute nests with the region stack.
    pub const fn is_nested(self) -> bool {
        self.0 & 256 != 0
    }
    /// Whether the attribute is run metadata.
    pub const fn is_global(self) -> bool {
        self.0 & 512 != 0
    }
    /// Whether updates skip event callbacks.
    pub const fn skips_events(self) -> bool {
        self.0 & 64 != 0
    }
    /// Whether the attribute may be ended out of stack order.
    pub const fn is_unaligned(self) -> bool {
        self.0 & 1024 != 0
    }
    /// Whether the attribute is a metric.
    pub const fn is_aggregatable(self) -> bool {
        self.0 & 2048 != 0
    }

    /// Parses a property list the way `cali_string2prop` does: every known
    /// flag name that appears as a whole word is ORed in; anything else is
    /// ignored.
    pub fn parse(text: &str) -> Properties {
        let mut bits = 0;
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if let Some(&(_, value, _)) = Self::NAMED.iter().find(|(name, ..)| *name == word) {
                if value & Self::SCOPE_MASK != 0 {
                    bits &= !Self::SCOPE_MASK;
                }
                bits |= value;
            }
        }
        Properties(bits)
    }
}

/// Renders the flags the way `cali_prop2string` does: every matching name
/// joined by `:`. Because `default` and `level_0` match zero masks, they
/// always (respectively whenever the level is 0) appear, e.g.
/// `default:thread_scope:nested:level_0`.
impl fmt::Display for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (name, value, mask) in Self::NAMED {
            let matches = if mask == u32::MAX { true } else { self.0 & mask == value };
            if matches {
                if !first {
                    f.write_str(":")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Properties({} = {self})", self.0)
    }
}

impl BitOr for Properties {
    type Output = Properties;
    fn bitor(self, rhs: Properties) -> Properties {
        Properties(self.0 | rhs.0)
    }
}

impl BitOrAssign for Properties {
    fn bitor_assign(&mut self, rhs: Properties) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Properties {
    type Output = Properties;
    fn bitand(self, rhs: Properties) -> Properties {
        Properties(self.0 & rhs.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_match_the_reference() {
        assert_eq!((Properties::NESTED | Properties::SCOPE_THREAD).bits(), 276);
        let p = Properties::UNALIGNED | Properties::GLOBAL | Properties::SKIP_EVENTS | Properties::SCOPE_PROCESS;
        assert_eq!(p.bits(), 1612);
        let m = Properties::AGGREGATABLE | Properties::SKIP_EVENTS | Properties::SCOPE_THREAD | Properties::ASVALUE;
        assert_eq!(m.bits(), 2133);
        assert_eq!(Properties::from_bits(0x40000 | 276).level(), 4);
    }

    #[test]
    fn scope_is_compared_masked() {
        assert_eq!(Properties::from_bits(276).scope(), Scope::Thread);
        assert_eq!(Properties::from_bits(1612).scope(), Scope::Process);
        assert_eq!(Properties::from_bits(24).scope(), Scope::Task);
        assert_eq!(Properties::from_bits(256).scope(), Scope::None);
        let p = Properties::from_bits(276).with_scope(Properties::SCOPE_PROCESS);
        assert_eq!(p.bits(), 268);
    }

    #[test]
    fn renders_like_prop2string() {
        assert_eq!(Properties::from_bits(276).to_string(), "default:thread_scope:nested:level_0");
        assert_eq!(Properties::from_bits(0x40000 | 256 | 20).to_string(), "default:thread_scope:nested:level_4");
        assert_eq!(Properties::from_bits(0).to_string(), "default:level_0");
    }

    #[test]
    fn parses_like_string2prop() {
        assert_eq!(Properties::parse("nested:process_scope").bits(), 268);
        assert_eq!(Properties::parse("asvalue, aggregatable").bits(), 2049);
        assert_eq!(Properties::parse("nestedx unknown").bits(), 0);
        assert_eq!(Properties::parse("level_4 nested").level(), 4);
        let round = Properties::parse(&Properties::from_bits(1612).to_string());
        assert_eq!(round.bits(), 1612);
    }
}
