//! Function discovery in an ELF file: the entry points to instrument.
//!
//! Three sources, merged by address: the symbol tables (`.symtab`, then
//! `.dynsym`), the `.eh_frame` FDEs (every function the compiler emitted
//! unwind information for, which finds the functions of stripped programs;
//! they are named by their address in the file, `0x1a2b`), and the PLT
//! entries (named `puts@plt`), one per `.rela.plt` relocation.

use crate::relocate::BranchTargets;
use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};
use iced_x86::{Decoder, DecoderOptions, Mnemonic};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, ObjectSymbolTable, RelocationTarget, SymbolKind};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A function entry point found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionEntry {
    /// Shared with the function's record (a compiler's 45,000 names were
    /// copied at each of its start-ups).
    pub name: Arc<str>,
    /// The entry's address in the file's own address space (before the
    /// load bias).
    pub address: u64,
    /// Its length in bytes; 0 when no source says.
    pub size: u64,
}

/// How far a function's code may reach: its length and where the next
/// function of its file starts (a file address), which bound the bytes a
/// jump at its entry may cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// 0 when no source says.
    pub size: u64,
    pub next: Option<u64>,
}

/// What the engine needs to know of an ELF file.
#[derive(Debug, Clone, Default)]
pub struct ModuleInfo {
    /// Entry points, sorted by address, one per address.
    pub functions: Vec<FunctionEntry>,
    /// The program entry (`e_entry`), in the file's addresses.
    pub entry: u64,
    /// The address of `.dynamic`, where the dynamic linker's `DT_DEBUG`
    /// entry points at `r_debug`; None for a static file.
    pub dynamic: Option<u64>,
    /// The lowest loaded segment: (address, file offset), page-aligned,
    /// from which the load bias follows.
    pub first_segment: (u64, u64),
    /// The file, read again for [`ModuleInfo::branch_targets`].
    pub path: PathBuf,
    pub(crate) branch_targets: OnceLock<BranchTargets>,
    /// The PLT entries (`.plt` and `.plt.got`) by the name of the function
    /// each jumps to.
    pub(crate) plt: HashMap<String, u64>,
    /// (PLT entry, GOT slot) of each entry of an IFUNC
    /// (`R_X86_64_IRELATIVE`): the dynamic linker fills the slot with the
    /// implementation its resolver picks, whose name the entry does not
    /// carry (the C library calls its string functions so).
    pub(crate) ifunc_plt: Vec<(u64, u64)>,
}

impl FunctionEntry {
    /// Whether `address`, at or past the entry, is in the function's
    /// code: one of unknown size holds everything up to the next entry.
    fn holds(&self, address: u64) -> bool {
        self.size == 0 || address < self.address.saturating_add(self.size)
    }
}

impl ModuleInfo {
    /// The direct branch targets of the module's functions, found on first
    /// use (decoding a whole library takes tens of milliseconds, which only
    /// a module with a function to patch should pay).
    pub fn branch_targets(&self) -> &BranchTargets {
        self.branch_targets.get_or_init(|| {
            let Ok(data) = std::fs::read(&self.path) else { return BranchTargets::default() };
            let Ok(file) = object::File::parse(data.as_slice()) else { return BranchTargets::default() };
            let code: Vec<(u64, &[u8])> = file
                .sections()
                .filter(|s| s.kind() == object::SectionKind::Text)
                .filter_map(|s| Some((s.address(), s.data().ok()?)))
                .collect();
            BranchTargets::scan(&code, self.functions.iter().map(|f| (f.address, f.size)))
        })
    }

    /// The extent of function `entry` (its index in `functions`): the next
    /// function is the one after it, without a search of them all (the
    /// binary search of a compiler's 45,000, a cache miss at each step,
    /// took a millisecond of the 4,300 patches of its start-up).
    pub fn extent(&self, entry: usize) -> Extent {
        Extent {
            size: self.functions.get(entry).map_or(0, |f| f.size),
            next: self.functions.get(entry + 1).map(|f| f.address),
        }
    }

