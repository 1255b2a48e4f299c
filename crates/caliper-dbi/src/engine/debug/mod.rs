//! `cdb`'s stops and the commands that move the program: the engine
//! calls the `debug_*` hooks at a few points of its loop (a breakpoint of
//! the user's hit, a fatal signal, an instrumentation failure), and the
//! prompt runs there, with every thread of the stopped address space
//! held, until a command lets the program go on.
//!
//! A breakpoint of the user's is an `int3` the engine keeps whatever it
//! makes of the address ([`crate::image::Image::set_user_break`]), so a
//! stop at an instrumented function's entry works whether the entry holds
//! the engine's `int3`, a jump to a trampoline or the original bytes. A
//! thread that goes on from an `int3` of the tool's first does what the
//! engine does there (counts, instruments, or moves it to the trampoline),
//! so a single step at an instrumented entry continues in the trampoline.

mod inspect;

pub(super) use inspect::stands_for;

use super::{Engine, StartError};
use crate::debugger::DebugConfig;
use crate::debugger::command::{self, Command, HELP, Location};
use crate::debugger::console::Console;
use crate::debugger::disasm;
use crate::debugger::unwind::UnwindTables;
use crate::image::{Image, ProbeState};
use crate::ptrace::{self, Pid, Status};
use iced_x86::FlowControl;
use std::collections::HashMap;

/// What a breakpoint is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Set by `break`.
    User,
    /// The program's entry, where `cali-run debug` first stops.
    Entry,
    /// After a call that `nexti` steps over.
    StepOver,
}

#[derive(Debug)]
struct Breakpoint {
    number: usize,
    kind: Kind,
    /// What the user asked for: a function or `*ADDRESS`.
    what: String,
    addrs: Vec<u64>,
    hits: u64,
}

/// The debugger's state between stops.
pub(super) struct Debugger {
    console: Console,
    interactive: bool,
    breakpoints: Vec<Breakpoint>,
    next_number: usize,
    /// The thread that stopped, and the one commands look at.
    stopped: Pid,
    current: Pid,
    /// The other threads of the address space, held while stopped.
    held: Vec<Pid>,
    /// The signal a thread stopped with, delivered when it goes on.
    signals: HashMap<Pid, i32>,
    /// An instrumentation failure to stop at.
    failure: Option<String>,
    /// The last stepping command, which an empty line repeats.
    last_step: Option<Command>,
    tables: UnwindTables,
}

/// What the prompt does after a command.
enum Flow {
    Stay,
    Leave,
}

/// Fatal signals that stop the program at the prompt (its own `SIGTRAP`
/// too: the engine's are handled before).
const STOPPING_SIGNALS: [i32; 6] =
    [libc::SIGSEGV, libc::SIGILL, libc::SIGBUS, libc::SIGFPE, libc::SIGABRT, libc::SIGTRAP];

impl Debugger {
    /// The debugger a run asks for; a socket that cannot be made stops the run.
    pub(super) fn open(config: &DebugConfig) -> Result<Debugger, StartError> {
        let console = match &config.socket {
            Some(path) => {
                Console::listen(path).map_err(|e| StartError(format!("cannot listen on {}: {e}", path.display())))?
            }
            None => Console::Terminal,
        };
        Ok(Debugger {
            console,
            interactive: config.interactive,
            breakpoints: Vec::new(),
            next_number: 1,
            stopped: 0,
            current: 0,
            held: Vec::new(),
            signals: HashMap::new(),
            failure: None,
            last_step: None,
            tables: UnwindTables::default(),
        })
    }
}

impl Engine {
    /// With `cali-run debug`, a stop at the entry of the program that
    /// process `pid` has just started (its libraries are loaded by then).
    pub(super) fn debug_stop_at_entry(&mut self, pid: Pid) {
        if !self.debugger.as_ref().is_some_and(|s| s.interactive) {
            return;
        }
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        let Some(image) = self.processes.get(&pid).and_then(|p| self.images.get_mut(&p.image)) else { return };
        let Some(entry) = image.modules.iter().find(|m| exe.as_os_str() == &*m.path).map(|m| m.info.entry + m.bias)
        else {
            eprintln!("== CALIPER: cali-run: cannot find the program's entry; it runs until a breakpoint or a fault");
            return;
        };
        match image.set_user_break(entry) {
            Ok(()) => {
                self.add_breakpoint(Kind::Entry, "the program's entry".into(), vec![entry]);
            }
            Err(e) => eprintln!("== CALIPER: cali-run: cannot stop at the program's entry: {e}"),
        }
    }

