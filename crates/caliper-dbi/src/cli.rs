//! `cali-run`'s command line (and the control file, which says the same
//! in a file).

use crate::control::{self, Control};
use crate::debugger::DebugConfig;
use crate::engine::{Collect, Config, Target};
use crate::script::Script;
use caliper_perf::EventCode;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The usage text.
pub const USAGE: &str = "\
usage: cali-run [OPTIONS] -- PROGRAM [ARGS...]
       cali-run [OPTIONS] --pid PID
       cali-run [OPTIONS] --control FILE
       cali-run --script FILE.py [--] PROGRAM [ARGS...]
       cali-run debug [OPTIONS] -- PROGRAM [ARGS...]
       cali-run debug --connect PATH

Measures an unmodified program by lazy dynamic instrumentation.

  -c, --collect LIST     what to measure: coverage, fcount, arcs (calls per
                         call site), callgraph (the call graph of the arcs,
                         with inclusive calls), sample (call stacks sampled
                         on CPU time); default fcount
  -o, --output FILE      write the results as a .cali file (default: a text
                         report on standard error)
      --flow-data FILE   also write function and arc counts as flow data
      --sample-event EVENT  sample on this event (with sample, which it
                         implies): task-clock (the default), cpu-clock,
                         cycles, instructions, ... or a raw PMU code r<hex>;
                         an event that cannot be opened falls back to
                         task-clock
  -i, --include PATTERNS instrument only these modules or functions
                         (comma-separated, `*` wildcards; repeatable)
  -x, --exclude PATTERNS never instrument these modules or functions
      --follow LIST      fork, exec (default: both), exec=PROGRAM (follow
                         only execs of matching programs), or none
      --start SECONDS    start measuring after this long (the program runs
                         free until then)
      --duration SECONDS stop measuring after this long (from the start)
      --breakpoints-only count every call at a breakpoint (no trampolines)
      --lazy             patch each function at its first call (a ptrace stop
                         each) instead of all as their modules load: for
                         huge programs that call few of their functions
      --no-cache         analyse every module afresh (by default the
                         functions and branch targets found in a file are
                         kept in $XDG_CACHE_HOME/caliper/dbi for the next
                         run; CALI_RUN_CACHE=off does the same)
  -p, --pid PID          attach to a running process (until SIGINT)
      --control FILE     read the measurement from a control file
      --script FILE.py   run a Python script that drives the engine with
                         the caliper.dbi package (built in), with PROGRAM
                         ARGS as its sys.argv[1:]; exits with its code.
                         The first option, and the only one:
                           import sys, caliper.dbi as dbi
                           proc = dbi.process(sys.argv[1:])
                           arcs = dbi.arc_count(dbi.context(proc))
                           proc.run()
                           arcs.write(\"flow.dat\")
      --debug-on-fault   stop at the cdb prompt when the program gets a
                         fatal signal (SIGSEGV, SIGILL, SIGBUS, SIGFPE,
                         SIGABRT, a SIGTRAP not the tool's) or the
                         instrumentation fails
      --debug-socket PATH
                         serve the cdb prompt on a Unix domain socket (for
                         a program that needs the terminal's input);
                         implies --debug-on-fault
  -h, --help             this text

cali-run debug runs the program under cdb, the debugger that lives with the
instrumentation: it stops at the program's entry with a `(cdb) ` prompt
(break FUNC|*ADDR, continue, stepi, nexti, backtrace, info registers, x/NFU,
disassemble FUNC: original and instrumented code side by side, info
instrumented, info threads, thread N, kill, detach, quit; `help` lists
them). `cali-run debug --connect PATH` is a client of --debug-socket PATH.
";

/// A parsed invocation.
pub struct Invocation {
    pub config: Config,
    pub target: Target,
    /// Where the `.cali` results go; None for the text report.
    pub output: Option<String>,
    /// Where the flow-data file goes, if anywhere.
    pub flow_data: Option<String>,
}

/// What the command line asked for.
pub enum Request {
    Help,
    Run(Box<Invocation>),
    Script(Script),
    /// Talk to the `cdb` prompt served on this socket.
    Connect(PathBuf),
}

/// Parses the arguments after the program name. Errors are one line.
pub fn parse(args: Vec<OsString>) -> Result<Request, String> {
    let mut config = Config { follow_fork: true, follow_exec: true, ..Config::default() };
    let mut collect: Option<String> = None;
    let mut output = None;
    let mut flow_data = None;
    let mut pid = None;
    let mut sample_event = None;
    let mut program: Vec<OsString> = Vec::new();
    if let Some(script) = script(&args)? {
        return Ok(Request::Script(script));
    }
    let mut args = args.into_iter().peekable();
    let interactive = args.next_if(|a| a == "debug").is_some();
    let mut debug = interactive.then_some(DebugConfig { interactive, socket: None });
    let mut connect = None;
    while let Some(arg) = args.next() {
        let arg_text = arg.to_string_lossy().to_string();
        let (name, inline) = match arg_text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg_text.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args.next().map(|v| v.to_string_lossy().to_string()).ok_or(format!("{name} needs {what}")),
            }
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(Request::Help),
            "-c" | "--collect" => collect = Some(value("a list of collectors")?),
            "-o" | "--output" => output = Some(value("a file name")?),
            "--flow-data" => flow_data = Some(value("a file name")?),
            "--sample-event" => sample_event = Some(event(value("an event name")?)?),
            "-i" | "--include" => config.filter.include.extend(patterns(&value("patterns")?)),
            "-x" | "--exclude" => config.filter.exclude.extend(patterns(&value("patterns")?)),
            "--follow" => set_follow(&mut config, &value("fork, exec or none")?)?,
            "--duration" => config.duration = Some(seconds(&value("seconds")?)?),
            "--start" => config.start = Some(seconds(&value("seconds")?)?),
            "--breakpoints-only" => config.breakpoints_only = true,
            "--lazy" => config.lazy = true,
            "--no-cache" => config.cache = false,
            "--debug-on-fault" => {
                debug.get_or_insert_with(DebugConfig::default);
            }
            "--debug-socket" => debug.get_or_insert_with(DebugConfig::default).socket = Some(value("a path")?.into()),
            "--connect" if interactive => connect = Some(PathBuf::from(value("a path")?)),
            "-p" | "--pid" => {
                let v = value("a process id")?;
                pid = Some(v.parse::<i32>().ok().filter(|p| *p > 0).ok_or(format!("`{v}` is not a process id"))?);
            }
            "--control" => {
                let file = value("a file name")?;
                let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
                let control = control::parse(&file, &text).map_err(|e| e.to_string())?;
                let outputs = Outputs { cali: &mut output, flow_data: &mut flow_data };
                apply_control(&control, &mut config, &mut collect, outputs, &mut program)?;
                if let Some(name) = &control.sample_event {
                    sample_event = Some(event(name.clone())?);
                }
            }
            "--script" => return Err("--script comes first, and alone: cali-run --script FILE.py [--] PROGRAM".into()),
            "--" => program.extend(args.by_ref()),
            _ if name.starts_with('-') && program.is_empty() => return Err(format!("unknown option `{name}`")),
            _ => {
                program.push(arg);
                program.extend(args.by_ref());
            }
        }
    }
    if let Some(path) = connect {
        return match program.is_empty() && pid.is_none() {
            true => Ok(Request::Connect(path)),
            false => Err("--connect takes no program".into()),
        };
    }
    if interactive && pid.is_some() {
        return Err("cali-run debug runs a program; for an attached process use --debug-on-fault".into());
    }
    config.debug = debug;
    config.collect =
        collectors(collect.as_deref().unwrap_or(if sample_event.is_some() { "sample" } else { "fcount" }))?;
    if let Some(event) = sample_event {
        config.collect.sample = true;
        config.sample_event = event;
    }
    let target = match (pid, program.is_empty()) {
        (Some(pid), true) => Target::Attach(pid),
        (Some(_), false) => return Err("give either --pid or a program, not both".into()),
        (None, true) => return Err("no program to run (cali-run [OPTIONS] -- PROGRAM [ARGS...])".into()),
        (None, false) => Target::Launch { program: program.remove(0), args: program },
    };
    Ok(Request::Run(Box::new(Invocation { config, target, output, flow_data })))
}

/// A script run (`--script FILE` first): the file and its arguments,
/// without a leading `--`.
fn script(args: &[OsString]) -> Result<Option<Script>, String> {
    let Some(first) = args.first().map(|a| a.to_string_lossy()) else { return Ok(None) };
    let (file, rest) = match first.strip_prefix("--script") {
        Some("") => match args.get(1) {
            Some(file) => (file.clone(), &args[2..]),
            None => return Err("--script needs a file name".into()),
        },
        Some(inline) if inline.starts_with('=') => (OsString::from(&inline[1..]), &args[1..]),
        _ => return Ok(None),
    };
    let rest = match rest.first() {
        Some(dashes) if dashes == "--" => &rest[1..],
        _ => rest,
    };
    Ok(Some(Script { file: file.into(), args: rest.to_vec() }))
}

/// Where the results go, as options or the control file set them.
struct Outputs<'a> {
    cali: &'a mut Option<String>,
    flow_data: &'a mut Option<String>,
}

