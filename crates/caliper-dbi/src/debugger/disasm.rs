//! Disassembly for `cdb`: instructions in Intel syntax, the layout of a
//! trampoline (the probe, the moved entry instructions, the jump back),
//! where in that layout an address falls, and a function's original and
//! instrumented code side by side.

use iced_x86::{Decoder, DecoderOptions, FlowControl, Formatter, Instruction, IntelFormatter, Mnemonic};

/// Decodes every whole instruction of `code` (at address `ip`).
pub fn decode(code: &[u8], ip: u64) -> Vec<Instruction> {
    Decoder::with_ip(64, code, ip, DecoderOptions::NONE).into_iter().filter(|i| !i.is_invalid()).collect()
}

/// `0xADDR  mnemonic operands`.
pub fn format(insn: &Instruction) -> String {
    let mut formatter = IntelFormatter::new();
    let options = formatter.options_mut();
    options.set_hex_prefix("0x");
    options.set_hex_suffix("");
    options.set_uppercase_hex(false);
    options.set_space_after_operand_separator(true);
    options.set_branch_leading_zeros(false);
    let mut text = String::new();
    formatter.format(insn, &mut text);
    format!("{:#x}  {text}", insn.ip())
}

/// Code the engine wrote to run a function's entry elsewhere: a
/// trampoline (probe, moved instructions, jump back, and for an arc
/// probe, the rest of the probe after the jump back) or the moved copy of
/// a breakpoint's instruction (no probe).
#[derive(Debug, Clone)]
pub struct Layout {
    /// Every instruction in address order: the probe's head, the moved
    /// ones, the jump back, the probe's tail.
    pub instructions: Vec<Instruction>,
    /// How many come first as the probe's head.
    pub probe: usize,
    /// The jump back's index.
    pub back: usize,
}

/// The most instructions of a probe's tail.
const MAX_TAIL: usize = 32;

impl Layout {
    /// Decodes the code at `at` (`code` its bytes, maybe more than it
    /// needs) that runs `moved` instructions of the entry and jumps back
    /// to `back`; None if no such jump follows them. Where the probe
    /// branches past the jump back, the code there up to its last jump is
    /// the probe's tail.
    pub fn decode(code: &[u8], at: u64, moved: usize, back: u64) -> Option<Layout> {
        let jumps_back = |insn: &Instruction| {
            insn.flow_control() == FlowControl::UnconditionalBranch && insn.near_branch_target() == back
        };
        let mut instructions = Vec::new();
        let mut decoder = Decoder::with_ip(64, code, at, DecoderOptions::NONE);
        for insn in &mut decoder {
            if insn.is_invalid() {
                return None;
            }
            instructions.push(insn);
            if jumps_back(&insn) && instructions.len() > moved {
                break;
            }
        }
        let back_index = instructions.len().checked_sub(1)?;
        let jump_back = instructions[back_index];
        let probe = back_index.checked_sub(moved).filter(|_| jumps_back(&jump_back))?;
        // A jump (not a call: the arc routine lies elsewhere) past the jump back.
        let past = |insn: &Instruction| {
            let jump = matches!(insn.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch);
            Some(insn.near_branch_target()).filter(|&t| jump && t >= jump_back.next_ip())
        };
        if let Some(mut reach) = instructions[..probe].iter().filter_map(past).max() {
            loop {
                let insn = decoder.decode();
                if insn.is_invalid() || instructions.len() > back_index + MAX_TAIL {
                    return None;
                }
                instructions.push(insn);
                reach = past(&insn).map_or(reach, |t| t.max(reach));
                let ends = matches!(insn.flow_control(), FlowControl::UnconditionalBranch | FlowControl::Return);
                if ends && insn.next_ip() > reach {
                    break;
                }
            }
        }
        Some(Layout { instructions, probe, back: back_index })
    }

    /// The first address past the code.
    pub fn end(&self) -> u64 {
        self.instructions.last().map_or(0, |i| i.next_ip())
    }

    /// The moved instructions, as they are encoded here.
    pub fn moved(&self) -> &[Instruction] {
        &self.instructions[self.probe..self.back]
    }

    /// The probe's tail: its instructions after the jump back.
    pub fn tail(&self) -> &[Instruction] {
        &self.instructions[self.back + 1..]
    }

