//! Splitting an input into lines with a fixed buffer.

use std::io::{self, Read};

const INITIAL_CAPACITY: usize = 256 * 1024;

/// Yields the lines of an input one at a time from one reusable buffer, so
/// memory stays bounded by the longest line whatever the input's length.
pub struct LineSource<R> {
    input: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    /// Bytes from `start` up to here are known to hold no `\n`.
    scanned: usize,
}

impl<R: Read> LineSource<R> {
    /// Lines of `input`.
    pub fn new(input: R) -> LineSource<R> {
        LineSource { input, buf: vec![0; INITIAL_CAPACITY], start: 0, end: 0, eof: false, line_no: 0, scanned: 0 }
    }

    /// The next line without its `\n`, with its 1-based number; `None` at
    /// the end. A last line without `\n` is returned as well.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, &[u8])>> {
        loop {
            let from = self.start.max(self.scanned);
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let line_start = self.start;
                let line_end = from + pos;
                self.start = line_end + 1;
                self.scanned = self.start;
                self.line_no += 1;
                return Ok(Some((self.line_no, &self.buf[line_start..line_end])));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let line_start = self.start;
                self.start = self.end;
                self.line_no += 1;
                return Ok(Some((self.line_no, &self.buf[line_start..self.end])));
            }
            self.fill()?;
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(data: &[u8]) -> Vec<(u64, Vec<u8>)> {
        // A reader that hands out 3 bytes at a time exercises refills.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(out.len()).min(3);
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut src = LineSource::new(Trickle(data));
        let mut out = Vec::new();
        while let Some((n, line)) = src.next_line().unwrap() {
            out.push((n, line.to_vec()));
        }
        out
    }

    #[test]
    fn splits_lines() {
        assert_eq!(
            lines_of(b"a\nbb\n\nccc"),
            vec![(1, b"a".to_vec()), (2, b"bb".to_vec()), (3, b"".to_vec()), (4, b"ccc".to_vec())]
        );
        assert!(lines_of(b"").is_empty());
        assert_eq!(lines_of(b"x\n"), vec![(1, b"x".to_vec())]);
    }

    #[test]
    fn long_lines_grow_the_buffer() {
        let long = vec![b'z'; INITIAL_CAPACITY * 3 + 17];
        let mut data = long.clone();
        data.extend_from_slice(b"\nend\n");
        let lines = lines_of(&data);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].1, long);
        assert_eq!(lines[1].1, b"end");
    }
}