fn apply_control(
    control: &Control,
    config: &mut Config,
    collect: &mut Option<String>,
    outputs: Outputs,
    program: &mut Vec<OsString>,
) -> Result<(), String> {
    if let Some(app) = &control.application {
        program.push(app.into());
        program.extend(control.arguments.iter().map(OsString::from));
    }
    if let Some(c) = &control.collector {
        *collect = Some(c.clone());
    }
    if let Some(o) = &control.output {
        *outputs.cali = Some(o.clone());
    }
    if let Some(f) = &control.pbo_out {
        *outputs.flow_data = Some(f.clone());
    }
    config.filter.include.extend(control.include.iter().cloned());
    config.filter.exclude.extend(control.exclude.iter().cloned());
    if let Some(d) = control.duration {
        config.duration = Some(Duration::try_from_secs_f64(d).map_err(|_| format!("duration {d} is out of range"))?);
    }
    if let Some(f) = &control.follow {
        set_follow(config, f)?;
    }
    if let Some(s) = control.start {
        config.start = Some(Duration::try_from_secs_f64(s).map_err(|_| format!("start {s} is out of range"))?);
    }
    Ok(())
}

/// The event called `name`, with its name, for `sample`.
fn event(name: String) -> Result<(String, EventCode), String> {
    match caliper_perf::event(&name) {
        Some(code) => Ok((name, code)),
        None => Err(format!(
            "unknown event `{name}` (a perf event name such as task-clock, cycles, instructions, or r<hex>)"
        )),
    }
}

