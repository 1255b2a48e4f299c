//! The simplified model's control file: `key = value` lines.
//!
//! ```text
//! # the application, the output, the collector
//! application = "a.out"
//! arguments = "-6 big.txt"
//! collector = "fcount"
//! output = "counts.cali"
//! ```
//!
//! Values are double-quoted strings (with `\"` and `\\` escapes) or bare
//! words; `#` starts a comment. Keys: `application`, `arguments` (split
//! at spaces, quotes group), `collector`, `output`, `pbo_out` (the
//! flow-data file), `include`, `exclude` (comma-separated patterns),
//! `start`, `duration` (seconds), `follow` (`fork`, `exec`, both
//! comma-separated, or `none`), `sample_event` (the event `sample`
//! samples on).

use std::fmt;

/// A control file, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Control {
    pub application: Option<String>,
    pub arguments: Vec<String>,
    pub collector: Option<String>,
    pub output: Option<String>,
    pub pbo_out: Option<String>,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub start: Option<f64>,
    pub duration: Option<f64>,
    pub follow: Option<String>,
    pub sample_event: Option<String>,
}

/// A control file error, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
    }
}

impl std::error::Error for ControlError {}

/// Parses control file `text`, named `file` in errors.
pub fn parse(file: &str, text: &str) -> Result<Control, ControlError> {
    let mut control = Control::default();
    for (n, line) in text.lines().enumerate() {
        let error =
            |column: usize, message: String| ControlError { file: file.to_string(), line: n + 1, column, message };
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let key_col = line.len() - trimmed.len() + 1;
        let Some(eq) = line.find('=') else { return Err(error(key_col, "expected `key = value`".into())) };
        let key = line[..eq].trim();
        let (value, offset) = value(&line[eq + 1..]).map_err(|(at, m)| error(eq + 2 + at, m))?;
        let value_col = eq + 2 + offset;
        let seconds = |v: &str| match v.parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
            _ => Err(error(value_col, format!("`{v}` is not a number of seconds"))),
        };
        match key {
            "application" => control.application = Some(value),
            "arguments" => control.arguments = split_words(&value),
            "collector" => control.collector = Some(value),
            "output" => control.output = Some(value),
            "pbo_out" => control.pbo_out = Some(value),
            "include" => control.include.extend(list(&value)),
            "exclude" => control.exclude.extend(list(&value)),
            "start" => control.start = Some(seconds(&value)?),
            "duration" => control.duration = Some(seconds(&value)?),
            "follow" => control.follow = Some(value),
            "sample_event" => control.sample_event = Some(value),
            _ => return Err(error(key_col, format!("unknown key `{key}`"))),
        }
    }
    Ok(control)
}

/// The value after `=`: a quoted string or a bare word, then only a
/// comment; with its byte offset in `rest`. Errors carry the byte offset
/// in `rest`.
fn value(rest: &str) -> Result<(String, usize), (usize, String)> {
    let start = rest.len() - rest.trim_start().len();
    let body = &rest[start..];
    let (text, used) = if let Some(quoted) = body.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    end = Some(i + 2);
                    break;
                }
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\\'))) => out.push(e),
                    Some((j, e)) => return Err((start + 1 + j, format!("unknown escape `\\{e}`"))),
                    None => break,
                },
                c => out.push(c),
            }
        }
        let Some(end) = end else { return Err((start, "unterminated string".into())) };
        (out, end)
    } else {
        let end = body.find('#').unwrap_or(body.len());
        (body[..end].trim_end().to_string(), end)
    };
    let after = body[used..].trim_start();
    if !after.is_empty() && !after.starts_with('#') {
        return Err((rest.len() - after.len(), format!("unexpected `{after}` after the value")));
    }
    if text.is_empty() {
        return Err((start, "empty value".into()));
    }
    Ok((text, start))
}

fn list(value: &str) -> impl Iterator<Item = String> + '_ {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from)
}

/// Splits an argument string at spaces; single quotes group words.
fn split_words(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in value.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_simplified_model() {
        let text = "# the application, the output, the collector\napplication = \"a.out\"\npbo_out = \"flow.dat\"\ncollector = \"arc_count\"\narguments = \"-v 'two words' x\"\ninclude = libm*, main # comment\nduration = 2.5\n";
        let c = parse("ctl", text).unwrap();
        assert_eq!(c.application.as_deref(), Some("a.out"));
        assert_eq!(c.pbo_out.as_deref(), Some("flow.dat"));
        assert_eq!(c.collector.as_deref(), Some("arc_count"));
        assert_eq!(c.arguments, ["-v", "two words", "x"]);
        assert_eq!(c.include, ["libm*", "main"]);
        assert_eq!(c.duration, Some(2.5));
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse("f.ctl", "application = \"a\"\n  colector = x\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
        assert_eq!(e.to_string(), "f.ctl:2:3: unknown key `colector`");
        let e = parse("f", "output = \"abc").unwrap_err();
        assert_eq!((e.line, e.column, e.message.as_str()), (1, 10, "unterminated string"));
        let e = parse("f", "duration = soon").unwrap_err();
        assert_eq!(e.column, 12);
        let e = parse("f", "output = \"a\" b").unwrap_err();
        assert_eq!(e.column, 14);
        assert!(parse("f", "just words").is_err());
        assert!(parse("f", "output =").is_err());
        assert!(parse("f", "output = \"\\q\"").is_err());
    }
}
