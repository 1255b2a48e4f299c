//! The streaming `.cali` reader.
//!
//! Reads one line at a time: node records go into the [`MetadataDb`],
//! snapshot and globals records are translated to database ids, typed, and
//! handed to a consumer. One record buffer is reused for every line, so the
//! reader allocates nothing per record beyond string values, and memory
//! does not grow with the length of the input.

use super::error::{ReadError, ReadErrorKind, StreamError};
use super::escape::unescape_into;
use super::lines::LineSource;
use crate::idmap::IdMap;
use crate::metadb::{ImportError, MetadataDb};
use crate::node::Id;
use crate::record::{Entry, Record, RecordKind};
use crate::types::AttrType;
use crate::variant::Variant;
use std::convert::Infallible;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc;

/// Counts of what a stream contained.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadSummary {
    /// Node records.
    pub nodes: u64,
    /// Snapshot records.
    pub snapshots: u64,
    /// Globals records.
    pub globals: u64,
}

impl ReadSummary {
    /// All records.
    pub fn records(&self) -> u64 {
        self.nodes + self.snapshots + self.globals
    }
}

/// A value as it appears in a line: its byte range and whether it holds
/// escapes.
#[derive(Copy, Clone)]
struct RawValue {
    start: usize,
    end: usize,
    escaped: bool,
}

/// An id list field value with the column each id starts at.
type IdList = Vec<(u64, usize)>;

/// Scratch space for one line, reused across lines.
#[derive(Default)]
struct LineFields {
    ids: IdList,
    parents: IdList,
    refs: IdList,
    attrs: IdList,
    data: Vec<RawValue>,
    seen: u8,
    data_column: usize,
}

const SEEN_ID: u8 = 1;
const SEEN_PARENT: u8 = 2;
const SEEN_REF: u8 = 4;
const SEEN_ATTR: u8 = 8;
const SEEN_DATA: u8 = 16;

impl LineFields {
    fn clear(&mut self) {
        self.ids.clear();
        self.parents.clear();
        self.refs.clear();
        self.attrs.clear();
        self.data.clear();
        self.seen = 0;
        self.data_column = 0;
    }
}

/// An error inside a line: the 0-based byte offset and what is wrong.
type LineError = (usize, ReadErrorKind);

/// Reads `.cali` streams into a [`MetadataDb`]. One reader reads one
/// stream: its id map translates that stream's node ids.
pub struct CaliReader<'db> {
    db: &'db mut MetadataDb,
    ids: IdMap,
    source: String,
    record: Record,
    /// Database ids of the nodes defined since the last record, in order:
    /// they tell how the writer interleaved the record's entries.
    recent: Vec<Id>,
    unescaped: Vec<u8>,
    summary: ReadSummary,
    /// The id of the node record being applied, if the stream had defined
    /// it before (`finish_line` knows the line and notes it).
    repeated_id: Option<u64>,
    duplicates: Option<DuplicateNodes>,
    node_hook: Option<NodeHook<'db>>,
}

/// A consumer of the nodes a stream defines, called as each node record is
/// read (see [`CaliReader::on_node`]).
type NodeHook<'db> = Box<dyn FnMut(&mut MetadataDb, Id) + 'db>;

/// Node records that repeat an id the stream had defined: they are skipped
/// and the first definition stays, as in the reference (whose reader keeps
/// the first mapping of an id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuplicateNodes {
    /// The line of the first such record.
    pub line: u64,
    /// Its node id.
    pub id: u64,
    /// How many there were.
    pub count: u64,
}

