//! The event loop: launch or attach, follow threads, forks and execs,
//! pass signals through, and act on breakpoint hits.
//!
//! A function's first hit decides how it is measured from then on
//! (HP Caliper's lazy instrumentation): for coverage the `int3` is simply
//! removed; for counts the entry is replaced by a jump to a counting
//! trampoline, with every other thread of the address space stopped while
//! the code changes; a function whose entry cannot take a jump keeps its
//! breakpoint and the tool counts each hit (resuming through a moved copy
//! of the first instruction, so other threads never see the original byte
//! missing).

use crate::counters::Counters;
use crate::discover::ModuleInfo;
use crate::filter::Filter;
use crate::functions::{ArcTable, FunctionTable, Mode};
use crate::image::{Counting, Image, Internal, ProbeState, SiteSlots, Stopped};
use crate::ptrace::{self, Pid, Status};
use crate::relocate::{self, Unpatchable};
use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The measurements to take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collect {
    pub coverage: bool,
    pub fcount: bool,
    /// Calls per call site (caller -> callee).
    pub arcs: bool,
}

impl Collect {
    /// Whether calls are counted (or only first hits seen).
    pub fn counts(&self) -> bool {
        self.fcount || self.arcs
    }
}

/// The most call sites an arc trampoline compares with; calls from
/// further sites are counted together as "other call sites".
pub const MAX_SITES: usize = 32;

/// The call sites an arc trampoline knows, per (image, entry).
#[derive(Debug, Clone)]
struct SiteList {
    slot: usize,
    /// (return address, slots, arc id) of each site.
    sites: Vec<(u64, SiteSlots, usize)>,
    /// The slot of the other sites, once the list is full.
    other: Option<usize>,
    /// No new trampoline could be built: calls from new sites stay
    /// counted at the trap.
    frozen: bool,
}

impl SiteList {
    fn counting(&self) -> Counting {
        Counting::Arcs { slot: self.slot, sites: self.sites.iter().map(|s| s.1).collect(), other: self.other }
    }
}

/// How to run the measurement.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub collect: Collect,
    pub filter: Filter,
    /// Trace forked children (their calls count with the parent's); off,
    /// a child is cleaned of probes and runs free.
    pub follow_fork: bool,
    /// Keep measuring a process after it `exec`s another program; off,
    /// it is let go at the `exec`.
    pub follow_exec: bool,
    /// Count every call at its breakpoint instead of building trampolines
    /// (for comparison: the same counts, far slower).
    pub breakpoints_only: bool,
    /// Stop measuring after this long: probes out, processes let go.
    pub duration: Option<Duration>,
}

/// What is measured.
pub enum Target {
    /// Start this program (searched in `PATH`) with these arguments.
    Launch { program: OsString, args: Vec<OsString> },
    /// Attach to this running process and all its threads.
    Attach(Pid),
}

/// How the measured process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// Let go still running (attach mode, or the duration ran out).
    Detached,
}

/// The measurement's results.
pub struct Outcome {
    pub exit: Exit,
    pub functions: FunctionTable,
    pub arcs: ArcTable,
    /// The trampoline counters by slot.
    pub counters: Vec<u64>,
}

/// Why the measurement could not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

struct Process {
    image: usize,
    /// A vfork child that is not followed: let go at its exec (until then
    /// it shares its parent's memory and probes).
    detach_at_exec: bool,
    /// A fork child that is not followed: cleaned and let go at its first stop.
    detach_at_start: bool,
}

struct Thread {
    pid: Pid,
    running: bool,
    /// A SIGSTOP of ours (or a new thread's first) is on its way.
    expect_stop: bool,
}

/// The last signal the tool received (0 for none), for the loop to act on.
static TOOL_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_signal(sig: libc::c_int) {
    TOOL_SIGNAL.store(sig, Ordering::Relaxed);
}

