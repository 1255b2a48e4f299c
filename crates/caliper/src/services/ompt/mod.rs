//! `ompt`: OpenMP regions through the OpenMP tools interface. An OpenMP
//! runtime that has it (LLVM's libomp, used by `clang -fopenmp`) calls
//! `ompt_start_tool`, which libcaliper exports and answers with
//! [`start_tool`]: the tool is started when a channel enables `ompt` by
//! then (or `CALI_USE_OMPT=true`), and the runtime runs without one
//! otherwise (or with `CALI_USE_OMPT=false`).
//!
//! Attributes, as the reference names them:
//! * `omp.parallel` (the requested number of threads), `omp.work` (`loop`,
//!   `sections`, `single_executor`, `single_other`, `master`, ...) and
//!   `omp.sync` (`barrier_implicit_parallel`, `barrier_explicit`,
//!   `taskwait`, ...): regions, begun and ended on each thread of the team
//!   that runs them, with snapshots in the channels that have `ompt` only
//!   (they are subscription attributes);
//! * `omp.thread.type` (`initial`, `worker`), `omp.thread.id` (the thread's
//!   number in its team), `omp.num.threads` (the team's size, inside a
//!   parallel region) and `omp.proc.id` (the processor the implicit task
//!   began on): the thread's context;
//! * `omp.state` (`work_serial`, `work_parallel`, `wait_barrier_implicit_parallel`,
//!   `idle`, ...: OMPT's `ompt_state_t` names without `ompt_state_`): what
//!   the thread was doing, from the runtime's `ompt_get_state`, in every
//!   snapshot of a channel with `ompt`. A sample's is read in the
//!   sampler's signal handler (`sampled_state`), so that it is the state
//!   the thread was interrupted in, not the one it is in when the sample is
//!   processed.
//!
//! A parallel region's threads run in the region path of the thread that
//! opened it: at `parallel_begin` the encountering thread's region stack
//! (its regions, then `omp.parallel`) is kept with the parallel region,
//! and each worker's implicit task switches the worker's region stack to
//! it, and back when it ends. Regions the program opens on any thread of
//! the team thus nest under the region around the `#pragma omp parallel`,
//! not at the root of a worker's empty stack.
//!
//! GCC's libgomp has no tools interface: a channel with `ompt` in a
//! program that uses it says so in one line.

mod tool;

pub use tool::StartToolResult;
use tool::{Tool, tool};

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::blackboard::StackEntry;
use crate::log;
use crate::service::{ChannelView, GlobalRuntime, Runtime, Service, ServiceState, ThreadService, Trigger};
use crate::snapshot::Snapshot;
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once, OnceLock};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "ompt",
    aliases: &[],
    description: "OpenMP parallel regions, worksharing constructs and barriers through the OpenMP tools interface",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        HANDLERS.get_or_init(|| Handlers::new(setup.cali));
        WANTED.store(true, Ordering::Release);
        if tool() == Tool::Declined {
            static TOLD: Once = Once::new();
            TOLD.call_once(|| {
                log::error(format_args!(
                    "ompt: the OpenMP runtime started before the ompt service was enabled; \
                     set CALI_USE_OMPT=true to measure OpenMP regions"
                ))
            });
        }
        check_runtime();
        Ok(Created::Service(Arc::new(Ompt)))
    },
};

/// Whether a channel has enabled `ompt`.
static WANTED: AtomicBool = AtomicBool::new(false);

/// The event handlers, once the attributes are made.
static HANDLERS: OnceLock<Handlers> = OnceLock::new();

/// The OpenMP runtime's inquiry functions, once the tool is initialized.
static INQUIRY: OnceLock<Inquiry> = OnceLock::new();

/// The channels with `ompt`, a bit per id (ids from 64 on are left out):
/// their samples get `omp.state` in the signal handler.
static SAMPLED_CHANNELS: AtomicU64 = AtomicU64::new(0);

/// The OpenMP runtime's inquiry functions the service calls, those it has.
#[derive(Clone, Copy)]
pub(super) struct Inquiry {
    pub proc_id: Option<tool::GetProcId>,
    pub state: Option<tool::GetState>,
}

/// The answer to an OpenMP runtime's `ompt_start_tool`: the tool when a
/// channel of `cali` (the runtime, just initialized with the program's
/// configuration) enables `ompt`, or when `CALI_USE_OMPT` says so; NULL
/// otherwise, so that the OpenMP runtime runs without a tool.
pub fn start_tool(cali: Option<&dyn Runtime>) -> *mut StartToolResult {
    let wanted = use_ompt().unwrap_or_else(|| WANTED.load(Ordering::Acquire));
    match cali {
        Some(cali) if wanted => {
            HANDLERS.get_or_init(|| Handlers::new(cali));
            tool::start(true)
        }
        _ => tool::start(false),
    }
}

