//! The engine's C-callable API (`libcaliper-dbi.so`, declared in
//! `include/caliper/cali-dbi.h`), over which the Python package
//! `caliper.dbi` builds its object model: a process to launch or attach
//! to, its context (patterns, start and duration, fork and exec), its
//! collectors, one callback for the events, a run, and the results.
//!
//! Every entry point catches panics (none may unwind into the host) and
//! returns an error code, with a one-line message for
//! [`cali_dbi_last_error`]; pointers are checked for NULL.

#![allow(non_camel_case_types)] // the C ABI's type names

mod results;
mod signals;

use crate::cli;
use crate::engine::{Action, Collect, Config, Engine, Event, Exit, Observer, Target};
use crate::filter::{AddressRange, Filter};
use std::cell::RefCell;
use std::ffi::{CStr, CString, OsString, c_char, c_int, c_uint, c_void};
use std::os::unix::ffi::OsStrExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use results::*;

/// Success.
pub const CALI_DBI_OK: c_int = 0;
/// A bad argument: NULL, an unknown name, a malformed pattern or value.
pub const CALI_DBI_EINVAL: c_int = -1;
/// The program could not be started, or the process attached to.
pub const CALI_DBI_ESTART: c_int = -2;
/// A file could not be written.
pub const CALI_DBI_EIO: c_int = -3;
/// The call does not fit the process's state (configured after its run,
/// or run twice).
pub const CALI_DBI_ESTATE: c_int = -4;
/// An internal error of the library (caught; the host goes on).
pub const CALI_DBI_EINTERNAL: c_int = -5;

/// Event kinds of [`cali_dbi_event`].
pub const CALI_DBI_EVENT_EXIT: c_int = 1;
pub const CALI_DBI_EVENT_LIBRARY_LOAD: c_int = 2;
pub const CALI_DBI_EVENT_TIMER: c_int = 3;
pub const CALI_DBI_EVENT_SIGNAL: c_int = 4;

/// What an event callback returns: go on, or stop measuring (probes out,
/// processes let go; a launched program is waited for).
pub const CALI_DBI_CONTINUE: c_int = 0;
pub const CALI_DBI_STOP: c_int = 1;

/// An error: its code and message.
struct Error(c_int, String);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// Runs an entry point's body: its error becomes the return code and the
/// last error; a panic is caught and reported as an internal error.
fn guard(entry: &str, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CALI_DBI_OK,
        Ok(Err(Error(code, message))) => {
            set_last_error(&message);
            code
        }
        Err(_) => {
            set_last_error(&format!("{entry}: internal error"));
            CALI_DBI_EINTERNAL
        }
    }
}

/// A bad-argument error.
fn invalid(message: impl Into<String>) -> Error {
    Error(CALI_DBI_EINVAL, message.into())
}

/// A C string argument (NULL is an error naming `what`).
///
/// # Safety
/// `s` is NULL or NUL-terminated.
unsafe fn text<'a>(s: *const c_char, what: &str) -> Result<&'a CStr, Error> {
    if s.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    Ok(unsafe { CStr::from_ptr(s) })
}

/// A pointer argument as a reference (NULL is an error).
///
/// # Safety
/// `p` is NULL or points to a live `T`.
unsafe fn object<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Error> {
    // SAFETY: per the caller.
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} is NULL")))
}

/// The last error of this thread's calls, as one line (empty if none).
/// Valid until the next failing call of this thread.
#[unsafe(no_mangle)]
pub extern "C" fn cali_dbi_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// An event reported to the callback.
#[repr(C)]
pub struct cali_dbi_event {
    /// One of `CALI_DBI_EVENT_*`.
    pub kind: c_int,
    /// The process (0 for a timer).
    pub pid: c_int,
    /// The thread a signal is delivered to (0 otherwise).
    pub tid: c_int,
    /// The exit code of a process that exited (-1 if it was killed or let go).
    pub status: c_int,
    /// The signal delivered, or that killed the process (0 otherwise).
    pub signal: c_int,
    /// The library loaded (NULL otherwise).
    pub path: *const c_char,
}

/// The engine during a callback, to read the results so far.
pub struct cali_dbi_live {
    engine: *const Engine,
}

/// The event callback: `user` as registered, the event, and the engine
/// (valid during the call). Returns `CALI_DBI_CONTINUE` or `CALI_DBI_STOP`.
pub type cali_dbi_callback =
    Option<unsafe extern "C" fn(user: *mut c_void, event: *const cali_dbi_event, live: *const cali_dbi_live) -> c_int>;

