//! The commands that only look: where a thread is and what the
//! instrumentation made of the code there, the call chain, registers,
//! memory, the side-by-side disassembly, the instrumented functions and
//! the threads.

use super::super::Engine;
use crate::debugger::command::{AddressExpr, Base, Format, Unit};
use crate::debugger::disasm::{self, Layout, Place};
use crate::filter;
use crate::image::{Image, LoadedModule, ProbeState};
use crate::ptrace::{self, Pid};
use crate::results;

/// The most bytes of a function `disassemble` shows.
const MAX_LISTING: u64 = 4096;
/// What `disassemble` shows of a function whose size is not known.
const UNKNOWN_SIZE_LISTING: u64 = 64;

/// Code of the tool's that runs a function's entry elsewhere.
struct Moved {
    entry: u64,
    layout: Layout,
    /// The entry's original instructions that it runs.
    original: Vec<iced_x86::Instruction>,
    trampoline: bool,
}

impl Engine {
    /// Where thread `tid` is, and the instrumentation there, as lines.
    pub(super) fn describe_thread(&self, tid: Pid) -> String {
        let Some(image_id) = self.image_of(tid) else { return format!("thread {tid} (no process)\n") };
        let Ok(regs) = ptrace::registers(tid) else { return format!("thread {tid} (cannot read its registers)\n") };
        let image = &self.images[&image_id];
        let mut text = format!("thread {tid} at {}\n", self.describe_address(image_id, regs.rip));
        let entry = match image.function_at(regs.rip) {
            Some((module, f)) => Some(f.address.wrapping_add(module.bias)),
            None => moved_code_at(image, regs.rip).map(|m| m.entry),
        };
        if let Some((entry, state)) = entry.and_then(|e| Some((e, self.entry_state(image, e)?))) {
            let name = image.function_at(entry).map_or_else(|| format!("{entry:#x}"), |(_, f)| f.name.to_string());
            text += &format!("  {name}: {state}\n");
        }
        if let Some(entry) = image.patched_entry_covering(regs.rip).filter(|&e| e != regs.rip) {
            text += &format!(
                "  inside the bytes that the jump to a trampoline replaced at {}: the program came here \
                 other than through the entry\n",
                self.describe_address(image_id, entry)
            );
        }
        text
    }

    /// `0xADDR in f+0xOFF (file)`, or where in the tool's code it is.
    pub(super) fn describe_address(&self, image_id: usize, addr: u64) -> String {
        let Some(image) = self.images.get(&image_id) else { return format!("{addr:#x}") };
        if let Some(name) = symbol(image, addr) {
            return format!("{addr:#x} in {name}");
        }
        let Some(moved) = moved_code_at(image, addr) else { return format!("{addr:#x} (in no module)") };
        let function = symbol(image, moved.entry).unwrap_or_else(|| format!("{:#x}", moved.entry));
        let what = if moved.trampoline { "trampoline" } else { "moved entry instruction of the breakpoint" };
        let place = match moved.layout.place(addr) {
            Some(Place::Probe { .. }) => "the probe".to_string(),
            Some(Place::Moved(n)) => match moved.original.get(n) {
                Some(insn) => format!("the instruction moved from {}", symbol_or_address(image, insn.ip())),
                None => "a moved instruction".into(),
            },
            Some(Place::JumpBack) => "the jump back into the function".into(),
            None => "inside an instruction".into(),
        };
        format!("{addr:#x} in the {what} of {function}: {place}")
    }

