//! One traced address space: its loaded modules, the probes at function
//! entries, and the trampoline regions mapped into it.
//!
//! A probe starts as an `int3` over the entry's first byte. What it
//! becomes on its first hit is the engine's choice ([`crate::engine`]);
//! this module does the memory work: arming, trampolines, the displaced
//! copy of an entry instruction that a breakpoint resumes through, and
//! taking everything out again before a detach.

use crate::arc_table;
use crate::counters::Counters;
use crate::detour;
use crate::discover::{Extent, FunctionEntry, ModuleInfo};
use crate::filter::{self, Filter};
use crate::functions::FunctionTable;
use crate::inject::{self, MapRequest};
use crate::maps::{self, Mapping};
use crate::memory::Memory;
use crate::module_cache::ModuleCache;
use crate::ptrace::Pid;
use crate::relocate::{self, CALL_REL32, Increment, JUMP_LEN, PltCall, Probe as TrampolineProbe, Unpatchable};
use crate::text_source::TextSource;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

const INT3: u8 = 0xcc;
/// A `call rel32`'s length.
pub const CALL_LEN: u64 = 5;
/// Bytes of trampoline code per region (after one page of scratch space).
const CODE_BYTES: u64 = 4 << 20;
const SCRATCH: u64 = 4096;
/// The most bytes a patched entry's moved instructions cover: the jump's
/// five, and the rest of an instruction of at most 15 that they split.
const MAX_ENTRY_BYTES: u64 = JUMP_LEN + 14;
/// How far a region may lie from the module it serves: a rel32 reaches
/// 2 GiB, less the region's own size and a margin.
const REACH: u64 = (1 << 31) - (64 << 20);

/// Work of the dynamic linker's that the engine watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Internal {
    /// `_dl_debug_state`, called after each change of the loaded
    /// libraries (the `r_debug` rendezvous).
    LinkerRendezvous,
}

/// A patched entry: a jump to its trampoline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub trampoline: u64,
    /// Where the trampoline has the moved instructions, past its counting.
    pub moved: u64,
    /// The bytes the jump and its padding replaced.
    pub original: Vec<u8>,
    /// With a stub, the jump is a `jmp rel8` to this address in nearby
    /// padding, which holds the `jmp rel32` to the trampoline (see
    /// [`crate::detour`]).
    pub stub: Option<u64>,
}

/// The state of the code at a probed address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeState {
    /// `int3` in place.
    Armed,
    /// `int3` in place; a hit resumes through the displaced copy of the
    /// entry instruction at `resume`.
    Displaced { resume: u64 },
    /// The entry is a jump to the trampoline (boxed: the probes of a
    /// compiler's 45,000 entries are mostly armed, and their states the
    /// size of this one were a megabyte and a half of the tool's fresh
    /// memory).
    Patched(Box<Patch>),
    /// Original code back in place.
    Removed,
}

/// A probed address.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The function entry here, if one is instrumented.
    pub function: Option<usize>,
    pub internal: Option<Internal>,
    /// The byte the `int3` replaced.
    pub original: u8,
    pub state: ProbeState,
    /// A debugger breakpoint is here: the `int3` stays at the address
    /// whatever the engine makes of the probe (a patched entry keeps it
    /// over the first byte of its jump), so that every arrival traps.
    pub user_break: bool,
}

/// Why a debugger breakpoint cannot be put at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakError {
    /// The address is in no module's code (a trampoline, a heap page).
    NotInModule(u64),
    /// The address is inside the jump that replaced the first bytes of
    /// the patched entry at this address.
    InsidePatchedEntry(u64),
    /// The address is inside the jump to a trampoline that the padding at
    /// this address holds for a short entry jump.
    InsideStub(u64),
    /// The memory could not be read or written.
    Memory(String),
}

impl std::fmt::Display for BreakError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BreakError::NotInModule(at) => write!(f, "{at:#x} is not in the code of a loaded module"),
            BreakError::InsidePatchedEntry(entry) => {
                write!(f, "inside the jump that replaced the entry at {entry:#x}; break at the entry instead")
            }
            BreakError::InsideStub(stub) => {
                write!(
                    f,
                    "inside the jump to a trampoline that the padding at {stub:#x} holds; break at the entry instead"
                )
            }
            BreakError::Memory(why) => write!(f, "cannot write the breakpoint: {why}"),
        }
    }
}

/// A module mapped into the address space.
#[derive(Debug, Clone)]
pub struct LoadedModule {
    pub path: Arc<str>,
    pub bias: u64,
    /// The range of its executable mappings.
    pub low: u64,
    pub high: u64,
    pub info: Arc<ModuleInfo>,
    /// The trampoline region serving it.
    pub region: Option<usize>,
    /// What the first calls into it have instrumented ahead of its
    /// functions' own first calls.
    pub ahead: Ahead,
}

/// What the first calls into a module have given trampolines to, ahead of
/// its functions' own first calls (see [`crate::engine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ahead {
    /// None of its functions has been called.
    NotEntered,
    /// The functions that earlier runs of the program called; `misses`
    /// first calls of others have stopped the program since.
    CalledBefore { misses: u32 },
    /// Every function that can take one.
    All,
}

/// Memory mapped into the tracee for trampolines and counters.
#[derive(Debug, Clone)]
pub struct Region {
    pub next: u64,
    pub end: u64,
    /// Where the counter file is mapped.
    pub counters: u64,
    /// Where the table of call arcs is, in the counter file.
    pub arc_table: u64,
    /// The arc routines of the region's arc trampolines, once placed (see
    /// [`crate::arc_table`]): the one of shared counts, and the one of
    /// per-processor copies.
    pub arc_routines: [Option<u64>; 2],
}

/// How a trampoline counts, in counter-file slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counting {
    /// The function's calls.
    Calls { slot: usize },
    /// The calls, and the call arcs in the table of arcs under the
    /// callee's arc `id` (see [`relocate::ArcProbe`]).
    Arcs { slot: usize, id: u32 },
}

