//! The table of call arcs, and the routine that counts in it.
//!
//! An arc is a (call site, callee) pair. At a function's entry the call
//! site is known by the return address on the stack, so the arc
//! trampolines count (return address, callee) pairs in one open-addressing
//! hash table in the counter file (after the counter slots). Each
//! trampoline hashes its pair and looks at the first-level entry the hash
//! picks, the pair's home, and at the entry after it: where one holds the
//! pair, it increments the count there itself; else it puts its callee's
//! id in RAX and calls the
//! routine of its trampoline region, which searches on from the home
//! entry, increments the pair's count, and claims a free entry with
//! `cmpxchg` for a pair seen the first time; so that a new call site costs
//! the program no stop and the tool no work while it runs. The tool reads
//! the claimed entries at the end and names each site (the call before
//! the return address) then. A pair claims its entry at its first call,
//! so the pairs of a program's start-up, its hottest mostly, find their
//! homes free: most calls never reach the routine. (Before, a trampoline
//! looked first at the entry its function's last call had found, which a
//! function called from two sites in turn never found again: sqlite3 called
//! the routine at 7 of 10 calls.)
//!
//! Before, each trampoline searched the call sites its function's code
//! showed, with a counter each: a compiler's 65,000 functions knew half
//! a million sites, which took most of the tool's start-up to build.
//!
//! An entry is three words: the return address (0 while free), the
//! callee's id and the count. A claim writes the return address first and
//! the id after it, so another thread may, for a moment, see the address
//! without the id and claim a second entry for the same pair: the tool
//! adds the counts of equal pairs. Ids start at 1, so an entry whose id is
//! not yet written matches no call. A return address of 0 (a function
//! entered by a jump finds whatever is on the stack) is counted as 1: both
//! are no call site, and 0 marks a free entry.
//!
//! The table has two levels, searched in turn: a small one (2^17 entries,
//! 3 MiB), where a program's arcs mostly stay, and a large one (2^19,
//! 12 MiB) for the pairs that find no room in the first. A program's hot
//! arcs then lie on few pages: spread over a table of 12 MiB, each call's
//! entry was a TLB miss, and the pages touched a fault each (sqlite3 ran
//! 20 ms longer so). The first level is twice a compiler's arcs: with
//! 2^16 entries, cc1 compiling Lua's `lvm.c` filled 59,000 of them, its
//! pairs lay far from their homes, and a fifth of its 133 million calls
//! went through the routine (with 2^17, one in fifteen: `arcs` 10–15 %
//! faster there). In each level the pair's hash picks an entry and the
//! search goes on through at most [`PROBES`] entries (each level has as
//! many after its hashed ones); a pair that finds no room in either is
//! counted in the table's header instead, which the tool reports. An entry
//! is freed only once every program that counted in it has ended (see
//! [`Counters::free_arc_entries`](crate::counters::Counters::free_arc_entries)):
//! a running pair whose search passes it claims it, beside its entry
//! further on, and the tool adds the counts of equal pairs.
//!
//! An entry's increments are unlocked while one thread runs its image's
//! trampolines and are made locked in place with theirs (see
//! [`Increment`]): no other image counts in the entries of its ids. The
//! claims, and the header's count, are always locked: every image's calls
//! reach them. With per-processor counters, the table's increments are
//! locked, the first level's in the running processor's copy of its counts
//! (see [`COPIES_AT`]).

use crate::relocate::{self, CONSTANT_LABEL, Increment, LABEL, Trampoline, Unpatchable, unencodable};
use iced_x86::{Code, Instruction, MemoryOperand, Register};

/// The bytes of an entry.
pub const ENTRY_BYTES: u64 = 24;
/// The entries a search looks at in a level, from the one the hash picks.
pub const PROBES: u64 = 64;
/// The entries a pair's hash chooses among in each level (2^17 and
/// 2^19: a compiler's run makes 35,000 to 60,000 arcs, a program's half a
/// million fit).
const LEVELS_LOG2: [u32; 2] = [17, 19];
/// The entries of both levels, each with [`PROBES`] after its hashed ones.
pub const ENTRIES: u64 = (1 << LEVELS_LOG2[0]) + (1 << LEVELS_LOG2[1]) + 2 * PROBES;
/// The header before the entries: the count of the calls that found no
/// entry, then padding to an entry's size.
pub const HEADER_BYTES: u64 = ENTRY_BYTES;
/// The bytes of the table (15 MiB, sparse: only the pages touched take
/// memory).
pub const TABLE_BYTES: u64 = HEADER_BYTES + ENTRIES * ENTRY_BYTES;