    /// What the engine made of the function entry at `entry`.
    fn entry_state(&self, image: &Image, entry: u64) -> Option<String> {
        let probe = image.probes.get(&entry)?;
        let record = probe.function.map(|f| &self.functions.records[f]);
        let mut state = match (&probe.state, record) {
            (ProbeState::Armed, _) => "not called yet (the engine's int3 at its entry)".to_string(),
            (ProbeState::Patched(patch), _) => format!("trampoline at {:#x}", patch.trampoline),
            (ProbeState::Displaced { resume }, Some(r)) => {
                format!("{}, resumed through the moved first instruction at {resume:#x}", results::instrumentation(r))
            }
            (ProbeState::Displaced { resume }, None) => {
                format!("int3, resumed through the moved first instruction at {resume:#x}")
            }
            (ProbeState::Removed, Some(r)) => results::instrumentation(r).into_owned(),
            (ProbeState::Removed, None) => "original code".into(),
        };
        if probe.user_break {
            state += "; a breakpoint of yours";
        }
        Some(state)
    }

    pub(super) fn backtrace(&mut self) -> String {
        let tid = self.debugger_state().current;
        let (Some(image_id), Ok(regs)) = (self.image_of(tid), ptrace::registers(tid)) else {
            return "error: cannot read the thread\n".into();
        };
        let image = &self.images[&image_id];
        let memory = &image.memory;
        let state = self.debugger.as_mut().expect("a debugger");
        let files = state.tables.code_files(image.pid, &image.modules);
        let frames = state.tables.backtrace(
            &files,
            (regs.rip, regs.rsp, regs.rbp),
            |a| memory.read_u64(a).ok(),
            |a| stands_for(image, a),
        );
        let mut text = String::new();
        for (n, frame) in frames.iter().enumerate() {
            // A return address names its caller by the call before it.
            let looked_up = frame.stands_for.unwrap_or(frame.address).wrapping_sub(u64::from(n > 0));
            let name = symbol(image, looked_up)
                .or_else(|| {
                    files.iter().find(|f| (f.low..f.high).contains(&looked_up)).map(|f| f.offset_name(looked_up))
                })
                .unwrap_or_else(|| "??".into());
            text += &format!("#{n:<2} {:#x} in {name}", frame.address);
            if frame.stands_for.is_some() {
                text += &format!("    [{}]", self.describe_address(image_id, frame.address));
            }
            text += "\n";
        }
        text
    }

    pub(super) fn registers(&mut self) -> String {
        let tid = self.debugger_state().current;
        let Ok(r) = ptrace::registers(tid) else { return "error: cannot read the registers\n".into() };
        let mut text = String::new();
        for (name, value) in register_list(&r) {
            text += &format!("{name:<8} {value:#018x}  {}\n", value as i64);
        }
        if let Some(image_id) = self.image_of(tid) {
            text += &format!("rip is at {}\n", self.describe_address(image_id, r.rip));
        }
        text
    }

    pub(super) fn examine(&mut self, count: usize, format: Format, at: &AddressExpr) -> String {
        let tid = self.debugger_state().current;
        let Some(image_id) = self.image_of(tid) else { return "error: no process\n".into() };
        let image = &self.images[&image_id];
        let base = match &at.base {
            Base::Number(n) => *n,
            Base::Register(name) => {
                let Ok(r) = ptrace::registers(tid) else { return "error: cannot read the registers\n".into() };
                let aliases = [("pc", "rip"), ("sp", "rsp"), ("fp", "rbp")];
                let name = aliases.iter().find(|a| a.0 == name).map_or(name.as_str(), |a| a.1);
                match register_list(&r).into_iter().find(|(n, _)| *n == name) {
                    Some((_, value)) => value,
                    None => return format!("error: no register `${name}`\n"),
                }
            }
            Base::Function(name) => match super::function_entries(image, name).first() {
                Some(&entry) => entry,
                None => return format!("error: no function `{name}` in the loaded modules\n"),
            },
        };
        let addr = base.wrapping_add_signed(at.offset);
        let unit = match format {
            Format::Instructions => {
                let mut code = vec![0u8; count * 15];
                let n = image.memory.read_partial(addr, &mut code).unwrap_or(0);
                let text: String =
                    disasm::decode(&code[..n], addr).iter().take(count).map(|i| disasm::format(i) + "\n").collect();
                return if text.is_empty() { format!("error: cannot read memory at {addr:#x}\n") } else { text };
            }
            Format::Hex(unit) | Format::Decimal(unit) => unit,
        };
        let size = unit as usize;
        let mut bytes = vec![0u8; count * size];
        let n = image.memory.read_partial(addr, &mut bytes).unwrap_or(0);
        if n < size {
            return format!("error: cannot read memory at {addr:#x}\n");
        }
        let per_line = 16 / size;
        let mut text = String::new();
        for (i, chunk) in bytes[..n - n % size].chunks(size).enumerate() {
            if i % per_line == 0 {
                text += &format!("{}{:#x}:", if i == 0 { "" } else { "\n" }, addr + (i * size) as u64);
            }
            let mut word = [0u8; 8];
            word[..size].copy_from_slice(chunk);
            let value = u64::from_le_bytes(word);
            text += &match format {
                Format::Decimal(_) => format!(" {}", sign_extend(value, unit)),
                _ => format!(" {value:#0width$x}", width = 2 + 2 * size),
            };
        }
        text + "\n"
    }

