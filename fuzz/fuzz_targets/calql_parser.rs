//! Fuzzes the CalQL parser: any text gives a query or an error with a
//! column inside the text, never a panic; an accepted query also sets up
//! the whole pipeline without panicking.

#![no_main]

use caliper_query::spec::Formatter;
use caliper_query::{QueryProcessor, parse_query};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_query(text) {
        Ok(spec) => {
            let _ = QueryProcessor::new(&spec, Formatter::Expand, Box::new(std::io::sink()));
        }
        Err(e) => assert!(e.column >= 1 && e.column <= text.chars().count() + 1, "{e} for {text:?}"),
    }
});
