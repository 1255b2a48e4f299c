//! Trampolines: the entry instructions of a function moved elsewhere,
//! after a probe, and followed by a jump back into the function.
//!
//! The first instructions are decoded and re-encoded at the trampoline's
//! address with iced-x86's block encoder, which rewrites RIP-relative
//! operands and turns short branches into near ones, so the moved code
//! does what it did in place. A function's entry can be replaced by a
//! 5-byte `jmp rel32` only if no instruction of the function branches
//! into the bytes the jump covers (other than the entry itself) and the
//! function is at least that long; otherwise a 2-byte jump through
//! padding may serve ([`crate::detour`]), and where none does either, it
//! stays counted by its breakpoint, and [`Unpatchable`] says why.

use crate::arc_table;
use crate::mapped::SharedBytes;
use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Decoder, DecoderOptions, Encoder, FlowControl, Instruction,
    InstructionBlock, MemoryOperand, Mnemonic, OpKind, Register,
};
use std::collections::HashMap;
use std::fmt;

/// The length of the `jmp rel32` written over a function's entry.
pub const JUMP_LEN: u64 = 5;

/// Why a function's entry cannot be replaced by a jump (or its first
/// instruction cannot be moved at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpatchable {
    /// The function is shorter than the jump.
    TooShort,
    /// Its length is not known, so branches into its first bytes cannot
    /// be ruled out.
    UnknownSize,
    /// An instruction of the function at this address branches into the
    /// bytes the jump would cover.
    BranchIntoEntry(u64),
    /// Another function starts within the bytes the jump would cover.
    OverlapsNext,
    /// A breakpoint of a debugger is within the bytes the jump would cover.
    BreakpointInEntry,
    /// The entry bytes do not decode as instructions.
    Undecodable,
    /// The encoder could not place the instructions at the trampoline.
    Unencodable(String),
    /// The instruction this many bytes into the function would not do in
    /// the trampoline what it does in place, for this reason.
    NotMovable(u64, &'static str),
}

impl fmt::Display for Unpatchable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unpatchable::TooShort => write!(f, "shorter than a 5-byte jump"),
            Unpatchable::UnknownSize => write!(f, "size unknown"),
            Unpatchable::BranchIntoEntry(at) => write!(f, "branch at {at:#x} into the entry bytes"),
            Unpatchable::OverlapsNext => write!(f, "another function starts in the entry bytes"),
            Unpatchable::BreakpointInEntry => write!(f, "a debugger breakpoint in the entry bytes"),
            Unpatchable::Undecodable => write!(f, "entry instructions do not decode"),
            Unpatchable::Unencodable(why) => write!(f, "cannot relocate: {why}"),
            Unpatchable::NotMovable(offset, why) => write!(f, "cannot move the instruction at entry+{offset}: {why}"),
        }
    }
}

/// Decodes the instructions at `entry` (whose bytes are `code`) until
/// they cover at least `min_len` bytes.
pub fn entry_instructions(code: &[u8], entry: u64, min_len: u64) -> Result<Vec<Instruction>, Unpatchable> {
    let mut decoder = Decoder::with_ip(64, code, entry, DecoderOptions::NONE);
    let mut out = Vec::new();
    let mut covered = 0;
    while covered < min_len {
        if !decoder.can_decode() {
            return Err(Unpatchable::Undecodable);
        }
        let insn = decoder.decode();
        if insn.is_invalid() || insn.code() == Code::Int3 {
            return Err(Unpatchable::Undecodable);
        }
        covered += insn.len() as u64;
        out.push(insn);
    }
    Ok(out)
}

/// Whether a function shorter than its moved instructions ends at `end`
/// with a return or jump and only alignment padding (`nop`s) follows up to
/// the end of `moved`: then the jump may cover the padding, which never
/// runs (a `ret`-only function gets a trampoline so).
pub fn ends_in_padding(moved: &[Instruction], end: u64) -> bool {
    let Some(last_inside) = moved.iter().rposition(|i| i.ip() < end) else { return false };
    let leaves = matches!(
        moved[last_inside].flow_control(),
        iced_x86::FlowControl::Return
            | iced_x86::FlowControl::UnconditionalBranch
            | iced_x86::FlowControl::IndirectBranch
    );
    leaves
        && moved[last_inside].next_ip() == end
        && moved[last_inside + 1..].iter().all(|i| i.mnemonic() == iced_x86::Mnemonic::Nop)
}

/// The bytes the entry's instructions cover.
pub fn covered_len(instructions: &[Instruction]) -> u64 {
    instructions.iter().map(|i| i.len() as u64).sum()
}

/// A `call rel32`'s opcode.
pub(crate) const CALL_REL32: u8 = 0xe8;

/// The most threads [`BranchTargets::scan`] decodes with.
const MAX_SCAN_THREADS: usize = 4;

/// The direct branch and call targets of a module's code, with where
/// each branch is: a jump may replace a function's first bytes only if
/// nothing branches into them (an entry shared by several functions, as
/// the C library's string functions have, is such a branch). The direct
/// calls are kept apart too, (target, return address) each: the calls a
/// function that keeps its breakpoint can be counted at instead.
#[derive(Debug, Clone, Default)]
pub struct BranchTargets {
    targets: Pairs,
    calls: Pairs,
}

impl BranchTargets {
    /// The lists (targets, calls), to keep on disk.
    pub(crate) fn lists(&self) -> [&Pairs; 2] {
        [&self.targets, &self.calls]
    }

    /// The lists that [`BranchTargets::lists`] gave, read back.
    pub(crate) fn from_lists([targets, calls]: [Pairs; 2]) -> BranchTargets {
        BranchTargets { targets, calls }
    }

    /// Decodes each function (address, size) whose bytes lie in one of
    /// `sections` (address, bytes) and notes its direct branch targets.
    /// The functions are shared among the processors (the traced program
    /// waits meanwhile; a compiler's tens of megabytes of code took a
    /// third of the tool's time on one).
    pub fn scan(sections: &[(u64, &[u8])], functions: impl Iterator<Item = (u64, u64)>) -> BranchTargets {
        let functions: Vec<(u64, u64)> = functions.collect();
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_SCAN_THREADS);
        let share = functions.len().div_ceil(workers).max(1);
        let parts: Vec<[Vec<(u64, u64)>; 2]> = std::thread::scope(|scope| {
            let running: Vec<_> =
                functions.chunks(share).map(|part| scope.spawn(move || Self::scan_part(sections, part))).collect();
            running.into_iter().map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        let (mut targets, mut calls) = (Vec::new(), Vec::new());
        for [part_targets, part_calls] in parts {
            targets.extend(part_targets);
            calls.extend(part_calls);
        }
        // Sorted runs, one per part: the stable sort merges them.
        targets.sort();
        targets.dedup_by_key(|t| t.0);
        calls.sort();
        let base = sections.iter().map(|s| s.0).min().unwrap_or(0);
        BranchTargets { targets: Pairs::new(base, &targets), calls: Pairs::new(base, &calls) }
    }

    /// [`BranchTargets::scan`] of a part of the functions: the targets
    /// and the calls, each sorted.
    fn scan_part(sections: &[(u64, &[u8])], functions: &[(u64, u64)]) -> [Vec<(u64, u64)>; 2] {
        let (mut targets, mut calls) = (Vec::new(), Vec::new());
        let mut insn = Instruction::default();
        for &(address, size) in functions {
            let Some((base, bytes)) =
                sections.iter().find(|(a, b)| (*a..a.saturating_add(b.len() as u64)).contains(&address))
            else {
                continue;
            };
            let start = (address - base) as usize;
            let end = start.saturating_add(size as usize).min(bytes.len());
            let mut decoder = Decoder::with_ip(64, &bytes[start..end], address, DecoderOptions::NONE);
            while decoder.can_decode() {
                decoder.decode_out(&mut insn);
                if insn.op0_kind() == OpKind::NearBranch64 {
                    targets.push((insn.near_branch64(), insn.ip()));
                    if insn.mnemonic() == Mnemonic::Call {
                        calls.push((insn.near_branch64(), insn.next_ip()));
                    }
                }
            }
        }
        targets.sort_unstable();
        calls.sort_unstable();
        [targets, calls]
    }

    /// Where a branch into (`low`, `high`) is, if any.
    pub fn into_range(&self, low: u64, high: u64) -> Option<u64> {
        let first = self.targets.partition_point(|t| t.0 <= low);
        self.targets.get(first).filter(|t| t.0 < high).map(|t| t.1)
    }

    /// The return addresses of the direct calls to `target`, in order.
    pub fn calls_to(&self, target: u64) -> impl Iterator<Item = u64> + '_ {
        let first = self.calls.partition_point(|p| p.0 < target);
        (first..self.calls.len()).map_while(move |i| self.calls.get(i).filter(|p| p.0 == target).map(|p| p.1))
    }
}

/// The bytes of a pair in [`Pairs`].
pub(crate) const PAIR_BYTES: usize = 8;

/// Pairs of addresses in a module's code, sorted, each kept as two
/// little-endian 32-bit offsets from `base`: searched where they lie in a
/// module cache entry (a compiler's 840,000 pairs, decoded into 16-byte
/// tuples, were 14 MB of fresh memory at each of its start-ups).
#[derive(Debug, Clone, Default)]
pub struct Pairs {
    base: u64,
    bytes: SharedBytes,
}

impl Pairs {
    /// `list` (sorted), less the pairs that lie outside the 4 GiB from
    /// `base`: a module's code spans less (its direct branches reach 2
    /// GiB), and no question is asked of an address outside it.
    pub(crate) fn new(base: u64, list: &[(u64, u64)]) -> Pairs {
        let offset = |a: u64| u32::try_from(a.checked_sub(base)?).ok();
        let mut bytes = Vec::with_capacity(list.len() * PAIR_BYTES);
        for &(a, b) in list {
            let (Some(a), Some(b)) = (offset(a), offset(b)) else { continue };
            bytes.extend_from_slice(&a.to_le_bytes());
            bytes.extend_from_slice(&b.to_le_bytes());
        }
        Pairs { base, bytes: SharedBytes::from(bytes) }
    }

