//! A parsed query: what to compute (LET), keep (WHERE), group and
//! aggregate, sort and print. The CalQL parser builds one; the runtime's
//! built-in configs build them too.

use std::fmt;

/// An aggregation kernel (a CalQL aggregation function).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// `count()`: records per group.
    Count,
    /// `sum(a)`.
    Sum,
    /// `min(a)`.
    Min,
    /// `max(a)`.
    Max,
    /// `avg(a)`: mean, via hidden sum and count helpers.
    Avg,
    /// `scale(a, S)`: S × sum(a).
    Scale,
    /// `ratio(a, b[, S])`: S × sum(a) / sum(b).
    Ratio,
    /// `percent_total(a)`: 100 × group sum / total sum.
    PercentTotal,
    /// `inclusive_sum(a)`: sum over the path node and its descendants.
    InclusiveSum,
    /// `inclusive_scale(a, S)`.
    InclusiveScale,
    /// `inclusive_percent_total(a)`: inclusive sum over the total exclusive sum.
    InclusivePercentTotal,
    /// `inclusive_ratio(a, b[, S])`.
    InclusiveRatio,
    /// `inclusive_min(a)`.
    InclusiveMin,
    /// `inclusive_max(a)`.
    InclusiveMax,
    /// `any(a)`: the first value seen.
    Any,
    /// `scale_count(S)`: S × count.
    ScaleCount,
    /// `variance(a)`: population variance.
    Variance,
    /// `histogram(a[, bins[, min, max]])`: counts of values per bin.
    Histogram,
}

/// How a kernel is written and documented.
#[derive(Copy, Clone, Debug)]
pub struct KernelInfo {
    /// The CalQL function name.
    pub name: &'static str,
    /// Argument names; the first `required` ones are mandatory.
    pub args: &'static [&'static str],
    /// Number of mandatory arguments.
    pub required: usize,
    /// One line of documentation.
    pub doc: &'static str,
}

impl Kernel {
    /// Every kernel, in documentation order.
    pub const ALL: [Kernel; 18] = [
        Kernel::Count,
        Kernel::Sum,
        Kernel::Min,
        Kernel::Max,
        Kernel::Avg,
        Kernel::Scale,
        Kernel::Ratio,
        Kernel::PercentTotal,
        Kernel::InclusiveSum,
        Kernel::InclusiveScale,
        Kernel::InclusivePercentTotal,
        Kernel::InclusiveRatio,
        Kernel::InclusiveMin,
        Kernel::InclusiveMax,
        Kernel::Any,
        Kernel::ScaleCount,
        Kernel::Variance,
        Kernel::Histogram,
    ];

    /// Name, arguments and documentation.
    pub const fn info(self) -> KernelInfo {
        const fn k(
            name: &'static str,
            args: &'static [&'static str],
            required: usize,
            doc: &'static str,
        ) -> KernelInfo {
            KernelInfo { name, args, required, doc }
        }
        match self {
            Kernel::Count => k("count", &[], 0, "number of records in the group"),
            Kernel::Sum => k("sum", &["attribute"], 1, "sum of the attribute's values"),
            Kernel::Min => k("min", &["attribute"], 1, "smallest value"),
            Kernel::Max => k("max", &["attribute"], 1, "largest value"),
            Kernel::Avg => k("avg", &["attribute"], 1, "mean value"),
            Kernel::Scale => k("scale", &["attribute", "factor"], 2, "sum multiplied by factor"),
            Kernel::Ratio => k("ratio", &["numerator", "denominator", "scale"], 2, "ratio of two sums, times scale"),
            Kernel::PercentTotal => k("percent_total", &["attribute"], 1, "group sum as percent of the total sum"),
            Kernel::InclusiveSum => k("inclusive_sum", &["attribute"], 1, "sum including all child paths"),
            Kernel::InclusiveScale => {
                k("inclusive_scale", &["attribute", "factor"], 2, "inclusive sum multiplied by factor")
            }
            Kernel::InclusivePercentTotal => {
                k("inclusive_percent_total", &["attribute"], 1, "inclusive sum as percent of the total sum")
            }
            Kernel::InclusiveRatio => k(
                "inclusive_ratio",
                &["numerator", "denominator", "scale"],
                2,
                "ratio of two inclusive sums, times scale",
            ),
            Kernel::InclusiveMin => k("inclusive_min", &["attribute"], 1, "smallest value including child paths"),
            Kernel::InclusiveMax => k("inclusive_max", &["attribute"], 1, "largest value including child paths"),
            Kernel::Any => k("any", &["attribute"], 1, "the first value seen"),
            Kernel::ScaleCount => k("scale_count", &["factor"], 1, "number of records multiplied by factor"),
            Kernel::Variance => k("variance", &["attribute"], 1, "population variance"),
            Kernel::Histogram => k(
                "histogram",
                &["attribute", "bins", "min", "max"],
                1,
                "counts of values in equal-width bins (default 10 bins over [0,1))",
            ),
        }
    }

    /// The kernel with this CalQL name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.info().name.eq_ignore_ascii_case(name))
    }

    /// Whether results propagate to ancestor paths.
    pub const fn is_inclusive(self) -> bool {
        matches!(
            self,
            Kernel::InclusiveSum
                | Kernel::InclusiveScale
                | Kernel::InclusivePercentTotal
                | Kernel::InclusiveRatio
                | Kernel::InclusiveMin
                | Kernel::InclusiveMax
        )
    }
}