impl<'db> CaliReader<'db> {
    /// A reader for one stream named `source` (used in error messages).
    pub fn new(db: &'db mut MetadataDb, source: impl Into<String>) -> CaliReader<'db> {
        CaliReader {
            db,
            ids: IdMap::new(),
            source: source.into(),
            record: Record::default(),
            recent: Vec::new(),
            unescaped: Vec::new(),
            summary: ReadSummary::default(),
            repeated_id: None,
            duplicates: None,
            node_hook: None,
        }
    }

    /// Calls `hook` with the database id of every node record as it is
    /// read, before the records after it. Whatever the hook adds to the
    /// database takes the ids that come next, as it does when the
    /// reference's reader calls its node callback (`cali-query
    /// --list-attributes` shows those ids).
    pub fn on_node(mut self, hook: impl FnMut(&mut MetadataDb, Id) + 'db) -> CaliReader<'db> {
        self.node_hook = Some(Box::new(hook));
        self
    }

    /// The node records skipped because their id was defined before.
    pub fn duplicates(&self) -> Option<DuplicateNodes> {
        self.duplicates
    }

    /// A one-line warning about skipped records, naming the file and line,
    /// if there were any.
    pub fn warning(&self) -> Option<String> {
        let d = self.duplicates?;
        let more = if d.count > 1 { format!(" ({} node records repeat an id)", d.count) } else { String::new() };
        Some(format!("{}:{}: node id {} defined again; the first definition is kept{more}", self.source, d.line, d.id))
    }

    /// What the reader has read so far; after an error, the records before
    /// the bad line (tools print results for those, as the reference does).
    pub fn read_so_far(&self) -> &ReadSummary {
        &self.summary
    }

    /// Reads the whole input, handing every snapshot and globals record to
    /// `sink` (globals are also merged into the database). The sink may add
    /// nodes and attributes to the database (a query's results, say); the
    /// stream's own ids stay mapped.
    pub fn read<R: Read>(
        &mut self,
        input: R,
        mut sink: impl FnMut(&mut MetadataDb, &Record),
    ) -> Result<ReadSummary, ReadError> {
        self.try_read(input, |db, rec| {
            sink(db, rec);
            Ok::<(), Infallible>(())
        })
        .map_err(|e| match e {
            StreamError::Read(e) => e,
        })
    }

    /// Like [`Self::read`] with a consumer that can fail, which stops the
    /// reading.
    pub fn try_read<R: Read, E>(
        &mut self,
        input: R,
        mut sink: impl FnMut(&mut MetadataDb, &Record) -> Result<(), E>,
    ) -> Result<ReadSummary, StreamError<E>> {
        let mut lines = LineSource::new(input);
        let mut fields = LineFields::default();
        loop {
            let (line_no, line) = match lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => return Err(StreamError::Read(self.io_error(&e))),
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let applied = split_line(line, &mut fields).and_then(|kind| self.apply_line(line, kind, &fields));
            if self.finish_line(line_no, applied)? {
                sink(self.db, &self.record).map_err(StreamError::Sink)?;
            }
        }
        self.summary()
    }

    /// Like [`Self::try_read`], but splitting lines on a second thread
    /// while this one updates the database and runs `sink`: about twice as
    /// fast on two cores. Records arrive in the same order, and an error
    /// stops the reading at the same line.
    pub fn try_read_parallel<R: Read + Send, E>(
        &mut self,
        input: R,
        mut sink: impl FnMut(&mut MetadataDb, &Record) -> Result<(), E>,
    ) -> Result<ReadSummary, StreamError<E>> {
        let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
        std::thread::scope(|scope| {
            scope.spawn(move || split_batches(input, full_tx, empty_rx));
            // Dropping the receiver on return stops the splitter early.
            let full_rx = full_rx;
            for batch in full_rx.iter() {
                for line in &batch.lines {
                    let text = &batch.text[line.start..line.end];
                    let applied =
                        line.kind.clone().and_then(|kind| self.apply_line(text, kind, &batch.fields[line.index]));
                    if self.finish_line(line.line_no, applied)? {
                        sink(self.db, &self.record).map_err(StreamError::Sink)?;
                    }
                }
                if let Some(e) = &batch.io_error {
                    return Err(StreamError::Read(self.io_error(e)));
                }
                // The splitter may have stopped already; then the batch is dropped.
                let _ = empty_tx.send(batch);
            }
            Ok(())
        })?;
        self.summary()
    }

    /// Turns a line's outcome into an error with its place, or tells
    /// whether it left a record for the sink.
    fn finish_line<E>(
        &mut self,
        line_no: u64,
        applied: Result<Option<RecordKind>, LineError>,
    ) -> Result<bool, StreamError<E>> {
        if let Some(id) = self.repeated_id.take() {
            let d = self.duplicates.get_or_insert(DuplicateNodes { line: line_no, id, count: 0 });
            d.count += 1;
        }
        match applied {
            Ok(kind) => Ok(kind.is_some()),
            Err((offset, kind)) => Err(StreamError::Read(ReadError {
                source: self.source.clone(),
                line: line_no,
                column: offset + 1,
                kind,
            })),
        }
    }

    /// The counts at the end of a stream; an error if it held no record.
    fn summary<E>(&self) -> Result<ReadSummary, StreamError<E>> {
        if self.summary.records() == 0 {
            return Err(StreamError::Read(ReadError {
                source: self.source.clone(),
                line: 0,
                column: 0,
                kind: ReadErrorKind::Empty,
            }));
        }
        Ok(self.summary)
    }

    fn io_error(&self, e: &io::Error) -> ReadError {
        ReadError { source: self.source.clone(), line: 0, column: 0, kind: ReadErrorKind::Io(e.kind(), e.to_string()) }
    }

    /// Applies a split line to the database. Returns the kind of record
    /// now in `self.record`, or `None` for a node record.
    fn apply_line(&mut self, line: &[u8], kind: LineKind, f: &LineFields) -> Result<Option<RecordKind>, LineError> {
        match kind {
            LineKind::Ctx => self.build_record(line, f, RecordKind::Ctx).map(|()| Some(RecordKind::Ctx)),
            LineKind::Globals => {
                self.build_record(line, f, RecordKind::Globals)?;
                self.db.import_globals(&self.record);
                Ok(Some(RecordKind::Globals))
            }
            LineKind::Node => self.import_node(line, f).map(|()| None),
        }
    }

    fn import_node(&mut self, line: &[u8], f: &LineFields) -> Result<(), LineError> {
        if f.seen & SEEN_REF != 0 {
            return Err((0, ReadErrorKind::UnknownField("ref".into())));
        }
        let (id, id_col) =
            single(&f.ids, f.seen & SEEN_ID != 0, "id")?.ok_or((0, ReadErrorKind::MissingField("id")))?;
        let (attr, attr_col) =
            single(&f.attrs, f.seen & SEEN_ATTR != 0, "attr")?.ok_or((0, ReadErrorKind::MissingField("attr")))?;
        let parent = single(&f.parents, f.seen & SEEN_PARENT != 0, "parent")?;
        let data = match f.data.as_slice() {
            [] => RawValue { start: id_col, end: id_col, escaped: false },
            [one] => *one,
            _ => return Err((f.data_column, ReadErrorKind::ExpectedOneValue("data"))),
        };
        if id == crate::node::INV_ID {
            return Err((id_col, ReadErrorKind::InvalidNodeId));
        }
        if id >= crate::node::BOOTSTRAP_NODE_COUNT && self.ids.get(id).is_some() {
            self.repeated_id = Some(id);
            return Ok(());
        }
        let text = value_text(line, data, &mut self.unescaped)?;
        let node = self.db.import_node(&mut self.ids, id, attr, text, parent.map(|(p, _)| p)).map_err(|e| {
            let column = match e {
                ImportError::UnknownAttribute(_) | ImportError::NotAnAttribute(_) => attr_col,
                ImportError::UnknownNode(_) => parent.map_or(id_col, |(_, col)| col),
                ImportError::BadAttribute(_) => id_col,
                ImportError::BadValue(_) => data.start,
            };
            (column, ReadErrorKind::Import(e))
        })?;
        self.recent.push(node);
        self.summary.nodes += 1;
        if let Some(hook) = &mut self.node_hook {
            hook(self.db, node);
        }
        Ok(())
    }

    fn build_record(&mut self, line: &[u8], f: &LineFields, kind: RecordKind) -> Result<(), LineError> {
        if f.seen & (SEEN_ID | SEEN_PARENT) != 0 {
            let name = if f.seen & SEEN_ID != 0 { "id" } else { "parent" };
            return Err((0, ReadErrorKind::UnknownField(name.into())));
        }
        if f.attrs.len() != f.data.len() {
            let column = if f.seen & SEEN_DATA != 0 { f.data_column } else { line.len() };
            return Err((column, ReadErrorKind::LengthMismatch { attributes: f.attrs.len(), values: f.data.len() }));
        }
        let entries = &mut self.record.entries;
        entries.clear();
        self.record.kind = kind;
        for &(r, col) in &f.refs {
            let node = self.db.map_node(&self.ids, r).map_err(|e| (col, ReadErrorKind::Import(e)))?;
            entries.push(Entry::Reference(node));
        }
        for (&(a, col), &raw) in f.attrs.iter().zip(&f.data) {
            let (attr, ty) = self.db.map_attribute(&self.ids, a).map_err(|e| (col, ReadErrorKind::Import(e)))?;
            let value = parse_value(line, raw, ty, &mut self.unescaped)?;
            entries.push(Entry::Immediate(attr, value));
        }
        if !self.recent.is_empty() {
            interleave(self.db, f.refs.len(), entries, &self.recent);
            self.recent.clear();
        }
        match kind {
            RecordKind::Ctx => self.summary.snapshots += 1,
            RecordKind::Globals => self.summary.globals += 1,
        }
        Ok(())
    }
}

/// Merges a line's reference and immediate entries back into one list.
///
/// `entries` holds the line's `n_refs` references, then its immediates.
/// A `.cali` line keeps the two kinds apart, but the writer emitted the
/// nodes the record needed in the record's entry order: for each entry, its
/// node's attribute, parent chain and the node itself, skipping what the
/// stream already had. The nodes defined since the previous record
/// (`recent`, in file order) therefore tell the order back: at each step we
/// take the next reference or the next immediate, whichever would make a
/// writer emit exactly the next nodes of `recent`; entries that emit nothing
/// go first. Writing the result again reproduces the stream. Streams from
/// other writers may fit no order; the rest then follows references first.
fn interleave(db: &MetadataDb, n_refs: usize, entries: &mut Vec<Entry>, recent: &[Id]) {
    let imms = entries.split_off(n_refs);
    let refs = std::mem::take(entries);
    let emission = Emission::new(db, recent);
    let mut refs = refs.into_iter().peekable();
    let mut imms = imms.into_iter().peekable();
    let mut pos = Some(0);
    loop {
        let (r, i) = (refs.peek().map(Entry::node), imms.peek().map(Entry::node));
        if r.is_none() && i.is_none() {
            break;
        }
        let after_r = pos.and_then(|p| r.and_then(|r| emission.replay(r, p)));
        let after_i = pos.and_then(|p| i.and_then(|i| emission.replay(i, p)));
        let take_ref = match (after_r, after_i) {
            (Some(a), _) if Some(a) == pos => true,
            (_, Some(b)) if Some(b) == pos => false,
            (Some(a), _) => {
                pos = Some(a);
                true
            }
            (None, Some(b)) => {
                pos = Some(b);
                false
            }
            (None, None) => {
                pos = None;
                r.is_some()
            }
        };
        let next = if take_ref { refs.next() } else { imms.next() };
        entries.push(next.expect("peeked"));
    }
}

/// Replays the writer's node emission against the nodes a stream defined.
struct Emission<'a> {
    db: &'a MetadataDb,
    recent: &'a [Id],
    /// Position of each recent node, for long runs of node definitions.
    positions: Option<std::collections::HashMap<Id, usize>>,
}

impl<'a> Emission<'a> {
    fn new(db: &'a MetadataDb, recent: &'a [Id]) -> Emission<'a> {
        let positions = (recent.len() > 32).then(|| {
            let mut map = std::collections::HashMap::with_capacity(recent.len());
            for (i, &id) in recent.iter().enumerate() {
                map.entry(id).or_insert(i);
            }
            map
        });
        Emission { db, recent, positions }
    }

