//! Call stacks from inside a signal handler: the interrupted thread's
//! return addresses, found with the loaded modules' DWARF call frame
//! information (`.eh_frame`, through `.eh_frame_hdr`) or, where a module
//! has none, the frame pointers (framehop). Everything the handler needs is
//! made beforehand: the modules' unwind tables (copied, so that a library
//! unloaded later leaves nothing dangling), and each thread's rule cache
//! and stack bounds, reached through a constant-initialised thread local.
//! The handler allocates nothing, takes no lock and reads memory only
//! inside the thread's stack.

use std::cell::Cell;
use std::ffi::c_void;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

#[cfg(target_arch = "x86_64")]
mod tables {
    pub use framehop::x86_64::{CacheX86_64 as Cache, UnwindRegsX86_64 as Regs, UnwinderX86_64 as Unwinder};
}

#[cfg(target_arch = "x86_64")]
type Modules = tables::Unwinder<Vec<u8>, framehop::MustNotAllocateDuringUnwind>;
#[cfg(target_arch = "x86_64")]
type RuleCache = tables::Cache<framehop::MustNotAllocateDuringUnwind>;

/// The unwind tables of the modules loaded, as of `Registry::loaded`.
#[cfg(target_arch = "x86_64")]
static MODULES: AtomicPtr<Modules> = AtomicPtr::new(std::ptr::null_mut());

/// The tables made so far: the current ones and those they replaced,
/// kept (a handler may still be reading them) until the process ends.
#[cfg(target_arch = "x86_64")]
static REGISTRY: Mutex<Registry> = Mutex::new(Registry { loaded: None, tables: Vec::new() });

#[cfg(target_arch = "x86_64")]
struct Registry {
    /// The loader's count of modules added and removed when the tables
    /// were made.
    loaded: Option<(u64, u64)>,
    /// Boxed: `MODULES` points into them, so they must not move when the
    /// list grows.
    #[allow(clippy::vec_box)]
    tables: Vec<Box<Modules>>,
}

/// A thread's part: its rule cache and the bounds of its stack.
struct ThreadState {
    #[cfg(target_arch = "x86_64")]
    cache: RuleCache,
    stack: Range<u64>,
}

thread_local! {
    /// The calling thread's state, null until [`prepare_thread`]: read in
    /// the handler, which must not initialise a thread local.
    static CURRENT: Cell<*mut ThreadState> = const { Cell::new(std::ptr::null_mut()) };
    /// Frees the thread's state when it exits.
    static OWNER: Owner = const { Owner };
    /// Set while [`unwind_here`] uses the thread's state: a signal handler
    /// that interrupts it finds no stack rather than a state in use.
    static IN_USE: Cell<bool> = const { Cell::new(false) };
}

struct Owner;

impl Drop for Owner {
    fn drop(&mut self) {
        let state = CURRENT.with(|c| c.replace(std::ptr::null_mut()));
        if !state.is_null() {
            // SAFETY: made by `prepare_thread` with `Box::into_raw`, and no
            // longer reachable through `CURRENT`.
            drop(unsafe { Box::from_raw(state) });
        }
    }
}

/// Makes the calling thread ready for [`unwind_in_signal`]: its rule cache
/// and stack bounds, and the modules' tables if a module was loaded since.
/// Not async-signal-safe; call where the thread starts.
pub fn prepare_thread() {
    refresh_modules();
    if !CURRENT.with(Cell::get).is_null() {
        return;
    }
    let Some(stack) = stack_of_calling_thread() else { return };
    let state = Box::new(ThreadState {
        #[cfg(target_arch = "x86_64")]
        cache: RuleCache::new_in(),
        stack,
    });
    OWNER.with(|_| ());
    CURRENT.with(|c| c.set(Box::into_raw(state)));
}

/// The call stack of the code a signal interrupted, from the handler's
/// `context` (the kernel's `ucontext_t`): the interrupted instruction,
/// then the return addresses, each as an address inside its call
/// instruction, outermost first, into `out`, leaving out the `skip`
/// innermost frames. Returns how many it wrote (0 on a thread that was not
/// prepared). Async-signal-safe.
///
/// # Safety
/// `context` must be the context the kernel passed to the running signal
/// handler, on the thread it interrupted.
pub unsafe fn unwind_in_signal(context: *mut c_void, skip: usize, out: &mut [u64]) -> usize {
    let state = CURRENT.with(Cell::get);
    if state.is_null() || context.is_null() || IN_USE.with(Cell::get) {
        return 0;
    }
    // SAFETY: the thread's own state, which only its exit frees (not
    // while a handler runs on it) and nothing else uses now; the context
    // is the kernel's.
    let (pc, sp, bp) = unsafe { interrupted_registers(context as *const libc::ucontext_t) };
    unwind(unsafe { &mut *state }, (pc, sp, bp), skip, out)
}

