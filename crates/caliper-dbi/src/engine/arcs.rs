//! Call arcs: which call site a call came from (the return address at
//! the callee's entry). Arc trampolines count (return address, arc id)
//! pairs in the table of call arcs (see [`crate::arc_table`]); each
//! trampoline's function has an arc id per image. The sites are named
//! when the counts are read, before the image goes (its modules name the
//! callers), at its process's exit or exec, or at the end.

use super::Engine;
use super::naming::Ended;
use crate::arc_table;
use crate::counters::ArcCounts;
use crate::discover::FunctionEntry;
use crate::functions::{ArcTable, ModuleKey};
use crate::image::{Image, LoadedModule};
use crate::mapped::Mapped;
use crate::relocate;
use object::{Object, ObjectSection};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The code sections of a module file, mapped once to find the calls
/// before many return addresses in it.
struct FileCode {
    file: Mapped,
    /// (address, offset in the file, size) of each code section.
    sections: Vec<(u64, usize, usize)>,
}

impl FileCode {
    fn open(path: &std::path::Path) -> Option<FileCode> {
        let file = Mapped::file(path).ok()?;
        let elf = object::File::parse(file.bytes()).ok()?;
        let sections = elf
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| {
                let (offset, size) = s.file_range()?;
                Some((s.address(), usize::try_from(offset).ok()?, usize::try_from(size).ok()?))
            })
            .collect();
        Some(FileCode { file, sections })
    }

    /// The 8 bytes before address `at` (the file's), if a code section
    /// holds them.
    fn before(&self, at: u64) -> Option<[u8; 8]> {
        let &(address, offset, _) =
            self.sections.iter().find(|&&(address, _, size)| address + 8 <= at && at <= address + size as u64)?;
        let end = offset + (at - address) as usize;
        self.file.bytes().get(end - 8..end)?.try_into().ok()
    }
}

/// A call site, named: its module's key in the table of arcs, the
/// function holding it (None: none known) and its address in the module's
/// file.
struct Site<'a> {
    key: ModuleKey,
    caller: Option<&'a FunctionEntry>,
    at: u64,
}

impl Site<'_> {
    /// The arc in `arcs` from this site to function `f`.
    fn arc(&self, arcs: &mut ArcTable, f: usize) -> usize {
        match self.caller {
            Some(caller) => arcs.intern(f, self.key, &caller.name, Some(caller.address), self.at),
            None => arcs.intern(f, self.key, &Arc::from("?"), None, self.at),
        }
    }
}

/// The site of the call that returns to `ret` in `image`, the call found
/// in the bytes before `ret` in the process; `key` gives a module's key
/// in the table of arcs.
fn site_from<'a>(image: &'a Image, ret: u64, key: &mut dyn FnMut(&Arc<str>) -> ModuleKey) -> Site<'a> {
    // Not a return address into code (a thread's start, or a function
    // entered by a jump, finds other data there): a site in nowhere.
    let Some(m) = image.module_of(ret.wrapping_sub(1)).filter(|_| ret >= 8) else {
        return Site { key: key(&Arc::from("?")), caller: None, at: ret };
    };
    let mut before = [0u8; 8];
    let site = match image.memory.read(ret.wrapping_sub(8), &mut before) {
        Ok(()) => relocate::call_before(&before, ret),
        Err(_) => ret,
    };
    let module = &image.modules[m];
    site_at(module, key(&module.path), site.wrapping_sub(module.bias))
}

/// The call site at `at` (an address in the file) of `module`, whose key
/// in the table of arcs is `key`.
fn site_at(module: &LoadedModule, key: ModuleKey, at: u64) -> Site<'_> {
    Site { key, caller: module.info.function_holding(at), at }
}

