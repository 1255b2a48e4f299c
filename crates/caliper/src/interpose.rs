//! Run-time interposition of library functions (what the reference does
//! with GOTCHA): the calls a loaded object makes to a function of another
//! object go through its global offset table, so rewriting the table's
//! entry for, say, `malloc` sends the object's calls to a wrapper, which
//! calls the function the entry held. Every object loaded is rewritten,
//! and those that `dlopen` loads later too (`dlopen` itself is wrapped).
//! The program is neither relinked nor recompiled, and it works the same
//! whether libcaliper is linked or preloaded.
//!
//! Written here rather than taken from a crate: the crates that rewrite
//! PLT/GOT entries (`plthook` and its bindings) patch one object at a
//! time by name and know nothing of objects loaded later or of undoing
//! every patch at the end, which are the parts that matter here; the ELF
//! reading needed is a few dozen lines over `dl_iterate_phdr`.
//!
//! What is rewritten: the `R_X86_64_JUMP_SLOT` (PLT calls) and
//! `R_X86_64_GLOB_DAT` (address taken through the GOT) entries for the
//! wrapped names, in every object but the dynamic loader, the vDSO and
//! the shared library this code is part of (libcaliper's own calls reach
//! the real functions). When the runtime is linked into the executable
//! itself (a Rust program, or a C program linked with `libcaliper.a`), the
//! executable is rewritten too, and the runtime's own calls from it reach
//! the wrappers: a wrapper hands nothing to the runtime while the thread
//! is inside it (see [`Reentry`]).
//!
//! Safe with threads running: an entry is one aligned 8-byte store,
//! atomic on x86-64, so a concurrent call goes either way; read-only
//! (RELRO) pages are made writable for the store and read-only again;
//! the walk runs under the loader's lock (`dl_iterate_phdr`), so no
//! object comes or goes meanwhile, and one walk at a time runs (a mutex).
//! A wrapper reads its original function from a static that is set before
//! any entry points to the wrapper and never cleared.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One wrapped function.
pub struct Hook {
    /// The function's name.
    pub name: &'static CStr,
    /// The wrapper.
    pub wrapper: *const (),
    /// Where the wrapper finds the function it wraps: set by
    /// [`install`] before any entry points to the wrapper.
    pub original: &'static AtomicUsize,
}

// SAFETY: `wrapper` is the address of code, never written.
unsafe impl Sync for Hook {}

impl Hook {
    /// The wrapper's address.
    fn wrapper(&self) -> usize {
        self.wrapper as usize
    }

    /// The function the wrapper calls (0 before [`install`]).
    #[inline]
    pub fn original(&self) -> usize {
        self.original.load(Ordering::Relaxed)
    }
}

/// Why hooks were not installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallError {
    /// The process has no function of this name.
    NotFound(String),
    /// The architecture is not x86-64.
    Unsupported,
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallError::NotFound(name) => write!(f, "no function {name} in the process"),
            InstallError::Unsupported => write!(f, "run-time interposition is implemented for x86-64 Linux only"),
        }
    }
}

/// The hook sets installed, each with the number of installs not yet
/// undone; one walk at a time.
static INSTALLED: Mutex<Vec<(&'static [Hook], usize)>> = Mutex::new(Vec::new());

static DLOPEN: AtomicUsize = AtomicUsize::new(0);

/// `dlopen`, wrapped while any hook set is installed: the objects it
/// loads are rewritten before it returns.
static DLOPEN_HOOK: [Hook; 1] = [Hook { name: c"dlopen", wrapper: dlopen_wrapper as *const (), original: &DLOPEN }];

/// Rewrites every loaded object's entries for `hooks` (and those of
/// objects loaded later), after resolving the functions they wrap.
/// Installing a set twice counts: it stays until uninstalled as often.
pub fn install(hooks: &'static [Hook]) -> Result<(), InstallError> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Err(InstallError::Unsupported);
    }
    let mut installed = crate::sync::lock(&INSTALLED);
    if let Some((_, count)) = installed.iter_mut().find(|(set, _)| std::ptr::eq(*set, hooks)) {
        *count += 1;
        return Ok(());
    }
    for hook in hooks.iter().chain(dlopen_hook()) {
        if hook.original() == 0 {
            let address =
                resolve(hook.name).ok_or_else(|| InstallError::NotFound(hook.name.to_string_lossy().into()))?;
            hook.original.store(address, Ordering::Release);
        }
    }
    installed.push((hooks, 1));
    rewrite_all(&[hooks, dlopen_hook()], Direction::Wrap);
    Ok(())
}

