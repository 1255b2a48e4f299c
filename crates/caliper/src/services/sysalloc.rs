//! `sysalloc`: the C library's `malloc`, `calloc`, `realloc` and `free`,
//! wrapped in every loaded object at run time (see [`crate::interpose`]),
//! begin and end memory regions (labels `malloc`, `calloc`, `realloc`)
//! for the channels' tracking services (`alloc`, `allocstats`). The
//! wrappers are installed while any channel with the service exists and
//! removed when the last finishes.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::interpose::{self, Hook, Reentry};
use crate::log;
use crate::service::{ChannelView, GlobalRuntime, MemoryEvent, MemoryRegion, Runtime, Service};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "sysalloc",
    aliases: &[],
    description: "Track malloc, calloc, realloc and free as memory regions (for alloc and allocstats)",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        RUNTIME.get_or_init(|| setup.cali.global());
        match interpose::install(&HOOKS) {
            Ok(()) => Ok(Created::Service(Arc::new(SysAlloc))),
            Err(e) => {
                log::error(format_args!("sysalloc: {e}; sysalloc disabled"));
                Err(NotCreated::BadSettings)
            }
        }
    },
};

/// How the wrappers find the runtime.
static RUNTIME: OnceLock<GlobalRuntime> = OnceLock::new();

static MALLOC: AtomicUsize = AtomicUsize::new(0);
static CALLOC: AtomicUsize = AtomicUsize::new(0);
static REALLOC: AtomicUsize = AtomicUsize::new(0);
static FREE: AtomicUsize = AtomicUsize::new(0);

static HOOKS: [Hook; 4] = [
    Hook { name: c"malloc", wrapper: malloc as *const (), original: &MALLOC },
    Hook { name: c"calloc", wrapper: calloc as *const (), original: &CALLOC },
    Hook { name: c"realloc", wrapper: realloc as *const (), original: &REALLOC },
    Hook { name: c"free", wrapper: free as *const (), original: &FREE },
];

struct SysAlloc;

impl Service for SysAlloc {
    fn name(&self) -> &'static str {
        "sysalloc"
    }

    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        interpose::uninstall(&HOOKS);
    }
}

/// Hands a memory event to the runtime, unless the calling thread is
/// already inside a wrapper's work (the runtime allocating) or the
/// runtime is not ready.
#[inline]
fn track(event: MemoryEvent<'_>) {
    let Some(_inside) = Reentry::enter() else { return };
    if let Some(cali) = RUNTIME.get().and_then(|runtime| runtime()) {
        cali.track_memory(&event);
    }
}

fn begin(address: *mut c_void, label: &str, elem_size: usize, count: usize) {
    if !address.is_null() {
        let dims = [count as u64];
        track(MemoryEvent::Begin(MemoryRegion {
            address: address as u64,
            label,
            elem_size: elem_size as u64,
            dims: &dims,
        }));
    }
}

fn end(address: *mut c_void) {
    if !address.is_null() {
        track(MemoryEvent::End { address: address as u64 });
    }
}

/// The original of a hook, as a function of type `F`.
///
/// # Safety
/// `F` is the hooked function's type, and the hook is installed.
#[inline(always)]
unsafe fn original<F: Copy>(slot: &AtomicUsize) -> F {
    let address = slot.load(Ordering::Relaxed);
    // SAFETY: the caller's promise; function pointers are address-sized.
    unsafe { std::mem::transmute_copy::<usize, F>(&address) }
}

unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: the hook was installed with libc's malloc.
    let p = unsafe { original::<unsafe extern "C" fn(usize) -> *mut c_void>(&MALLOC)(size) };
    begin(p, "malloc", 1, size);
    p
}

unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: the hook was installed with libc's calloc.
    let p = unsafe { original::<unsafe extern "C" fn(usize, usize) -> *mut c_void>(&CALLOC)(count, size) };
    begin(p, "calloc", size, count);
    p
}

unsafe extern "C" fn realloc(old: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the hook was installed with libc's realloc.
    let p = unsafe { original::<unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void>(&REALLOC)(old, size) };
    // A failed realloc leaves the old block as it was.
    if !p.is_null() {
        end(old);
        begin(p, "realloc", 1, size);
    }
    p
}

unsafe extern "C" fn free(p: *mut c_void) {
    end(p);
    // SAFETY: the hook was installed with libc's free.
    unsafe { original::<unsafe extern "C" fn(*mut c_void)>(&FREE)(p) }
}