/// The call stack of the caller, as [`unwind_in_signal`] gives it (the
/// caller's own frame innermost). Not for signal handlers: a thread that
/// was not prepared, or one whose handler interrupted an unwinding, gets
/// no frames.
#[inline(never)]
pub fn unwind_here(out: &mut [u64]) -> usize {
    let state = CURRENT.with(Cell::get);
    if state.is_null() || IN_USE.with(|u| u.replace(true)) {
        return 0;
    }
    let registers = current_registers();
    // SAFETY: the thread's own state, marked in use against handlers.
    let written = unwind(unsafe { &mut *state }, registers, 1, out);
    IN_USE.with(|u| u.set(false));
    written
}

/// The program counter, stack pointer and frame pointer a signal
/// interrupted.
///
/// # Safety
/// `context` must be the kernel's context of the running handler.
#[cfg(target_arch = "x86_64")]
unsafe fn interrupted_registers(context: *const libc::ucontext_t) -> (u64, u64, u64) {
    // SAFETY: a valid context, by the caller.
    let registers = unsafe { &(*context).uc_mcontext.gregs };
    let register = |r: libc::c_int| registers[r as usize] as u64;
    (register(libc::REG_RIP), register(libc::REG_RSP), register(libc::REG_RBP))
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn interrupted_registers(_: *const libc::ucontext_t) -> (u64, u64, u64) {
    (0, 0, 0)
}

/// The program counter, stack pointer and frame pointer here, in the
/// calling function (inlined into it).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn current_registers() -> (u64, u64, u64) {
    let (pc, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers.
    unsafe {
        std::arch::asm!("lea {pc}, [rip]", "mov {sp}, rsp", "mov {bp}, rbp", pc = out(reg) pc, sp = out(reg) sp,
            bp = out(reg) bp, options(nomem, nostack, preserves_flags));
    }
    (pc, sp, bp)
}

#[cfg(not(target_arch = "x86_64"))]
fn current_registers() -> (u64, u64, u64) {
    (0, 0, 0)
}

/// Unwinds from `(pc, sp, bp)` into `out`, outermost first, leaving out
/// the `skip` innermost frames.
#[cfg(target_arch = "x86_64")]
fn unwind(state: &mut ThreadState, (pc, sp, bp): (u64, u64, u64), skip: usize, out: &mut [u64]) -> usize {
    use framehop::Unwinder as _;
    let modules = MODULES.load(Ordering::Acquire);
    if modules.is_null() {
        return 0;
    }
    // SAFETY: tables are never freed before the process ends.
    let modules = unsafe { &*modules };
    let stack = state.stack.clone();
    let mut read_stack = |address: u64| {
        if address.is_multiple_of(8) && address >= stack.start && address.saturating_add(8) <= stack.end {
            // SAFETY: an aligned word inside the thread's stack.
            Ok(unsafe { *(address as *const u64) })
        } else {
            Err(())
        }
    };
    let mut frames = modules.iter_frames(pc, tables::Regs::new(pc, sp, bp), &mut state.cache, &mut read_stack);
    let (mut written, mut seen) = (0, 0);
    while let Ok(Some(frame)) = frames.next() {
        seen += 1;
        if seen <= skip {
            continue;
        }
        let Some(slot) = out.get_mut(written) else { break };
        *slot = frame.address_for_lookup();
        written += 1;
    }
    out[..written].reverse();
    written
}

#[cfg(not(target_arch = "x86_64"))]
fn unwind(_: &mut ThreadState, _: (u64, u64, u64), _: usize, _: &mut [u64]) -> usize {
    0
}

/// The bounds of the calling thread's stack.
fn stack_of_calling_thread() -> Option<Range<u64>> {
    // SAFETY: pthread calls on an attribute object made and destroyed here.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let (mut base, mut size) = (std::ptr::null_mut(), 0);
        let got = libc::pthread_attr_getstack(&attr, &mut base, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (got == 0).then(|| base as u64..base as u64 + size as u64)
    }
}

/// Makes the modules' tables anew if the loader added or removed a module
/// since they were made.
#[cfg(target_arch = "x86_64")]
fn refresh_modules() {
    let mut registry = crate::sync::lock(&REGISTRY);
    let loaded = loader_counts();
    if registry.loaded == Some(loaded) {
        return;
    }
    let mut modules = Box::new(Modules::new());
    for module in loaded_modules() {
        framehop::Unwinder::add_module(&mut *modules, module);
    }
    MODULES.store(&mut *modules, Ordering::Release);
    registry.tables.push(modules);
    registry.loaded = Some(loaded);
}

#[cfg(not(target_arch = "x86_64"))]
fn refresh_modules() {}

/// The loader's counts of modules added and removed so far.
#[cfg(target_arch = "x86_64")]
fn loader_counts() -> (u64, u64) {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _: libc::size_t, data: *mut c_void) -> libc::c_int {
        // SAFETY: the loader's entry, and the counts below.
        let (info, counts) = unsafe { (&*info, &mut *(data as *mut (u64, u64))) };
        *counts = (info.dlpi_adds, info.dlpi_subs);
        1
    }
    let mut counts = (0, 0);
    // SAFETY: the callback writes the counts and stops.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut counts as *mut (u64, u64) as *mut c_void) };
    counts
}

