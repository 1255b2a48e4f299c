//! The CalQL parser.
//!
//! Clauses may come in any order and repeat (lists accumulate, a later
//! FORMAT replaces an earlier one); keywords and function names are
//! case-insensitive. Errors carry the reference's message and the column
//! where the problem is.

use crate::lexer::{Lexer, Word};
use crate::spec::{
    AggregationOp, Condition, ConditionOp, FormatSpec, Formatter, Kernel, LetDef, LetOperator, QuerySpec, Selection,
    SortKey, SortOrder,
};
use std::fmt;

/// Characters that end a CalQL word.
const SEPARATORS: &[char] = &[',', ';', '=', '<', '>', '(', ')', '\n'];

/// A CalQL syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong, in the reference's words.
    pub message: String,
    /// 1-based character column in the query text.
    pub column: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at column {})", self.message, self.column)
    }
}

impl std::error::Error for ParseError {}

/// Parses a CalQL query.
///
/// ```
/// use caliper_query::parse_query;
/// use caliper_query::spec::Formatter;
///
/// let q = parse_query("select region, sum(time.duration.ns) group by region format table").unwrap();
/// assert_eq!(q.aggregate[0].result_name(), "sum#time.duration.ns");
/// assert_eq!(q.format.unwrap().formatter, Formatter::Table);
/// ```
pub fn parse_query(text: &str) -> Result<QuerySpec, ParseError> {
    let mut spec = QuerySpec::default();
    parse_into(text, &mut spec)?;
    Ok(spec)
}

/// Parses a CalQL query and adds its clauses to `spec` (clauses
/// accumulate, as repeated clauses in one query do).
pub fn parse_into(text: &str, spec: &mut QuerySpec) -> Result<(), ParseError> {
    let mut parser = Parser { lx: Lexer::new(text, SEPARATORS), text, spec };
    let result = parser.query();
    // A word cut off by the end of the text is the real problem even when
    // the parser stumbled over what followed from it.
    if let Some((offset, what)) = parser.lx.unterminated() {
        return Err(parser.error_at(offset, what.to_string()));
    }
    result
}

struct Parser<'a, 's> {
    lx: Lexer<'a>,
    text: &'a str,
    spec: &'s mut QuerySpec,
}

impl Parser<'_, '_> {
    fn error_at(&self, offset: usize, message: impl Into<String>) -> ParseError {
        let column = self.text[..offset.min(self.text.len())].chars().count() + 1;
        ParseError { message: message.into(), column }
    }

    fn error(&mut self, message: impl Into<String>) -> ParseError {
        self.lx.skip_whitespace();
        let at = self.lx.position();
        self.error_at(at, message)
    }

    fn query(&mut self) -> Result<(), ParseError> {
        loop {
            if self.lx.at_end() {
                return Ok(());
            }
            let Some(word) = self.lx.word() else {
                let c = self.lx.peek().expect("not at end");
                return Err(self.error(format!("Expected clause, got {c}")));
            };
            let keyword = if word.quoted { String::new() } else { word.text.to_ascii_lowercase() };
            match keyword.as_str() {
                "select" => self.select()?,
                "aggregate" => self.aggregate()?,
                "where" => self.filter()?,
                "let" => self.let_defs()?,
                "format" => self.format()?,
                "group" => {
                    self.expect_by(&word)?;
                    self.group_by()?;
                }
                "order" => {
                    self.expect_by(&word)?;
                    self.order_by()?;
                }
                _ => {
                    return Err(self.error_at(word.start, format!("Expected clause keyword, got {}", word.text)));
                }
            }
        }
    }

    fn expect_by(&mut self, keyword: &Word) -> Result<(), ParseError> {
        let mark = self.lx.clone();
        match self.lx.word() {
            Some(w) if !w.quoted && w.text.eq_ignore_ascii_case("by") => Ok(()),
            _ => {
                self.lx = mark;
                let suggestion = format!("{} BY", keyword.text.to_ascii_uppercase());
                Err(self.error(format!("Expected clause keyword. Did you mean \"{suggestion}\"?")))
            }
        }
    }

    /// Reads a comma-separated list of items with `item`; at least one.
    fn list(&mut self, mut item: impl FnMut(&mut Self) -> Result<(), ParseError>) -> Result<(), ParseError> {
        loop {
            item(self)?;
            if !self.lx.eat(',') {
                return Ok(());
            }
        }
    }