/// `CALI_USE_OMPT` (read from the environment only, as the reference
/// does): `Some(true)` or `Some(false)` forces the tool on or off.
fn use_ompt() -> Option<bool> {
    let value = std::env::var("CALI_USE_OMPT").ok()?;
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => {
            log::error(format_args!("Invalid value \"{value}\" for CALI_USE_OMPT (expected true or false)"));
            None
        }
    }
}

/// Keeps the OpenMP runtime's inquiry functions (from the tool's
/// initialization).
fn connect(inquiry: Inquiry) {
    INQUIRY.get_or_init(|| inquiry);
}

/// The calling thread's `omp.state` entry for a sample in channel
/// `channel`, if that channel has `ompt` and the OpenMP runtime tells the
/// state. Async-signal-safe: for the sampler's signal handler.
pub(super) fn sampled_state(channel: usize) -> Option<(Id, ValueKey)> {
    let bit = 1u64.checked_shl(u32::try_from(channel).ok()?)?;
    if SAMPLED_CHANNELS.load(Ordering::Acquire) & bit == 0 {
        return None;
    }
    HANDLERS.get()?.state()
}

/// Says once, when the program has GCC's libgomp and no OpenMP runtime
/// asked for a tool, that OpenMP regions cannot be measured.
fn check_runtime() {
    static TOLD: Once = Once::new();
    if tool() == Tool::NotAsked && has_libgomp() {
        TOLD.call_once(|| {
            log::error(format_args!(
                "ompt: the OpenMP runtime has no tools interface (GCC's libgomp); \
                 use LLVM's libomp (clang -fopenmp) to measure OpenMP regions"
            ))
        });
    }
}

/// Whether the OpenMP runtime loaded is GCC's libgomp: it has
/// `GOMP_parallel` and not libomp's `__kmpc_fork_call` (libomp has both,
/// for programs built by GCC).
fn has_libgomp() -> bool {
    let has = |name: &[u8]| {
        // SAFETY: a NUL-terminated name, looked up in the global scope.
        !unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) }.is_null()
    };
    has(b"GOMP_parallel\0") && !has(b"__kmpc_fork_call\0")
}

/// The channel's part: the subscriptions, `omp.state` in its snapshots,
/// and the libgomp check at flush (a program may load its OpenMP runtime
/// after the channel starts).
struct Ompt;

impl Service for Ompt {
    fn name(&self) -> &'static str {
        "ompt"
    }

    fn subscriptions(&self) -> &'static [&'static str] {
        &["omp.parallel", "omp.work", "omp.sync"]
    }

    fn measures(&self) -> bool {
        true
    }

    fn attach(&self, channel: usize) {
        if let Some(bit) = u32::try_from(channel).ok().and_then(|c| 1u64.checked_shl(c)) {
            SAMPLED_CHANNELS.fetch_or(bit, Ordering::AcqRel);
        }
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(StateReader)
    }

    fn pre_flush(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        check_runtime();
    }
}

/// A thread's part of the service: adds `omp.state` to the channel's
/// snapshots.
struct StateReader;

impl ThreadService for StateReader {
    /// The thread's state now; a sample has it from the signal handler
    /// already (see [`sampled_state`]).
    fn measure(&mut self, _cali: &dyn Runtime, snapshot: &mut Snapshot, trigger: &Trigger) {
        if let (false, Some((attr, state))) = (trigger.in_signal, HANDLERS.get().and_then(Handlers::state)) {
            snapshot.push_value(attr, state);
        }
    }
}

/// `ompt_state_t` values, as omp-tools.h numbers them, and their names as
/// `omp.state` values.
const STATES: [(c_int, &str); 23] = [
    (0x000, "work_serial"),
    (0x001, "work_parallel"),
    (0x002, "work_reduction"),
    (0x010, "wait_barrier"),
    (0x011, "wait_barrier_implicit_parallel"),
    (0x012, "wait_barrier_implicit_workshare"),
    (0x013, "wait_barrier_implicit"),
    (0x014, "wait_barrier_explicit"),
    (0x015, "wait_barrier_implementation"),
    (0x016, "wait_barrier_teams"),
    (0x020, "wait_taskwait"),
    (0x021, "wait_taskgroup"),
    (0x040, "wait_mutex"),
    (0x041, "wait_lock"),
    (0x042, "wait_critical"),
    (0x043, "wait_atomic"),
    (0x044, "wait_ordered"),
    (0x080, "wait_target"),
    (0x081, "wait_target_map"),
    (0x082, "wait_target_update"),
    (0x100, "idle"),
    (0x101, "overhead"),
    (0x102, "undefined"),
];

