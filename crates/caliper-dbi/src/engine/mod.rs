//! The event loop: launch or attach, follow threads, forks and execs,
//! pass signals through, and act on breakpoint hits.
//!
//! For counts, a module's functions get their trampolines at the first
//! call into it (module `ahead`); otherwise a function's first hit decides how it is
//! measured from then on (HP Caliper's lazy instrumentation): for
//! coverage the `int3` is simply removed; for counts the entry is
//! replaced by a jump to a counting trampoline, with every other thread
//! of the address space stopped while the code changes; a function whose entry cannot take a jump keeps its
//! breakpoint and the tool counts each hit (resuming through a moved copy
//! of the first instruction, so other threads never see the original byte
//! missing).

mod ahead;
mod arcs;
mod debug;
mod events;
mod halt;
mod naming;
mod probes;
mod samples;
mod signals;
mod sites;
mod threads;
mod timer;
mod watchdog;

use crate::counters::Counters;
use crate::debugger::DebugConfig;
use crate::filter::{self, Filter};
use crate::functions::{ArcTable, FunctionTable};
use crate::image::{Image, Internal, SlotMap};
use crate::launch;
use crate::module_cache::ModuleCache;
use crate::ptrace::{self, Pid, Status};
use crate::sample::{Sampler, TASK_CLOCK_EVENT};
use caliper_data::hash::FxHashMap;
use caliper_perf::EventCode;
pub use events::{Action, Event, Observer};
pub use signals::HANDLED_SIGNALS;
pub(crate) use signals::ending_signal_pending;
use signals::install_signal_handlers;
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The measurements to take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collect {
    pub coverage: bool,
    pub fcount: bool,
    /// Calls per call site (caller -> callee).
    pub arcs: bool,
    /// Call chains sampled on CPU time.
    pub sample: bool,
    /// The call graph of the arcs, with inclusive calls (needs `arcs`).
    pub callgraph: bool,
}

impl Collect {
    /// The collectors' names, comma-separated.
    pub fn names(&self) -> String {
        let chosen = [
            (self.coverage, "coverage"),
            (self.fcount, "fcount"),
            (self.arcs, "arcs"),
            (self.callgraph, "callgraph"),
            (self.sample, "sample"),
        ];
        chosen.iter().filter(|c| c.0).map(|c| c.1).collect::<Vec<_>>().join(",")
    }

    /// Whether function entries are probed (sampling alone needs none).
    pub fn probes(&self) -> bool {
        self.coverage || self.counts()
    }

    /// Whether calls are counted (or only first hits seen).
    pub fn counts(&self) -> bool {
        self.fcount || self.arcs
    }
}

/// How to run the measurement.
#[derive(Debug, Clone)]
pub struct Config {
    pub collect: Collect,
    pub filter: Filter,
    /// Trace forked children (their calls count with the parent's); off,
    /// a child is cleaned of probes and runs free.
    pub follow_fork: bool,
    /// Keep measuring a process after it `exec`s another program; off,
    /// it is let go at the `exec`.
    pub follow_exec: bool,
    /// With `follow_exec`, only programs that match one of these (file
    /// name or path, `*` wildcards) are followed; empty: all.
    pub exec_programs: Vec<String>,
    /// Count every call at its breakpoint instead of building trampolines
    /// (for comparison: the same counts, far slower).
    pub breakpoints_only: bool,
    /// Patch each function at its first call, as HP Caliper does, instead
    /// of every function of a module at the first call into it: for a
    /// program so large that it calls few of its functions in its run.
    pub lazy: bool,
    /// Stop measuring after this long: probes out, processes let go.
    pub duration: Option<Duration>,
    /// Start measuring only after this long (the program runs free until
    /// then: no probes, but processes and threads are followed).
    pub start: Option<Duration>,
    /// The event `sample` samples on, with its name (by default the
    /// threads' CPU time, `task-clock`).
    pub sample_event: (String, EventCode),
    /// Stop at the `cdb` prompt (see [`crate::debugger`]).
    pub debug: Option<DebugConfig>,
    /// Keep the modules' analyses on disk between runs (see
    /// [`crate::module_cache`]).
    pub cache: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            collect: Collect::default(),
            filter: Filter::default(),
            follow_fork: false,
            follow_exec: false,
            exec_programs: Vec::new(),
            breakpoints_only: false,
            lazy: false,
            duration: None,
            start: None,
            sample_event: ("task-clock".to_string(), TASK_CLOCK_EVENT),
            debug: None,
            cache: true,
        }
    }
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
    /// Sampled call stacks (function names, outermost first) and how often
    /// each was seen.
    pub stacks: HashMap<Vec<String>, u64>,
    /// Samples the kernel dropped (its buffer full).
    pub samples_lost: u64,
    /// Samples whose call chain was cut at a return address outside the
    /// program's code (a frame-pointer walk through code without them).
    pub samples_truncated: u64,
    /// The program's stops at the tool's `int3`s: what the measurement
    /// cost in ptrace round trips, which its wall time only suggests.
    pub traps: u64,
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
    /// A new thread's first stop is on its way.
    expect_stop: bool,
    /// In a job control stop, left stopped (`PTRACE_LISTEN`) until a
    /// SIGCONT: not running, but not stopped for the tool either.
    listening: bool,
    /// Interrupted while blocked in the kernel, to resume at this address:
    /// running none of the program's code until its stop comes.
    held_at: Option<u64>,
}

