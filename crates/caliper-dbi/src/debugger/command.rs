//! The commands of `cdb`, parsed from one line each: gdb's names and
//! abbreviations where gdb has the command.

use std::fmt;

/// Where a breakpoint goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Every function of this name in the loaded modules.
    Function(String),
    /// An address (`*0x401136`).
    Address(u64),
}

/// An address expression of `x`: a register, a number or a function,
/// plus or minus a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressExpr {
    pub base: Base,
    pub offset: i64,
}

/// The base of an [`AddressExpr`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    Number(u64),
    /// A register by its name without the `$` (`rsp`, `pc`).
    Register(String),
    /// A function's entry.
    Function(String),
}

/// The size of each unit `x` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Byte = 1,
    Half = 2,
    Word = 4,
    Giant = 8,
}

/// How `x` shows memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Hex(Unit),
    Decimal(Unit),
    Instructions,
}

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Break(Location),
    /// Deletes one breakpoint, or all.
    Delete(Option<usize>),
    InfoBreakpoints,
    Continue,
    StepInstruction,
    NextInstruction,
    Backtrace,
    Registers,
    Examine {
        count: usize,
        format: Format,
        at: AddressExpr,
    },
    /// Original and instrumented code of a function (the current one when
    /// none is named).
    Disassemble(Option<String>),
    /// The instrumented functions whose name matches the pattern (`*`
    /// wildcards); without one, those hit so far.
    InfoInstrumented(Option<String>),
    InfoThreads,
    Thread(usize),
    Kill,
    Detach,
    Quit,
    Help,
    /// An empty line: repeats the last stepping command, as in gdb.
    Repeat,
}

/// Why a line is not a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// The help text.
pub const HELP: &str = "\
break FUNC | *ADDR  (b)    stop at every entry of FUNC, or at ADDR
delete [N]  (d)            delete breakpoint N (all without N)
info breakpoints  (i b)    the breakpoints and their hits
continue  (c)              run until the next stop
stepi  (si)                execute one instruction (a trampoline's too)
nexti  (ni)                the same, stepping over calls
backtrace  (bt)            the current thread's call chain
info registers  (regs)     the current thread's registers
x/NFU ADDR                 N units of memory: F x (hex), d, i (instructions);
                           U b, h, w, g; ADDR a number, $reg or FUNC, +/- N
disassemble [FUNC]  (disas) original and instrumented code side by side
info instrumented [PAT]    instrumented functions, trampolines and states
info threads               the threads of the stopped process
thread N                   make thread N current
kill                       kill the program
detach                     take all instrumentation out and let it run
quit  (q)                  kill the program (detach from an attached one) and end
help  (h)                  this text
";

/// Parses one line.
pub fn parse(line: &str) -> Result<Command, ParseError> {
    let line = line.trim();
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (line, ""),
    };
    if let Some(spec) = word.strip_prefix("x/") {
        return examine(spec, rest);
    }
    let command = match word {
        "" => Command::Repeat,
        "b" | "br" | "break" => Command::Break(location(rest)?),
        "d" | "delete" => Command::Delete(optional_number(rest)?),
        "c" | "cont" | "continue" => no_argument(rest, Command::Continue)?,
        "si" | "stepi" => no_argument(rest, Command::StepInstruction)?,
        "ni" | "nexti" => no_argument(rest, Command::NextInstruction)?,
        "bt" | "backtrace" | "where" => no_argument(rest, Command::Backtrace)?,
        "regs" => no_argument(rest, Command::Registers)?,
        "x" => examine("", rest)?,
        "disas" | "disassemble" => Command::Disassemble((!rest.is_empty()).then(|| rest.to_string())),
        "i" | "info" => info(rest)?,
        "thread" => {
            Command::Thread(optional_number(rest)?.ok_or_else(|| ParseError("thread needs a thread number".into()))?)
        }
        "kill" | "k" => no_argument(rest, Command::Kill)?,
        "detach" => no_argument(rest, Command::Detach)?,
        "q" | "quit" => no_argument(rest, Command::Quit)?,
        "h" | "help" => Command::Help,
        other => return Err(ParseError(format!("unknown command `{other}` (try `help`)"))),
    };
    Ok(command)
}

fn no_argument(rest: &str, command: Command) -> Result<Command, ParseError> {
    if rest.is_empty() { Ok(command) } else { Err(ParseError(format!("unexpected `{rest}`"))) }
}

fn info(rest: &str) -> Result<Command, ParseError> {
    let (what, argument) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    match what {
        "b" | "br" | "break" | "breakpoints" => no_argument(argument, Command::InfoBreakpoints),
        "r" | "reg" | "registers" => no_argument(argument, Command::Registers),
        "threads" => no_argument(argument, Command::InfoThreads),
        "instrumented" => Ok(Command::InfoInstrumented((!argument.is_empty()).then(|| argument.to_string()))),
        "" => Err(ParseError("info what? breakpoints, registers, threads or instrumented".into())),
        other => Err(ParseError(format!("unknown info `{other}` (breakpoints, registers, threads, instrumented)"))),
    }
}

fn location(text: &str) -> Result<Location, ParseError> {
    if text.is_empty() {
        return Err(ParseError("break needs a function or *ADDRESS".into()));
    }
    match text.strip_prefix('*') {
        Some(address) => Ok(Location::Address(number(address.trim())?)),
        None if text.contains(char::is_whitespace) => Err(ParseError(format!("`{text}` is not a function name"))),
        None => Ok(Location::Function(text.to_string())),
    }
}