/// A process to measure: what to run or attach to and how, until its run.
pub struct cali_dbi_process {
    config: Config,
    /// Taken by the run: a process runs once.
    target: Option<Target>,
    callback: Option<(unsafe extern "C" fn(*mut c_void, *const cali_dbi_event, *const cali_dbi_live) -> c_int, usize)>,
    timer: Option<Duration>,
}

impl cali_dbi_process {
    fn new(target: Target) -> *mut cali_dbi_process {
        let config = Config { follow_fork: true, follow_exec: true, ..Config::default() };
        Box::into_raw(Box::new(cali_dbi_process { config, target: Some(target), callback: None, timer: None }))
    }

    /// The configuration, if the process has not run yet.
    fn config(&mut self) -> Result<&mut Config, Error> {
        match self.target {
            Some(_) => Ok(&mut self.config),
            None => Err(Error(CALI_DBI_ESTATE, "the process has already run".into())),
        }
    }
}

/// A process that will run `argv[0]` (searched in `PATH`) with the rest
/// of `argv`; NULL (and the last error) if `argv` is empty.
///
/// # Safety
/// `argv` points to `argc` NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_launch(argc: c_int, argv: *const *const c_char) -> *mut cali_dbi_process {
    let mut process = std::ptr::null_mut();
    guard("cali_dbi_launch", || {
        if argv.is_null() || argc < 1 {
            return Err(invalid("no program to run"));
        }
        // SAFETY: argc strings per the caller.
        let argv = unsafe { std::slice::from_raw_parts(argv, argc as usize) };
        let mut words = Vec::with_capacity(argv.len());
        for &arg in argv {
            // SAFETY: NUL-terminated per the caller.
            words.push(OsString::from(std::ffi::OsStr::from_bytes(unsafe { text(arg, "an argument")? }.to_bytes())));
        }
        if words[0].is_empty() {
            return Err(invalid("the program name is empty"));
        }
        let program = words.remove(0);
        process = cali_dbi_process::new(Target::Launch { program, args: words });
        Ok(())
    });
    process
}

/// A process that will be attached to (all its threads) at its run.
#[unsafe(no_mangle)]
pub extern "C" fn cali_dbi_attach(pid: c_int) -> *mut cali_dbi_process {
    let mut process = std::ptr::null_mut();
    guard("cali_dbi_attach", || {
        if pid <= 0 {
            return Err(invalid(format!("{pid} is not a process id")));
        }
        process = cali_dbi_process::new(Target::Attach(pid));
        Ok(())
    });
    process
}

/// Frees a process (and nothing else: results live on).
///
/// # Safety
/// `process` is NULL or from `cali_dbi_launch`/`cali_dbi_attach`, not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_process_free(process: *mut cali_dbi_process) {
    guard("cali_dbi_process_free", || {
        if !process.is_null() {
            // SAFETY: from Box::into_raw, per the caller.
            drop(unsafe { Box::from_raw(process) });
        }
        Ok(())
    });
}

/// Applies `change` to the configuration of `process` (before its run).
///
/// # Safety
/// `process` is NULL or live.
unsafe fn configure(
    entry: &str,
    process: *mut cali_dbi_process,
    change: impl FnOnce(&mut Config) -> Result<(), Error>,
) -> c_int {
    guard(entry, || {
        // SAFETY: per the caller.
        let process = unsafe { object(process, "the process") }?;
        change(process.config()?)
    })
}

/// Adds collectors: a comma-separated list of `coverage`, `fcount`,
/// `arcs`, `sample` (or HP Caliper's `fcover`, `func_count`, `arc_count`).
///
/// # Safety
/// `process` is NULL or live; `list` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_collect(process: *mut cali_dbi_process, list: *const c_char) -> c_int {
    // SAFETY: per the caller.
    unsafe {
        configure("cali_dbi_collect", process, |config| {
            let added = cli::collectors(&text(list, "the collector list")?.to_string_lossy()).map_err(invalid)?;
            let c = &mut config.collect;
            c.coverage |= added.coverage;
            c.fcount |= added.fcount;
            c.arcs |= added.arcs;
            c.sample |= added.sample;
            Ok(())
        })
    }
}

/// Checks a module or function pattern: not empty, one pattern (no comma,
/// which separates patterns on the command line), no white space at
/// either end.
fn pattern(text: &CStr) -> Result<String, Error> {
    let pattern = text.to_str().map_err(|_| invalid("a pattern is not UTF-8"))?;
    if pattern.is_empty() || pattern.contains(',') || pattern.trim() != pattern {
        return Err(invalid(format!(
            "bad pattern `{pattern}`: one module or function name, `*` wildcards, no commas or surrounding spaces"
        )));
    }
    Ok(pattern.to_string())
}

