//! Call arcs: which call site a call came from (the return address at
//! the callee's entry), and the arc trampolines' lists of known sites.

use super::Engine;
use crate::functions::ArcTable;
use crate::image::{Counting, Image, KnownSite, LearnedTable, Stopped};
use crate::ptrace::Pid;
use crate::relocate;
use object::{Object, ObjectSection};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The most call sites an arc trampoline learns from their calls (calls
/// through pointers, from modules loaded later): in its table of learned
/// sites, without a stop (see [`Miss::Learn`](relocate::Miss::Learn)), or,
/// where no table could be had, each at a stop of every thread and a new
/// trampoline. Calls from further sites are counted together as "other
/// call sites".
pub const MAX_LEARNED_SITES: usize = 32;

/// The most entries of an arc trampoline's first table of learned sites.
/// Each function of a module gets its trampoline, and its table, as the
/// module is first entered, at two counter slots an entry: a program's ten
/// thousand functions take 170,000 slots so. A function called from more
/// sites through pointers (few are) fills it and stops once: the tool
/// takes its sites into the search, and its next table has the entries
/// left of [`MAX_LEARNED_SITES`]. A module of tens of thousands of
/// functions gets smaller first tables (see [`Engine::first_table_entries`]).
const FIRST_TABLE: usize = 8;

/// The free counter slots below which an arc trampoline gets no table of
/// learned sites (and learns at its trap): a quarter of them, kept for
/// the trampolines of later modules and processes.
const TABLE_ROOM: usize = crate::counters::SLOTS / 8;

/// The most call sites an arc trampoline knows from the code before their
/// first call: what its size allows beside the learned ones. A function
/// the code shows more sites of knows these and counts calls from any
/// other site as the other call sites from the start: learning 32 more,
/// each a stop and a rebuild of its largest trampoline, would gain little.
pub const MAX_CODE_SITES: usize = relocate::MAX_ARC_SITES - MAX_LEARNED_SITES;

/// The call sites an arc trampoline knows, per (image, entry). Their arcs
/// are made only for the sites calls came from, when the counts are read
/// (see [`Engine::take_site_arcs`]): a module's trampolines know hundreds
/// of thousands of sites, most of them never used in a run.
#[derive(Debug, Clone)]
pub(super) struct SiteList {
    /// The function the trampoline counts the calls of.
    function: usize,
    slot: usize,
    /// Each site, with the address of its call where the code shows it.
    sites: Vec<(KnownSite, Option<u64>)>,
    /// How many of them calls taught (see [`MAX_LEARNED_SITES`]).
    learned: usize,
    /// The slot of the other sites, once the learned ones are as many as
    /// they may be.
    other: Option<usize>,
    /// No new trampoline could be built: calls from new sites stay
    /// counted at the trap.
    frozen: bool,
    /// The table of the sites the trampoline learns itself, read at the
    /// end (see [`Engine::take_learned_sites`]).
    table: Option<LearnedTable>,
}

impl SiteList {
    /// The list of a new arc trampoline counting the calls of `function`
    /// in `slot`.
    fn new(function: usize, slot: usize) -> SiteList {
        SiteList { function, slot, sites: Vec::new(), learned: 0, other: None, frozen: false, table: None }
    }

    /// The slot of the function's calls.
    pub(super) fn slot(&self) -> usize {
        self.slot
    }

    pub(super) fn counting(&self) -> Counting {
        let sites = self.sites.iter().map(|s| s.0).collect();
        Counting::Arcs { slot: self.slot, sites, other: self.other, table: self.table }
    }

    /// Whether calls from sites it does not know are not counted together
    /// yet (a table of learned sites can serve it).
    pub(super) fn may_learn(&self) -> bool {
        self.other.is_none()
    }

    /// Whether the trampoline knows the site returning to `ret`.
    fn knows(&self, ret: u64) -> bool {
        self.sites.iter().any(|s| s.0.ret == ret)
    }
}

/// Module files read, by path (see [`Engine::call_site_of`]).
type Files = HashMap<PathBuf, Vec<u8>>;

/// How many tail calls deep [`calls_of`] looks for call sites.
const TAIL_CALLS: u32 = 1;

/// The length of a `call rel32`, the direct calls [`calls_of`] finds (the
/// call before a return address is where [`relocate::call_before`] finds
/// it too).
const CALL_REL32_LEN: u64 = 5;

/// Adds to `sites` the return addresses of the direct calls of the function
/// `name` at `entry` in the file of module `home`: in its module, the calls
/// of the entry; in every module, the calls of the PLT entry of its name
/// (a library calls its own exported functions through one too) and of
/// the IFUNC PLT entries the dynamic linker pointed at it; and,
/// `depth` levels of tail calls deep, the calls of the functions that jump
/// to it (their calls return from it).
fn calls_of(image: &Image, home: usize, entry: u64, name: &str, depth: u32, sites: &mut Vec<u64>) {
    let in_process = entry.wrapping_add(image.modules[home].bias);
    for (m, module) in image.modules.iter().enumerate() {
        let direct = (m == home).then_some(entry);
        let ifunc = ifunc_entries_to(image, m, in_process);
        for target in direct.into_iter().chain(module.info.plt_entry(name)).chain(ifunc) {
            let code = module.info.branch_targets();
            sites.extend(code.calls_to(target).map(|ret| ret.wrapping_add(module.bias)));
            if depth == 0 {
                continue;
            }
            let functions = &module.info.functions;
            for from in code.tail_calls_to(target).filter(|&from| m != home || from != entry) {
                if let Ok(i) = functions.binary_search_by_key(&from, |g| g.address) {
                    calls_of(image, m, from, &functions[i].name, depth - 1, sites);
                }
            }
        }
    }
}

/// The PLT entries of IFUNCs of module `m` whose GOT slot holds
/// `address` in the process (see [`crate::discover::ModuleInfo::ifunc_plt_entries`]),
/// in the file's addresses: the slots are read in one piece.
fn ifunc_entries_to(image: &Image, m: usize, address: u64) -> Vec<u64> {
    let module = &image.modules[m];
    let entries = module.info.ifunc_plt_entries();
    let (Some(low), Some(high)) = (entries.iter().map(|e| e.1).min(), entries.iter().map(|e| e.1).max()) else {
        return Vec::new();
    };
    // A GOT a few pages long at most; a larger span is no GOT.
    let Some(len) = high.checked_sub(low).map(|span| span + 8).filter(|&len| len <= 1 << 16) else {
        return Vec::new();
    };
    let mut got = vec![0u8; len as usize];
    if image.memory.read(low.wrapping_add(module.bias), &mut got).is_err() {
        return Vec::new();
    }
    let slot = |at: u64| u64::from_le_bytes(got[(at - low) as usize..][..8].try_into().expect("8 bytes"));
    entries.iter().filter(|e| slot(e.1) == address).map(|e| e.0).collect()
}

/// The arc in `arcs` from the call that returns to `ret` in `image` to
/// function `f`, the call at `site` where it is known, else found in the
/// bytes before `ret`.
fn arc_from(image: &Image, arcs: &mut ArcTable, f: usize, ret: u64, site: Option<u64>) -> usize {
    // Not a return address into code (a thread's start, or a function
    // entered by a jump, finds other data there): an arc from nowhere.
    let Some(m) = image.module_of(ret.wrapping_sub(1)).filter(|_| ret >= 8) else {
        return arcs.intern(f, &Arc::from("?"), "?", None, ret);
    };
    let module = &image.modules[m];
    let site = site.unwrap_or_else(|| {
        let mut before = [0u8; 8];
        match image.memory.read(ret.wrapping_sub(8), &mut before) {
            Ok(()) => relocate::call_before(&before, ret),
            Err(_) => ret,
        }
    });
    let in_file = site.wrapping_sub(module.bias);
    let functions = &module.info.functions;
    let caller = match functions.partition_point(|x| x.address <= in_file) {
        0 => None,
        n if functions[n - 1].size == 0 || in_file < functions[n - 1].address.saturating_add(functions[n - 1].size) => {
            Some(&functions[n - 1])
        }
        _ => None,
    };
    let (caller, entry) = caller.map_or(("?", None), |c| (c.name.as_str(), Some(c.address)));
    arcs.intern(f, &module.path, caller, entry, in_file)
}

/// The arc in `arcs` of the calls of function `f` from the sites past its
/// trampoline's list.
fn other_sites_arc(arcs: &mut ArcTable, f: usize) -> usize {
    arcs.intern(f, &Arc::from("?"), "(other call sites)", None, 0)
}

/// Counts the calls in slot `count` along arc `arc` of `arcs` (once).
fn link(arcs: &mut ArcTable, arc: usize, count: usize) {
    let slots = &mut arcs.records[arc].slots;
    if !slots.contains(&count) {
        slots.push(count);
    }
}

/// The call that returns to `ret` in `image`, found in the bytes before
/// it: in the process, or, once it has exited, in its module's file
/// (`files`, the files read so far by path).
fn call_site_of(image: &Image, ret: u64, files: &mut Files) -> Option<u64> {
    let mut before = [0u8; 8];
    if image.memory.read(ret.wrapping_sub(8), &mut before).is_ok() {
        return Some(relocate::call_before(&before, ret));
    }
    let module = &image.modules[image.module_of(ret.wrapping_sub(1))?];
    let data =
        files.entry(module.info.path.clone()).or_insert_with(|| std::fs::read(&module.info.path).unwrap_or_default());
    let in_file = ret.wrapping_sub(module.bias);
    let file = object::File::parse(data.as_slice()).ok()?;
    let section = file.sections().find(|s| s.address() + 8 <= in_file && in_file <= s.address() + s.size())?;
    let bytes = section.data().ok()?.get((in_file - section.address()) as usize - 8..)?;
    let before: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    Some(relocate::call_before(&before, in_file).wrapping_add(module.bias))
}

impl Engine {
    /// The list of the first arc trampoline of function `f` at `entry`,
    /// first called with return address `ret` (if the stack could be
    /// read): the call sites the code shows (see [`Engine::sites_in_code`])
    /// and a table of `table` entries for the others (see
    /// [`Engine::give_table`]; none where a module's functions are given
    /// theirs together, see [`Engine::first_table_entries`]); where no
    /// table could be had, that call's site known already, so that only
    /// calls from other sites stop at its trap. Of more than
    /// [`MAX_CODE_SITES`] sites in the code, those at the lowest addresses
    /// (the program's before its libraries'), the others counted together.
    /// None when no counter slot is left.
    pub(super) fn first_sites(
        &mut self,
        image_id: usize,
        f: usize,
        entry: u64,
        ret: Option<u64>,
        table: usize,
    ) -> Option<SiteList> {
        let slot = match self.functions.records[f].slot {
            Some(slot) => slot,
            None => self.counters.allocate()?,
        };
        let mut list = SiteList::new(f, slot);
        let Some(crowded) = self.add_code_sites(image_id, entry, &mut list) else { return Some(list) };
        if crowded {
            list.other = self.counters.allocate();
        } else if !self.give_table(&mut list, table)
            && let Some(ret) = ret.filter(|&r| !list.knows(r))
            && self.add_site(&mut list, ret, None)
        {
            list.learned += 1;
        }
        Some(list)
    }

    /// The list of the trampoline that the callers of function `f` at
    /// `entry` are sent to when its entry keeps its breakpoint (see
    /// `Engine::redirect_callers_of`): the sites the code shows, and calls
    /// from any other site counted together, without a table or a trap
    /// (only those callers reach it; a call through a pointer stops at
    /// the breakpoint). None when no counter slot is left.
    pub(super) fn sealed_sites(&mut self, image_id: usize, f: usize, entry: u64) -> Option<SiteList> {
        let slot = match self.functions.records[f].slot {
            Some(slot) => slot,
            None => self.counters.allocate()?,
        };
        let mut list = SiteList::new(f, slot);
        self.add_code_sites(image_id, entry, &mut list)?;
        list.other = Some(self.counters.allocate()?);
        Some(list)
    }

    /// Adds to `list` the call sites of its function at `entry` that the
    /// code shows (see [`Engine::sites_in_code`]), up to
    /// [`MAX_CODE_SITES`]: whether the code shows more; None when the
    /// counter slots ran out.
    fn add_code_sites(&mut self, image_id: usize, entry: u64, list: &mut SiteList) -> Option<bool> {
        let mut in_code = self.sites_in_code(image_id, list.function, entry);
        let crowded = in_code.len() > MAX_CODE_SITES;
        in_code.truncate(MAX_CODE_SITES);
        for ret in in_code {
            if !self.add_site(list, ret, Some(ret.wrapping_sub(CALL_REL32_LEN))) {
                return None;
            }
        }
        Some(crowded)
    }

    /// The entries of the first tables of `trampolines` arc trampolines
    /// built together (a module's, as it is first entered; or one):
    /// [`FIRST_TABLE`], or fewer, so that the tables take at most half the
    /// counter slots free above [`TABLE_ROOM`]. A compiler's fifty thousand
    /// functions would otherwise take the slots of the modules and
    /// processes after it, whose trampolines would then stop at each new
    /// call site.
    pub(super) fn first_table_entries(&self, trampolines: usize) -> usize {
        let spare = self.counters.free().saturating_sub(TABLE_ROOM) / 2;
        FIRST_TABLE.min(spare / (2 * trampolines.max(1)))
    }

    /// Gives the trampoline of `list` a table of the sites it learns:
    /// `first` entries if it learned none, else the rest of
    /// [`MAX_LEARNED_SITES`] after the sites it learned, with then a slot
    /// for the sites past it; if enough counter slots are free (see
    /// [`TABLE_ROOM`]). Whether it has one.
    pub(super) fn give_table(&mut self, list: &mut SiteList, first: usize) -> bool {
        if list.table.is_some() {
            return true;
        }
        let left = MAX_LEARNED_SITES.saturating_sub(list.learned);
        let entries = if list.learned == 0 { first.min(left) } else { left };
        let last = entries == left;
        if list.other.is_some() || entries == 0 || self.counters.free() < TABLE_ROOM + 2 * entries + 1 {
            return false;
        }
        if last {
            list.other = Some(self.counters.allocate().expect("room for the table"));
        }
        let first = self.counters.peek_next().expect("room for the table");
        for _ in 0..2 * entries {
            self.counters.allocate();
        }
        list.table = Some(LearnedTable { first, entries });
        true
    }

    /// The sites `table` learned, given its slots' values `pairs`: (return
    /// address, the slot of its count).
    fn learned_in(table: LearnedTable, pairs: &[u64]) -> impl Iterator<Item = (u64, usize)> {
        let claimed = pairs.chunks_exact(2).enumerate().filter(|(_, pair)| pair[0] != 0);
        claimed.map(move |(n, pair)| (pair[0], table.first + 2 * n + 1))
    }

    /// Takes the sites the full table of `list` learned into its search,
    /// their counts in the table's slots still: the trampoline that
    /// replaces it has a table of the entries left.
    fn absorb_table(&mut self, list: &mut SiteList) {
        let Some(table) = list.table.take() else { return };
        let pairs = self.counters.read(table.first, 2 * table.entries).unwrap_or_else(|e| {
            eprintln!("== CALIPER: cali-run: cannot read the call sites learned: {e}");
            Vec::new()
        });
        for (ret, count) in Self::learned_in(table, &pairs) {
            if !list.knows(ret) {
                list.sites.push((KnownSite { ret, count }, None));
                list.learned += 1;
            }
        }
    }

    /// The arcs of the sites the trampolines of image `image_id` know or
    /// learned in their tables that calls came from, each given its
    /// count's slot: made before the image goes (the callers are named
    /// from its modules), at its process's exit or exec or at the end. A
    /// forked process's trampolines share their parent's slots: a count's
    /// slot joins its arc once.
    pub(super) fn take_site_arcs(&mut self, image_id: usize) {
        let counters = self.read_counters();
        let mut arcs = std::mem::take(&mut self.arcs);
        self.site_arcs(image_id, &counters, &mut arcs);
        self.arcs = arcs;
    }

    /// Adds to `arcs` the arcs of the sites of image `image_id` that the
    /// counters (`counters`, by slot) saw calls from (see
    /// [`Engine::take_site_arcs`]).
    pub(super) fn site_arcs(&self, image_id: usize, counters: &[u64], arcs: &mut ArcTable) {
        let Some(image) = self.images.get(&image_id) else { return };
        let called = |slot: usize| counters.get(slot).is_some_and(|&n| n > 0);
        let mut files = HashMap::new();
        for list in self.sites.iter().filter(|((i, _), _)| *i == image_id).map(|(_, list)| list) {
            let f = list.function;
            let pairs = list.table.and_then(|t| counters.get(t.first..t.first + 2 * t.entries)).unwrap_or_default();
            let learned = list.table.into_iter().flat_map(|t| Self::learned_in(t, pairs));
            let known = list.sites.iter().map(|(site, call)| (site.ret, site.count, *call));
            let sites = known.chain(learned.map(|(ret, count)| (ret, count, None)));
            for (ret, count, call) in sites.filter(|s| called(s.1)) {
                let call = call.or_else(|| call_site_of(image, ret, &mut files));
                let arc = arc_from(image, arcs, f, ret, call);
                link(arcs, arc, count);
            }
            if let Some(other) = list.other.filter(|&o| called(o)) {
                let arc = other_sites_arc(arcs, f);
                link(arcs, arc, other);
            }
        }
    }

    /// With `CALI_RUN_DEBUG_ARCS=1`, a line on standard error of what the
    /// arcs cost: the call sites the trampolines know, the arc records
    /// made (only for the sites calls came from) and the counter slots
    /// taken.
    pub(super) fn debug_arc_summary(&self) {
        if std::env::var_os("CALI_RUN_DEBUG_ARCS").is_none_or(|v| v != "1") {
            return;
        }
        let sites: usize = self.sites.values().map(|list| list.sites.len()).sum();
        let tables = self.sites.values().filter(|list| list.table.is_some()).count();
        let slots = crate::counters::SLOTS - self.counters.free();
        eprintln!(
            "== CALIPER: cali-run: arcs: {} trampolines know {sites} call sites, {tables} with a table of learned \
             sites; {} arc records; {slots} of {} counter slots taken",
            self.sites.len(),
            self.arcs.records.len(),
            crate::counters::SLOTS
        );
    }

    /// Adds the site returning to `ret`, its call at `call` where the code
    /// shows it, to `list`, with a counter of its own; false when no
    /// counter slot is left.
    fn add_site(&mut self, list: &mut SiteList, ret: u64, call: Option<u64>) -> bool {
        let Some(count) = self.counters.allocate() else { return false };
        list.sites.push((KnownSite { ret, count }, call));
        true
    }

    /// The return addresses of the direct calls of function `f` at
    /// `entry` (see [`calls_of`]).
    fn sites_in_code(&self, image_id: usize, f: usize, entry: u64) -> Vec<u64> {
        let image = &self.images[&image_id];
        let Some(home) = image.module_of(entry) else { return Vec::new() };
        let in_file = entry.wrapping_sub(image.modules[home].bias);
        let mut sites = Vec::new();
        calls_of(image, home, in_file, &self.functions.records[f].name, TAIL_CALLS, &mut sites);
        sites.sort_unstable();
        sites.dedup();
        sites
    }

    /// The arc from the call that returns to `ret` to function `f`.
    pub(super) fn arc_of(&mut self, image_id: usize, f: usize, ret: u64) -> usize {
        arc_from(&self.images[&image_id], &mut self.arcs, f, ret, None)
    }

    /// A call from a site the arc trampoline at `entry` does not know, and
    /// its table of learned sites, if it has one, has no room for:
    /// counted here, and the trampoline rebuilt to know it and the sites
    /// of that table, with a table of the entries left (or, when it has
    /// learned as many as it may, to count further sites together).
    pub(super) fn on_new_site(&mut self, tid: Pid, image_id: usize, entry: u64, ret: u64) {
        let Some(f) = self.images[&image_id].probes.get(&entry).and_then(|p| p.function) else { return };
        let Some(mut list) = self.sites.get(&(image_id, entry)).cloned() else {
            let arc = self.arc_of(image_id, f, ret);
            self.arcs.records[arc].trap_hits += 1;
            return;
        };
        self.absorb_table(&mut list);
        let known = list.knows(ret);
        let open = !known && list.other.is_none() && !list.frozen;
        let shown = if open { self.sites_in_code(image_id, f, entry) } else { Vec::new() };
        let in_code = shown.binary_search(&ret).is_ok();
        let full = !in_code && list.learned >= MAX_LEARNED_SITES;
        // A site past a full list is one of the other sites from its first
        // call on, so that it has no arc of its own beside them.
        let hit = if !known && full { other_sites_arc(&mut self.arcs, f) } else { self.arc_of(image_id, f, ret) };
        self.arcs.records[hit].trap_hits += 1;
        if !open {
            return;
        }
        if in_code {
            // A site the code shows that the first build did not know: an
            // IFUNC's PLT slot the dynamic linker has filled since. Every
            // such site joins, none of them learned.
            let room = MAX_CODE_SITES.saturating_sub(list.sites.len() - list.learned);
            let joining: Vec<u64> = shown.into_iter().filter(|&r| !list.knows(r)).take(room).collect();
            for site in joining {
                if !self.add_site(&mut list, site, Some(site - CALL_REL32_LEN)) {
                    return;
                }
            }
        }
        if !list.knows(ret) && !full {
            if !self.add_site(&mut list, ret, None) {
                return;
            }
            list.learned += 1;
            self.give_table(&mut list, FIRST_TABLE);
        } else if !list.knows(ret) {
            let Some(other) = self.counters.allocate() else { return };
            list.other = Some(other);
        }
        let stopped = self.stop_world(image_id, tid);
        let mut deferred = Vec::new();
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid, counters: &self.counters, deferred: &mut deferred };
        let repatched = image.repatch(entry, &list.counting(), self.counters.increment(self.shared), &mut thread);
        self.resume_world(&stopped);
        self.redeliver(tid, deferred);
        match repatched {
            Ok(_) => {
                self.sites.insert((image_id, entry), list);
            }
            Err(e) => {
                // The old trampoline stays, and its list: further new
                // sites are counted at the trap without another try.
                if let Some(old) = self.sites.get_mut(&(image_id, entry)) {
                    old.frozen = true;
                }
                let failure = format!("cannot add a call site to {}: {e}", self.functions.records[f].name);
                eprintln!("== CALIPER: cali-run: {failure}");
                self.debug_note_failure(failure);
            }
        }
    }
}