    fn position(&self, id: Id) -> Option<usize> {
        match &self.positions {
            Some(map) => map.get(&id).copied(),
            None => self.recent.iter().position(|&r| r == id),
        }
    }

    /// If writing the entry for node `start` when `recent[..pos]` are
    /// already written emits exactly `recent[pos..end]`, returns `end`.
    fn replay(&self, start: Id, pos: usize) -> Option<usize> {
        let mut next = pos;
        let mut stack = vec![(start, 0u8)];
        while let Some((id, stage)) = stack.pop() {
            let Some(p) = self.position(id) else { continue };
            if p < next {
                continue;
            }
            let node = self.db.node(id)?;
            match stage {
                0 => {
                    stack.push((id, 1));
                    stack.push((node.attribute, 0));
                }
                1 => {
                    stack.push((id, 2));
                    if let Some(parent) = node.parent {
                        stack.push((parent, 0));
                    }
                }
                _ => {
                    if p != next {
                        return None;
                    }
                    next += 1;
                }
            }
        }
        Some(next)
    }
}

/// Bytes of line text per batch handed between the threads of
/// [`CaliReader::try_read_parallel`].
const BATCH_BYTES: usize = 256 * 1024;
/// Batches that may wait for the consumer.
const BATCHES_IN_FLIGHT: usize = 2;