/// Adds `pattern` to the list of the filter that `list` picks.
///
/// # Safety
/// `process` is NULL or live; `pattern` NULL or NUL-terminated.
unsafe fn add_pattern(
    entry: &str,
    process: *mut cali_dbi_process,
    pattern: *const c_char,
    list: fn(&mut Filter) -> &mut Vec<String>,
) -> c_int {
    // SAFETY: per the caller.
    unsafe {
        configure(entry, process, |config| {
            list(&mut config.filter).push(self::pattern(text(pattern, "the pattern")?)?);
            Ok(())
        })
    }
}

/// Instruments only modules (file name or path) or functions matching
/// one of the include patterns (`*` wildcards).
///
/// # Safety
/// `process` is NULL or live; `pattern` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_include(process: *mut cali_dbi_process, pattern: *const c_char) -> c_int {
    // SAFETY: per the caller.
    unsafe { add_pattern("cali_dbi_include", process, pattern, |f| &mut f.include) }
}

/// Never instruments modules or functions matching the pattern.
///
/// # Safety
/// `process` is NULL or live; `pattern` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_exclude(process: *mut cali_dbi_process, pattern: *const c_char) -> c_int {
    // SAFETY: per the caller.
    unsafe { add_pattern("cali_dbi_exclude", process, pattern, |f| &mut f.exclude) }
}

/// Instruments only functions whose entry (its address in the module
/// file) is in `low..high` of a module matching `module` (file name or
/// path, `*` wildcards), or in another range given so.
///
/// # Safety
/// `process` is NULL or live; `module` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_address_range(
    process: *mut cali_dbi_process,
    module: *const c_char,
    low: u64,
    high: u64,
) -> c_int {
    // SAFETY: per the caller.
    unsafe {
        configure("cali_dbi_address_range", process, |config| {
            let module = pattern(text(module, "the module pattern")?)?;
            if low >= high {
                return Err(invalid(format!("bad address range {low:#x}-{high:#x} of {module}: empty")));
            }
            config.filter.ranges.push(AddressRange { module, low, high });
            Ok(())
        })
    }
}

/// What is followed: as `cali-run --follow` (`fork`, `exec`,
/// `exec=PROGRAM`, comma-separated, or `none`). Both by default.
///
/// # Safety
/// `process` is NULL or live; `list` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_follow(process: *mut cali_dbi_process, list: *const c_char) -> c_int {
    // SAFETY: per the caller.
    unsafe {
        configure("cali_dbi_follow", process, |config| {
            cli::set_follow(config, &text(list, "the follow list")?.to_string_lossy()).map_err(invalid)
        })
    }
}

/// A positive number of seconds as a duration.
fn seconds(value: f64, what: &str) -> Result<Duration, Error> {
    Some(value)
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| invalid(format!("{what} `{value}` is not a positive number of seconds")))
}

/// Measures from `start` seconds after the run begins, for `duration`
/// seconds from then; 0 leaves either unset (at once, to the end).
///
/// # Safety
/// `process` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_window(process: *mut cali_dbi_process, start: f64, duration: f64) -> c_int {
    // SAFETY: per the caller.
    unsafe {
        configure("cali_dbi_window", process, |config| {
            config.start = if start == 0.0 { None } else { Some(seconds(start, "start")?) };
            config.duration = if duration == 0.0 { None } else { Some(seconds(duration, "duration")?) };
            Ok(())
        })
    }
}

/// Reports the events to `callback` (with `user`), and a timer event
/// every `timer_ms` milliseconds (0: none). One callback per process;
/// a second call replaces the first.
///
/// # Safety
/// `process` is NULL or live; `callback` callable with `user` until the
/// run returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_on_events(
    process: *mut cali_dbi_process,
    callback: cali_dbi_callback,
    user: *mut c_void,
    timer_ms: c_uint,
) -> c_int {
    guard("cali_dbi_on_events", || {
        // SAFETY: per the caller.
        let process = unsafe { object(process, "the process") }?;
        process.config()?;
        let callback = callback.ok_or_else(|| invalid("the callback is NULL"))?;
        process.callback = Some((callback, user as usize));
        process.timer = (timer_ms > 0).then(|| Duration::from_millis(timer_ms.into()));
        Ok(())
    })
}

