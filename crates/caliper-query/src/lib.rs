//! CalQL, Caliper's query language, and the query pipeline shared by
//! `cali-query` and the runtime's report services.
//!
//! A query runs in stages: LET (compute new attributes), WHERE (keep
//! records), aggregation (GROUP BY + kernels), ORDER BY, FORMAT.
//!
//! ```
//! use caliper_data::{MetadataDb, cali::CaliReader};
//! use caliper_query::{parse_query, QueryProcessor, spec::Formatter};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let trace = "__rec=node,id=12,attr=10,data=276,parent=3\n\
//!              __rec=node,id=13,attr=8,data=region,parent=12\n\
//!              __rec=node,id=14,attr=13,data=main\n\
//!              __rec=ctx,ref=14\n__rec=ctx,ref=14\n";
//! let query = parse_query("select region, count() group by region format expand")?;
//! let out = tempfile_path();
//! let mut db = MetadataDb::new();
//! let file = std::fs::File::create(&out)?;
//! let mut processor = QueryProcessor::new(&query, Formatter::Cali, Box::new(file))?;
//! CaliReader::new(&mut db, "trace").read(trace.as_bytes(), |db, r| processor.process(db, r).unwrap())?;
//! processor.finish(&mut db)?;
//! assert_eq!(std::fs::read_to_string(&out)?, "region=main,count=2\n");
//! # Ok(())
//! # }
//! # fn tempfile_path() -> std::path::PathBuf {
//! #     std::env::temp_dir().join(format!("calql-doc-{}.txt", std::process::id()))
//! # }
//! ```

#![warn(missing_docs)]

pub mod access;
pub mod aggregate;
pub mod filter;
pub mod format;
pub mod help;
pub mod lexer;
pub mod parser;
pub mod preprocess;
pub mod processor;
pub mod spec;

pub use parser::{ParseError, parse_query};
pub use processor::{QueryError, QueryProcessor};
pub use spec::QuerySpec;
