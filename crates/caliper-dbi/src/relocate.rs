//! Trampolines: the entry instructions of a function moved elsewhere,
//! after a probe, and followed by a jump back into the function.
//!
//! The first instructions are decoded and re-encoded at the trampoline's
//! address with iced-x86's block encoder, which rewrites RIP-relative
//! operands and turns short branches into near ones, so the moved code
//! does what it did in place. A function's entry can be replaced by a
//! 5-byte `jmp rel32` only if no instruction of the function branches
//! into the bytes the jump covers (other than the entry itself) and the
//! function is at least that long; otherwise it stays counted by its
//! breakpoint, and [`Unpatchable`] says why.

use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Decoder, DecoderOptions, Instruction, InstructionBlock, MemoryOperand,
    OpKind, Register,
};
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
    /// The entry bytes do not decode as instructions.
    Undecodable,
    /// The encoder could not place the instructions at the trampoline.
    Unencodable(String),
}

impl fmt::Display for Unpatchable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unpatchable::TooShort => write!(f, "shorter than a 5-byte jump"),
            Unpatchable::UnknownSize => write!(f, "size unknown"),
            Unpatchable::BranchIntoEntry(at) => write!(f, "branch at {at:#x} into the entry bytes"),
            Unpatchable::OverlapsNext => write!(f, "another function starts in the entry bytes"),
            Unpatchable::Undecodable => write!(f, "entry instructions do not decode"),
            Unpatchable::Unencodable(why) => write!(f, "cannot relocate: {why}"),
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

/// The bytes the entry's instructions cover.
pub fn covered_len(instructions: &[Instruction]) -> u64 {
    instructions.iter().map(|i| i.len() as u64).sum()
}

/// The direct branch and call targets of a module's code, with where
/// each branch is: a jump may replace a function's first bytes only if
/// nothing branches into them (an entry shared by several functions, as
/// the C library's string functions have, is such a branch).
#[derive(Debug, Clone, Default)]
pub struct BranchTargets(Vec<(u64, u64)>);

impl BranchTargets {
    /// Decodes each function (address, size) whose bytes lie in one of
    /// `sections` (address, bytes) and notes its direct branch targets.
    pub fn scan(sections: &[(u64, &[u8])], functions: impl Iterator<Item = (u64, u64)>) -> BranchTargets {
        let mut targets = Vec::new();
        let mut insn = Instruction::default();
        for (address, size) in functions {
            let Some((base, bytes)) = sections.iter().find(|(a, b)| (*a..*a + b.len() as u64).contains(&address))
            else {
                continue;
            };
            let start = (address - base) as usize;
            let end = (start + size as usize).min(bytes.len());
            let mut decoder = Decoder::with_ip(64, &bytes[start..end], address, DecoderOptions::NONE);
            while decoder.can_decode() {
                decoder.decode_out(&mut insn);
                if insn.op0_kind() == OpKind::NearBranch64 {
                    targets.push((insn.near_branch64(), insn.ip()));
                }
            }
        }
        targets.sort_unstable();
        targets.dedup_by_key(|t| t.0);
        BranchTargets(targets)
    }

    /// Where a branch into (`low`, `high`) is, if any.
    pub fn into_range(&self, low: u64, high: u64) -> Option<u64> {
        let first = self.0.partition_point(|t| t.0 <= low);
        self.0.get(first).filter(|t| t.0 < high).map(|t| t.1)
    }
}

/// Checks that a jump may replace the first `prefix_len` bytes of the
/// function at `entry` of `size` bytes: `next` is where the next known
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
    if size < JUMP_LEN || size < prefix_len {
        return Err(Unpatchable::TooShort);
    }
    if next.is_some_and(|n| n < entry + prefix_len) {
        return Err(Unpatchable::OverlapsNext);
    }
    match targets.into_range(entry, entry + prefix_len) {
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
    /// `lock inc qword [counter]`: one atomic increment of the function's
    /// counter. It changes the arithmetic flags, which no function expects
    /// to keep across a call.
    Count { counter: u64 },
}

/// Encodes a trampoline at address `at`: the probe, the `moved`
/// instructions (decoded at their original addresses), and a jump to
/// `resume`.
pub fn build(at: u64, probe: Probe, moved: &[Instruction], resume: u64) -> Result<Vec<u8>, Unpatchable> {
    let unencodable = |e: iced_x86::IcedError| Unpatchable::Unencodable(e.to_string());
    let mut list = Vec::with_capacity(moved.len() + 2);
    if let Probe::Count { counter } = probe {
        let mut inc = Instruction::with1(Code::Inc_rm64, MemoryOperand::with_base_displ(Register::RIP, counter as i64))
            .map_err(unencodable)?;
        inc.set_has_lock_prefix(true);
        list.push(inc);
    }
    list.extend_from_slice(moved);
    list.push(Instruction::with_branch(Code::Jmp_rel32_64, resume).map_err(unencodable)?);
    let encoded =
        BlockEncoder::encode(64, InstructionBlock::new(&list, at), BlockEncoderOptions::NONE).map_err(unencodable)?;
    Ok(encoded.code_buffer)
}

/// The `jmp rel32` from `from` to `to`, or None if out of reach.
pub fn jump(from: u64, to: u64) -> Option<[u8; JUMP_LEN as usize]> {
    let rel = i32::try_from(to.wrapping_sub(from + JUMP_LEN) as i64).ok()?;
    let mut bytes = [0xe9, 0, 0, 0, 0];
    bytes[1..].copy_from_slice(&rel.to_le_bytes());
    Some(bytes)
}

#[cfg(test)]
mod tests {
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
        let out = build(at, Probe::Count { counter: 0x7000_2000 }, &moved, 0x1009).unwrap();
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
    fn an_int3_entry_is_not_moved() {
        assert_eq!(entry_instructions(&[0xcc, 0x90, 0x90, 0x90, 0x90], 0, 5), Err(Unpatchable::Undecodable));
    }

    #[test]
    fn jumps_reach_only_within_2_gib() {
        assert_eq!(jump(0x1000, 0x1005), Some([0xe9, 0, 0, 0, 0]));
        assert_eq!(jump(0x1000, 0x1000), Some([0xe9, 0xfb, 0xff, 0xff, 0xff]));
        assert_eq!(jump(0x1000, 0x1_0000_1000), None);
    }
}
