//! Running CalQL queries over records held in memory: the building blocks
//! of configs whose output takes several queries (two aggregation levels,
//! one table per loop).

use crate::mpi::{self, Comm, SelfComm};
use caliper_data::{MetadataDb, Record};
use caliper_query::format::{Collector, RecordFormatter};
use caliper_query::{QueryProcessor, QuerySpec, parse_query};
use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

/// Parses a query built by a config; an error names the query.
pub(crate) fn parse(text: &str) -> io::Result<QuerySpec> {
    parse_query(text).map_err(|e| io::Error::other(format!("query \"{text}\": {e}")))
}

/// Runs `spec` over `records` into `formatter`.
pub(crate) fn run<'a>(
    db: &mut MetadataDb,
    records: impl IntoIterator<Item = &'a Record>,
    spec: &QuerySpec,
    formatter: Box<dyn RecordFormatter>,
) -> io::Result<()> {
    run_across(db, records, spec, formatter, &SelfComm)
}

/// Runs `spec` over each rank's `records`, its aggregation merged across
/// the ranks of `comm` ([`mpi::reduce`]); rank 0's `formatter` gets the
/// result (the others' get nothing but the end).
pub(crate) fn run_across<'a>(
    db: &mut MetadataDb,
    records: impl IntoIterator<Item = &'a Record>,
    spec: &QuerySpec,
    formatter: Box<dyn RecordFormatter>,
    comm: &dyn Comm,
) -> io::Result<()> {
    let mut processor = QueryProcessor::with_formatter(spec, formatter).map_err(io::Error::other)?;
    for record in records {
        processor.process(db, record)?;
    }
    if let Some(aggregator) = processor.aggregator_mut() {
        mpi::reduce(comm, db, aggregator).map_err(io::Error::other)?;
    }
    processor.finish(db)
}

/// Runs `spec` over `records` and returns its result records.
pub(crate) fn collect<'a>(
    db: &mut MetadataDb,
    records: impl IntoIterator<Item = &'a Record>,
    spec: &QuerySpec,
) -> io::Result<Vec<Record>> {
    let results = Collector::default();
    run(db, records, spec, Box::new(results.clone()))?;
    Ok(results.take())
}

/// Runs `spec` over each rank's `records`, reduced across the ranks of
/// `comm`, and returns the result records (on rank 0; none elsewhere).
pub(crate) fn collect_across<'a>(
    db: &mut MetadataDb,
    records: impl IntoIterator<Item = &'a Record>,
    spec: &QuerySpec,
    comm: &dyn Comm,
) -> io::Result<Vec<Record>> {
    let results = Collector::default();
    run_across(db, records, spec, Box::new(results.clone()), comm)?;
    Ok(results.take())
}

/// One output stream written by several formatters in turn.
#[derive(Clone)]
pub(crate) struct SharedWriter(Rc<RefCell<Box<dyn Write>>>);

impl SharedWriter {
    pub(crate) fn new(out: Box<dyn Write>) -> SharedWriter {
        SharedWriter(Rc::new(RefCell::new(out)))
    }
}

impl Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
    }
}
