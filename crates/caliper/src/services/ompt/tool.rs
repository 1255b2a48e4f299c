//! The OpenMP tools interface (OMPT, OpenMP 5.0 §4), as LLVM's
//! `omp-tools.h` declares it: the types an OpenMP runtime and a tool
//! exchange, [`start_tool`] (what libcaliper's `ompt_start_tool` answers),
//! and the callbacks registered through the runtime's `ompt_set_callback`.
//!
//! Every callback runs the service's [`Handlers`](super::Handlers) under
//! `catch_unwind`: a panic is logged, never unwound into the OpenMP
//! runtime.

use super::{Handlers, Inquiry, Team};
use crate::log;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

/// `ompt_data_t`: a word the runtime keeps for the tool per thread,
/// parallel region and task.
#[repr(C)]
pub union OmptData {
    pub value: u64,
    pub ptr: *mut c_void,
}

/// `ompt_interface_fn_t`: an entry point of the runtime, cast to its type.
type InterfaceFn = Option<unsafe extern "C" fn()>;
/// `ompt_function_lookup_t`.
type Lookup = Option<unsafe extern "C" fn(name: *const c_char) -> InterfaceFn>;
/// `ompt_initialize_t`.
type Initialize = unsafe extern "C" fn(lookup: Lookup, initial_device_num: c_int, tool_data: *mut OmptData) -> c_int;
/// `ompt_finalize_t`.
type Finalize = unsafe extern "C" fn(tool_data: *mut OmptData);
/// `ompt_set_callback_t`: returns an `ompt_set_result_t`.
type SetCallback = unsafe extern "C" fn(event: c_int, callback: InterfaceFn) -> c_int;
/// `ompt_get_proc_id_t`.
pub(super) type GetProcId = unsafe extern "C" fn() -> c_int;
/// `ompt_get_state_t`: the calling thread's `ompt_state_t`, and its wait
/// id where the pointer is not NULL. Async-signal-safe, by OMPT.
pub(super) type GetState = unsafe extern "C" fn(wait_id: *mut u64) -> c_int;

/// `ompt_start_tool_result_t`: the tool's initializer and finalizer.
#[repr(C)]
pub struct StartToolResult {
    initialize: Initialize,
    finalize: Finalize,
    tool_data: OmptData,
}

/// `ompt_callbacks_t` values of the events registered here.
mod event {
    pub const THREAD_BEGIN: i32 = 1;
    pub const PARALLEL_BEGIN: i32 = 3;
    pub const PARALLEL_END: i32 = 4;
    pub const IMPLICIT_TASK: i32 = 7;
    pub const WORK: i32 = 20;
    /// `ompt_callback_masked` in OpenMP 5.1, the same event.
    pub const MASTER: i32 = 21;
    pub const SYNC_REGION: i32 = 23;
}

/// `ompt_scope_endpoint_t`: `ompt_scope_begin`; `ompt_scope_end` is 2 and
/// OpenMP 5.1's `ompt_scope_beginend` 3 (never for the events here).
const SCOPE_BEGIN: c_int = 1;
/// `ompt_sync_region_barrier_implicit`.
const SYNC_BARRIER_IMPLICIT: c_int = 2;
/// `ompt_sync_region_barrier_implicit_parallel` (OpenMP 5.1).
const SYNC_BARRIER_IMPLICIT_PARALLEL: c_int = 9;
/// `ompt_task_initial`, of `ompt_task_flag_t`.
const TASK_INITIAL: c_int = 1;
/// `ompt_set_never`: the smallest `ompt_set_result_t` that is not an
/// error. Above it the callback is made at least sometimes.
const SET_NEVER: c_int = 1;

/// Whether an OpenMP runtime has asked for a tool, and the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tool {
    /// No OpenMP runtime called `ompt_start_tool` (yet): GCC's libgomp
    /// never does, LLVM's libomp does when it initializes.
    NotAsked,
    /// The runtime asked before any channel enabled `ompt`: no tool.
    Declined,
    /// The callbacks are (or are being) registered.
    Started,
}

static TOOL: AtomicU8 = AtomicU8::new(Tool::NotAsked as u8);

/// What OpenMP runtime asked for a tool so far.
pub(super) fn tool() -> Tool {
    match TOOL.load(Ordering::Acquire) {
        x if x == Tool::Started as u8 => Tool::Started,
        x if x == Tool::Declined as u8 => Tool::Declined,
        _ => Tool::NotAsked,
    }
}