/// `ompt_work_t` names by value (0: none such), then `master`.
const WORK_NAMES: [&str; 10] = [
    "unknown",
    "loop",
    "sections",
    "single_executor",
    "single_other",
    "workshare",
    "distribute",
    "taskloop",
    "scope",
    "master",
];
/// The index of `master` in [`WORK_NAMES`].
const MASTER: usize = WORK_NAMES.len() - 1;

/// `ompt_sync_region_t` names by value (0: none such).
const SYNC_NAMES: [&str; 11] = [
    "unknown",
    "barrier",
    "barrier_implicit",
    "barrier_explicit",
    "barrier_implementation",
    "taskwait",
    "taskgroup",
    "reduction",
    "barrier_implicit_workshare",
    "barrier_implicit_parallel",
    "barrier_teams",
];

/// `ompt_thread_t` names by value (0: none such).
const THREAD_NAMES: [&str; 5] = ["unknown", "initial", "worker", "other", "unknown"];

/// The index of an OMPT enum value in a table of names: 0 if out of it.
fn index_in(value: c_int, names: &[&str]) -> usize {
    usize::try_from(value).ok().filter(|&i| i < names.len()).unwrap_or(0)
}

/// What the team of a parallel region runs in: the encountering thread's
/// region stack, `omp.parallel` innermost.
pub(super) struct Team {
    path: Vec<StackEntry>,
}

/// A worker's region stack set aside while it runs an implicit task.
struct SetAside {
    /// Entries below this index were common to both stacks and stayed.
    keep: usize,
    thread: Vec<StackEntry>,
}

impl SetAside {
    /// Puts the worker's own stack back in place of the team's.
    fn restore(self, cali: &dyn Runtime) {
        cali.replace_regions(self.keep, &self.thread, &mut Vec::new());
    }
}

thread_local! {
    /// The thread's implicit tasks, innermost last: `Some` where the task
    /// switched the thread's region stack to its team's.
    static TASKS: RefCell<Vec<Option<SetAside>>> = const { RefCell::new(Vec::new()) };
}

/// The OMPT events as updates of the runtime.
pub(super) struct Handlers {
    runtime: GlobalRuntime,
    parallel: Attribute,
    work: Attribute,
    sync: Attribute,
    thread_type: Attribute,
    thread_id: Attribute,
    num_threads: Attribute,
    proc_id: Attribute,
    state: Attribute,
    /// The [`STATES`] names, interned at start: a signal handler cannot.
    states: [ValueKey; STATES.len()],
    works: [ValueKey; WORK_NAMES.len()],
    syncs: [ValueKey; SYNC_NAMES.len()],
    threads: [ValueKey; THREAD_NAMES.len()],
}

impl Handlers {
    fn new(cali: &dyn Runtime) -> Handlers {
        let subscription = cali.find_attribute("subscription_event").map(|a| a.id());
        let meta: Vec<(Id, Variant)> = subscription.into_iter().map(|m| (m, Variant::Bool(true))).collect();
        let region = |name: &str, ty: AttrType| cali.create_attribute(name, ty, Properties::DEFAULT, &meta);
        // The thread's context: in the context tree (so that profiles keep
        // it in their keys) but off the region stack (so that a team does
        // not take the encountering thread's along).
        let context = Properties::UNALIGNED | Properties::SKIP_EVENTS;
        let int = |name: &str| cali.create_attribute(name, AttrType::Int, context, &[]);
        Handlers {
            runtime: cali.global(),
            parallel: region("omp.parallel", AttrType::Uint),
            work: region("omp.work", AttrType::String),
            sync: region("omp.sync", AttrType::String),
            thread_type: cali.create_attribute("omp.thread.type", AttrType::String, context, &[]),
            thread_id: int("omp.thread.id"),
            num_threads: int("omp.num.threads"),
            proc_id: int("omp.proc.id"),
            state: cali.create_attribute(
                "omp.state",
                AttrType::String,
                Properties::ASVALUE | Properties::SKIP_EVENTS,
                &[],
            ),
            states: STATES.map(|(_, name)| ValueKey::string(name)),
            works: WORK_NAMES.map(ValueKey::string),
            syncs: SYNC_NAMES.map(ValueKey::string),
            threads: THREAD_NAMES.map(ValueKey::string),
        }
    }