/// One aggregation: a kernel and its arguments as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AggregationOp {
    /// The kernel.
    pub kernel: Kernel,
    /// Its arguments (attribute names and numbers, as text).
    pub args: Vec<String>,
}

impl AggregationOp {
    /// An op from a kernel and arguments.
    pub fn new(kernel: Kernel, args: &[&str]) -> AggregationOp {
        AggregationOp { kernel, args: args.iter().map(|s| s.to_string()).collect() }
    }

    fn arg(&self, i: usize) -> &str {
        self.args.get(i).map_or("", String::as_str)
    }

    /// The name of the (main) result attribute, e.g. `sum#time`,
    /// `ratio#a/b`, `inclusive#x`, `count`.
    pub fn result_name(&self) -> String {
        let a = self.arg(0);
        match self.kernel {
            Kernel::Count => "count".to_string(),
            Kernel::Sum => format!("sum#{a}"),
            Kernel::Min => format!("min#{a}"),
            Kernel::Max => format!("max#{a}"),
            Kernel::Avg => format!("avg#{a}"),
            Kernel::Scale => format!("scale#{a}"),
            Kernel::Ratio => format!("ratio#{a}/{}", self.arg(1)),
            Kernel::PercentTotal => format!("percent_total#{a}"),
            Kernel::InclusiveSum => format!("inclusive#{a}"),
            Kernel::InclusiveScale => format!("iscale#{a}"),
            Kernel::InclusivePercentTotal => format!("ipercent_total#{a}"),
            Kernel::InclusiveRatio => format!("iratio#{a}/{}", self.arg(1)),
            Kernel::InclusiveMin => format!("imin#{a}"),
            Kernel::InclusiveMax => format!("imax#{a}"),
            Kernel::Any => format!("any#{a}"),
            Kernel::ScaleCount => "scount".to_string(),
            Kernel::Variance => format!("variance#{a}"),
            Kernel::Histogram => format!("histogram.bin.0#{a}"),
        }
    }
}

impl fmt::Display for AggregationOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.kernel.info().name, self.args.join(","))
    }
}

/// Which attributes a query selects (SELECT) or groups by (GROUP BY).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// Not given: the formatter's or aggregator's default.
    #[default]
    Default,
    /// `*`: everything.
    All,
    /// Nothing (`--aggregate-key=none`: one group).
    Nothing,
    /// The listed attribute names, in order.
    List(Vec<String>),
}

impl Selection {
    /// Appends names to a list selection (a default or empty selection
    /// becomes a list; `*` stays `*`).
    pub fn extend(&mut self, names: impl IntoIterator<Item = String>) {
        match self {
            Selection::All => {}
            Selection::List(list) => list.extend(names),
            Selection::Default | Selection::Nothing => *self = Selection::List(names.into_iter().collect()),
        }
    }

    /// The listed names (empty unless this is a list).
    pub fn names(&self) -> &[String] {
        match self {
            Selection::List(list) => list,
            _ => &[],
        }
    }
}

/// A WHERE condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// What to test.
    pub op: ConditionOp,
    /// The attribute.
    pub attribute: String,
    /// The value to compare with (empty for existence tests).
    pub value: String,
}

/// The test of a condition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConditionOp {
    /// `a`: the attribute is present.
    Exist,
    /// `not a`.
    NotExist,
    /// `a = v`.
    Equal,
    /// `not a = v`.
    NotEqual,
    /// `a < v`.
    Less,
    /// `a > v`.
    Greater,
    /// `not a < v`: some value is at least v.
    NotLess,
    /// `not a > v`: some value is at most v.
    NotGreater,
}

impl ConditionOp {
    /// The negated test (`not`).
    pub fn negated(self) -> ConditionOp {
        match self {
            ConditionOp::Exist => ConditionOp::NotExist,
            ConditionOp::NotExist => ConditionOp::Exist,
            ConditionOp::Equal => ConditionOp::NotEqual,
            ConditionOp::NotEqual => ConditionOp::Equal,
            ConditionOp::Less => ConditionOp::NotLess,
            ConditionOp::NotLess => ConditionOp::Less,
            ConditionOp::Greater => ConditionOp::NotGreater,
            ConditionOp::NotGreater => ConditionOp::Greater,
        }
    }
}