/// The answer to `ompt_start_tool`: the tool's entry points when `wanted`,
/// else NULL (the OpenMP runtime then runs without a tool).
pub(super) fn start(wanted: bool) -> *mut StartToolResult {
    if !wanted {
        TOOL.store(Tool::Declined as u8, Ordering::Release);
        return std::ptr::null_mut();
    }
    TOOL.store(Tool::Started as u8, Ordering::Release);
    // The runtime keeps the pointer for the rest of the process and asks
    // once: the result is leaked on purpose.
    Box::into_raw(Box::new(StartToolResult { initialize, finalize, tool_data: OmptData { value: 0 } }))
}

/// Runs a callback's body; a panic is caught and logged on one line.
fn contained(name: &str, body: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
        log::error(format_args!("ompt: {name}: internal error, event ignored"));
    }
}

/// A callback as the `ompt_callback_t` that `ompt_set_callback` takes.
macro_rules! callback {
    ($f:ident: $ty:ty) => {
        std::mem::transmute::<$ty, unsafe extern "C" fn()>($f as $ty)
    };
}

/// `ompt_initialize_t`: finds the runtime's entry points and registers the
/// callbacks. Returns non-zero to keep the tool.
unsafe extern "C" fn initialize(lookup: Lookup, _device: c_int, _data: *mut OmptData) -> c_int {
    let mut ok = 0;
    contained("initialize", || {
        let Some(lookup) = lookup else { return };
        // SAFETY: the runtime's lookup takes a NUL-terminated name and
        // returns the entry point of that name, of its OMPT type, or NULL.
        let find = |name: &[u8]| unsafe { lookup(name.as_ptr().cast()) };
        let Some(set_callback) = find(b"ompt_set_callback\0") else {
            log::error(format_args!("ompt: the OpenMP runtime has no ompt_set_callback; OpenMP regions not measured"));
            return;
        };
        // SAFETY: the entry points are of the types OMPT gives their names.
        let (set_callback, inquiry) = unsafe {
            (
                std::mem::transmute::<unsafe extern "C" fn(), SetCallback>(set_callback),
                Inquiry {
                    proc_id: find(b"ompt_get_proc_id\0")
                        .map(|f| std::mem::transmute::<unsafe extern "C" fn(), GetProcId>(f)),
                    state: find(b"ompt_get_state\0")
                        .map(|f| std::mem::transmute::<unsafe extern "C" fn(), GetState>(f)),
                },
            )
        };
        super::connect(inquiry);
        // SAFETY: each callback has the type OMPT gives its event.
        let callbacks: [(i32, &str, unsafe extern "C" fn()); 7] = unsafe {
            [
                (event::THREAD_BEGIN, "thread_begin", callback!(thread_begin: ThreadBegin)),
                (event::PARALLEL_BEGIN, "parallel_begin", callback!(parallel_begin: ParallelBegin)),
                (event::PARALLEL_END, "parallel_end", callback!(parallel_end: ParallelEnd)),
                (event::IMPLICIT_TASK, "implicit_task", callback!(implicit_task: ImplicitTask)),
                (event::WORK, "work", callback!(work: Work)),
                (event::MASTER, "master", callback!(master: Master)),
                (event::SYNC_REGION, "sync_region", callback!(sync_region: SyncRegion)),
            ]
        };
        for (event, name, callback) in callbacks {
            // SAFETY: registering a callback of the event's type.
            if unsafe { set_callback(event, Some(callback)) } <= SET_NEVER {
                log::info(format_args!("ompt: the OpenMP runtime does not report {name} events"));
            }
        }
        ok = 1;
    });
    ok
}

/// `ompt_finalize_t`: the OpenMP runtime shuts down; nothing of it is
/// called after this.
unsafe extern "C" fn finalize(_data: *mut OmptData) {}

type ThreadBegin = unsafe extern "C" fn(c_int, *mut OmptData);
type ParallelBegin = unsafe extern "C" fn(*mut OmptData, *const c_void, *mut OmptData, c_uint, c_int, *const c_void);
type ParallelEnd = unsafe extern "C" fn(*mut OmptData, *mut OmptData, c_int, *const c_void);
type ImplicitTask = unsafe extern "C" fn(c_int, *mut OmptData, *mut OmptData, c_uint, c_uint, c_int);
type Work = unsafe extern "C" fn(c_int, c_int, *mut OmptData, *mut OmptData, u64, *const c_void);
type Master = unsafe extern "C" fn(c_int, *mut OmptData, *mut OmptData, *const c_void);
type SyncRegion = unsafe extern "C" fn(c_int, c_int, *mut OmptData, *mut OmptData, *const c_void);

/// The handlers, once the service has made its attributes.
fn handlers() -> Option<&'static Handlers> {
    super::HANDLERS.get()
}