/// A call or GOT slot sent to a trampoline.
#[derive(Debug, Clone)]
pub struct Redirect {
    /// The bytes it held.
    pub before: Vec<u8>,
    /// The lowest address of the module it belongs to: with the module
    /// unmapped, there is nothing to put back (and another module may
    /// lie there since).
    pub module: u64,
}

/// A function entry whose first instructions move to a trampoline.
struct MovedEntry<'a> {
    addr: u64,
    moved: &'a [iced_x86::Instruction],
    /// The bytes they replace (what the jump and its padding cover).
    original: Vec<u8>,
    /// The padding the entry's short jump goes through, if it takes one.
    stub: Option<u64>,
}

/// Everything the engine tracks of one address space.
#[derive(Debug)]
pub struct Image {
    /// The process whose memory this is (the first, for a shared one).
    pub pid: Pid,
    /// The program it runs (its executable's path), where it can be read.
    pub program: Option<Arc<str>>,
    pub memory: Memory,
    pub modules: Vec<LoadedModule>,
    /// By address, so that the probes in a range of bytes are found at once.
    pub probes: BTreeMap<u64, Probe>,
    /// The prefix bytes of the trampolines' unlocked increments.
    pub unlocked: Vec<u64>,
    /// The padding that holds jumps to trampolines, with the bytes each
    /// jump replaced. A stub stays when its entry is restored: a thread
    /// may be between the two jumps.
    pub stubs: BTreeMap<u64, [u8; JUMP_LEN as usize]>,
    /// The calls and GOT slots sent to the trampoline of a function that
    /// keeps its breakpoint (see [`Image::redirect_callers`]), by address.
    pub redirects: BTreeMap<u64, Redirect>,
    pub regions: Vec<Region>,
    /// Whether more than one thread may run the trampolines: the image's
    /// own threads, or a forked process's, which runs a copy of them that
    /// counts in the same slots. Their increments are atomic then; until
    /// then they need not be.
    pub shared: bool,
    /// The counter slots of the functions the image's trampolines count,
    /// by function, where the image counts in slots of its own: then no
    /// other image counts there, and its increments may stay unlocked while
    /// its one thread runs them, whatever other processes run (a compiler's
    /// increments were all locked, and per processor, from the moment its
    /// driver spawned it: twice its time under fcount). None: it counts in
    /// the slots that the images without slots of their own share, and its
    /// increments are atomic.
    pub slots: Option<SlotMap>,
    /// The call sites sent to trampolines of their own, which count their
    /// calls (see [`Image::count_site`]), by the call's address.
    pub sites: BTreeMap<u64, CountedSite>,
    /// Of those that call a PLT entry, the counts of the function behind
    /// it (see [`Image::count_site_through_plt`]), by the call's address.
    pub sites_behind_plt: BTreeMap<u64, CountedSite>,
}

/// A call site that counts its own calls: the counter slot it counts in,
/// and the id of its arc in the engine's table of arcs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountedSite {
    pub slot: usize,
    pub arc: usize,
}

/// Counter slots by function id.
pub type SlotMap = caliper_data::hash::FxHashMap<usize, usize>;

/// What a stopped thread lends to work that runs code in the tracee.
pub struct Stopped<'a> {
    pub tid: Pid,
    pub counters: &'a Counters,
    /// Signals that arrived while the thread stepped, to deliver later.
    pub deferred: &'a mut Vec<i32>,
}

impl Image {
    /// A new, empty image for process `pid`.
    pub fn new(pid: Pid) -> io::Result<Image> {
        let program = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        Ok(Image {
            pid,
            program: program.map(|p| Arc::from(p.to_string_lossy().as_ref())),
            memory: Memory::open_or_by_words(pid)?,
            modules: Vec::new(),
            probes: BTreeMap::new(),
            unlocked: Vec::new(),
            stubs: BTreeMap::new(),
            redirects: BTreeMap::new(),
            regions: Vec::new(),
            shared: true,
            slots: None,
            sites: BTreeMap::new(),
            sites_behind_plt: BTreeMap::new(),
        })
    }

    /// The image of a forked child: the same code, probes, regions and
    /// counter slots (its memory is a copy of the parent's), in the child's
    /// memory. Both run the trampolines from now on: the engine makes both
    /// images shared.
    pub fn fork(&self, child: Pid) -> io::Result<Image> {
        Ok(Image {
            pid: child,
            program: self.program.clone(),
            memory: Memory::open_or_by_words(child)?,
            modules: self.modules.clone(),
            probes: self.probes.clone(),
            unlocked: self.unlocked.clone(),
            stubs: self.stubs.clone(),
            redirects: self.redirects.clone(),
            regions: self.regions.clone(),
            shared: self.shared,
            slots: self.slots.clone(),
            sites: self.sites.clone(),
            sites_behind_plt: self.sites_behind_plt.clone(),
        })
    }

