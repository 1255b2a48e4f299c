//! A tolerant reader for the JSON dialect of config specs.
//!
//! Config and option specs (built in or loaded with `load(file.json)`) are
//! JSON as people write it by hand: besides strict JSON, words need no
//! quotes (`true`, `200`, `sec`), keys may be bare, and a trailing comma
//! before `}` or `]` is fine. Every scalar is kept as text; the spec reader
//! decides what it means.

use std::fmt;

/// A JSON value; scalars are their text.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `{ "key": value, ... }`, in input order.
    Object(Vec<(String, Json)>),
    /// `[ value, ... ]`.
    Array(Vec<Json>),
    /// A string, number, `true`/`false` or other bare word, as text.
    Text(String),
}

impl Json {
    /// The value of `key` in an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a scalar.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Json::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// Malformed JSON, with the place it was found (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// Line of the error.
    pub line: usize,
    /// Column of the error (in characters).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for JsonError {}

/// Parses one JSON value (with nothing but whitespace after it).
pub fn parse(text: &str) -> Result<Json, JsonError> {
    let mut p = Parser { chars: text.chars().collect(), pos: 0 };
    let value = p.value()?;
    p.skip_ws();
    match p.peek() {
        None => Ok(value),
        Some(c) => Err(p.error(format!("unexpected '{c}' after the value"))),
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

/// Characters that end a bare word.
fn ends_word(c: char) -> bool {
    c.is_whitespace() || matches!(c, '{' | '}' | '[' | ']' | ',' | ':' | '"')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn error(&self, message: String) -> JsonError {
        let before = &self.chars[..self.pos.min(self.chars.len())];
        let line = before.iter().filter(|&&c| c == '\n').count() + 1;
        let column = before.iter().rev().take_while(|&&c| c != '\n').count() + 1;
        JsonError { line, column, message }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Json, JsonError> {
        self.skip_ws();
        match self.peek() {
            None => Err(self.error("expected a value, found the end of the input".into())),
            Some('{') => self.object(),
            Some('[') => self.array(),
            Some('"') => self.string().map(Json::Text),
            Some(c) if ends_word(c) => Err(self.error(format!("expected a value, found '{c}'"))),
            Some(_) => Ok(Json::Text(self.word())),
        }
    }

    fn word(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(|c| !ends_word(c)) {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1; // the opening quote
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("unterminated string".into()));
            };
            self.pos += 1;
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.error("unterminated string".into()));
                    };
                    self.pos += 1;
                    out.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'u' => self.unicode_escape()?,
                        other => other,
                    });
                }
                c => out.push(c),
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let digits: String = self.chars.iter().skip(self.pos).take(4).collect();
        let code = u32::from_str_radix(&digits, 16)
            .ok()
            .filter(|_| digits.len() == 4)
            .ok_or_else(|| self.error(format!("bad unicode escape \"\\u{digits}\"")))?;
        self.pos += 4;
        Ok(char::from_u32(code).unwrap_or('\u{fffd}'))
    }

    /// Runs `item` for each comma-separated element up to `close`,
    /// allowing a trailing comma.
    fn elements(
        &mut self,
        close: char,
        mut item: impl FnMut(&mut Parser) -> Result<(), JsonError>,
    ) -> Result<(), JsonError> {
        self.pos += 1; // the opening bracket
        loop {
            self.skip_ws();
            match self.peek() {
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                None => return Err(self.error(format!("expected '{close}', found the end of the input"))),
                _ => item(self)?,
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(c) if c == close => {}
                Some(c) => return Err(self.error(format!("expected ',' or '{close}', found '{c}'"))),
                None => return Err(self.error(format!("expected '{close}', found the end of the input"))),
            }
        }
    }

    fn object(&mut self) -> Result<Json, JsonError> {
        let mut members = Vec::new();
        self.elements('}', |p| {
            let key = match p.peek() {
                Some('"') => p.string()?,
                Some(c) if ends_word(c) => return Err(p.error(format!("expected a key, found '{c}'"))),
                _ => p.word(),
            };
            p.skip_ws();
            if p.peek() != Some(':') {
                return Err(p.error(format!("expected ':' after key \"{key}\"")));
            }
            p.pos += 1;
            let value = p.value()?;
            members.push((key, value));
            Ok(())
        })?;
        Ok(Json::Object(members))
    }

    fn array(&mut self) -> Result<Json, JsonError> {
        let mut items = Vec::new();
        self.elements(']', |p| {
            items.push(p.value()?);
            Ok(())
        })?;
        Ok(Json::Array(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Json {
        Json::Text(s.to_string())
    }

    #[test]
    fn strict_json() {
        let v = parse(r#"{ "name": "x", "list": [ "a", 1, true ], "o": { "k": "v\"\n" } }"#).unwrap();
        assert_eq!(v.get("name"), Some(&text("x")));
        assert_eq!(v.get("list"), Some(&Json::Array(vec![text("a"), text("1"), text("true")])));
        assert_eq!(v.get("o").and_then(|o| o.get("k")), Some(&text("v\"\n")));
    }

    #[test]
    fn lenient_forms() {
        let v = parse("{ name: runtime-report, defaults: { order_as_visited: true, }, list: [a,b,], }").unwrap();
        assert_eq!(v.get("name"), Some(&text("runtime-report")));
        assert_eq!(v.get("defaults").and_then(|d| d.get("order_as_visited")), Some(&text("true")));
        assert_eq!(v.get("list"), Some(&Json::Array(vec![text("a"), text("b")])));
        assert_eq!(parse("[]").unwrap(), Json::Array(vec![]));
        assert_eq!(parse("\"\\u00e9\"").unwrap(), text("é"));
    }

    #[test]
    fn errors_name_the_place() {
        let e = parse("{\n  \"name\" \"x\"\n}").unwrap_err();
        assert_eq!((e.line, e.column), (2, 10));
        assert!(e.message.contains("expected ':'"), "{e}");
        let e = parse("[ \"a\", ").unwrap_err();
        assert!(e.message.contains("end of the input"), "{e}");
        assert!(parse("{ \"a\": \"unterminated }").is_err());
        assert!(parse("{} x").is_err());
        assert!(parse("").is_err());
        assert!(parse("{ : 1 }").is_err());
    }
}