    /// The function whose code holds `address` (the file's); one of
    /// unknown size holds everything up to the next.
    pub fn function_holding(&self, address: u64) -> Option<&FunctionEntry> {
        let f = &self.functions[self.functions.partition_point(|f| f.address <= address).checked_sub(1)?];
        f.holds(address).then_some(f)
    }

    /// [`Self::function_holding`], the last entry at or before `address`
    /// looked for first at index `near` and the one after it, with the
    /// index to look at next: addresses taken in order are mostly in the
    /// function of the last one or the next (a search of a compiler's
    /// 45,000 functions for each of its call sites missed the caches on its
    /// way down).
    pub fn function_holding_near(&self, address: u64, near: usize) -> (Option<&FunctionEntry>, usize) {
        let functions = &self.functions;
        let last_at_or_before = |n: usize| {
            functions.get(n).is_some_and(|f| f.address <= address)
                && functions.get(n + 1).is_none_or(|next| address < next.address)
        };
        let at = [near, near + 1]
            .into_iter()
            .find(|&n| last_at_or_before(n))
            .unwrap_or_else(|| functions.partition_point(|f| f.address <= address).saturating_sub(1));
        (functions.get(at).filter(|f| f.address <= address && f.holds(address)), at)
    }

    /// The address of this module's PLT entry that jumps to the function
    /// named `name`, if it has one.
    pub fn plt_entry(&self, name: &str) -> Option<u64> {
        self.plt.get(name).copied()
    }

    /// (PLT entry, GOT slot) of each IFUNC the module calls through its
    /// PLT, in its file's addresses.
    pub fn ifunc_plt_entries(&self) -> &[(u64, u64)] {
        &self.ifunc_plt
    }
}

/// Why a file could not be read as an ELF module.
#[derive(Debug)]
pub struct DiscoverError {
    pub path: String,
    pub reason: String,
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for DiscoverError {}

/// Reads the file at `path` and finds its functions.
pub fn discover_file(path: &Path) -> Result<ModuleInfo, DiscoverError> {
    let error = |reason: String| DiscoverError { path: path.display().to_string(), reason };
    let data = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    let mut info = discover(&data).map_err(error)?;
    info.path = path.to_path_buf();
    Ok(info)
}

/// Finds the functions of an ELF image held in `data`.
pub fn discover(data: &[u8]) -> Result<ModuleInfo, String> {
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(format!("not an x86-64 file ({:?})", file.architecture()));
    }
    let mut by_address: BTreeMap<u64, FunctionEntry> = BTreeMap::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() != SymbolKind::Text || !sym.is_definition() || sym.address() == 0 {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        let candidate = FunctionEntry { name: Arc::from(name), address: sym.address(), size: sym.size() };
        match by_address.get_mut(&sym.address()) {
            Some(known) => {
                if preferred_name(&candidate.name, &known.name) {
                    known.name = candidate.name;
                }
                known.size = known.size.max(candidate.size);
            }
            None => {
                by_address.insert(sym.address(), candidate);
            }
        }
    }
    for (address, size) in fde_ranges(&file) {
        by_address
            .entry(address)
            .and_modify(|f| {
                if f.size == 0 {
                    f.size = size;
                }
            })
            .or_insert_with(|| FunctionEntry { name: Arc::from(format!("{address:#x}")), address, size });
    }
    let mut plt = got_plt_entries(&file);
    let mut ifunc_plt = Vec::new();
    for (entry, ifunc_slot) in plt_entries(&file, data) {
        if let Some(slot) = ifunc_slot {
            ifunc_plt.push((entry.address, slot));
        }
        let name = entry.name.strip_suffix("@plt").unwrap_or(&entry.name).to_string();
        plt.insert(name, entry.address);
        by_address.entry(entry.address).or_insert(entry);
    }
    let first_segment =
        file.segments().map(|s| (s.address() & !0xfff, s.file_range().0 & !0xfff)).min().unwrap_or((0, 0));
    Ok(ModuleInfo {
        functions: by_address.into_values().collect(),
        entry: file.entry(),
        dynamic: file.section_by_name(".dynamic").map(|s| s.address()),
        first_segment,
        plt,
        ifunc_plt,
        ..ModuleInfo::default()
    })
}

