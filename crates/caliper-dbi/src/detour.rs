//! Entries that cannot take a 5-byte jump: a 2-byte `jmp rel8` instead,
//! into alignment padding near the function that holds the `jmp rel32` to
//! the trampoline.
//!
//! The C library's string functions share entries (`__mempcpy_*` adds
//! and jumps to the third byte of `__memmove_*`), loops begin right after
//! a function's first instruction, and short functions end before five
//! bytes: each would keep its breakpoint, and a stop per call. Two bytes
//! fit where the first instruction boundary at or after them lies before
//! any branch target into the entry and before the function's end. The
//! padding is a run of `nop`s or `int3`s that never runs: it follows an
//! instruction that does not go on to the next (a return, a jump, `ud2`),
//! nothing branches into it, and no function starts in it. Such runs are
//! the alignment between functions and before the labels inside one (after
//! a jump). Each function near the entry is decoded from its start up to
//! the next function's, so the runs are found on instruction boundaries,
//! and a function that falls through its padding into the next one (glibc's
//! `__memmove_chk_*` into `__memmove_*`) offers none. A `jmp rel8` reaches
//! 128 bytes back and 127 forward from the end of the jump.
//!
//! Addresses here are the module file's own; the caller reads code and
//! knows what the tool already wrote.

use crate::discover::FunctionEntry;
use crate::relocate::{BranchTargets, JUMP_LEN};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic};

/// The length of the `jmp rel8` written over the entry.
pub const SHORT_JUMP_LEN: u64 = 2;

/// The most bytes of a function decoded for its padding (one longer is
/// not searched).
const MAX_DECODED: u64 = 64 << 10;

/// The `jmp rel8` from `from` to `to`, or None if out of reach.
pub fn short_jump(from: u64, to: u64) -> Option<[u8; SHORT_JUMP_LEN as usize]> {
    let rel = i8::try_from(to.wrapping_sub(from.wrapping_add(SHORT_JUMP_LEN)) as i64).ok()?;
    Some([0xeb, rel as u8])
}

/// Finds five bytes of padding that a `jmp rel8` at `entry` reaches and
/// that may hold a `jmp rel32`: the address of the first such, if any.
/// `functions` are the module's, sorted by address; `read(address, len)`
/// gives the code as the program has it (without the tool's changes);
/// `taken(low, high)` says whether the tool uses any byte of the range.
pub fn find_stub(
    entry: u64,
    functions: &[FunctionEntry],
    targets: &BranchTargets,
    read: impl Fn(u64, u64) -> Option<Vec<u8>>,
    taken: impl Fn(u64, u64) -> bool,
) -> Option<u64> {
    let from = entry.checked_add(SHORT_JUMP_LEN)?;
    let (lowest, end) = (from.saturating_sub(128), from.saturating_add(127 + JUMP_LEN));
    // The functions whose code, with the padding up to the next, may hold
    // a stub: from the last to start at or before the lowest address.
    // Walked lazily: the spans up to the end of a compiler's 45,000
    // functions, collected at every search, were 700 KiB of fresh memory.
    let first = functions.partition_point(|f| f.address <= lowest).saturating_sub(1);
    let last = functions.last().filter(|f| f.size > 0).map(|f| (f.address, f.address.saturating_add(f.size)));
    let spans = functions[first..].windows(2).map(|w| (w[0].address, w[1].address)).chain(last);
    for (start, next) in spans.take_while(|&(start, _)| start < end) {
        if next <= lowest || next - start > MAX_DECODED {
            continue;
        }
        let Some(code) = read(start, next - start) else { continue };
        for (low, high) in dead_runs(&code, start) {
            let (low, high) = (low.max(lowest), high.min(end));
            if high < low.saturating_add(JUMP_LEN) || targets.into_range(low.saturating_sub(1), high).is_some() {
                continue;
            }
            if let Some(stub) = (low..=high - JUMP_LEN).find(|&s| !taken(s, s + JUMP_LEN)) {
                return Some(stub);
            }
        }
    }
    None
}

