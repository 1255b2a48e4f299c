//! Command-line parsing with the reference tools' conventions.
//!
//! Long options as `--name=value` or `--name value`, short options as `-x`,
//! grouped flags (`-et`), `-x value` for the last letter of a group or
//! `-x=value`; `--` ends the options; everything else is an input file.

use std::collections::HashMap;
use std::fmt;

/// Whether an option takes a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Takes {
    /// A flag.
    Nothing,
    /// A value, named in the help text.
    Value(&'static str),
    /// An optional value: given with `=`, or the next argument unless that
    /// is another option (how `--help TOPIC` works).
    Optional(&'static str),
}

/// One option a tool accepts.
#[derive(Copy, Clone, Debug)]
pub struct OptSpec {
    /// The long name, without `--`.
    pub long: &'static str,
    /// The short letter, if any.
    pub short: Option<char>,
    /// Whether it takes a value.
    pub takes: Takes,
    /// One line of help.
    pub help: &'static str,
}

/// The parsed command line: options by long name (the last value wins for
/// repeated options) and the positional arguments.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ParsedArgs {
    values: HashMap<&'static str, String>,
    /// Positional arguments (input files), in order.
    pub positional: Vec<String>,
}

impl ParsedArgs {
    /// Whether the option was given.
    pub fn is_set(&self, long: &str) -> bool {
        self.values.contains_key(long)
    }

    /// The option's value, if it was given with one.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.values.get(long).map(String::as_str)
    }
}

/// A command line the tool does not accept.
#[derive(Debug, PartialEq, Eq)]
pub enum ArgError {
    /// An option that is not in the table.
    UnknownOption(String),
    /// An option that needs a value and has none.
    MissingValue(String),
    /// A flag given a value with `=`.
    UnexpectedValue(String),
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::UnknownOption(a) => write!(f, "unknown option: {a}"),
            ArgError::MissingValue(a) => write!(f, "option {a} needs a value"),
            ArgError::UnexpectedValue(a) => write!(f, "option {a} takes no value"),
        }
    }
}

impl std::error::Error for ArgError {}

/// Parses `args` (without the program name) against `specs`.
pub fn parse(specs: &[OptSpec], args: &[String]) -> Result<ParsedArgs, ArgError> {
    let mut parsed = ParsedArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            parsed.positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let spec = specs.iter().find(|s| s.long == name).ok_or_else(|| ArgError::UnknownOption(arg.clone()))?;
            let value = take_value(spec, &format!("--{name}"), inline, args, &mut i)?;
            parsed.values.insert(spec.long, value);
        } else if arg.len() > 1 && arg.starts_with('-') {
            let group = &arg[1..];
            for (pos, c) in group.char_indices() {
                let spec = specs
                    .iter()
                    .find(|s| s.short == Some(c))
                    .ok_or_else(|| ArgError::UnknownOption(format!("-{c}")))?;
                let rest = &group[pos + c.len_utf8()..];
                if spec.takes == Takes::Nothing {
                    if rest.starts_with('=') {
                        return Err(ArgError::UnexpectedValue(format!("-{c}")));
                    }
                    parsed.values.insert(spec.long, String::new());
                    continue;
                }
                // The rest of the group (after an optional '=') is the value,
                // else the next argument.
                let inline =
                    if rest.is_empty() { None } else { Some(rest.strip_prefix('=').unwrap_or(rest).to_string()) };
                let value = take_value(spec, &format!("-{c}"), inline, args, &mut i)?;
                parsed.values.insert(spec.long, value);
                break;
            }
        } else {
            parsed.positional.push(arg.clone());
        }
    }
    Ok(parsed)
}

fn take_value(
    spec: &OptSpec,
    shown: &str,
    inline: Option<String>,
    args: &[String],
    next: &mut usize,
) -> Result<String, ArgError> {
    match (spec.takes, inline) {
        (Takes::Nothing, None) => Ok(String::new()),
        (Takes::Nothing, Some(_)) => Err(ArgError::UnexpectedValue(shown.to_string())),
        (Takes::Value(_) | Takes::Optional(_), Some(v)) => Ok(v),
        (Takes::Value(_), None) => {
            let v = args.get(*next).ok_or_else(|| ArgError::MissingValue(shown.to_string()))?;
            *next += 1;
            Ok(v.clone())
        }
        (Takes::Optional(_), None) => match args.get(*next) {
            Some(v) if !v.starts_with('-') => {
                *next += 1;
                Ok(v.clone())
            }
            _ => Ok(String::new()),
        },
    }
}

