//! The `.cali` writer.
//!
//! Layout rules (the reference's, so that its tools read our files and our
//! files of its records are byte-identical to its own): a node is written
//! once per stream, right before the first record that needs it, after its
//! attribute node and after its parent chain; bootstrap nodes (ids below
//! 11) are never written. A record needs, entry by entry, the node of each
//! reference entry and the attribute node of each immediate entry.

use super::escape::escape_into;
use crate::node::{FIRST_WRITTEN_ID, Id, NodeRef, NodeStore};
use crate::record::{Record, RecordKind};
use crate::variant::{Variant, write_decimal_u64};
use std::collections::HashSet;
use std::io::{self, Write};

/// Remembers which nodes a stream already holds: a bit per id for the
/// dense ids real streams use, a set for the rest.
#[derive(Default)]
struct WrittenSet {
    bits: Vec<u64>,
    sparse: HashSet<Id>,
}

/// Ids below this bound are tracked in the bit set (128 KiB of bits).
const DENSE_BOUND: Id = 1 << 20;

impl WrittenSet {
    #[inline]
    fn contains(&self, id: Id) -> bool {
        if id < DENSE_BOUND {
            let word = (id / 64) as usize;
            self.bits.get(word).is_some_and(|w| w & (1 << (id % 64)) != 0)
        } else {
            self.sparse.contains(&id)
        }
    }

    fn insert(&mut self, id: Id) {
        if id < DENSE_BOUND {
            let word = (id / 64) as usize;
            if word >= self.bits.len() {
                self.bits.resize(word + 1, 0);
            }
            self.bits[word] |= 1 << (id % 64);
        } else {
            self.sparse.insert(id);
        }
    }
}

/// Writes records as a `.cali` stream.
pub struct CaliWriter<W: Write> {
    /// The output, taken by [`CaliWriter::finish`].
    out: Option<W>,
    /// The lines not yet written out, each made here in place (made apart
    /// and copied into a `BufWriter`, each line cost a call of `memmove`).
    buffer: Vec<u8>,
    written: WrittenSet,
    stack: Vec<(Id, Stage)>,
    lines: u64,
}

/// The bytes of lines the writer keeps before it writes them out.
const BUFFERED: usize = 64 * 1024;

/// How far writing a node has got (see [`CaliWriter::write_node`]).
#[derive(Copy, Clone)]
enum Stage {
    Start,
    AttributeDone,
    ParentDone,
}

fn unknown_node(id: Id) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("record refers to unknown node {id}"))
}

impl<W: Write> CaliWriter<W> {
    /// A writer onto `out` (buffered internally).
    pub fn new(out: W) -> CaliWriter<W> {
        CaliWriter {
            out: Some(out),
            buffer: Vec::with_capacity(BUFFERED + 4096),
            written: WrittenSet::default(),
            stack: Vec::new(),
            lines: 0,
        }
    }

    /// The number of lines written so far (node and record lines).
    pub fn lines_written(&self) -> u64 {
        self.lines
    }

    /// Writes a snapshot or globals record, preceded by the nodes it needs
    /// that the stream does not have yet. Empty records are not written:
    /// they carry nothing, and the reference's reader rejects a bare
    /// `__rec=ctx` line.
    pub fn write_record(&mut self, store: &impl NodeStore, record: &Record) -> io::Result<()> {
        if record.is_empty() {
            return Ok(());
        }
        for entry in &record.entries {
            self.write_node(store, entry.node())?;
        }
        let values = record.immediates().map(|(_, value)| value);
        self.record_line(record.kind.tag(), record.refs(), record.immediates().map(|(attr, _)| attr), values)
    }

    /// Writes the snapshot record of the references `refs` and the
    /// immediate entries `values` (attribute, value), as
    /// [`CaliWriter::write_record`] writes a record of those entries, the
    /// references first, without a [`Record`] made of them (a compiler's
    /// tens of thousands of call arcs).
    pub fn write_ctx(&mut self, store: &impl NodeStore, refs: &[Id], values: &[(Id, Variant)]) -> io::Result<()> {
        if refs.is_empty() && values.is_empty() {
            return Ok(());
        }
        for &id in refs.iter().chain(values.iter().map(|(attr, _)| attr)) {
            self.write_node(store, id)?;
        }
        let attrs = values.iter().map(|&(attr, _)| attr);
        self.record_line(RecordKind::Ctx.tag(), refs.iter().copied(), attrs, values.iter().map(|(_, value)| value))
    }