    /// A hit of a breakpoint of the user's at `addr`: the prompt. False if
    /// no breakpoint of the user's is there.
    pub(super) fn debug_breakpoint_hit(&mut self, tid: Pid, image_id: usize, addr: u64) -> bool {
        let Some(state) = self.debugger.as_mut() else { return false };
        if !self.images.get(&image_id).and_then(|i| i.probes.get(&addr)).is_some_and(|p| p.user_break) {
            return false;
        }
        let Some(index) = state.breakpoints.iter().position(|b| b.addrs.contains(&addr)) else { return false };
        let Ok(mut regs) = ptrace::registers(tid) else { return false };
        // The thread is shown at the breakpoint, not after its int3.
        regs.rip = addr;
        if ptrace::set_registers(tid, &regs).is_err() {
            return false;
        }
        let breakpoint = &mut state.breakpoints[index];
        breakpoint.hits += 1;
        let headline = match breakpoint.kind {
            Kind::User => format!("Breakpoint {}, ", breakpoint.number),
            Kind::Entry => "The program is stopped at its entry, ".into(),
            Kind::StepOver => String::new(),
        };
        if breakpoint.kind != Kind::User {
            self.remove_breakpoint(index);
        }
        self.debug_prompt(tid, headline)
    }

    /// A signal `sig` for thread `tid` that stops the program at the
    /// prompt: a fatal one, or with `cali-run debug` an interrupt. False
    /// if the signal goes on to the program as without the debugger.
    pub(super) fn debug_signal_stop(&mut self, tid: Pid, sig: i32) -> bool {
        let Some(state) = self.debugger.as_mut() else { return false };
        let interrupt = sig == libc::SIGINT && state.interactive;
        if !STOPPING_SIGNALS.contains(&sig) && !interrupt {
            return false;
        }
        // A group stop has no signal information: not a delivery.
        let Ok(info) = ptrace::signal_info(tid) else { return false };
        if self.image_of(tid).is_none() {
            return false;
        }
        let state = self.debugger_state();
        if !interrupt {
            state.signals.insert(tid, sig);
        }
        let fault = matches!(sig, libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE)
            .then(|| {
                // SAFETY: these signals carry a fault address.
                format!(", fault address {:#x}", unsafe { info.si_addr() } as u64)
            })
            .unwrap_or_default();
        let delivered = if interrupt { "; `continue` does not deliver it" } else { "" };
        self.debug_prompt(tid, format!("The program received {}{fault}{delivered}, ", signal_name(sig)))
    }

    /// Notes an instrumentation failure, for a stop where the thread that
    /// met it goes on.
    pub(super) fn debug_note_failure(&mut self, what: String) {
        if let Some(state) = self.debugger.as_mut() {
            state.failure = Some(what);
        }
    }

    /// Stops at the prompt if an instrumentation failure was noted while
    /// handling thread `tid`'s stop; true if the thread was dealt with.
    pub(super) fn debug_failure_stop(&mut self, tid: Pid) -> bool {
        let Some(what) = self.debugger.as_mut().and_then(|s| s.failure.take()) else { return false };
        self.debug_prompt(tid, format!("Instrumentation failure: {what}; "))
    }

    /// Tells the debugger's user how the measured process ended.
    pub(super) fn debug_note_exit(&mut self, how: super::Exit) {
        let Some(state) = self.debugger.as_mut() else { return };
        let text = match how {
            super::Exit::Code(code) => format!("The program exited with code {code}.\n"),
            super::Exit::Signal(sig) => format!("The program was killed by {}.\n", signal_name(sig)),
            super::Exit::Detached => return,
        };
        state.console.write(&text);
    }