/// Every loaded module with call frame information, its tables copied.
#[cfg(target_arch = "x86_64")]
fn loaded_modules() -> Vec<framehop::Module<Vec<u8>>> {
    unsafe extern "C" fn add(info: *mut libc::dl_phdr_info, _: libc::size_t, data: *mut c_void) -> libc::c_int {
        // SAFETY: the loader's entry, and the list below.
        let (info, modules) = unsafe { (&*info, &mut *(data as *mut Vec<framehop::Module<Vec<u8>>>)) };
        let headers: &[libc::Elf64_Phdr] = match info.dlpi_phdr.is_null() {
            true => &[],
            // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
            false => unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) },
        };
        // SAFETY: the module is loaded while the loader lists it.
        if let Some(module) = unsafe { module_of(info.dlpi_addr, headers) } {
            modules.push(module);
        }
        0
    }
    let mut modules = Vec::new();
    // SAFETY: the callback reads the entries and adds to the list.
    unsafe { libc::dl_iterate_phdr(Some(add), &mut modules as *mut Vec<_> as *mut c_void) };
    modules
}

/// A loaded module's unwind tables: its `.eh_frame_hdr` (the
/// `PT_GNU_EH_FRAME` segment) and the `.eh_frame` it points to, copied.
///
/// # Safety
/// The module must be loaded at `bias` with these program headers.
#[cfg(target_arch = "x86_64")]
unsafe fn module_of(bias: u64, headers: &[libc::Elf64_Phdr]) -> Option<framehop::Module<Vec<u8>>> {
    let loads: Vec<Range<u64>> = headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD)
        .map(|h| bias + h.p_vaddr..bias + h.p_vaddr + h.p_memsz)
        .collect();
    let start = loads.iter().map(|r| r.start).min()?;
    let end = loads.iter().map(|r| r.end).max()?;
    let hdr = headers.iter().find(|h| h.p_type == libc::PT_GNU_EH_FRAME)?;
    let hdr_avma = bias + hdr.p_vaddr;
    // SAFETY: the segment is loaded (the caller's promise).
    let hdr_bytes = unsafe { std::slice::from_raw_parts(hdr_avma as *const u8, hdr.p_memsz as usize) }.to_vec();
    let eh_frame_avma = eh_frame_address(&hdr_bytes, hdr_avma)?;
    let segment = loads.iter().find(|r| r.contains(&eh_frame_avma))?;
    // SAFETY: from the section's start to its segment's end, all loaded.
    let rest =
        unsafe { std::slice::from_raw_parts(eh_frame_avma as *const u8, (segment.end - eh_frame_avma) as usize) };
    let eh_frame = rest[..eh_frame_length(rest)].to_vec();
    let svma = |avma: u64, len: usize| avma - bias..avma - bias + len as u64;
    let info = framehop::ExplicitModuleSectionInfo {
        base_svma: 0,
        eh_frame_hdr_svma: Some(svma(hdr_avma, hdr_bytes.len())),
        eh_frame_svma: Some(svma(eh_frame_avma, eh_frame.len())),
        eh_frame_hdr: Some(hdr_bytes),
        eh_frame: Some(eh_frame),
        ..Default::default()
    };
    Some(framehop::Module::new(String::new(), start..end, bias, info))
}

