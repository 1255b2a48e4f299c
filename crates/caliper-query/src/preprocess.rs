//! LET: computes new attributes from each record before filtering.
//!
//! Definitions apply in order, so one may use an earlier one's result. A
//! result is appended as an immediate entry, and only when its operands
//! are present; its attribute is created on first use.

use crate::access::{AttrRef, PathIter, first_value};
use crate::filter::RecordFilter;
use crate::spec::{LetDef, LetOperator};
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, MetadataDb, Properties, Record, Variant};
use std::fmt;

/// A LET definition that cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LetError(pub String);

impl fmt::Display for LetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LetError {}

/// The compiled LET definitions of a query.
#[derive(Clone, Debug, Default)]
pub struct Preprocessor {
    defs: Vec<Compiled>,
}

#[derive(Clone, Debug)]
struct Compiled {
    target: String,
    op: LetOperator,
    operands: Vec<AttrRef>,
    factor: f64,
    condition: Option<RecordFilter>,
}

impl Preprocessor {
    /// Compiles LET definitions; numeric factors must be numbers.
    pub fn new(defs: &[LetDef]) -> Result<Preprocessor, LetError> {
        let defs = defs.iter().map(Compiled::new).collect::<Result<_, _>>()?;
        Ok(Preprocessor { defs })
    }

    /// Whether there is nothing to compute.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// Appends the results of every definition to the record.
    pub fn process(&mut self, db: &mut MetadataDb, record: &mut Record) {
        for def in &mut self.defs {
            if let Some(cond) = &mut def.condition
                && !cond.pass(db, record)
            {
                continue;
            }
            // An empty result (an operand read with no value) has no type
            // to give its attribute, and carries nothing: left out.
            if let Some((value, props)) = def.evaluate(db, record).filter(|(v, _)| !v.is_empty()) {
                let ty = value.attr_type();
                let attr = db.create_attribute(&def.target, ty, props, &[]);
                record.push_imm(attr, value);
            }
        }
    }
}

fn parse_factor(def: &LetDef, index: usize, default: f64) -> Result<f64, LetError> {
    match def.args.get(index) {
        None => Ok(default),
        Some(text) => text.parse().map_err(|_| LetError(format!("Invalid factor \"{text}\" in {}", def.target))),
    }
}

const RESULT_PROPS: Properties = Properties::from_bits(Properties::SKIP_EVENTS.bits() | Properties::ASVALUE.bits());

impl Compiled {
    fn new(def: &LetDef) -> Result<Compiled, LetError> {
        let (n_operands, factor) = match def.op {
            LetOperator::Ratio => (2, parse_factor(def, 2, 1.0)?),
            LetOperator::Scale => (1, parse_factor(def, 1, 1.0)?),
            LetOperator::Truncate => (1, parse_factor(def, 1, 1.0)?),
            LetOperator::First | LetOperator::Sum | LetOperator::Leaf => (def.args.len(), 1.0),
        };
        Ok(Compiled {
            target: def.target.clone(),
            op: def.op,
            operands: def.args[..n_operands].iter().map(|a| AttrRef::new(a)).collect(),
            factor,
            condition: def.condition.as_ref().map(|c| RecordFilter::new(std::slice::from_ref(c))),
        })
    }

    fn operand<'a>(&mut self, i: usize, db: &'a MetadataDb, record: &'a Record) -> Option<&'a Variant> {
        let attr = self.operands[i].get(db)?;
        first_value(db, record, attr)
    }

    /// The result and the properties of its attribute, if the operands are
    /// there.
    fn evaluate(&mut self, db: &MetadataDb, record: &Record) -> Option<(Variant, Properties)> {
        match self.op {
            LetOperator::Ratio => {
                let a = self.operand(0, db, record)?.to_f64()?;
                let b = self.operand(1, db, record)?.to_f64()?;
                (b != 0.0).then(|| (Variant::Double(self.factor * a / b), RESULT_PROPS))
            }
            LetOperator::Scale => {
                let a = self.operand(0, db, record)?.to_f64()?;
                Some((Variant::Double(self.factor * a), RESULT_PROPS))
            }
            LetOperator::Truncate => {
                let a = self.operand(0, db, record)?;
                Some((truncate(a, self.factor)?, RESULT_PROPS))
            }
            LetOperator::First => {
                (0..self.operands.len()).find_map(|i| self.operand(i, db, record).cloned()).map(|v| (v, RESULT_PROPS))
            }
            LetOperator::Sum => {
                let mut sum = Variant::Empty;
                for i in 0..self.operands.len() {
                    if let Some(v) = self.operand(i, db, record) {
                        sum.add_assign(v);
                    }
                }
                (!sum.is_empty()).then_some((sum, RESULT_PROPS))
            }
            LetOperator::Leaf => self.leaf(db, record),
        }
    }

