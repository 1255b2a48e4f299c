//! Program addresses to source: which loaded module an address is in, and
//! the function, file and line there, from the module's DWARF debug
//! information or, without it, its symbol table, with C++ and Rust names
//! demangled. Used at flush (never in a signal handler), on the flushing
//! thread: modules are read lazily, and every address is looked up once.

use caliper_data::hash::FxHashMap;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::Arc;

/// What an address resolves to; a part is `None` where it is unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceInfo {
    /// The function the address is in (the function compiled, not one
    /// inlined into it), demangled.
    pub function: Option<String>,
    /// The source file of the code at the address (inlined code's own).
    pub file: Option<String>,
    /// Its line.
    pub line: Option<u32>,
    /// The module's file (executable or shared library).
    pub module: Option<String>,
}

/// One loaded module: where it is and how to read it.
struct Module {
    path: String,
    /// What the module's addresses are offset by in this process.
    bias: u64,
    /// Its loaded segments, as process addresses.
    segments: Vec<(u64, u64)>,
    /// Its debug information and symbols, read on first use; `None` if
    /// the file cannot be read (the vDSO, a deleted file).
    loader: Option<Option<addr2line::Loader>>,
}

/// Resolves addresses of the calling process (see [`SourceInfo`]).
#[derive(Default)]
pub struct Symbolizer {
    modules: Vec<Module>,
    cache: FxHashMap<u64, Arc<SourceInfo>>,
}

impl Symbolizer {
    /// A symbolizer that has read nothing yet.
    pub fn new() -> Symbolizer {
        Symbolizer::default()
    }

    /// What `address` resolves to. Reads the process's list of modules
    /// again if the address is in none of those known (a library loaded
    /// since).
    pub fn lookup(&mut self, address: u64) -> Arc<SourceInfo> {
        if let Some(info) = self.cache.get(&address) {
            return info.clone();
        }
        let mut module = self.module_of(address);
        if module.is_none() {
            self.reload_modules();
            module = self.module_of(address);
        }
        let info = Arc::new(match module {
            Some(i) => resolve(&mut self.modules[i], address),
            None => SourceInfo::default(),
        });
        self.cache.insert(address, info.clone());
        info
    }

    fn module_of(&self, address: u64) -> Option<usize> {
        self.modules.iter().position(|m| m.segments.iter().any(|&(start, end)| (start..end).contains(&address)))
    }

    /// Reads the loaded modules, keeping what was read of those still
    /// loaded at the same place.
    fn reload_modules(&mut self) {
        let mut old = std::mem::take(&mut self.modules);
        for mut module in loaded_modules() {
            if let Some(i) = old.iter().position(|m| m.path == module.path && m.bias == module.bias) {
                module.loader = old.swap_remove(i).loader;
            }
            self.modules.push(module);
        }
        if !old.is_empty() {
            // Modules went away: their addresses may mean something else now.
            self.cache.clear();
        }
    }
}

/// Resolves `address` in `module`.
fn resolve(module: &mut Module, address: u64) -> SourceInfo {
    let mut info = SourceInfo { module: Some(module.path.clone()), ..SourceInfo::default() };
    let path = module.path.clone();
    let Some(loader) = module.loader.get_or_insert_with(|| addr2line::Loader::new(&path).ok()) else { return info };
    let probe = address.wrapping_sub(module.bias);
    if let Ok(mut frames) = loader.find_frames(probe) {
        // Innermost first: the last one is the function compiled.
        while let Ok(Some(frame)) = frames.next() {
            if let Some(name) = frame.function.as_ref().and_then(|f| f.demangle().ok()) {
                info.function = Some(name.into_owned());
            }
        }
    }
    if info.function.is_none() {
        info.function = loader.find_symbol(probe).map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
    }
    if let Ok(Some(location)) = loader.find_location(probe) {
        info.file = location.file.map(str::to_string);
        info.line = location.line;
    }
    info
}

/// The modules loaded in the process now, with their segments.
fn loaded_modules() -> Vec<Module> {
    unsafe extern "C" fn add(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes valid entries, and `data` is the list
        // below, borrowed for the call.
        let (info, modules) = unsafe { (&*info, &mut *(data as *mut Vec<Module>)) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a C string of the loader's.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
        };
        let bias = info.dlpi_addr;
        let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        let segments = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_LOAD)
            .map(|h| (bias.wrapping_add(h.p_vaddr), bias.wrapping_add(h.p_vaddr).wrapping_add(h.p_memsz)))
            .collect();
        // The executable comes without a name.
        let path = match name.is_empty() {
            true => executable().unwrap_or_default(),
            false => name,
        };
        modules.push(Module { path, bias, segments, loader: None });
        0
    }
    let mut modules: Vec<Module> = Vec::new();
    // SAFETY: the callback only reads the entries and adds to the list.
    unsafe { libc::dl_iterate_phdr(Some(add), &mut modules as *mut Vec<Module> as *mut libc::c_void) };
    modules
}

/// The path of the running executable.
fn executable() -> Option<String> {
    std::fs::read_link("/proc/self/exe").ok().map(|p: PathBuf| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Its code is its own (no inlined code at its entry, whose address
    /// would name the inlined function's file).
    #[inline(never)]
    fn a_function_with_a_known_name(x: u64) -> u64 {
        x.wrapping_mul(x) ^ 42
    }

    #[test]
    fn an_address_of_this_program_resolves_to_its_function_file_and_module() {
        let mut symbols = Symbolizer::new();
        let address = a_function_with_a_known_name as *const () as u64;
        assert_eq!(std::hint::black_box(a_function_with_a_known_name)(2), 46);
        let info = symbols.lookup(address);
        let function = info.function.as_deref().unwrap_or_default();
        assert!(function.ends_with("a_function_with_a_known_name"), "{info:?}");
        assert!(info.file.as_deref().is_some_and(|f| f.ends_with("symbols.rs")), "{info:?}");
        assert!(info.line.is_some(), "{info:?}");
        assert_eq!(info.module, executable(), "{info:?}");
        assert!(Arc::ptr_eq(&info, &symbols.lookup(address)), "looked up once");
    }

    #[test]
    fn an_address_in_a_shared_library_names_the_library() {
        let mut symbols = Symbolizer::new();
        let info = symbols.lookup(libc::getpid as *const () as u64);
        assert!(info.module.as_deref().is_some_and(|m| m.contains("libc.so")), "{info:?}");
        assert!(info.function.as_deref().is_some_and(|f| f.contains("getpid")), "{info:?}");
    }

    #[test]
    fn an_address_outside_every_module_resolves_to_nothing() {
        assert_eq!(*Symbolizer::new().lookup(8), SourceInfo::default());
    }
}