fn optional_number(text: &str) -> Result<Option<usize>, ParseError> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| ParseError(format!("`{text}` is not a number")))
}

/// A number: hexadecimal with `0x`, else decimal.
fn number(text: &str) -> Result<u64, ParseError> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| ParseError(format!("`{text}` is not a number")))
}

/// `x/NFU ADDR` (`spec` is what follows the slash).
fn examine(spec: &str, rest: &str) -> Result<Command, ParseError> {
    let digits = spec.len() - spec.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let count = if digits == 0 { 1 } else { number(&spec[..digits])? as usize };
    if count == 0 || count > 4096 {
        return Err(ParseError(format!("x: count {count} out of range (1 to 4096)")));
    }
    let (mut letter, mut unit) = ('x', Unit::Word);
    for c in spec[digits..].chars() {
        match c {
            'x' | 'd' | 'i' => letter = c,
            'b' => unit = Unit::Byte,
            'h' => unit = Unit::Half,
            'w' => unit = Unit::Word,
            'g' => unit = Unit::Giant,
            other => return Err(ParseError(format!("x: unknown format letter `{other}` (x, d, i; b, h, w, g)"))),
        }
    }
    let format = match letter {
        'i' => Format::Instructions,
        'd' => Format::Decimal(unit),
        _ => Format::Hex(unit),
    };
    if rest.is_empty() {
        return Err(ParseError("x needs an address".into()));
    }
    Ok(Command::Examine { count, format, at: address_expr(rest)? })
}

fn address_expr(text: &str) -> Result<AddressExpr, ParseError> {
    let split = text.char_indices().skip(1).find(|&(_, c)| c == '+' || c == '-').map(|(i, _)| i);
    let (base, offset) = match split {
        Some(i) => {
            let magnitude = number(text[i + 1..].trim())? as i64;
            (text[..i].trim(), if &text[i..i + 1] == "-" { -magnitude } else { magnitude })
        }
        None => (text.trim(), 0),
    };
    let base = if let Some(register) = base.strip_prefix('$') {
        Base::Register(register.to_string())
    } else if base.starts_with(|c: char| c.is_ascii_digit()) {
        Base::Number(number(base)?)
    } else if !base.is_empty() && !base.contains(char::is_whitespace) {
        Base::Function(base.to_string())
    } else {
        return Err(ParseError(format!("`{text}` is not an address")));
    };
    Ok(AddressExpr { base, offset })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gdb_names_and_abbreviations() {
        assert_eq!(parse("b work"), Ok(Command::Break(Location::Function("work".into()))));
        assert_eq!(parse("break *0x401136"), Ok(Command::Break(Location::Address(0x401136))));
        assert_eq!(parse(" c "), Ok(Command::Continue));
        assert_eq!(parse("si"), Ok(Command::StepInstruction));
        assert_eq!(parse("nexti"), Ok(Command::NextInstruction));
        assert_eq!(parse("bt"), Ok(Command::Backtrace));
        assert_eq!(parse("info registers"), Ok(Command::Registers));
        assert_eq!(parse("regs"), Ok(Command::Registers));
        assert_eq!(parse("i b"), Ok(Command::InfoBreakpoints));
        assert_eq!(parse("delete"), Ok(Command::Delete(None)));
        assert_eq!(parse("d 2"), Ok(Command::Delete(Some(2))));
        assert_eq!(parse("info instrumented wor*"), Ok(Command::InfoInstrumented(Some("wor*".into()))));
        assert_eq!(parse("disassemble work"), Ok(Command::Disassemble(Some("work".into()))));
        assert_eq!(parse("thread 2"), Ok(Command::Thread(2)));
        assert_eq!(parse(""), Ok(Command::Repeat));
    }

    #[test]
    fn parses_examine() {
        let at = |base, offset| AddressExpr { base, offset };
        assert_eq!(
            parse("x/8xg $rsp"),
            Ok(Command::Examine {
                count: 8,
                format: Format::Hex(Unit::Giant),
                at: at(Base::Register("rsp".into()), 0)
            })
        );
        assert_eq!(
            parse("x/3i work+4"),
            Ok(Command::Examine { count: 3, format: Format::Instructions, at: at(Base::Function("work".into()), 4) })
        );
        assert_eq!(
            parse("x 0x10-0x8"),
            Ok(Command::Examine { count: 1, format: Format::Hex(Unit::Word), at: at(Base::Number(16), -8) })
        );
        assert_eq!(
            parse("x/16db $sp + 8"),
            Ok(Command::Examine {
                count: 16,
                format: Format::Decimal(Unit::Byte),
                at: at(Base::Register("sp".into()), 8)
            })
        );
    }

    #[test]
    fn rejects_bad_lines_with_a_message() {
        for bad in ["frobnicate", "break", "break two words", "x/4q $rsp", "x/4x", "x/0x 0", "thread", "thread x"] {
            let err = parse(bad).expect_err(bad);
            assert!(!err.0.is_empty());
        }
        assert_eq!(parse("continue now"), Err(ParseError("unexpected `now`".into())));
        assert!(parse("info nothing").is_err());
        assert!(parse("break *0xzz").is_err());
    }
}