/// Of two names of one address, the one a reader expects: fewer leading
/// underscores (`memcpy` over `__memcpy`), then the shorter, then the
/// first in byte order, so the choice does not depend on table order.
fn preferred_name(candidate: &str, known: &str) -> bool {
    let key = |n: &str| (n.len() - n.trim_start_matches('_').len(), n.len(), n.to_string());
    key(candidate) < key(known)
}

/// (start, length) of every FDE in `.eh_frame` but signal frames'.
fn fde_ranges(file: &object::File) -> Vec<(u64, u64)> {
    let Some(section) = file.section_by_name(".eh_frame") else { return Vec::new() };
    let Ok(data) = section.data() else { return Vec::new() };
    let eh_frame = EhFrame::new(data, LittleEndian);
    let mut bases = BaseAddresses::default().set_eh_frame(section.address());
    if let Some(text) = file.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    if let Some(got) = file.section_by_name(".got") {
        bases = bases.set_got(got.address());
    }
    let mut ranges = Vec::new();
    let mut entries = eh_frame.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        // A signal frame's FDE (glibc's signal return code) starts a byte
        // before the code, for unwinders that look up a return address
        // minus one: no function starts there.
        if let CieOrFde::Fde(partial) = entry
            && let Ok(fde) = partial.parse(EhFrame::cie_from_offset)
            && fde.initial_address() != 0
            && fde.len() != 0
            && !fde.is_signal_trampoline()
        {
            ranges.push((fde.initial_address(), fde.len()));
        }
    }
    ranges
}

/// The PLT entries: entry `i` of `.plt.sec` (or of `.plt`, after its
/// 16-byte header) jumps through the GOT slot of `.rela.plt` entry `i`;
/// with it, that slot where the entry is an IFUNC's.
fn plt_entries(file: &object::File, data: &[u8]) -> Vec<(FunctionEntry, Option<u64>)> {
    const ENTRY: u64 = 16;
    const RELA: usize = 24;
    const R_X86_64_IRELATIVE: u64 = 37;
    let (plt, first) = match (file.section_by_name(".plt.sec"), file.section_by_name(".plt")) {
        (Some(sec), _) => (sec, 0),
        (None, Some(plt)) => (plt, 1),
        (None, None) => return Vec::new(),
    };
    let Some(rela) = file.section_by_name(".rela.plt") else { return Vec::new() };
    let Some((offset, size)) = rela.file_range() else { return Vec::new() };
    let Some(table) = offset.checked_add(size).and_then(|end| data.get(offset as usize..end as usize)) else {
        return Vec::new();
    };
    // Addresses come from the file: a corrupt one must not overflow.
    let plt_end = plt.address().saturating_add(plt.size());
    let names: BTreeMap<usize, String> =
        file.dynamic_symbols().filter_map(|s| Some((s.index().0, s.name().ok()?.to_string()))).collect();
    let mut entries = Vec::new();
    for (i, rel) in table.chunks_exact(RELA).enumerate() {
        let slot = u64::from_le_bytes(rel[0..8].try_into().expect("8 bytes"));
        let info = u64::from_le_bytes(rel[8..16].try_into().expect("8 bytes"));
        let addend = i64::from_le_bytes(rel[16..24].try_into().expect("8 bytes"));
        // An IRELATIVE slot has no symbol: it is named by its resolver.
        let name = names.get(&((info >> 32) as usize)).cloned().unwrap_or_else(|| format!("{addend:#x}"));
        let address = plt.address().saturating_add((i as u64 + first) * ENTRY);
        if address.saturating_add(ENTRY) > plt_end {
            break;
        }
        let ifunc_slot = (info & 0xffff_ffff == R_X86_64_IRELATIVE).then_some(slot);
        entries.push((FunctionEntry { name: Arc::from(format!("{name}@plt")), address, size: ENTRY }, ifunc_slot));
    }
    entries
}