/// A LET preprocessing operator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LetOperator {
    /// `ratio(a, b[, S])`.
    Ratio,
    /// `scale(a, S)`.
    Scale,
    /// `truncate(a[, S])`.
    Truncate,
    /// `first(a0, ...)`.
    First,
    /// `sum(a0, ...)`.
    Sum,
    /// `leaf([a])`.
    Leaf,
}

impl LetOperator {
    /// Every operator.
    pub const ALL: [LetOperator; 6] = [
        LetOperator::Ratio,
        LetOperator::Scale,
        LetOperator::Truncate,
        LetOperator::First,
        LetOperator::Sum,
        LetOperator::Leaf,
    ];

    /// The name, the argument names and the number of mandatory arguments.
    pub const fn info(self) -> (&'static str, &'static [&'static str], usize) {
        const VALUES: &[&str] = &["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"];
        match self {
            LetOperator::Ratio => ("ratio", &["numerator", "denominator", "scale"], 2),
            LetOperator::Scale => ("scale", &["attribute", "factor"], 2),
            LetOperator::Truncate => ("truncate", &["attribute", "factor"], 1),
            LetOperator::First => ("first", VALUES, 1),
            LetOperator::Sum => ("sum", VALUES, 1),
            LetOperator::Leaf => ("leaf", &["attribute"], 0),
        }
    }

    /// The operator with this name (case-insensitive).
    pub fn from_name(name: &str) -> Option<LetOperator> {
        LetOperator::ALL.into_iter().find(|op| op.info().0.eq_ignore_ascii_case(name))
    }
}

/// `LET target = op(args) [IF cond]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LetDef {
    /// The attribute the result goes into.
    pub target: String,
    /// The operator.
    pub op: LetOperator,
    /// The arguments as written.
    pub args: Vec<String>,
    /// Apply only to records that pass this condition.
    pub condition: Option<Condition>,
}

/// Sort direction of an ORDER BY key.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// Not given (ascending).
    Default,
    /// `ASC`.
    Ascending,
    /// `DESC`.
    Descending,
}

/// An ORDER BY key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The attribute (the real, possibly derived name, not an alias).
    pub attribute: String,
    /// The direction.
    pub order: SortOrder,
}

/// An output formatter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Formatter {
    /// `.cali` records.
    Cali,
    /// `attr=value,...` lines.
    Expand,
    /// A text table.
    Table,
    /// A text tree over the region hierarchy.
    Tree,
    /// JSON records.
    Json,
    /// Hatchet's split JSON.
    JsonSplit,
    /// A user format string.
    UserFormat,
    /// Folded stacks (`a;b;c count`), the input of flame graph tools.
    Folded,
    /// A flame graph, as SVG.
    FlameGraph,
    /// Chrome's trace-event JSON of an event trace.
    TraceEvent,
    /// A native Perfetto trace (protobuf) of an event trace.
    Perfetto,
}

impl Formatter {
    /// Every formatter.
    pub const ALL: [Formatter; 11] = [
        Formatter::Cali,
        Formatter::Expand,
        Formatter::Table,
        Formatter::Tree,
        Formatter::Json,
        Formatter::JsonSplit,
        Formatter::UserFormat,
        Formatter::Folded,
        Formatter::FlameGraph,
        Formatter::TraceEvent,
        Formatter::Perfetto,
    ];

    /// The FORMAT name.
    pub const fn name(self) -> &'static str {
        match self {
            Formatter::Cali => "cali",
            Formatter::Expand => "expand",
            Formatter::Table => "table",
            Formatter::Tree => "tree",
            Formatter::Json => "json",
            Formatter::JsonSplit => "json-split",
            Formatter::UserFormat => "format",
            Formatter::Folded => "folded",
            Formatter::FlameGraph => "flamegraph",
            Formatter::TraceEvent => "trace-event",
            Formatter::Perfetto => "perfetto",
        }
    }

    /// The argument names, in positional order.
    pub const fn args(self) -> &'static [&'static str] {
        match self {
            Formatter::Cali | Formatter::Expand | Formatter::JsonSplit => &[],
            Formatter::Table => &["column-width", "print-globals"],
            Formatter::Tree => &["path-attributes", "column-width", "print-globals"],
            Formatter::Json => &["object", "pretty", "quote-all", "separate-nested", "records", "split"],
            Formatter::UserFormat => &["format", "title"],
            Formatter::Folded => &["path-attributes", "metric"],
            Formatter::FlameGraph => &["path-attributes", "metric", "title"],
            Formatter::TraceEvent | Formatter::Perfetto => &["pid-attributes", "tid-attributes", "counters"],
        }
    }

    /// One line of documentation.
    pub const fn doc(self) -> &'static str {
        match self {
            Formatter::Cali => ".cali records (the input format)",
            Formatter::Expand => "one attr=value,... line per record",
            Formatter::Table => "a text table",
            Formatter::Tree => "a text tree over the region hierarchy (or path-attributes)",
            Formatter::Json => "JSON records",
            Formatter::JsonSplit => "Hatchet's split JSON",
            Formatter::UserFormat => "a format string of %[width]attribute% fields",
            Formatter::Folded => "folded stacks for flame graph tools (main;solve;kernel 1234), numbers rounded",
            Formatter::FlameGraph => "an SVG flame graph of the paths (inferno), any numbers",
            Formatter::TraceEvent => {
                "an event trace as Chrome trace-event JSON, for Perfetto's UI (the reference's cali2traceevent.py)"
            }
            Formatter::Perfetto => {
                "an event trace as a native Perfetto protobuf trace: thread tracks, slices, counters"
            }
        }
    }

    /// The formatter with this name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Formatter> {
        Formatter::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