    /// The prompt, with thread `tid` stopped (and `headline` said of it),
    /// until a command lets the program go on; false (and the thread left
    /// to the engine) if the thread is of no process the engine measures.
    fn debug_prompt(&mut self, tid: Pid, headline: String) -> bool {
        let Some(image_id) = self.image_of(tid) else { return false };
        let held = self.stop_world(image_id, tid);
        let state = self.debugger_state();
        state.held = held;
        state.stopped = tid;
        state.current = tid;
        let context = format!("{headline}{}", self.describe_thread(tid));
        let state = self.debugger.as_mut().expect("a debugger");
        if state.console.wait_for_listener().is_err() {
            self.debug_resume();
            return true;
        }
        state.console.write(&context);
        loop {
            let Some(state) = self.debugger.as_mut() else { return true };
            let Some(line) = state.console.read_command(&context) else {
                // The end of the debugger's input: the program goes on,
                // measured, without breakpoints or further stops.
                self.debug_resume();
                self.stop_debugging();
                return true;
            };
            let flow = match command::parse(&line) {
                Ok(command) => self.debug_command(command),
                Err(e) => {
                    self.say(&format!("error: {e}\n"));
                    Flow::Stay
                }
            };
            if let Flow::Leave = flow {
                return true;
            }
        }
    }

    /// Writes to the debugger's console.
    fn say(&mut self, text: &str) {
        if let Some(state) = self.debugger.as_mut() {
            state.console.write(text);
        }
    }

    /// The debugger, which the commands (run only at its prompt) have.
    fn debugger_state(&mut self) -> &mut Debugger {
        self.debugger.as_mut().expect("the prompt runs with a debugger")
    }

    /// Runs one command at the prompt; whether the prompt stays.
    fn debug_command(&mut self, command: Command) -> Flow {
        let command = match command {
            Command::Repeat => match self.debugger_state().last_step.clone() {
                Some(step) => step,
                None => return Flow::Stay,
            },
            other => other,
        };
        if matches!(command, Command::StepInstruction | Command::NextInstruction) {
            self.debugger_state().last_step = Some(command.clone());
        }
        let text = match command {
            Command::Break(location) => self.break_at(location),
            Command::Delete(Some(number)) => match self.delete_breakpoint(number) {
                true => String::new(),
                false => format!("error: no breakpoint {number}\n"),
            },
            Command::Delete(None) => {
                let numbers: Vec<usize> = self.debugger_state().breakpoints.iter().map(|b| b.number).collect();
                for number in numbers {
                    self.delete_breakpoint(number);
                }
                String::new()
            }
            Command::InfoBreakpoints => self.list_breakpoints(),
            Command::Continue => {
                self.debug_resume();
                return Flow::Leave;
            }
            Command::StepInstruction => return self.step_instruction(),
            Command::NextInstruction => return self.next_instruction(),
            Command::Backtrace => self.backtrace(),
            Command::Registers => self.registers(),
            Command::Examine { count, format, at } => self.examine(count, format, &at),
            Command::Disassemble(function) => self.disassemble(function.as_deref()),
            Command::InfoInstrumented(pattern) => self.list_instrumented(pattern.as_deref()),
            Command::InfoThreads => self.list_threads(),
            Command::Thread(n) => self.select_thread(n),
            Command::Kill => {
                self.kill_program();
                return Flow::Leave;
            }
            Command::Quit if self.attached => return self.detach_all(),
            Command::Quit => {
                self.kill_program();
                return Flow::Leave;
            }
            Command::Detach => return self.detach_all(),
            Command::Help => HELP.to_string(),
            Command::Repeat => String::new(),
        };
        self.say(&text);
        Flow::Stay
    }

    /// Adds a breakpoint; its number (0 for one of the debugger's own,
    /// which the user does not see).
    fn add_breakpoint(&mut self, kind: Kind, what: String, addrs: Vec<u64>) -> usize {
        let Some(state) = self.debugger.as_mut() else { return 0 };
        let mut number = 0;
        if kind == Kind::User {
            number = state.next_number;
            state.next_number += 1;
        }
        state.breakpoints.push(Breakpoint { number, kind, what, addrs, hits: 0 });
        number
    }