/// The bytes of the first level's entries.
const LEVEL0_BYTES: u64 = ((1 << LEVELS_LOG2[0]) + PROBES) * ENTRY_BYTES;
/// The first level's per-processor copies of its counts, after the table
/// (page-aligned), each 4 MiB (the level's bytes rounded up to a power of
/// two): under per-processor counters, a first-level pair is counted in
/// the copy of the processor the routine runs on, at the entry's offset in
/// the level (threads that make the same calls would otherwise contend for
/// one entry's cache line: `xz -T2` ran twice fcount's time).
pub const COPIES_AT: u64 = TABLE_BYTES.next_multiple_of(4096);
pub const COPY_STRIDE_LOG2: u32 = 22;
const _: () = assert!(LEVEL0_BYTES <= 1 << COPY_STRIDE_LOG2);
/// The entries that have per-processor copies of their counts: the first
/// level's.
const COPIED_ENTRIES: u64 = LEVEL0_BYTES / ENTRY_BYTES;

/// The bytes of the table with the copies of `processors` processors (0:
/// no copies).
pub const fn bytes_with_copies(processors: u64) -> u64 {
    if processors == 0 { TABLE_BYTES } else { COPIES_AT + (processors << COPY_STRIDE_LOG2) }
}

/// The offset from the table of the count of entry `index` in processor
/// `copy`'s copy (the entry is a first-level one).
pub(crate) const fn copied_count_at(index: u64, copy: u64) -> u64 {
    COPIES_AT + (copy << COPY_STRIDE_LOG2) + index * ENTRY_BYTES + 16
}

/// The multiplier of the hash (Fibonacci hashing: 2^64 over the golden
/// ratio), whose high bits are the entry.
pub(crate) const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
/// The shift of the hash product that leaves a first-level entry's index.
pub(crate) const FIRST_LEVEL_SHIFT: u32 = 64 - LEVELS_LOG2[0];
/// The offset of the first level's first entry from the table.
pub(crate) const FIRST_LEVEL_AT: u64 = HEADER_BYTES;

/// The key of the pair (`ret`, `id`) that the hash multiplies: the id in
/// the bits above any user-space address.
pub(crate) const fn key(ret: u64, id: u32) -> u64 {
    ret ^ ((id as u64) << 40)
}

/// The index of the pair's home: the first-level entry its search starts
/// at, which its trampoline looks at with the one after it (see
/// [`routine`]).
#[cfg(test)]
pub(crate) const fn home(ret: u64, id: u32) -> u64 {
    key(ret, id).wrapping_mul(MULTIPLIER) >> FIRST_LEVEL_SHIFT
}

/// The labels of the routine's branch targets: those of level n's search
/// (its start, its compare, its free entry, its next entry) at
/// `LEVEL_LABELS * n` past the first level's.
const START: u64 = LABEL;
const LOOK: u64 = LABEL + 1;
const EMPTY: u64 = LABEL + 2;
const NEXT: u64 = LABEL + 3;
const LEVEL_LABELS: u64 = 4;
const COUNT: u64 = LABEL + 0x100;
const FULL: u64 = LABEL + 0x101;
const DONE: u64 = LABEL + 0x102;
const IN_PLACE: u64 = LABEL + 0x103;