    /// The pairs that [`Pairs::base`] and [`Pairs::bytes`] gave, read
    /// back; None where the bytes are not whole pairs.
    pub(crate) fn from_bytes(base: u64, bytes: SharedBytes) -> Option<Pairs> {
        bytes.len().is_multiple_of(PAIR_BYTES).then_some(Pairs { base, bytes })
    }

    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len() / PAIR_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The pair at `index`.
    pub fn get(&self, index: usize) -> Option<(u64, u64)> {
        let at = index.checked_mul(PAIR_BYTES)?;
        let pair: [u8; PAIR_BYTES] = self.bytes.get(at..at + PAIR_BYTES)?.try_into().ok()?;
        let offset = |half: &[u8]| self.base.wrapping_add(u32::from_le_bytes(half.try_into().expect("4 bytes")) as u64);
        Some((offset(&pair[..4]), offset(&pair[4..])))
    }

    /// The index of the first pair for which `before` is false (the pairs
    /// for which it is true come first).
    fn partition_point(&self, before: impl Fn((u64, u64)) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            if self.get(middle).is_some_and(&before) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// Checks that a jump may replace the first `prefix_len` bytes of the
/// function at `entry` of `size` bytes (the instructions the jump splits,
/// so at least the jump's length): `next` is where the next known
/// function starts, `targets` the module's branch targets (all addresses
/// in the module file's own terms).
pub fn check_patchable(
    entry: u64,
    size: u64,
    prefix_len: u64,
    next: Option<u64>,
    targets: &BranchTargets,
) -> Result<(), Unpatchable> {
    if size == 0 {
        return Err(Unpatchable::UnknownSize);
    }
    if size < prefix_len {
        return Err(Unpatchable::TooShort);
    }
    let end = entry.saturating_add(prefix_len);
    if next.is_some_and(|n| n < end) {
        return Err(Unpatchable::OverlapsNext);
    }
    match targets.into_range(entry, end) {
        Some(from) => Err(Unpatchable::BranchIntoEntry(from)),
        None => Ok(()),
    }
}

/// What a trampoline does before the moved instructions.
#[derive(Debug, Clone, Copy)]
pub enum Probe {
    /// Nothing: the trampoline only runs the moved instructions (used to
    /// resume after a breakpoint that stays in place).
    None,
    /// One increment of the function's counter (see [`Increment`]). It
    /// changes the arithmetic flags, which no function expects to keep
    /// across a call.
    Count { counter: u64, increment: Increment },
    /// The call count, then the call arc's (see [`ArcProbe`]).
    Arcs { counter: u64, arc: ArcProbe, increment: Increment },
}

/// How an arc trampoline counts the call's arc, the (return address, id)
/// pair, in the table of call arcs (see [`crate::arc_table`]): at the
/// pair's home entry, which the trampoline hashes the pair to, or the entry
/// after it, if the return address and the id there are the pair's; else
/// through the arc routine, which searches on and claims. RAX and RCX are
/// saved below the return address (at a function's entry that memory is
/// free).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArcProbe {
    /// The callee's arc id.
    pub id: u32,
    /// The arc routine of the trampoline's region.
    pub routine: u64,
    /// The table of call arcs, as the trampoline's region maps it.
    pub table: u64,
}

/// How a trampoline increments a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Increment {
    /// `ds inc qword [counter]`: while one thread runs the code. The tool
    /// turns the `ds` prefix into `lock` in place the moment a second
    /// thread or process could run it (an unlocked increment costs a third
    /// of a locked one).
    Unlocked,
    /// `lock inc qword [counter]`.
    Locked,
    /// `lock inc` of the running processor's copy of the counter, the
    /// copies `1 << stride_log2` bytes apart, processor N's the (N+1)th
    /// (the first is the one the other increments reach): threads on different
    /// processors do not fight for one cache line (a contended `lock inc`
    /// costs three times an uncontended one), and the lock keeps the count
    /// exact when a thread moves to another processor between reading the
    /// processor number and the increment. The processor number is
    /// `rdpid`'s (Linux keeps it in TSC_AUX, with the NUMA node above bit
    /// 12); R11, which no call passes anything in, holds the copy's offset,
    /// RAX (saved) the counter's address.
    PerCpu { stride_log2: u32 },
}

/// The byte before an unlocked increment (`ds`), and what makes it locked.
pub const UNLOCKED_PREFIX: u8 = 0x3e;
pub const LOCK_PREFIX: u8 = 0xf0;

/// An encoded trampoline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trampoline {
    pub code: Vec<u8>,
    /// The offsets of the unlocked increments' [`UNLOCKED_PREFIX`] bytes.
    pub unlocked: Vec<u64>,
    /// The offset of the moved instructions, past the counting (0 in code
    /// that moves none).
    pub moved: u64,
}

/// Branch targets inside a trampoline are labels: instruction addresses
/// in the kernel half of the address space, which no moved instruction
/// has and the block encoder resolves to the instructions carrying them.
pub(crate) const LABEL: u64 = 0xffff_8000_0000_0000;

/// The labels of the moved instructions, the Nth at `MOVED_LABEL + N`
/// (the probe's are below).
const MOVED_LABEL: u64 = LABEL + 0x1_0000;

/// The labels of a routine's constants, the Nth at `CONSTANT_LABEL + N`
/// (see [`encode_with_constants`]).
pub(crate) const CONSTANT_LABEL: u64 = LABEL + 0x2_0000;
/// The labels of the instructions after the first of an emulated call
/// (see `emulated_call`), which moves last, so only one is ever emulated.
const EMULATION_LABEL: u64 = LABEL + 0x3_0000;

/// The `moved` instructions as the trampoline carries them, or why one of
/// them cannot be moved. The block encoder redirects every operand that
/// points at an instruction of the block to that instruction's new place:
/// right for a branch among the moved instructions (whose bytes in place
/// are the jump now), wrong for an address computed or read (a function
/// that loads its own address must get the original, not the copy's). So
/// each instruction carries a label instead of its address, and only the
/// branches among them are turned to labels.
fn relabel(moved: &[Instruction]) -> Result<Vec<Instruction>, Unpatchable> {
    let (Some(first), Some(last)) = (moved.first(), moved.last()) else { return Ok(Vec::new()) };
    let span = first.ip()..last.next_ip();
    let label_of = |addr: u64| moved.iter().position(|i| i.ip() == addr).map(|n| MOVED_LABEL + n as u64);
    let mut out = Vec::with_capacity(moved.len());
    for (n, insn) in moved.iter().enumerate() {
        let mut copy = *insn;
        copy.set_ip(MOVED_LABEL + n as u64);
        if matches!(insn.flow_control(), FlowControl::Call | FlowControl::IndirectCall) {
            // The first of them takes the call's label; the others are
            // only ever reached from it.
            let mut emulation = emulated_call(insn, &span)?;
            for (k, part) in emulation.iter_mut().enumerate() {
                part.set_ip(if k == 0 { MOVED_LABEL + n as u64 } else { EMULATION_LABEL + k as u64 });
            }
            out.extend(emulation);
            continue;
        }
        match movable(insn, &span)? {
            Some(target) if span.contains(&target) => {
                let why = "it branches into the middle of a moved instruction";
                let label = label_of(target).ok_or(Unpatchable::NotMovable(insn.ip() - span.start, why))?;
                copy.set_near_branch64(label);
            }
            _ => {}
        }
        out.push(copy);
    }
    Ok(out)
}

/// Checks that instructions moved from a function's entry do in a
/// trampoline what they do in place (see `movable` and `emulated_call`).
pub fn check_movable(moved: &[Instruction]) -> Result<(), Unpatchable> {
    relabel(moved).map(drop)
}

/// A call moved from the entry bytes `span`, in the trampoline: its
/// return address (the instruction after it, in the function) put on the
/// stack without a change to any register but RSP or to the flags, then a
/// jump where the call goes. The callee returns into the function itself,
/// so that an unwinder finds the caller it expects (a call made in the
/// trampoline would leave the trampoline's address on the stack, which no
/// unwinder knows: a C++ exception thrown below it would end the program).
/// Only the last moved instruction may be a call (the function's code
/// goes on where it returns), and not one that reads the stack pointer,
/// which has moved by then.
fn emulated_call(insn: &Instruction, span: &std::ops::Range<u64>) -> Result<[Instruction; 4], Unpatchable> {
    let refuse = |why| Err(Unpatchable::NotMovable(insn.ip() - span.start, why));
    if insn.next_ip() != span.end {
        return refuse("its return address would be in the trampoline, unknown to unwinders");
    }
    let reads_rsp = (0..insn.op_count()).any(|i| match insn.op_kind(i) {
        OpKind::Register => insn.op_register(i).full_register() == Register::RSP,
        OpKind::Memory => insn.memory_base() == Register::RSP || insn.memory_index() == Register::RSP,
        _ => false,
    });
    if reads_rsp {
        return refuse("a call through the stack pointer, which the pushed return address moves");
    }
    let jump = match insn.code() {
        Code::Call_rel32_64 => {
            Instruction::with_branch(Code::Jmp_rel32_64, insn.near_branch64()).map_err(unencodable)?
        }
        Code::Call_rm64 => {
            let mut jump = *insn;
            jump.set_code(Code::Jmp_rm64);
            jump
        }
        _ => return refuse("a far or 16- or 32-bit call"),
    };
    let ret = insn.next_ip();
    let slot = |offset: i64| MemoryOperand::with_base_displ(Register::RSP, offset);
    Ok([
        Instruction::with2(Code::Lea_r64_m, Register::RSP, slot(-8)).map_err(unencodable)?,
        Instruction::with2(Code::Mov_rm32_imm32, slot(0), ret as u32).map_err(unencodable)?,
        Instruction::with2(Code::Mov_rm32_imm32, slot(4), (ret >> 32) as u32).map_err(unencodable)?,
        jump,
    ])
}

