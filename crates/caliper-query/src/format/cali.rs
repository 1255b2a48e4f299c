//! `cali`: records as a `.cali` stream, globals at the end.

use super::RecordFormatter;
use caliper_data::cali::CaliWriter;
use caliper_data::{MetadataDb, Record, RecordKind};
use std::io::{self, Write};

/// Writes `.cali` records.
pub struct CaliFormatter {
    writer: Option<CaliWriter<Box<dyn Write>>>,
}

impl CaliFormatter {
    /// A formatter writing to `out`.
    pub fn new(out: Box<dyn Write>) -> CaliFormatter {
        CaliFormatter { writer: Some(CaliWriter::new(out)) }
    }
}

impl RecordFormatter for CaliFormatter {
    fn process(&mut self, db: &mut MetadataDb, record: &Record) -> io::Result<()> {
        match &mut self.writer {
            Some(w) if record.kind == RecordKind::Ctx => w.write_record(db, record),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, db: &mut MetadataDb) -> io::Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.write_record(db, &db.globals())?;
            w.finish()?.flush()?;
        }
        Ok(())
    }
}