    /// Whether the instruction at `index` is the probe's.
    fn in_probe(&self, index: usize) -> bool {
        index < self.probe || index > self.back
    }

    /// The bytes the probe has pushed below the return address at each of
    /// its instructions (None for the others), found along its branches
    /// (the arc probe saves RAX and RCX, and RAX around its call of the arc
    /// routine; a call returns to the next instruction with the stack as it
    /// was).
    fn probe_depths(&self) -> Vec<Option<u64>> {
        let index_of = |ip: u64| self.instructions.iter().position(|i| i.ip() == ip);
        let mut depths = vec![None; self.instructions.len()];
        let mut work = vec![(0, 0u64)];
        while let Some((n, depth)) = work.pop() {
            if !self.in_probe(n) || depths.get(n).is_none_or(Option::is_some) {
                continue;
            }
            let insn = &self.instructions[n];
            depths[n] = Some(depth);
            let after = match insn.mnemonic() {
                Mnemonic::Push => depth + 8,
                Mnemonic::Pop => depth.saturating_sub(8),
                _ => depth,
            };
            let target = index_of(insn.near_branch_target());
            match insn.flow_control() {
                FlowControl::UnconditionalBranch => work.extend(target.map(|t| (t, after))),
                FlowControl::ConditionalBranch => {
                    work.extend(target.map(|t| (t, after)).into_iter().chain([(n + 1, after)]))
                }
                _ => work.push((n + 1, after)),
            }
        }
        depths
    }

    /// Where `pc` falls in the code.
    pub fn place(&self, pc: u64) -> Option<Place> {
        let index = self.instructions.iter().position(|i| i.ip() == pc)?;
        Some(if self.in_probe(index) {
            Place::Probe { stack_adjust: self.probe_depths()[index].unwrap_or(0) }
        } else if index < self.back {
            Place::Moved(index - self.probe)
        } else {
            Place::JumpBack
        })
    }
}

/// Where an address falls in a [`Layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the probe, with this many bytes pushed since the entry.
    Probe { stack_adjust: u64 },
    /// At the n-th moved instruction (the entry's n-th).
    Moved(usize),
    /// At the jump back into the function.
    JumpBack,
}

/// One row of a side-by-side listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub original: String,
    pub instrumented: String,
}

/// A function's `original` instructions beside what runs instead: the
/// `entry` as it is now (a description of its first bytes), then the
/// code that runs the moved instructions (`elsewhere`), if any, and the
/// rest of the function, unchanged.
pub fn side_by_side(original: &[Instruction], entry: &str, elsewhere: Option<&Layout>) -> Vec<Row> {
    let row = |original: String, instrumented: String| Row { original, instrumented };
    let mut rows = vec![row("original code".into(), "instrumented code".into()), row(String::new(), entry.into())];
    let mut unchanged = original;
    if let Some(layout) = elsewhere {
        for insn in &layout.instructions[..layout.probe] {
            rows.push(row(String::new(), format!("{}    ; probe", format(insn))));
        }
        for (moved, insn) in layout.moved().iter().enumerate() {
            rows.push(row(original.get(moved).map(format).unwrap_or_default(), format(insn)));
        }
        let back = &layout.instructions[layout.back];
        rows.push(row(String::new(), format!("{}    ; back into the function", format(back))));
        for insn in layout.tail() {
            rows.push(row(String::new(), format!("{}    ; probe", format(insn))));
        }
        unchanged = original.get(layout.moved().len()..).unwrap_or_default();
    }
    rows.extend(unchanged.iter().map(|insn| row(format(insn), "(unchanged)".into())));
    rows
}