/// The arc routine, encoded at `at`, of the table at `table` (its
/// header's address), its increments made as `how` says.
///
/// The arc trampoline pushed RAX and put the callee's id in it, then
/// called this: the return address of the counted call is five words up
/// once RCX, RDX and R8 are pushed. RCX holds the return address, RDX the
/// entry looked at, R8 the end of the level's search. RAX is not kept (the
/// trampoline restores it); the flags are free at a function's entry; the
/// other registers are kept.
pub fn routine(at: u64, table: u64, how: Increment) -> Result<Trampoline, Unpatchable> {
    let per_cpu = matches!(how, Increment::PerCpu { .. });
    let how = if per_cpu { Increment::Locked } else { how };
    let op = |r: Result<Instruction, iced_x86::IcedError>| r.map_err(unencodable);
    let ret = MemoryOperand::with_base_displ(Register::RSP, 40);
    let mut list = vec![
        op(Instruction::with1(Code::Push_r64, Register::RCX))?,
        op(Instruction::with1(Code::Push_r64, Register::RDX))?,
        op(Instruction::with1(Code::Push_r64, Register::R8))?,
        op(Instruction::with2(Code::Mov_r64_rm64, Register::RCX, ret))?,
        // A 0 there (a function entered by a jump, a thread's start) would
        // match every free entry: 1 stands for it, as for no call site.
        op(Instruction::with2(Code::Cmp_rm64_imm8, Register::RCX, 1))?,
        op(Instruction::with2(Code::Adc_rm64_imm8, Register::RCX, 0))?,
    ];
    let mut constants = vec![MULTIPLIER];
    let mut first = table + HEADER_BYTES;
    for (n, log2) in LEVELS_LOG2.into_iter().enumerate() {
        constants.push(first);
        let next_level = if n + 1 < LEVELS_LOG2.len() { START + LEVEL_LABELS * (n as u64 + 1) } else { FULL };
        list.extend(level_search(n as u64, log2, constants.len() as u64 - 1, next_level)?);
        first += ((1 << log2) + PROBES) * ENTRY_BYTES;
    }
    // No room in either level: the header's count, which every image's
    // calls may reach.
    let mut full = relocate::increment_at(Register::RIP, table as i64, Increment::Locked)?;
    full[0].set_ip(FULL);
    list.extend(full);
    list.push(op(Instruction::with_branch(Code::Jmp_rel32_64, DONE))?);
    if per_cpu {
        constants.push(table + HEADER_BYTES + LEVEL0_BYTES);
        list.extend(count_per_cpu(constants.len() as u64 - 1)?);
    } else {
        let mut count = relocate::increment_at(Register::RDX, 16, how)?;
        count[0].set_ip(COUNT);
        list.extend(count);
    }
    let mut done = op(Instruction::with1(Code::Pop_r64, Register::R8))?;
    done.set_ip(DONE);
    list.extend([
        done,
        op(Instruction::with1(Code::Pop_r64, Register::RDX))?,
        op(Instruction::with1(Code::Pop_r64, Register::RCX))?,
        Instruction::with(Code::Retnq),
    ]);
    relocate::encode_with_constants(&list, &constants, at)
}

/// The count of the entry at RDX under per-processor counters: a
/// first-level entry's in the copy of the running processor (`rdpid`, as
/// the per-processor increment reads it; RCX is free by then), locked, as
/// a thread may move between the read and the increment; a second-level
/// entry's (at or past the constant `second_level`) in place.
fn count_per_cpu(second_level: u64) -> Result<Vec<Instruction>, Unpatchable> {
    let op = |r: Result<Instruction, iced_x86::IcedError>| r.map_err(unencodable);
    let level = MemoryOperand::with_base_displ(Register::RIP, (CONSTANT_LABEL + second_level) as i64);
    let copy = MemoryOperand::with_base_index_scale_displ_size(
        Register::RDX,
        Register::RCX,
        1,
        (copied_count_at(0, 0) - HEADER_BYTES) as i64,
        8,
    );
    let mut in_copy = op(Instruction::with1(Code::Inc_rm64, copy))?;
    in_copy.set_has_lock_prefix(true);
    let mut in_place = op(Instruction::with1(Code::Inc_rm64, MemoryOperand::with_base_displ(Register::RDX, 16)))?;
    in_place.set_has_lock_prefix(true);
    in_place.set_ip(IN_PLACE);
    let mut first = op(Instruction::with2(Code::Cmp_r64_rm64, Register::RDX, level))?;
    first.set_ip(COUNT);
    Ok(vec![
        first,
        op(Instruction::with_branch(Code::Jae_rel32_64, IN_PLACE))?,
        op(Instruction::with1(Code::Rdpid_r64, Register::RCX))?,
        op(Instruction::with2(Code::And_rm32_imm32, Register::ECX, 0xfff))?,
        op(Instruction::with2(Code::Shl_rm64_imm8, Register::RCX, COPY_STRIDE_LOG2))?,
        in_copy,
        op(Instruction::with_branch(Code::Jmp_rel32_64, DONE))?,
        in_place,
    ])
}