/// The `.plt.got` entries (a `jmp [rip+d]` through the GOT slot of a
/// function whose address the module also takes, which the linker binds at
/// load): the name of the function each jumps to, and its address. They
/// are not instrumented: a call through one enters its function with the
/// return address of the call.
fn got_plt_entries(file: &object::File) -> HashMap<String, u64> {
    let Some(code) = file.section_by_name(".plt.got") else { return HashMap::new() };
    let (Ok(bytes), Some(symbols)) = (code.data(), file.dynamic_symbol_table()) else { return HashMap::new() };
    let slots: HashMap<u64, String> = file
        .dynamic_relocations()
        .into_iter()
        .flatten()
        .filter_map(|(slot, rel)| match rel.target() {
            RelocationTarget::Symbol(i) => Some((slot, symbols.symbol_by_index(i).ok()?.name().ok()?.to_string())),
            _ => None,
        })
        .collect();
    let mut entries = HashMap::new();
    // An entry starts at its first instruction that is not padding
    // (`endbr64` where the module has indirect branch tracking).
    let mut start = None;
    for insn in Decoder::with_ip(64, bytes, code.address(), DecoderOptions::NONE) {
        if insn.mnemonic() == Mnemonic::Nop {
            continue;
        }
        let entry = *start.get_or_insert(insn.ip());
        if insn.mnemonic() == Mnemonic::Jmp {
            if insn.is_ip_rel_memory_operand()
                && let Some(name) = slots.get(&insn.ip_rel_memory_address())
            {
                entries.insert(name.clone(), entry);
            }
            start = None;
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefers_the_public_name_of_an_alias() {
        assert!(preferred_name("memcpy", "__memcpy"));
        assert!(!preferred_name("__memcpy_avx", "memcpy"));
        assert!(preferred_name("abc", "abd"));
    }

    #[test]
    fn finds_libc_functions_with_sizes_and_the_plt_of_a_program() {
        let libc = discover_file(Path::new("/lib/x86_64-linux-gnu/libc.so.6")).expect("libc readable");
        let malloc = libc.functions.iter().find(|f| &*f.name == "malloc").expect("malloc found");
        assert!(malloc.size > 0);
        assert!(libc.functions.windows(2).all(|w| w[0].address < w[1].address));
        let gzip = discover_file(Path::new("/bin/sh")).expect("/bin/sh readable");
        assert!(gzip.functions.iter().any(|f| f.name.ends_with("@plt")), "PLT entries found");
        assert!(gzip.functions.iter().any(|f| f.name.starts_with("0x")), "FDE-only functions found");
    }

    #[test]
    fn a_function_found_near_a_hint_is_the_one_found_by_a_search() {
        let libc = discover_file(Path::new("/lib/x86_64-linux-gnu/libc.so.6")).expect("libc readable");
        let functions = &libc.functions;
        let last = functions.last().expect("functions");
        let (low, high) = (functions[0].address.saturating_sub(64), last.address + last.size + 64);
        let mut near = 0;
        // In order, as call sites are named, and then at hints anywhere.
        for address in (low..high).step_by(7) {
            let (found, at) = libc.function_holding_near(address, near);
            assert_eq!(found.map(|f| f.address), libc.function_holding(address).map(|f| f.address), "{address:#x}");
            near = at;
        }
        for (k, address) in (low..high).step_by(4099).enumerate() {
            let (found, _) = libc.function_holding_near(address, k * 31 % (functions.len() + 2));
            assert_eq!(found.map(|f| f.address), libc.function_holding(address).map(|f| f.address), "{address:#x}");
        }
    }

    #[test]
    fn a_plt_relocation_table_whose_range_overflows_is_skipped() {
        // Found by the elf_functions fuzz target: .rela.plt offset + size
        // past 2^64.
        let data = include_bytes!("../tests/repro/rela-plt-range-overflow.elf");
        if let Ok(info) = discover(data) {
            let code = [(0u64, data.as_slice())];
            BranchTargets::scan(&code, info.functions.iter().map(|f| (f.address, f.size)));
        }
    }

    #[test]
    fn rejects_what_is_not_elf() {
        assert!(discover(b"not an elf file").is_err());
    }
}
