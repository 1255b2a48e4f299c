//! Lazy dynamic binary instrumentation of unmodified x86-64 Linux
//! programs, in the model of HP Caliper: the tool controls the program
//! through ptrace, finds its functions, puts an `int3` at each entry, and
//! on the first hit replaces it with a jump to a trampoline that counts
//! the call and runs the relocated entry instructions. Only code that runs
//! is instrumented, so the cost follows what executes.
//!
//! Layers, each using only those before it: [`ptrace`], [`memory`] and
//! [`maps`] (process control); [`discover`] (functions of an ELF file,
//! kept between runs by [`module_cache`]),
//! [`filter`] (which to instrument) and [`functions`] (what is known of
//! each); [`relocate`] (trampolines), [`arc_table`] (the table the arc
//! trampolines count call sites in), [`detour`] (entries reached by a
//! short jump through padding), [`inject`] (system calls run in the
//! tracee), [`launch`] (starting a program seized) and [`counters`] (the
//! shared counter file); [`image`] (one address space's modules, probes
//! and trampoline regions); [`sample`] (perf_event_open sampling);
//! [`engine`] (the event loop and the collectors); [`callgraph`] (the
//! call graph of the arcs) and [`results`] (the text report, the `.cali`
//! records and the flow-data file); [`control`] and [`cli`] (the control
//! file and the command line of `cali-run`); [`capi`] (the C-callable API
//! of `libcaliper-dbi.so`, for scripts) and [`script`] (`cali-run
//! --script`); [`debugger`] (`cdb`, the debugger that lives with the
//! engine; its stops are the engine's `debug` module).

pub mod arc_table;
pub mod by_place;
pub mod callgraph;
pub mod capi;
pub mod chunked;
pub mod cli;
pub mod control;
pub mod counters;
pub mod debugger;
pub mod detour;
pub mod discover;
pub mod engine;
pub mod filter;
pub mod functions;
pub mod image;
pub mod inject;
pub mod launch;
pub mod mapped;
pub mod maps;
pub mod memory;
pub mod module_cache;
pub mod ptrace;
pub mod relocate;
pub mod results;
pub mod sample;
pub mod script;
pub mod text_source;
