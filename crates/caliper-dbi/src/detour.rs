//! Entries that cannot take a 5-byte jump: a 2-byte `jmp rel8` instead,
//! into alignment padding near the function that holds the `jmp rel32` to
//! the trampoline.
//!
//! The C library's string functions share entries (`__mempcpy_*` adds
//! and jumps to the third byte of `__memmove_*`), and short functions end
//! before five bytes: either would keep its breakpoint, and a stop per
//! call. Two bytes fit where the first instruction boundary at or after
//! them lies before any branch target into the entry and before the
//! function's end. The padding is a gap between functions (after one
//! whose last instruction does not fall through) made only of `nop`s or
//! `int3`s, into which nothing branches: no code ever runs there, so five
//! of its bytes may hold the long jump. A `jmp rel8` reaches 128 bytes
//! back and 127 forward from the end of the jump.
//!
//! Addresses here are the module file's own; the caller reads code and
//! knows what the tool already wrote.

use crate::discover::FunctionEntry;
use crate::relocate::{BranchTargets, JUMP_LEN};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Mnemonic};

/// The length of the `jmp rel8` written over the entry.
pub const SHORT_JUMP_LEN: u64 = 2;

/// The longest function whose last instruction is checked for falling
/// through into the padding after it (longer ones are not decoded: the
/// padding after them is not used).
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
    let (lowest, highest) = (from.saturating_sub(128), from.saturating_add(127));
    // The gaps that may hold a stub start past the function starting at or
    // before the lowest stub address, and end before the highest's end.
    let first = functions.partition_point(|f| f.address <= lowest).saturating_sub(1);
    for pair in functions[first..].windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if before.address > highest {
            break;
        }
        let gap = (before.address.saturating_add(before.size), after.address);
        let low = gap.0.max(lowest);
        let high = gap.1.min(highest.saturating_add(JUMP_LEN));
        if before.size == 0 || high < low.saturating_add(JUMP_LEN) {
            continue;
        }
        if !is_padding(before, gap, functions, targets, &read) {
            continue;
        }
        if let Some(stub) = (low..=high - JUMP_LEN).find(|&s| !taken(s, s + JUMP_LEN)) {
            return Some(stub);
        }
    }
    None
}

/// Whether the gap (`start`, `end`) after function `before` is padding
/// that never runs: no function covers it, it holds only `nop`s and
/// `int3`s, nothing branches into it, and `before` does not fall into it.
fn is_padding(
    before: &FunctionEntry,
    (start, end): (u64, u64),
    functions: &[FunctionEntry],
    targets: &BranchTargets,
    read: impl Fn(u64, u64) -> Option<Vec<u8>>,
) -> bool {
    let covered = functions.iter().any(|f| f.address < end && f.address.saturating_add(f.size) > start);
    if covered || targets.into_range(start.saturating_sub(1), end).is_some() {
        return false;
    }
    let Some(gap) = read(start, end - start) else { return false };
    let filler = Decoder::with_ip(64, &gap, start, DecoderOptions::NONE)
        .into_iter()
        .all(|i| matches!(i.mnemonic(), Mnemonic::Nop | Mnemonic::Int3));
    filler && gap.len() as u64 == end - start && ends_without_falling_through(before, &read)
}

/// Whether the last instruction of `function` (decoded from its entry)
/// ends exactly at its end and never goes on to the next byte: a return,
/// a jump or an undefined instruction. A function that falls through into
/// the padding after it (hand-written code that enters the next function
/// so) or ends with a call (which could return there) does not.
fn ends_without_falling_through(function: &FunctionEntry, read: impl Fn(u64, u64) -> Option<Vec<u8>>) -> bool {
    if function.size > MAX_DECODED {
        return false;
    }
    let Some(code) = read(function.address, function.size) else { return false };
    if code.len() as u64 != function.size {
        return false;
    }
    let Some(last) = Decoder::with_ip(64, &code, function.address, DecoderOptions::NONE).into_iter().last() else {
        return false;
    };
    let leaves = matches!(
        last.flow_control(),
        FlowControl::Return | FlowControl::UnconditionalBranch | FlowControl::IndirectBranch | FlowControl::Exception
    );
    leaves && !last.is_invalid() && last.next_ip() == function.address + function.size
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(address: u64, size: u64) -> FunctionEntry {
        FunctionEntry { name: format!("{address:#x}"), address, size }
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
        // A function of unknown size before the gap, or one covering it.
        let mut unknown = functions();
        unknown[0].size = 0;
        assert_eq!(find_stub(0x1010, &unknown, &none, reader(&code), free), None);
        let covering = [function(0x0ff0, 0x20), function(0x1000, 7), function(0x1010, 4)];
        assert_eq!(find_stub(0x1010, &covering, &none, reader(&code), free), None);
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