    /// `leaf()`: the innermost nested value of a reference entry;
    /// `leaf(a)`: the innermost value of `a`, keeping `a`'s properties but
    /// for NESTED.
    fn leaf(&mut self, db: &MetadataDb, record: &Record) -> Option<(Variant, Properties)> {
        let wanted: Option<Id> = match self.operands.first_mut() {
            Some(attr) => Some(attr.get(db)?),
            None => None,
        };
        for entry in &record.entries {
            let Entry::Reference(node) = entry else {
                continue;
            };
            for (attr, value) in PathIter::new(db, *node) {
                let Some(info) = db.attribute(attr) else {
                    continue;
                };
                let matches = match wanted {
                    Some(w) => attr == w,
                    None => info.is_nested(),
                };
                if matches {
                    let props = match wanted {
                        Some(_) => Properties::from_bits(info.properties().bits() & !Properties::NESTED.bits()),
                        None => RESULT_PROPS,
                    };
                    return Some((value.clone(), props | Properties::ASVALUE));
                }
            }
        }
        None
    }
}

/// `a - fmod(a, factor)`, keeping integers integers.
fn truncate(a: &Variant, factor: f64) -> Option<Variant> {
    let integral = factor.fract() == 0.0 && factor >= 1.0;
    Some(match *a {
        Variant::Int(i) if integral => {
            let f = factor as i64;
            Variant::Int(i - i % f)
        }
        Variant::Uint(u) if integral => {
            let f = factor as u64;
            Variant::Uint(u - u % f)
        }
        _ => {
            let x = a.to_f64()?;
            let t = x - x % factor;
            match a.attr_type() {
                AttrType::Int => Variant::Int(t as i64),
                AttrType::Uint => Variant::Uint(t as u64),
                _ => Variant::Double(t),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_query;

    fn run(query: &str, build: impl Fn(&mut MetadataDb, &mut Record)) -> Vec<(String, String)> {
        let mut db = MetadataDb::new();
        let mut record = Record::ctx();
        build(&mut db, &mut record);
        let before = record.entries.len();
        let mut pre = Preprocessor::new(&parse_query(query).unwrap().let_defs).unwrap();
        pre.process(&mut db, &mut record);
        record.entries[before..]
            .iter()
            .map(|e| match e {
                Entry::Immediate(a, v) => (db.attribute(*a).unwrap().name().to_string(), v.to_cali_string()),
                Entry::Reference(_) => panic!("LET appends immediates"),
            })
            .collect()
    }

    fn numbers(db: &mut MetadataDb, r: &mut Record) {
        let a = db.create_attribute("a", AttrType::Uint, Properties::ASVALUE, &[]);
        let b = db.create_attribute("b", AttrType::Double, Properties::ASVALUE, &[]);
        let z = db.create_attribute("z", AttrType::Int, Properties::ASVALUE, &[]);
        r.push_imm(a, Variant::Uint(1234));
        r.push_imm(b, Variant::Double(2.0));
        r.push_imm(z, Variant::Int(0));
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn arithmetic_operators() {
        assert_eq!(run("let r=ratio(a,b)", numbers), pairs(&[("r", "617")]));
        assert_eq!(run("let r=ratio(a,b,0.5)", numbers), pairs(&[("r", "308.5")]));
        assert_eq!(run("let r=ratio(a,z)", numbers), pairs(&[]), "division by zero is skipped");
        assert_eq!(run("let s=scale(a,1e-3)", numbers), pairs(&[("s", "1.234")]));
        assert_eq!(run("let t=truncate(a,100)", numbers), pairs(&[("t", "1200")]));
        assert_eq!(run("let t=truncate(b)", numbers), pairs(&[("t", "2")]));
        assert_eq!(run("let s=sum(a,missing,a)", numbers), pairs(&[("s", "2468")]));
        assert_eq!(run("let f=first(missing,b,a)", numbers), pairs(&[("f", "2")]));
        assert_eq!(run("let f=first(missing)", numbers), pairs(&[]));
    }

    #[test]
    fn chained_and_conditional() {
        assert_eq!(run("let x=scale(a,2), y=scale(x,2)", numbers), pairs(&[("x", "2468"), ("y", "4936")]));
        assert_eq!(run("let x=scale(a,2) if z=0", numbers), pairs(&[("x", "2468")]));
        assert_eq!(run("let x=scale(a,2) if z>0", numbers), pairs(&[]));
        assert_eq!(run("let x=scale(a,2) if not missing", numbers), pairs(&[("x", "2468")]));
    }

    #[test]
    fn an_empty_operand_gives_no_result() {
        let empty = |db: &mut MetadataDb, r: &mut Record| {
            let e = db.create_attribute("e", AttrType::String, Properties::ASVALUE, &[]);
            r.push_imm(e, Variant::Empty);
        };
        assert_eq!(run("let f=first(e)", empty), pairs(&[]));
    }

    #[test]
    fn leaf_of_paths() {
        let tree = |db: &mut MetadataDb, r: &mut Record| {
            let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
            let other = db.create_attribute("other", AttrType::String, Properties::DEFAULT, &[]);
            let main = db.get_or_create_node(region, Variant::string("main"), None);
            let foo = db.get_or_create_node(region, Variant::string("foo"), Some(main));
            let o = db.get_or_create_node(other, Variant::string("x"), Some(foo));
            r.push_ref(o);
        };
        assert_eq!(run("let l=leaf()", tree), pairs(&[("l", "foo")]));
        assert_eq!(run("let l=leaf(other)", tree), pairs(&[("l", "x")]));
    }

    #[test]
    fn bad_factor() {
        let q = parse_query("let x=scale(a,lots)").unwrap();
        assert_eq!(Preprocessor::new(&q.let_defs).unwrap_err().0, "Invalid factor \"lots\" in x");
    }
}