/// Routes SIGTERM, SIGHUP and SIGALRM to `TOOL_SIGNAL` (without
/// SA_RESTART, so a blocked wait returns), and SIGINT and SIGQUIT too
/// when attached (a terminal sends those to the launched program itself).
fn install_signal_handlers(attached: bool) {
    let mut signals = vec![libc::SIGTERM, libc::SIGHUP, libc::SIGALRM];
    if attached {
        signals.extend([libc::SIGINT, libc::SIGQUIT]);
    } else {
        // SAFETY: ignoring a signal has no preconditions.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGQUIT, libc::SIG_IGN);
        }
    }
    for sig in signals {
        // SAFETY: the handler only stores into an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The engine's state.
pub struct Engine {
    config: Config,
    functions: FunctionTable,
    arcs: ArcTable,
    sites: HashMap<(usize, u64), SiteList>,
    counters: Counters,
    modules: HashMap<String, Arc<ModuleInfo>>,
    images: HashMap<usize, Image>,
    next_image: usize,
    processes: HashMap<Pid, Process>,
    threads: HashMap<Pid, Thread>,
    /// Stops seen while stopping the world, handled before new waits.
    pending: VecDeque<(Pid, Status)>,
    main: Pid,
    attached: bool,
    /// More than one thread or process may run the trampolines: their
    /// increments are atomic. Until then they need not be.
    shared: bool,
    exit: Option<Exit>,
    deadline: Option<Instant>,
}

impl Engine {
    /// Starts or attaches to the target; the program is stopped, probed
    /// and ready for [`Engine::run`].
    pub fn start(config: Config, target: Target) -> Result<Engine, StartError> {
        let counters = Counters::create().map_err(|e| StartError(format!("cannot create the counter file: {e}")))?;
        let attached = matches!(target, Target::Attach(_));
        let mut engine = Engine {
            deadline: config.duration.and_then(|d| Instant::now().checked_add(d)),
            config,
            functions: FunctionTable::default(),
            arcs: ArcTable::default(),
            sites: HashMap::new(),
            counters,
            modules: HashMap::new(),
            images: HashMap::new(),
            next_image: 0,
            processes: HashMap::new(),
            threads: HashMap::new(),
            pending: VecDeque::new(),
            main: 0,
            attached,
            shared: attached,
            exit: None,
        };
        match target {
            Target::Launch { program, args } => engine.launch(&program, &args)?,
            Target::Attach(pid) => engine.attach(pid)?,
        }
        install_signal_handlers(attached);
        if let Some(d) = engine.config.duration {
            // SAFETY: alarm has no preconditions.
            unsafe { libc::alarm(d.as_secs().max(1) as libc::c_uint) };
        }
        Ok(engine)
    }

    fn launch(&mut self, program: &OsString, args: &[OsString]) -> Result<(), StartError> {
        let mut command = Command::new(program);
        command.args(args);
        // SAFETY: PTRACE_TRACEME is async-signal-safe (a system call).
        unsafe {
            command.pre_exec(|| {
                if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child =
            command.spawn().map_err(|e| StartError(format!("cannot run {}: {e}", program.to_string_lossy())))?;
        let pid = child.id() as Pid;
        match ptrace::wait(Some(pid)) {
            Ok(Some((_, Status::Stopped(libc::SIGTRAP)))) => {}
            other => {
                return Err(StartError(format!("{} did not stop at its start: {other:?}", program.to_string_lossy())));
            }
        }
        ptrace::set_options(pid, ptrace::trace_options(true))
            .map_err(|e| StartError(format!("ptrace options: {e}")))?;
        self.main = pid;
        self.threads.insert(pid, Thread { pid, running: false, expect_stop: false });
        self.new_image(pid).map_err(|e| StartError(format!("cannot instrument {}: {e}", program.to_string_lossy())))?;
        self.resume(pid, 0);
        Ok(())
    }

    fn attach(&mut self, pid: Pid) -> Result<(), StartError> {
        let tasks =
            std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| StartError(format!("no process {pid}: {e}")))?;
        self.main = pid;
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|s| s.parse::<Pid>().ok()) else { continue };
            if ptrace::attach(tid).is_err() {
                continue;
            }
            if let Ok(Some((_, Status::Stopped(_)))) = ptrace::wait(Some(tid)) {
                let _ = ptrace::set_options(tid, ptrace::trace_options(false));
                self.threads.insert(tid, Thread { pid, running: false, expect_stop: false });
            }
        }
        if !self.threads.contains_key(&pid) {
            return Err(StartError(format!("cannot attach to process {pid} (permissions, or already traced)")));
        }
        self.new_image(pid).map_err(|e| StartError(format!("cannot instrument process {pid}: {e}")))?;
        let tids: Vec<Pid> = self.threads.keys().copied().collect();
        for tid in tids {
            self.resume(tid, 0);
        }
        Ok(())
    }

    /// A fresh image for process `pid` (at its start or its exec): the
    /// modules mapped now probed, and the linker's rendezvous watched for
    /// the libraries it loads.
    fn new_image(&mut self, pid: Pid) -> io::Result<()> {
        let mut image = Image::new(pid)?;
        image.scan(&self.config.filter, &mut self.functions, &mut self.modules)?;
        let rendezvous = image.modules.iter().find_map(|m| {
            m.info.functions.iter().find(|f| f.name == "_dl_debug_state").map(|f| f.address.wrapping_add(m.bias))
        });
        if let Some(addr) = rendezvous {
            image.watch(addr, Internal::LinkerRendezvous)?;
        }
        let id = self.next_image;
        self.next_image += 1;
        self.images.insert(id, image);
        let old = self.processes.insert(pid, Process { image: id, detach_at_exec: false, detach_at_start: false });
        if let Some(old) = old {
            self.drop_image_if_unused(old.image);
        }
        Ok(())
    }

    fn drop_image_if_unused(&mut self, image: usize) {
        if !self.processes.values().any(|p| p.image == image) {
            self.images.remove(&image);
        }
    }

    /// Runs until every traced process has exited (or been let go).
    pub fn run(mut self) -> Outcome {
        loop {
            if self.take_tool_signal() {
                break;
            }
            let (tid, status) = match self.pending.pop_front() {
                Some(event) => event,
                None => match ptrace::wait(None) {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        eprintln!("== CALIPER: cali-run: wait failed: {e}");
                        break;
                    }
                },
            };
            self.handle(tid, status);
        }
        self.finish()
    }

    /// Acts on a signal to the tool; true when measuring should stop.
    fn take_tool_signal(&mut self) -> bool {
        let sig = TOOL_SIGNAL.swap(0, Ordering::Relaxed);
        if sig == 0 {
            return false;
        }
        let expired =
            sig == libc::SIGALRM && self.deadline.is_some_and(|d| Instant::now() + Duration::from_millis(500) >= d);
        if self.attached || expired {
            self.let_go_all();
            return true;
        }
        if sig != libc::SIGALRM {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(self.main, sig) };
        }
        false
    }

    fn handle(&mut self, tid: Pid, status: Status) {
        match status {
            Status::Exited(code) => self.gone(tid, Exit::Code(code)),
            Status::Killed(sig) => self.gone(tid, Exit::Signal(sig)),
            Status::Event(event) => self.on_event(tid, event),
            Status::Syscall => self.resume(tid, 0),
            Status::Stopped(sig) => self.on_stop(tid, sig),
        }
    }

    fn gone(&mut self, tid: Pid, how: Exit) {
        self.threads.remove(&tid);
        if let Some(process) = self.processes.remove(&tid) {
            self.drop_image_if_unused(process.image);
        }
        if tid == self.main {
            self.exit = Some(how);
        }
    }

    fn on_event(&mut self, tid: Pid, event: i32) {
        let Some(pid) = self.threads.get(&tid).map(|t| t.pid) else {
            self.resume(tid, 0);
            return;
        };
        match event {
            libc::PTRACE_EVENT_CLONE => {
                if let Ok(new) = ptrace::event_message(tid) {
                    self.threads.entry(new as Pid).or_insert(Thread { pid, running: false, expect_stop: true });
                }
                self.share_counters();
            }
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                if let Ok(child) = ptrace::event_message(tid) {
                    self.new_process(pid, child as Pid, event == libc::PTRACE_EVENT_VFORK);
                }
                self.share_counters();
            }
            libc::PTRACE_EVENT_EXEC => self.on_exec(tid, pid),
            _ => {}
        }
        self.resume(tid, 0);
    }

    /// At the first new thread or process (stopped, as its creator is):
    /// every increment becomes atomic before a second one can run it.
    fn share_counters(&mut self) {
        if self.shared {
            return;
        }
        self.shared = true;
        for image in self.images.values_mut() {
            if let Err(e) = image.lock_all() {
                eprintln!("== CALIPER: cali-run: cannot make the counters atomic in process {}: {e}", image.pid);
            }
        }
    }

    fn new_process(&mut self, parent: Pid, child: Pid, vfork: bool) {
        let Some(parent_image) = self.processes.get(&parent).map(|p| p.image) else { return };
        let follow = self.config.follow_fork;
        let image = if vfork {
            parent_image
        } else {
            match self.images[&parent_image].fork(child) {
                Ok(image) => {
                    let id = self.next_image;
                    self.next_image += 1;
                    self.images.insert(id, image);
                    let inherited: Vec<((usize, u64), SiteList)> = self
                        .sites
                        .iter()
                        .filter(|((i, _), _)| *i == parent_image)
                        .map(|((_, entry), list)| ((id, *entry), list.clone()))
                        .collect();
                    self.sites.extend(inherited);
                    id
                }
                Err(e) => {
                    eprintln!("== CALIPER: cali-run: cannot follow process {child}: {e}");
                    return;
                }
            }
        };
        let process = Process { image, detach_at_exec: vfork && !follow, detach_at_start: !vfork && !follow };
        self.processes.insert(child, process);
        self.threads.entry(child).or_insert(Thread { pid: child, running: false, expect_stop: true }).pid = child;
    }

    fn on_exec(&mut self, tid: Pid, pid: Pid) {
        // The exec leaves one thread, with the process id.
        self.threads.retain(|&t, th| th.pid != pid || t == pid);
        if tid != pid {
            self.threads.remove(&tid);
            self.threads.insert(pid, Thread { pid, running: false, expect_stop: false });
        }
        let let_go = self.processes.get(&pid).is_some_and(|p| p.detach_at_exec) || !self.config.follow_exec;
        if let_go {
            if let Some(process) = self.processes.remove(&pid) {
                self.drop_image_if_unused(process.image);
            }
            self.threads.remove(&pid);
            let _ = ptrace::detach(pid, 0);
            return;
        }
        if let Err(e) = self.new_image(pid) {
            eprintln!("== CALIPER: cali-run: cannot instrument process {pid} after exec: {e}");
        }
    }

    fn on_stop(&mut self, tid: Pid, sig: i32) {
        let Some(thread) = self.threads.get_mut(&tid) else {
            // A new thread whose first stop came before its clone event.
            self.threads
                .insert(tid, Thread { pid: thread_group(tid), running: false, expect_stop: sig != libc::SIGSTOP });
            self.resume(tid, if sig == libc::SIGSTOP { 0 } else { sig });
            return;
        };
        thread.running = false;
        if sig == libc::SIGSTOP && thread.expect_stop {
            thread.expect_stop = false;
            let pid = thread.pid;
            if tid == pid && self.processes.get(&pid).is_some_and(|p| p.detach_at_start) {
                self.let_go(pid, &HashMap::new());
                return;
            }
            self.resume(tid, 0);
            return;
        }
        if sig == libc::SIGTRAP
            && let Ok(info) = ptrace::signal_info(tid)
            && info.si_code == libc::SI_KERNEL
            && self.on_breakpoint(tid)
        {
            return;
        }
        // A group stop (no signal information) is resumed: the program is
        // not stopped by job control while measured.
        let deliver = if ptrace::signal_info(tid).is_ok() { sig } else { 0 };
        self.resume(tid, deliver);
    }

    /// Handles an `int3` hit; false if it was not one of ours.
    fn on_breakpoint(&mut self, tid: Pid) -> bool {
        let Some(image_id) = self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).map(|p| p.image) else {
            return false;
        };
        let Ok(mut regs) = ptrace::registers(tid) else { return false };
        let addr = regs.rip.wrapping_sub(1);
        let Some(image) = self.images.get(&image_id) else { return false };
        if let Some(&entry) = image.traps.get(&addr) {
            // A call from a new site in an arc trampoline: the return
            // address is above the saved RAX. The thread goes on after the
            // trap, through the rest of the old trampoline.
            if let Ok(ret) = image.memory.read_u64(regs.rsp.wrapping_add(8)) {
                self.on_new_site(tid, image_id, entry, ret);
            }
            self.resume(tid, 0);
            return true;
        }
        let Some(probe) = image.probes.get(&addr).cloned() else { return false };
        if probe.internal == Some(Internal::LinkerRendezvous) {
            let image = self.images.get_mut(&image_id).expect("image of a live process");
            if let Err(e) = image.scan(&self.config.filter, &mut self.functions, &mut self.modules) {
                eprintln!("== CALIPER: cali-run: cannot read the loaded libraries: {e}");
            }
        }
        let resume_at = match (probe.function, &probe.state) {
            (_, ProbeState::Patched { trampoline, .. }) => *trampoline,
            (_, ProbeState::Removed) => addr,
            (function, ProbeState::Displaced { resume }) => {
                if let Some(f) = function {
                    self.count_trap_hit(image_id, f, regs.rsp);
                }
                *resume
            }
            (function, ProbeState::Armed) => {
                self.first_hit(tid, image_id, addr, function, probe.internal.is_some(), regs.rsp)
            }
        };
        regs.rip = resume_at;
        if ptrace::set_registers(tid, &regs).is_err() {
            return true;
        }
        self.resume(tid, 0);
        true
    }

    /// Counts a call of function `f` that the tool saw at its breakpoint
    /// (the stack pointer `rsp` at its entry, where the return address is).
    fn count_trap_hit(&mut self, image_id: usize, f: usize, rsp: u64) {
        self.functions.records[f].trap_hits += 1;
        if !self.config.collect.arcs {
            return;
        }
        let Some(ret) = self.images.get(&image_id).and_then(|i| i.memory.read_u64(rsp).ok()) else { return };
        let arc = self.arc_of(image_id, f, ret);
        self.arcs.records[arc].trap_hits += 1;
    }

    /// The arc from the call that returns to `ret` to function `f`.
    fn arc_of(&mut self, image_id: usize, f: usize, ret: u64) -> usize {
        let image = &self.images[&image_id];
        let unknown: Arc<str> = Arc::from("?");
        // Not a return address into code (a thread's start, or a function
        // entered by a jump, finds other data there): an arc from nowhere.
        let Some(m) = image.module_of(ret.wrapping_sub(1)).filter(|_| ret >= 8) else {
            return self.arcs.intern(f, &unknown, "?", ret);
        };
        let module = &image.modules[m];
        let mut before = [0u8; 8];
        let site = match image.memory.read(ret.wrapping_sub(8), &mut before) {
            Ok(()) => relocate::call_before(&before, ret),
            Err(_) => ret,
        };
        let in_file = site.wrapping_sub(module.bias);
        let functions = &module.info.functions;
        let caller = match functions.partition_point(|x| x.address <= in_file) {
            0 => "?",
            n if functions[n - 1].size == 0
                || in_file < functions[n - 1].address.saturating_add(functions[n - 1].size) =>
            {
                &functions[n - 1].name
            }
            _ => "?",
        };
        let path = module.path.clone();
        let caller = caller.to_string();
        self.arcs.intern(f, &path, &caller, in_file)
    }

    /// A call from a site the arc trampoline at `entry` does not know:
    /// counted here, and the trampoline rebuilt to know it (or, when it
    /// knows as many as it may, to count further sites together).
    fn on_new_site(&mut self, tid: Pid, image_id: usize, entry: u64, ret: u64) {
        let Some(f) = self.images[&image_id].probes.get(&entry).and_then(|p| p.function) else { return };
        let arc = self.arc_of(image_id, f, ret);
        self.arcs.records[arc].trap_hits += 1;
        let Some(list) = self.sites.get(&(image_id, entry)) else { return };
        if list.sites.iter().any(|s| s.0 == ret) || list.other.is_some() || list.frozen {
            return;
        }
        let mut list = list.clone();
        if list.sites.len() < MAX_SITES {
            let (Some(value), Some(count)) = (self.counters.allocate(), self.counters.allocate()) else { return };
            if self.counters.write(value, ret).is_err() {
                return;
            }
            self.arcs.records[arc].slots.push(count);
            list.sites.push((ret, SiteSlots { value, count }, arc));
        } else {
            let Some(other) = self.counters.allocate() else { return };
            let unknown: Arc<str> = Arc::from("?");
            let others = self.arcs.intern(f, &unknown, "(other call sites)", 0);
            self.arcs.records[others].slots.push(other);
            list.other = Some(other);
        }
        let stopped = self.stop_world(image_id, tid);
        let mut deferred = Vec::new();
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid, counters: &self.counters, deferred: &mut deferred };
        let repatched = image.repatch(entry, &list.counting(), self.shared, &mut thread);
        self.resume_world(&stopped);
        self.redeliver(tid, deferred);
        match repatched {
            Ok(_) => {
                self.sites.insert((image_id, entry), list);
            }
            Err(e) => {
                eprintln!("== CALIPER: cali-run: cannot add a call site to {}: {e}", self.functions.records[f].name)
            }
        }
    }

    fn redeliver(&self, tid: Pid, deferred: Vec<i32>) {
        let pid = self.threads.get(&tid).map_or(tid, |t| t.pid);
        for sig in deferred {
            let _ = ptrace::kill_thread(pid, tid, sig);
        }
    }

    /// Decides how the probe at `addr` works from its first hit on, and
    /// where the hitting thread resumes.
    fn first_hit(
        &mut self,
        tid: Pid,
        image_id: usize,
        addr: u64,
        function: Option<usize>,
        internal: bool,
        rsp: u64,
    ) -> u64 {
        if let Some(f) = function {
            self.functions.records[f].covered = true;
        }
        let counts = function.is_some() && self.config.collect.counts();
        if !counts && !internal {
            if let Some(f) = function {
                self.functions.records[f].mode = Mode::Covered;
            }
            let _ = self.images.get_mut(&image_id).expect("live image").remove(addr);
            return addr;
        }
        let stopped = self.stop_world(image_id, tid);
        let busy: Vec<u64> = stopped.iter().filter_map(|&t| ptrace::registers(t).ok()).map(|r| r.rip).collect();
        let mut deferred = Vec::new();
        let image = self.images.get_mut(&image_id).expect("live image");
        let mut thread = Stopped { tid, counters: &self.counters, deferred: &mut deferred };
        let patched = match function {
            // A function patched in another image (a forked child, an
            // earlier run of the program) counts into the same slot.
            Some(f) if !internal && !self.config.breakpoints_only => {
                match self.functions.records[f].slot.or(self.counters.peek_next()) {
                    Some(slot) => {
                        let counting = if self.config.collect.arcs {
                            Counting::Arcs { slot, sites: Vec::new(), other: None }
                        } else {
                            Counting::Calls { slot }
                        };
                        let size = self.functions.records[f].size;
                        image.patch(addr, size, &counting, self.shared, &busy, &mut thread).map(|p| (p, slot))
                    }
                    None => Err(Unpatchable::Unencodable("counter slots exhausted".into())),
                }
            }
            _ => Err(Unpatchable::Unencodable("breakpoint counting chosen".into())),
        };
        let mut counted_here = false;
        let resume_at = match patched {
            Ok((patch, slot)) => {
                if self.counters.peek_next() == Some(slot) {
                    self.counters.allocate();
                }
                let record = &mut self.functions.records[function.expect("patched functions exist")];
                record.slot = Some(slot);
                record.mode = Mode::Trampoline;
                if self.config.collect.arcs {
                    self.sites
                        .insert((image_id, addr), SiteList { slot, sites: Vec::new(), other: None, frozen: false });
                }
                patch.trampoline
            }
            Err(why) => match image.displace(addr, &mut thread) {
                Ok(resume) => {
                    if let Some(f) = function {
                        self.functions.records[f].mode = Mode::Breakpoint(why);
                        counted_here = true;
                    }
                    resume
                }
                Err(cannot_move) => {
                    let _ = image.remove(addr);
                    if let Some(f) = function {
                        self.functions.records[f].mode = Mode::Uncounted(cannot_move);
                        counted_here = true;
                    }
                    addr
                }
            },
        };
        self.resume_world(&stopped);
        self.redeliver(tid, deferred);
        if counted_here && let Some(f) = function {
            self.count_trap_hit(image_id, f, rsp);
        }
        resume_at
    }

    /// Stops every running thread that shares image `image_id`, other than
    /// `except`; the threads stopped (not those that reported something
    /// else first: their stops wait in `pending`).
    fn stop_world(&mut self, image_id: usize, except: Pid) -> Vec<Pid> {
        let targets: Vec<(Pid, Pid)> = self
            .threads
            .iter()
            .filter(|(tid, t)| {
                **tid != except && t.running && self.processes.get(&t.pid).is_some_and(|p| p.image == image_id)
            })
            .map(|(tid, t)| (*tid, t.pid))
            .collect();
        for &(tid, pid) in &targets {
            if ptrace::kill_thread(pid, tid, libc::SIGSTOP).is_ok()
                && let Some(t) = self.threads.get_mut(&tid)
            {
                t.expect_stop = true;
            }
        }
        let mut stopped = Vec::new();
        for (tid, _) in targets {
            let Ok(Some((_, status))) = ptrace::wait(Some(tid)) else { continue };
            if let Some(t) = self.threads.get_mut(&tid) {
                t.running = false;
                if status == Status::Stopped(libc::SIGSTOP) && t.expect_stop {
                    t.expect_stop = false;
                    stopped.push(tid);
                    continue;
                }
            }
            self.pending.push_back((tid, status));
        }
        stopped
    }

    fn resume_world(&mut self, stopped: &[Pid]) {
        for &tid in stopped {
            self.resume(tid, 0);
        }
    }

    fn resume(&mut self, tid: Pid, sig: i32) {
        if ptrace::cont(tid, sig).is_ok()
            && let Some(t) = self.threads.get_mut(&tid)
        {
            t.running = true;
        }
    }

    /// Takes the probes out of process `pid` and detaches from it; its
    /// threads get the signals they stopped with (`signals`, by thread).
    fn let_go(&mut self, pid: Pid, signals: &HashMap<Pid, i32>) {
        if let Some(process) = self.processes.remove(&pid) {
            let shared = self.processes.values().any(|p| p.image == process.image);
            if !shared && let Some(mut image) = self.images.remove(&process.image) {
                let _ = image.strip();
            }
        }
        let tids: Vec<Pid> = self.threads.iter().filter(|(_, t)| t.pid == pid).map(|(&tid, _)| tid).collect();
        for tid in tids {
            self.threads.remove(&tid);
            let _ = ptrace::detach(tid, signals.get(&tid).copied().unwrap_or(0));
        }
    }

    /// Stops every thread, takes all probes out and detaches.
    fn let_go_all(&mut self) {
        let tids: Vec<(Pid, Pid)> =
            self.threads.iter().filter(|(_, t)| t.running).map(|(&tid, t)| (tid, t.pid)).collect();
        for &(tid, pid) in &tids {
            let _ = ptrace::kill_thread(pid, tid, libc::SIGSTOP);
        }
        let mut signals = HashMap::new();
        for &(tid, _) in &tids {
            // Whatever each reports, it is stopped now; a SIGSTOP of ours
            // still queued is cancelled by the SIGCONT below.
            if let Ok(Some((_, Status::Stopped(sig)))) = ptrace::wait(Some(tid))
                && sig != libc::SIGSTOP
            {
                signals.insert(tid, sig);
            }
        }
        // So are the threads whose stops wait in `pending`.
        for (tid, status) in std::mem::take(&mut self.pending) {
            if let Status::Stopped(sig) = status {
                signals.insert(tid, sig);
            }
        }
        // A thread stopped at one of our breakpoints goes back to the
        // instruction, which is the program's own again after the strip.
        let trapped: Vec<Pid> = signals.iter().filter(|(_, s)| **s == libc::SIGTRAP).map(|(t, _)| *t).collect();
        for tid in trapped {
            let Some(image) =
                self.threads.get(&tid).and_then(|t| self.processes.get(&t.pid)).and_then(|p| self.images.get(&p.image))
            else {
                continue;
            };
            if let Ok(mut regs) = ptrace::registers(tid)
                && image.probes.contains_key(&regs.rip.wrapping_sub(1))
            {
                regs.rip -= 1;
                let _ = ptrace::set_registers(tid, &regs);
                signals.remove(&tid);
            }
        }
        let pids: Vec<Pid> = self.processes.keys().copied().collect();
        for pid in &pids {
            self.let_go(*pid, &signals);
        }
        for pid in pids {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
        if !self.attached {
            // The launched program is still our child: its exit code is ours.
            let mut raw = 0;
            // SAFETY: waitpid writes the status only.
            if unsafe { libc::waitpid(self.main, &mut raw, 0) } == self.main {
                self.exit = Some(if libc::WIFEXITED(raw) {
                    Exit::Code(libc::WEXITSTATUS(raw))
                } else {
                    Exit::Signal(libc::WTERMSIG(raw))
                });
            }
        }
    }

    fn finish(self) -> Outcome {
        let counters = self.counters.read_all().unwrap_or_else(|e| {
            eprintln!("== CALIPER: cali-run: cannot read the counters: {e}");
            Vec::new()
        });
        Outcome { exit: self.exit.unwrap_or(Exit::Detached), functions: self.functions, arcs: self.arcs, counters }
    }
}

/// The thread group (process) of thread `tid`, from `/proc`.
fn thread_group(tid: Pid) -> Pid {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok())))
        .unwrap_or(tid)
}