/// A run of split lines: their text, and per line its kind and fields.
/// Batches go back to the splitter to be refilled, so in the steady state
/// nothing is allocated.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    lines: Vec<BatchLine>,
    fields: Vec<LineFields>,
    io_error: Option<io::Error>,
}

struct BatchLine {
    line_no: u64,
    start: usize,
    end: usize,
    index: usize,
    kind: Result<LineKind, LineError>,
}

/// The splitting thread: reads lines, splits them into batches, and sends
/// the batches on; stops at the end, at a bad line, or when the consumer
/// is gone.
fn split_batches<R: Read>(input: R, full: mpsc::SyncSender<Batch>, empty: mpsc::Receiver<Batch>) {
    let mut lines = LineSource::new(input);
    loop {
        let mut batch = empty.try_recv().unwrap_or_default();
        batch.text.clear();
        batch.lines.clear();
        let mut stop = false;
        while batch.text.len() < BATCH_BYTES {
            let (line_no, line) = match lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => {
                    stop = true;
                    break;
                }
                Err(e) => {
                    batch.io_error = Some(e);
                    stop = true;
                    break;
                }
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let start = batch.text.len();
            batch.text.extend_from_slice(line);
            let index = batch.lines.len();
            if batch.fields.len() <= index {
                batch.fields.push(LineFields::default());
            }
            let kind = split_line(line, &mut batch.fields[index]);
            let bad = kind.is_err();
            batch.lines.push(BatchLine { line_no, start, end: batch.text.len(), index, kind });
            if bad {
                stop = true;
                break;
            }
        }
        if full.send(batch).is_err() || stop {
            return;
        }
    }
}

