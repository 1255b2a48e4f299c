//! `cali-run`: measures an unmodified program (function coverage and call
//! counts) by lazy dynamic instrumentation; see `cali-run --help`.
//!
//! The program's input, output, exit code and fatal signal are its own:
//! `cali-run` exits with the program's code, or dies of the program's
//! signal. Its own problems are one line starting `== CALIPER: `.

use caliper_dbi::cli::{self, Request, USAGE};
use caliper_dbi::engine::{Engine, Exit};
use caliper_dbi::results;
use caliper_dbi::script::{self, Script, ScriptError};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitCode;

/// The exit code for a usage error, and for a program that cannot start
/// (as a shell's 127).
const USAGE_ERROR: u8 = 2;
const CANNOT_RUN: u8 = 127;

fn main() -> ExitCode {
    caliper_dbi::launch::raise_descriptor_limit();
    let invocation = match cli::parse(std::env::args_os().skip(1).collect()) {
        Ok(Request::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Request::Run(invocation)) => invocation,
        Ok(Request::Script(run)) => return run_script(&run),
        Ok(Request::Connect(path)) => {
            return match caliper_dbi::debugger::console::connect(&path) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("== CALIPER: cali-run: cannot talk to the debugger on {}: {e}", path.display());
                    ExitCode::FAILURE
                }
            };
        }
        Err(e) => {
            eprintln!("== CALIPER: cali-run: {e}");
            eprint!("{USAGE}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let collect = invocation.config.collect;
    let engine = match Engine::start(invocation.config, invocation.target) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("== CALIPER: cali-run: {e}");
            return ExitCode::from(CANNOT_RUN);
        }
    };
    let outcome = engine.run_then_exit();
    match &invocation.output {
        Some(path) => {
            let written = std::fs::File::create(path).and_then(|f| results::write_cali(f, &outcome, collect));
            if let Err(e) = written {
                eprintln!("== CALIPER: cali-run: cannot write {path}: {e}");
            }
        }
        None => eprint!("{}", results::text_report(&outcome, collect)),
    }
    if let Some(path) = &invocation.flow_data {
        let written = std::fs::File::create(path).and_then(|f| results::write_flow_data(f, &outcome));
        if let Err(e) = written {
            eprintln!("== CALIPER: cali-run: cannot write {path}: {e}");
        }
    }
    let exit = match outcome.exit {
        Exit::Code(code) => ExitCode::from(code as u8),
        Exit::Signal(sig) => die_of(sig),
        Exit::Detached => ExitCode::SUCCESS,
    };
    // The tool ends here: the kernel takes its memory back at once, where
    // freeing a compiler's 45,000 function records one by one took 3 % of
    // the whole run.
    std::mem::forget(outcome);
    exit
}

/// Runs a script and exits as it did.
fn run_script(run: &Script) -> ExitCode {
    match script::run(run) {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => ExitCode::from(code as u8),
            (None, Some(sig)) => die_of(sig),
            (None, None) => ExitCode::FAILURE,
        },
        Err(e) => {
            eprintln!("== CALIPER: cali-run: {e}");
            ExitCode::from(match e {
                ScriptError::Unreadable(..) => USAGE_ERROR,
                _ => CANNOT_RUN,
            })
        }
    }
}

/// Ends the tool with signal `sig`, as the program ended, without a core
/// file of the tool's own.
fn die_of(sig: i32) -> ExitCode {
    // SAFETY: plain system calls; the tool has no state left to protect.
    unsafe {
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    ExitCode::from(128 + sig as u8)
}