/// Names the call sites of an image's return addresses, taken in order:
/// the module of the last one is looked at first, with its file's code,
/// its key and the function that held the last site (the next is mostly
/// in it or just after it: a search of a compiler's 45,000 functions at
/// each site missed the caches on its way). Each module's file is mapped
/// once (the process may have exited, and tens of thousands of reads of
/// its memory cost more than a mapping), its key in the table of arcs
/// (`arcs`, locked for it) looked up once, and room made there for as
/// many arcs as there are return addresses into it among those to be
/// named (`rets`, sorted).
struct SiteNamer<'a> {
    image: &'a Image,
    arcs: &'a Mutex<ArcTable>,
    files: HashMap<usize, (Option<Arc<FileCode>>, ModuleKey)>,
    /// The module of the last return address, its file's code, its key,
    /// and the index of the function that held the last site.
    last: Option<(usize, Option<Arc<FileCode>>, ModuleKey, usize)>,
    rets: &'a [u64],
}

impl<'a> SiteNamer<'a> {
    fn new(image: &'a Image, arcs: &'a Mutex<ArcTable>, rets: &'a [u64]) -> SiteNamer<'a> {
        SiteNamer { image, arcs, files: HashMap::new(), last: None, rets }
    }

    /// The site of the call that returns to `ret`.
    fn site(&mut self, ret: u64) -> Site<'a> {
        let (image, arcs) = (self.image, self.arcs);
        let mut key = |path: &Arc<str>| super::lock(arcs).module_key(path);
        let inside = |m: usize| (image.modules[m].low..image.modules[m].high).contains(&ret.wrapping_sub(1));
        let last = self.last.take().filter(|(m, ..)| inside(*m));
        let (m, code, key_of_m, near) = match last {
            Some(last) => last,
            None => {
                let Some(m) = image.module_of(ret.wrapping_sub(1)).filter(|_| ret >= 8) else {
                    return site_from(image, ret, &mut key);
                };
                let module = &image.modules[m];
                let rets = self.rets;
                let (code, key) = self.files.entry(m).or_insert_with(|| {
                    let mut arcs = super::lock(arcs);
                    let key = arcs.module_key(&module.path);
                    let within = |bound: u64| rets.partition_point(|&r| r <= bound);
                    arcs.reserve(key, within(module.high) - within(module.low));
                    (FileCode::open(&module.info.path).map(Arc::new), key)
                });
                (m, code.clone(), *key, 0)
            }
        };
        let module = &image.modules[m];
        let in_file = ret.wrapping_sub(module.bias);
        let Some(before) = code.as_ref().and_then(|c| c.before(in_file)) else {
            self.last = Some((m, code, key_of_m, near));
            return site_from(image, ret, &mut key);
        };
        let at = relocate::call_before(&before, in_file);
        let (caller, near) = module.info.function_holding_near(at, near);
        self.last = Some((m, code, key_of_m, near));
        Site { key: key_of_m, caller, at }
    }
}

/// An image's arc ids, by id.
pub(super) struct ImageIds {
    /// Whether each is the image's (a compiler's image has 50,000).
    mine: Vec<bool>,
    /// Whether each is final: the image has ended and no other image
    /// shares it.
    last: Vec<bool>,
}

/// The entries the table of arcs is held locked for at a time while an
/// image's are joined to their arcs: the tool's own thread, naming the
/// sites of a new call site counter, waits for it at most that long.
const ENTRIES_AT_A_TIME: usize = 1024;

impl ImageIds {
    /// The entries of `counts` that these ids claimed.
    pub(super) fn entries_in(&self, counts: &ArcCounts) -> Vec<arc_table::Entry> {
        counts.entries.iter().filter(|e| self.mine.get(e.id as usize) == Some(&true)).copied().collect()
    }

    /// Whether `id` is final.
    fn is_last(&self, id: u32) -> bool {
        self.last.get(id as usize) == Some(&true)
    }
}