/// The search of level `n` (of 2^`log2` hashed entries, the first at the
/// constant `first`): the pair's entry found, to `COUNT`; a free one
/// claimed, to `COUNT`; [`PROBES`] entries taken by other pairs, to
/// `next_level`. The pair's return address in RCX, its id in RAX.
fn level_search(n: u64, log2: u32, first: u64, next_level: u64) -> Result<Vec<Instruction>, Unpatchable> {
    let op = |r: Result<Instruction, iced_x86::IcedError>| r.map_err(unencodable);
    let [start, look, empty, next] = [START, LOOK, EMPTY, NEXT].map(|label| label + LEVEL_LABELS * n);
    let labelled = |mut insn: Instruction, label: u64| {
        insn.set_ip(label);
        insn
    };
    let branch = |code: Code, label: u64| op(Instruction::with_branch(code, label));
    let constant = |k: u64| MemoryOperand::with_base_displ(Register::RIP, (CONSTANT_LABEL + k) as i64);
    let entry = MemoryOperand::with_base(Register::RDX);
    let entry_id = MemoryOperand::with_base_displ(Register::RDX, 8);
    let times_three = MemoryOperand::with_base_index_scale(Register::RDX, Register::RDX, 2);
    let search_end = MemoryOperand::with_base_displ(Register::RDX, (PROBES * ENTRY_BYTES) as i64);
    // Locked whatever `how` says: the table is every image's, and two
    // processes that count unlocked, each in entries of its own, may claim
    // free entries at the same moment.
    let mut claim = op(Instruction::with2(Code::Cmpxchg_rm64_r64, entry, Register::RCX))?;
    claim.set_has_lock_prefix(true);
    Ok(vec![
        // The entry: hash(return address ^ id << 40) * 24 past the first.
        labelled(op(Instruction::with2(Code::Mov_r64_rm64, Register::RDX, Register::RAX))?, start),
        op(Instruction::with2(Code::Shl_rm64_imm8, Register::RDX, 40))?,
        op(Instruction::with2(Code::Xor_r64_rm64, Register::RDX, Register::RCX))?,
        op(Instruction::with2(Code::Imul_r64_rm64, Register::RDX, constant(0)))?,
        op(Instruction::with2(Code::Shr_rm64_imm8, Register::RDX, 64 - log2))?,
        op(Instruction::with2(Code::Lea_r64_m, Register::RDX, times_three))?,
        op(Instruction::with2(Code::Shl_rm64_imm8, Register::RDX, 3))?,
        op(Instruction::with2(Code::Add_r64_rm64, Register::RDX, constant(first)))?,
        op(Instruction::with2(Code::Lea_r64_m, Register::R8, search_end))?,
        labelled(op(Instruction::with2(Code::Cmp_rm64_r64, entry, Register::RCX))?, look),
        branch(Code::Jne_rel32_64, empty)?,
        op(Instruction::with2(Code::Cmp_rm64_r64, entry_id, Register::RAX))?,
        branch(Code::Je_rel32_64, COUNT)?,
        labelled(op(Instruction::with2(Code::Add_rm64_imm8, Register::RDX, ENTRY_BYTES as i32))?, next),
        op(Instruction::with2(Code::Cmp_r64_rm64, Register::RDX, Register::R8))?,
        branch(Code::Jb_rel32_64, look)?,
        branch(Code::Jmp_rel32_64, next_level)?,
        labelled(op(Instruction::with2(Code::Cmp_rm64_imm8, entry, 0))?, empty),
        branch(Code::Jne_rel32_64, next)?,
        op(Instruction::with1(Code::Push_r64, Register::RAX))?,
        op(Instruction::with2(Code::Xor_r32_rm32, Register::EAX, Register::EAX))?,
        claim,
        // pop keeps the flags: unequal, another thread claimed the entry
        // first, for this pair or another; compare again.
        op(Instruction::with1(Code::Pop_r64, Register::RAX))?,
        branch(Code::Jne_rel32_64, look)?,
        op(Instruction::with2(Code::Mov_rm64_r64, entry_id, Register::RAX))?,
        branch(Code::Jmp_rel32_64, COUNT)?,
    ])
}

