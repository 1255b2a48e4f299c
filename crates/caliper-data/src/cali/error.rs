//! Errors of the `.cali` reader.

use super::escape::EscapeError;
use crate::metadb::ImportError;
use std::fmt;

/// What is wrong with a `.cali` input.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadErrorKind {
    /// The input could not be opened or read.
    Io(std::io::ErrorKind, String),
    /// The input holds no record at all.
    Empty,
    /// A line that does not start with `__rec=`.
    NotARecord,
    /// `__rec=` followed by something other than `node`, `ctx`, `globals`.
    UnknownRecordKind(String),
    /// A field name the record kind does not have.
    UnknownField(String),
    /// A field that occurs twice in one record.
    DuplicateField(String),
    /// A required field is absent.
    MissingField(&'static str),
    /// A field name without `=` and value (e.g. a line cut off).
    MissingValue(String),
    /// A field that must have exactly one value has a list.
    ExpectedOneValue(&'static str),
    /// An id that is not a decimal number.
    BadId(String),
    /// A node defined with the invalid id (`CALI_INV_ID`, u64::MAX), which
    /// the reference uses for "no node".
    InvalidNodeId,
    /// A malformed escape sequence.
    BadEscape(EscapeError),
    /// A raw control character (binary data) inside a line.
    ControlCharacter(u8),
    /// Bytes that are not UTF-8.
    InvalidUtf8,
    /// A snapshot with different numbers of attributes and values.
    LengthMismatch {
        /// Number of attribute ids.
        attributes: usize,
        /// Number of values.
        values: usize,
    },
    /// An id or value that does not fit the stream's metadata.
    Import(ImportError),
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadErrorKind::Io(_, msg) => f.write_str(msg),
            ReadErrorKind::Empty => write!(f, "no records: the input is empty"),
            ReadErrorKind::NotARecord => write!(f, "not a .cali record: expected a line starting with \"__rec=\""),
            ReadErrorKind::UnknownRecordKind(k) => {
                write!(f, "unknown record kind \"{k}\": expected node, ctx or globals")
            }
            ReadErrorKind::UnknownField(k) => write!(f, "unknown field \"{k}\""),
            ReadErrorKind::DuplicateField(k) => write!(f, "field \"{k}\" given twice"),
            ReadErrorKind::MissingField(k) => write!(f, "missing field \"{k}\""),
            ReadErrorKind::MissingValue(k) => {
                write!(f, "field \"{k}\" has no value (truncated line?)")
            }
            ReadErrorKind::ExpectedOneValue(k) => {
                write!(f, "field \"{k}\" must have exactly one value")
            }
            ReadErrorKind::BadId(t) => write!(f, "invalid id \"{t}\": expected a decimal number"),
            ReadErrorKind::InvalidNodeId => {
                write!(f, "node id {} is the invalid id (CALI_INV_ID), not a node", crate::node::INV_ID)
            }
            ReadErrorKind::BadEscape(e) => e.fmt(f),
            ReadErrorKind::ControlCharacter(b) => {
                write!(f, "control character 0x{b:02x} in line (binary data?)")
            }
            ReadErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8 (binary data?)"),
            ReadErrorKind::LengthMismatch { attributes, values } => {
                write!(f, "attr / data size mismatch: {attributes} attributes but {values} values")
            }
            ReadErrorKind::Import(e) => e.fmt(f),
        }
    }
}

/// A `.cali` input error with its place: the input's name, the 1-based line
/// and the 1-based byte column (0 when the error is not in a line, e.g. an
/// empty or unreadable input).
#[derive(Clone, Debug, PartialEq)]
pub struct ReadError {
    /// The file name, or `<stdin>`.
    pub source: String,
    /// The line number, 1-based.
    pub line: u64,
    /// The byte column, 1-based.
    pub column: usize,
    /// What is wrong.
    pub kind: ReadErrorKind,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(f, "{}: {}", self.source, self.kind),
            (l, 0) => write!(f, "{}:{l}: {}", self.source, self.kind),
            (l, c) => write!(f, "{}:{l}:{c}: {}", self.source, self.kind),
        }
    }
}

impl std::error::Error for ReadError {}

/// Why reading a stream stopped: a bad input, or the record consumer failed.
#[derive(Debug)]
pub enum StreamError<E> {
    /// The input is malformed or unreadable.
    Read(ReadError),
    /// The consumer of the records returned an error.
    Sink(E),
}

impl<E: fmt::Display> fmt::Display for StreamError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Read(e) => e.fmt(f),
            StreamError::Sink(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for StreamError<E> {}
