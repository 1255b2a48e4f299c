//! WHERE: the record filter.
//!
//! Every condition must hold. A positive test passes when some value of the
//! attribute (any level of a hierarchy) satisfies it; a `not` test is the
//! negation of the positive one, so it passes when the attribute is absent.

use crate::access::{AttrRef, values_of};
use crate::parser::ParseError;
use crate::spec::{Condition, ConditionOp};
use caliper_data::{MetadataDb, Record, Variant};
use std::cmp::Ordering;

/// A compiled WHERE clause.
#[derive(Clone, Debug, Default)]
pub struct RecordFilter {
    conditions: Vec<Compiled>,
}

/// The conditions of the legacy `cali-query -s` filter: a comma list of
/// `[-]attr[=value]` (`-` negates). A clause without an attribute name
/// (`-`, `=x`) is an error, as in the reference ("malformed selector
/// clause"): accepted, it would match nothing and silently drop every
/// record.
pub fn parse_legacy_filter(text: &str) -> Result<Vec<Condition>, ParseError> {
    let mut conditions = Vec::new();
    let mut offset = 0;
    for clause in text.split(',') {
        let start = offset + (clause.len() - clause.trim_start().len());
        offset += clause.len() + 1;
        let item = clause.trim();
        if item.is_empty() {
            continue;
        }
        let (negate, item) = match item.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, item),
        };
        let (attribute, value, op) = match item.split_once('=') {
            Some((a, v)) => (a.trim(), v, ConditionOp::Equal),
            None => (item.trim(), "", ConditionOp::Exist),
        };
        if attribute.is_empty() {
            return Err(ParseError {
                message: format!("malformed selector clause \"{}\"", clause.trim()),
                column: text[..start].chars().count() + 1,
            });
        }
        conditions.push(Condition {
            op: if negate { op.negated() } else { op },
            attribute: attribute.to_string(),
            value: value.to_string(),
        });
    }
    Ok(conditions)
}

#[derive(Clone, Debug)]
struct Compiled {
    positive: ConditionOp,
    negated: bool,
    attr: AttrRef,
    text: String,
    /// The comparison value parsed with the attribute's type, once known;
    /// `None` inside if the text is not a value of that type.
    value: Option<Option<Variant>>,
}

impl RecordFilter {
    /// A filter for the given conditions.
    pub fn new(conditions: &[Condition]) -> RecordFilter {
        let conditions = conditions
            .iter()
            .map(|c| {
                let (positive, negated) = match c.op {
                    ConditionOp::NotExist => (ConditionOp::Exist, true),
                    ConditionOp::NotEqual => (ConditionOp::Equal, true),
                    ConditionOp::NotLess => (ConditionOp::Less, true),
                    ConditionOp::NotGreater => (ConditionOp::Greater, true),
                    op => (op, false),
                };
                Compiled { positive, negated, attr: AttrRef::new(&c.attribute), text: c.value.clone(), value: None }
            })
            .collect();
        RecordFilter { conditions }
    }

    /// Whether there are no conditions (every record passes).
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Whether the record passes every condition.
    pub fn pass(&mut self, db: &MetadataDb, record: &Record) -> bool {
        self.conditions.iter_mut().all(|c| c.holds(db, record) != c.negated)
    }
}

impl Compiled {
    /// Whether the positive form of the condition holds.
    fn holds(&mut self, db: &MetadataDb, record: &Record) -> bool {
        let Some(attr) = self.attr.get(db) else {
            return false;
        };
        if self.positive == ConditionOp::Exist {
            return values_of(db, record, attr).next().is_some();
        }
        let text = &self.text;
        let value = self.value.get_or_insert_with(|| {
            let ty = db.attribute_type(attr)?;
            Variant::parse(ty, text).ok()
        });
        let Some(value) = value else { return false };
        let wanted = match self.positive {
            ConditionOp::Less => Ordering::Less,
            ConditionOp::Greater => Ordering::Greater,
            _ => Ordering::Equal,
        };
        values_of(db, record, attr).any(|v| v.cmp(value) == wanted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_query;
    use caliper_data::{AttrType, Properties};

    struct Fixture {
        db: MetadataDb,
        records: Vec<Record>,
    }

    /// Records: region=main (n=1), region=main/foo (n=5), no region (n=10).
    fn fixture() -> Fixture {
        let mut db = MetadataDb::new();
        let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
        let n = db.create_attribute("n", AttrType::Int, Properties::ASVALUE, &[]);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let foo = db.get_or_create_node(region, Variant::string("foo"), Some(main));
        let mut records = Vec::new();
        for (node, value) in [(Some(main), 1), (Some(foo), 5), (None, 10)] {
            let mut r = Record::ctx();
            if let Some(node) = node {
                r.push_ref(node);
            }
            r.push_imm(n, Variant::Int(value));
            records.push(r);
        }
        Fixture { db, records }
    }

    fn passing(query: &str) -> Vec<usize> {
        let f = fixture();
        let mut filter = RecordFilter::new(&parse_query(query).unwrap().filter);
        (0..f.records.len()).filter(|&i| filter.pass(&f.db, &f.records[i])).collect()
    }

    #[test]
    fn existence() {
        assert_eq!(passing("where region"), [0, 1]);
        assert_eq!(passing("where not region"), [2]);
        assert_eq!(passing("where unknown"), [] as [usize; 0]);
        assert_eq!(passing("where not unknown"), [0, 1, 2]);
    }

    #[test]
    fn comparisons() {
        assert_eq!(passing("where region=foo"), [1]);
        assert_eq!(passing("where region=main"), [0, 1], "any level of the hierarchy matches");
        assert_eq!(passing("where not region=main"), [2]);
        assert_eq!(passing("where n<5"), [0]);
        assert_eq!(passing("where n>4"), [1, 2]);
        assert_eq!(passing("where not n<5"), [1, 2]);
        assert_eq!(passing("where not n>5"), [0, 1]);
        assert_eq!(passing("where n>1, n<10"), [1]);
        assert_eq!(passing("where n=notanumber"), [] as [usize; 0]);
    }

    #[test]
    fn legacy_syntax() {
        let f = fixture();
        let mut filter = RecordFilter::new(&parse_legacy_filter("region,-n=5").unwrap());
        let pass: Vec<_> = (0..3).filter(|&i| filter.pass(&f.db, &f.records[i])).collect();
        assert_eq!(pass, [0]);
    }

    #[test]
    fn malformed_legacy_clauses() {
        let err = |text: &str| parse_legacy_filter(text).unwrap_err().to_string();
        assert_eq!(err("-,=,=="), "malformed selector clause \"-\" (at column 1)");
        assert_eq!(err("region, =5"), "malformed selector clause \"=5\" (at column 9)");
        assert_eq!(err("a,-=x"), "malformed selector clause \"-=x\" (at column 3)");
        assert_eq!(parse_legacy_filter("a,,b,").unwrap().len(), 2, "empty clauses are skipped");
    }
}