/// A claimed entry of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Its index among the entries (from 0, after the header).
    pub index: usize,
    /// The return address of the calls.
    pub ret: u64,
    /// The callee's id.
    pub id: u32,
    pub count: u64,
}

impl Entry {
    /// The entry at `index` that holds `ret`, `id` and `count`, if it is
    /// claimed and has its id.
    pub fn claimed(index: usize, ret: u64, id: u64, count: u64) -> Option<Entry> {
        let id = u32::try_from(id).ok().filter(|&id| ret != 0 && id != 0)?;
        Some(Entry { index, ret, id, count })
    }

    /// The entry at `index` of a table with the copies of `processors`
    /// processors, as `word` (the table's word at a byte offset from its
    /// start) reads it, its count over the copies; None unless claimed.
    /// The counts of a free entry (most of the first level's) are not read:
    /// reading the whole table took a compiler's run 2 ms each time.
    pub fn read(index: u64, processors: u64, word: impl Fn(u64) -> u64) -> Option<Entry> {
        let at = HEADER_BYTES + index * ENTRY_BYTES;
        let entry = Entry::claimed(index as usize, word(at), word(at + 8), 0)?;
        Some(Entry { count: count_offsets(index, processors).map(&word).sum::<u64>(), ..entry })
    }
}

/// The offsets from the table of the words that hold entry `index`'s
/// count in a table with the copies of `processors` processors: its own,
/// and a first-level entry's in each copy.
pub(crate) fn count_offsets(index: u64, processors: u64) -> impl Iterator<Item = u64> {
    let copies = if index < COPIED_ENTRIES { processors } else { 0 };
    std::iter::once(HEADER_BYTES + index * ENTRY_BYTES + 16).chain((0..copies).map(move |k| copied_count_at(index, k)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relocate::tests::{COPIES, STRIDE_LOG2, call_keeping_registers, per_cpu_runs_here, write_callers};
    use crate::relocate::{ArcProbe, JUMP_LEN, Probe, build, entry_instructions};

    const PAGE: u64 = 4096;
    /// The bytes the tests keep for the routine before their trampolines.
    const ROUTINE_ROOM: u64 = 1024;

    /// Memory for code, callers and a table of `entries` entries (the
    /// routine's constants say where it ends), read and written by the
    /// test for real.
    struct Arena {
        base: *mut libc::c_void,
        len: usize,
    }

    impl Arena {
        fn new(len: u64) -> Arena {
            // SAFETY: a fresh private mapping, unmapped on drop.
            let base = unsafe {
                let prot = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
                let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
                libc::mmap(std::ptr::null_mut(), len as usize, prot, flags, -1, 0)
            };
            assert_ne!(base, libc::MAP_FAILED);
            Arena { base, len: len as usize }
        }

        fn at(&self, offset: u64) -> u64 {
            self.base as u64 + offset
        }

        fn write(&self, at: u64, bytes: &[u8]) {
            assert!(at >= self.at(0) && at + bytes.len() as u64 <= self.at(self.len as u64));
            // SAFETY: inside the mapping, as asserted.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at as *mut u8, bytes.len()) };
        }

        fn bytes(&self, at: u64, len: u64) -> &[u8] {
            assert!(at >= self.at(0) && at + len <= self.at(self.len as u64));
            // SAFETY: inside the mapping, as asserted.
            unsafe { std::slice::from_raw_parts(at as *const u8, len as usize) }
        }
    }

    impl Drop for Arena {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, no longer used.
            unsafe { libc::munmap(self.base, self.len) };
        }
    }

    /// A routine at the start of an arena (two pages of code, the
    /// trampolines after the routine's room), a page of callers, the
    /// counters (as many pages as asked: per-processor copies are a page
    /// apart) and the table.
    struct Rig {
        arena: Arena,
        code: u64,
        caller: u64,
        counters: u64,
        table: u64,
        how: Increment,
        /// The processors with a copy of the first level's counts.
        processors: u64,
    }

    /// A function whose entry is `ret` (and padding to a jump's length).
    const RET: [u8; 5] = [0xc3, 0x90, 0x90, 0x90, 0x90];

    impl Rig {
        fn new(how: Increment, counter_pages: u64) -> Rig {
            let processors = if matches!(how, Increment::PerCpu { .. }) { COPIES as u64 - 1 } else { 0 };
            let arena = Arena::new((3 + counter_pages) * PAGE + bytes_with_copies(processors));
            let (code, caller, counters) = (arena.at(0), arena.at(2 * PAGE), arena.at(3 * PAGE));
            let table = counters + counter_pages * PAGE;
            let routine = routine(code, table, how).unwrap();
            assert!(routine.code.len() as u64 <= ROUTINE_ROOM);
            arena.write(code, &routine.code);
            Rig { arena, code, caller, counters, table, how, processors }
        }

        /// The `n`th arc trampoline, of callee `id`, the function's entry
        /// `entry`, its calls in counter slot `slot`: its address.
        fn trampoline(&self, n: u64, id: u32, entry: &[u8], slot: u64) -> u64 {
            let at = self.code + ROUTINE_ROOM + 256 * n;
            let moved = entry_instructions(entry, 0x1000, JUMP_LEN).unwrap();
            let arc = ArcProbe { id, routine: self.code, table: self.table };
            let probe = Probe::Arcs { counter: self.counters + 8 * slot, arc, increment: self.how };
            let code = build(at, probe, &moved, 0x1000 + entry.len() as u64).unwrap().code;
            assert!(code.len() <= 256);
            self.arena.write(at, &code);
            at
        }

        /// `n` callers from the first caller, 6 bytes apart, of `at`,
        /// caller k called k + 1 times (or, with `times`, that many).
        fn call(&self, at: u64, n: u64, times: impl Fn(u64) -> u64) {
            // SAFETY: the callers' page is the arena's.
            unsafe { write_callers(self.caller, n as usize, at) };
            for k in 0..n {
                for _ in 0..times(k) {
                    call_keeping_registers(self.caller + 6 * k);
                }
            }
        }

        fn word(&self, at: u64) -> u64 {
            u64::from_le_bytes(self.arena.bytes(at, 8).try_into().unwrap())
        }

        /// The claimed entries with an index in `indexes`, the counts of
        /// the first level's over their copies.
        fn entries(&self, indexes: std::ops::Range<u64>) -> Vec<Entry> {
            indexes.filter_map(|i| Entry::read(i, self.processors, |at| self.word(self.table + at))).collect()
        }

        /// The (return address, id) → count pairs of the table, equal pairs
        /// added, and its header's count.
        fn pairs(&self) -> (std::collections::BTreeMap<(u64, u32), u64>, u64) {
            let mut pairs = std::collections::BTreeMap::new();
            for e in self.entries(0..ENTRIES) {
                *pairs.entry((e.ret, e.id)).or_default() += e.count;
            }
            (pairs, self.word(self.table))
        }

        /// Every entry of the table from `first` to `end` taken by another
        /// return address.
        fn fill(&self, first: u64, end: u64) {
            for n in first..end {
                self.arena.write(self.table + HEADER_BYTES + n * ENTRY_BYTES, &[0x0f; 16]);
            }
        }
    }

    /// Two callees (ids 1 and 2), each with a trampoline whose moved code
    /// is a `ret`, called from 300 sites each, site k k+1 times: every
    /// pair counted exactly, with the registers a call leaves alone kept.
    #[test]
    fn counts_each_call_site_and_callee() {
        let mut increments = vec![Increment::Unlocked, Increment::Locked];
        if per_cpu_runs_here() {
            increments.push(Increment::PerCpu { stride_log2: STRIDE_LOG2 });
        }
        for how in increments {
            let rig = Rig::new(how, COPIES as u64);
            let sites = 300u64;
            let mut expected = std::collections::BTreeMap::new();
            for id in [1u32, 2] {
                let at = rig.trampoline(u64::from(id), id, &RET, u64::from(id));
                rig.call(at, sites, |k| k + 1);
                expected.extend((0..sites).map(|k| ((rig.caller + 6 * k + 5, id), k + 1)));
            }
            assert_eq!(rig.pairs(), (expected, 0), "{how:?}: each pair of site and callee");
            let calls: u64 = (1..=sites).sum();
            if !matches!(how, Increment::PerCpu { .. }) {
                let count = |id: u64| rig.word(rig.counters + 8 * id);
                assert_eq!([count(1), count(2)], [calls, calls], "{how:?}: the calls");
            } else {
                // The first level's entries counted in the processors' copies.
                let in_place = |e: &Entry| rig.word(rig.table + HEADER_BYTES + e.index as u64 * ENTRY_BYTES + 16);
                let first_level = rig.entries(0..COPIED_ENTRIES);
                assert!(!first_level.is_empty() && first_level.iter().all(|e| in_place(e) == 0), "{how:?}");
            }
        }
    }

    /// One call site calling through a pointer into many callees: each
    /// (site, callee) pair is an arc of its own.
    #[test]
    fn one_site_of_many_callees_gives_an_arc_each() {
        let rig = Rig::new(Increment::Locked, 1);
        for id in 1..=20u32 {
            let at = rig.trampoline(u64::from(id), id, &RET, 0);
            rig.call(at, 1, |_| u64::from(id));
        }
        let expected = (1..=20u32).map(|id| ((rig.caller + 5, id), u64::from(id))).collect();
        assert_eq!(rig.pairs(), (expected, 0));
    }

    /// A pair at its home entry, or at the entry after it (its home taken
    /// by another return address), is counted by its trampoline alone: with
    /// the routine made a bare `ret` after the first call, which claimed
    /// the entry, the later calls are all counted still.
    #[test]
    fn a_pair_at_its_home_or_the_next_entry_is_counted_without_the_routine() {
        for displaced in [false, true] {
            let rig = Rig::new(Increment::Unlocked, 1);
            let at = rig.trampoline(0, 6, &RET, 0);
            let home = home(rig.caller + 5, 6);
            if displaced {
                rig.fill(home, home + 1);
            }
            rig.call(at, 1, |_| 1);
            rig.arena.write(rig.code, &[0xc3]);
            rig.call(at, 1, |_| 4);
            let claimed = rig.entries(0..ENTRIES);
            let found: Vec<(u64, u64, u32, u64)> =
                claimed.iter().map(|e| (e.index as u64, e.ret, e.id, e.count)).collect();
            let index = if displaced { home + 1 } else { home };
            assert!(found.contains(&(index, rig.caller + 5, 6, 5)), "displaced {displaced}: {found:x?}");
        }
    }

    /// A pair two entries past its home (the home and the next taken) is
    /// found by the routine at each call, and counted there.
    #[test]
    fn a_pair_further_from_its_home_is_counted_by_the_routine() {
        let rig = Rig::new(Increment::Unlocked, 1);
        let at = rig.trampoline(0, 8, &RET, 0);
        let home = home(rig.caller + 5, 8);
        rig.fill(home, home + 2);
        rig.call(at, 1, |_| 7);
        let claimed: Vec<Entry> = rig.entries(0..ENTRIES).into_iter().filter(|e| e.id == 8).collect();
        assert_eq!(claimed, [Entry { index: home as usize + 2, ret: rig.caller + 5, id: 8, count: 7 }]);
    }

    /// A pair two entries past its home, whose home is then freed (its
    /// program ended): its next call claims the home too, and the two
    /// entries' counts add up to its calls.
    #[test]
    fn a_pair_whose_search_passes_a_freed_entry_claims_it_and_counts_on() {
        let rig = Rig::new(Increment::Unlocked, 1);
        let at = rig.trampoline(0, 8, &RET, 0);
        let home = home(rig.caller + 5, 8);
        rig.fill(home, home + 2);
        rig.call(at, 1, |_| 3);
        rig.arena.write(rig.table + HEADER_BYTES + home * ENTRY_BYTES, &[0; ENTRY_BYTES as usize]);
        rig.call(at, 1, |_| 4);
        let claimed: Vec<(u64, u64)> =
            rig.entries(0..ENTRIES).iter().filter(|e| e.id == 8).map(|e| (e.index as u64, e.count)).collect();
        assert_eq!(claimed, [(home, 4), (home + 2, 3)]);
        assert_eq!(rig.pairs().0[&(rig.caller + 5, 8)], 7);
    }

    /// A function entered by a jump, with 0 where a return address would
    /// be: counted as from 1 (no call site), not searched for among the
    /// free entries (which have 0 there).
    #[test]
    fn a_zero_return_address_counts_as_one() {
        let rig = Rig::new(Increment::Unlocked, 1);
        // add rsp, 8; ret: the 0 dropped, back to the caller.
        let at = rig.trampoline(0, 4, &[0x48, 0x83, 0xc4, 0x08, 0xc3], 0);
        // call N; ret; N: push 0; jmp trampoline.
        let mut bytes = vec![0xe8, 1, 0, 0, 0, 0xc3, 0x6a, 0x00, 0xe9];
        bytes.extend(((at as i64 - (rig.caller + 13) as i64) as i32).to_le_bytes());
        rig.arena.write(rig.caller, &bytes);
        for _ in 0..2 {
            call_keeping_registers(rig.caller);
        }
        assert_eq!(rig.pairs(), ([((1, 4), 2)].into_iter().collect(), 0));
    }

    /// A table whose entries are all claimed: a new pair is counted in the
    /// header, and the calls still in their counter.
    #[test]
    fn a_full_table_counts_new_pairs_in_its_header() {
        let rig = Rig::new(Increment::Unlocked, 1);
        rig.fill(0, ENTRIES);
        let at = rig.trampoline(0, 7, &RET, 0);
        rig.call(at, 1, |_| 3);
        assert_eq!(rig.word(rig.table), 3, "the header's count");
        assert_eq!(rig.word(rig.counters), 3, "the calls");
    }

    /// The first level full: a pair's entry is claimed in the second,
    /// and found there by its later calls.
    #[test]
    fn a_pair_without_room_in_the_first_level_goes_to_the_second() {
        let rig = Rig::new(Increment::Unlocked, 1);
        let first_level = (1 << LEVELS_LOG2[0]) + PROBES;
        rig.fill(0, first_level);
        let at = rig.trampoline(0, 9, &RET, 0);
        rig.call(at, 1, |_| 5);
        let claimed = rig.entries(first_level..ENTRIES);
        assert_eq!(claimed.len(), 1, "one entry in the second level");
        assert_eq!((claimed[0].ret, claimed[0].id, claimed[0].count), (rig.caller + 5, 9, 5));
        assert_eq!(rig.word(rig.table), 0, "no call unnamed");
    }

    #[test]
    fn the_unlocked_routine_turns_locked_by_its_prefix_bytes() {
        let unlocked = routine(0x7000_0000, 0x7100_0000, Increment::Unlocked).unwrap();
        // The entry's count; the claims and the header's count are locked.
        assert_eq!(unlocked.unlocked.len(), 1);
        let mut code = unlocked.code.clone();
        for &u in &unlocked.unlocked {
            assert_eq!(code[u as usize], relocate::UNLOCKED_PREFIX);
            code[u as usize] = relocate::LOCK_PREFIX;
        }
        let locked = routine(0x7000_0000, 0x7100_0000, Increment::Locked).unwrap();
        assert_eq!(code, locked.code);
        assert!(locked.unlocked.is_empty());
    }

    #[test]
    fn an_entry_is_claimed_once_it_has_its_id() {
        assert_eq!(Entry::claimed(3, 0x4010, 2, 9), Some(Entry { index: 3, ret: 0x4010, id: 2, count: 9 }));
        assert_eq!(Entry::claimed(3, 0x4010, 0, 1), None, "its id not yet written");
        assert_eq!(Entry::claimed(3, 0, 0, 0), None, "free");
        assert_eq!(Entry::claimed(3, 0x4010, 1 << 40, 1), None, "no id of the tool's");
    }
}
