//! The results of a run (or of a run so far, read in a callback) as C
//! sees them: functions, arcs and sampled stacks by index, with their
//! names as C strings that live as long as the results, and writing them
//! through [`crate::results`].

use super::{CALI_DBI_EIO, Error, guard, invalid, object, text};
use crate::cli;
use crate::engine::{Collect, Exit, Outcome};
use crate::results;
use std::ffi::{CString, c_char, c_int};
use std::io::Write;

/// The file formats of [`cali_dbi_results_write`].
enum Format {
    Cali,
    Flow,
    Text,
}

/// One function.
#[repr(C)]
pub struct cali_dbi_function {
    /// The module's path.
    pub module: *const c_char,
    pub name: *const c_char,
    /// The entry's address in the module file.
    pub address: u64,
    /// Calls counted (with `fcount` or `arcs`).
    pub count: u64,
    /// Whether it was called at all.
    pub covered: c_int,
    /// How it was instrumented (`trampoline`, `breakpoint (why)`, ...).
    pub instrumentation: *const c_char,
}

/// One call arc: the calls from one call site to one function.
#[repr(C)]
pub struct cali_dbi_arc {
    pub caller_module: *const c_char,
    pub caller: *const c_char,
    /// The call instruction's address in the caller's module file (0 for
    /// the calls from sites past a trampoline's limit).
    pub callsite: u64,
    pub callee_module: *const c_char,
    pub callee: *const c_char,
    pub callee_address: u64,
    pub count: u64,
}

/// One sampled call stack.
#[repr(C)]
pub struct cali_dbi_stack {
    /// The frames, outermost first, separated by `;`.
    pub frames: *const c_char,
    pub samples: u64,
}

/// The strings of one function, arc or stack.
struct Names(Vec<CString>);

impl Names {
    fn of<'a>(texts: impl IntoIterator<Item = &'a str>) -> Names {
        Names(texts.into_iter().map(|t| CString::new(t.replace('\0', " ")).unwrap_or_default()).collect())
    }

    fn get(&self, i: usize) -> *const c_char {
        self.0[i].as_ptr()
    }
}

/// The results, with the C strings of their names.
pub struct cali_dbi_results {
    outcome: Outcome,
    collect: Collect,
    functions: Vec<Names>,
    arcs: Vec<Names>,
    stacks: Vec<(Names, u64)>,
}

impl cali_dbi_results {
    pub(super) fn new(outcome: Outcome, collect: Collect) -> *mut cali_dbi_results {
        let functions = outcome
            .functions
            .records
            .iter()
            .map(|r| Names::of([&*r.module, r.name(), &results::instrumentation(r)]))
            .collect();
        let arcs = outcome
            .arcs
            .records
            .iter()
            .map(|a| {
                let callee = &outcome.functions.records[a.callee];
                Names::of([&**outcome.arcs.caller_module(a), outcome.arcs.caller(a), &*callee.module, callee.name()])
            })
            .collect();
        let stacks = results::sorted_stacks(&outcome)
            .into_iter()
            .map(|(frames, samples)| (Names::of([frames.join(";").as_str()]), samples))
            .collect();
        Box::into_raw(Box::new(cali_dbi_results { outcome, collect, functions, arcs, stacks }))
    }
}

/// Frees results.
///
/// # Safety
/// `results` is NULL or from `cali_dbi_run`/`cali_dbi_live_results`, not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_free(results: *mut cali_dbi_results) {
    guard("cali_dbi_results_free", || {
        if !results.is_null() {
            // SAFETY: from Box::into_raw, per the caller.
            drop(unsafe { Box::from_raw(results) });
        }
        Ok(())
    });
}

/// How the main process ended: `*status` its exit code (-1 if not exited)
/// and `*signal` the signal that killed it (0 if none); both -1 and 0
/// when it was let go running.
///
/// # Safety
/// `results` NULL or live; `status` and `signal` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_exit(
    results: *mut cali_dbi_results,
    status: *mut c_int,
    signal: *mut c_int,
) -> c_int {
    guard("cali_dbi_results_exit", || {
        // SAFETY: per the caller.
        let results = unsafe { object(results, "the results") }?;
        let (code, sig) = match results.outcome.exit {
            Exit::Code(code) => (code, 0),
            Exit::Signal(sig) => (-1, sig),
            Exit::Detached => (-1, 0),
        };
        // SAFETY: per the caller.
        unsafe {
            *object(status, "status")? = code;
            *object(signal, "signal")? = sig;
        }
        Ok(())
    })
}