/// FORMAT: the formatter and its arguments (name, value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatSpec {
    /// The formatter.
    pub formatter: Formatter,
    /// Arguments by name, in the order given.
    pub args: Vec<(String, String)>,
}

impl FormatSpec {
    /// A formatter without arguments.
    pub fn new(formatter: Formatter) -> FormatSpec {
        FormatSpec { formatter, args: Vec::new() }
    }

    /// The value of an argument.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.args.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Whether a flag argument is set to a true value.
    pub fn flag(&self, name: &str) -> bool {
        self.arg(name).is_some_and(|v| caliper_data::variant::parse_bool(v).unwrap_or(false))
    }
}

/// A whole query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuerySpec {
    /// SELECT: attributes to output (aggregation results included).
    pub select: Selection,
    /// `path` in SELECT: output the region hierarchy.
    pub select_path: bool,
    /// Aggregations (from SELECT and AGGREGATE), in order.
    pub aggregate: Vec<AggregationOp>,
    /// GROUP BY: the aggregation key.
    pub group_by: Selection,
    /// `path` in GROUP BY: group by the region hierarchy.
    pub group_by_path: bool,
    /// WHERE conditions, all of which must hold.
    pub filter: Vec<Condition>,
    /// LET definitions, applied in order.
    pub let_defs: Vec<LetDef>,
    /// ORDER BY keys.
    pub sort: Vec<SortKey>,
    /// FORMAT; `None` for the tool's default.
    pub format: Option<FormatSpec>,
    /// Display names (AS): attribute or result name → alias.
    pub aliases: Vec<(String, String)>,
    /// Units (UNIT): attribute or result name → unit.
    pub units: Vec<(String, String)>,
}

impl QuerySpec {
    /// The alias given to an attribute, if any.
    pub fn alias(&self, name: &str) -> Option<&str> {
        self.aliases.iter().rev().find(|(n, _)| n == name).map(|(_, a)| a.as_str())
    }

    /// The unit given to an attribute, if any.
    pub fn unit(&self, name: &str) -> Option<&str> {
        self.units.iter().rev().find(|(n, _)| n == name).map(|(_, u)| u.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_names() {
        let cases = [
            (AggregationOp::new(Kernel::Count, &[]), "count"),
            (AggregationOp::new(Kernel::Sum, &["time"]), "sum#time"),
            (AggregationOp::new(Kernel::Ratio, &["a", "b", "1e-6"]), "ratio#a/b"),
            (AggregationOp::new(Kernel::InclusiveSum, &["x"]), "inclusive#x"),
            (AggregationOp::new(Kernel::InclusiveRatio, &["a", "b"]), "iratio#a/b"),
            (AggregationOp::new(Kernel::ScaleCount, &["2"]), "scount"),
            (AggregationOp::new(Kernel::InclusivePercentTotal, &["x"]), "ipercent_total#x"),
        ];
        for (op, name) in cases {
            assert_eq!(op.result_name(), name);
        }
    }

    #[test]
    fn names_are_case_insensitive() {
        assert_eq!(Kernel::from_name("COUNT"), Some(Kernel::Count));
        assert_eq!(Kernel::from_name("Inclusive_Sum"), Some(Kernel::InclusiveSum));
        assert_eq!(LetOperator::from_name("TRUNCATE"), Some(LetOperator::Truncate));
        assert_eq!(Formatter::from_name("JSON-Split"), Some(Formatter::JsonSplit));
        assert_eq!(Kernel::from_name("median"), None);
    }

    #[test]
    fn selections_accumulate() {
        let mut s = Selection::Default;
        s.extend(["a".to_string()]);
        s.extend(["b".to_string()]);
        assert_eq!(s, Selection::List(vec!["a".into(), "b".into()]));
        let mut all = Selection::All;
        all.extend(["a".to_string()]);
        assert_eq!(all, Selection::All);
    }
}