impl Thread {
    /// A thread of process `pid`, stopped.
    fn new(pid: Pid, expect_stop: bool) -> Thread {
        Thread { pid, running: false, expect_stop, listening: false, held_at: None }
    }
}

/// Samples per second of a thread's CPU time, with `sample`.
const SAMPLES_PER_SECOND: u64 = 1000;

/// The free counter slots below which a new image counts in the slots the
/// images share instead of slots of its own (each program running takes
/// slots of its own for the functions it calls, a compiler 5,000, and
/// gives them back at its end).
const PRIVATE_SLOTS_FREE: usize = crate::counters::SLOTS / 2;

/// Which of the resources `0..bound` (counter slots, arc ids) some item of
/// `others` is, by resource: what the images other than an ending one
/// still use (a forked copy shares its parent's slots and ids), found from
/// their maps when it ends rather than counted as they are made and
/// forked; or which arc ids are an image's.
fn in_use(bound: usize, others: impl IntoIterator<Item = usize>) -> Vec<bool> {
    let mut used = vec![false; bound];
    for item in others {
        used[item] = true;
    }
    used
}

/// The engine's state.
pub struct Engine {
    config: Config,
    functions: FunctionTable,
    /// The arcs seen: locked, as the thread that names the call sites of
    /// the images that have ended adds to them (see [`naming`]).
    arcs: Arc<Mutex<ArcTable>>,
    /// The images that have ended whose call sites are being named.
    ended_images: naming::EndedImages,
    /// The arc ids each image's trampolines count under, by entry (see
    /// [`crate::arc_table`]): a forked child's start as a copy of its
    /// parent's. Hashed with Fx: a compiler's first call looks up and adds
    /// 4,300 (with SipHash, a millisecond of its start-up).
    arc_ids: FxHashMap<usize, FxHashMap<u64, u32>>,
    /// The function of each arc id, the id's (from 1) at index id - 1.
    arc_callees: Vec<usize>,
    /// The entries of the table of call arcs freed so far (see
    /// [`Engine::name_ended_image`]).
    arc_entries_freed: usize,
    /// Arc ids given back by images that have ended, taken again first.
    free_arc_ids: Vec<u32>,
    counters: Counters,
    modules: ModuleCache,
    /// The live images by id (hashed with Fx: looked up at every function
    /// patched).
    images: FxHashMap<usize, Image>,
    next_image: usize,
    processes: HashMap<Pid, Process>,
    threads: HashMap<Pid, Thread>,
    /// Stops seen while stopping the world, handled before new waits.
    pending: VecDeque<(Pid, Status)>,
    /// The sampling event, with `sample`.
    sampler: Option<Sampler>,
    stacks: HashMap<Vec<String>, u64>,
    samples_truncated: u64,
    /// The modules' unwind tables, to unwind samples by their CFI.
    unwind: crate::debugger::unwind::UnwindTables,
    /// Wakes the loop to drain the sampling buffers, with `sample`.
    sample_drain: Option<timer::PeriodicTimer>,
    /// New processes whose first stop came before their parent's fork
    /// event: held stopped until the event says how to treat them.
    early: HashSet<Pid>,
    main: Pid,
    attached: bool,
    /// The counter slots of the images that have none of their own (see
    /// [`Image::slots`]).
    shared_slots: SlotMap,
    exit: Option<Exit>,
    deadline: Option<Instant>,
    /// Whether probes are in (false until a delayed start).
    measuring: bool,
    /// The tool got a stop signal (`SIGTSTP`, ...): when the program
    /// stops, the tool stops too, so that a shell sees the job stopped.
    stop_with_program: bool,
    events: events::Events,
    /// The `cdb` debugger, with `--debug-on-fault` or `cali-run debug`.
    debugger: Option<debug::Debugger>,
    /// A thread would not stop, or waits for the tool in vain: the
    /// measurement ends.
    stalled: bool,
    watchdog: watchdog::Watchdog,
    /// The passes that give hot call sites counters of their own.
    site_passes: sites::SitePasses,
    /// Stops at the tool's `int3`s so far ([`Outcome::traps`]).
    traps: u64,
    /// The (program, module) pairs whose module the program entered: the
    /// module cache is told at the end which of their functions ran.
    entered_modules: HashSet<ahead::EnteredModule>,
    /// The thread whose stop at the tool's `int3` at an address is being
    /// handled, until it is sent on: should the tool fail meanwhile, it
    /// goes back to that address, whatever the handling made of the probe.
    at_breakpoint: Option<(Pid, u64)>,
}

