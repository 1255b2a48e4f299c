//! Escaping of text values in `.cali` lines.
//!
//! The reference escapes `\`, `,` and `=` with a backslash, writes a newline
//! as `\n` and drops every other control character (and, by accident, every
//! non-ASCII byte). We keep everything: UTF-8 is written as is, and the
//! other control characters get escapes the reference never writes (`\t`,
//! `\r`, `\xHH`), so files from the reference read exactly as before, and
//! the reference's readers still parse our lines (reading `\t` as `t`).

use std::fmt;

/// A malformed escape sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EscapeError {
    /// A backslash at the very end of the line.
    Incomplete,
    /// A backslash followed by a character that is not an escape.
    Unknown(char),
    /// `\x` not followed by two hex digits of an ASCII code.
    BadHex,
}

impl fmt::Display for EscapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EscapeError::Incomplete => write!(f, "incomplete escape sequence at end of line"),
            EscapeError::Unknown(c) => {
                write!(f, "unknown escape sequence \"\\{}\"", c.escape_default())
            }
            EscapeError::BadHex => write!(f, "bad \\x escape: expected two hex digits below 80"),
        }
    }
}

/// Appends `text` to `out`, escaped for a `.cali` value.
pub fn escape_into(text: &str, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    if !bytes.iter().any(|&b| needs_escape(b)) {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        match b {
            b'\\' | b',' | b'=' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
            }
            _ => out.push(b),
        }
    }
}

/// Whether byte `b` needs an escape, from a table: one load a byte where
/// four compares were (names make most of a `.cali` file's text).
#[inline]
fn needs_escape(b: u8) -> bool {
    const NEEDS: [bool; 256] = {
        let mut needs = [false; 256];
        let mut b = 0;
        while b < 256 {
            needs[b] = b < 0x20 || b == b'\\' as usize || b == b',' as usize || b == b'=' as usize;
            b += 1;
        }
        needs
    };
    NEEDS[usize::from(b)]
}

/// Appends the unescaped form of `raw` (a value as it appears in a line,
/// with its escapes) to `out`. On error returns the offset of the
/// offending backslash in `raw`.
pub fn unescape_into(raw: &[u8], out: &mut Vec<u8>) -> Result<(), (usize, EscapeError)> {
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let Some(&next) = raw.get(i + 1) else {
            return Err((i, EscapeError::Incomplete));
        };
        match next {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'x' => {
                let code = raw
                    .get(i + 2..i + 4)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .filter(|c| c.is_ascii())
                    .ok_or((i, EscapeError::BadHex))?;
                out.push(code);
                i += 2;
            }
            b'\\' | b',' | b'=' => out.push(next),
            _ => {
                let c = std::str::from_utf8(&raw[i + 1..])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                return Err((i, EscapeError::Unknown(c)));
            }
        }
        i += 2;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut out = Vec::new();
        escape_into(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn unesc(s: &str) -> Result<String, (usize, EscapeError)> {
        let mut out = Vec::new();
        unescape_into(s.as_bytes(), &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn reference_escapes() {
        assert_eq!(esc("a=b,c\\d"), "a\\=b\\,c\\\\d");
        assert_eq!(esc("two\nlines"), "two\\nlines");
        assert_eq!(unesc("a\\=b\\,c\\\\d").unwrap(), "a=b,c\\d");
        assert_eq!(unesc("two\\nlines").unwrap(), "two\nlines");
    }

    #[test]
    fn utf8_and_control_characters_survive() {
        for s in ["région_ü→µ", "tab\tand\rcr", "nul\0bell\x07", "esc\x1b[0m", "\u{7f}del", ""] {
            let e = esc(s);
            assert!(!e.bytes().any(|b| b < 0x20), "no raw control bytes in {e:?}");
            assert_eq!(unesc(&e).unwrap(), s);
        }
        assert_eq!(esc("\x01"), "\\x01");
    }

    #[test]
    fn malformed_escapes() {
        assert_eq!(unesc("abc\\"), Err((3, EscapeError::Incomplete)));
        assert_eq!(unesc("a\\qb"), Err((1, EscapeError::Unknown('q'))));
        assert_eq!(unesc("\\x4"), Err((0, EscapeError::BadHex)));
        assert_eq!(unesc("\\xzz"), Err((0, EscapeError::BadHex)));
        assert_eq!(unesc("\\xc3"), Err((0, EscapeError::BadHex)));
        assert_eq!(unesc("\\é"), Err((0, EscapeError::Unknown('é'))));
    }
}
