//! CalQL, Caliper's query language, and the query pipeline shared by
//! `cali-query` and the runtime's report services.
//!
//! A query runs in stages: LET (compute new attributes), WHERE (keep
//! records), aggregation (GROUP BY + kernels), ORDER BY, FORMAT.

pub mod access;
pub mod filter;
pub mod lexer;
pub mod parser;
pub mod preprocess;
pub mod spec;

pub use parser::{ParseError, parse_query};
pub use spec::QuerySpec;