    /// A thread of the OpenMP runtime begins (`kind` an `ompt_thread_t`);
    /// the initial thread is thread 0 outside parallel regions too.
    fn thread_begin(&self, kind: c_int) {
        let Some(cali) = (self.runtime)() else { return };
        let kind = index_in(kind, &THREAD_NAMES);
        cali.set(self.thread_type, self.threads[kind]);
        if THREAD_NAMES[kind] == "initial" {
            cali.set(self.thread_id, ValueKey::int(0));
        }
    }

    /// The encountering thread opens a parallel region of `requested`
    /// threads: the team's path is its region stack from then on.
    fn parallel_begin(&self, requested: u32) -> Team {
        let mut path = Vec::new();
        if let Some(cali) = (self.runtime)() {
            cali.begin(self.parallel, ValueKey::uint(requested.into()));
            cali.region_stack(&mut path);
        }
        Team { path }
    }

    fn parallel_end(&self) {
        if let Some(cali) = (self.runtime)() {
            cali.end(self.parallel);
        }
    }

    /// Thread `index` of a team of `threads` begins its implicit task: a
    /// worker (any but thread 0, the encountering thread) takes the
    /// team's path.
    fn implicit_task_begin(&self, team: Option<&Team>, threads: u32, index: u32) {
        let Some(cali) = (self.runtime)() else { return };
        cali.set(self.thread_id, ValueKey::int(index.into()));
        cali.set(self.num_threads, ValueKey::int(threads.into()));
        // SAFETY: the runtime's `ompt_get_proc_id`, callable on any thread.
        if let Some(proc_id) = INQUIRY.get().and_then(|i| i.proc_id).map(|f| unsafe { f() }) {
            cali.set(self.proc_id, ValueKey::int(proc_id.into()));
        }
        let set_aside = team.filter(|_| index != 0).map(|team| {
            let mut thread = Vec::new();
            let keep = cali.switch_regions(&team.path, &mut thread);
            SetAside { keep, thread }
        });
        let _ = TASKS.try_with(|tasks| tasks.borrow_mut().push(set_aside));
    }

    /// The thread's implicit task ends: a worker's own stack comes back,
    /// if it has not at the team's last barrier.
    fn implicit_task_end(&self) {
        let Some(cali) = (self.runtime)() else { return };
        if let Ok(Some(set_aside)) = TASKS.try_with(|tasks| tasks.borrow_mut().pop().flatten()) {
            set_aside.restore(cali);
        }
        cali.end(self.num_threads);
    }

    /// A worker begins the barrier that ends its team's parallel region:
    /// its own region stack comes back now. LLVM's libomp ends that
    /// barrier, and the implicit task, only when it next releases the
    /// worker (at the next parallel region, or never for the last): the
    /// worker's wait in the pool in between would otherwise count in the
    /// team's region path, long after the region ended.
    fn leave_team(&self, cali: &dyn Runtime) {
        let top = TASKS.try_with(|tasks| tasks.borrow_mut().last_mut().and_then(Option::take));
        if let Ok(Some(set_aside)) = top {
            set_aside.restore(cali);
        }
    }

    /// The calling thread's `omp.state` entry, if the runtime tells it.
    /// Async-signal-safe: `ompt_get_state` is, and the names are interned.
    fn state(&self) -> Option<(Id, ValueKey)> {
        let get_state = INQUIRY.get()?.state?;
        // SAFETY: the runtime's `ompt_get_state`, which takes NULL for the
        // wait id, callable on any thread.
        let state = unsafe { get_state(std::ptr::null_mut()) };
        let i = STATES.iter().position(|&(value, _)| value == state)?;
        Some((self.state.id(), self.states[i]))
    }

    /// A worksharing construct (`ompt_work_t` `kind`) begins or ends.
    fn work(&self, kind: usize, begin: bool) {
        self.region(self.work, self.works[kind], begin);
    }

    /// A synchronization region (`ompt_sync_region_t` `kind`) begins or
    /// ends; `ends_team` for the barrier at the end of a parallel region.
    fn sync(&self, kind: c_int, begin: bool, ends_team: bool) {
        if let (true, true, Some(cali)) = (begin, ends_team, (self.runtime)()) {
            self.leave_team(cali);
        }
        self.region(self.sync, self.syncs[index_in(kind, &SYNC_NAMES)], begin);
    }

    fn region(&self, attr: Attribute, value: ValueKey, begin: bool) {
        if let Some(cali) = (self.runtime)() {
            match begin {
                true => cali.begin(attr, value),
                false => cali.end(attr),
            }
        }
    }
}

/// The index in [`WORK_NAMES`] of an `ompt_work_t`.
fn work_index(kind: c_int) -> usize {
    index_in(kind, &WORK_NAMES[..MASTER])
}
