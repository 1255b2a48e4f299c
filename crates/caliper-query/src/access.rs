//! Looking attributes up by name and values up in records.

use caliper_data::node::Id;
use caliper_data::{Entry, MetadataDb, Record, Variant};

/// An attribute name resolved against a database that may still grow: the
/// attribute may only be defined by a later part of the stream, so a miss
/// is retried when the database has new nodes, and a hit is kept.
#[derive(Clone, Debug)]
pub struct AttrRef {
    name: String,
    resolved: Option<Id>,
    checked_at: u64,
}

impl AttrRef {
    /// A reference to the attribute called `name`.
    pub fn new(name: &str) -> AttrRef {
        AttrRef { name: name.to_string(), resolved: None, checked_at: u64::MAX }
    }

    /// The attribute's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The attribute's id, if the database has it.
    pub fn get(&mut self, db: &MetadataDb) -> Option<Id> {
        if self.resolved.is_none() && self.checked_at != db.id_bound() {
            self.resolved = db.attribute_by_name(&self.name).map(|a| a.id());
            self.checked_at = db.id_bound();
        }
        self.resolved
    }
}

/// Every value of attribute `attr` in a record, entry by entry: for a
/// reference entry the values on its path, innermost first; for an
/// immediate entry its value. The values of an as-value attribute are
/// immediate entries only, so paths are not walked for one: in a deep
/// region tree that walk would make a query's time quadratic in the depth.
pub fn values_of<'a>(db: &'a MetadataDb, record: &'a Record, attr: Id) -> impl Iterator<Item = &'a Variant> + 'a {
    let as_value = db.attribute(attr).is_some_and(|a| a.is_asvalue());
    record.entries.iter().flat_map(move |entry| {
        let (path, imm) = match entry {
            Entry::Reference(_) if as_value => (None, None),
            Entry::Reference(node) => (Some(PathIter { db, next: Some(*node) }), None),
            Entry::Immediate(a, v) => (None, (*a == attr).then_some(v)),
        };
        path.into_iter().flatten().filter_map(move |(a, v)| (a == attr).then_some(v)).chain(imm)
    })
}

/// The first value of `attr` in a record (innermost on a path), as LET
/// operands are looked up.
pub fn first_value<'a>(db: &'a MetadataDb, record: &'a Record, attr: Id) -> Option<&'a Variant> {
    values_of(db, record, attr).next()
}

/// Walks a node's path from the node up to the root, yielding (attribute,
/// value) pairs.
pub struct PathIter<'a> {
    db: &'a MetadataDb,
    next: Option<Id>,
}

impl<'a> PathIter<'a> {
    /// The path of `node`, innermost first.
    pub fn new(db: &'a MetadataDb, node: Id) -> PathIter<'a> {
        PathIter { db, next: Some(node) }
    }
}

impl<'a> Iterator for PathIter<'a> {
    type Item = (Id, &'a Variant);

    fn next(&mut self) -> Option<(Id, &'a Variant)> {
        let node = self.db.node(self.next?)?;
        self.next = node.parent;
        Some((node.attribute, &node.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::{AttrType, Properties};

    #[test]
    fn values_innermost_first_then_immediates() {
        let mut db = MetadataDb::new();
        let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
        let n = db.create_attribute("n", AttrType::Int, Properties::ASVALUE, &[]);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let foo = db.get_or_create_node(region, Variant::string("foo"), Some(main));
        let mut r = Record::ctx();
        r.push_ref(foo);
        r.push_imm(n, Variant::Int(4));
        let regions: Vec<_> = values_of(&db, &r, region).map(|v| v.to_string()).collect();
        assert_eq!(regions, ["foo", "main"]);
        assert_eq!(first_value(&db, &r, n), Some(&Variant::Int(4)));
        assert_eq!(first_value(&db, &r, region), Some(&Variant::string("foo")));
    }

    #[test]
    fn attribute_refs_resolve_late() {
        let mut db = MetadataDb::new();
        let mut r = AttrRef::new("late");
        assert_eq!(r.get(&db), None);
        let id = db.create_attribute("late", AttrType::Int, Properties::ASVALUE, &[]);
        assert_eq!(r.get(&db), Some(id));
    }
}
