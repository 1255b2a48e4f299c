//! `cdb`, the debugger that lives with the engine: the engine owns the
//! breakpoints of a measured program (so another debugger cannot attach),
//! and `cdb` stops it at breakpoints of the user's, at unexpected signals
//! and at instrumentation failures, and shows its state the way the
//! instrumentation left it (see [`crate::engine`]'s `debug` module for the
//! stops and the commands).
//!
//! This module holds what needs no process: the command parser, the
//! console (a terminal or a Unix domain socket), disassembly and the
//! side-by-side listing, and the unwinder.

pub mod command;
pub mod console;
pub mod disasm;
pub mod unwind;

use std::path::PathBuf;

/// How `cdb` is used in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DebugConfig {
    /// `cali-run debug`: stopped at the program's entry, and at SIGINT.
    /// Otherwise (`--debug-on-fault`) only at a fatal signal or an
    /// instrumentation failure.
    pub interactive: bool,
    /// Serve the commands on this Unix domain socket instead of the terminal.
    pub socket: Option<PathBuf>,
}