/// Checks that `insn`, one of the instructions moved from the bytes
/// `span`, does in the trampoline what it does in place; its near branch
/// target, if it has one. Refused: what reads its own address other than
/// through a RIP-relative operand (a call is `emulated_call`'s), what
/// faults on purpose (a handler
/// would see the trampoline's address), and an access to the moved bytes
/// (the jump is there now).
fn movable(insn: &Instruction, span: &std::ops::Range<u64>) -> Result<Option<u64>, Unpatchable> {
    let refuse = |why| Err(Unpatchable::NotMovable(insn.ip() - span.start, why));
    match insn.flow_control() {
        FlowControl::Interrupt | FlowControl::Exception => return refuse("it traps or faults"),
        FlowControl::XbeginXabortXend => return refuse("a transaction resumes at an address of its own"),
        _ => {}
    }
    if matches!(insn.mnemonic(), Mnemonic::Syscall | Mnemonic::Sysenter) {
        return refuse("the system call saves its address");
    }
    if insn.is_ip_rel_memory_operand() && insn.mnemonic() != Mnemonic::Lea {
        let at = insn.ip_rel_memory_address();
        let size = insn.memory_size().size().max(1) as u64;
        if at < span.end && at.wrapping_add(size) > span.start {
            return refuse("it accesses the bytes it is moved from");
        }
    }
    let branch = (0..insn.op_count()).any(|i| insn.op_kind(i) == OpKind::NearBranch64);
    if !branch {
        return Ok(None);
    }
    Ok(Some(insn.near_branch64()))
}

/// The instructions that increment `counter` as `how` says.
fn increment(counter: u64, how: Increment) -> Result<Vec<Instruction>, Unpatchable> {
    increment_at(Register::RIP, counter as i64, how)
}

/// An increment's code as a template: its bytes for a counter at
/// [`TEMPLATE_COUNTER`] encoded at 0, with the place of its one
/// RIP-relative displacement, which reaches the counter (or, with
/// per-processor counters, the copy `past` it).
#[derive(Debug, Clone)]
struct IncrementTemplate {
    code: Vec<u8>,
    /// The offsets of the displacement and of the end of its instruction.
    displacement: usize,
    end: usize,
    /// How far past the counter the displacement reaches.
    past: u64,
    /// The offset of the unlocked increment's prefix, if it is one.
    unlocked: Option<u64>,
}

/// Where a template's counter is (any address a `rel32` reaches from 0).
const TEMPLATE_COUNTER: u64 = 0x1000_0000;