    fn break_at(&mut self, location: Location) -> String {
        let tid = self.debugger_state().current;
        let Some(image_id) = self.image_of(tid) else { return "error: no process\n".into() };
        let (what, addrs) = match location {
            Location::Address(addr) => (format!("*{addr:#x}"), vec![addr]),
            Location::Function(name) => {
                let addrs = function_entries(&self.images[&image_id], &name);
                if addrs.is_empty() {
                    return format!("error: no function `{name}` in the loaded modules\n");
                }
                (name, addrs)
            }
        };
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut set = Vec::new();
        let mut text = String::new();
        for addr in addrs {
            match image.set_user_break(addr) {
                Ok(()) => set.push(addr),
                Err(e) => text += &format!("error: {e}\n"),
            }
        }
        if set.is_empty() {
            return text;
        }
        let states: Vec<String> = set.iter().map(|&a| self.describe_address(image_id, a)).collect();
        let number = self.add_breakpoint(Kind::User, what, set);
        for state in states {
            text += &format!("Breakpoint {number} at {state}\n");
        }
        text
    }

    /// Deletes the user's breakpoint `number`; false if there is none.
    fn delete_breakpoint(&mut self, number: usize) -> bool {
        let Some(state) = self.debugger.as_mut() else { return false };
        let found = state.breakpoints.iter().position(|b| b.number == number && b.kind == Kind::User);
        found.inspect(|&index| self.remove_breakpoint(index)).is_some()
    }

    /// Removes the breakpoint at `index`, and its `int3`s where no other
    /// breakpoint needs them.
    fn remove_breakpoint(&mut self, index: usize) {
        let Some(state) = self.debugger.as_mut() else { return };
        let gone = state.breakpoints.remove(index);
        let still: Vec<u64> = state.breakpoints.iter().flat_map(|b| b.addrs.iter().copied()).collect();
        for addr in gone.addrs.into_iter().filter(|a| !still.contains(a)) {
            for image in self.images.values_mut() {
                if let Err(e) = image.clear_user_break(addr) {
                    eprintln!("== CALIPER: cali-run: cannot remove the breakpoint at {addr:#x}: {e}");
                }
            }
        }
    }

    fn list_breakpoints(&mut self) -> String {
        let state = self.debugger_state();
        let user: Vec<&Breakpoint> = state.breakpoints.iter().filter(|b| b.kind == Kind::User).collect();
        if user.is_empty() {
            return "No breakpoints.\n".into();
        }
        let mut text = "Num  Hits  What / where\n".to_string();
        for b in user {
            let addrs: Vec<String> = b.addrs.iter().map(|a| format!("{a:#x}")).collect();
            text += &format!("{:<4} {:<5} {} at {}\n", b.number, b.hits, b.what, addrs.join(", "));
        }
        text
    }

    /// Lets every held thread go on (each past an `int3` of the tool's at
    /// its pc, with the signal it stopped with).
    fn debug_resume(&mut self) {
        let Some(state) = self.debugger.as_mut() else { return };
        let mut threads = std::mem::take(&mut state.held);
        threads.push(state.stopped);
        // A thread whose stop waits to be handled is resumed by the loop.
        threads.retain(|tid| !self.pending.iter().any(|(t, _)| t == tid));
        for tid in threads {
            self.pass_tool_int3(tid);
            let signal = self.debugger.as_mut().and_then(|s| s.signals.remove(&tid)).unwrap_or(0);
            self.resume(tid, signal);
        }
    }

    /// If thread `tid` is at an `int3` of the tool's, does what the engine
    /// does there and moves the thread where the engine sends it; that
    /// address, if it moved.
    fn pass_tool_int3(&mut self, tid: Pid) -> Option<u64> {
        let image_id = self.image_of(tid)?;
        let mut regs = ptrace::registers(tid).ok()?;
        if !tool_int3_at(self.images.get(&image_id)?, regs.rip) {
            return None;
        }
        let to = self.pass_int3(tid, image_id, regs.rip, regs.rsp)?;
        regs.rip = to;
        ptrace::set_registers(tid, &regs).ok()?;
        Some(to)
    }