    pub(super) fn disassemble(&mut self, name: Option<&str>) -> String {
        let tid = self.debugger_state().current;
        let Some(image_id) = self.image_of(tid) else { return "error: no process\n".into() };
        let image = &self.images[&image_id];
        let found = match name {
            Some(name) => super::function_entries(image, name).first().and_then(|&e| image.function_at(e)),
            None => ptrace::registers(tid).ok().and_then(|r| {
                image.function_at(r.rip).or_else(|| image.function_at(moved_code_at(image, r.rip)?.entry))
            }),
        };
        let Some((module, f)) = found else {
            return match name {
                Some(name) => format!("error: no function `{name}` in the loaded modules\n"),
                None => "error: the thread is in no known function; name one\n".into(),
            };
        };
        let entry = f.address.wrapping_add(module.bias);
        let size = if f.size == 0 { UNKNOWN_SIZE_LISTING } else { f.size.min(MAX_LISTING) };
        let Ok(mut code) = image.original_code(entry, size as usize) else {
            return format!("error: cannot read {}\n", f.name);
        };
        code.truncate(size as usize);
        let original = disasm::decode(&code, entry);
        let state = self.entry_state(image, entry).unwrap_or_else(|| "not instrumented".into());
        let mut text = format!(
            "{} in {} ({entry:#x}, {}): {state}\n",
            f.name,
            module.path,
            if f.size == 0 { format!("size unknown, first {size} bytes") } else { format!("{} bytes", f.size) }
        );
        if f.size > MAX_LISTING {
            text += &format!("(the first {MAX_LISTING} bytes)\n");
        }
        let moved = image.probes.get(&entry).and_then(|p| match &p.state {
            ProbeState::Patched(patch) => moved_code(image, entry, patch.trampoline),
            ProbeState::Displaced { resume } => moved_code(image, entry, *resume),
            _ => None,
        });
        let now = entry_now(image, entry, moved.as_ref());
        text + &disasm::render(&disasm::side_by_side(&original, &now, moved.as_ref().map(|m| &m.layout)))
    }

    pub(super) fn list_instrumented(&mut self, pattern: Option<&str>) -> String {
        let tid = self.debugger_state().current;
        let Some(image_id) = self.image_of(tid) else { return "error: no process\n".into() };
        let image = &self.images[&image_id];
        let counters = self.counters.read_all().unwrap_or_default();
        let mut probes: Vec<(u64, usize)> =
            image.probes.iter().filter_map(|(&addr, p)| Some((addr, p.function?))).collect();
        probes.sort_unstable();
        let (mut shown, mut not_hit) = (0, 0);
        let mut text = String::new();
        for (addr, f) in probes {
            let record = &self.functions.records[f];
            let armed = matches!(image.probes[&addr].state, ProbeState::Armed);
            let selected = match pattern {
                Some(p) => filter::glob(p, record.name()),
                None => !armed,
            };
            not_hit += usize::from(armed && pattern.is_none());
            if !selected {
                continue;
            }
            shown += 1;
            let file = record.module.rsplit('/').next().unwrap_or(&record.module);
            let state = self.entry_state(image, addr).unwrap_or_default();
            let calls = self.functions.calls(f, &counters);
            text += &format!("{addr:#x}  {} ({file})  calls {calls}  {state}\n", record.name());
        }
        match (shown, pattern) {
            (0, Some(p)) => text += &format!("No instrumented function matches `{p}`.\n"),
            (_, None) => {
                text += &format!("{shown} functions called so far; {not_hit} more instrumented, not called yet.\n")
            }
            _ => {}
        }
        text
    }