/// The numbers of functions, arcs and sampled stacks, and of samples lost.
///
/// # Safety
/// `results` NULL or live; the others NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_sizes(
    results: *mut cali_dbi_results,
    functions: *mut usize,
    arcs: *mut usize,
    stacks: *mut usize,
    samples_lost: *mut u64,
) -> c_int {
    guard("cali_dbi_results_sizes", || {
        // SAFETY: per the caller.
        let results = unsafe { object(results, "the results") }?;
        // SAFETY: per the caller.
        unsafe {
            *object(functions, "functions")? = results.functions.len();
            *object(arcs, "arcs")? = results.arcs.len();
            *object(stacks, "stacks")? = results.stacks.len();
            *object(samples_lost, "samples_lost")? = results.outcome.samples_lost;
        }
        Ok(())
    })
}

/// Function `i` (`0 <= i <` the number of functions); its strings live
/// as long as the results.
///
/// # Safety
/// `results` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_function(
    results: *mut cali_dbi_results,
    i: usize,
    out: *mut cali_dbi_function,
) -> c_int {
    guard("cali_dbi_results_function", || {
        // SAFETY: per the caller.
        let (results, out) = unsafe { (object(results, "the results")?, object(out, "out")?) };
        let names = results.functions.get(i).ok_or_else(|| invalid(format!("no function {i}")))?;
        let functions = &results.outcome.functions;
        let record = &functions.records[i];
        *out = cali_dbi_function {
            module: names.get(0),
            name: names.get(1),
            address: record.address(),
            count: functions.calls(i, &results.outcome.counters),
            covered: record.covered.into(),
            instrumentation: names.get(2),
        };
        Ok(())
    })
}

/// Arc `i`.
///
/// # Safety
/// `results` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_arc(
    results: *mut cali_dbi_results,
    i: usize,
    out: *mut cali_dbi_arc,
) -> c_int {
    guard("cali_dbi_results_arc", || {
        // SAFETY: per the caller.
        let (results, out) = unsafe { (object(results, "the results")?, object(out, "out")?) };
        let names = results.arcs.get(i).ok_or_else(|| invalid(format!("no arc {i}")))?;
        let arcs = &results.outcome.arcs;
        let arc = &arcs.records[i];
        *out = cali_dbi_arc {
            caller_module: names.get(0),
            caller: names.get(1),
            callsite: arc.callsite,
            callee_module: names.get(2),
            callee: names.get(3),
            callee_address: results.outcome.functions.records[arc.callee].address(),
            count: arcs.calls(i),
        };
        Ok(())
    })
}

/// Sampled stack `i` (most samples first).
///
/// # Safety
/// `results` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_stack(
    results: *mut cali_dbi_results,
    i: usize,
    out: *mut cali_dbi_stack,
) -> c_int {
    guard("cali_dbi_results_stack", || {
        // SAFETY: per the caller.
        let (results, out) = unsafe { (object(results, "the results")?, object(out, "out")?) };
        let (names, samples) = results.stacks.get(i).ok_or_else(|| invalid(format!("no stack {i}")))?;
        *out = cali_dbi_stack { frames: names.get(0), samples: *samples };
        Ok(())
    })
}

/// Writes the results to `path` as `format`: `cali` (the records of
/// `cali-run -o`), `flow` (the flow-data file of `--flow-data`) or `text`
/// (the report `cali-run` prints). `collectors` (comma-separated; NULL
/// for those of the run) chooses what the `.cali` records and the text
/// report show.
///
/// # Safety
/// `results` NULL or live; the strings NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_results_write(
    results: *mut cali_dbi_results,
    path: *const c_char,
    format: *const c_char,
    collectors: *const c_char,
) -> c_int {
    guard("cali_dbi_results_write", || {
        // SAFETY: per the caller.
        let results = unsafe { object(results, "the results") }?;
        // SAFETY: per the caller.
        let (path, format) = unsafe { (text(path, "the path")?, text(format, "the format")?) };
        let collect = match collectors.is_null() {
            true => results.collect,
            // SAFETY: per the caller.
            false => {
                cli::collectors(&unsafe { text(collectors, "the collectors") }?.to_string_lossy()).map_err(invalid)?
            }
        };
        let path = path.to_string_lossy();
        let format = match format.to_bytes() {
            b"cali" => Format::Cali,
            b"flow" => Format::Flow,
            b"text" => Format::Text,
            other => {
                let other = String::from_utf8_lossy(other);
                return Err(invalid(format!("unknown format `{other}` (cali, flow, text)")));
            }
        };
        let outcome = &results.outcome;
        let cannot = |e: std::io::Error| Error(CALI_DBI_EIO, format!("cannot write {path}: {e}"));
        let mut file = std::fs::File::create(&*path).map_err(cannot)?;
        match format {
            Format::Cali => results::write_cali(file, outcome, collect),
            Format::Flow => results::write_flow_data(file, outcome),
            Format::Text => file.write_all(results::text_report(outcome, collect).as_bytes()),
        }
        .map_err(cannot)
    })
}