    fn step_instruction(&mut self) -> Flow {
        let tid = self.debugger_state().current;
        let from = ptrace::registers(tid).map(|r| r.rip).unwrap_or(0);
        let mut text = String::new();
        if let Some(to) = self.pass_tool_int3(tid) {
            let image_id = self.image_of(tid).unwrap_or_default();
            text +=
                &format!("The tool's int3 at {from:#x} sends the thread to {}\n", self.describe_address(image_id, to));
        }
        if ptrace::single_step(tid).is_err() {
            self.say(&format!("{text}error: thread {tid} cannot step\n"));
            return Flow::Stay;
        }
        match ptrace::wait(Some(tid)) {
            Ok(Some((_, Status::Stopped(libc::SIGTRAP)))) => {
                text += &self.describe_thread(tid);
                self.say(&text);
                Flow::Stay
            }
            Ok(Some((_, Status::Stopped(sig)))) => {
                self.debugger_state().signals.insert(tid, sig);
                text += &format!("The program received {}, {}", signal_name(sig), self.describe_thread(tid));
                self.say(&text);
                Flow::Stay
            }
            Ok(Some((_, status))) => {
                self.say(&format!("{text}The step ran into a process event ({status:?}); the program goes on.\n"));
                // The loop handles the event (and resumes the thread).
                self.pending.push_back((tid, status));
                self.debug_resume();
                Flow::Leave
            }
            _ => {
                self.say(&format!("{text}error: thread {tid} is gone\n"));
                self.debug_resume();
                Flow::Leave
            }
        }
    }

    fn next_instruction(&mut self) -> Flow {
        let tid = self.debugger_state().current;
        let Some(image_id) = self.image_of(tid) else { return Flow::Stay };
        let Ok(regs) = ptrace::registers(tid) else { return Flow::Stay };
        let image = &self.images[&image_id];
        let code = image.original_code(regs.rip, 16).unwrap_or_default();
        let call = disasm::decode(&code, regs.rip).into_iter().next().filter(|i| i.flow_control() == FlowControl::Call);
        let Some(call) = call else { return self.step_instruction() };
        let after = call.next_ip();
        let image = self.images.get_mut(&image_id).expect("live image");
        if let Err(e) = image.set_user_break(after) {
            self.say(&format!("Cannot step over the call ({e}); stepping into it.\n"));
            return self.step_instruction();
        }
        self.add_breakpoint(Kind::StepOver, format!("*{after:#x}"), vec![after]);
        self.debug_resume();
        Flow::Leave
    }

    fn kill_program(&mut self) {
        let current = self.debugger_state().current;
        let pid = self.threads.get(&current).map_or(self.main, |t| t.pid);
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    fn detach_all(&mut self) -> Flow {
        let state = self.debugger_state();
        let signals: Vec<(Pid, i32)> = state.signals.drain().collect();
        // A signal a thread stopped with reaches it at the detach.
        self.pending.extend(signals.into_iter().map(|(tid, sig)| (tid, Status::Stopped(sig))));
        self.say("Detached: the program runs on without instrumentation.\n");
        self.stop_debugging();
        self.let_go_all();
        Flow::Leave
    }

    /// No more stops: breakpoints out, the console closed.
    fn stop_debugging(&mut self) {
        while self.debugger.as_ref().is_some_and(|s| !s.breakpoints.is_empty()) {
            self.remove_breakpoint(0);
        }
        self.debugger = None;
    }
}

/// Whether the code at `pc` is an `int3` of the tool's (the engine's or a
/// breakpoint's), which a thread must not run into again.
fn tool_int3_at(image: &Image, pc: u64) -> bool {
    image.probes.get(&pc).is_some_and(|p| match p.state {
        ProbeState::Armed | ProbeState::Displaced { .. } => true,
        ProbeState::Patched(_) => p.user_break,
        ProbeState::Removed => false,
    })
}

/// The entries of the functions called `name` in the image.
fn function_entries(image: &Image, name: &str) -> Vec<u64> {
    image
        .modules
        .iter()
        .flat_map(|m| m.info.functions.iter().filter(|f| &*f.name == name).map(move |f| f.address.wrapping_add(m.bias)))
        .collect()
}

/// `SIGSEGV` and the like.
fn signal_name(sig: i32) -> String {
    const NAMES: [(i32, &str); 9] = [
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGTERM, "SIGTERM"),
    ];
    NAMES.iter().find(|n| n.0 == sig).map_or(format!("signal {sig}"), |n| n.1.to_string())
}