/// What kind of record a line holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LineKind {
    Node,
    Ctx,
    Globals,
}

/// Splits a non-empty line into its kind and fields. Needs no database,
/// so it can run ahead of the rest of the reading on another thread.
fn split_line(line: &[u8], fields: &mut LineFields) -> Result<LineKind, LineError> {
    const PREFIX: &[u8] = b"__rec=";
    if !line.starts_with(PREFIX) {
        return Err((0, ReadErrorKind::NotARecord));
    }
    let rest = &line[PREFIX.len()..];
    let kind_len = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
    let kind = match &rest[..kind_len] {
        b"ctx" => LineKind::Ctx,
        b"node" => LineKind::Node,
        b"globals" => LineKind::Globals,
        other => {
            return Err((PREFIX.len(), ReadErrorKind::UnknownRecordKind(String::from_utf8_lossy(other).into_owned())));
        }
    };
    fields.clear();
    parse_fields(line, PREFIX.len() + kind_len, fields)?;
    Ok(kind)
}

/// The one value of an id field, if the field is present.
fn single(list: &IdList, present: bool, name: &'static str) -> Result<Option<(u64, usize)>, LineError> {
    match list.as_slice() {
        [] if !present => Ok(None),
        [one] => Ok(Some(*one)),
        [_, second, ..] => Err((second.1, ReadErrorKind::ExpectedOneValue(name))),
        [] => unreachable!("a present id field has at least one id"),
    }
}

