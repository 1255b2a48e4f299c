//! The functions seen in any traced process, with what is known of each:
//! coverage, the calls counted by breakpoint, the counter slot of its
//! trampoline, and how it is instrumented. One record per (module, entry
//! address in the file), so a forked child or a re-executed program adds
//! to the same record.

use crate::by_place::ByPlace;
use crate::chunked::Chunked;
use crate::counters::ArcCounts;
use crate::discover::{Extent, FunctionEntry, ModuleInfo};
use crate::relocate::Unpatchable;
use caliper_data::hash::FxHashMap;
use std::collections::HashMap;
use std::sync::Arc;

/// How a function's calls are counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Breakpoint in place, never hit.
    Armed,
    /// Hit once and the breakpoint removed (coverage only).
    Covered,
    /// The entry jumps to a trampoline that counts each call.
    Trampoline,
    /// The breakpoint stays and the tool counts each hit (exact, slower).
    Breakpoint(Box<Unpatchable>),
    /// The breakpoint stays for calls through pointers; the calls the
    /// code shows (direct calls, GOT slots) go to a counting trampoline.
    CallSites(Box<Unpatchable>),
    /// Not counted after the first call: its first instruction could not
    /// be moved, so the breakpoint was removed.
    Uncounted(Box<Unpatchable>),
}

/// One function.
#[derive(Debug, Clone)]
pub struct FunctionRecord {
    pub module: Arc<str>,
    /// The module's functions and its place among them: its name, entry
    /// address in the module file and size are the module's (a record of
    /// its own for each, its name shared by a count in the name's memory,
    /// took a cache miss for each of a compiler's 45,000 functions).
    info: Arc<ModuleInfo>,
    entry: u32,
    pub covered: bool,
    pub mode: Mode,
    /// Where its calls were counted, made at the first one: most functions
    /// of a big program are never called, and a compiler has 45,000 (the
    /// counts' three fields in each record were 1.4 megabytes of the tool's
    /// fresh memory).
    counts: Option<Box<FunctionCounts>>,
}

/// Where a function's calls were counted.
#[derive(Debug, Clone, Default)]
pub struct FunctionCounts {
    /// Calls counted by the tool at a breakpoint.
    pub trap_hits: u64,
    /// The counter slots of its trampolines, each with the count it held
    /// when the function took it (a slot another function counted in
    /// before): one per program image that counts in slots of its own (see
    /// [`crate::image::Image::slots`]), and the one the others share.
    pub slots: Vec<(usize, u64)>,
    /// The calls counted in slots it has given back (its image gone).
    pub banked: u64,
}

impl FunctionRecord {
    /// Function `entry` of `info`, the functions of `module`, not called
    /// yet.
    fn new(module: Arc<str>, info: Arc<ModuleInfo>, entry: u32) -> FunctionRecord {
        FunctionRecord { module, info, entry, covered: false, mode: Mode::Armed, counts: None }
    }

    pub fn name(&self) -> &Arc<str> {
        &self.entry().name
    }

    /// Its entry address in the module file.
    pub fn address(&self) -> u64 {
        self.entry().address
    }

    /// Its length in bytes and where the next function starts.
    pub fn extent(&self) -> Extent {
        self.info.extent(self.entry as usize)
    }

    fn entry(&self) -> &FunctionEntry {
        &self.info.functions[self.entry as usize]
    }

    /// Calls counted by the tool at a breakpoint.
    pub fn trap_hits(&self) -> u64 {
        self.counts.as_ref().map_or(0, |c| c.trap_hits)
    }

    /// The counter slots of its trampolines, with the counts they held
    /// when it took them.
    pub fn slots(&self) -> &[(usize, u64)] {
        self.counts.as_ref().map_or(&[], |c| &c.slots)
    }

    /// The calls counted in slots it has given back.
    pub fn banked(&self) -> u64 {
        self.counts.as_ref().map_or(0, |c| c.banked)
    }

    /// Its counts, made if it has none yet.
    pub fn counts_mut(&mut self) -> &mut FunctionCounts {
        self.counts.get_or_insert_with(Box::default)
    }
}

/// Every function, by id (an index).
#[derive(Debug, Default, Clone)]
pub struct FunctionTable {
    pub records: Chunked<FunctionRecord>,
    /// The ids by module, each module's (entry address, id) pairs sorted
    /// by address: a module's functions are added together, in the order
    /// of their addresses, with one look-up of the module for all of them
    /// (a compiler's 45,000 each hashed into a map took a tenth of the
    /// tool's start-up, with the map's megabyte of fresh memory).
    index: HashMap<Arc<str>, Vec<(u64, usize)>>,
}