    /// Writes a record's line: `tag`, then the references, the immediates'
    /// attributes and their values, each list `=`-separated.
    fn record_line<'v>(
        &mut self,
        tag: &str,
        refs: impl Iterator<Item = Id>,
        attrs: impl Iterator<Item = Id>,
        values: impl Iterator<Item = &'v Variant>,
    ) -> io::Result<()> {
        let line = &mut self.buffer;
        line.extend_from_slice(b"__rec=");
        line.extend_from_slice(tag.as_bytes());
        for (n, id) in refs.enumerate() {
            line.extend_from_slice(if n == 0 { b",ref=".as_slice() } else { b"=" });
            write_decimal_u64(id, line);
        }
        for (n, attr) in attrs.enumerate() {
            line.extend_from_slice(if n == 0 { b",attr=".as_slice() } else { b"=" });
            write_decimal_u64(attr, line);
        }
        for (n, value) in values.enumerate() {
            line.extend_from_slice(if n == 0 { b",data=".as_slice() } else { b"=" });
            write_value(value, line);
        }
        self.emit_line()
    }

    /// Writes node `id` unless the stream has it: first its attribute node,
    /// then its parent chain (root first), then the node itself. Iterative,
    /// so deep trees cannot overflow the stack.
    #[inline]
    pub fn write_node(&mut self, store: &impl NodeStore, id: Id) -> io::Result<()> {
        // Most nodes a record needs are in the stream already: that test
        // inlined, the walk not.
        if id < FIRST_WRITTEN_ID || self.written.contains(id) {
            return Ok(());
        }
        self.write_node_and_chain(store, id)
    }

    fn write_node_and_chain(&mut self, store: &impl NodeStore, id: Id) -> io::Result<()> {
        self.stack.clear();
        self.stack.push((id, Stage::Start));
        while let Some((id, stage)) = self.stack.pop() {
            if id < FIRST_WRITTEN_ID || self.written.contains(id) {
                continue;
            }
            let node = store.node(id).ok_or_else(|| unknown_node(id))?;
            match stage {
                Stage::Start => {
                    self.stack.push((id, Stage::AttributeDone));
                    if node.attribute != id {
                        self.stack.push((node.attribute, Stage::Start));
                    }
                }
                Stage::AttributeDone => {
                    self.stack.push((id, Stage::ParentDone));
                    if let Some(parent) = node.parent.filter(|&p| p != id) {
                        self.stack.push((parent, Stage::Start));
                    }
                }
                Stage::ParentDone => {
                    self.written.insert(id);
                    self.emit_node(id, node)?;
                }
            }
        }
        Ok(())
    }

    /// Writes node `id`, which `store` does not hold: a node the caller
    /// makes itself, with an id past the store's that no other node of the
    /// stream takes. Its attribute and parent (the store's, or the caller's
    /// own written before) are written first if the stream lacks them.
    pub fn write_own_node(&mut self, store: &impl NodeStore, id: Id, node: NodeRef<'_>) -> io::Result<()> {
        self.write_own(store, id, node.attribute, node.parent, |line| write_value(node.value, line))
    }

    /// [`Self::write_own_node`] for a node whose value is the string `text`,
    /// without making a [`Variant`] of it (a copy of the text each: tens of
    /// thousands for a compiler's call arcs).
    pub fn write_own_text_node(
        &mut self,
        store: &impl NodeStore,
        id: Id,
        attribute: Id,
        text: &str,
        parent: Option<Id>,
    ) -> io::Result<()> {
        self.write_own(store, id, attribute, parent, |line| escape_into(text, line))
    }

    fn write_own(
        &mut self,
        store: &impl NodeStore,
        id: Id,
        attribute: Id,
        parent: Option<Id>,
        value: impl FnOnce(&mut Vec<u8>),
    ) -> io::Result<()> {
        self.write_node(store, attribute)?;
        if let Some(parent) = parent {
            self.write_node(store, parent)?;
        }
        self.written.insert(id);
        self.emit_node_with(id, attribute, parent, value)
    }

    fn emit_node(&mut self, id: Id, node: NodeRef<'_>) -> io::Result<()> {
        self.emit_node_with(id, node.attribute, node.parent, |line| write_value(node.value, line))
    }

    fn emit_node_with(
        &mut self,
        id: Id,
        attribute: Id,
        parent: Option<Id>,
        value: impl FnOnce(&mut Vec<u8>),
    ) -> io::Result<()> {
        let line = &mut self.buffer;
        line.extend_from_slice(b"__rec=node,id=");
        write_decimal_u64(id, line);
        line.extend_from_slice(b",attr=");
        write_decimal_u64(attribute, line);
        line.extend_from_slice(b",data=");
        value(line);
        if let Some(parent) = parent {
            line.extend_from_slice(b",parent=");
            write_decimal_u64(parent, line);
        }
        self.emit_line()
    }

    /// Ends the line made in the buffer, and writes the buffer out once
    /// it holds enough.
    fn emit_line(&mut self) -> io::Result<()> {
        self.buffer.push(b'\n');
        self.lines += 1;
        if self.buffer.len() >= BUFFERED { self.write_out() } else { Ok(()) }
    }

    /// Writes the buffered lines out.
    fn write_out(&mut self) -> io::Result<()> {
        let result = match &mut self.out {
            Some(out) => out.write_all(&self.buffer),
            None => Ok(()),
        };
        self.buffer.clear();
        result
    }

    /// Writes out the buffered lines and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.write_out()?;
        Ok(self.out.take().expect("the output, until finish"))
    }

    /// Writes out the buffered lines and flushes the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_out()?;
        self.out.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// A writer dropped unfinished writes out its lines, as a `BufWriter`
/// would (an error then has nobody to go to).
impl<W: Write> Drop for CaliWriter<W> {
    fn drop(&mut self) {
        let _ = self.write_out();
    }
}

fn write_value(value: &Variant, line: &mut Vec<u8>) {
    match value {
        Variant::Str(s) => escape_into(s, line),
        other => other.write_cali_text(line),
    }
}