/// Joins `entries`, of the arc ids `ids` of `image`, to their arcs in
/// `arcs`, the arcs made where new (the callers named from the image's
/// modules; `callees` has the function of each id at id - 1); those of
/// final ids with their counts, not their entries (which the caller
/// frees).
pub(super) fn join_entries(
    image: &Image,
    mut entries: Vec<arc_table::Entry>,
    ids: &ImageIds,
    callees: &[usize],
    arcs: &Mutex<ArcTable>,
) {
    // In the order of their return addresses, the module files' pages and
    // the function lists are read in order (in hash order, a compiler's
    // sites took twice as long to name); the entries themselves sorted,
    // not references to them (each a cache miss in table order).
    entries.sort_unstable_by_key(|e| e.ret);
    let rets: Vec<u64> = entries.iter().map(|e| e.ret).collect();
    let mut namer = SiteNamer::new(image, arcs, &rets);
    for some in entries.chunks(ENTRIES_AT_A_TIME) {
        // Named first, then joined with the table locked.
        let sites: Vec<Site> = some.iter().map(|entry| namer.site(entry.ret)).collect();
        let mut arcs = super::lock(arcs);
        for (entry, site) in some.iter().zip(&sites) {
            let Some(&f) = callees.get(entry.id as usize - 1) else { continue };
            let arc = site.arc(&mut arcs, f);
            let record = &mut arcs.records[arc];
            let joined = record.entries().iter().position(|&index| index == entry.index);
            if ids.is_last(entry.id) {
                // A forked copy that ended first joined the entry.
                if let Some(n) = joined {
                    record.counters_mut().entries.swap_remove(n);
                }
                record.banked += entry.count;
            } else if joined.is_none() {
                record.counters_mut().entries.push(entry.index);
            }
        }
    }
}

impl Engine {
    /// The arc id of the trampoline of function `f` at `entry` in image
    /// `image_id`: its own if it has one, else one given back by an image
    /// that has ended, else a new one (ids from 1).
    pub(super) fn arc_id(&mut self, image_id: usize, entry: u64, f: usize) -> u32 {
        if let Some(&id) = self.arc_ids.get(&image_id).and_then(|ids| ids.get(&entry)) {
            return id;
        }
        let id = match self.free_arc_ids.pop() {
            Some(id) => {
                self.arc_callees[id as usize - 1] = f;
                id
            }
            None => {
                self.arc_callees.push(f);
                u32::try_from(self.arc_callees.len()).unwrap_or(u32::MAX)
            }
        };
        self.arc_ids.entry(image_id).or_default().insert(entry, id);
        id
    }

    /// The arc ids of image `image_id` that no other image counts under (a
    /// forked copy still running shares its parent's).
    fn ids_of_image_alone(&self, image_id: usize) -> Vec<u32> {
        let others = self.arc_ids.iter().filter(|&(&other, _)| other != image_id);
        let shared =
            super::in_use(self.arc_callees.len() + 1, others.flat_map(|(_, ids)| ids.values()).map(|&id| id as usize));
        let mine = self.arc_ids.get(&image_id).into_iter().flat_map(|ids| ids.values());
        mine.copied().filter(|&id| !shared[id as usize]).collect()
    }

    /// The entries of the table of call arcs as they stand.
    pub(super) fn read_arc_counts(&self) -> ArcCounts {
        self.counters.read_arcs().unwrap_or_else(|e| {
            eprintln!("== CALIPER: cali-run: cannot read the call arcs: {e}");
            ArcCounts::default()
        })
    }

    /// The arcs of the calls that the trampolines of the live `images`
    /// counted, each joined by its entries in the table of call arcs: made
    /// as the images go (the callers are named from their modules), and
    /// their ids forgotten. Returns the entries read (none without `arcs`).
    pub(super) fn take_site_arcs(&mut self, images: &[usize]) -> ArcCounts {
        if !self.config.collect.arcs {
            return ArcCounts::default();
        }
        let counts = self.read_arc_counts();
        for &image_id in images {
            if let Some(image) = self.images.get(&image_id) {
                let ids = self.image_ids(image_id, &[]);
                join_entries(image, ids.entries_in(&counts), &ids, &self.arc_callees, &self.arcs);
            }
            self.arc_ids.remove(&image_id);
        }
        counts
    }