/// The functions of one module in a [`FunctionTable`], to add them.
pub struct ModuleFunctions<'a> {
    module: &'a Arc<str>,
    records: &'a mut Chunked<FunctionRecord>,
    index: &'a mut Vec<(u64, usize)>,
}

impl FunctionTable {
    /// The functions of `module`, to add to.
    pub fn of_module<'a>(&'a mut self, module: &'a Arc<str>) -> ModuleFunctions<'a> {
        let index = self.index.entry(module.clone()).or_default();
        ModuleFunctions { module, records: &mut self.records, index }
    }

    /// The id of the function at `address` in the file of `module`, if
    /// it is known.
    pub fn find(&self, module: &Arc<str>, address: u64) -> Option<usize> {
        let index = self.index.get(module)?;
        index.binary_search_by_key(&address, |e| e.0).ok().map(|i| index[i].1)
    }

    /// Marks covered every function that a trampoline counted calls of
    /// (one patched ahead of its first call saw no breakpoint hit).
    pub fn cover_counted(&mut self, counters: &[u64]) {
        for r in &mut self.records {
            r.covered |=
                r.banked() > 0 || r.slots().iter().any(|&(s, base)| counters.get(s).is_some_and(|&n| n > base));
        }
    }

    /// The total calls of function `id`, given the counter values.
    pub fn calls(&self, id: usize, counters: &[u64]) -> u64 {
        let r = &self.records[id];
        let counted = r.slots().iter().filter_map(|&(s, base)| Some(counters.get(s)?.wrapping_sub(base)));
        r.trap_hits() + r.banked() + counted.sum::<u64>()
    }
}

impl ModuleFunctions<'_> {
    /// Makes room in the index for the `count` functions of a module new
    /// to the table at once (a compiler's 45,000, added one by one, grew it
    /// by doubling); a module known already (from another process) adds
    /// few.
    pub fn reserve(&mut self, count: usize) {
        if self.index.is_empty() {
            self.index.reserve(count);
        }
    }

    /// The id of function `entry` of `info` (the module's functions),
    /// added if new: in one step where its address is past every one known
    /// (as a new module's functions come, in order), by a search in the
    /// index otherwise.
    pub fn intern(&mut self, info: &Arc<ModuleInfo>, entry: usize) -> usize {
        let address = info.functions[entry].address;
        let at = match self.index.last() {
            Some(&(last, _)) if last < address => self.index.len(),
            None => 0,
            Some(_) => match self.index.binary_search_by_key(&address, |e| e.0) {
                Ok(found) => return self.index[found].1,
                Err(at) => at,
            },
        };
        let entry = u32::try_from(entry).expect("fewer than 2^32 functions in a module");
        self.records.push(FunctionRecord::new(self.module.clone(), info.clone(), entry));
        let id = self.records.len() - 1;
        self.index.insert(at, (address, id));
        id
    }
}

/// The call arcs seen: (callee, call site) with the calls counted by the
/// tool (at breakpoints) and the entries of the table of call arcs that
/// count the site's calls in trampolines (see [`crate::arc_table`]).
#[derive(Debug, Clone)]
pub struct ArcRecord {
    pub callee: usize,
    /// The module of the call site ("?" for code outside any module; see
    /// [`ArcTable::caller_module`]).
    pub caller_module: ModuleKey,
    /// The function holding the call site ("?" if none is known; see
    /// [`ArcTable::caller`]).
    pub caller: NameId,
    /// That function's entry address in the caller's module file, if known
    /// (which finds its record in the [`FunctionTable`] when it is
    /// instrumented too).
    pub caller_entry: Option<u64>,
    /// The call instruction's address in the caller's module file.
    pub callsite: u64,
    pub trap_hits: u64,
    /// Where its calls are counted while its programs run, made at the
    /// first entry or slot it takes: most arcs have neither, their counts
    /// banked as their programs end (two empty lists in each record made a
    /// compiler's 23,000 arcs take a megabyte of fresh memory more).
    pub counters: Option<Box<ArcCounters>>,
    /// The calls counted in entries and slots it has given back (their
    /// programs ended; see
    /// [`crate::counters::Counters::free_arc_entries`]).
    pub banked: u64,
    /// The calls its entries counted, once read, with those banked (see
    /// [`ArcTable::taken`]).
    pub counted: u64,
}