/// Splits the fields after the record kind (`pos` is at the `,` after it,
/// or the end of the line).
fn parse_fields(line: &[u8], mut pos: usize, f: &mut LineFields) -> Result<(), LineError> {
    while pos < line.len() {
        // line[pos] is the ',' before a field.
        let key_start = pos + 1;
        let mut key_end = key_start;
        while key_end < line.len() && !matches!(line[key_end], b'=' | b',') {
            key_end += 1;
        }
        let key = &line[key_start..key_end];
        if key_end == line.len() || line[key_end] == b',' {
            return Err((key_start, ReadErrorKind::MissingValue(String::from_utf8_lossy(key).into_owned())));
        }
        let (flag, list) = match key {
            b"ref" => (SEEN_REF, Some(&mut f.refs)),
            b"attr" => (SEEN_ATTR, Some(&mut f.attrs)),
            b"id" => (SEEN_ID, Some(&mut f.ids)),
            b"parent" => (SEEN_PARENT, Some(&mut f.parents)),
            b"data" => (SEEN_DATA, None),
            _ => {
                return Err((key_start, ReadErrorKind::UnknownField(String::from_utf8_lossy(key).into_owned())));
            }
        };
        if f.seen & flag != 0 {
            return Err((key_start, ReadErrorKind::DuplicateField(String::from_utf8_lossy(key).into_owned())));
        }
        f.seen |= flag;
        pos = key_end;
        match list {
            Some(list) => {
                // Each iteration starts at the '=' before an id.
                loop {
                    let (id, next) = parse_id(line, pos + 1)?;
                    list.push((id, pos + 1));
                    pos = next;
                    if pos >= line.len() || line[pos] == b',' {
                        break;
                    }
                }
            }
            None => {
                f.data_column = pos + 1;
                loop {
                    let (raw, next) = scan_value(line, pos + 1)?;
                    f.data.push(raw);
                    pos = next;
                    if pos >= line.len() || line[pos] == b',' {
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Parses a decimal id starting at `start`; returns it and the position of
/// the `,`, `=` or end of line after it.
#[inline]
fn parse_id(line: &[u8], start: usize) -> Result<(u64, usize), LineError> {
    let mut pos = start;
    let mut value: u64 = 0;
    let mut overflow = false;
    while let Some(&b) = line.get(pos) {
        match b {
            b'0'..=b'9' => {
                let (v, o1) = value.overflowing_mul(10);
                let (v, o2) = v.overflowing_add(u64::from(b - b'0'));
                overflow |= o1 | o2;
                value = v;
            }
            b',' | b'=' => break,
            _ => {
                // Take the whole malformed id for the message.
                while pos < line.len() && !matches!(line[pos], b',' | b'=') {
                    pos += 1;
                }
                return Err((start, bad_id(&line[start..pos])));
            }
        }
        pos += 1;
    }
    if pos == start || overflow {
        return Err((start, bad_id(&line[start..pos])));
    }
    Ok((value, pos))
}

fn bad_id(text: &[u8]) -> ReadErrorKind {
    ReadErrorKind::BadId(String::from_utf8_lossy(text).into_owned())
}

/// Finds the end of a value starting at `start`: the first `,` or `=` not
/// escaped, or the end of the line. Rejects raw control characters.
#[inline]
fn scan_value(line: &[u8], start: usize) -> Result<(RawValue, usize), LineError> {
    let mut pos = start;
    let mut escaped = false;
    loop {
        // Skip ordinary bytes quickly; stop at anything that needs a look.
        while pos < line.len() && !VALUE_STOP[usize::from(line[pos])] {
            pos += 1;
        }
        let Some(&b) = line.get(pos) else { break };
        match b {
            b',' | b'=' => break,
            b'\\' => {
                escaped = true;
                if pos + 1 == line.len() {
                    return Err((pos, ReadErrorKind::BadEscape(super::escape::EscapeError::Incomplete)));
                }
                pos += 2;
            }
            _ => return Err((pos, ReadErrorKind::ControlCharacter(b))),
        }
    }
    Ok((RawValue { start, end: pos, escaped }, pos))
}

/// Bytes that end an unescaped run inside a value: the separators, the
/// escape character and the control characters other than tab.
static VALUE_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b != b'\t' as usize;
        b += 1;
    }
    table[b',' as usize] = true;
    table[b'=' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// The unescaped UTF-8 text of a value.
fn value_text<'a>(line: &'a [u8], raw: RawValue, scratch: &'a mut Vec<u8>) -> Result<&'a str, LineError> {
    let bytes = &line[raw.start..raw.end];
    let text = if raw.escaped {
        scratch.clear();
        unescape_into(bytes, scratch).map_err(|(off, e)| (raw.start + off, ReadErrorKind::BadEscape(e)))?;
        scratch.as_slice()
    } else {
        bytes
    };
    std::str::from_utf8(text)
        .map_err(|e| (raw.start + if raw.escaped { 0 } else { e.valid_up_to() }, ReadErrorKind::InvalidUtf8))
}

/// Parses a value of type `ty`, with fast paths for the numbers that make up
/// most of a trace.
#[inline]
fn parse_value(line: &[u8], raw: RawValue, ty: AttrType, scratch: &mut Vec<u8>) -> Result<Variant, LineError> {
    if !raw.escaped && ty == AttrType::Uint {
        let bytes = &line[raw.start..raw.end];
        if !bytes.is_empty() && bytes.len() <= 19 && bytes.iter().all(u8::is_ascii_digit) {
            let v = bytes.iter().fold(0u64, |acc, &b| acc * 10 + u64::from(b - b'0'));
            return Ok(Variant::Uint(v));
        }
    }
    let text = value_text(line, raw, scratch)?;
    Variant::parse(ty, text).map_err(|e| (raw.start, ReadErrorKind::Import(ImportError::BadValue(e))))
}

/// Reads a `.cali` file (or standard input for `-` or an empty name) into
/// `db`, handing each snapshot and globals record to `sink`.
pub fn read_path(
    db: &mut MetadataDb,
    path: &Path,
    sink: impl FnMut(&mut MetadataDb, &Record),
) -> Result<ReadSummary, ReadError> {
    let (name, input) = open_input(path)?;
    CaliReader::new(db, name).read(input, sink)
}

/// Opens a file for reading, or standard input for `-` or an empty path;
/// returns the name to use in messages and the input.
pub fn open_input(path: &Path) -> Result<(String, Box<dyn Read + Send>), ReadError> {
    if path.as_os_str().is_empty() || path.as_os_str() == "-" {
        return Ok(("<stdin>".to_string(), Box::new(io::stdin())));
    }
    let name = path.display().to_string();
    match File::open(path) {
        Ok(f) => Ok((name, Box::new(f))),
        Err(e) => Err(ReadError {
            kind: ReadErrorKind::Io(e.kind(), format!("cannot open file: {e}")),
            source: name,
            line: 0,
            column: 0,
        }),
    }
}

/// Reads a whole stream from memory into `db` and returns its snapshot and
/// globals records in order; for tests and small tools (it keeps every
/// record, so it is not for long traces).
pub fn read_records(db: &mut MetadataDb, source: &str, data: &[u8]) -> Result<Vec<Record>, ReadError> {
    let mut records = Vec::new();
    CaliReader::new(db, source).read(data, |_, rec| records.push(rec.clone()))?;
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::properties::Properties;

    /// The hook sees every node record in order, and nodes it creates take
    /// the ids that come next, before the stream's later nodes.
    #[test]
    fn node_hook_runs_as_each_node_is_read() {
        let stream = "__rec=node,id=20,attr=10,data=276,parent=3\n\
                      __rec=node,id=21,attr=8,data=region,parent=20\n\
                      __rec=node,id=22,attr=21,data=main\n\
                      __rec=ctx,ref=22\n";
        let mut db = MetadataDb::new();
        let first = db.id_bound();
        let mut seen = Vec::new();
        let mut reader = CaliReader::new(&mut db, "s").on_node(|db, id| {
            seen.push(id);
            db.create_attribute("hooked", AttrType::Uint, Properties::SKIP_EVENTS, &[]);
        });
        reader.read(stream.as_bytes(), |_, _| {}).unwrap();
        drop(reader);
        // prop node, then "hooked" (its prop node and itself), then region...
        assert_eq!(seen, vec![first, first + 3, first + 4]);
        assert_eq!(db.attribute_by_name("hooked").unwrap().id(), first + 2);
        assert_eq!(db.attribute_by_name("region").unwrap().id(), first + 3);
    }
}