    /// The counter slots its trampolines count in that are its own: its
    /// functions' (where it has slots of its own) and its call sites'.
    pub fn slots_taken(&self) -> impl Iterator<Item = usize> + '_ {
        let functions = self.slots.iter().flat_map(|slots| slots.values().copied());
        let sites = self.sites.values().chain(self.sites_behind_plt.values());
        functions.chain(sites.map(|site| site.slot))
    }

    /// The module holding `addr`.
    pub fn module_of(&self, addr: u64) -> Option<usize> {
        self.modules.iter().position(|m| (m.low..m.high).contains(&addr))
    }

    /// Whether `addr` lies in the trampolines written so far.
    pub fn in_trampolines(&self, addr: u64) -> bool {
        self.regions.iter().any(|r| (r.end - CODE_BYTES + SCRATCH..r.next).contains(&addr))
    }

    /// Brings the module list up to date with `/proc/PID/maps`: modules
    /// gone are forgotten (their code is unmapped), new ones have their
    /// selected functions armed (with `arm`; without, the modules are only
    /// known, to name sampled addresses). Returns the paths of the new
    /// modules.
    pub fn scan(
        &mut self,
        arm: bool,
        filter: &Filter,
        functions: &mut FunctionTable,
        cache: &mut ModuleCache,
    ) -> io::Result<Vec<Arc<str>>> {
        let maps = maps::read(self.pid)?;
        let mapped: Vec<(&str, u64, u64)> = executable_files(&maps);
        let known_before = self.modules.len();
        self.modules.retain(|m| mapped.iter().any(|&(p, low, _)| p == &*m.path && low == m.low));
        // The probes and redirects of modules gone go with them (a walk of
        // all a compiler's probes at each library it loads, where most
        // loads unmap none).
        if self.modules.len() < known_before {
            let modules = &self.modules;
            self.probes.retain(|addr, _| modules.iter().any(|m| (m.low..m.high).contains(addr)));
            self.redirects.retain(|_, r| modules.iter().any(|m| m.low == r.module));
        }
        let known: Vec<u64> = self.modules.iter().map(|m| m.low).collect();
        let mut added = Vec::new();
        for (path, low, high) in mapped {
            // The dynamic linker is always known (its rendezvous is
            // watched), even when none of its functions is instrumented.
            if known.contains(&low) || filter.excludes_module(path) && !filter::is_dynamic_linker(path) {
                continue;
            }
            let info = cache.get(path);
            let Some(bias) = load_bias(&maps, path, &info) else { continue };
            let module: Arc<str> = Arc::from(path);
            if arm && !filter.excludes_module(path) {
                let mut known = functions.of_module(&module);
                known.reserve(info.functions.len());
                let selected: Vec<(u64, usize)> = info
                    .functions
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| filter.selects_in(path, &f.name) && filter.in_ranges(path, f.address))
                    .map(|(entry, f)| (f.address.wrapping_add(bias), known.intern(&info, entry)))
                    .filter(|(addr, _)| (low..high).contains(addr))
                    .collect();
                let source = TextSource::open(&maps, path, low, high);
                self.arm(&selected, source.as_ref())?;
            }
            self.modules.push(LoadedModule {
                path: module.clone(),
                bias,
                low,
                high,
                info,
                region: None,
                ahead: Ahead::NotEntered,
            });
            added.push(module);
        }
        Ok(added)
    }

    /// Puts an `int3` at each (address, function) not probed yet, a run of
    /// pages at a time (see [`Memory::overwrite_each`]); the pages' bytes
    /// from the module's file where `source` has them (see [`TextSource`]).
    fn arm(&mut self, entries: &[(u64, usize)], source: Option<&TextSource>) -> io::Result<()> {
        // A module new to the image (the usual case) has no probe among its
        // entries: one look at their span, not one per entry.
        let low = entries.iter().map(|e| e.0).min().unwrap_or(0);
        let high = entries.iter().map(|e| e.0).max().unwrap_or(0);
        let mut fresh: Vec<(u64, usize)> = if self.probes.range(low..=high).next().is_none() {
            entries.to_vec()
        } else {
            entries.iter().filter(|e| !self.probes.contains_key(&e.0)).copied().collect()
        };
        fresh.sort_unstable_by_key(|e| e.0);
        fresh.dedup_by_key(|e| e.0);
        let addrs: Vec<u64> = fresh.iter().map(|e| e.0).collect();
        let fresh_count = fresh.len();
        let from_file = |at, buffer: &mut [u8]| match source {
            Some(source) => source.read(at, buffer),
            None => Err(io::ErrorKind::NotFound.into()),
        };
        let replaced = self.memory.overwrite_each(&addrs, INT3, from_file)?;
        let armed = fresh.into_iter().zip(replaced).filter_map(|((addr, function), original)| {
            let state = ProbeState::Armed;
            Some((
                addr,
                Probe { function: Some(function), internal: None, original: original?, state, user_break: false },
            ))
        });
        // Many more than the image has: built in one pass from the sorted
        // entries and merged in, which takes a pass over both (a compiler's
        // 45,000, inserted one by one, took a twentieth of the tool's
        // start-up); a few, as a small library brings, inserted.
        if fresh_count >= self.probes.len() / 4 {
            self.probes.append(&mut armed.collect());
        } else {
            self.probes.extend(armed);
        }
        Ok(())
    }

    /// Runs `work` in one batch of memory writes (see
    /// [`Memory::begin_batch`]): for work on many places while no thread of
    /// the process runs the code it changes.
    fn batched(&mut self, work: impl FnOnce(&mut Image) -> io::Result<()>) -> io::Result<()> {
        self.memory.begin_batch();
        let done = work(self);
        self.memory.end_batch().and(done)
    }

    /// Adds an internal probe at `addr` (arming it if no probe is there).
    pub fn watch(&mut self, addr: u64, internal: Internal) -> io::Result<()> {
        if let Some(probe) = self.probes.get_mut(&addr) {
            probe.internal = Some(internal);
            return Ok(());
        }
        self.plant(addr, Some(internal), false)
    }

    /// Puts an `int3` at `addr`, where no probe is, for the engine's own
    /// work or a debugger's breakpoint.
    fn plant(&mut self, addr: u64, internal: Option<Internal>, user_break: bool) -> io::Result<()> {
        let mut byte = [0u8];
        self.memory.read(addr, &mut byte)?;
        self.memory.write(addr, &[INT3])?;
        let probe = Probe { function: None, internal, original: byte[0], state: ProbeState::Armed, user_break };
        self.probes.insert(addr, probe);
        Ok(())
    }

    /// Makes every arrival at `addr` trap, for a debugger: the `int3` of
    /// a probe still armed serves, a patched entry gets one over the first
    /// byte of its jump (a hit resumes in the trampoline), and any other
    /// address one of its own (resumed through a moved copy of the
    /// instruction, as a breakpoint-counted entry is).
    pub fn set_user_break(&mut self, addr: u64) -> Result<(), BreakError> {
        if self.module_of(addr).is_none() {
            return Err(BreakError::NotInModule(addr));
        }
        if let Some(entry) = self.patched_entry_covering(addr).filter(|&entry| entry != addr) {
            return Err(BreakError::InsidePatchedEntry(entry));
        }
        if let Some(stub) = self.stub_covering(addr, addr + 1) {
            return Err(BreakError::InsideStub(stub));
        }
        let memory_error = |e: io::Error| BreakError::Memory(e.to_string());
        let Some(probe) = self.probes.get_mut(&addr) else {
            return self.plant(addr, None, true).map_err(memory_error);
        };
        probe.user_break = true;
        match probe.state {
            ProbeState::Armed | ProbeState::Displaced { .. } => Ok(()),
            ProbeState::Patched(_) => self.memory.write(addr, &[INT3]).map_err(memory_error),
            ProbeState::Removed => {
                // Armed again: its next hit decides anew, as a kept breakpoint.
                probe.state = ProbeState::Armed;
                self.memory.write(addr, &[INT3]).map_err(memory_error)
            }
        }
    }

    /// Takes a debugger's breakpoint at `addr` out again, leaving what the
    /// engine has there.
    pub fn clear_user_break(&mut self, addr: u64) -> io::Result<()> {
        let Some(probe) = self.probes.get_mut(&addr) else { return Ok(()) };
        probe.user_break = false;
        match probe.state {
            ProbeState::Patched(ref patch) => {
                let (trampoline, stub) = (patch.trampoline, patch.stub);
                self.write_jump(addr, trampoline, stub, false).map_err(|e| io::Error::other(e.to_string()))
            }
            ProbeState::Armed | ProbeState::Displaced { .. }
                if probe.function.is_none() && probe.internal.is_none() =>
            {
                self.memory.write(addr, &[probe.original])?;
                self.probes.remove(&addr);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The patched entry whose replaced bytes hold `addr`, if any.
    pub fn patched_entry_covering(&self, addr: u64) -> Option<u64> {
        self.probes.range(addr.saturating_sub(MAX_ENTRY_BYTES)..=addr).find_map(|(&at, probe)| match &probe.state {
            ProbeState::Patched(patch) if at + patch.original.len() as u64 > addr => Some(at),
            _ => None,
        })
    }

    /// The function holding `addr`: its module and its entry (as the file
    /// has it). A function of unknown size holds everything up to the next.
    pub fn function_at(&self, addr: u64) -> Option<(&LoadedModule, &FunctionEntry)> {
        let module = &self.modules[self.module_of(addr)?];
        Some((module, module.info.function_holding(addr.wrapping_sub(module.bias))?))
    }

    /// Puts the original byte back at a probe.
    pub fn remove(&mut self, addr: u64) -> io::Result<()> {
        let Some(probe) = self.probes.get_mut(&addr) else { return Ok(()) };
        self.memory.write(addr, &[probe.original])?;
        probe.state = ProbeState::Removed;
        Ok(())
    }

    /// The code at `addr` as the program has it: up to `len` bytes (fewer
    /// at a mapping's end), every `int3` and jump of ours in them replaced
    /// by the bytes they cover.
    pub fn original_code(&self, addr: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut code = vec![0u8; len.max(16)];
        let n = self.memory.read_partial(addr, &mut code)?;
        code.truncate(n);
        let mut put_back = |at: u64, covered: &[u8]| {
            for (i, &byte) in covered.iter().enumerate() {
                if let Some(slot) = (at + i as u64).checked_sub(addr).and_then(|o| code.get_mut(o as usize)) {
                    *slot = byte;
                }
            }
        };
        // A patched entry's jump may start before `addr` and cover it.
        let first = addr.saturating_sub(MAX_ENTRY_BYTES);
        for (&at, probe) in self.probes.range(first..addr + n as u64) {
            match &probe.state {
                ProbeState::Removed => continue,
                ProbeState::Patched(patch) => put_back(at, &patch.original),
                ProbeState::Armed | ProbeState::Displaced { .. } => put_back(at, &[probe.original]),
            }
        }
        for (&at, original) in self.stubs.range(addr.saturating_sub(JUMP_LEN - 1)..addr + n as u64) {
            put_back(at, original);
        }
        Ok(code)
    }

    /// The trampoline region of module `m`, mapped on first use.
    pub fn region_for(&mut self, m: usize, thread: &mut Stopped) -> io::Result<usize> {
        if let Some(r) = self.modules[m].region {
            return Ok(r);
        }
        let (low, high) = (self.modules[m].low, self.modules[m].high);
        let total = CODE_BYTES + thread.counters.mapped_len();
        let pid_maps = maps::read(self.pid)?;
        let at = maps::free_range_near(&pid_maps, low, high, total, REACH)
            .ok_or_else(|| io::Error::other("no free address range near the module"))?;
        let d = &mut *thread.deferred;
        let code = MapRequest {
            addr: at,
            len: CODE_BYTES,
            prot: libc::PROT_READ | libc::PROT_EXEC,
            flags: libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            fd: -1,
        };
        inject::mmap(&self.memory, thread.tid, code, d)?;
        let path = CString::new(thread.counters.path().as_os_str().as_bytes()).map_err(io::Error::other)?;
        self.memory.write(at, path.as_bytes_with_nul())?;
        let open = [libc::AT_FDCWD as u64, at, (libc::O_RDWR | libc::O_CLOEXEC) as u64, 0, 0, 0];
        let fd = inject::checked(inject::syscall(&self.memory, thread.tid, libc::SYS_openat, open, d)?)?;
        let shared = MapRequest {
            addr: at + CODE_BYTES,
            len: thread.counters.mapped_len(),
            prot: libc::PROT_READ | libc::PROT_WRITE,
            flags: libc::MAP_SHARED,
            fd: fd as i64,
        };
        let mapped = inject::mmap(&self.memory, thread.tid, shared, d);
        inject::syscall(&self.memory, thread.tid, libc::SYS_close, [fd, 0, 0, 0, 0, 0], d)?;
        mapped?;
        let counters = at + CODE_BYTES;
        let arc_table = counters + thread.counters.arc_table_offset();
        self.regions.push(Region {
            next: at + SCRATCH,
            end: at + CODE_BYTES,
            counters,
            arc_table,
            arc_routines: [None; 2],
        });
        let r = self.regions.len() - 1;
        self.modules[m].region = Some(r);
        Ok(r)
    }

    /// Encodes code with `build` (given its address and its region) at
    /// the next free place of module `m`'s region, and writes it there;
    /// its address and what `build` returned besides the code. With
    /// `arcs`, the region has its arc routine first (its increments as
    /// `arcs` says). A region too full for it gives way to a new one.
    fn place<T>(
        &mut self,
        m: usize,
        thread: &mut Stopped,
        arcs: Option<Increment>,
        build: impl Fn(u64, &Region) -> Result<(Vec<u8>, T), Unpatchable>,
    ) -> Result<(u64, T), Unpatchable> {
        let failed = |e: io::Error| Unpatchable::Unencodable(e.to_string());
        for fresh in [false, true] {
            if fresh {
                self.modules[m].region = None;
            }
            let r = self.region_for(m, thread).map_err(failed)?;
            if let Some(how) = arcs
                && !self.place_arc_routine(r, how)?
            {
                continue;
            }
            let region = &self.regions[r];
            let (at, built) = (region.next, build(region.next, region)?);
            let end = at + built.0.len() as u64;
            if end > region.end {
                continue;
            }
            self.memory.write(at, &built.0).map_err(failed)?;
            self.regions[r].next = end.next_multiple_of(16);
            return Ok((at, built.1));
        }
        Err(Unpatchable::Unencodable("trampoline larger than a region".into()))
    }

    /// Places the arc routine of region `r`, its increments as `how` says,
    /// if the region has none yet: whether it has one now (false: no room).
    fn place_arc_routine(&mut self, r: usize, how: Increment) -> Result<bool, Unpatchable> {
        let region = &self.regions[r];
        let kind = routine_kind(how);
        if region.arc_routines[kind].is_some() {
            return Ok(true);
        }
        let at = region.next;
        let routine = arc_table::routine(at, region.arc_table, how)?;
        let end = at + routine.code.len() as u64;
        if end > region.end {
            return Ok(false);
        }
        self.memory.write(at, &routine.code).map_err(|e| Unpatchable::Unencodable(e.to_string()))?;
        self.unlocked.extend(routine.unlocked.iter().map(|u| at + u));
        let region = &mut self.regions[r];
        region.next = end.next_multiple_of(16);
        region.arc_routines[kind] = Some(at);
        Ok(true)
    }

    /// Makes the probe at `addr` resumable: the original first instruction
    /// moved to the region, followed by a jump back. Its address.
    pub fn displace(&mut self, addr: u64, thread: &mut Stopped) -> Result<u64, Unpatchable> {
        if let Some(Probe { state: ProbeState::Displaced { resume }, .. }) = self.probes.get(&addr) {
            return Ok(*resume);
        }
        let m = self.module_of(addr).ok_or(Unpatchable::Undecodable)?;
        let (first, back) = self.first_instruction(addr)?;
        let build = |at, _: &Region| Ok((relocate::build(at, TrampolineProbe::None, &first, back)?.code, ()));
        let (resume, ()) = self.place(m, thread, None, build)?;
        if let Some(p) = self.probes.get_mut(&addr) {
            p.state = ProbeState::Displaced { resume };
        }
        Ok(resume)
    }

    /// The entry instruction at `addr` as the program has it, to run
    /// elsewhere, and the address after it, where the function goes on.
    fn first_instruction(&self, addr: u64) -> Result<(Vec<iced_x86::Instruction>, u64), Unpatchable> {
        let code = self.original_code(addr, 16).map_err(|e| Unpatchable::Unencodable(e.to_string()))?;
        let first = relocate::entry_instructions(&code, addr, 1)?;
        let back = addr + relocate::covered_len(&first);
        Ok((first, back))
    }

    /// Replaces the entry at `addr` (of a function of `extent`) with a
    /// jump to a new trampoline that counts as `counting` says. `busy` are
    /// the program counters of the other stopped threads: none may be
    /// inside the bytes replaced.
    pub fn patch(
        &mut self,
        addr: u64,
        extent: Extent,
        counting: &Counting,
        increment: Increment,
        busy: &[u64],
        thread: &mut Stopped,
    ) -> Result<u64, Unpatchable> {
        let failed = |e: io::Error| Unpatchable::Unencodable(e.to_string());
        let m = self.module_of(addr).ok_or(Unpatchable::Undecodable)?;
        let body = self.original_code(addr, 2 * MAX_ENTRY_BYTES as usize).map_err(failed)?;
        let (moved, stub) = self.plan_jump(m, addr, extent, &body)?;
        let prefix = relocate::covered_len(&moved);
        if self.probes.range(addr + 1..addr + prefix).next().is_some() {
            return Err(Unpatchable::BreakpointInEntry);
        }
        if busy.iter().any(|&pc| pc > addr + 1 && pc < addr + prefix) {
            return Err(Unpatchable::Unencodable("a thread is inside the entry bytes".into()));
        }
        let entry = MovedEntry { addr, moved: &moved, original: body[..prefix as usize].to_vec(), stub };
        self.install(entry, counting, increment, thread)
    }

    /// How the entry at `addr` of module `m` (of a function of `extent`,
    /// whose code is `body`) takes its jump: the instructions the jump
    /// displaces, and the stub it goes through, if any. A `jmp rel32`
    /// where it fits; where the function is too short for it or its first
    /// bytes are a branch target, a `jmp rel8` to a stub in padding
    /// nearby; otherwise why the entry cannot take a jump.
    fn plan_jump(
        &self,
        m: usize,
        addr: u64,
        extent: Extent,
        body: &[u8],
    ) -> Result<(Vec<iced_x86::Instruction>, Option<u64>), Unpatchable> {
        let module = &self.modules[m];
        let in_file = addr.wrapping_sub(module.bias);
        let Extent { size, next } = extent;
        let targets = module.info.branch_targets();
        let long = relocate::entry_instructions(body, addr, JUMP_LEN).and_then(|moved| {
            relocate::check_movable(&moved)?;
            let prefix = relocate::covered_len(&moved);
            let padded = size > 0
                && size < prefix
                && relocate::ends_in_padding(&moved, addr + size)
                && !self.in_use(addr + size, addr + prefix);
            relocate::check_patchable(in_file, if padded { prefix } else { size }, prefix, next, targets)?;
            Ok(moved)
        });
        let why = match long {
            Ok(moved) => return Ok((moved, None)),
            Err(
                why @ (Unpatchable::TooShort
                | Unpatchable::BranchIntoEntry(_)
                | Unpatchable::OverlapsNext
                | Unpatchable::NotMovable(..)
                | Unpatchable::Undecodable),
            ) => why,
            Err(why) => return Err(why),
        };
        let Ok(moved) = relocate::entry_instructions(body, addr, detour::SHORT_JUMP_LEN) else { return Err(why) };
        if relocate::check_patchable(in_file, size, relocate::covered_len(&moved), next, targets).is_err() {
            return Err(why);
        }
        let stub = self.find_stub(m, addr).ok_or(why)?;
        Ok((moved, Some(stub)))
    }

    /// Padding of module `m` that a short jump at `addr` reaches and the
    /// tool does not use yet (see [`detour::find_stub`]).
    fn find_stub(&self, m: usize, addr: u64) -> Option<u64> {
        let module = &self.modules[m];
        let bias = module.bias;
        let read = |at: u64, len: u64| {
            let mut code = self.original_code(at.wrapping_add(bias), len as usize).ok()?;
            code.truncate(len as usize);
            Some(code)
        };
        let taken = |low: u64, high: u64| self.in_use(low.wrapping_add(bias), high.wrapping_add(bias));
        let info = &module.info;
        let stub = detour::find_stub(addr.wrapping_sub(bias), &info.functions, info.branch_targets(), read, taken)?;
        Some(stub.wrapping_add(bias)).filter(|&s| s >= module.low && s + JUMP_LEN <= module.high)
    }

    /// Whether the tool has written or claimed any byte of (`low`,
    /// `high`): a probe's `int3` or jump, or a stub.
    fn in_use(&self, low: u64, high: u64) -> bool {
        self.stub_covering(low, high).is_some()
            || self.probes.range(low.saturating_sub(MAX_ENTRY_BYTES)..high).any(|(&at, probe)| match &probe.state {
                ProbeState::Patched(patch) => at + patch.original.len() as u64 > low,
                ProbeState::Armed | ProbeState::Displaced { .. } => at >= low,
                ProbeState::Removed => false,
            })
    }

    /// The stub whose jump covers a byte of (`low`, `high`), if any.
    fn stub_covering(&self, low: u64, high: u64) -> Option<u64> {
        self.stubs.range(low.saturating_sub(JUMP_LEN - 1)..high).map(|(&stub, _)| stub).next()
    }

    /// Replaces the trampoline of the patched entry at `addr` by one that
    /// counts as `counting` says (the old one stays: a thread may be in it).
    pub fn repatch(
        &mut self,
        addr: u64,
        counting: &Counting,
        increment: Increment,
        thread: &mut Stopped,
    ) -> Result<u64, Unpatchable> {
        let Some(Probe { state: ProbeState::Patched(patch), .. }) = self.probes.get(&addr) else {
            return Err(Unpatchable::Undecodable);
        };
        let (original, stub) = (patch.original.clone(), patch.stub);
        let moved = relocate::entry_instructions(&original, addr, original.len() as u64)?;
        self.install(MovedEntry { addr, moved: &moved, original, stub }, counting, increment, thread)
    }

    fn install(
        &mut self,
        entry: MovedEntry,
        counting: &Counting,
        increment: Increment,
        thread: &mut Stopped,
    ) -> Result<u64, Unpatchable> {
        let MovedEntry { addr, moved, original, stub } = entry;
        let back = addr + original.len() as u64;
        let (trampoline, moved) = self.place_trampoline(addr, moved, back, counting, increment, thread)?;
        let user_break = self.probes.get(&addr).is_some_and(|p| p.user_break);
        self.write_jump(addr, trampoline, stub, user_break)?;
        if let Some(p) = self.probes.get_mut(&addr) {
            p.state = ProbeState::Patched(Box::new(Patch { trampoline, moved, original, stub }));
        }
        Ok(trampoline)
    }

    /// Builds and places in its module's region the trampoline of the
    /// entry at `addr`: a probe that counts as `counting` says, then the
    /// `moved` instructions, then a jump to `back`. Its address, and that of
    /// its moved instructions.
    fn place_trampoline(
        &mut self,
        addr: u64,
        moved: &[iced_x86::Instruction],
        back: u64,
        counting: &Counting,
        increment: Increment,
        thread: &mut Stopped,
    ) -> Result<(u64, u64), Unpatchable> {
        let m = self.module_of(addr).ok_or(Unpatchable::Undecodable)?;
        let arcs = matches!(counting, Counting::Arcs { .. }).then_some(increment);
        let (trampoline, (unlocked, moved)) = self.place(m, thread, arcs, |at, region| {
            let counter = |slot: usize| region.counters + slot as u64 * 8;
            let probe = match *counting {
                Counting::Calls { slot } => TrampolineProbe::Count { counter: counter(slot), increment },
                Counting::Arcs { slot, id } => {
                    let routine = region.arc_routines[routine_kind(increment)]
                        .ok_or(Unpatchable::Unencodable("no arc routine".into()))?;
                    let arc = relocate::ArcProbe { id, routine, table: region.arc_table };
                    TrampolineProbe::Arcs { counter: counter(slot), arc, increment }
                }
            };
            let built = relocate::build(at, probe, moved, back)?;
            Ok((built.code, (built.unlocked.iter().map(|u| at + u).collect::<Vec<u64>>(), at + built.moved)))
        })?;
        self.unlocked.extend(unlocked);
        Ok((trampoline, moved))
    }

    /// For the function `name` at `addr`, whose entry keeps its
    /// breakpoint (too short for a jump, or its first bytes a branch
    /// target): the direct calls of it in its module, and the GOT slots
    /// of PLT entries of its name that hold its address, go to a
    /// trampoline that counts as `counting` says and runs the entry's
    /// first instruction, then the rest of the function. Only calls through
    /// other pointers still stop at the breakpoint. How many calls and
    /// slots now go there.
    pub fn redirect_callers(
        &mut self,
        addr: u64,
        name: &str,
        counting: &Counting,
        increment: Increment,
        thread: &mut Stopped,
    ) -> Result<usize, Unpatchable> {
        let failed = |e: io::Error| Unpatchable::Unencodable(e.to_string());
        let m = self.module_of(addr).ok_or(Unpatchable::Undecodable)?;
        let calls = self.direct_calls_of(m, addr);
        let slots = self.got_slots_holding(name, addr);
        if calls.is_empty() && slots.is_empty() {
            return Ok(0);
        }
        let (first, back) = self.first_instruction(addr)?;
        let (trampoline, _) = self.place_trampoline(addr, &first, back, counting, increment, thread)?;
        let home = self.modules[m].low;
        for &call in &calls {
            self.redirect_call(call, home, trampoline)?;
        }
        for &(slot, module) in &slots {
            self.redirect(slot, module, &trampoline.to_le_bytes()).map_err(failed)?;
        }
        Ok(calls.len() + slots.len())
    }

    /// Writes `bytes` at `at`, of the module at `module`, keeping what was
    /// there for the strip.
    /// [`Image::redirect`] of the call at `call` (in the module whose
    /// lowest address is `home`) to `trampoline`.
    fn redirect_call(&mut self, call: u64, home: u64, trampoline: u64) -> Result<(), Unpatchable> {
        let bytes = relocate::call(call, trampoline).ok_or_else(out_of_reach)?;
        self.redirect(call, home, &bytes).map_err(|e| Unpatchable::Unencodable(e.to_string()))
    }

    fn redirect(&mut self, at: u64, module: u64, bytes: &[u8]) -> io::Result<()> {
        let mut before = vec![0u8; bytes.len()];
        self.memory.read(at, &mut before)?;
        self.memory.write(at, bytes)?;
        self.redirects.entry(at).or_insert(Redirect { before, module });
        Ok(())
    }

    /// The addresses of the `call rel32` instructions of module `m` that
    /// call `addr`, but those in bytes the tool has changed.
    fn direct_calls_of(&self, m: usize, addr: u64) -> Vec<u64> {
        let module = &self.modules[m];
        let bias = module.bias;
        let returns: Vec<u64> = module.info.branch_targets().calls_to(addr.wrapping_sub(bias)).collect();
        returns
            .into_iter()
            .map(|ret| ret.wrapping_add(bias).wrapping_sub(CALL_LEN))
            .filter(|&call| self.calls_unchanged(call, addr))
            .collect()
    }

    /// Whether the code at `call` is a `call rel32` of `addr` that the tool
    /// has not changed (nor any byte of it).
    fn calls_unchanged(&self, call: u64, addr: u64) -> bool {
        !self.in_use(call, call + CALL_LEN)
            && !self.redirects.contains_key(&call)
            && self.original_code(call, CALL_LEN as usize).is_ok_and(|code| {
                code.len() >= CALL_LEN as usize
                    && code[0] == CALL_REL32
                    && (call + CALL_LEN)
                        .wrapping_add_signed(i32::from_le_bytes([code[1], code[2], code[3], code[4]]) as i64)
                        == addr
            })
    }

    /// The call that returns to `ret`, if it is a `call rel32` of the
    /// patched entry `entry` that may count its own calls (see
    /// [`Image::count_site`]). None of `busy` (the program counters of the
    /// stopped threads) may lie inside it.
    pub fn countable_site(&self, ret: u64, entry: u64, busy: &[u64]) -> Option<u64> {
        let Some(Probe { state: ProbeState::Patched(_), .. }) = self.probes.get(&entry) else { return None };
        let call = ret.checked_sub(CALL_LEN)?;
        let m = self.module_of(call)?;
        let inside = |pc: u64| pc > call && pc < ret;
        (ret <= self.modules[m].high && !busy.iter().copied().any(inside) && self.calls_unchanged(call, entry))
            .then_some(call)
    }

    /// Sends the call at `call` (see [`Image::countable_site`]) of the
    /// patched entry `entry` to a trampoline of its own: one that counts
    /// in `site`'s slot, as `increment` says, and runs the entry's moved
    /// instructions, then the rest of the function. The callee's calls are
    /// then its trampoline's and its sites'.
    pub fn count_site(
        &mut self,
        call: u64,
        entry: u64,
        site: CountedSite,
        increment: Increment,
        thread: &mut Stopped,
    ) -> Result<(), Unpatchable> {
        let Some(Probe { state: ProbeState::Patched(patch), .. }) = self.probes.get(&entry) else {
            return Err(Unpatchable::Undecodable);
        };
        let original = &patch.original;
        let back = entry + original.len() as u64;
        let moved = relocate::entry_instructions(original, entry, original.len() as u64)?;
        let counting = Counting::Calls { slot: site.slot };
        let (trampoline, _) = self.place_trampoline(call, &moved, back, &counting, increment, thread)?;
        let home = self.modules[self.module_of(call).ok_or(Unpatchable::Undecodable)?].low;
        self.redirect_call(call, home, trampoline)?;
        self.sites.insert(call, site);
        Ok(())
    }

    /// The GOT slots, in every module, of the PLT entries named `name`
    /// (the jump through memory that such an entry starts with, after
    /// `endbr64`) that hold `addr`, each with its module's lowest address.
    fn got_slots_holding(&self, name: &str, addr: u64) -> Vec<(u64, u64)> {
        let mut slots = Vec::new();
        for module in &self.modules {
            let Some(plt) = module.info.plt_entry(name) else { continue };
            let slot = self.jump_slot(plt.wrapping_add(module.bias));
            if let Some(slot) = slot.filter(|&s| self.memory.read_u64(s).is_ok_and(|v| v == addr)) {
                slots.push((slot, module.low));
            }
        }
        slots
    }

    /// The memory slot that the code at `at` jumps through, where it is a
    /// PLT entry's: `jmp [rip+slot]`, after any `endbr64`.
    fn jump_slot(&self, at: u64) -> Option<u64> {
        let code = self.original_code(at, 16).ok()?;
        let mut decoder = iced_x86::Decoder::with_ip(64, &code, at, iced_x86::DecoderOptions::NONE);
        let jump = decoder.iter().find(|i| i.code() != iced_x86::Code::Endbr64)?;
        (jump.code() == iced_x86::Code::Jmp_rm64 && jump.is_ip_rel_memory_operand())
            .then(|| jump.ip_rel_memory_address())
    }

    /// Where a call of the patched PLT entry at `plt` goes (see
    /// [`Image::count_site_through_plt`]), with the function behind it:
    /// where the GOT slot it jumps through holds a patched entry.
    pub fn plt_call(&self, plt: u64) -> Option<(PltCall, usize)> {
        let Some(Probe { state: ProbeState::Patched(_), .. }) = self.probes.get(&plt) else { return None };
        let got = self.jump_slot(plt)?;
        let entry = self.memory.read_u64(got).ok()?;
        match self.probes.get(&entry) {
            Some(Probe { state: ProbeState::Patched(patch), function: Some(f), .. }) => {
                Some((PltCall { got, entry, moved: patch.moved }, *f))
            }
            _ => None,
        }
    }

    /// Sends the call at `call` (see [`Image::countable_site`]) of a PLT
    /// entry that goes as `plt` says to a trampoline of its own (see
    /// [`relocate::through_plt`]): it counts in `site`'s slot, and, while
    /// the GOT slot holds the function's entry, in `behind`'s, then runs
    /// the function past its trampoline's counting.
    pub fn count_site_through_plt(
        &mut self,
        call: u64,
        plt: PltCall,
        [site, behind]: [CountedSite; 2],
        increment: Increment,
        thread: &mut Stopped,
    ) -> Result<(), Unpatchable> {
        let m = self.module_of(call).ok_or(Unpatchable::Undecodable)?;
        let (trampoline, unlocked) = self.place(m, thread, None, |at, region| {
            let counter = |slot: usize| region.counters + slot as u64 * 8;
            let built = relocate::through_plt(at, plt, [counter(site.slot), counter(behind.slot)], increment)?;
            Ok((built.code, built.unlocked.iter().map(|u| at + u).collect::<Vec<u64>>()))
        })?;
        self.unlocked.extend(unlocked);
        self.redirect_call(call, self.modules[m].low, trampoline)?;
        self.sites.insert(call, site);
        self.sites_behind_plt.insert(call, behind);
        Ok(())
    }

    /// Sends the entry at `addr` to `trampoline`: a `jmp rel32` over the
    /// entry, or through `stub`: the `jmp rel32` there first, so that a
    /// thread taking the entry's `jmp rel8` to it finds it whole, then the
    /// short jump. With `user_break`, an `int3` over the entry's first byte.
    fn write_jump(
        &mut self,
        addr: u64,
        trampoline: u64,
        stub: Option<u64>,
        user_break: bool,
    ) -> Result<(), Unpatchable> {
        let failed = |e: io::Error| Unpatchable::Unencodable(e.to_string());
        let mut jump = match stub {
            None => relocate::jump(addr, trampoline).ok_or_else(out_of_reach)?.to_vec(),
            Some(stub) => {
                let long = relocate::jump(stub, trampoline).ok_or_else(out_of_reach)?;
                if !self.stubs.contains_key(&stub) {
                    let mut original = [0u8; JUMP_LEN as usize];
                    self.memory.read(stub, &mut original).map_err(failed)?;
                    self.stubs.insert(stub, original);
                }
                self.memory.write(stub, &long).map_err(failed)?;
                detour::short_jump(addr, stub).ok_or_else(out_of_reach)?.to_vec()
            }
        };
        if user_break {
            jump[0] = INT3;
        }
        self.memory.write(addr, &jump).map_err(failed)
    }

    /// Makes every increment of the trampolines atomic, one prefix byte
    /// each. Safe while no other thread runs this code: the engine calls it
    /// at the process's first new thread or fork, before that one runs.
    pub fn lock_all(&mut self) -> io::Result<()> {
        self.batched(|image| {
            for at in std::mem::take(&mut image.unlocked) {
                image.memory.write(at, &[relocate::LOCK_PREFIX])?;
            }
            Ok(())
        })
    }

    /// Takes every probe out (original code back), before the process is
    /// detached (its threads stopped). Trampolines stay mapped, and the
    /// stubs' jumps to them in place: a thread may still be in one, and it
    /// jumps back into original code.
    pub fn strip(&mut self) -> io::Result<()> {
        self.batched(|image| {
            for (&addr, probe) in &mut image.probes {
                match &probe.state {
                    ProbeState::Armed | ProbeState::Displaced { .. } => image.memory.write(addr, &[probe.original])?,
                    ProbeState::Patched(patch) => image.memory.write(addr, &patch.original)?,
                    ProbeState::Removed => {}
                }
                probe.state = ProbeState::Removed;
            }
            // After the probes: a redirected call may be among the bytes
            // a patched entry's jump replaced.
            for (&at, redirect) in &image.redirects {
                image.memory.write(at, &redirect.before)?;
            }
            image.redirects.clear();
            Ok(())
        })
    }
}

/// A trampoline too far from the code that would jump or call to it.
fn out_of_reach() -> Unpatchable {
    Unpatchable::Unencodable("trampoline out of reach".into())
}

/// Which of a region's arc routines trampolines incrementing as `how`
/// says call (see [`Region::arc_routines`]).
fn routine_kind(how: Increment) -> usize {
    usize::from(matches!(how, Increment::PerCpu { .. }))
}

/// (path, low, high) of each file with executable mappings, in order.
pub fn executable_files(maps: &[Mapping]) -> Vec<(&str, u64, u64)> {
    let mut out: Vec<(&str, u64, u64)> = Vec::new();
    for m in maps.iter().filter(|m| m.executable && m.path.starts_with('/')) {
        match out.iter_mut().find(|(p, _, high)| *p == m.path && *high == m.start) {
            Some(entry) => entry.2 = m.end,
            None => out.push((&m.path, m.start, m.end)),
        }
    }
    out
}

/// The load bias of `path`: where its lowest segment is mapped, less its
/// address in the file.
fn load_bias(maps: &[Mapping], path: &str, info: &ModuleInfo) -> Option<u64> {
    let (vaddr, offset) = info.first_segment;
    maps.iter().find(|m| m.path == path && m.offset == offset).map(|m| m.start.wrapping_sub(vaddr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_is_five_words() {
        assert_eq!(std::mem::size_of::<Probe>(), 40);
    }
}
