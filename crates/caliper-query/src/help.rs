//! CalQL documentation, for `cali-query --help=<topic>`.

use crate::spec::{AggregationOp, Formatter, Kernel, LetOperator};

/// The help topics about the query language.
pub const TOPICS: [&str; 6] = ["calql", "select", "let", "where", "groupby", "format"];

/// The text of a help topic, if it is one of [`TOPICS`].
pub fn help(topic: &str) -> Option<String> {
    Some(match topic {
        "calql" => OVERVIEW.to_string(),
        "select" => select(),
        "let" => let_ops(),
        "where" => WHERE.to_string(),
        "groupby" => GROUP_BY.to_string(),
        "format" => formats(),
        _ => return None,
    })
}

const OVERVIEW: &str = "\
CalQL, the Caliper query language, selects, filters, aggregates and formats
the records of .cali streams. A query is a list of clauses in any order:

  SELECT  attributes and aggregations to output   (--help=select)
  LET     new attributes computed from each record (--help=let)
  WHERE   conditions a record must meet            (--help=where)
  GROUP BY the aggregation key                     (--help=groupby)
  AGGREGATE aggregations without output columns
  ORDER BY attributes to sort by, ASC or DESC
  FORMAT  the output format                        (--help=format)

Keywords are case-insensitive; quote names with spaces or separators
(\"my name\") or escape the characters (my\\ name). Example:

  SELECT region, count(), sum(time.duration.ns) AS Time
    WHERE region GROUP BY region ORDER BY sum#time.duration.ns DESC
    FORMAT table
";

fn select() -> String {
    let mut text = String::from(
        "SELECT item[, item...]: the attributes to output, `*` for all, `path`\n\
         for the region hierarchy, or aggregations, each optionally followed\n\
         by AS \"alias\" and UNIT \"unit\". Aggregations (optional arguments\n\
         marked *) and their result attributes:\n\n",
    );
    for kernel in Kernel::ALL {
        let info = kernel.info();
        let args: Vec<String> = info
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| if i < info.required { a.to_string() } else { format!("{a}*") })
            .collect();
        let op = AggregationOp::new(kernel, info.args);
        text.push_str(&format!("  {}({}) -> {}\n      {}\n", info.name, args.join(","), op.result_name(), info.doc));
    }
    text
}

fn let_ops() -> String {
    let mut text = String::from(
        "LET result = operator(arguments) [IF condition][, ...]: computes an\n\
         attribute for each record before filtering. Operators (optional\n\
         arguments marked *):\n\n",
    );
    for op in LetOperator::ALL {
        let (name, args, required) = op.info();
        let args: Vec<String> =
            args.iter().enumerate().map(|(i, a)| if i < required { a.to_string() } else { format!("{a}*") }).collect();
        let doc = match op {
            LetOperator::Ratio => "scale * numerator / denominator",
            LetOperator::Scale => "factor * attribute",
            LetOperator::Truncate => "attribute - (attribute mod factor); factor 1 by default",
            LetOperator::First => "the first of the attributes that the record has",
            LetOperator::Sum => "the sum of the attributes that the record has",
            LetOperator::Leaf => "the innermost region (or innermost value of attribute)",
        };
        text.push_str(&format!("  {name}({})\n      {doc}\n", args.join(",")));
    }
    text
}

const WHERE: &str = "\
WHERE condition[, condition...]: keeps the records that meet every
condition. A condition on a hierarchy holds if any level meets it.

  attribute          the record has the attribute
  NOT attribute      it does not
  attribute = value  some value equals value
  attribute < value  some value is less than value
  attribute > value  some value is greater than value
  NOT ...            negates a comparison
";

const GROUP_BY: &str = "\
GROUP BY attribute[, attribute...]: the aggregation key. `path` stands for
the region hierarchy (all nested attributes). Without GROUP BY, records are
grouped by all their context-tree attributes. The aggregations of SELECT and
AGGREGATE run per group.
";

fn formats() -> String {
    let mut text = String::from("FORMAT name[(arguments)]: the output format. Formats and their arguments:\n\n");
    for f in Formatter::ALL {
        text.push_str(&format!("  {}({})\n      {}\n", f.name(), f.args().join(", "), f.doc()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_lists_the_timeline_and_flame_graph_formats() {
        let text = help("format").unwrap();
        for line in [
            "  trace-event(pid-attributes, tid-attributes, counters)",
            "  perfetto(pid-attributes, tid-attributes, counters)",
            "  flamegraph(path-attributes, metric, title)",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn every_topic_has_text() {
        for topic in TOPICS {
            assert!(help(topic).is_some_and(|t| t.len() > 100), "{topic}");
        }
        assert_eq!(help("nonsense"), None);
    }

    #[test]
    fn select_lists_signatures_and_result_names() {
        let text = help("select").unwrap();
        assert!(text.contains("  sum(attribute) -> sum#attribute\n"));
        assert!(text.contains("  ratio(numerator,denominator,scale*) -> ratio#numerator/denominator\n"));
        assert!(text.contains("  count() -> count\n"));
    }
}