/// Where an arc's calls are counted while its programs run.
#[derive(Debug, Clone, Default)]
pub struct ArcCounters {
    /// The entries of the table of call arcs that count its calls (more
    /// than one where the call site is reached through several return
    /// addresses, or two threads claimed an entry for it at once).
    pub entries: Vec<usize>,
    /// The counter slots of its call site where the site counts its own
    /// calls (see [`crate::image::Image::count_site`]), one per program
    /// image, each with the count it held when the site took it.
    pub slots: Vec<(usize, u64)>,
}

impl ArcRecord {
    /// The entries of the table of call arcs that count its calls.
    pub fn entries(&self) -> &[usize] {
        self.counters.as_ref().map_or(&[], |c| &c.entries)
    }

    /// The counter slots of its call site, with the counts they held when
    /// it took them.
    pub fn slots(&self) -> &[(usize, u64)] {
        self.counters.as_ref().map_or(&[], |c| &c.slots)
    }

    /// Its counters, made if it has none yet.
    pub fn counters_mut(&mut self) -> &mut ArcCounters {
        self.counters.get_or_insert_with(Box::default)
    }
}

/// Every arc, by id.
#[derive(Debug, Default, Clone)]
pub struct ArcTable {
    pub records: Chunked<ArcRecord>,
    /// The caller modules, by [`ModuleKey`], each with its arcs' ids by
    /// (callee, call site), hashed with Fx: a compiler's run interns tens
    /// of thousands of arcs, which hashing the module's path with each
    /// (and counting a reference to it) made a third slower.
    modules: Vec<(Arc<str>, SiteArcs)>,
    keys: HashMap<Arc<str>, ModuleKey>,
    /// The callers' names, by [`NameId`], and their ids by place: the
    /// records name them by id, so that a record costs no reference counted
    /// (a compiler's run makes 60,000, and the `lock` of each count's
    /// increment, on a line of the name's own, was a third of the time of
    /// naming its call sites).
    names: Vec<Arc<str>>,
    name_ids: ByPlace<NameId>,
}

/// A caller's name in an [`ArcTable`], by its place there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameId(u32);

/// The arcs from one module, by (callee, call site).
type SiteArcs = FxHashMap<(usize, u64), usize>;

/// A caller module of an [`ArcTable`]: its place there, looked up once for
/// all the arcs from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleKey(u32);

impl ArcTable {
    /// Makes room in the index of the module of `key` for `more` arcs
    /// from it at once (a compiler's 36,000).
    pub fn reserve(&mut self, key: ModuleKey, more: usize) {
        self.modules[key.0 as usize].1.reserve(more);
    }

    /// The key of caller module `module`, added if new.
    pub fn module_key(&mut self, module: &Arc<str>) -> ModuleKey {
        if let Some(&key) = self.keys.get(module) {
            return key;
        }
        let key = ModuleKey(u32::try_from(self.modules.len()).expect("fewer than 2^32 modules"));
        self.modules.push((module.clone(), FxHashMap::default()));
        self.keys.insert(module.clone(), key);
        key
    }

    /// The module of arc `arc`'s call site.
    pub fn caller_module(&self, arc: &ArcRecord) -> &Arc<str> {
        &self.modules[arc.caller_module.0 as usize].0
    }

    /// The function holding arc `arc`'s call site.
    pub fn caller(&self, arc: &ArcRecord) -> &Arc<str> {
        &self.names[arc.caller.0 as usize]
    }

    /// The id of the arc from `callsite` in function `caller` (at
    /// `caller_entry`, if known) of the module of `key` to `callee`, added
    /// if new (one look-up of the pair: the names' only for a new arc).
    pub fn intern(
        &mut self,
        callee: usize,
        key: ModuleKey,
        caller: &Arc<str>,
        caller_entry: Option<u64>,
        callsite: u64,
    ) -> usize {
        let ArcTable { records, modules, names, name_ids, .. } = self;
        match modules[key.0 as usize].1.entry((callee, callsite)) {
            std::collections::hash_map::Entry::Occupied(arc) => *arc.get(),
            std::collections::hash_map::Entry::Vacant(vacant) => {
                let caller = name_ids.get_or_make(caller, || {
                    names.push(caller.clone());
                    NameId(u32::try_from(names.len() - 1).expect("fewer than 2^32 callers"))
                });
                records.push(ArcRecord {
                    callee,
                    caller_module: key,
                    caller,
                    caller_entry,
                    callsite,
                    trap_hits: 0,
                    counters: None,
                    banked: 0,
                    counted: 0,
                });
                *vacant.insert(records.len() - 1)
            }
        }
    }