/// The rows as text, the original code in a column of its own width.
pub fn render(rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.original.len()).max().unwrap_or(0) + 4;
    rows.iter().map(|r| format!("{:width$}{}", r.original, r.instrumented).trim_end().to_string() + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relocate::{self, JUMP_LEN, Probe};

    /// push rbp; mov rbp,rsp; sub rsp,0x10; ret at 0x1000.
    const ENTRY: [u8; 9] = [0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc3];

    #[test]
    fn finds_the_probe_the_moved_instructions_and_the_jump_back() {
        let moved = relocate::entry_instructions(&ENTRY, 0x1000, JUMP_LEN).unwrap();
        let at = 0x7000_0000;
        let built = relocate::build(
            at,
            Probe::Count { counter: 0x7000_2000, increment: relocate::Increment::Unlocked },
            &moved,
            0x1008,
        )
        .unwrap();
        let mut code = built.code.clone();
        code.extend([0xcc; 32]);
        let layout = Layout::decode(&code, at, moved.len(), 0x1008).expect("layout");
        assert_eq!(layout.probe, 1);
        assert_eq!(layout.moved().len(), 3);
        assert_eq!(layout.end(), at + built.code.len() as u64);
        let first_moved = layout.moved()[0].ip();
        assert_eq!(layout.place(at), Some(Place::Probe { stack_adjust: 0 }));
        assert_eq!(layout.place(first_moved), Some(Place::Moved(0)));
        assert_eq!(layout.place(layout.instructions.last().unwrap().ip()), Some(Place::JumpBack));
        assert_eq!(layout.place(at + 1), None, "not an instruction boundary");
        assert!(Layout::decode(&code, at, moved.len(), 0x2000).is_none(), "no jump back there");
    }

    #[test]
    fn counts_what_the_arc_probe_pushed() {
        let moved = relocate::entry_instructions(&ENTRY, 0x1000, JUMP_LEN).unwrap();
        let at = 0x7000_0000;
        let arc = relocate::ArcProbe { id: 3, routine: 0x7000_8000, table: 0x7100_0000 };
        let probe = Probe::Arcs { counter: 0x7000_2000, arc, increment: relocate::Increment::Locked };
        let built = relocate::build(at, probe, &moved, 0x1008).unwrap();
        let mut code = built.code.clone();
        code.extend([0x90; 32]);
        let layout = Layout::decode(&code, at, moved.len(), 0x1008).unwrap();
        // inc; the arc head: RAX and RCX saved, popped on the hit path into
        // the moved instructions; after the jump back, the tail: RCX popped
        // first on the slow path, RAX around the routine's call.
        assert_eq!((layout.probe, layout.back, layout.tail().len()), (19, 22, 11));
        assert_eq!(layout.end(), at + built.code.len() as u64, "the whole trampoline");
        let depth = |n: usize| match layout.place(layout.instructions[n].ip()) {
            Some(Place::Probe { stack_adjust }) => stack_adjust,
            other => panic!("{other:?}"),
        };
        let head: Vec<u64> = (0..19).map(depth).collect();
        let mut expected = vec![0, 0, 8];
        expected.extend([16; 15]);
        expected.push(8);
        assert_eq!(head, expected);
        assert_eq!(layout.place(layout.instructions[19].ip()), Some(Place::Moved(0)));
        assert_eq!(layout.place(layout.instructions[22].ip()), Some(Place::JumpBack));
        let tail: Vec<u64> = (23..34).map(depth).collect();
        assert_eq!(tail, [16, 16, 16, 16, 16, 16, 16, 8, 8, 8, 0]);
    }

    #[test]
    fn lines_up_original_and_moved_instructions() {
        let original = decode(&ENTRY, 0x1000);
        let moved = relocate::entry_instructions(&ENTRY, 0x1000, JUMP_LEN).unwrap();
        let built = relocate::build(
            0x7000_0000,
            Probe::Count { counter: 0x7000_2000, increment: relocate::Increment::Locked },
            &moved,
            0x1008,
        )
        .unwrap();
        let layout = Layout::decode(&built.code, 0x7000_0000, moved.len(), 0x1008).unwrap();
        let rows = side_by_side(&original, "0x1000  jmp 0x70000000", Some(&layout));
        let text = render(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("original code") && lines[0].ends_with("instrumented code"));
        let column = lines[0].find("instrumented").unwrap();
        assert_eq!(&lines[1][column..], "0x1000  jmp 0x70000000", "in the right column");
        assert!(lines[2][column..].starts_with("0x70000000  lock inc qword ptr [") && lines[2].ends_with("; probe"));
        assert!(lines[3].starts_with("0x1000  push rbp") && lines[3].ends_with("push rbp"), "{text}");
        assert!(lines[5].starts_with("0x1004  sub rsp, 0x10") && lines[5].ends_with("sub rsp, 0x10"), "{text}");
        assert_eq!(&lines[6][column..], "0x70000010  jmp 0x1008    ; back into the function", "{text}");
        assert!(lines[7].starts_with("0x1008  ret") && lines[7].ends_with("(unchanged)"), "{text}");
        assert_eq!(lines.len(), 8);
    }
}