/// The value under `mutex`, locked; as a panicked holder left it, if one
/// did (the tool goes on with what it has).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Engine {
    /// The arcs seen, locked.
    fn arcs(&self) -> MutexGuard<'_, ArcTable> {
        lock(&self.arcs)
    }

    /// The trampoline counters by slot, as they stand.
    fn read_counters(&self) -> Vec<u64> {
        self.counters.read_all().unwrap_or_else(|e| {
            eprintln!("== CALIPER: cali-run: cannot read the counters: {e}");
            Vec::new()
        })
    }

    /// Starts or attaches to the target; the program is stopped, probed
    /// and ready for [`Engine::run`].
    pub fn start(config: Config, target: Target) -> Result<Engine, StartError> {
        let counters = Counters::create().map_err(|e| StartError(format!("cannot create the counter file: {e}")))?;
        let attached = matches!(target, Target::Attach(_));
        let debugger = config.debug.as_ref().map(debug::Debugger::open).transpose()?;
        let modules = ModuleCache::new(config.cache);
        let mut engine = Engine {
            deadline: None,
            measuring: config.start.is_none(),
            config,
            functions: FunctionTable::default(),
            arcs: Arc::default(),
            ended_images: naming::EndedImages::default(),
            arc_ids: FxHashMap::default(),
            arc_callees: Vec::new(),
            arc_entries_freed: 0,
            free_arc_ids: Vec::new(),
            counters,
            modules,
            images: FxHashMap::default(),
            next_image: 0,
            processes: HashMap::new(),
            threads: HashMap::new(),
            pending: VecDeque::new(),
            early: HashSet::new(),
            sampler: None,
            stacks: HashMap::new(),
            samples_truncated: 0,
            unwind: Default::default(),
            sample_drain: None,
            main: 0,
            attached,
            shared_slots: SlotMap::default(),
            exit: None,
            stop_with_program: false,
            events: events::Events::default(),
            debugger,
            stalled: false,
            at_breakpoint: None,
            entered_modules: HashSet::new(),
            watchdog: watchdog::Watchdog::default(),
            site_passes: sites::SitePasses::default(),
            traps: 0,
        };
        // The handlers come before an attach, so that an interrupt during it
        // lets the process go cleanly, and after a launch, so that the
        // program does not inherit the tool's ignored SIGINT and SIGQUIT.
        match target {
            Target::Launch { program, args } => {
                engine.launch(&program, &args)?;
                install_signal_handlers(false);
            }
            Target::Attach(pid) => {
                install_signal_handlers(true);
                engine.attach(pid)?;
            }
        }
        if engine.measuring {
            engine.start_sampling();
        }
        match (engine.config.start, engine.config.duration) {
            (Some(start), _) => arm_timer(start),
            (None, Some(duration)) => engine.measure_for(duration),
            (None, None) => {}
        }
        Ok(engine)
    }

    fn launch(&mut self, program: &OsString, args: &[OsString]) -> Result<(), StartError> {
        let pid = launch::spawn_seized(program, args, ptrace::trace_options(true))
            .map_err(|e| StartError(format!("cannot run {}: {e}", program.to_string_lossy())))?;
        self.main = pid;
        self.threads.insert(pid, Thread::new(pid, false));
        self.new_image(pid).map_err(|e| StartError(format!("cannot instrument {}: {e}", program.to_string_lossy())))?;
        self.debug_stop_at_entry(pid);
        self.resume(pid, 0);
        Ok(())
    }

    fn attach(&mut self, pid: Pid) -> Result<(), StartError> {
        let tasks =
            std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| StartError(format!("no process {pid}: {e}")))?;
        self.main = pid;
        // The signal each thread stopped with instead, to deliver.
        let mut signals = HashMap::new();
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|s| s.parse::<Pid>().ok()) else { continue };
            if ptrace::seize(tid, ptrace::trace_options(false)).is_err() || ptrace::interrupt(tid).is_err() {
                continue;
            }
            let mut thread = Thread::new(pid, false);
            match ptrace::wait(Some(tid)) {
                Ok(Some((_, Status::JobStop(_)))) => thread.listening = true,
                // The interrupt's stop follows this one; it is resumed then.
                Ok(Some((_, Status::Stopped(sig)))) => {
                    signals.insert(tid, sig);
                }
                Ok(Some((_, Status::Event(_)))) => {}
                _ => continue,
            }
            self.threads.insert(tid, thread);
        }
        if !self.threads.contains_key(&pid) {
            return Err(StartError(format!("cannot attach to process {pid} (permissions, or already traced)")));
        }
        self.new_image(pid).map_err(|e| StartError(format!("cannot instrument process {pid}: {e}")))?;
        let tids: Vec<(Pid, bool)> = self.threads.iter().map(|(&tid, t)| (tid, t.listening)).collect();
        for (tid, listening) in tids {
            if listening {
                let _ = ptrace::listen(tid);
            } else {
                self.resume(tid, signals.get(&tid).copied().unwrap_or(0));
            }
        }
        Ok(())
    }

    /// A fresh image for process `pid` (at its start or its exec): the
    /// modules mapped now probed, and the linker's rendezvous watched for
    /// the libraries it loads.
    fn new_image(&mut self, pid: Pid) -> io::Result<()> {
        let mut image = Image::new(pid)?;
        image.slots = (self.counters.free() >= PRIVATE_SLOTS_FREE).then(SlotMap::default);
        // One thread, at a launch or an exec; an attach finds any number.
        // In the slots the images share, other processes count beside it.
        image.shared = image.slots.is_none() || self.threads.values().filter(|t| t.pid == pid).count() > 1;
        if self.measuring {
            self.probe(&mut image)?;
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

    /// Probes the modules mapped into `image` now, and watches the linker's
    /// rendezvous for the libraries it loads later.
    fn probe(&mut self, image: &mut Image) -> io::Result<()> {
        let arm = self.config.collect.probes();
        image.scan(arm, &self.config.filter, &mut self.functions, &mut self.modules)?;
        let rendezvous = image.modules.iter().find_map(|m| {
            m.info.functions.iter().find(|f| &*f.name == "_dl_debug_state").map(|f| f.address.wrapping_add(m.bias))
        });
        if let Some(addr) = rendezvous {
            image.watch(addr, Internal::LinkerRendezvous)?;
        }
        Ok(())
    }

    /// The delayed start: every image probed, its threads stopped meanwhile.
    fn begin_measuring(&mut self) {
        self.measuring = true;
        let ids: Vec<usize> = self.images.keys().copied().collect();
        for id in ids {
            let stopped = self.stop_world(id, 0);
            let Some(mut image) = self.images.remove(&id) else { continue };
            if let Err(e) = self.probe(&mut image) {
                eprintln!("== CALIPER: cali-run: cannot instrument process {}: {e}", image.pid);
            }
            self.images.insert(id, image);
            self.resume_world(&stopped);
        }
        self.start_sampling();
        if let Some(duration) = self.config.duration {
            self.measure_for(duration);
        }
    }

    /// Opens the sampling event on the measured process, with `sample`.
    fn start_sampling(&mut self) {
        if !self.config.collect.sample {
            return;
        }
        let (name, event) = &self.config.sample_event;
        let opened = Sampler::open(self.main, *event, SAMPLES_PER_SECOND).or_else(|e| {
            if *event == TASK_CLOCK_EVENT {
                return Err(e);
            }
            let why = caliper_perf::why_refused(*event, &e);
            eprintln!("== CALIPER: cali-run: cannot sample on {name} ({why}); sampling on task-clock instead");
            Sampler::open(self.main, TASK_CLOCK_EVENT, SAMPLES_PER_SECOND)
        });
        match opened {
            Ok(sampler) => {
                self.sampler = Some(sampler);
                self.start_sample_drain();
            }
            Err(e) => eprintln!("== CALIPER: cali-run: cannot sample process {}: {e}", self.main),
        }
    }

    /// Ends the measurement `duration` from now.
    fn measure_for(&mut self, duration: Duration) {
        self.deadline = Instant::now().checked_add(duration);
        arm_timer(duration);
    }

    fn drop_image_if_unused(&mut self, image_id: usize) {
        if self.processes.values().any(|p| p.image == image_id) || !self.images.contains_key(&image_id) {
            return;
        }
        self.release_slots(image_id);
        let Some(image) = self.images.remove(&image_id) else { return };
        if self.config.collect.arcs {
            self.name_ended_image(image_id, image);
        } else {
            release_in_background(image);
        }
    }

    /// Runs until every traced process has exited (or been let go).
    pub fn run(self) -> Outcome {
        self.run_then(Teardown::Free)
    }

    /// Runs as [`Engine::run`] does, for a tool that exits next: the
    /// modules' data and the images' probes are left for the kernel to
    /// take back with the rest of the tool's memory (freeing a compiler's
    /// 45,000 names and probes one by one took 2 % of a short compile's
    /// run).
    pub fn run_then_exit(self) -> Outcome {
        self.run_then(Teardown::LeaveToExit)
    }

    fn run_then(mut self, teardown: Teardown) -> Outcome {
        // A bug of the tool must not cost the program its life: on a panic
        // the probes come out and the program runs on untraced.
        self.start_watchdog();
        self.start_site_passes();
        let followed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.follow()));
        if let Err(panic) = followed {
            self.recover(panic.as_ref());
        }
        self.finish(teardown)
    }

    /// The event loop, until every traced process has exited or been let go.
    fn follow(&mut self) {
        loop {
            if self.take_tool_signal() {
                break;
            }
            self.watch();
            self.drain_samples_when_due();
            self.pass_sites_when_due();
            if self.stalled {
                self.let_go_all();
                break;
            }
            if self.take_events() {
                self.let_go_all();
                break;
            }
            let (tid, status) = match self.pending.pop_front() {
                Some(event) => event,
                None => match ptrace::wait(None) {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        eprintln!("== CALIPER: cali-run: wait failed: {e}; the program runs on unmeasured");
                        self.let_go_all();
                        break;
                    }
                },
            };
            self.handle(tid, status);
        }
    }

    fn handle(&mut self, tid: Pid, status: Status) {
        // Samples are named while their processes' modules are known.
        self.take_samples();
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.held_at = None;
            // Stopped, whatever for, until resumed.
            thread.running = false;
        }
        match status {
            Status::Exited(code) => self.gone(tid, Exit::Code(code)),
            Status::Killed(sig) => self.gone(tid, Exit::Signal(sig)),
            Status::Event(ptrace::PTRACE_EVENT_STOP) => self.on_trap_stop(tid),
            Status::Event(event) => self.on_event(tid, event),
            Status::JobStop(_) => self.on_job_stop(tid),
            Status::Syscall => self.resume(tid, 0),
            Status::Stopped(sig) => self.on_stop(tid, sig),
        }
    }

    fn gone(&mut self, tid: Pid, how: Exit) {
        self.threads.remove(&tid);
        let process = self.processes.remove(&tid);
        if let Some(process) = &process {
            self.drop_image_if_unused(process.image);
        }
        if tid == self.main {
            self.exit = Some(how);
            self.debug_note_exit(how);
        }
        if process.is_some() || tid == self.main {
            self.notify(Event::Exit { pid: tid, exit: how });
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
                    self.threads.entry(new as Pid).or_insert(Thread::new(pid, true));
                }
                self.share_counters(pid, tid);
            }
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                let vfork = event == libc::PTRACE_EVENT_VFORK;
                let child = ptrace::event_message(tid).ok().map(|child| child as Pid);
                let waiting = child.is_some_and(|child| self.new_process(pid, child, vfork));
                // A vforked child runs while its parent waits for its exec
                // or exit: never beside it. A forked one runs a copy of its
                // parent's trampolines beside it, counting in the same slots:
                // atomically, before the child runs (one that had already
                // stopped, resumed first, ran its first instructions unlocked
                // and could exec before the tool was done with its image).
                if !vfork {
                    self.share_counters(pid, tid);
                    if let Some(child) = child {
                        self.share_counters(child, tid);
                    }
                }
                if let Some(child) = child.filter(|_| waiting) {
                    self.go_on_with_early_child(child, vfork);
                }
            }
            libc::PTRACE_EVENT_EXEC => self.on_exec(tid, pid),
            _ => {}
        }
        if !self.debug_failure_stop(tid) {
            self.resume(tid, 0);
        }
    }

    /// At the first thread of process `pid` beside its first, or the first
    /// process forked from it (stopped, as the thread `tid` that made it
    /// is): every increment of its image becomes atomic before a second
    /// thread can run it, and where there are per-processor counters, the
    /// image of `tid` counts in them.
    fn share_counters(&mut self, pid: Pid, tid: Pid) {
        let Some(image_id) = self.processes.get(&pid).map(|p| p.image) else { return };
        let Some(image) = self.images.get_mut(&image_id).filter(|i| !i.shared) else { return };
        image.shared = true;
        if let Err(e) = image.lock_all() {
            eprintln!("== CALIPER: cali-run: cannot make the counters atomic in process {}: {e}", image.pid);
        }
        if self.threads.get(&tid).is_some_and(|t| t.pid == pid) {
            self.spread_counters(tid);
        }
    }

    /// Follows `child`, forked (or vforked) by `parent`: whether it is
    /// waiting at its first stop, which came before the fork event (see
    /// [`Engine::go_on_with_early_child`]).
    fn new_process(&mut self, parent: Pid, child: Pid, vfork: bool) -> bool {
        let Some(parent_image) = self.processes.get(&parent).map(|p| p.image) else { return false };
        let follow = self.config.follow_fork;
        let image = if vfork {
            parent_image
        } else {
            match self.images[&parent_image].fork(child) {
                Ok(image) => {
                    let id = self.next_image;
                    self.next_image += 1;
                    self.images.insert(id, image);
                    if let Some(inherited) = self.arc_ids.get(&parent_image).cloned() {
                        self.arc_ids.insert(id, inherited);
                    }
                    id
                }
                Err(e) => {
                    eprintln!("== CALIPER: cali-run: cannot follow process {child}: {e}");
                    return false;
                }
            }
        };
        let process = Process { image, detach_at_exec: vfork && !follow, detach_at_start: !vfork && !follow };
        self.processes.insert(child, process);
        if self.early.remove(&child) {
            return true;
        }
        self.threads.insert(child, Thread::new(child, true));
        false
    }

    /// Goes on with a new `child` whose first stop came before its
    /// parent's fork event, as that stop would have.
    fn go_on_with_early_child(&mut self, child: Pid, vfork: bool) {
        if !vfork && !self.config.follow_fork {
            self.let_go(child, &HashMap::new());
        } else {
            self.resume(child, 0);
        }
    }

    fn on_exec(&mut self, tid: Pid, pid: Pid) {
        // The exec leaves one thread, with the process id.
        self.threads.retain(|&t, th| th.pid != pid || t == pid);
        if tid != pid {
            self.threads.remove(&tid);
            self.threads.insert(pid, Thread::new(pid, false));
        }
        let let_go = self.processes.get(&pid).is_some_and(|p| p.detach_at_exec)
            || !self.config.follow_exec
            || !self.config.exec_programs.is_empty() && {
                let program = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
                let program = program.to_string_lossy();
                !self.config.exec_programs.iter().any(|p| filter::matches_file(p, &program))
            };
        if let_go {
            if let Some(process) = self.processes.remove(&pid) {
                self.drop_image_if_unused(process.image);
            }
            self.threads.remove(&pid);
            let _ = ptrace::detach(pid, 0);
            return;
        }
        if let Err(e) = self.new_image(pid) {
            let failure = format!("cannot instrument process {pid} after exec: {e}");
            eprintln!("== CALIPER: cali-run: {failure}");
            self.debug_note_failure(failure);
        }
    }

    /// A stop for the tool with no signal (`PTRACE_EVENT_STOP`): a new
    /// thread's first stop, an interrupt of the tool's that a stop of
    /// world did not wait for, or a thread woken from its job control stop.
    fn on_trap_stop(&mut self, tid: Pid) {
        let Some(thread) = self.threads.get_mut(&tid) else {
            // A new thread or process whose first stop came before the
            // clone or fork event that announces it.
            let pid = ptrace::thread_group(tid);
            self.threads.insert(tid, Thread::new(pid, false));
            if self.processes.contains_key(&pid) {
                self.resume(tid, 0);
            } else {
                // A forked child: it must not run before its probes are
                // known (or taken out, if it is not followed).
                self.early.insert(tid);
            }
            return;
        };
        thread.running = false;
        thread.listening = false;
        let first = std::mem::take(&mut thread.expect_stop);
        let pid = thread.pid;
        if first && tid == pid && self.processes.get(&pid).is_some_and(|p| p.detach_at_start) {
            self.let_go(pid, &HashMap::new());
            return;
        }
        self.resume(tid, 0);
    }

    /// A signal for thread `tid`: one of our breakpoints, or the program's
    /// own signal, delivered.
    fn on_stop(&mut self, tid: Pid, sig: i32) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.running = false;
        }
        if sig == libc::SIGTRAP
            && let Ok(info) = ptrace::signal_info(tid)
            && info.si_code == libc::SI_KERNEL
            && self.on_breakpoint(tid)
        {
            self.traps += 1;
            return;
        }
        if self.debug_signal_stop(tid, sig) {
            return;
        }
        let pid = self.threads.get(&tid).map_or(tid, |t| t.pid);
        self.notify(Event::Signal { pid, tid, signal: sig });
        self.resume(tid, sig);
    }

    fn finish(mut self, teardown: Teardown) -> Outcome {
        self.take_samples();
        self.ended_images.finish();
        let live: Vec<usize> = self.images.keys().copied().collect();
        let arc_counts = self.take_site_arcs(&live);
        self.report_arc_table(&arc_counts);
        let counters = self.read_counters();
        self.functions.cover_counted(&counters);
        self.note_called();
        let samples_lost = self.sampler.as_ref().map_or(0, |s| s.lost);
        self.modules.save();
        let outcome = Outcome {
            exit: self.exit.unwrap_or(Exit::Detached),
            functions: self.functions,
            arcs: std::mem::take(&mut *lock(&self.arcs)).taken(&arc_counts, &counters),
            counters,
            stacks: self.stacks,
            samples_lost,
            samples_truncated: self.samples_truncated,
            traps: self.traps,
        };
        if teardown == Teardown::LeaveToExit {
            std::mem::forget(self.modules);
            std::mem::forget(self.images);
        }
        outcome
    }
}

/// Frees what an image that has ended held on another thread, where
/// there is one: a compiler's image (45,000 probes, its modules' pages and
/// names) took a millisecond and more to free, while its parent, stopped
/// at the news of its end, waited for the tool.
fn release_in_background(image: Image) {
    // Where no thread can be made, the image goes here, with the closure.
    let _ = std::thread::Builder::new().name("release".into()).spawn(move || drop(image));
}

/// What becomes of the engine's memory once it has run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Teardown {
    /// Freed: the engine lives in a library or a script.
    Free,
    /// Left to the tool's exit, which comes next.
    LeaveToExit,
}

/// Sends the tool SIGALRM after `after` (a real-time interval timer, so
/// fractions of a second count).
fn arm_timer(after: Duration) {
    let timer = libc::itimerval {
        it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 },
        it_value: libc::timeval {
            tv_sec: after.as_secs().min(i64::MAX as u64 / 2) as libc::time_t,
            tv_usec: after.subsec_micros().max(1) as libc::suseconds_t,
        },
    };
    // SAFETY: setitimer reads the struct passed and writes nothing else.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
}