    /// Reads `(arg, ...)` after a function name; the `(` is consumed.
    fn call_args(&mut self) -> Result<Vec<String>, ParseError> {
        let mut args = Vec::new();
        if self.lx.eat(')') {
            return Ok(args);
        }
        loop {
            match self.lx.word() {
                Some(w) => args.push(w.text),
                None => return Err(self.error("Expected ')'")),
            }
            if self.lx.eat(')') {
                return Ok(args);
            }
            if !self.lx.eat(',') {
                return Err(self.error("Expected ')'"));
            }
        }
    }

    fn kernel_op(&mut self, name: &Word) -> Result<AggregationOp, ParseError> {
        let kernel = Kernel::from_name(&name.text)
            .ok_or_else(|| self.error_at(name.start, format!("Unknown aggregation function {}", name.text)))?;
        let args = self.call_args()?;
        let info = kernel.info();
        if args.len() < info.required || args.len() > info.args.len() {
            return Err(self.error_at(name.start, format!("Invalid number of arguments for {}", info.name)));
        }
        Ok(AggregationOp { kernel, args })
    }

    fn select(&mut self) -> Result<(), ParseError> {
        self.list(|p| {
            let Some(word) = p.lx.word() else {
                return Err(p.error("Expected argument for SELECT"));
            };
            // The name the AS / UNIT modifiers apply to.
            let target = if p.lx.eat('(') {
                let op = p.kernel_op(&word)?;
                let name = op.result_name();
                if p.spec.select != Selection::All {
                    p.spec.select.extend([name.clone()]);
                }
                p.spec.aggregate.push(op);
                name
            } else if word.text == "*" && !word.quoted {
                p.spec.select = Selection::All;
                return Ok(());
            } else if !word.quoted && (word.text == "path" || word.text == "prop:nested") {
                p.spec.select_path = true;
                return Ok(());
            } else {
                p.spec.select.extend([word.text.clone()]);
                word.text
            };
            p.modifiers(&target)
        })
    }

    /// `AS alias` and `UNIT unit` after a SELECT item, each at most once.
    fn modifiers(&mut self, target: &str) -> Result<(), ParseError> {
        let (mut alias, mut unit) = (false, false);
        loop {
            let mark = self.lx.clone();
            let Some(w) = self.lx.word() else {
                return Ok(());
            };
            let key = if w.quoted { String::new() } else { w.text.to_ascii_lowercase() };
            match key.as_str() {
                "as" if !alias => {
                    let value = self.lx.word().ok_or_else(|| self.error("Expected alias at SELECT ... AS "))?;
                    self.spec.aliases.push((target.to_string(), value.text));
                    alias = true;
                }
                "unit" if !unit => {
                    let value = self.lx.word().ok_or_else(|| self.error("Expected unit at SELECT ... UNIT "))?;
                    self.spec.units.push((target.to_string(), value.text));
                    unit = true;
                }
                "as" | "unit" => {
                    return Err(self.error_at(w.start, format!("Expected clause keyword, got {}", w.text)));
                }
                _ => {
                    self.lx = mark;
                    return Ok(());
                }
            }
        }
    }

    fn aggregate(&mut self) -> Result<(), ParseError> {
        self.list(|p| {
            let word = p.lx.word().ok_or_else(|| p.error("Expected argument for AGGREGATE"))?;
            if !p.lx.eat('(') {
                return Err(p.error_at(word.start, format!("Unknown aggregation function {}", word.text)));
            }
            let op = p.kernel_op(&word)?;
            p.spec.aggregate.push(op);
            Ok(())
        })
    }

    fn group_by(&mut self) -> Result<(), ParseError> {
        self.list(|p| {
            let word = p.lx.word().ok_or_else(|| p.error("Expected argument for GROUP BY"))?;
            if !word.quoted && (word.text == "path" || word.text == "prop:nested") {
                p.spec.group_by_path = true;
                if p.spec.group_by == Selection::Default {
                    p.spec.group_by = Selection::List(Vec::new());
                }
            } else if !word.quoted && word.text == "*" {
                p.spec.group_by = Selection::All;
            } else {
                p.spec.group_by.extend([word.text]);
            }
            Ok(())
        })
    }

