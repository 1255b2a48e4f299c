//! Reports on demand: a CalQL query over what a channel has gathered so
//! far, written to any stream while the program runs (the C++
//! `cali::write_report_for_query`).

use crate::channel::Channel;
use crate::runtime::{Caliper, ChannelOutput};
use crate::services::report::{IfEmpty, write_query};
use caliper_query::parse_query;
use caliper_query::spec::Formatter;
use std::io::Write;

/// Runs the CalQL query `calql` over the records `channel` has gathered
/// and writes the result to `out`: `expand` lines unless the query has a
/// FORMAT clause. The channel keeps its data (this is a look, not a
/// flush that ends a measurement), so it can be reported again later.
///
/// A query that does not parse is an error, `query parse error: ...`,
/// and nothing is written; so is a failed write.
pub fn write_report_for_query(
    cali: &Caliper,
    channel: &Channel,
    calql: &str,
    out: Box<dyn Write>,
) -> Result<(), String> {
    let query = parse_query(calql).map_err(|e| format!("query parse error: {e}"))?;
    let view = ChannelOutput::new(cali, channel);
    cali.with_updates_stopped(|| {
        cali.prepare_flush(channel);
        write_query(cali, &view, &query, Formatter::Expand, out, IfEmpty::Write)
    })
    .ok_or_else(|| "flush skipped: called from a signal handler that interrupted Caliper".to_string())?
    .map_err(|e| format!("could not write the report: {e}"))
}