    /// The arcs along which calls were made, each with the calls its
    /// entries in the table of call arcs counted (`counts`) and its call
    /// site's slots (given the counter values): the run's result, to which
    /// no arc is added (its index goes: rebuilding it for CPython's 15,000
    /// arcs took 3 ms).
    pub fn taken(self, counts: &ArcCounts, counters: &[u64]) -> ArcTable {
        let records = self.records.into_iter().filter_map(|mut r| {
            let in_slots = r.slots().iter().filter_map(|&(s, base)| Some(counters.get(s)?.wrapping_sub(base)));
            r.counted = r.banked + r.entries().iter().map(|&e| counts.count(e)).sum::<u64>() + in_slots.sum::<u64>();
            (r.trap_hits + r.counted > 0).then_some(r)
        });
        let modules = self.modules.into_iter().map(|(module, _)| (module, SiteArcs::default())).collect();
        ArcTable { records: records.collect(), modules, names: self.names, ..ArcTable::default() }
    }

    /// The total calls along arc `id` of a table of arcs taken.
    pub fn calls(&self, id: usize) -> u64 {
        let r = &self.records[id];
        r.trap_hits + r.counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_record_is_seven_words() {
        assert_eq!(std::mem::size_of::<FunctionRecord>(), 56);
    }

    #[test]
    fn an_arc_record_is_nine_words() {
        assert_eq!(std::mem::size_of::<ArcRecord>(), 72);
    }

    /// The functions of a module file: (name, address, size), sorted.
    fn info(functions: &[(&str, u64, u64)]) -> Arc<ModuleInfo> {
        let functions = functions
            .iter()
            .map(|&(name, address, size)| FunctionEntry { name: Arc::from(name), address, size })
            .collect();
        Arc::new(ModuleInfo { functions, ..ModuleInfo::default() })
    }

    #[test]
    fn a_function_is_one_record_per_module_and_entry() {
        let mut table = FunctionTable::default();
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("/lib/a.so"), Arc::from("/lib/b.so"));
        let (in_a, in_b) = (info(&[("f", 0x1000, 16)]), info(&[("f", 0x1000, 16), ("g", 0x2000, 8)]));
        let first = table.of_module(&a).intern(&in_a, 0);
        let mut of_b = table.of_module(&b);
        let other = of_b.intern(&in_b, 0);
        assert_eq!(of_b.intern(&in_b, 1), 2);
        assert_eq!(table.of_module(&a).intern(&in_a, 0), first, "the same function again");
        assert_ne!(first, other);
        assert_eq!((table.find(&a, 0x1000), table.find(&b, 0x1000), table.find(&a, 0x2000)), (Some(0), Some(1), None));
        assert_eq!(table.records.len(), 3);
        let g = &table.records[2];
        assert_eq!((&*g.module, &**g.name(), g.address()), ("/lib/b.so", "g", 0x2000));
        assert_eq!(g.extent(), Extent { size: 8, next: None }, "the last of its module");
        assert_eq!(table.records[1].extent(), Extent { size: 16, next: Some(0x2000) });
    }

    #[test]
    fn functions_interned_out_of_order_are_found_once_each() {
        let mut table = FunctionTable::default();
        let module: Arc<str> = Arc::from("/lib/a.so");
        let functions =
            info(&[("a", 0x1000, 8), ("b", 0x2000, 8), ("c", 0x3000, 8), ("d", 0x5000, 8), ("e", 0x9000, 8)]);
        let entries = [3, 0, 2, 4, 1, 2, 4];
        let ids: Vec<usize> = entries.iter().map(|&entry| table.of_module(&module).intern(&functions, entry)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 2, 3]);
        for (&entry, &id) in entries.iter().zip(&ids) {
            let address = functions.functions[entry].address;
            assert_eq!(table.find(&module, address), Some(id));
            assert_eq!(table.records[id].address(), address);
            assert_eq!(table.records[id].name(), &functions.functions[entry].name);
        }
        assert_eq!(table.find(&module, 0x4000), None);
    }
}