thread_local! {
    /// The templates made so far, one per form of increment (a run has
    /// two or three): encoded once each, where the encoder took a tenth of
    /// instrumenting a compiler's tens of thousands of functions, nine
    /// instructions a trampoline under per-processor counters.
    static TEMPLATES: std::cell::RefCell<Vec<(Increment, IncrementTemplate)>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl IncrementTemplate {
    fn encode(how: Increment) -> Result<IncrementTemplate, Unpatchable> {
        let list = increment(TEMPLATE_COUNTER, how)?;
        let mut encoder = Encoder::new(64);
        let (mut offset, mut field) = (0, None);
        for insn in &list {
            let len = encoder.encode(insn, offset as u64).map_err(unencodable)?;
            if insn.is_ip_rel_memory_operand() {
                let past = insn.memory_displacement64().wrapping_sub(TEMPLATE_COUNTER);
                field = Some((offset + encoder.get_constant_offsets().displacement_offset(), offset + len, past));
            }
            offset += len;
        }
        let (displacement, end, past) =
            field.ok_or_else(|| Unpatchable::Unencodable("an increment without its counter".into()))?;
        let unlocked = (how == Increment::Unlocked).then_some(0);
        Ok(IncrementTemplate { code: encoder.take_buffer(), displacement, end, past, unlocked })
    }

    /// The code of the increment of `counter` as `how` says, encoded at
    /// `at`, and the offset of its unlocked prefix, if it is one.
    fn place(counter: u64, how: Increment, at: u64) -> Result<(Vec<u8>, Option<u64>), Unpatchable> {
        let template = TEMPLATES.with(|t| t.borrow().iter().find(|(form, _)| *form == how).map(|(_, t)| t.clone()));
        let template = match template {
            Some(template) => template,
            None => {
                let template = IncrementTemplate::encode(how)?;
                TEMPLATES.with(|t| t.borrow_mut().push((how, template.clone())));
                template
            }
        };
        let target = counter.wrapping_add(template.past);
        let relative = i32::try_from(target.wrapping_sub(at + template.end as u64) as i64)
            .map_err(|_| Unpatchable::Unencodable("the counter out of reach".into()))?;
        let mut code = template.code;
        code[template.displacement..template.displacement + 4].copy_from_slice(&relative.to_le_bytes());
        Ok((code, template.unlocked))
    }
}

/// The instructions that increment the counter at `base + displacement`
/// (`base` RIP, or a register that is neither RAX nor R11) as `how` says.
pub(crate) fn increment_at(base: Register, displacement: i64, how: Increment) -> Result<Vec<Instruction>, Unpatchable> {
    let at_counter = MemoryOperand::with_base_displ(base, displacement);
    let stride = match how {
        Increment::PerCpu { stride_log2 } => 1i64 << stride_log2,
        _ => 0,
    };
    let mut inc = match how {
        Increment::Unlocked | Increment::Locked => Instruction::with1(Code::Inc_rm64, at_counter),
        Increment::PerCpu { .. } => {
            Instruction::with1(Code::Inc_rm64, MemoryOperand::with_base_index_scale(Register::RAX, Register::R11, 1))
        }
    }
    .map_err(unencodable)?;
    match how {
        Increment::Unlocked => inc.set_segment_prefix(Register::DS),
        Increment::Locked | Increment::PerCpu { .. } => inc.set_has_lock_prefix(true),
    }
    let Increment::PerCpu { stride_log2 } = how else { return Ok(vec![inc]) };
    Ok(vec![
        Instruction::with1(Code::Push_r64, Register::RAX).map_err(unencodable)?,
        Instruction::with1(Code::Push_r64, Register::R11).map_err(unencodable)?,
        Instruction::with1(Code::Rdpid_r64, Register::R11).map_err(unencodable)?,
        Instruction::with2(Code::And_rm32_imm32, Register::R11D, 0xfff).map_err(unencodable)?,
        Instruction::with2(Code::Shl_rm64_imm8, Register::R11, stride_log2).map_err(unencodable)?,
        Instruction::with2(Code::Lea_r64_m, Register::RAX, MemoryOperand::with_base_displ(base, displacement + stride))
            .map_err(unencodable)?,
        inc,
        Instruction::with1(Code::Pop_r64, Register::R11).map_err(unencodable)?,
        Instruction::with1(Code::Pop_r64, Register::RAX).map_err(unencodable)?,
    ])
}

pub(crate) fn unencodable(e: iced_x86::IcedError) -> Unpatchable {
    Unpatchable::Unencodable(e.to_string())
}

/// The arc part of an arc trampoline (see [`ArcProbe`]), its increment as
/// `how` says, encoded by hand (a compiler's 65,000 trampolines each have
/// one, which the encoder took a tenth of their build to encode): a head
/// at `at`, which the moved instructions follow, and a tail at `tail_at`,
/// after the jump back. The home entry is the first-level one that the
/// high bits of the pair's key times the multiplier pick, as in the
/// routine; the entry after it is looked at too, where the search puts a
/// pair whose home another pair took first (sqlite3 called the routine at
/// 6 % of its calls while only the home was looked at, at 0.4 % so). A
/// call that finds its pair at home runs the head straight into the moved
/// instructions, without a taken branch: the tail holds the rest (with the
/// home's hit two jumps away, a call cost 1.2 ns where a bare count cost
/// 0.9 ns, and 0.9 ns so). Under per-processor counters, the count is the
/// running processor's copy's (`rdpid`, as the routine counts; a home or
/// next entry is a first-level one, which has copies): before, every call
/// went through the routine there, and `xz -T2` under `arcs` took twice
/// `fcount`'s time.
///
/// ```text
/// head:
///   0 push rax; push rcx
///   2 mov rax, id << 40; xor rax, [rsp+16]
///  17 mov rcx, MULTIPLIER; imul rax, rcx; shr rax, FIRST_LEVEL_SHIFT
///  35 lea rax, [rax+rax*2]; lea rcx, [rip+first level]; lea rax, [rcx+rax*8]
///  50 mov rcx, [rsp+16]; cmp rcx, [rax]; jne next
///  64 cmp qword [rax+8], id; jne next
///  78 count: ds/lock inc qword [rax+16]; pop rcx; pop rax
///  85 (the moved instructions, the jump back)
///     or, per processor,
///  78 count: rdpid rcx; and ecx, 0xfff; shl rcx, COPY_STRIDE_LOG2
///  92 lock inc qword [rax+rcx+copy's count - entry]; pop rcx; pop rax
/// 103 (the moved instructions, the jump back)
/// tail:
///   0 next: cmp rcx, [rax+24]; jne slow
///   6 cmp qword [rax+32], id; jne slow
///  16 add rax, 24; jmp count
///  25 slow: pop rcx; mov eax, id; call routine; pop rax; jmp moved
///  42
/// ```
fn arc_probe(arc: ArcProbe, how: Increment, at: u64, tail_at: u64) -> Result<ArcCode, Unpatchable> {
    let relative = |to: u64, from: u64| {
        i32::try_from(to.wrapping_sub(from) as i64)
            .map(i32::to_le_bytes)
            .map_err(|_| Unpatchable::Unencodable("the table of call arcs or the routine out of reach".into()))
    };
    if arc.id > i32::MAX as u32 {
        return Err(Unpatchable::Unencodable("an arc id past 2^31".into()));
    }
    let id = arc.id.to_le_bytes();
    let per_cpu = matches!(how, Increment::PerCpu { .. });
    let (count, moved) = (at + ARC_HEAD_COUNT, at + arc_head_bytes(how));
    // The templates' fields filled in place: a compiler's tens of thousands
    // of trampolines each built their head from two dozen pieces.
    let mut head = ARC_HEAD.to_vec();
    head[4..12].copy_from_slice(&arc_table::key(0, arc.id).to_le_bytes());
    head[19..27].copy_from_slice(&arc_table::MULTIPLIER.to_le_bytes());
    head[34] = u8::try_from(arc_table::FIRST_LEVEL_SHIFT).expect("a shift below 64");
    head[42..46].copy_from_slice(&relative(arc.table + arc_table::FIRST_LEVEL_AT, at + 46)?);
    head[60..64].copy_from_slice(&relative(tail_at, at + 64)?);
    head[68..72].copy_from_slice(&id);
    head[74..78].copy_from_slice(&relative(tail_at, at + 78)?);
    head[78] = if how == Increment::Unlocked { UNLOCKED_PREFIX } else { LOCK_PREFIX };
    if per_cpu {
        let mut in_copy = PER_CPU_COUNT;
        in_copy[13] = u8::try_from(arc_table::COPY_STRIDE_LOG2).expect("a shift below 64");
        let from_entry = i32::try_from(arc_table::copied_count_at(0, 0) - arc_table::FIRST_LEVEL_AT)
            .expect("the copies within 2 GiB of the table");
        in_copy[19..23].copy_from_slice(&from_entry.to_le_bytes());
        head.truncate(ARC_HEAD_COUNT as usize);
        head.extend(in_copy);
    }
    let mut tail = ARC_TAIL;
    tail[10..14].copy_from_slice(&id);
    tail[21..25].copy_from_slice(&relative(count, tail_at + 25)?);
    tail[27..31].copy_from_slice(&id);
    tail[32..36].copy_from_slice(&relative(arc.routine, tail_at + 36)?);
    tail[38..42].copy_from_slice(&relative(moved, tail_at + 42)?);
    let unlocked = (how == Increment::Unlocked).then_some(ARC_HEAD_COUNT);
    Ok(ArcCode { head, tail: tail.to_vec(), unlocked })
}

/// The bytes of an arc trampoline's head (see [`arc_probe`]) whose
/// increments are as `how` says.
fn arc_head_bytes(how: Increment) -> u64 {
    match how {
        Increment::PerCpu { .. } => ARC_HEAD_COUNT + PER_CPU_COUNT.len() as u64,
        _ => ARC_HEAD_BYTES,
    }
}

/// The count of an arc head (see [`arc_probe`]) under per-processor
/// counters, its fields zero: the copies' stride (13), the copy's count
/// from the entry (19).
#[rustfmt::skip]
const PER_CPU_COUNT: [u8; 25] = [
    0xf3, 0x0f, 0xc7, 0xf9,                         // count: rdpid rcx
    0x81, 0xe1, 0xff, 0x0f, 0x00, 0x00,             // and ecx, 0xfff
    0x48, 0xc1, 0xe1, 0,                            // shl rcx, COPY_STRIDE_LOG2
    0xf0, 0x48, 0xff, 0x84, 0x08, 0, 0, 0, 0,       // lock inc qword [rax+rcx+copy's count]
    0x59, 0x58,                                     // pop rcx; pop rax
];

/// The arc head's bytes (see [`arc_probe`]), its fields zero: the key
/// (4), the multiplier (19), the shift (34), the first level (42), the
/// tail (60, 74), the id (68), the increment's prefix (78).
#[rustfmt::skip]
const ARC_HEAD: [u8; ARC_HEAD_BYTES as usize] = [
    0x50, 0x51,                                     // push rax; push rcx
    0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,             // mov rax, key
    0x48, 0x33, 0x44, 0x24, 0x10,                   // xor rax, [rsp+16]
    0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0,             // mov rcx, MULTIPLIER
    0x48, 0x0f, 0xaf, 0xc1,                         // imul rax, rcx
    0x48, 0xc1, 0xe8, 0,                            // shr rax, FIRST_LEVEL_SHIFT
    0x48, 0x8d, 0x04, 0x40,                         // lea rax, [rax+rax*2]
    0x48, 0x8d, 0x0d, 0, 0, 0, 0,                   // lea rcx, [rip+first level]
    0x48, 0x8d, 0x04, 0xc1,                         // lea rax, [rcx+rax*8]
    0x48, 0x8b, 0x4c, 0x24, 0x10,                   // mov rcx, [rsp+16]
    0x48, 0x3b, 0x08,                               // cmp rcx, [rax]
    0x0f, 0x85, 0, 0, 0, 0,                         // jne next
    0x48, 0x81, 0x78, 0x08, 0, 0, 0, 0,             // cmp qword [rax+8], id
    0x0f, 0x85, 0, 0, 0, 0,                         // jne next
    0, 0x48, 0xff, 0x40, 0x10,                      // count: ds/lock inc qword [rax+16]
    0x59, 0x58,                                     // pop rcx; pop rax
];

/// The arc tail's bytes (see [`arc_probe`]), its fields zero: the id (10,
/// 27), the head's count (21), the routine (32), the moved instructions
/// (38).
#[rustfmt::skip]
const ARC_TAIL: [u8; 42] = [
    0x48, 0x3b, 0x48, 0x18, 0x75, 19,               // next: cmp rcx, [rax+24]; jne slow
    0x48, 0x81, 0x78, 0x20, 0, 0, 0, 0, 0x75, 9,    // cmp qword [rax+32], id; jne slow
    0x48, 0x83, 0xc0, 0x18, 0xe9, 0, 0, 0, 0,       // add rax, 24; jmp count
    0x59, 0xb8, 0, 0, 0, 0,                         // slow: pop rcx; mov eax, id
    0xe8, 0, 0, 0, 0,                               // call routine
    0x58, 0xe9, 0, 0, 0, 0,                         // pop rax; jmp moved
];

/// The bytes of an arc trampoline's head (see [`arc_probe`]), and the
/// offset of its increment in it.
const ARC_HEAD_BYTES: u64 = 85;
const ARC_HEAD_COUNT: u64 = 78;

/// The arc part of an arc trampoline: the head before the moved
/// instructions, the tail after the jump back, and the offset of the
/// head's unlocked increment's prefix, if it has one.
struct ArcCode {
    head: Vec<u8>,
    tail: Vec<u8>,
    unlocked: Option<u64>,
}

/// Encodes a trampoline at address `at`: the probe, the `moved`
/// instructions (decoded at their original addresses) and a jump to
/// `resume`.
pub fn build(at: u64, probe: Probe, moved: &[Instruction], resume: u64) -> Result<Trampoline, Unpatchable> {
    let (count, arc) = match probe {
        Probe::None => (None, None),
        Probe::Count { counter, increment: how } => (Some((counter, how)), None),
        Probe::Arcs { counter, arc, increment: how } => (Some((counter, how)), Some((arc, how))),
    };
    let (mut code, mut unlocked) = (Vec::new(), Vec::new());
    if let Some((counter, how)) = count {
        let (increment, prefix) = IncrementTemplate::place(counter, how, at)?;
        code = increment;
        unlocked.extend(prefix);
    }
    // The arc head's length is known before the moved instructions are
    // encoded after it, and where they end, the tail goes.
    let arc_at = code.len() as u64;
    let head_bytes = arc.map_or(0, |(_, how)| arc_head_bytes(how));
    let back = relabel(moved)?;
    let back_at = at + arc_at + head_bytes;
    let back = match encode_straight(&back, back_at, resume) {
        Some(back) => back,
        None => block_encode(&back, back_at, resume)?,
    };
    let mut tail = Vec::new();
    if let Some((arc, how)) = arc {
        let arc_code = arc_probe(arc, how, at + arc_at, back_at + back.len() as u64)?;
        code.extend(arc_code.head);
        tail = arc_code.tail;
        unlocked.extend(arc_code.unlocked.map(|u| arc_at + u));
    }
    code.extend(back);
    code.extend(tail);
    Ok(Trampoline { code, unlocked, moved: arc_at + head_bytes })
}

/// `list` encoded at `at` and followed, 8-byte aligned, by `constants`,
/// the Nth of which its operands reach at `CONSTANT_LABEL + N`: code that
/// is no trampoline (it moves no instructions), such as the arc routine.
pub(crate) fn encode_with_constants(
    list: &[Instruction],
    constants: &[u64],
    at: u64,
) -> Result<Trampoline, Unpatchable> {
    let probe = ProbeCode::encode(list, at)?;
    let constants_at = probe.end().next_multiple_of(8);
    let unlocked = probe.unlocked(list);
    let mut code = probe.finish(|label| {
        let n = label.checked_sub(CONSTANT_LABEL).filter(|&n| n < constants.len() as u64)?;
        Some(constants_at + 8 * n)
    })?;
    code.resize((constants_at - at) as usize, INT3);
    code.extend(constants.iter().flat_map(|c| c.to_le_bytes()));
    Ok(Trampoline { code, unlocked, moved: 0 })
}

/// Where a call of a PLT entry goes, at a call site that counts its own
/// calls (see [`through_plt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PltCall {
    /// The GOT slot the entry jumps through.
    pub got: u64,
    /// The patched function entry the slot held when the site was given
    /// its trampoline.
    pub entry: u64,
    /// Where that function's trampoline has its moved instructions, past
    /// its counting.
    pub moved: u64,
}