    fn condition(&mut self) -> Result<Condition, ParseError> {
        let mut word = self.lx.word().ok_or_else(|| self.error("Condition term expected"))?;
        let mut negate = false;
        if !word.quoted && word.text.eq_ignore_ascii_case("not") {
            negate = true;
            word = self.lx.word().ok_or_else(|| self.error("Condition term expected"))?;
        }
        let op = match self.lx.peek() {
            Some('=') => Some(('=', ConditionOp::Equal)),
            Some('<') => Some(('<', ConditionOp::Less)),
            Some('>') => Some(('>', ConditionOp::Greater)),
            _ => None,
        };
        let (op, value) = match op {
            Some((c, op)) => {
                self.lx.eat(c);
                let value = self.lx.word().ok_or_else(|| self.error(format!("Argument expected for '{c}'")))?;
                (op, value.text)
            }
            None => (ConditionOp::Exist, String::new()),
        };
        Ok(Condition { op: if negate { op.negated() } else { op }, attribute: word.text, value })
    }

    fn filter(&mut self) -> Result<(), ParseError> {
        self.list(|p| {
            let cond = p.condition()?;
            p.spec.filter.push(cond);
            Ok(())
        })
    }

    fn let_defs(&mut self) -> Result<(), ParseError> {
        self.list(|p| {
            let target = p.lx.word().ok_or_else(|| p.error("Expected argument for LET"))?;
            if !p.lx.eat('=') {
                return Err(p.error(format!("Expected \"=\" after {}", target.text)));
            }
            let name = p.lx.word().ok_or_else(|| p.error("Expected operator name"))?;
            let op = LetOperator::from_name(&name.text)
                .ok_or_else(|| p.error_at(name.start, format!("Unknown operator {}", name.text)))?;
            if !p.lx.eat('(') {
                return Err(p.error("Expected '('"));
            }
            let args = p.call_args()?;
            let (op_name, arg_names, required) = op.info();
            if args.len() < required || args.len() > arg_names.len() {
                return Err(p.error_at(name.start, format!("Invalid number of arguments for operator {op_name}")));
            }
            let mark = p.lx.clone();
            let condition = match p.lx.word() {
                Some(w) if !w.quoted && w.text.eq_ignore_ascii_case("if") => Some(p.condition()?),
                _ => {
                    p.lx = mark;
                    None
                }
            };
            if p.spec.let_defs.iter().any(|d| d.target == target.text) {
                return Err(p.error_at(target.start, format!("{} defined twice", target.text)));
            }
            p.spec.let_defs.push(LetDef { target: target.text, op, args, condition });
            Ok(())
        })
    }

    fn order_by(&mut self) -> Result<(), ParseError> {
        self.list(|p| {
            let word = p.lx.word().ok_or_else(|| p.error("Sort attribute expected"))?;
            let mark = p.lx.clone();
            let order = match p.lx.word() {
                Some(w) if !w.quoted && w.text.eq_ignore_ascii_case("asc") => SortOrder::Ascending,
                Some(w) if !w.quoted && w.text.eq_ignore_ascii_case("desc") => SortOrder::Descending,
                _ => {
                    p.lx = mark;
                    SortOrder::Default
                }
            };
            p.spec.sort.push(SortKey { attribute: word.text, order });
            Ok(())
        })
    }

