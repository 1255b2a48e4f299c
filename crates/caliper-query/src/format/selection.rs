//! Which attributes a SELECT list names.
//!
//! An item names an attribute by its name, or by a class it belongs to: a
//! meta-attribute such as `class.iteration` that the attribute carries as
//! metadata. So `select class.iteration` shows every loop's iteration
//! attribute, as `group by class.iteration` groups by all of them, without
//! the query having to know the loops' names.

use crate::spec::{QuerySpec, Selection};
use caliper_data::{Attribute, MetadataDb};

/// Whether SELECT item `item` names `attr`, by name or by class.
pub(crate) fn item_names(db: &MetadataDb, item: &str, attr: &Attribute) -> bool {
    attr.name() == item || db.metadata_by_name(attr, item).is_some()
}

/// Whether the query's SELECT keeps `attr`: any attribute without a list.
pub(crate) fn selects(spec: &QuerySpec, db: &MetadataDb, attr: &Attribute) -> bool {
    match &spec.select {
        Selection::List(items) => items.iter().any(|item| item_names(db, item, attr)),
        _ => true,
    }
}

/// Whether `item` is a class: some attribute of the database carries it as
/// metadata. A class stands for its members, not for a column of its own.
pub(crate) fn is_class(db: &MetadataDb, item: &str) -> bool {
    db.attributes().iter().any(|a| db.metadata_by_name(a, item).is_some())
}

/// Whether a formatter with columns per attribute shows `attr` for a
/// SELECT list: it is named, and not as a class (which stands for its
/// members).
pub(crate) fn is_column(db: &MetadataDb, items: &[String], attr: &Attribute) -> bool {
    let class_itself = items.iter().any(|item| item == attr.name()) && is_class(db, attr.name());
    !class_itself && items.iter().any(|item| item_names(db, item, attr))
}

/// The attributes a SELECT list names, in list order: for a class item its
/// members in the order of `seen` (the attributes met so far, in order).
pub(crate) fn expand_list<'a>(db: &MetadataDb, items: &'a [String], seen: &'a [String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !is_class(db, item) {
            out.push(item.clone());
            continue;
        }
        let members = seen.iter().filter(|name| db.attribute_by_name(name).is_some_and(|a| item_names(db, item, a)));
        for name in members {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::{AttrType, Properties, Variant};

    fn db_with_loops() -> MetadataDb {
        let mut db = MetadataDb::new();
        let class = db.create_attribute("class.iteration", AttrType::Bool, Properties::SKIP_EVENTS, &[]);
        for name in ["iteration#outer", "iteration#inner"] {
            db.create_attribute(name, AttrType::Int, Properties::ASVALUE, &[(class, Variant::Bool(true))]);
        }
        db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
        db
    }

    #[test]
    fn a_class_names_its_members_and_a_name_itself() {
        let db = db_with_loops();
        let attr = |n: &str| db.attribute_by_name(n).unwrap().clone();
        assert!(item_names(&db, "class.iteration", &attr("iteration#inner")));
        assert!(!item_names(&db, "class.iteration", &attr("region")));
        assert!(item_names(&db, "region", &attr("region")));
        assert!(is_class(&db, "class.iteration"));
        assert!(!is_class(&db, "region"));
        let items = ["class.iteration".to_string()];
        assert!(is_column(&db, &items, &attr("iteration#outer")));
        assert!(!is_column(&db, &items, &attr("class.iteration")));
    }

    #[test]
    fn expanding_puts_members_in_the_order_seen_at_the_class_place() {
        let db = db_with_loops();
        let items = ["region".to_string(), "class.iteration".to_string(), "count".to_string()];
        let seen = ["iteration#inner".to_string(), "region".to_string(), "iteration#outer".to_string()];
        assert_eq!(expand_list(&db, &items, &seen), ["region", "iteration#inner", "iteration#outer", "count"]);
    }
}
