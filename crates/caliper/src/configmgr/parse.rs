//! The config-string grammar:
//!
//! ```text
//! config_string := [ item { "," item } ]
//! item          := "load" "(" path { "," path } ")"
//!                | CONFIG_NAME [ "(" [ arg { "," arg } ] ")" ]
//!                | KEY [ "=" VALUE | "(" NESTED_TEXT ")" ]      (a global parameter)
//! arg           := KEY [ "=" VALUE | "(" NESTED_TEXT ")" ]
//! ```
//!
//! A word ends at unquoted whitespace or one of `, = ( )` and newline;
//! `"` toggles quoting and `\c` stands for `c`. Nested text runs to the
//! matching parenthesis and is kept as written. A key without a value
//! means `true`. Error messages are the reference's.

/// One item of a config string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// `load(file, ...)`.
    Load(Vec<String>),
    /// A config with its parenthesised arguments.
    Config {
        /// The config's name as written (possibly an alias).
        name: String,
        /// `key=value` arguments in order.
        args: Vec<(String, String)>,
    },
    /// A key outside parentheses: a global parameter or an extra key.
    Param {
        /// The key.
        key: String,
        /// Its value, if one was given.
        value: Option<String>,
    },
}

/// A syntax error, with the reference's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError(pub String);

const SEPARATORS: [char; 5] = [',', '=', '(', ')', '\n'];

struct Cursor {
    chars: Vec<char>,
    pos: usize,
}

impl Cursor {
    fn new(text: &str) -> Cursor {
        Cursor { chars: text.chars().collect(), pos: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_whitespace() && c != '\n') {
            self.pos += 1;
        }
    }

    fn skip_ws_and_newlines(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// Up to 15 characters of the input from the current position, for
    /// error messages.
    fn context(&self) -> String {
        self.chars[self.pos.min(self.chars.len())..].iter().take(15).collect()
    }

    /// Whitespace, then a word (empty if a separator or the end comes
    /// first).
    fn word(&mut self) -> String {
        self.skip_ws();
        let mut out = String::new();
        let mut quoted = false;
        while let Some(c) = self.peek() {
            if !quoted && (c.is_whitespace() || SEPARATORS.contains(&c)) {
                break;
            }
            self.pos += 1;
            match c {
                '"' => quoted = !quoted,
                '\\' => {
                    if let Some(next) = self.peek() {
                        out.push(next);
                        self.pos += 1;
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    /// Consumes `c` (after whitespace) if it comes next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// The text up to the `)` matching an already consumed `(`, which is
    /// consumed too; `None` if there is none.
    fn nested_text(&mut self) -> Option<String> {
        let mut depth = 0usize;
        let mut quoted = false;
        let start = self.pos;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '"' => quoted = !quoted,
                '\\' => self.pos += 1,
                '(' if !quoted => depth += 1,
                ')' if !quoted => {
                    if depth == 0 {
                        return Some(self.chars[start..self.pos - 1].iter().collect());
                    }
                    depth -= 1;
                }
                _ => {}
            }
        }
        None
    }

    /// The value of a key just read: `=VALUE`, `(NESTED)`, or none.
    fn value_of(&mut self, key: &str) -> Result<Option<String>, SyntaxError> {
        if self.eat('=') {
            let value = self.word();
            if value.is_empty() {
                return Err(SyntaxError(format!("Expected value after \"{key}=\" at {}", self.context())));
            }
            Ok(Some(value))
        } else if self.eat('(') {
            self.nested_text().map(Some).ok_or_else(|| SyntaxError(format!("Missing ')' after \"{key}\"(")))
        } else {
            Ok(None)
        }
    }

    /// `key[=value], ...)` after a config's `(`.
    fn args(&mut self) -> Result<Vec<(String, String)>, SyntaxError> {
        let mut args = Vec::new();
        if self.eat(')') {
            return Ok(args);
        }
        loop {
            let key = self.word();
            if key.is_empty() {
                return Err(SyntaxError(format!("Expected ')' at {}", self.context())));
            }
            let value = self.value_of(&key)?.unwrap_or_else(|| "true".to_string());
            args.push((key, value));
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                return Ok(args);
            }
            return Err(SyntaxError("Expected ')'".to_string()));
        }
    }

    /// `(path, ...)` after `load`.
    fn load_paths(&mut self) -> Result<Vec<String>, SyntaxError> {
        if !self.eat('(') {
            return Err(SyntaxError("Expected '(' after \"load\"".to_string()));
        }
        let mut paths = Vec::new();
        loop {
            let path = self.word();
            if path.is_empty() {
                return Err(SyntaxError("Expected filename for \"load\"".to_string()));
            }
            paths.push(path);
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                return Ok(paths);
            }
            return Err(SyntaxError("Missing ')' after \"load(\"".to_string()));
        }
    }
}

/// A quote left open at the end is an error: read as closed (as the
/// reference does), `output="x,region.count` would silently make
/// everything after the quote part of the value.
fn check_quotes(text: &str) -> Result<(), SyntaxError> {
    let (mut quoted, mut escaped, mut opened_at) = (false, false, 0);
    for (i, c) in text.chars().enumerate() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => {
                quoted = !quoted;
                opened_at = i;
            }
            _ => {}
        }
    }
    if quoted {
        let rest: String = text.chars().skip(opened_at).take(15).collect();
        return Err(SyntaxError(format!("Unterminated quote at {rest}")));
    }
    Ok(())
}