/// The option table as help text, one option per line.
pub fn option_table(specs: &[OptSpec]) -> String {
    let rows: Vec<(String, &str)> = specs
        .iter()
        .map(|s| {
            let short = s.short.map(|c| format!("-{c}, ")).unwrap_or_else(|| "    ".to_string());
            let value = match s.takes {
                Takes::Nothing => String::new(),
                Takes::Value(name) => format!(" {name}"),
                Takes::Optional(name) => format!(" [{name}]"),
            };
            (format!("  {short}--{}{value}", s.long), s.help)
        })
        .collect();
    let width = rows.iter().map(|(o, _)| o.len()).max().unwrap_or(0);
    rows.iter().map(|(o, h)| format!("{o:width$}   {h}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptSpec] = &[
        OptSpec { long: "output", short: Some('o'), takes: Takes::Value("FILE"), help: "write to FILE" },
        OptSpec { long: "expand", short: Some('e'), takes: Takes::Nothing, help: "expand" },
        OptSpec { long: "table", short: Some('t'), takes: Takes::Nothing, help: "table" },
        OptSpec { long: "help", short: Some('h'), takes: Takes::Optional("TOPIC"), help: "help" },
    ];

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn long_and_short_forms() {
        let p = parse(SPECS, &args(&["--output=x", "a.cali", "-et", "b.cali"])).unwrap();
        assert_eq!(p.value("output"), Some("x"));
        assert!(p.is_set("expand") && p.is_set("table"));
        assert_eq!(p.positional, ["a.cali", "b.cali"]);
        let p = parse(SPECS, &args(&["--output", "y", "-eo", "z"])).unwrap();
        assert_eq!(p.value("output"), Some("z"));
        let p = parse(SPECS, &args(&["-o=w", "-ow2"])).unwrap();
        assert_eq!(p.value("output"), Some("w2"));
        let p = parse(SPECS, &args(&["--", "-e", "--output"])).unwrap();
        assert_eq!(p.positional, ["-e", "--output"]);
        assert!(!p.is_set("expand"));
        let p = parse(SPECS, &args(&["-"])).unwrap();
        assert_eq!(p.positional, ["-"]);
        let p = parse(SPECS, &args(&["--help", "-e"])).unwrap();
        assert_eq!(p.value("help"), Some(""));
        let p = parse(SPECS, &args(&["-h", "configs"])).unwrap();
        assert_eq!(p.value("help"), Some("configs"));
        let p = parse(SPECS, &args(&["--help=calql"])).unwrap();
        assert_eq!(p.value("help"), Some("calql"));
    }

    #[test]
    fn errors() {
        assert_eq!(parse(SPECS, &args(&["--bogus"])), Err(ArgError::UnknownOption("--bogus".into())));
        assert_eq!(parse(SPECS, &args(&["-ex"])), Err(ArgError::UnknownOption("-x".into())));
        assert_eq!(parse(SPECS, &args(&["-o"])), Err(ArgError::MissingValue("-o".into())));
        assert_eq!(parse(SPECS, &args(&["--output"])), Err(ArgError::MissingValue("--output".into())));
        assert_eq!(parse(SPECS, &args(&["--expand=1"])), Err(ArgError::UnexpectedValue("--expand".into())));
        assert_eq!(parse(SPECS, &args(&["-e=1"])), Err(ArgError::UnexpectedValue("-e".into())));
    }

    #[test]
    fn table_lists_every_option() {
        let t = option_table(SPECS);
        assert!(t.starts_with("  -o, --output FILE    write to FILE\n"), "{t}");
        assert!(t.contains("  -h, --help [TOPIC]   help\n"), "{t}");
        assert_eq!(t.lines().count(), SPECS.len());
    }
}
