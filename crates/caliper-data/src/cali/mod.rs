//! The `.cali` text format: one record per line (see the format notes in
//! the spec; node, snapshot and globals records).

mod error;
mod escape;
mod lines;
mod reader;
mod writer;

pub use error::{ReadError, ReadErrorKind, StreamError};
pub use escape::{EscapeError, escape_into, unescape_into};
pub use reader::{CaliReader, DuplicateNodes, ReadSummary, open_input, read_path, read_records};
pub use writer::CaliWriter;