/// The runs of `nop`s and `int3`s in `code` (decoded at `at`) that follow
/// an instruction that does not go on to the next: (start, end) of each.
/// Padding after a call is not taken: the call may return there.
fn dead_runs(code: &[u8], at: u64) -> Vec<(u64, u64)> {
    let leaves = |i: &Instruction| {
        matches!(
            i.flow_control(),
            FlowControl::Return
                | FlowControl::UnconditionalBranch
                | FlowControl::IndirectBranch
                | FlowControl::Exception
        ) && !i.is_invalid()
    };
    let mut runs = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    let mut after_leaving = false;
    for insn in Decoder::with_ip(64, code, at, DecoderOptions::NONE) {
        let filler = matches!(insn.mnemonic(), Mnemonic::Nop | Mnemonic::Int3);
        match (filler, run.as_mut()) {
            (true, Some(open)) => open.1 = insn.next_ip(),
            (true, None) if after_leaving => run = Some((insn.ip(), insn.next_ip())),
            _ => runs.extend(run.take()),
        }
        after_leaving = leaves(&insn);
    }
    runs.extend(run);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(address: u64, size: u64) -> FunctionEntry {
        FunctionEntry { name: std::sync::Arc::from(format!("{address:#x}")), address, size }
    }

    /// Code at 0x1000: `f` (ends with ret) and 9 bytes of nops, `g` at
    /// 0x1010 (4 bytes: lea eax,[rdi+1]; ret) and `h` right after it, to
    /// 0x1020.
    fn code() -> Vec<u8> {
        let mut code = vec![0x48, 0x89, 0xf8, 0x48, 0x01, 0xd0, 0xc3]; // mov rax,rdi; add rax,rdx; ret
        code.extend([0x0f, 0x1f, 0x44, 0x00, 0x00, 0x0f, 0x1f, 0x40, 0x00]); // 5- and 4-byte nops
        code.extend([0x8d, 0x47, 0x01, 0xc3]); // g
        code.extend([0x48, 0x85, 0xff, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x75, 0xf4]); // h: test; nops; jne h
        code
    }

    fn functions() -> Vec<FunctionEntry> {
        vec![function(0x1000, 7), function(0x1010, 4), function(0x1014, 12)]
    }

    fn reader(code: &[u8]) -> impl Fn(u64, u64) -> Option<Vec<u8>> + '_ {
        move |at, len| code.get((at - 0x1000) as usize..(at - 0x1000 + len) as usize).map(<[u8]>::to_vec)
    }

    #[test]
    fn encodes_short_jumps_within_reach() {
        assert_eq!(short_jump(0x1000, 0x1002), Some([0xeb, 0x00]));
        assert_eq!(short_jump(0x1010, 0x1007), Some([0xeb, 0xf5]));
        assert_eq!(short_jump(0x1000, 0x1002 + 127), Some([0xeb, 0x7f]));
        assert_eq!(short_jump(0x1000, 0x1002 - 128), Some([0xeb, 0x80]));
        assert_eq!(short_jump(0x1000, 0x1002 + 128), None);
        assert_eq!(short_jump(0x1000, 0x1002 - 129), None);
    }

    #[test]
    fn finds_the_padding_after_a_function_that_returns() {
        let code = code();
        let none = BranchTargets::default();
        let free = |_, _| false;
        assert_eq!(find_stub(0x1010, &functions(), &none, reader(&code), free), Some(0x1007));
        // The first five bytes taken: the next free five.
        let taken = |low: u64, _| low < 0x100a;
        assert_eq!(find_stub(0x1010, &functions(), &none, reader(&code), taken), Some(0x100a));
        // No room for five more bytes.
        let taken = |low: u64, _| low < 0x100d;
        assert_eq!(find_stub(0x1010, &functions(), &none, reader(&code), taken), None);
    }

    #[test]
    fn refuses_padding_that_runs_or_is_not_padding() {
        let code = code();
        let free = |_, _| false;
        // A branch into the gap (at 0x1008, from 0x1020) makes it code.
        let mut with_branch = code.clone();
        with_branch.extend([0xeb, 0xe6]);
        let sections = [(0x1000, &with_branch[..])];
        let targets = BranchTargets::scan(&sections, [(0x1020, 2)].into_iter());
        assert_eq!(targets.into_range(0x1007, 0x1009), Some(0x1020));
        assert_eq!(find_stub(0x1010, &functions(), &targets, reader(&code), free), None);
        // The function before the gap falls through (its ret made a nop).
        let mut falls = code.clone();
        falls[6] = 0x90;
        let none = BranchTargets::default();
        assert_eq!(find_stub(0x1010, &functions(), &none, reader(&falls), free), None);
        // Code, not filler, in the gap.
        let mut busy = code.clone();
        busy[7..9].copy_from_slice(&[0x31, 0xc0]); // xor eax,eax
        assert_eq!(find_stub(0x1010, &functions(), &none, reader(&busy), free), None);
        // An entry inside the padding: what is left before it is too short,
        // and what follows it is the new function's code.
        let mut entered = functions();
        entered.insert(1, function(0x100a, 6));
        assert_eq!(find_stub(0x1010, &entered, &none, reader(&code), free), None);
    }

    #[test]
    fn finds_the_padding_before_a_label_after_a_jump() {
        // f: jmp rax; a 6-byte nop; ret (a label: a jump table's target).
        // g right after it: 4 bytes.
        let code = [0xff, 0xe0, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3, 0x8d, 0x47, 0x01, 0xc3];
        let functions = [function(0x1000, 9), function(0x1009, 4)];
        let none = BranchTargets::default();
        let free = |_, _| false;
        assert_eq!(find_stub(0x1009, &functions, &none, reader(&code), free), Some(0x1002));
        // After a conditional jump (jne +0), the padding runs.
        let mut conditional = code;
        conditional[..2].copy_from_slice(&[0x75, 0x00]);
        assert_eq!(find_stub(0x1009, &functions, &none, reader(&conditional), free), None);
        // After a call, which may return there.
        let mut called = code.to_vec();
        called.splice(..2, [0xe8, 0x00, 0x00, 0x00, 0x00]);
        let shifted = [function(0x1000, 12), function(0x100c, 4)];
        assert_eq!(find_stub(0x100c, &shifted, &none, reader(&called), free), None);
    }

    #[test]
    fn the_padding_must_lie_within_a_short_jumps_reach() {
        let code = code();
        let none = BranchTargets::default();
        let free = |_, _| false;
        // From 0x1087 (jump end 0x1089), 0x1007 is 130 bytes back; 0x100c, 125.
        let mut far = functions();
        far.push(function(0x1087, 4));
        let read =
            |at: u64, len: u64| if at >= 0x1087 { Some(vec![0x90; len as usize]) } else { reader(&code)(at, len) };
        assert_eq!(find_stub(0x1087, &far, &none, read, free), Some(0x1009), "the last 5 bytes of the gap in reach");
        let mut farther = functions();
        farther.push(function(0x108f, 4));
        assert_eq!(find_stub(0x108f, &farther, &none, read, free), None);
    }
}