/// Undoes one [`install`] of `hooks`: after the last, every entry that
/// points to one of their wrappers points to the original again.
pub fn uninstall(hooks: &'static [Hook]) {
    let mut installed = crate::sync::lock(&INSTALLED);
    let Some(i) = installed.iter().position(|(set, _)| std::ptr::eq(*set, hooks)) else { return };
    installed[i].1 -= 1;
    if installed[i].1 > 0 {
        return;
    }
    installed.remove(i);
    let mut undone: Vec<&[Hook]> = vec![hooks];
    if installed.is_empty() {
        undone.push(dlopen_hook());
    }
    rewrite_all(&undone, Direction::Unwrap);
}

fn dlopen_hook() -> &'static [Hook] {
    &DLOPEN_HOOK
}

/// The wrapper of `dlopen`: loads, then rewrites what was loaded.
unsafe extern "C" fn dlopen_wrapper(file: *const c_char, mode: c_int) -> *mut c_void {
    type Dlopen = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;
    // SAFETY: set to libc's dlopen before this wrapper was installed.
    let dlopen: Dlopen = unsafe { std::mem::transmute::<usize, Dlopen>(DLOPEN.load(Ordering::Relaxed)) };
    // SAFETY: the program's own arguments.
    let handle = unsafe { dlopen(file, mode) };
    if !handle.is_null() {
        let installed = crate::sync::lock(&INSTALLED);
        let mut sets: Vec<&[Hook]> = installed.iter().map(|(set, _)| *set).collect();
        if !sets.is_empty() {
            sets.push(dlopen_hook());
            rewrite_all(&sets, Direction::Wrap);
        }
    }
    handle
}

/// The address of `name` as the program's calls would reach it.
fn resolve(name: &CStr) -> Option<usize> {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!address.is_null()).then_some(address as usize)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Entries holding anything but the wrapper get the wrapper.
    Wrap,
    /// Entries holding the wrapper get the original.
    Unwrap,
}

/// What the walk over the loaded objects rewrites.
struct Walk<'a> {
    sets: &'a [&'a [Hook]],
    direction: Direction,
    /// An address inside this module, to recognise its own object.
    own: usize,
}