    fn format(&mut self) -> Result<(), ParseError> {
        let name = self.lx.word().ok_or_else(|| self.error("Expected formatter name"))?;
        let formatter = Formatter::from_name(&name.text)
            .ok_or_else(|| self.error_at(name.start, format!("Unknown formatter {}", name.text)))?;
        let mut spec = FormatSpec::new(formatter);
        if self.lx.eat('(') && !self.lx.eat(')') {
            let names = formatter.args();
            let mut positional = 0;
            loop {
                let word = self.lx.word().ok_or_else(|| self.error("Expected ')'"))?;
                if self.lx.eat('=') {
                    let value = self.lx.word().ok_or_else(|| self.error("Argument expected for '='"))?;
                    if !names.contains(&word.text.as_str()) {
                        return Err(self
                            .error_at(word.start, format!("Unknown argument {} for {}", word.text, formatter.name())));
                    }
                    spec.args.push((word.text, value.text));
                } else if !word.quoted && names.contains(&word.text.as_str()) {
                    // A flag named by itself.
                    spec.args.push((word.text, "true".to_string()));
                } else {
                    let Some(&arg) = names.get(positional) else {
                        return Err(self.error_at(
                            word.start,
                            format!("Invalid number of arguments for formatter {}", formatter.name()),
                        ));
                    };
                    spec.args.push((arg.to_string(), word.text));
                    positional += 1;
                }
                if self.lx.eat(')') {
                    break;
                }
                if !self.lx.eat(',') {
                    return Err(self.error("Expected ')'"));
                }
            }
        }
        self.spec.format = Some(spec);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(q: &str) -> QuerySpec {
        parse_query(q).unwrap_or_else(|e| panic!("{q}: {e}"))
    }

    fn err(q: &str) -> String {
        parse_query(q).expect_err(q).message
    }

    fn list(names: &[&str]) -> Selection {
        Selection::List(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn select_lists() {
        assert_eq!(ok("select a,a.a, b , c ").select, list(&["a", "a.a", "b", "c"]));
        let q = ok("SELECT aa,path");
        assert_eq!(q.select, list(&["aa"]));
        assert!(q.select_path);
        let q = ok("SELECT COUNT(),b,ccc");
        assert_eq!(q.select, list(&["count", "b", "ccc"]));
        assert_eq!(q.aggregate, vec![AggregationOp::new(Kernel::Count, &[])]);
        assert_eq!(ok("select *").select, Selection::All);
        let q = ok("select *, sum(x)");
        assert_eq!(q.select, Selection::All);
        assert_eq!(q.aggregate.len(), 1);
        assert_eq!(ok("select a select b").select, list(&["a", "b"]));
    }

    #[test]
    fn aliases_and_units() {
        let q = ok(r#"select a  as "my alias (for a)", b"#);
        assert_eq!(q.alias("a"), Some("my alias (for a)"));
        let q = ok(r#"select x,ratio(a,b,1e-6) As "Read BW" uNiT "MB/s" format table"#);
        assert_eq!(q.select, list(&["x", "ratio#a/b"]));
        assert_eq!(q.alias("ratio#a/b"), Some("Read BW"));
        assert_eq!(q.unit("ratio#a/b"), Some("MB/s"));
        assert_eq!(q.aggregate[0].args, ["a", "b", "1e-6"]);
        assert_eq!(q.format.unwrap().formatter, Formatter::Table);
        let q = ok(r"select my\ count\ alias");
        assert_eq!(q.select, list(&["my count alias"]));
    }

    #[test]
    fn where_conditions() {
        let q = ok("where a,bbb<17, NOT cc , dd = 5, not eee = foo, ff>42");
        let c = |op, a: &str, v: &str| Condition { op, attribute: a.into(), value: v.into() };
        assert_eq!(
            q.filter,
            vec![
                c(ConditionOp::Exist, "a", ""),
                c(ConditionOp::Less, "bbb", "17"),
                c(ConditionOp::NotExist, "cc", ""),
                c(ConditionOp::Equal, "dd", "5"),
                c(ConditionOp::NotEqual, "eee", "foo"),
                c(ConditionOp::Greater, "ff", "42"),
            ]
        );
        assert_eq!(ok("where not a < 3").filter[0].op, ConditionOp::NotLess);
        assert_eq!(ok("where not a > 3").filter[0].op, ConditionOp::NotGreater);
        assert_eq!(ok(r"where iteration#main\ loop=2").filter[0].attribute, "iteration#main loop");
    }

    #[test]
    fn group_and_order() {
        assert_eq!(ok("GROUP   By   aa,b, ccc").group_by, list(&["aa", "b", "ccc"]));
        let q = ok("group by path");
        assert!(q.group_by_path);
        assert_eq!(q.group_by, Selection::List(vec![]));
        let q = ok("Order By aa, b desc , c   asc, ddd");
        let orders: Vec<_> = q.sort.iter().map(|k| (k.attribute.as_str(), k.order)).collect();
        assert_eq!(
            orders,
            vec![
                ("aa", SortOrder::Default),
                ("b", SortOrder::Descending),
                ("c", SortOrder::Ascending),
                ("ddd", SortOrder::Default)
            ]
        );
        let q = ok(r#"Order By aa,"b with space" format table"#);
        assert_eq!(q.sort[1].attribute, "b with space");
    }

    #[test]
    fn formats() {
        let f = ok(r#"FORMAT tree("a,bb,ccc")"#).format.unwrap();
        assert_eq!(f.arg("path-attributes"), Some("a,bb,ccc"));
        let f = ok("FORMAT tree(column-width=42)").format.unwrap();
        assert_eq!(f.arg("column-width"), Some("42"));
        let f = ok("FORMAT json(object)").format.unwrap();
        assert!(f.flag("object"));
        assert_eq!(ok("format json format expand").format.unwrap().formatter, Formatter::Expand);
        assert_eq!(ok("format json-split").format.unwrap().formatter, Formatter::JsonSplit);
    }

    #[test]
    fn aggregate_and_let() {
        let q = ok(" Aggregate SUM ( aaaa ), Count(  ) ");
        assert_eq!(
            q.aggregate,
            vec![AggregationOp::new(Kernel::Sum, &["aaaa"]), AggregationOp::new(Kernel::Count, &[])]
        );
        assert_eq!(q.select, Selection::Default);
        let q =
            ok(r#"let x=  ratio( a,   "b" ) if not X, y=scale(c,42) if Y =  foo let z=truncate (  yy ) if not Z>1"#);
        assert_eq!(q.let_defs.len(), 3);
        assert_eq!(q.let_defs[0].args, ["a", "b"]);
        assert_eq!(q.let_defs[0].condition.as_ref().unwrap().op, ConditionOp::NotExist);
        assert_eq!(q.let_defs[1].condition.as_ref().unwrap().value, "foo");
        assert_eq!(q.let_defs[2].op, LetOperator::Truncate);
        assert_eq!(q.let_defs[2].condition.as_ref().unwrap().op, ConditionOp::NotGreater);
        assert_eq!(ok("let l = leaf()").let_defs[0].args.len(), 0);
    }

    #[test]
    fn rejected_queries() {
        assert_eq!(err("select bla,"), "Expected argument for SELECT");
        assert_eq!(err("select "), "Expected argument for SELECT");
        assert_eq!(err("select sum()"), "Invalid number of arguments for sum");
        assert_eq!(err("select count(a)"), "Invalid number of arguments for count");
        assert_eq!(err("select sum(a,b,c)"), "Invalid number of arguments for sum");
        assert_eq!(err("select median(a)"), "Unknown aggregation function median");
        assert_eq!(err("where a="), "Argument expected for '='");
        assert_eq!(err("where aa=bb,NOT"), "Condition term expected");
        assert_eq!(err("aggregate sum(aa), count("), "Expected ')'");
        assert_eq!(err("aggregate sum(aa),"), "Expected argument for AGGREGATE");
        assert_eq!(err(r#"FORMAT tree("a,bb,ccc", ddd, e, f)"#), "Invalid number of arguments for formatter tree");
        assert_eq!(err("FORMAT tree(glorb=glurb)"), "Unknown argument glorb for tree");
        assert_eq!(err("format csv"), "Unknown formatter csv");
        assert_eq!(err("SELECT a GROUP b.c.d"), "Expected clause keyword. Did you mean \"GROUP BY\"?");
        assert_eq!(err(" select a,b,c format tree = where b"), "Expected clause, got =");
        assert_eq!(err("where bla()"), "Expected clause, got (");
        assert_eq!(err("let blagarbl"), "Expected \"=\" after blagarbl");
        assert_eq!(err("let a=notanoperator(x,y)"), "Unknown operator notanoperator");
        assert_eq!(err("let a=scale(x,10.0), a =scale(y,5)"), "a defined twice");
        assert_eq!(err("let a=scale(x)"), "Invalid number of arguments for operator scale");
        assert_eq!(err("selec a"), "Expected clause keyword, got selec");
        assert_eq!(err("select a as x as y"), "Expected clause keyword, got as");
        assert_eq!(err("select a as"), "Expected alias at SELECT ... AS ");
    }

    #[test]
    fn errors_carry_the_column() {
        let e = parse_query("select a where b=").unwrap_err();
        assert_eq!(e.column, 18);
        assert_eq!(e.to_string(), "Argument expected for '=' (at column 18)");
        let e = parse_query("select a frobnicate").unwrap_err();
        assert_eq!(e.column, 10);
        let e = parse_query("sélect a").unwrap_err();
        assert_eq!(e.column, 1);
    }

    #[test]
    fn words_cut_off_by_the_end_are_errors() {
        let e = parse_query(r#"where region="\"#).unwrap_err();
        assert_eq!(e.to_string(), "Unterminated quote: '\"' without a closing '\"' (at column 14)");
        let e = parse_query(r#"select "a b"#).unwrap_err();
        assert_eq!(e.column, 8);
        let e = parse_query(r#"where region=ab\"#).unwrap_err();
        assert_eq!(e.to_string(), "Incomplete escape: '\\' at the end of the text (at column 16)");
        // Closed quotes and escapes are fine.
        assert!(parse_query(r#"where region="a\"b", x=\,"#).is_ok());
    }
}