/// The trampoline, at `at`, of a call site that calls a PLT entry as
/// `plt` says: it counts the call in `counters[0]` (the arc to the PLT
/// entry, and the entry's calls) and, while the GOT slot still holds the
/// function's entry, in `counters[1]` (the arc to the function, and its
/// calls), then runs the function from its moved instructions, past its
/// own trampoline's counting; else it jumps through the slot, as the PLT
/// entry would, whatever the program put there. A call through a PLT
/// entry otherwise took two trampolines, the second with the arc head's
/// hash and look-up: 3 million of `sqlite3`'s 10 million calls (a shared
/// library calls its own exported functions so).
pub fn through_plt(at: u64, plt: PltCall, counters: [u64; 2], how: Increment) -> Result<Trampoline, Unpatchable> {
    let op = |r: Result<Instruction, iced_x86::IcedError>| r.map_err(unencodable);
    let slot = MemoryOperand::with_base_displ(Register::RIP, plt.got as i64);
    let through_slot = LABEL;
    let mut list = increment(counters[0], how)?;
    // The flags are free at a function's entry; `pop` keeps them.
    list.extend([
        op(Instruction::with1(Code::Push_r64, Register::RAX))?,
        op(Instruction::with2(Code::Mov_r64_imm64, Register::RAX, plt.entry))?,
        op(Instruction::with2(Code::Cmp_rm64_r64, slot, Register::RAX))?,
        op(Instruction::with1(Code::Pop_r64, Register::RAX))?,
        op(Instruction::with_branch(Code::Jne_rel32_64, through_slot))?,
    ]);
    list.extend(increment(counters[1], how)?);
    let mut jump = op(Instruction::with1(Code::Jmp_rm64, slot))?;
    jump.set_ip(through_slot);
    // To the function's moved instructions directly where a `rel32`
    // reaches them, else through a constant (a library's trampolines lie
    // near it, more than 2 GiB from a program's own code).
    let direct = [op(Instruction::with_branch(Code::Jmp_rel32_64, plt.moved))?, jump];
    let far = MemoryOperand::with_base_displ(Register::RIP, CONSTANT_LABEL as i64);
    let through_constant = [op(Instruction::with1(Code::Jmp_rm64, far))?, jump];
    encode_with_constants(&[&list[..], &direct].concat(), &[], at)
        .or_else(|_| encode_with_constants(&[&list[..], &through_constant].concat(), &[plt.moved], at))
}

/// The relabelled moved instructions `back` and a jump to `resume`,
/// encoded from `at` by the block encoder, which resolves the branches
/// among them and picks each branch's shortest form.
fn block_encode(back: &[Instruction], at: u64, resume: u64) -> Result<Vec<u8>, Unpatchable> {
    let mut block = back.to_vec();
    block.push(Instruction::with_branch(Code::Jmp_rel32_64, resume).map_err(unencodable)?);
    let block = InstructionBlock::new(&block, at);
    Ok(BlockEncoder::encode(64, block, BlockEncoderOptions::NONE).map_err(unencodable)?.code_buffer)
}

/// What [`block_encode`] makes of `back`, `at` and `resume`, where that
/// is each instruction encoded at its place in turn and a `jmp rel32`:
/// no instruction branches (the block encoder resolves those and sizes
/// them in passes), every RIP-relative operand reaches its target from
/// the copy, and the jump back is too far for a `jmp rel8`. None where
/// any of that fails. Most entries (`push`, `mov`, `sub` of the stack
/// pointer, `endbr64`, a load of a global) are so, and the block encoder,
/// for all the objects and passes it makes, took a tenth of the tool's
/// time to instrument a compiler's tens of thousands of functions.
fn encode_straight(back: &[Instruction], at: u64, resume: u64) -> Option<Vec<u8>> {
    let branches = |insn: &Instruction| {
        (0..insn.op_count()).any(|i| {
            matches!(
                insn.op_kind(i),
                OpKind::NearBranch16
                    | OpKind::NearBranch32
                    | OpKind::NearBranch64
                    | OpKind::FarBranch16
                    | OpKind::FarBranch32
            )
        })
    };
    if back.iter().any(branches) {
        return None;
    }
    let mut encoder = Encoder::new(64);
    let mut ip = at;
    for insn in back {
        // Out of a RIP-relative operand's reach, the encoder refuses it;
        // the block encoder may still place it (an absolute 32-bit address).
        ip += encoder.encode(insn, ip).ok()? as u64;
    }
    let mut code = encoder.take_buffer();
    let short = i8::try_from(resume.wrapping_sub(ip + 2) as i64).is_ok();
    if short {
        return None;
    }
    code.extend(jump(ip, resume)?);
    Some(code)
}

/// The byte of `int3`, which pads before a routine's constants.
const INT3: u8 = 0xcc;

/// A probe's code: its instructions encoded one after the other, each in
/// the form it has (branches `rel32`, memory operands RIP-relative with
/// 32-bit displacements), so that its length does not depend on what it
/// reaches, and the labels it refers to (instruction addresses at or above
/// `LABEL`) filled in once all are placed. The block encoder, which
/// shortens branches, takes passes over the whole block, several times
/// the cost of this one pass.
struct ProbeCode {
    at: u64,
    code: Vec<u8>,
    /// The offset of each instruction.
    offsets: Vec<u64>,
    /// The address of each label an instruction has.
    labels: HashMap<u64, u64>,
    /// (the offset of a 32-bit field relative to the end of its
    /// instruction, the offset of that end, the label it refers to).
    fixups: Vec<(usize, u64, u64)>,
}

impl ProbeCode {
    /// `list` encoded from `at`, its references to labels not filled in.
    fn encode(list: &[Instruction], at: u64) -> Result<ProbeCode, Unpatchable> {
        let mut encoder = Encoder::new(64);
        let (mut offsets, mut labels, mut fixups) = (Vec::with_capacity(list.len()), HashMap::new(), Vec::new());
        let mut offset = 0;
        for insn in list {
            let ip = at + offset;
            if insn.ip() >= LABEL {
                labels.insert(insn.ip(), ip);
            }
            // A label referred to is stood for by the instruction itself,
            // in reach of it, until the fixup.
            let mut placed = *insn;
            let branch = (insn.op0_kind() == OpKind::NearBranch64 && insn.near_branch64() >= LABEL).then(|| {
                placed.set_near_branch64(ip);
                insn.near_branch64()
            });
            let memory = (insn.is_ip_rel_memory_operand() && insn.memory_displacement64() >= LABEL).then(|| {
                placed.set_memory_displacement64(ip);
                insn.memory_displacement64()
            });
            let len = encoder.encode(&placed, ip).map_err(unencodable)? as u64;
            let constants = encoder.get_constant_offsets();
            let end = offset + len;
            if let Some(label) = branch {
                if constants.immediate_size() != 4 {
                    return Err(Unpatchable::Unencodable("a probe branch without a 32-bit offset".into()));
                }
                fixups.push((offset as usize + constants.immediate_offset(), end, label));
            }
            if let Some(label) = memory {
                fixups.push((offset as usize + constants.displacement_offset(), end, label));
            }
            offsets.push(offset);
            offset = end;
        }
        Ok(ProbeCode { at, code: encoder.take_buffer(), offsets, labels, fixups })
    }

    /// The offsets of the unlocked increments and claims of `list` (the
    /// instructions encoded), whose prefix byte turns them locked.
    fn unlocked(&self, list: &[Instruction]) -> Vec<u64> {
        let unlocked =
            |i: &&Instruction| matches!(i.code(), Code::Inc_rm64 | Code::Cmpxchg_rm64_r64) && !i.has_lock_prefix();
        list.iter().zip(&self.offsets).filter(|(i, _)| unlocked(i)).map(|(_, &offset)| offset).collect()
    }

    /// The address past the code.
    fn end(&self) -> u64 {
        self.at + self.code.len() as u64
    }

    /// The code, each label resolved to the instruction that has it, or
    /// by `other` (the probe's constants).
    fn finish(mut self, other: impl Fn(u64) -> Option<u64>) -> Result<Vec<u8>, Unpatchable> {
        for &(field, end, label) in &self.fixups {
            let target = self.labels.get(&label).copied().or_else(|| other(label));
            let target = target.ok_or_else(|| Unpatchable::Unencodable(format!("no label {label:#x}")))?;
            let relative = i32::try_from(target.wrapping_sub(self.at + end) as i64)
                .map_err(|_| Unpatchable::Unencodable("a probe constant out of reach".into()))?;
            self.code[field..field + 4].copy_from_slice(&relative.to_le_bytes());
        }
        Ok(self.code)
    }
}

/// The address of the call instruction that ends at `ret` (a return
/// address), given the 8 bytes before it; `ret` itself if no call decodes
/// there.
pub fn call_before(before: &[u8; 8], ret: u64) -> u64 {
    // A `call rel32`, as the decoder would find first, without it.
    if before[3] == CALL_REL32 {
        return ret.wrapping_sub(5);
    }
    // The most common lengths first: call rel32, call [rip+d32], call reg.
    for len in [5usize, 6, 2, 3, 7, 4] {
        let start = 8 - len;
        let site = ret.wrapping_sub(len as u64);
        let insn = Decoder::with_ip(64, &before[start..], site, DecoderOptions::NONE).decode();
        if insn.len() == len && insn.mnemonic() == iced_x86::Mnemonic::Call {
            return site;
        }
    }
    ret
}

/// The `jmp rel32` from `from` to `to`, or None if out of reach.
pub fn jump(from: u64, to: u64) -> Option<[u8; JUMP_LEN as usize]> {
    rel32(0xe9, from, to)
}

/// The `call rel32` at `from` of `to`, or None if out of reach.
pub fn call(from: u64, to: u64) -> Option<[u8; JUMP_LEN as usize]> {
    rel32(CALL_REL32, from, to)
}