    /// Names the call sites of `image` (of id `image_id`), which has
    /// ended, on the thread for it (see [`naming`](super::naming)), from
    /// a copy of its entries in the table of call arcs. Those of ids no
    /// live image shares (a forked copy still running shares its
    /// parent's) are final: their counts go to their arcs, the entries are
    /// freed here for others to claim (see
    /// [`Counters::free_arc_entries`](crate::counters::Counters::free_arc_entries))
    /// and the ids given back (a build that runs a compiler hundreds of
    /// times would take 10,000 more at each run).
    pub(super) fn name_ended_image(&mut self, image_id: usize, image: Image) {
        let counts = self.read_arc_counts();
        let alone = self.ids_of_image_alone(image_id);
        let ids = self.image_ids(image_id, &alone);
        self.arc_ids.remove(&image_id);
        let entries = ids.entries_in(&counts);
        let freed: Vec<usize> = entries.iter().filter(|e| ids.is_last(e.id)).map(|e| e.index).collect();
        match self.counters.free_arc_entries(&freed) {
            Ok(()) => {
                self.arc_entries_freed += freed.len();
                self.free_arc_ids.extend(alone);
            }
            Err(e) => eprintln!("== CALIPER: cali-run: cannot free entries of the table of call arcs: {e}"),
        }
        let ended = Ended { image, ids, callees: self.arc_callees.clone(), entries };
        self.ended_images.name(ended, &self.arcs);
    }

    /// The arc ids of image `image_id`, and which of them are among
    /// `last`.
    pub(super) fn image_ids(&self, image_id: usize, last: &[u32]) -> ImageIds {
        let bound = self.arc_callees.len() + 1;
        let mine = self.arc_ids.get(&image_id).into_iter().flat_map(|ids| ids.values()).map(|&id| id as usize);
        ImageIds { mine: super::in_use(bound, mine), last: super::in_use(bound, last.iter().map(|&id| id as usize)) }
    }

    /// The arc from the call that returns to `ret` to function `f`.
    pub(super) fn arc_of(&mut self, image_id: usize, f: usize, ret: u64) -> usize {
        let mut arcs = self.arcs();
        let site = site_from(&self.images[&image_id], ret, &mut |path| arcs.module_key(path));
        site.arc(&mut arcs, f)
    }

    /// The arc from the call at `call` (an address in module `m` of image
    /// `image_id`) to function `f`.
    pub(super) fn arc_of_call(&mut self, image_id: usize, m: usize, f: usize, call: u64) -> usize {
        let module = &self.images[&image_id].modules[m];
        let mut arcs = self.arcs();
        let key = arcs.module_key(&module.path);
        site_at(module, key, call.wrapping_sub(module.bias)).arc(&mut arcs, f)
    }

    /// Says on standard error how many calls found the table of call arcs
    /// full (their sites go unnamed; the calls are still counted), and,
    /// with `CALI_RUN_DEBUG_ARCS=1`, what the arcs cost: the arc ids given
    /// (one per function and image), the entries claimed now and freed
    /// before (their programs ended), the arc records made, the call sites
    /// given counters of their own, the counter slots taken now and at
    /// most.
    pub(super) fn report_arc_table(&self, counts: &ArcCounts) {
        if counts.overflow > 0 {
            eprintln!(
                "== CALIPER: cali-run: the table of call arcs was full: the call sites of {} calls are not known \
                 (their callees' calls are counted)",
                counts.overflow
            );
        }
        if std::env::var_os("CALI_RUN_DEBUG_ARCS").is_none_or(|v| v != "1") {
            return;
        }
        let slots = crate::counters::SLOTS - self.counters.free();
        eprintln!(
            "== CALIPER: cali-run: arcs: {} arc ids; {} of {} entries of the table of call arcs claimed, \
             {} freed; {} arc records; {} call sites counting their own calls, {} of them calls of a PLT entry \
             that count the function behind it too; {slots} of {} counter slots taken, {} at most",
            self.arc_callees.len(),
            counts.entries.len(),
            crate::arc_table::ENTRIES,
            self.arc_entries_freed,
            self.arcs().records.len(),
            self.site_passes.counted,
            self.site_passes.through_plt,
            crate::counters::SLOTS,
            self.counters.high_water()
        );
    }
}