    /// The threads of the stopped thread's process, numbered from 1.
    fn numbered_threads(&mut self) -> Vec<Pid> {
        let stopped = self.debugger_state().stopped;
        let pid = self.threads.get(&stopped).map_or(stopped, |t| t.pid);
        let mut tids: Vec<Pid> = self.threads.iter().filter(|(_, t)| t.pid == pid).map(|(&tid, _)| tid).collect();
        tids.sort_unstable();
        tids
    }

    pub(super) fn list_threads(&mut self) -> String {
        let current = self.debugger_state().current;
        let held: Vec<Pid> = self.debugger_state().held.clone();
        let stopped = self.debugger_state().stopped;
        let mut text = String::new();
        for (n, tid) in self.numbered_threads().into_iter().enumerate() {
            let mark = if tid == current { '*' } else { ' ' };
            let place = if tid == stopped || held.contains(&tid) {
                self.describe_thread(tid).lines().next().unwrap_or_default().to_string()
            } else if self.pending.iter().any(|(t, _)| *t == tid) {
                format!("thread {tid} (stopped at an event the engine handles when the program goes on)")
            } else {
                format!("thread {tid} (not stopped)")
            };
            text += &format!("{mark} {}  {place}\n", n + 1);
        }
        text
    }

    pub(super) fn select_thread(&mut self, n: usize) -> String {
        let tids = self.numbered_threads();
        let Some(&tid) = n.checked_sub(1).and_then(|i| tids.get(i)) else {
            return format!("error: no thread {n} (info threads lists them)\n");
        };
        let state = self.debugger_state();
        if tid != state.stopped && !state.held.contains(&tid) {
            return format!("error: thread {n} is not stopped\n");
        }
        state.current = tid;
        self.describe_thread(tid)
    }
}

/// `f+0xOFF (file)` for an address in a module's function.
fn symbol(image: &Image, addr: u64) -> Option<String> {
    let (module, f): (&LoadedModule, _) = image.function_at(addr)?;
    let offset = addr.wrapping_sub(module.bias).wrapping_sub(f.address);
    let file = module.path.rsplit('/').next().unwrap_or(&module.path);
    Some(format!("{}+{offset:#x} ({file})", f.name))
}

fn symbol_or_address(image: &Image, addr: u64) -> String {
    symbol(image, addr).unwrap_or_else(|| format!("{addr:#x}"))
}

/// The program's instruction that the tool's code at `addr` runs for (a
/// moved instruction's original, the entry for the probe, the
/// continuation for the jump back), and the bytes the probe pushed.
pub(in crate::engine) fn stands_for(image: &Image, addr: u64) -> Option<(u64, u64)> {
    let moved = moved_code_at(image, addr)?;
    Some(match moved.layout.place(addr)? {
        Place::Probe { stack_adjust } => (moved.entry, stack_adjust),
        Place::Moved(n) => (moved.original.get(n)?.ip(), 0),
        Place::JumpBack => (moved.original.last()?.next_ip(), 0),
    })
}