/// The address of the `.eh_frame` an `.eh_frame_hdr` (loaded at
/// `hdr_avma`) points to, for the pointer encodings linkers write.
fn eh_frame_address(hdr: &[u8], hdr_avma: u64) -> Option<u64> {
    const PCREL: u8 = 0x10;
    const DATAREL: u8 = 0x30;
    let (&version, &encoding) = (hdr.first()?, hdr.get(1)?);
    if version != 1 {
        return None;
    }
    let field = hdr.get(4..)?;
    let value = match encoding & 0x0f {
        0x03 => u64::from(u32::from_le_bytes(field.get(..4)?.try_into().ok()?)),
        0x0b => i64::from(i32::from_le_bytes(field.get(..4)?.try_into().ok()?)) as u64,
        0x00 | 0x04 | 0x0c => u64::from_le_bytes(field.get(..8)?.try_into().ok()?),
        _ => return None,
    };
    match encoding & 0x70 {
        0 => Some(value),
        PCREL | DATAREL => Some((hdr_avma + 4).wrapping_add(value)),
        _ => None,
    }
}

/// The length of an `.eh_frame` section in `data` (which may run past
/// it): its entries up to the zero terminator or the end of `data`.
fn eh_frame_length(data: &[u8]) -> usize {
    let mut at = 0;
    while let Some(bytes) = data.get(at..at + 4) {
        let length = u32::from_le_bytes(bytes.try_into().unwrap_or_default()) as usize;
        let next = match length {
            0 => return at + 4,
            0xffff_ffff => match data.get(at + 4..at + 12) {
                Some(long) => {
                    (at + 12).saturating_add(u64::from_le_bytes(long.try_into().unwrap_or_default()) as usize)
                }
                None => return at,
            },
            _ => at + 4 + length,
        };
        if next > data.len() {
            return at;
        }
        at = next;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eh_frame_pointer_of_a_header_is_read_in_the_encodings_linkers_write() {
        // version 1, pc-relative signed 4 bytes: -16 from the field at +4.
        let hdr = [1, 0x1b, 0x03, 0x3b, 0xf0, 0xff, 0xff, 0xff];
        assert_eq!(eh_frame_address(&hdr, 0x1000), Some(0x1000 + 4 - 16));
        let absolute = [1, 0x03, 0, 0, 0x00, 0x20, 0, 0];
        assert_eq!(eh_frame_address(&absolute, 0x1000), Some(0x2000));
        assert_eq!(eh_frame_address(&[2, 0x1b, 0, 0, 0, 0, 0, 0], 0), None);
    }

    #[test]
    fn an_eh_frame_ends_at_its_terminator_or_where_the_data_does() {
        let mut data = vec![8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 9, 9];
        assert_eq!(eh_frame_length(&data), 16);
        data.truncate(10);
        assert_eq!(eh_frame_length(&data), 0);
    }

    /// A signal handler on this thread unwinds its own stack through the
    /// functions below, in order.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_handler_finds_the_functions_a_signal_interrupted() {
        use std::sync::atomic::AtomicUsize;
        static FRAMES: [std::sync::atomic::AtomicU64; 64] = [const { std::sync::atomic::AtomicU64::new(0) }; 64];
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        extern "C" fn handler(_: libc::c_int, _: *mut libc::siginfo_t, context: *mut c_void) {
            let mut out = [0u64; 64];
            // SAFETY: the kernel's context of this handler.
            let n = unsafe { unwind_in_signal(context, 0, &mut out) };
            for (slot, &frame) in FRAMES.iter().zip(&out[..n]) {
                slot.store(frame, Ordering::Relaxed);
            }
            COUNT.store(n, Ordering::Relaxed);
        }
        #[inline(never)]
        fn inner() {
            // SAFETY: a handler installed for the test's signal.
            unsafe { libc::raise(libc::SIGUSR2) };
            std::hint::black_box(());
        }
        #[inline(never)]
        fn outer() {
            inner();
            std::hint::black_box(());
        }
        prepare_thread();
        // SAFETY: installing a handler for a signal only this test raises.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut());
        }
        outer();
        let n = COUNT.load(Ordering::Relaxed);
        let mut symbols = crate::symbols::Symbolizer::new();
        let names: Vec<String> = FRAMES[..n]
            .iter()
            .map(|f| symbols.lookup(f.load(Ordering::Relaxed)).function.clone().unwrap_or_default())
            .collect();
        let at = |name: &str| names.iter().position(|n| n.ends_with(name));
        let (outer_at, inner_at) = (at("outer"), at("inner"));
        assert!(outer_at.is_some() && inner_at.is_some() && outer_at < inner_at, "{names:#?}");
    }
}