fn rewrite_all(sets: &[&[Hook]], direction: Direction) {
    let walk = Walk { sets, direction, own: rewrite_all as *const () as usize };
    // SAFETY: the callback gets a valid info pointer and `walk` for the
    // duration of the call.
    unsafe { libc::dl_iterate_phdr(Some(visit_object), &walk as *const Walk<'_> as *mut c_void) };
}

unsafe extern "C" fn visit_object(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the walk passed to dl_iterate_phdr, `info` a valid
    // entry of the loader's list.
    let (walk, info) = unsafe { (&*(data as *const Walk<'_>), &*info) };
    // SAFETY: the loader's entry for a loaded object.
    if let Some(object) = unsafe { Object::read(info) }
        && !object.is_skipped(walk.own)
    {
        object.rewrite(walk);
    }
    0
}

/// A loaded object as the walk reads it.
struct Object<'a> {
    name: &'a [u8],
    base: usize,
    /// Its loaded segments (start, end).
    segments: Vec<(usize, usize)>,
    /// Its read-only-after-relocation range, page-aligned.
    relro: Option<(usize, usize)>,
    symtab: usize,
    strtab: usize,
    /// Relocation tables with addends (start, size in bytes).
    tables: [(usize, usize); 2],
}

// ELF constants (elf.h).
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_JMPREL: i64 = 23;
const R_X86_64_GLOB_DAT: u64 = 6;
const R_X86_64_JUMP_SLOT: u64 = 7;

/// `Elf64_Dyn`.
#[repr(C)]
struct Dyn {
    d_tag: i64,
    d_val: u64,
}

/// `Elf64_Rela`.
#[repr(C)]
struct Rela {
    offset: u64,
    info: u64,
    addend: i64,
}

/// `Elf64_Sym`.
#[repr(C)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

impl<'a> Object<'a> {
    /// Reads an object's program headers and dynamic section.
    ///
    /// # Safety
    /// `info` is an entry of the loader's list, inside `dl_iterate_phdr`.
    unsafe fn read(info: &'a libc::dl_phdr_info) -> Option<Object<'a>> {
        let base = info.dlpi_addr as usize;
        let name = match info.dlpi_name.is_null() {
            true => &[][..],
            // SAFETY: the loader's NUL-terminated name.
            false => unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes(),
        };
        // SAFETY: the loader's program headers, `dlpi_phnum` of them.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let page = page_size();
        let mut dynamic = None;
        let mut object =
            Object { name, base, segments: Vec::new(), relro: None, symtab: 0, strtab: 0, tables: [(0, 0); 2] };
        for h in headers {
            let start = base + h.p_vaddr as usize;
            match h.p_type {
                PT_LOAD => object.segments.push((start, start + h.p_memsz as usize)),
                PT_DYNAMIC => dynamic = Some(start as *const Dyn),
                PT_GNU_RELRO => {
                    // The loader protects whole pages only.
                    let end = (start + h.p_memsz as usize) & !(page - 1);
                    object.relro = Some((start & !(page - 1), end));
                }
                _ => {}
            }
        }
        let mut dynamic = dynamic?;
        let (mut rela, mut relasz, mut jmprel, mut pltrelsz) = (0, 0, 0, 0);
        loop {
            // SAFETY: the dynamic section ends with DT_NULL.
            let entry = unsafe { &*dynamic };
            // The loader relocates most pointers in place; where it did
            // not (read-only dynamic sections), they are offsets.
            let pointer = |value: u64| match (value as usize) < base {
                true => base + value as usize,
                false => value as usize,
            };
            match entry.d_tag {
                DT_NULL => break,
                DT_SYMTAB => object.symtab = pointer(entry.d_val),
                DT_STRTAB => object.strtab = pointer(entry.d_val),
                DT_RELA => rela = pointer(entry.d_val),
                DT_RELASZ => relasz = entry.d_val as usize,
                DT_JMPREL => jmprel = pointer(entry.d_val),
                DT_PLTRELSZ => pltrelsz = entry.d_val as usize,
                _ => {}
            }
            // SAFETY: not past DT_NULL.
            dynamic = unsafe { dynamic.add(1) };
        }
        object.tables = [(rela, relasz), (jmprel, pltrelsz)];
        (object.symtab != 0 && object.strtab != 0).then_some(object)
    }

    /// The dynamic loader, the vDSO (no relocations to speak of) and the
    /// shared library this code is in are left alone.
    fn is_skipped(&self, own: usize) -> bool {
        let is_loader = self.name.windows(7).any(|w| w == b"/ld-lin") || self.name.starts_with(b"ld-linux");
        let is_vdso = self.name.starts_with(b"linux-vdso") || self.name.starts_with(b"linux-gate");
        let is_own_library = !self.name.is_empty() && self.segments.iter().any(|&(s, e)| (s..e).contains(&own));
        is_loader || is_vdso || is_own_library
    }

    fn rewrite(&self, walk: &Walk<'_>) {
        for &(table, size) in &self.tables {
            if table == 0 || size == 0 {
                continue;
            }
            // SAFETY: the object's relocation table, `size` bytes of
            // `Elf64_Rela`s.
            let relocations =
                unsafe { std::slice::from_raw_parts(table as *const Rela, size / std::mem::size_of::<Rela>()) };
            for r in relocations {
                let kind = r.info & 0xffff_ffff;
                if kind != R_X86_64_JUMP_SLOT && kind != R_X86_64_GLOB_DAT {
                    continue;
                }
                // SAFETY: the relocation's symbol index is in the table.
                let sym = unsafe { &*(self.symtab as *const Sym).add((r.info >> 32) as usize) };
                // SAFETY: the symbol's name is in the string table.
                let name = unsafe { CStr::from_ptr((self.strtab + sym.name as usize) as *const c_char) };
                let Some(hook) = walk.sets.iter().flat_map(|set| set.iter()).find(|h| h.name == name) else {
                    continue;
                };
                let slot = self.base + r.offset as usize;
                let (from_wrapper, to) = match walk.direction {
                    Direction::Wrap => (false, hook.wrapper()),
                    Direction::Unwrap => (true, hook.original()),
                };
                // SAFETY: a GOT entry of a loaded object: aligned, mapped.
                let entry = unsafe { &*(slot as *const AtomicUsize) };
                if (entry.load(Ordering::Relaxed) == hook.wrapper()) == from_wrapper {
                    self.store(entry, slot, to);
                }
            }
        }
    }

    /// Stores `value` into the entry at `slot`, making its page writable
    /// for the time of the store if the loader made it read-only.
    fn store(&self, entry: &AtomicUsize, slot: usize, value: usize) {
        let Some((start, end)) = self.relro.filter(|(s, e)| (*s..*e).contains(&slot)) else {
            entry.store(value, Ordering::Release);
            return;
        };
        let page = slot & !(page_size() - 1);
        debug_assert!(page >= start && page < end);
        // SAFETY: a page of the object's RELRO range, read-only before and
        // after; nothing else writes it.
        unsafe {
            if libc::mprotect(page as *mut c_void, page_size(), libc::PROT_READ | libc::PROT_WRITE) != 0 {
                return;
            }
            entry.store(value, Ordering::Release);
            libc::mprotect(page as *mut c_void, page_size(), libc::PROT_READ);
        }
    }
}

thread_local! {
    /// Whether the calling thread is inside a wrapper's own work.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// A wrapper's guard against the runtime: the work a wrapper hands to the
/// runtime may call wrapped functions (an allocation), which must then
/// only pass through; and a call from the runtime itself (linked into the
/// executable, or a C library function it calls) that comes while it holds
/// one of its locks or flushes must not enter it again.
pub struct Reentry(());

impl Reentry {
    /// The guard, unless the calling thread is inside a wrapper's work,
    /// holds a runtime lock, flushes, or is being torn down.
    #[inline]
    pub fn enter() -> Option<Reentry> {
        if crate::sync::holds_runtime_lock() || crate::sync::inside_flush() {
            return None;
        }
        INSIDE.try_with(|inside| (!inside.replace(true)).then_some(Reentry(()))).ok().flatten()
    }
}

impl Drop for Reentry {
    fn drop(&mut self) {
        let _ = INSIDE.try_with(|inside| inside.set(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static ORIGINAL_MALLOC: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        /// The calls of this thread that reached the wrapper.
        static CALLS: Cell<usize> = const { Cell::new(0) };
    }

    unsafe extern "C" fn malloc_wrapper(size: usize) -> *mut c_void {
        let _ = CALLS.try_with(|n| n.set(n.get() + 1));
        type Malloc = unsafe extern "C" fn(usize) -> *mut c_void;
        // SAFETY: the original malloc.
        let original: Malloc = unsafe { std::mem::transmute::<usize, Malloc>(ORIGINAL_MALLOC.load(Ordering::Relaxed)) };
        // SAFETY: the caller's size.
        unsafe { original(size) }
    }

    /// `strdup` (in the C library) allocates through the C library's own
    /// GOT entry for `malloc`: wrapped, its calls reach the wrapper and the
    /// copy is right; undone, they no longer do.
    #[test]
    fn a_wrapped_function_is_called_through_its_wrapper_until_undone() {
        static HOOKS: [Hook; 1] =
            [Hook { name: c"malloc", wrapper: malloc_wrapper as *const (), original: &ORIGINAL_MALLOC }];
        // The copy, and the calls that reached the wrapper during strdup.
        let copy = |text: &CStr| {
            let before = CALLS.with(Cell::get);
            // SAFETY: a NUL-terminated string; the copy is freed here.
            unsafe {
                // Hidden from the optimizer, which would make a strdup of a
                // known string a malloc and a copy of this program's own.
                let p = libc::strdup(std::hint::black_box(text.as_ptr()));
                let calls = CALLS.with(Cell::get) - before;
                let copied = CStr::from_ptr(p).to_owned();
                libc::free(p.cast());
                (copied, calls)
            }
        };
        install(&HOOKS).unwrap();
        assert_eq!(copy(c"wrapped"), (c"wrapped".to_owned(), 1));
        uninstall(&HOOKS);
        assert_eq!(copy(c"unwrapped"), (c"unwrapped".to_owned(), 0));
    }

    #[test]
    fn an_unknown_function_is_an_error() {
        static ORIGINAL: AtomicUsize = AtomicUsize::new(0);
        static HOOKS: [Hook; 1] =
            [Hook { name: c"no_such_function_anywhere", wrapper: std::ptr::null(), original: &ORIGINAL }];
        assert_eq!(install(&HOOKS), Err(InstallError::NotFound("no_such_function_anywhere".into())));
    }
}