/// Parses a config string; `is_config` tells config names (and aliases)
/// from parameter keys.
pub fn parse(text: &str, is_config: impl Fn(&str) -> bool) -> Result<Vec<Item>, SyntaxError> {
    check_quotes(text)?;
    let mut c = Cursor::new(text);
    let mut items = Vec::new();
    loop {
        c.skip_ws_and_newlines();
        if c.peek().is_none() {
            return Ok(items);
        }
        let key = c.word();
        if key.is_empty() {
            return Err(SyntaxError(format!("Unexpected '{}' at {}", c.peek().unwrap_or(' '), c.context())));
        }
        let item = if key == "load" {
            Item::Load(c.load_paths()?)
        } else if is_config(&key) {
            let args = if c.eat('(') { c.args()? } else { Vec::new() };
            Item::Config { name: key, args }
        } else {
            let value = c.value_of(&key)?;
            Item::Param { key, value }
        };
        items.push(item);
        c.skip_ws_and_newlines();
        match c.peek() {
            None => return Ok(items),
            Some(',') => c.pos += 1,
            Some(other) => return Err(SyntaxError(format!("Unexpected '{other}' at {}", c.context()))),
        }
    }
}

/// Parses `key=value,key2(nested),flag` lists such as the text of
/// `metadata(...)`.
pub fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, SyntaxError> {
    parse(text, |_| false).map(|items| {
        items
            .into_iter()
            .filter_map(|item| match item {
                Item::Param { key, value } => Some((key, value.unwrap_or_else(|| "true".to_string()))),
                _ => None,
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(name: &str) -> bool {
        matches!(name, "runtime-report" | "event-trace")
    }

    fn config(name: &str, args: &[(&str, &str)]) -> Item {
        Item::Config { name: name.into(), args: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    fn param(key: &str, value: Option<&str>) -> Item {
        Item::Param { key: key.into(), value: value.map(str::to_string) }
    }

    #[test]
    fn configs_params_and_quoting() {
        let items = parse(
            " runtime-report(output=stdout, calc.inclusive) ,event-trace , time.exclusive,include_regions=\"startswith(main,foo)\", x=a\\,b",
            configs,
        )
        .unwrap();
        assert_eq!(
            items,
            [
                config("runtime-report", &[("output", "stdout"), ("calc.inclusive", "true")]),
                config("event-trace", &[]),
                param("time.exclusive", None),
                param("include_regions", Some("startswith(main,foo)")),
                param("x", Some("a,b")),
            ]
        );
        assert_eq!(parse("  \n ", configs).unwrap(), []);
        assert_eq!(parse("runtime-report()", configs).unwrap(), [config("runtime-report", &[])]);
    }

    #[test]
    fn nested_text_and_load() {
        let items =
            parse("metadata(file=x.json,keys=\"a,b)\"),runtime-report(metadata(k=(v))),load(a.json, b.json)", configs)
                .unwrap();
        assert_eq!(
            items,
            [
                param("metadata", Some("file=x.json,keys=\"a,b)\"")),
                config("runtime-report", &[("metadata", "k=(v)")]),
                Item::Load(vec!["a.json".into(), "b.json".into()]),
            ]
        );
        assert_eq!(
            parse_pairs("file=x.json,keys=\"a,b)\"").unwrap(),
            [("file".to_string(), "x.json".to_string()), ("keys".to_string(), "a,b)".to_string())]
        );
    }

    #[test]
    fn errors_have_the_reference_messages() {
        let err = |s: &str| parse(s, configs).unwrap_err().0;
        assert_eq!(err("runtime-report,output="), "Expected value after \"output=\" at ");
        assert_eq!(err("runtime-report(output=stdout"), "Expected ')'");
        assert_eq!(err("metadata(a=b"), "Missing ')' after \"metadata\"(");
        assert_eq!(err("runtime-report output"), "Unexpected 'o' at output");
        assert_eq!(err("runtime-report,)"), "Unexpected ')' at )");
        // Not the reference's, which reads an open quote as closed.
        assert_eq!(err("runtime-report,output=\"x.txt,region.count"), "Unterminated quote at \"x.txt,region.c");
        assert!(parse("x=\"a\\\"b\"", configs).is_ok(), "an escaped quote does not open one");
        assert_eq!(err("load"), "Expected '(' after \"load\"");
        assert_eq!(err("load()"), "Expected filename for \"load\"");
        assert_eq!(err("load(a.json"), "Missing ')' after \"load(\"");
        assert_eq!(err("runtime-report(output=a b)"), "Expected ')'");
    }
}
