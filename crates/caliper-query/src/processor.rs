//! The query pipeline: LET, WHERE, aggregation, then the formatter.

use crate::aggregate::{AggregateError, Aggregator};
use crate::filter::RecordFilter;
use crate::format::{FormatError, RecordFormatter, make_formatter};
use crate::preprocess::{LetError, Preprocessor};
use crate::spec::{Formatter, QuerySpec};
use caliper_data::{MetadataDb, Record, RecordKind};
use std::fmt;
use std::io::{self, Write};

/// A query that cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError(pub String);

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QueryError {}

macro_rules! query_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for QueryError {
            fn from(e: $t) -> QueryError {
                QueryError(e.0)
            }
        }
    )*};
}
query_error_from!(LetError, AggregateError, FormatError);

/// Runs a query over records as they are read.
pub struct QueryProcessor {
    preprocess: Preprocessor,
    filter: RecordFilter,
    aggregator: Option<Aggregator>,
    formatter: Box<dyn RecordFormatter>,
    scratch: Record,
}

impl QueryProcessor {
    /// A processor for `spec` writing to `out`; `default` is the formatter
    /// when the query has no FORMAT clause.
    pub fn new(spec: &QuerySpec, default: Formatter, out: Box<dyn Write>) -> Result<QueryProcessor, QueryError> {
        QueryProcessor::with_formatter(spec, make_formatter(spec, default, out)?)
    }

    /// A processor for `spec` handing its results to `formatter` (which
    /// may be the caller's own, e.g. to run a second query over them).
    pub fn with_formatter(spec: &QuerySpec, formatter: Box<dyn RecordFormatter>) -> Result<QueryProcessor, QueryError> {
        Ok(QueryProcessor {
            preprocess: Preprocessor::new(&spec.let_defs)?,
            filter: RecordFilter::new(&spec.filter),
            aggregator: if spec.aggregate.is_empty() { None } else { Some(Aggregator::new(spec)?) },
            formatter,
            scratch: Record::default(),
        })
    }

    /// Runs one input record through the pipeline. Globals records are
    /// left to the database (the reader has merged them already).
    pub fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        if record.kind != RecordKind::Ctx {
            return Ok(());
        }
        let record = if self.preprocess.is_empty() {
            record
        } else {
            self.scratch.clone_from(record);
            self.preprocess.process(db, &mut self.scratch);
            &self.scratch
        };
        if !self.filter.is_empty() && !self.filter.pass(db, record) {
            return Ok(());
        }
        match &mut self.aggregator {
            Some(agg) => {
                agg.add(db, record);
                Ok(())
            }
            None => self.formatter.process(db, record),
        }
    }

    /// The aggregation stage, if the query aggregates: what a cross-process
    /// reduction merges other processes' results into before
    /// [`finish`](QueryProcessor::finish).
    pub fn aggregator_mut(&mut self) -> Option<&mut Aggregator> {
        self.aggregator.as_mut()
    }

    /// Flushes the aggregation into the formatter and writes the output.
    pub fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        if let Some(agg) = &mut self.aggregator {
            let mut result = Ok(());
            let formatter = &mut self.formatter;
            agg.flush(db, |db, record| {
                if result.is_ok() {
                    result = formatter.process(db, record);
                }
            });
            result?;
        }
        self.formatter.finish(db)
    }
}