/// The 5-byte instruction `opcode` with a 32-bit displacement, at `from`,
/// to `to`.
fn rel32(opcode: u8, from: u64, to: u64) -> Option<[u8; JUMP_LEN as usize]> {
    let rel = i32::try_from(to.wrapping_sub(from.wrapping_add(JUMP_LEN)) as i64).ok()?;
    let mut bytes = [opcode, 0, 0, 0, 0];
    bytes[1..].copy_from_slice(&rel.to_le_bytes());
    Some(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn decode_all(code: &[u8], ip: u64) -> Vec<Instruction> {
        Decoder::with_ip(64, code, ip, DecoderOptions::NONE).into_iter().collect()
    }

    #[test]
    fn moves_rip_relative_operands_and_short_branches() {
        // lea rax,[rip+0x100]; jmp short +0x10 ; at 0x1000
        let code = [0x48, 0x8d, 0x05, 0x00, 0x01, 0x00, 0x00, 0xeb, 0x10];
        let moved = entry_instructions(&code, 0x1000, JUMP_LEN).unwrap();
        assert_eq!(moved.len(), 1);
        let moved = entry_instructions(&code, 0x1000, 8).unwrap();
        assert_eq!(covered_len(&moved), 9);
        let at = 0x7000_0000;
        let out = build(at, Probe::Count { counter: 0x7000_2000, increment: Increment::Locked }, &moved, 0x1009)
            .unwrap()
            .code;
        let back = decode_all(&out, at);
        assert_eq!(back[0].code(), Code::Inc_rm64);
        assert!(back[0].has_lock_prefix());
        assert_eq!(back[0].memory_displacement64(), 0x7000_2000);
        assert_eq!(back[1].code(), Code::Lea_r64_m);
        assert_eq!(back[1].memory_displacement64(), 0x1107, "same absolute target as in place");
        assert_eq!(back[2].near_branch64(), 0x1019, "the short jump's target kept");
        assert_eq!(back.last().unwrap().near_branch64(), 0x1009);
    }

    #[test]
    fn a_call_moved_last_pushes_the_return_address_into_the_function_and_jumps() {
        // sub rsp,8; call 0x1200 ; at 0x1000: the callee returns to 0x1009,
        // in the function, where an unwinder finds the caller.
        let code = [0x48, 0x83, 0xec, 0x08, 0xe8, 0xf7, 0x01, 0x00, 0x00];
        let back = moved_at_trampoline(&code).unwrap();
        let codes: Vec<Code> = back.iter().map(|i| i.code()).collect();
        assert_eq!(
            codes,
            [
                Code::Sub_rm64_imm8,
                Code::Lea_r64_m,
                Code::Mov_rm32_imm32,
                Code::Mov_rm32_imm32,
                Code::Jmp_rel32_64,
                Code::Jmp_rel32_64
            ]
        );
        assert_eq!((back[1].memory_base(), back[1].memory_displacement64() as i64), (Register::RSP, -8));
        assert_eq!((back[2].memory_displacement64(), back[2].immediate32()), (0, 0x1009));
        assert_eq!((back[3].memory_displacement64(), back[3].immediate32()), (4, 0));
        assert_eq!(back[4].near_branch64(), 0x1200, "where the call went");
        // call [rip+0x100]: a jump through the same slot.
        let back = moved_at_trampoline(&[0xff, 0x15, 0, 1, 0, 0]).unwrap();
        assert_eq!(back[1].immediate32(), 0x1006);
        assert_eq!((back[3].code(), back[3].ip_rel_memory_address()), (Code::Jmp_rm64, 0x1106));
        // call next; pop rax (a function reading its own address): the
        // address pushed is the function's, as in place.
        let back = moved_at_trampoline(&[0xe8, 0x00, 0x00, 0x00, 0x00, 0x58]).unwrap();
        assert_eq!((back[1].immediate32(), back[3].near_branch64()), (0x1005, 0x1005));
        // A call not last (its return would be into the trampoline) or
        // through the stack pointer is not moved.
        let early = [0xe8, 0xf7, 0x01, 0x00, 0x00];
        let moved = entry_instructions(&early, 0x1000, JUMP_LEN).unwrap();
        assert!(matches!(check_movable(&moved[..1]), Ok(())));
        let moved = entry_instructions(&[0xe8, 0xf7, 0x01, 0x00, 0x00, 0x90], 0x1000, 6).unwrap();
        assert!(matches!(check_movable(&moved), Err(Unpatchable::NotMovable(0, _))));
        // call [rsp+8]
        assert!(matches!(moved_at_trampoline(&[0xff, 0x54, 0x24, 0x08, 0x90]), Err(Unpatchable::NotMovable(0, _))));
    }

    #[test]
    fn refuses_branches_into_the_entry_and_short_functions() {
        // f at 0x1000: push rbp; mov rbp,rsp; nop; jmp short back to 0x1001
        // g at 0x1010: jmp 0x1003 (into f's first bytes); call 0x1000
        let mut code = vec![0x55, 0x48, 0x89, 0xe5, 0x90, 0xeb, 0xfa];
        code.resize(0x10, 0x90);
        code.extend([0xeb, 0xf1, 0xe8, 0xe9, 0xff, 0xff, 0xff]);
        let sections = [(0x1000, code.as_slice())];
        let only_f = BranchTargets::scan(&sections, [(0x1000, 7)].into_iter());
        assert_eq!(check_patchable(0x1000, 7, 5, None, &only_f), Err(Unpatchable::BranchIntoEntry(0x1005)));
        let only_g = BranchTargets::scan(&sections, [(0x1010, 7)].into_iter());
        assert_eq!(check_patchable(0x1000, 7, 5, None, &only_g), Err(Unpatchable::BranchIntoEntry(0x1010)));
        assert_eq!(check_patchable(0x1000, 7, 3, None, &only_g), Ok(()), "a call of the entry itself is fine");
        let none = BranchTargets::default();
        assert_eq!(check_patchable(0x1000, 3, 5, None, &none), Err(Unpatchable::TooShort));
        assert_eq!(check_patchable(0x1000, 0, 5, None, &none), Err(Unpatchable::UnknownSize));
        assert_eq!(check_patchable(0x1000, 7, 5, Some(0x1003), &none), Err(Unpatchable::OverlapsNext));
        assert_eq!(check_patchable(0x1000, 5, 5, None, &none), Ok(()));
    }

    #[test]
    fn keeps_the_direct_calls() {
        // A function at 0x1000: call 0x1010; jmp 0x1010; call 0x1010; one
        // at 0x100c: call 0x1020.
        let code =
            [0xe8, 0x0b, 0x00, 0x00, 0x00, 0xeb, 0x09, 0xe8, 0x04, 0x00, 0x00, 0x00, 0xe8, 0x0f, 0x00, 0x00, 0x00];
        let sections = [(0x1000, code.as_slice())];
        let targets = BranchTargets::scan(&sections, [(0x1000, 0xc), (0x100c, 5)].into_iter());
        assert_eq!(targets.calls_to(0x1010).collect::<Vec<_>>(), [0x1005, 0x100c], "the jump is no call");
        assert_eq!(targets.calls_to(0x1020).collect::<Vec<_>>(), [0x1011]);
        assert_eq!(targets.calls_to(0x1000).count(), 0);
        assert_eq!(targets.calls_to(0x2000).count(), 0, "past the last");
    }

    #[test]
    fn pairs_keep_the_addresses_within_4_gib_of_their_base() {
        let base = 0x40_0000;
        let list = [(0x3f_ffff, base), (base, base + 8), (base + 0xffff_ffff, base), (base + (1 << 32), base)];
        let pairs = Pairs::new(base, &list);
        assert_eq!(pairs.len(), 2, "those below the base or past 4 GiB from it left out");
        assert_eq!((pairs.get(0), pairs.get(1), pairs.get(2)), (Some(list[1]), Some(list[2]), None));
        let back = Pairs::from_bytes(pairs.base(), SharedBytes::from(pairs.bytes().to_vec())).expect("whole pairs");
        assert_eq!(back.get(1), Some(list[2]));
        assert!(Pairs::from_bytes(base, SharedBytes::from(vec![0u8; 12])).is_none(), "a pair and a half");
    }

    /// Calls `caller` (a `call <trampoline>; ret`) with the registers a
    /// call leaves alone set, and asserts that they survive.
    pub(crate) fn call_keeping_registers(caller: u64) {
        let kept = [0x1111u64, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666];
        let (mut rax, mut rcx, mut rdx, mut r11) = (kept[0], kept[1], kept[2], kept[3]);
        let (mut rbx, mut r12) = (kept[4], kept[5]);
        // SAFETY: the caller and the trampoline it calls are code the test
        // wrote into executable pages, which return.
        unsafe {
            std::arch::asm!(
                // RBX, which asm! cannot name, through R13; the callee in
                // R10, named, so that it cannot be given RBX.
                "xchg rbx, r13",
                "call r10",
                "xchg rbx, r13",
                in("r10") caller,
                inout("r13") rbx,
                inout("rax") rax,
                inout("rcx") rcx,
                inout("rdx") rdx,
                inout("r11") r11,
                inout("r12") r12,
                clobber_abi("C"),
            );
        }
        assert_eq!([rax, rcx, rdx, r11, rbx, r12], kept, "the registers after the call");
    }

    /// Writes `n` callers from `callers`, 6 bytes apart, each `call at;
    /// ret`: caller k returns to `callers + 6k + 5`.
    ///
    /// # Safety
    /// The callers' bytes must be writable memory of the test's.
    pub(crate) unsafe fn write_callers(callers: u64, n: usize, at: u64) {
        for k in 0..n as u64 {
            let caller = callers + 6 * k;
            let rel = (at as i64 - (caller + 5) as i64) as i32;
            let mut call = [0xe8, 0, 0, 0, 0, 0xc3];
            call[1..5].copy_from_slice(&rel.to_le_bytes());
            // SAFETY: as the caller promises.
            unsafe { std::ptr::copy_nonoverlapping(call.as_ptr(), caller as *mut u8, call.len()) };
        }
    }

    /// The counter copies of tests that run per-processor increments for
    /// real, and their stride.
    pub(crate) const COPIES: usize = 65;
    pub(crate) const STRIDE_LOG2: u32 = 12;

    /// Whether this processor runs `rdpid` with a processor number below
    /// [`COPIES`].
    pub(crate) fn per_cpu_runs_here() -> bool {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let rdpid = info.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "rdpid"));
        rdpid && std::thread::available_parallelism().is_ok_and(|n| n.get() < COPIES)
    }

    #[test]
    fn finds_the_call_before_a_return_address() {
        // nop x3; call rel32 ending at 0x2000
        let before = [0x90, 0x90, 0x90, 0xe8, 0x10, 0x00, 0x00, 0x00];
        assert_eq!(call_before(&before, 0x2000), 0x2000 - 5);
        // ...; call rax (ff d0)
        let before = [0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0];
        assert_eq!(call_before(&before, 0x2000), 0x2000 - 2);
        // ...; call [rip+0] (ff 15 d32)
        let before = [0x90, 0x90, 0xff, 0x15, 0x00, 0x00, 0x00, 0x00];
        assert_eq!(call_before(&before, 0x2000), 0x2000 - 6);
        assert_eq!(call_before(&[0x90; 8], 0x2000), 0x2000);
    }

    #[test]
    fn an_unlocked_increment_becomes_locked_by_one_byte() {
        let moved = entry_instructions(&[0x55, 0x48, 0x89, 0xe5, 0x90], 0x1000, JUMP_LEN).unwrap();
        let arc = ArcProbe { id: 5, routine: 0x7000_8000, table: 0x7100_0000 };
        let probe = Probe::Arcs { counter: 0x7000_2000, arc, increment: Increment::Unlocked };
        let mut t = build(0x7000_0000, probe, &moved, 0x1005).unwrap();
        assert_eq!(t.unlocked.len(), 2, "the call's count and the arc's");
        for &at in &t.unlocked {
            assert_eq!(t.code[at as usize], UNLOCKED_PREFIX);
            t.code[at as usize] = LOCK_PREFIX;
        }
        let locked = Probe::Arcs { counter: 0x7000_2000, arc, increment: Increment::Locked };
        let locked = build(0x7000_0000, locked, &moved, 0x1005).unwrap();
        assert_eq!(t.code, locked.code, "the same code, locked");
        let back = decode_all(&t.code, 0x7000_0000);
        assert_eq!(back[0].memory_displacement64(), 0x7000_2000, "the call's counter");
        // The arc part as its template says: the head, the moved
        // instructions and the jump back, the tail.
        use Code::*;
        let codes = |range: std::ops::Range<usize>| back[range].iter().map(|i| i.code()).collect::<Vec<Code>>();
        assert_eq!(
            codes(1..19),
            [
                Push_r64,
                Push_r64,
                Mov_r64_imm64,
                Xor_r64_rm64,
                Mov_r64_imm64,
                Imul_r64_rm64,
                Shr_rm64_imm8,
                Lea_r64_m,
                Lea_r64_m,
                Lea_r64_m,
                Mov_r64_rm64,
                Cmp_r64_rm64,
                Jne_rel32_64,
                Cmp_rm64_imm32,
                Jne_rel32_64,
                Inc_rm64,
                Pop_r64,
                Pop_r64
            ]
        );
        assert_eq!(codes(19..23), [Push_r64, Mov_rm64_r64, Nopd, Jmp_rel32_64], "moved, and the jump back");
        assert_eq!(back[22].near_branch64(), 0x1005);
        assert_eq!(
            codes(23..34),
            [
                Cmp_r64_rm64,
                Jne_rel8_64,
                Cmp_rm64_imm32,
                Jne_rel8_64,
                Add_rm64_imm8,
                Jmp_rel32_64,
                Pop_r64,
                Mov_r32_imm32,
                Call_rel32_64,
                Pop_r64,
                Jmp_rel32_64
            ]
        );
        assert_eq!(back.len(), 34, "nothing after the tail");
        let (next, slow) = (back[23].ip(), back[29].ip());
        assert_eq!((back[13].near_branch64(), back[15].near_branch64()), (next, next), "a miss at home looks on");
        assert_eq!((back[24].near_branch64(), back[26].near_branch64()), (slow, slow));
        assert_eq!(back[28].near_branch64(), back[16].ip(), "the next entry's hit counts");
        assert_eq!(back[33].near_branch64(), back[19].ip(), "the routine's call goes on to the moved push rbp");
        assert_eq!((back[3].immediate64(), back[5].immediate64()), (5 << 40, arc_table::MULTIPLIER));
        assert_eq!(back[7].immediate8(), arc_table::FIRST_LEVEL_SHIFT as u8);
        assert_eq!(back[9].memory_displacement64(), 0x7100_0000 + arc_table::FIRST_LEVEL_AT, "the first level");
        assert_eq!([14, 25, 30].map(|n| back[n].immediate32()), [5, 5, 5]);
        assert_eq!(back[31].near_branch64(), 0x7000_8000, "the routine");
    }

    #[test]
    fn a_per_processor_arc_head_counts_in_the_running_processors_copy() {
        let moved = entry_instructions(&[0x55, 0x48, 0x89, 0xe5, 0x90], 0x1000, JUMP_LEN).unwrap();
        let arc = ArcProbe { id: 5, routine: 0x7000_8000, table: 0x7100_0000 };
        let how = Increment::PerCpu { stride_log2: 23 };
        let t = build(0x7000_0000, Probe::Arcs { counter: 0x7000_2000, arc, increment: how }, &moved, 0x1005).unwrap();
        assert!(t.unlocked.is_empty());
        let back = decode_all(&t.code, 0x7000_0000);
        // The call's count (per processor: push, push, rdpid, and, shl, lea,
        // inc, pop, pop), then the arc head as the locked one's up to its
        // count.
        let head = back.iter().position(|i| i.code() == Code::Mov_r64_imm64).unwrap() - 2;
        let count = head + 15;
        use Code::*;
        let codes: Vec<Code> = back[count..count + 6].iter().map(|i| i.code()).collect();
        assert_eq!(codes, [Rdpid_r64, And_rm32_imm32, Shl_rm64_imm8, Inc_rm64, Pop_r64, Pop_r64]);
        assert_eq!(back[count + 2].immediate8(), arc_table::COPY_STRIDE_LOG2 as u8);
        let inc = &back[count + 3];
        assert!(inc.has_lock_prefix());
        assert_eq!((inc.memory_base(), inc.memory_index()), (Register::RAX, Register::RCX));
        assert_eq!(inc.memory_displacement64(), arc_table::copied_count_at(0, 0) - arc_table::FIRST_LEVEL_AT);
        assert_eq!(back[count + 6].code(), Push_r64, "then the moved instructions");
        assert_eq!(back.last().unwrap().near_branch64(), back[count + 6].ip(), "the routine's call goes on to them");
        assert_eq!(back[back.len() - 3].near_branch64(), 0x7000_8000, "the routine");
    }

    #[test]
    fn a_call_through_a_plt_entry_counts_twice_while_the_slot_holds_the_function() {
        let plt = PltCall { got: 0x7000_3000, entry: 0x1000, moved: 0x7000_5010 };
        let counters = [0x7000_2000, 0x7000_2008];
        let t = through_plt(0x7000_0000, plt, counters, Increment::Unlocked).unwrap();
        let back = decode_all(&t.code, 0x7000_0000);
        use Code::*;
        let codes: Vec<Code> = back.iter().map(|i| i.code()).filter(|&c| c != Int3).collect();
        assert_eq!(
            codes,
            [Inc_rm64, Push_r64, Mov_r64_imm64, Cmp_rm64_r64, Pop_r64, Jne_rel32_64, Inc_rm64, Jmp_rel32_64, Jmp_rm64]
        );
        assert_eq!((back[0].ip_rel_memory_address(), back[6].ip_rel_memory_address()), (0x7000_2000, 0x7000_2008));
        assert_eq!(
            (back[2].immediate64(), back[3].ip_rel_memory_address()),
            (0x1000, 0x7000_3000),
            "the slot against the entry"
        );
        assert_eq!(back[5].near_branch64(), back[8].ip(), "else through the slot");
        assert_eq!(back[7].near_branch64(), 0x7000_5010, "the function's moved instructions");
        assert_eq!(back[8].ip_rel_memory_address(), 0x7000_3000);
        assert_eq!(t.unlocked, [back[0].ip() - 0x7000_0000, back[6].ip() - 0x7000_0000], "both increments relockable");
        let locked = through_plt(0x7000_0000, plt, counters, Increment::Locked).unwrap();
        assert!(locked.unlocked.is_empty());
        // The function's trampoline beyond a rel32: through a constant.
        let far = PltCall { moved: 0x7fff_0000_0000, ..plt };
        let t = through_plt(0x7000_0000, far, counters, Increment::Locked).unwrap();
        let back = decode_all(&t.code, 0x7000_0000);
        let jump = back.iter().find(|i| i.code() == Jmp_rm64 && i.ip_rel_memory_address() != 0x7000_3000).unwrap();
        let constant = (jump.ip_rel_memory_address() - 0x7000_0000) as usize;
        assert_eq!(t.code[constant..constant + 8], 0x7fff_0000_0000u64.to_le_bytes(), "the constant it jumps through");
    }

    #[test]
    fn an_increments_template_gives_the_encoders_bytes() {
        let forms = [Increment::Unlocked, Increment::Locked, Increment::PerCpu { stride_log2: 23 }];
        for how in forms {
            for (counter, at) in
                [(0x7000_2000, 0x7000_0000), (0x7fff_0000_1000, 0x7fff_4000_0000), (0x1000, 0x7fff_ff00)]
            {
                let list = increment(counter, how).unwrap();
                let encoded = ProbeCode::encode(&list, at).unwrap().finish(|_| None).unwrap();
                let (placed, unlocked) = IncrementTemplate::place(counter, how, at).unwrap();
                assert_eq!(placed, encoded, "{how:?} of {counter:#x} at {at:#x}");
                assert_eq!(unlocked, (how == Increment::Unlocked).then_some(0));
            }
        }
        let far = IncrementTemplate::place(0x7000_0000_0000, Increment::Locked, 0x1000);
        assert!(matches!(far, Err(Unpatchable::Unencodable(_))), "a counter out of reach");
    }

    #[test]
    fn a_per_cpu_increment_reaches_the_running_processors_copy() {
        let moved = entry_instructions(&[0x55, 0x48, 0x89, 0xe5, 0x90], 0x1000, JUMP_LEN).unwrap();
        let probe = Probe::Count { counter: 0x7000_2000, increment: Increment::PerCpu { stride_log2: 23 } };
        let t = build(0x7000_0000, probe, &moved, 0x1005).unwrap();
        assert!(t.unlocked.is_empty());
        let back = decode_all(&t.code, 0x7000_0000);
        let codes: Vec<Code> = back.iter().take(9).map(|i| i.code()).collect();
        use Code::*;
        assert_eq!(
            codes,
            [Push_r64, Push_r64, Rdpid_r64, And_rm32_imm32, Shl_rm64_imm8, Lea_r64_m, Inc_rm64, Pop_r64, Pop_r64]
        );
        assert_eq!((back[1].op0_register(), back[7].op0_register()), (Register::R11, Register::R11), "R11 kept");
        assert_eq!(back[3].immediate32(), 0xfff, "the processor, without the node");
        assert_eq!(back[4].immediate8(), 23);
        assert_eq!(back[5].memory_displacement64(), 0x7000_2000 + (1 << 23), "processor 0's copy, the second");
        assert!(back[6].has_lock_prefix());
        assert_eq!((back[6].memory_base(), back[6].memory_index()), (Register::RAX, Register::R11));
    }

    #[test]
    fn a_short_function_may_cover_its_padding() {
        // ret; nop; nopw (66 90); nop
        let code = [0xc3, 0x90, 0x66, 0x90, 0x90, 0x90];
        let moved = entry_instructions(&code, 0x1000, JUMP_LEN).unwrap();
        assert!(ends_in_padding(&moved, 0x1001));
        // xor eax,eax; ret; int3 padding is not taken (another probe's?)
        assert!(entry_instructions(&[0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc], 0x1000, JUMP_LEN).is_err());
        // inc eax; nop...: falls through, so the padding runs
        let moved = entry_instructions(&[0xff, 0xc0, 0x90, 0x90, 0x90, 0x90], 0x1000, JUMP_LEN).unwrap();
        assert!(!ends_in_padding(&moved, 0x1002));
        // ret; push rbp (the next bytes are code)
        let moved = entry_instructions(&[0xc3, 0x55, 0x48, 0x89, 0xe5], 0x1000, JUMP_LEN).unwrap();
        assert!(!ends_in_padding(&moved, 0x1001));
    }

    /// The trampoline of `code` at 0x1000 (its first five bytes moved), at
    /// 0x7000_0000, decoded; or why it cannot be built.
    fn moved_at_trampoline(code: &[u8]) -> Result<Vec<Instruction>, Unpatchable> {
        let moved = entry_instructions(code, 0x1000, JUMP_LEN)?;
        let back = 0x1000 + covered_len(&moved);
        let t = build(0x7000_0000, Probe::None, &moved, back)?;
        Ok(decode_all(&t.code, 0x7000_0000))
    }

    #[test]
    fn an_address_computed_or_read_stays_the_original() {
        // lea rax,[rip-7]: the function's own address, 0x1000
        let back = moved_at_trampoline(&[0x48, 0x8d, 0x05, 0xf9, 0xff, 0xff, 0xff]).unwrap();
        assert_eq!(back[0].code(), Code::Lea_r64_m);
        assert_eq!(back[0].ip_rel_memory_address(), 0x1000, "the function's address, not the copy's");
        // mov rax,[rip+0x100]; jmp [rip+0x100]
        let code = [0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, 0xff, 0x25, 0x00, 0x01, 0x00, 0x00];
        let moved = entry_instructions(&code, 0x1000, 8).unwrap();
        let t = build(0x7000_0000, Probe::None, &moved, 0x100d).unwrap();
        let back = decode_all(&t.code, 0x7000_0000);
        assert_eq!(back[0].ip_rel_memory_address(), 0x1107);
        assert_eq!(back[1].ip_rel_memory_address(), 0x110d, "an indirect jump reads the same pointer");
    }

    #[test]
    fn a_branch_among_the_moved_instructions_goes_to_the_copy() {
        // xor eax,eax; jmp short 0x1000; nop
        let back = moved_at_trampoline(&[0x31, 0xc0, 0xeb, 0xfc, 0x90]).unwrap();
        assert_eq!(back[1].near_branch64(), back[0].ip(), "the moved xor, not the jump in place");
        assert_eq!(back.last().unwrap().near_branch64(), 0x1005);
        // jmp short 0x1001: into its own second byte
        assert_eq!(
            moved_at_trampoline(&[0xeb, 0xff, 0x90, 0x90, 0x90]),
            Err(Unpatchable::NotMovable(0, "it branches into the middle of a moved instruction"))
        );
    }

    #[test]
    fn what_would_differ_in_the_trampoline_is_refused() {
        let refused = |code: &[u8]| match moved_at_trampoline(code) {
            Err(Unpatchable::NotMovable(offset, _)) => offset,
            other => panic!("{code:x?} moved: {other:?}"),
        };
        // mov rax,[rip-5]: reads its own bytes, the jump's now
        assert_eq!(refused(&[0x48, 0x8b, 0x05, 0xfb, 0xff, 0xff, 0xff]), 0);
        // nop; syscall (saves its address in rcx); ud2; int 0x80
        assert_eq!(refused(&[0x90, 0x0f, 0x05, 0x90, 0x90]), 1);
        assert_eq!(refused(&[0x0f, 0x0b, 0x90, 0x90, 0x90]), 0);
        assert_eq!(refused(&[0xcd, 0x80, 0x90, 0x90, 0x90]), 0);
        // xbegin (its abort address)
        assert_eq!(refused(&[0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00]), 0);
    }

    #[test]
    fn an_int3_entry_is_not_moved() {
        assert_eq!(entry_instructions(&[0xcc, 0x90, 0x90, 0x90, 0x90], 0, 5), Err(Unpatchable::Undecodable));
    }

    /// The executable sections of the ELF file `data`, (address, bytes).
    fn code_sections(data: &[u8]) -> Vec<(u64, &[u8])> {
        use object::{Object, ObjectSection, SectionKind};
        let file = object::File::parse(data).expect("an ELF file");
        file.sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect()
    }

    #[test]
    fn straight_encoding_is_the_block_encoders_on_every_entry_of_real_modules() {
        // The C library, and where installed a compiler's and an
        // interpreter's tens of thousands of entries.
        let paths = ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/usr/bin/python3.11"];
        let (mut straight, mut blocked) = (0, 0);
        for path in paths.iter().filter(|p| std::path::Path::new(p).exists()) {
            let info = crate::discover::discover_file(std::path::Path::new(path)).expect("readable module");
            let data = std::fs::read(path).unwrap();
            let sections = code_sections(&data);
            for f in &info.functions {
                let Some(&(base, bytes)) =
                    sections.iter().find(|(a, b)| (*a..*a + b.len() as u64).contains(&f.address))
                else {
                    continue;
                };
                let code = &bytes[(f.address - base) as usize..];
                let Ok(moved) = entry_instructions(&code[..code.len().min(32)], f.address, JUMP_LEN) else { continue };
                let Ok(back) = relabel(&moved) else { continue };
                let resume = f.address + covered_len(&moved);
                // A trampoline region below and one above the module, as
                // a region may lie on either side.
                for at in [f.address.wrapping_sub(0x4000_0000), f.address + 0x4000_0000] {
                    let block = block_encode(&back, at, resume);
                    match encode_straight(&back, at, resume) {
                        Some(code) => {
                            assert_eq!(Ok(code), block, "{path}: {} at {:#x}", f.name, f.address);
                            straight += 1;
                        }
                        None => blocked += 1,
                    }
                }
            }
        }
        assert!(straight > 4 * blocked, "{straight} entries encoded straight, {blocked} by the block encoder");
    }

    #[test]
    fn straight_encoding_leaves_branches_and_far_or_near_targets_to_the_block_encoder() {
        let back = |code: &[u8]| relabel(&entry_instructions(code, 0x1000, JUMP_LEN).unwrap()).unwrap();
        let at = 0x7000_0000;
        // push rbp; mov rbp,rsp; push rbx
        let plain = back(&[0x55, 0x48, 0x89, 0xe5, 0x53]);
        assert_eq!(encode_straight(&plain, at, 0x1005), block_encode(&plain, at, 0x1005).ok());
        // The jump back within a `jmp rel8`'s reach, or out of a `jmp
        // rel32`'s.
        assert_eq!(encode_straight(&plain, at, at + 0x40), None);
        assert_eq!(encode_straight(&plain, at, at + (1 << 32)), None);
        // xor eax,eax; jmp short 0x1000 (among the moved); and a call,
        // emulated with a jump.
        assert_eq!(encode_straight(&back(&[0x31, 0xc0, 0xeb, 0xfc, 0x90]), at, 0x1005), None);
        assert_eq!(encode_straight(&back(&[0xe8, 0xf7, 0x01, 0x00, 0x00]), at, 0x1005), None);
        // mov rax,[rip+0x100] from 4 GiB away: out of a rel32's reach.
        let load = back(&[0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00]);
        assert!(encode_straight(&load, 0x1_0000_1000, 0x1007).is_none());
        assert_eq!(encode_straight(&load, at, 0x1007), block_encode(&load, at, 0x1007).ok());
    }

    #[test]
    fn jumps_and_calls_reach_only_within_2_gib() {
        assert_eq!(jump(0x1000, 0x1005), Some([0xe9, 0, 0, 0, 0]));
        assert_eq!(jump(0x1000, 0x1000), Some([0xe9, 0xfb, 0xff, 0xff, 0xff]));
        assert_eq!(jump(0x1000, 0x1_0000_1000), None);
        assert_eq!(call(0x1000, 0x2005), Some([0xe8, 0, 0x10, 0, 0]));
        assert_eq!(call(0x1_0000_1000, 0x1000), None);
    }
}