fn patterns(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

fn seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or(format!("`{value}` is not a number of seconds"))
}

/// Sets what `config` follows from a `--follow` list.
pub fn set_follow(config: &mut Config, value: &str) -> Result<(), String> {
    config.follow_fork = false;
    config.follow_exec = false;
    config.exec_programs.clear();
    for what in patterns(value) {
        match what.split_once('=') {
            Some(("exec", program)) => {
                config.follow_exec = true;
                config.exec_programs.push(program.to_string());
            }
            _ => match what.as_str() {
                "fork" => config.follow_fork = true,
                "exec" => config.follow_exec = true,
                "none" => {}
                other => return Err(format!("--follow: unknown `{other}` (fork, exec, exec=PROGRAM or none)")),
            },
        }
    }
    Ok(())
}

/// The collectors of a comma-separated list; HP Caliper's names are
/// accepted too (`fcover`, `func_count`, `arc_count`, `call_graph`).
/// `callgraph` implies `arcs`, whose counts it is built from.
pub fn collectors(list: &str) -> Result<Collect, String> {
    let mut collect = Collect::default();
    for name in patterns(list) {
        match name.as_str() {
            "coverage" | "fcover" => collect.coverage = true,
            "fcount" | "func_count" => collect.fcount = true,
            "arcs" | "arc_count" => collect.arcs = true,
            "callgraph" | "call_graph" => {
                collect.callgraph = true;
                collect.arcs = true;
            }
            "sample" => collect.sample = true,
            other => return Err(format!("unknown collector `{other}` (coverage, fcount, arcs, callgraph, sample)")),
        }
    }
    if collect == Collect::default() {
        return Err("no collector given".into());
    }
    Ok(collect)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Invocation, String> {
        match parse(args.iter().map(OsString::from).collect())? {
            Request::Run(inv) => Ok(*inv),
            Request::Help => Err("help".into()),
            Request::Script(_) => Err("script".into()),
            Request::Connect(_) => Err("connect".into()),
        }
    }

    #[test]
    fn parses_a_launch() {
        let inv =
            run(&["-c", "coverage,fcount", "-o", "out.cali", "--exclude=libc*", "--", "gzip", "-6", "-c"]).unwrap();
        assert!(inv.config.collect.coverage && inv.config.collect.fcount);
        assert_eq!(inv.output.as_deref(), Some("out.cali"));
        assert_eq!(inv.config.filter.exclude, ["libc*"]);
        let Target::Launch { program, args } = inv.target else { panic!("a launch") };
        assert_eq!(program, "gzip");
        assert_eq!(args, ["-6", "-c"]);
        let inv = run(&["ls", "-l"]).unwrap();
        assert!(matches!(inv.target, Target::Launch { .. }));
        assert!(inv.config.follow_fork && inv.config.follow_exec);
        let inv = run(&["--follow", "fork,exec=gzip,exec=*/bin/xz", "ls"]).unwrap();
        assert!(inv.config.follow_fork && inv.config.follow_exec);
        assert_eq!(inv.config.exec_programs, ["gzip", "*/bin/xz"]);
    }

    #[test]
    fn rejects_bad_options() {
        assert!(run(&["--collect", "nothing", "--", "ls"]).is_err());
        assert!(run(&["--bogus", "ls"]).is_err());
        assert!(run(&["--pid", "x"]).is_err());
        assert!(run(&["--pid", "12", "ls"]).is_err());
        assert!(run(&[]).is_err());
        assert!(run(&["--follow", "spoon", "ls"]).is_err());
        assert!(run(&["--duration", "-1", "ls"]).is_err());
        assert!(run(&["--duration", "1e300", "ls"]).is_err());
        assert!(run(&["-o"]).is_err());
    }

    #[test]
    fn reads_a_control_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run.ctl");
        let text = "application = \"gzip\"\narguments = \"-6 -c\"\ncollector = \"arc_count\"\npbo_out = \"flow.dat\"\n";
        std::fs::write(&file, text).unwrap();
        let inv = run(&["--control", file.to_str().unwrap()]).unwrap();
        assert!(inv.config.collect.arcs && !inv.config.collect.fcount);
        assert_eq!(inv.flow_data.as_deref(), Some("flow.dat"));
        assert_eq!(inv.output, None);
        let Target::Launch { program, args } = inv.target else { panic!("a launch") };
        assert_eq!((program.to_str(), args.len()), (Some("gzip"), 2));
        std::fs::write(&file, "application = \"gzip\"\nsample_event = cpu-clock\n").unwrap();
        let inv = run(&["--control", file.to_str().unwrap()]).unwrap();
        assert!(inv.config.collect.sample && inv.config.sample_event.0 == "cpu-clock");
        std::fs::write(&file, "application = \"gzip\"\ncolector = x\n").unwrap();
        let err = run(&["--control", file.to_str().unwrap()]).err().unwrap();
        assert!(err.ends_with("run.ctl:2:1: unknown key `colector`"), "{err}");
    }

    #[test]
    fn a_sample_event_implies_sampling() {
        let inv = run(&["--sample-event", "cycles", "ls"]).unwrap();
        assert!(inv.config.collect.sample && !inv.config.collect.fcount);
        assert_eq!(inv.config.sample_event.0, "cycles");
        let inv = run(&["-c", "fcount", "--sample-event=r00c0", "ls"]).unwrap();
        assert!(inv.config.collect.sample && inv.config.collect.fcount);
        assert_eq!(inv.config.sample_event.1, caliper_perf::event("r00c0").unwrap());
        assert_eq!(run(&["ls"]).unwrap().config.sample_event.0, "task-clock");
        let err = run(&["--sample-event", "spoons", "ls"]).err().unwrap();
        assert!(err.starts_with("unknown event `spoons`"), "{err}");
    }

    #[test]
    fn runs_a_script_with_the_program_as_its_arguments() {
        let parse_script = |args: &[&str]| match parse(args.iter().map(OsString::from).collect())? {
            Request::Script(script) => Ok(script),
            _ => Err("not a script".to_string()),
        };
        let script = parse_script(&["--script", "arcs.py", "--", "./a.out", "-v"]).unwrap();
        assert_eq!(script.file, std::path::Path::new("arcs.py"));
        assert_eq!(script.args, ["./a.out", "-v"]);
        let script = parse_script(&["--script=arcs.py", "--include", "x", "--", "./a.out"]).unwrap();
        assert_eq!(script.args, ["--include", "x", "--", "./a.out"]);
        assert!(parse_script(&["--script"]).is_err());
        assert!(parse_script(&["-c", "arcs", "--script", "arcs.py", "ls"]).is_err());
    }

    #[test]
    fn parses_the_debugger_options() {
        let inv = run(&["debug", "-c", "coverage", "--", "./a.out"]).unwrap();
        assert_eq!(inv.config.debug, Some(DebugConfig { interactive: true, socket: None }));
        assert!(inv.config.collect.coverage);
        let inv = run(&["--debug-on-fault", "./a.out"]).unwrap();
        assert_eq!(inv.config.debug, Some(DebugConfig { interactive: false, socket: None }));
        let inv = run(&["--debug-socket", "/tmp/s", "./a.out"]).unwrap();
        assert_eq!(inv.config.debug.unwrap().socket.as_deref(), Some(std::path::Path::new("/tmp/s")));
        assert!(run(&["./a.out"]).unwrap().config.debug.is_none());
        let connect = parse(["debug", "--connect", "/tmp/s"].iter().map(OsString::from).collect());
        assert!(matches!(connect, Ok(Request::Connect(p)) if p == std::path::Path::new("/tmp/s")));
        assert!(run(&["debug", "--connect", "/tmp/s", "ls"]).is_err());
        assert!(run(&["--connect", "/tmp/s"]).is_err(), "--connect belongs to cali-run debug");
        assert!(run(&["debug", "--pid", "12"]).is_err());
    }

    #[test]
    fn attaches_by_pid() {
        assert!(matches!(run(&["-p", "42"]).unwrap().target, Target::Attach(42)));
    }
}