/// Starts (or attaches to) the process, measures it to the end (its exit,
/// or a stop) with the collectors chosen (`fcount` if none), and gives the results in `*results` (to free with
/// `cali_dbi_results_free`). The callback is called on this thread.
/// The tool's handlers of SIGINT, SIGQUIT, SIGTERM, SIGHUP and SIGALRM
/// are the engine's during the run and restored after it.
///
/// # Safety
/// `process` is NULL or live; `results` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_run(process: *mut cali_dbi_process, results: *mut *mut cali_dbi_results) -> c_int {
    guard("cali_dbi_run", || {
        // SAFETY: per the caller.
        let process = unsafe { object(process, "the process") }?;
        // SAFETY: per the caller.
        let results = unsafe { object(results, "the results pointer") }?;
        process.config()?;
        let _only_run = OnlyRun::claim()?;
        let target = process.target.take().expect("checked by config()");
        let mut config = std::mem::take(&mut process.config);
        if config.collect == Collect::default() {
            config.collect.fcount = true;
        }
        let collect = config.collect;
        let saved = signals::Saved::now();
        let mut engine = Engine::start(config, target).map_err(|e| Error(CALI_DBI_ESTART, e.to_string()))?;
        if let Some((callback, user)) = process.callback {
            let observer = Box::new(CallbackObserver { callback, user: user as *mut c_void, path: CString::default() });
            engine.observe(observer, process.timer).map_err(|e| Error(CALI_DBI_ESTART, format!("timer: {e}")))?;
        }
        let outcome = engine.run();
        drop(saved);
        *results = cali_dbi_results::new(outcome, collect);
        Ok(())
    })
}

/// Whether a run is in progress in this process.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// The claim of the one run a process may have at a time: the engine
/// waits for any child of the process and owns the tool's signals.
struct OnlyRun;

impl OnlyRun {
    fn claim() -> Result<OnlyRun, Error> {
        match RUNNING.swap(true, Ordering::Acquire) {
            false => Ok(OnlyRun),
            true => Err(Error(CALI_DBI_ESTATE, "another run is in progress in this process (one at a time)".into())),
        }
    }
}

impl Drop for OnlyRun {
    fn drop(&mut self) {
        RUNNING.store(false, Ordering::Release);
    }
}

/// The results so far, during a callback (to free with
/// `cali_dbi_results_free`); NULL if `live` is NULL.
///
/// # Safety
/// `live` is NULL or the one passed to the running callback.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_dbi_live_results(
    live: *const cali_dbi_live,
    results: *mut *mut cali_dbi_results,
) -> c_int {
    guard("cali_dbi_live_results", || {
        // SAFETY: per the caller: a live engine during the callback.
        let engine = unsafe { live.as_ref().and_then(|l| l.engine.as_ref()) }.ok_or_else(|| invalid("live is NULL"))?;
        // SAFETY: per the caller.
        let results = unsafe { object(results, "the results pointer") }?;
        *results = cali_dbi_results::new(engine.results_so_far(), engine.collect());
        Ok(())
    })
}

/// Passes the engine's events to the C callback.
struct CallbackObserver {
    callback: unsafe extern "C" fn(*mut c_void, *const cali_dbi_event, *const cali_dbi_live) -> c_int,
    user: *mut c_void,
    /// The current event's library path (kept until the next event).
    path: CString,
}

impl Observer for CallbackObserver {
    fn notify(&mut self, event: &Event, engine: &Engine) -> Action {
        let mut raw = cali_dbi_event { kind: 0, pid: 0, tid: 0, status: -1, signal: 0, path: std::ptr::null() };
        match *event {
            Event::Exit { pid, exit } => {
                (raw.kind, raw.pid) = (CALI_DBI_EVENT_EXIT, pid);
                match exit {
                    Exit::Code(code) => raw.status = code,
                    Exit::Signal(signal) => raw.signal = signal,
                    Exit::Detached => {}
                }
            }
            Event::LibraryLoad { pid, path } => {
                self.path = CString::new(path).unwrap_or_default();
                (raw.kind, raw.pid, raw.path) = (CALI_DBI_EVENT_LIBRARY_LOAD, pid, self.path.as_ptr());
            }
            Event::Timer => raw.kind = CALI_DBI_EVENT_TIMER,
            Event::Signal { pid, tid, signal } => {
                (raw.kind, raw.pid, raw.tid, raw.signal) = (CALI_DBI_EVENT_SIGNAL, pid, tid, signal);
            }
        }
        let live = cali_dbi_live { engine };
        // SAFETY: the callback and its user data as registered; the event
        // and the engine outlive the call.
        match unsafe { (self.callback)(self.user, &raw, &live) } {
            CALI_DBI_STOP => Action::Stop,
            _ => Action::Continue,
        }
    }
}
