//! The word lexer shared by CalQL and the config-string grammar.
//!
//! A *word* is read by skipping whitespace, then collecting characters until
//! unquoted whitespace or a separator; `"` toggles quoting (the quote
//! characters are dropped) and `\c` yields `c`. Separators are single
//! characters that callers choose (CalQL uses `, ; = < > ( )` and newline).

/// A cursor over a text, reading words and separators.
#[derive(Clone, Debug)]
pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    separators: &'static [char],
    /// Where a word ran into the end of the text inside quotes or right
    /// after a `\` (byte offset of the `"` or `\`), and which of the two.
    unterminated: Option<(usize, Unterminated)>,
}

/// A word cut off by the end of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unterminated {
    /// A `"` without its closing `"`.
    Quote,
    /// A `\` with nothing to escape.
    Escape,
}

impl std::fmt::Display for Unterminated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unterminated::Quote => f.write_str("Unterminated quote: '\"' without a closing '\"'"),
            Unterminated::Escape => f.write_str("Incomplete escape: '\\' at the end of the text"),
        }
    }
}

/// A word and where it started (byte offset into the text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The word with quotes and escapes resolved.
    pub text: String,
    /// Byte offset of its first character.
    pub start: usize,
    /// Whether any part of it was quoted (a quoted word is never a keyword).
    pub quoted: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer over `text` that ends words at `separators`.
    pub fn new(text: &'a str, separators: &'static [char]) -> Lexer<'a> {
        Lexer { text, pos: 0, separators, unterminated: None }
    }

    /// The byte offset of the next character.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The first word cut off by the end of the text, if any: its
    /// position and what is missing. Such a word is read as if it were
    /// closed; callers that must reject it ask here.
    pub fn unterminated(&self) -> Option<(usize, Unterminated)> {
        self.unterminated
    }

    /// The unread rest of the text.
    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// Skips whitespace (not counting separators that are whitespace, such
    /// as a newline when it separates).
    pub fn skip_whitespace(&mut self) {
        let rest = self.rest();
        let skipped =
            rest.len() - rest.trim_start_matches(|c: char| c.is_whitespace() && !self.separators.contains(&c)).len();
        self.pos += skipped;
    }

    /// The next non-whitespace character, without consuming it.
    pub fn peek(&mut self) -> Option<char> {
        self.skip_whitespace();
        self.rest().chars().next()
    }

    /// Whether the input is used up (but for whitespace).
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Consumes `c` if it is the next non-whitespace character.
    pub fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Reads a word; `None` if the next thing is a separator or the end.
    pub fn word(&mut self) -> Option<Word> {
        self.skip_whitespace();
        let start = self.pos;
        let mut text = String::new();
        let mut quoted = false;
        let mut in_quotes = None;
        let mut chars = self.rest().char_indices();
        let mut end = self.rest().len();
        let mut cut = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, next)) => text.push(next),
                    None => cut = Some((i, Unterminated::Escape)),
                },
                '"' if in_quotes.is_some() => in_quotes = None,
                _ if in_quotes.is_some() => text.push(c),
                _ if c.is_whitespace() || self.separators.contains(&c) => {
                    end = i;
                    break;
                }
                '"' => {
                    in_quotes = Some(i);
                    quoted = true;
                }
                _ => text.push(c),
            }
        }
        if let Some(q) = in_quotes {
            cut = Some((q, Unterminated::Quote));
        }
        if self.unterminated.is_none() {
            self.unterminated = cut.map(|(i, what)| (start + i, what));
        }
        self.pos += end;
        if self.pos == start { None } else { Some(Word { text, start, quoted }) }
    }

    /// Reads the text up to the `)` that closes an already consumed `(`,
    /// verbatim (parentheses inside quotes do not count); consumes the `)`.
    /// `None` if there is no matching `)`.
    pub fn nested_text(&mut self) -> Option<String> {
        let mut depth = 0;
        let mut in_quotes = false;
        let mut escaped = false;
        for (i, c) in self.rest().char_indices() {
            if escaped {
                escaped = false;
                continue;
            }
            match c {
                '\\' => escaped = true,
                '"' => in_quotes = !in_quotes,
                '(' if !in_quotes => depth += 1,
                ')' if !in_quotes => {
                    if depth == 0 {
                        let text = self.rest()[..i].to_string();
                        self.pos += i + 1;
                        return Some(text);
                    }
                    depth -= 1;
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEPS: &[char] = &[',', ';', '=', '<', '>', '(', ')', '\n'];

    fn words(text: &str) -> Vec<String> {
        let mut lx = Lexer::new(text, SEPS);
        let mut out = Vec::new();
        loop {
            if let Some(w) = lx.word() {
                out.push(w.text);
            } else if let Some(c) = lx.peek() {
                lx.eat(c);
                out.push(format!("<{c}>"));
            } else {
                break;
            }
        }
        out
    }

    #[test]
    fn words_and_separators() {
        assert_eq!(words("select a,b , c"), ["select", "a", "<,>", "b", "<,>", "c"]);
        assert_eq!(words("x=ratio(a,b)"), ["x", "<=>", "ratio", "<(>", "a", "<,>", "b", "<)>"]);
        assert_eq!(words("a<17 b>2"), ["a", "<<>", "17", "b", "<>>", "2"]);
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(words(r#"order by "b with space", c"#), ["order", "by", "b with space", "<,>", "c"]);
        assert_eq!(words(r"iteration#main\ loop"), ["iteration#main loop"]);
        assert_eq!(words(r#""a,bb,ccc""#), ["a,bb,ccc"]);
        assert_eq!(words(r#"pre"fix and"post"#), ["prefix andpost"]);
        let mut lx = Lexer::new(r#""select""#, SEPS);
        assert!(lx.word().unwrap().quoted);
    }

    #[test]
    fn positions() {
        let mut lx = Lexer::new("  select  a", SEPS);
        assert_eq!(lx.word().unwrap().start, 2);
        assert_eq!(lx.word().unwrap().start, 10);
        assert!(lx.at_end());
    }

    #[test]
    fn nested_text_is_verbatim() {
        let mut lx = Lexer::new(r#"a,(b,")"),c) rest"#, SEPS);
        assert_eq!(lx.nested_text().as_deref(), Some(r#"a,(b,")"),c"#));
        assert_eq!(lx.rest(), " rest");
        let mut lx = Lexer::new("unclosed(", SEPS);
        assert_eq!(lx.nested_text(), None);
    }
}
