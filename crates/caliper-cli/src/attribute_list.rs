//! `cali-query --list-attributes`: one record per attribute a stream
//! defines, built as the attribute's node record is read.
//!
//! Building them while reading, not after, matters for the ids shown: the
//! reference creates its `attribute.id` attribute when the first attribute
//! is read, so its two nodes take the ids right after that attribute's and
//! every later node of the stream is numbered after them.

use caliper_data::node::NAME_ATTR_ID;
use caliper_data::{AttrType, Id, MetadataDb, Properties, Record, Variant};

/// The name of the attribute that holds each listed attribute's id.
pub const ID_ATTR_NAME: &str = "attribute.id";

/// The records of the attributes read so far, in the order read.
#[derive(Default)]
pub struct AttributeList {
    id_attr: Option<Id>,
    records: Vec<Record>,
}

impl AttributeList {
    /// Notes a node a stream defined: if it is an attribute, its record.
    /// Meant as a [`caliper_data::cali::CaliReader::on_node`] hook.
    pub fn note(&mut self, db: &mut MetadataDb, node: Id) {
        if db.node(node).is_none_or(|n| n.attribute != NAME_ATTR_ID) {
            return;
        }
        let id_attr = *self.id_attr.get_or_insert_with(|| {
            db.create_attribute(ID_ATTR_NAME, AttrType::Uint, Properties::ASVALUE | Properties::SKIP_EVENTS, &[])
        });
        let mut record = Record::ctx();
        record.push_imm(id_attr, Variant::Uint(node));
        // The node path, innermost first: name, properties, metadata, type.
        let mut next = Some(node);
        while let Some(n) = next.and_then(|n| db.node(n)) {
            record.push_imm(n.attribute, n.value.clone());
            next = n.parent;
        }
        self.records.push(record);
    }

    /// The records, in the order the attributes were read.
    pub fn into_records(self) -> Vec<Record> {
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_data::cali::CaliReader;

    #[test]
    fn lists_each_attribute_with_its_path_and_numbers_later_nodes_after_the_id_attribute() {
        let stream = "__rec=node,id=20,attr=10,data=276,parent=3\n\
                      __rec=node,id=21,attr=8,data=region,parent=20\n\
                      __rec=node,id=22,attr=8,data=loop,parent=20\n\
                      __rec=node,id=23,attr=21,data=main\n\
                      __rec=ctx,ref=23\n";
        let mut db = MetadataDb::new();
        let first = db.id_bound();
        let mut list = AttributeList::default();
        CaliReader::new(&mut db, "s").on_node(|db, n| list.note(db, n)).read(stream.as_bytes(), |_, _| {}).unwrap();
        let records = list.into_records();
        let id_attr = db.attribute_by_name(ID_ATTR_NAME).unwrap().id();
        // region, then attribute.id's property and name nodes, then loop.
        assert_eq!(id_attr, first + 3);
        let ids: Vec<Variant> = records.iter().map(|r| r.immediates().next().unwrap().1.clone()).collect();
        assert_eq!(ids, vec![Variant::Uint(first + 1), Variant::Uint(first + 4)]);
        let texts: Vec<String> = records[0].immediates().skip(1).map(|(_, v)| v.to_string()).collect();
        assert_eq!(texts, ["region", "276", "string"]);
    }
}