/// The code of the tool's that runs the entry at `entry`, at `at`.
fn moved_code(image: &Image, entry: u64, at: u64) -> Option<Moved> {
    let probe = image.probes.get(&entry)?;
    let (original, trampoline) = match &probe.state {
        ProbeState::Patched(patch) => (disasm::decode(&patch.original, entry), true),
        ProbeState::Displaced { .. } => {
            (disasm::decode(&image.original_code(entry, 16).ok()?, entry).into_iter().take(1).collect(), false)
        }
        _ => return None,
    };
    let back = original.last()?.next_ip();
    let mut code = vec![0u8; 1024];
    let n = image.memory.read_partial(at, &mut code).ok()?;
    let layout = Layout::decode(&code[..n], at, original.len(), back)?;
    Some(Moved { entry, layout, original, trampoline })
}

/// The code of the tool's that holds `pc`, if any: of the trampolines
/// and moved instructions in place, the last to start at or before it.
fn moved_code_at(image: &Image, pc: u64) -> Option<Moved> {
    let (entry, at) = image
        .probes
        .iter()
        .filter_map(|(&entry, p)| match &p.state {
            ProbeState::Patched(patch) => Some((entry, patch.trampoline)),
            ProbeState::Displaced { resume } => Some((entry, *resume)),
            _ => None,
        })
        .filter(|&(_, at)| at <= pc)
        .max_by_key(|&(_, at)| at)?;
    moved_code(image, entry, at).filter(|m| pc < m.layout.end())
}

/// The entry's first bytes as they are now, for the listing.
fn entry_now(image: &Image, entry: u64, moved: Option<&Moved>) -> String {
    let Some(probe) = image.probes.get(&entry) else { return "(not instrumented)".into() };
    let yours = if probe.user_break { " (a breakpoint of yours)" } else { "" };
    match (&probe.state, moved) {
        (ProbeState::Patched(patch), _) => {
            let trampoline = patch.trampoline;
            match patch.stub {
                Some(stub) => {
                    let int3 = if probe.user_break { "int3 over " } else { "" };
                    format!(
                        "{entry:#x}  {int3}jmp {stub:#x}    ; to padding that jumps to the trampoline {trampoline:#x}"
                    )
                }
                None if probe.user_break => {
                    format!("{entry:#x}  int3 over jmp {trampoline:#x}    ; a breakpoint of yours, then the trampoline")
                }
                None => format!("{entry:#x}  jmp {trampoline:#x}    ; to the trampoline"),
            }
        }
        (ProbeState::Displaced { resume }, _) => {
            format!("{entry:#x}  int3{yours}    ; counted by the tool, resumed at {resume:#x}")
        }
        (ProbeState::Armed, _) => format!("{entry:#x}  int3{yours}    ; the first call instruments it"),
        (ProbeState::Removed, _) => "(the original code: the int3 was removed)".into(),
    }
}

fn sign_extend(value: u64, unit: Unit) -> i64 {
    let shift = 64 - 8 * unit as u32;
    ((value << shift) as i64) >> shift
}

/// The general registers by name.
fn register_list(r: &libc::user_regs_struct) -> Vec<(&'static str, u64)> {
    vec![
        ("rax", r.rax),
        ("rbx", r.rbx),
        ("rcx", r.rcx),
        ("rdx", r.rdx),
        ("rsi", r.rsi),
        ("rdi", r.rdi),
        ("rbp", r.rbp),
        ("rsp", r.rsp),
        ("r8", r.r8),
        ("r9", r.r9),
        ("r10", r.r10),
        ("r11", r.r11),
        ("r12", r.r12),
        ("r13", r.r13),
        ("r14", r.r14),
        ("r15", r.r15),
        ("rip", r.rip),
        ("eflags", r.eflags),
        ("cs", r.cs),
        ("ss", r.ss),
        ("ds", r.ds),
        ("es", r.es),
        ("fs", r.fs),
        ("gs", r.gs),
        ("fs_base", r.fs_base),
        ("gs_base", r.gs_base),
        ("orig_rax", r.orig_rax),
    ]
}
