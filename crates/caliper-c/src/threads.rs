//! `pthread_create`, wrapped: a thread the program starts is made ready
//! for signal snapshots (a sampler's timer, the unwinder's state) and
//! marked by the `pthread` service (`pthread.id`, `pthread.is_master`)
//! before its start routine runs, so that a program that never annotates
//! is sampled on every thread it starts. Exported under the C library's
//! name, a program linked with libcaliper or with it preloaded calls this
//! one, which calls the C library's (the next definition in the lookup
//! order). When neither is wanted, and for the runtime's own threads,
//! it passes straight through.

use crate::entry::guard;
use runtime::log;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
type Create =
    unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartRoutine, *mut c_void) -> c_int;

/// The C library's `pthread_create`, found on first use (0 before).
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The next definition of `pthread_create` after this library's.
fn next_create() -> Option<Create> {
    let mut address = NEXT.load(Ordering::Acquire);
    if address == 0 {
        // SAFETY: looking up a symbol by a constant C string.
        address = unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_create".as_ptr()) } as usize;
        NEXT.store(address, Ordering::Release);
    }
    // SAFETY: the C library's pthread_create has this signature.
    (address != 0).then(|| unsafe { std::mem::transmute::<usize, Create>(address) })
}

/// What the new thread runs: the program's routine and argument.
struct Start {
    routine: StartRoutine,
    arg: *mut c_void,
}

/// `pthread_create(3)`.
///
/// # Safety
/// As the C library's: valid pointers and a start routine.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    let Some(create) = next_create() else {
        log::error(format_args!("pthread_create: the C library's is not found; no thread started"));
        return libc::EAGAIN;
    };
    let wanted = runtime::signal::wanted() || runtime::threads::program_threads_wanted();
    if !wanted || runtime::signal::spawning_own_thread() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { create(thread, attr, routine, arg) };
    }
    let start = Box::into_raw(Box::new(Start { routine, arg }));
    // SAFETY: the caller's arguments, the routine wrapped.
    let created = unsafe { create(thread, attr, start_prepared, start as *mut c_void) };
    if created != 0 {
        // SAFETY: the thread did not start, so the box is still ours.
        drop(unsafe { Box::from_raw(start) });
    }
    created
}

/// The new thread: made ready for signal snapshots and marked, then the
/// program's routine.
extern "C" fn start_prepared(start: *mut c_void) -> *mut c_void {
    // SAFETY: the box `pthread_create` handed this thread.
    let Start { routine, arg } = *unsafe { Box::from_raw(start as *mut Start) };
    guard("pthread_create", (), || {
        if runtime::signal::wanted() {
            runtime::signal::prepare_thread();
        }
        runtime::threads::program_thread_started();
    });
    routine(arg)
}
