//! Region filters: which region names trigger snapshots
//! (`include_regions`, `exclude_regions`, `include_branches`).
//!
//! A filter is a comma list of items: a bare word (exact match),
//! `match(w1,w2,...)`, `startswith(p1,...)` or `regex(r1,...)` (the whole
//! name must match). Words may be quoted to hold separators.

use regex::Regex;

/// One way to match a name.
#[derive(Clone, Debug)]
enum Matcher {
    Exact(String),
    Prefix(String),
    Regex(Regex),
}

impl Matcher {
    fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Exact(w) => w == name,
            Matcher::Prefix(p) => name.starts_with(p.as_str()),
            Matcher::Regex(r) => r.is_match(name),
        }
    }
}

/// A list of matchers; a name passes if any matches.
#[derive(Clone, Debug, Default)]
pub struct NameFilter {
    matchers: Vec<Matcher>,
}

impl NameFilter {
    /// Parses a filter; the error names what is wrong.
    pub fn parse(text: &str) -> Result<NameFilter, String> {
        let mut matchers = Vec::new();
        let mut chars = text.chars().peekable();
        loop {
            let word = read_word(&mut chars);
            skip_ws(&mut chars);
            if chars.peek() == Some(&'(') {
                chars.next();
                let mut args = Vec::new();
                loop {
                    args.push(read_word(&mut chars));
                    skip_ws(&mut chars);
                    match chars.next() {
                        Some(',') => continue,
                        Some(')') => break,
                        _ => return Err(format!("in {word}(): missing ')'")),
                    }
                }
                for arg in args.into_iter().filter(|a| !a.is_empty()) {
                    matchers.push(match word.as_str() {
                        "match" => Matcher::Exact(arg),
                        "startswith" => Matcher::Prefix(arg),
                        "regex" => Matcher::Regex(Regex::new(&format!("^(?:{arg})$")).map_err(|e| e.to_string())?),
                        other => return Err(format!("unknown filter \"{other}\" (match, startswith, regex)")),
                    });
                }
            } else if !word.is_empty() {
                matchers.push(Matcher::Exact(word));
            }
            skip_ws(&mut chars);
            match chars.next() {
                None => return Ok(NameFilter { matchers }),
                Some(',') => {}
                Some(c) => return Err(format!("unexpected '{c}'")),
            }
        }
    }

    /// Whether the filter has no items.
    pub fn is_empty(&self) -> bool {
        self.matchers.is_empty()
    }

    /// Whether `name` matches an item.
    pub fn matches(&self, name: &str) -> bool {
        self.matchers.iter().any(|m| m.matches(name))
    }
}

fn skip_ws(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.peek().is_some_and(|c| c.is_whitespace()) {
        chars.next();
    }
}

/// A word up to an unquoted `,`, `(` or `)`; quotes are removed and `\`
/// escapes a character.
fn read_word(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    skip_ws(chars);
    let mut word = String::new();
    let mut quoted = false;
    while let Some(&c) = chars.peek() {
        if !quoted && matches!(c, ',' | '(' | ')') {
            break;
        }
        chars.next();
        match c {
            '"' => quoted = !quoted,
            '\\' => word.extend(chars.next()),
            c => word.push(c),
        }
    }
    if quoted { word } else { word.trim_end().to_string() }
}

/// The include and exclude lists of a channel.
#[derive(Clone, Debug, Default)]
pub struct RegionFilter {
    include: NameFilter,
    exclude: NameFilter,
}

impl RegionFilter {
    /// A filter from `include_regions` and `exclude_regions` texts.
    pub fn new(include: &str, exclude: &str) -> Result<RegionFilter, String> {
        Ok(RegionFilter::from_lists(NameFilter::parse(include)?, NameFilter::parse(exclude)?))
    }

    /// A filter from parsed include and exclude lists.
    pub fn from_lists(include: NameFilter, exclude: NameFilter) -> RegionFilter {
        RegionFilter { include, exclude }
    }

    /// Whether the filter lets every name pass.
    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    /// Not excluded, and included if there is an include list.
    pub fn pass(&self, name: &str) -> bool {
        !self.exclude.matches(name) && (self.include.is_empty() || self.include.matches(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items() {
        let f = NameFilter::parse("main, match(foo,\"a,b\"), startswith(MPI_,mpi.), regex(f.*o|ba[rz])").unwrap();
        for name in ["main", "foo", "a,b", "MPI_Send", "mpi.x", "fo", "foooo", "baz"] {
            assert!(f.matches(name), "{name}");
        }
        for name in ["mai", "mainloop", "xfoo", "bar2", "a"] {
            assert!(!f.matches(name), "{name}");
        }
        assert!(NameFilter::parse("").unwrap().is_empty());
    }

    #[test]
    fn errors() {
        assert_eq!(NameFilter::parse("match(a,b").unwrap_err(), "in match(): missing ')'");
        assert!(NameFilter::parse("regex([)").unwrap_err().contains("unclosed"));
        assert_eq!(
            NameFilter::parse("contains(x)").unwrap_err(),
            "unknown filter \"contains\" (match, startswith, regex)"
        );
    }

    #[test]
    fn include_and_exclude() {
        let f = RegionFilter::new("startswith(ma)", "mainloop").unwrap();
        assert!(f.pass("main"));
        assert!(!f.pass("mainloop"), "excluded wins");
        assert!(!f.pass("foo"), "not included");
        let f = RegionFilter::new("", "foo").unwrap();
        assert!(f.pass("main") && !f.pass("foo"));
        assert!(RegionFilter::new("", "").unwrap().is_empty());
    }
}
