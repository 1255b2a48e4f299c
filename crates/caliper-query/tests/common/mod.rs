//! What the formatter tests share: a query run over a `.cali` stream.

use caliper_data::MetadataDb;
use caliper_data::cali::CaliReader;
use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, parse_query};
use caliper_testutil::SharedOutput;

/// Runs `query` over a `.cali` stream (`name` names it in messages) and
/// returns the output bytes.
pub fn query_output(query: &str, name: &str, data: &[u8]) -> Vec<u8> {
    let spec = parse_query(query).unwrap();
    let out = SharedOutput::default();
    let mut processor = QueryProcessor::new(&spec, Formatter::Cali, Box::new(out.clone())).unwrap();
    let mut db = MetadataDb::new();
    CaliReader::new(&mut db, name).read(data, |db, r| processor.process(db, r).unwrap()).unwrap();
    processor.finish(&mut db).unwrap();
    out.contents()
}