/// `ompt_callback_thread_begin`: `kind` is an `ompt_thread_t`.
unsafe extern "C" fn thread_begin(kind: c_int, _thread: *mut OmptData) {
    contained("thread_begin", || {
        if let Some(h) = handlers() {
            h.thread_begin(kind);
        }
    })
}

/// `ompt_callback_parallel_begin`: the encountering thread opens a
/// parallel region; its region path goes into `parallel->ptr` for the
/// team's implicit tasks.
unsafe extern "C" fn parallel_begin(
    _task: *mut OmptData,
    _frame: *const c_void,
    parallel: *mut OmptData,
    requested: c_uint,
    _flags: c_int,
    _codeptr: *const c_void,
) {
    contained("parallel_begin", || {
        if let (Some(h), false) = (handlers(), parallel.is_null()) {
            let team = h.parallel_begin(requested);
            // SAFETY: the runtime's word for this parallel region.
            unsafe { (*parallel).ptr = Box::into_raw(Box::new(team)).cast() };
        }
    })
}

/// `ompt_callback_parallel_end`: after every implicit task of the team
/// has ended; the team's path is freed.
unsafe extern "C" fn parallel_end(
    parallel: *mut OmptData,
    _task: *mut OmptData,
    _flags: c_int,
    _codeptr: *const c_void,
) {
    contained("parallel_end", || {
        let Some(h) = handlers() else { return };
        // SAFETY: the runtime's word for this parallel region, set at its
        // begin (null if the tool was not ready then).
        let team = unsafe { parallel.as_mut() }.map(|p| unsafe { std::mem::replace(&mut p.ptr, std::ptr::null_mut()) });
        if let Some(team) = team.filter(|t| !t.is_null()) {
            // SAFETY: made by `parallel_begin` with Box::into_raw, taken once.
            drop(unsafe { Box::from_raw(team.cast::<Team>()) });
            h.parallel_end();
        }
    })
}

/// `ompt_callback_implicit_task`: a thread of the team begins or ends its
/// share of a parallel region (`index` in a team of `threads`).
unsafe extern "C" fn implicit_task(
    endpoint: c_int,
    parallel: *mut OmptData,
    _task: *mut OmptData,
    threads: c_uint,
    index: c_uint,
    flags: c_int,
) {
    contained("implicit_task", || {
        let Some(h) = handlers() else { return };
        if flags & TASK_INITIAL != 0 {
            return;
        }
        if endpoint == SCOPE_BEGIN {
            // SAFETY: the parallel region's word, set at its begin (the
            // team's implicit tasks begin before it ends).
            let team = unsafe { parallel.as_ref() }.and_then(|p| unsafe { p.ptr.cast::<Team>().as_ref() });
            h.implicit_task_begin(team, threads, index);
        } else {
            h.implicit_task_end();
        }
    })
}

/// `ompt_callback_work`: a worksharing construct (`kind` an `ompt_work_t`).
unsafe extern "C" fn work(
    kind: c_int,
    endpoint: c_int,
    _parallel: *mut OmptData,
    _task: *mut OmptData,
    _count: u64,
    _codeptr: *const c_void,
) {
    contained("work", || {
        if let Some(h) = handlers() {
            h.work(super::work_index(kind), endpoint == SCOPE_BEGIN);
        }
    })
}

/// `ompt_callback_master` (`ompt_callback_masked`): a master region, as a
/// work construct of its own.
unsafe extern "C" fn master(endpoint: c_int, _parallel: *mut OmptData, _task: *mut OmptData, _codeptr: *const c_void) {
    contained("master", || {
        if let Some(h) = handlers() {
            h.work(super::MASTER, endpoint == SCOPE_BEGIN);
        }
    })
}

/// `ompt_callback_sync_region`: a barrier, taskwait, taskgroup or
/// reduction (`kind` an `ompt_sync_region_t`), waiting included.
unsafe extern "C" fn sync_region(
    kind: c_int,
    endpoint: c_int,
    _parallel: *mut OmptData,
    _task: *mut OmptData,
    codeptr: *const c_void,
) {
    contained("sync_region", || {
        if let Some(h) = handlers() {
            // The barrier that ends a parallel region: of its own kind since
            // OpenMP 5.1; before, an implicit barrier that LLVM's libomp
            // reports with no code address on the workers.
            let ends_team =
                kind == SYNC_BARRIER_IMPLICIT_PARALLEL || (kind == SYNC_BARRIER_IMPLICIT && codeptr.is_null());
            h.sync(kind, endpoint == SCOPE_BEGIN, ends_team);
        }
    })
}
