//! The runtime: the process-wide state (context tree, attributes, process
//! blackboard, channels, threads), initialised on first use and flushed
//! when the program ends.

use crate::attributes::{Attribute, AttributeInfo, Registry};
use crate::blackboard::{Blackboard, ChildCache, EndError};
use crate::channel::{Channel, EventKind, Service};
use crate::config::RuntimeConfig;
use crate::contain::contain;
use crate::log;
use crate::services::{self, Created, NotCreated};
use crate::signal;
use crate::snapshot::Snapshot;
use crate::sync::{self, StopUpdates};
use crate::thread::{ActiveChannels, ThreadData, ThreadSlot};
use crate::tree::ContextTree;
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, RecordKind, Variant};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock, RwLock};

mod embed;

/// The version this runtime reports as `cali.caliper.version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Attributes every program has.
pub struct Builtins {
    /// `region`: code regions.
    pub region: Attribute,
    /// `phase`: coarse program phases (level 4).
    pub phase: Attribute,
    /// `comm.region`: communication regions (level 1).
    pub comm_region: Attribute,
    /// `loop`: loops.
    pub loop_attr: Attribute,
    /// `class.iteration`: marks loop iteration attributes.
    pub class_iteration: Attribute,
    /// `cali.channel`: a channel's name (global).
    pub channel: Attribute,
    /// `starttime.sec` / `starttime.nsec`: when a channel started (global).
    pub starttime_sec: Attribute,
    /// See `starttime_sec`.
    pub starttime_nsec: Attribute,
}

/// The process context: its blackboard and the snapshot entries made of it.
struct ProcessContext {
    blackboard: Blackboard,
    cache: ChildCache,
    entries: Arc<Snapshot>,
}

/// The process-wide runtime state.
pub struct Caliper {
    pub(crate) tree: ContextTree,
    pub(crate) registry: Registry,
    builtins: Builtins,
    config: RuntimeConfig,
    channels: RwLock<Vec<Arc<Channel>>>,
    /// Held while a channel is being created (see `create_channel_with`).
    creating_channel: Mutex<()>,
    channels_version: AtomicU64,
    /// How many channels are active: with none, updates skip the event
    /// machinery altogether.
    active_channels: AtomicUsize,
    process: Mutex<ProcessContext>,
    process_version: AtomicU64,
    threads: Mutex<Vec<Arc<ThreadSlot>>>,
    pid: u32,
    /// In a forked child, its pid, set once the fork has been taken care
    /// of (see [`after_fork_in_child`]).
    forked_pid: AtomicU32,
    finished: AtomicBool,
    /// Mismatched ends so far.
    stack_errors: AtomicU64,
}

static CALIPER: OnceLock<Caliper> = OnceLock::new();
/// Set when a service asked for a flush from inside an update (see
/// [`request_deferred_flush`]).
static DEFERRED_FLUSH: AtomicBool = AtomicBool::new(false);

/// Asks the runtime to flush the channels whose services want it once the
/// calling thread's update is done (a flush cannot run inside one).
pub(crate) fn request_deferred_flush() {
    DEFERRED_FLUSH.store(true, Ordering::Release);
}
static POST_INIT: Once = Once::new();
/// Set once the runtime is fully initialised.
static READY: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set on the thread that initialises the runtime, while it does.
    static INITIALIZING: Cell<bool> = const { Cell::new(false) };
    /// The calling thread's slot, registered on first use.
    static THREAD: Option<Registration> = Caliper::instance().map(|c| c.register_thread());
    /// A plain pointer to the same slot, for the hot path: reading a
    /// `const`-initialised thread local needs no initialisation check.
    /// Cleared before the slot can go (see [`Registration`]).
    static SLOT: Cell<*const ThreadSlot> = const { Cell::new(std::ptr::null()) };
}

/// The calling thread's slot for as long as the thread lives. At thread
/// exit its drop hands what the thread measured to the channels and frees
/// the slot, so that threads that have come and gone cost no memory.
struct Registration {
    cali: &'static Caliper,
    slot: Arc<ThreadSlot>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: plain queries without pointers.
        if unsafe { libc::gettid() == libc::getpid() } {
            // The main thread's destructors run in `exit()`, before the
            // flush at exit and the C++ static destructors, which may still
            // annotate; the slot stays (the list keeps it), as the process
            // ends anyway.
            return;
        }
        // The slot stays the thread's during the hand-over, so that a
        // signal handler's flush or update on this thread sees it busy.
        contain("Thread exit", || self.cali.retire_thread(&self.slot));
        // Other thread-local destructors may still annotate: they find no
        // slot (`THREAD` is gone) and are not recorded.
        SLOT.with(|s| s.set(std::ptr::null()));
    }
}

/// The calling thread's slot; `None` while the thread is being torn down.
#[inline]
fn current_slot() -> Option<&'static ThreadSlot> {
    let p = SLOT.with(|s| s.get());
    if !p.is_null() {
        // SAFETY: the pointer comes from the `Arc` of the thread's
        // `Registration`, which clears it before letting go of the slot.
        return Some(unsafe { &*p });
    }
    let slot = THREAD.try_with(|h| h.as_ref().map(|h| Arc::as_ptr(&h.slot))).ok().flatten()?;
    SLOT.with(|s| s.set(slot));
    // SAFETY: as above.
    Some(unsafe { &*slot })
}

/// The async-signal-safe part of
/// [`signal::push_snapshot_from_signal`]: reads only atomics, the
/// thread's slot pointer (a constant-initialised thread local) and the
/// thread's data, and writes the capture into the thread's buffer.
pub(crate) fn capture_in_signal(channel: usize, trigger: &[(Id, ValueKey)]) -> signal::Outcome {
    use signal::{Entries, Outcome, StackCut};
    let ready = READY.load(Ordering::Acquire) && CALIPER.get().is_some_and(|c| !c.finished.load(Ordering::Relaxed));
    let slot = SLOT.with(Cell::get);
    if !ready || slot.is_null() {
        return Outcome::NoThread;
    }
    // SAFETY: the slot outlives the pointer (see `current_slot`); a signal
    // handler runs on the thread that owns it.
    let slot = unsafe { &*slot };
    let outcome = slot.update_in_signal(|t, active| {
        let Some(captures) = t.captures.as_mut() else { return Outcome::NoThread };
        let (Some(ch), Some(Some(ct))) = (active.list.iter().find(|c| c.id() == channel), t.channels.get_mut(channel))
        else {
            return Outcome::Unfit;
        };
        let Some(capture) = captures.next_free() else { return Outcome::Full };
        let cut = |stack: &crate::blackboard::Stack| {
            let (node, open) = stack.cut();
            Some(StackCut { node, open: Entries::of(open.iter().map(|e| (e.attr.id(), e.value)))? })
        };
        let context = t.blackboard.values.iter().filter(|(a, _)| !a.properties().is_hidden());
        let values = Entries::of(context.map(|(a, v)| (a.id(), *v)).chain(trigger.iter().copied()));
        let (Some(regions), Some(unaligned), Some(values)) =
            (cut(&t.blackboard.regions), cut(&t.blackboard.unaligned), values)
        else {
            return Outcome::Unfit;
        };
        *capture = signal::Capture {
            channel,
            regions,
            unaligned,
            values,
            trigger: trigger.len(),
            time: None,
            measured: [0; signal::MAX_MEASURED],
        };
        if !ch.measure_capture(ct, &mut capture.time, &mut capture.measured) {
            return Outcome::Unfit;
        }
        captures.commit();
        active.version |= CAPTURES_WAITING;
        Outcome::Taken
    });
    outcome.unwrap_or(Outcome::Busy)
}

/// Set in a thread's [`ActiveChannels::version`] by a signal handler that
/// left a capture in the thread's buffer: the next update's check of the
/// version then processes it. Channel-list versions never reach it.
const CAPTURES_WAITING: u64 = 1 << 63;

/// Registers the calling thread (outside any signal handler) and makes
/// its signal snapshot buffer (see [`signal::prepare_thread`]); every
/// other thread makes its own at its next update.
pub(crate) fn prepare_thread_for_signals() {
    if let Some(c) = Caliper::instance() {
        c.channels_version.fetch_add(1, Ordering::AcqRel);
        c.with_thread(|t, active| {
            t.captures.get_or_insert_with(signal::Captures::new);
            c.refresh_active(t, active);
            for channel in &active.list {
                channel.prepare_thread(c, t);
            }
        });
    }
}

extern "C" fn finish_at_exit() {
    let Some(c) = CALIPER.get() else { return };
    // Checked before anything allocates (`contain` does).
    if !c.may_finish() {
        return;
    }
    // Never let a panic cross into the C runtime's exit path.
    contain("Flush at exit", || c.finish());
}

/// In a forked child, where only the forking thread exists: the parent's
/// other threads must not hold up the child. Their data, copied at the
/// fork, is flushed with the child's own unless a thread was inside an
/// update then. If one of them held a runtime lock, which stays held for
/// good in the child (and guards data it may have left half-changed), the
/// runtime is off in the child: its annotations do nothing and it writes
/// no report, rather than wait for ever.
extern "C" fn after_fork_in_child() {
    if let Some(c) = CALIPER.get() {
        let own = SLOT.with(Cell::get);
        if let Ok(threads) = c.threads.try_lock() {
            for slot in threads.iter().filter(|s| !std::ptr::eq(Arc::as_ptr(s), own)) {
                slot.busy.settle_after_fork();
            }
        }
        sync::reset_after_fork();
        if let Some(lock) = c.lock_held_by_another_thread() {
            c.finished.store(true, Ordering::Release);
            log::error_in_forked_child(format_args!(
                "Forked child process: Caliper is off in this process: another thread held {lock} at the fork"
            ));
        }
        c.forked_pid.store(std::process::id(), Ordering::Release);
    }
}

impl Caliper {
    /// The runtime, initialised on first use; `None` after it has finished
    /// (at program exit), or when called again from inside the
    /// initialisation. Threads that arrive while another thread initialises
    /// wait for it.
    #[inline]
    pub fn instance() -> Option<&'static Caliper> {
        if READY.load(Ordering::Acquire) {
            let c = CALIPER.get()?;
            return (!c.finished.load(Ordering::Relaxed)).then_some(c);
        }
        Caliper::init()
    }

    #[cold]
    fn init() -> Option<&'static Caliper> {
        if INITIALIZING.with(Cell::get) {
            return None;
        }
        INITIALIZING.with(|i| i.set(true));
        let c = CALIPER.get_or_init(Caliper::new);
        POST_INIT.call_once(|| c.post_init());
        INITIALIZING.with(|i| i.set(false));
        READY.store(true, Ordering::Release);
        (!c.finished.load(Ordering::Relaxed)).then_some(c)
    }

    /// Whether the runtime has been initialised.
    pub fn is_initialized() -> bool {
        CALIPER.get().is_some()
    }

    fn new() -> Caliper {
        let config = crate::default_config::take();
        log::set_verbosity(config.get_number("CALI_LOG_VERBOSITY", 0u32));
        if let Some(dest) = config.get("CALI_LOG_LOGFILE") {
            log::set_destination(&dest);
        }
        let default_scope = match config.get_or("CALI_CALIPER_ATTRIBUTE_DEFAULT_SCOPE", "thread").as_str() {
            "process" => Properties::SCOPE_PROCESS,
            "thread" => Properties::SCOPE_THREAD,
            other => {
                log::error(format_args!("Invalid value \"{other}\" for CALI_CALIPER_ATTRIBUTE_DEFAULT_SCOPE"));
                Properties::SCOPE_THREAD
            }
        };
        let tree = ContextTree::new();
        let mut registry = Registry::new(&tree, &config.get_or("CALI_CALIPER_ATTRIBUTE_PROPERTIES", ""), default_scope);
        let class = |registry: &Registry, name: &str| {
            registry.create(&tree, name, AttrType::Bool, Properties::SKIP_EVENTS, &[]).0
        };
        let aggregatable = class(&registry, "class.aggregatable");
        registry.set_aggregatable_class(aggregatable.id());
        for name in ["class.symboladdress", "class.memoryaddress"] {
            class(&registry, name);
        }
        let class_iteration = class(&registry, "class.iteration");
        class(&registry, "subscription_event");
        let create = |name: &str, ty, props| registry.create(&tree, name, ty, props, &[]).0;
        let global = Properties::GLOBAL | Properties::SKIP_EVENTS;
        let builtins = Builtins {
            region: create("region", AttrType::String, Properties::NESTED),
            phase: create("phase", AttrType::String, Properties::NESTED.with_level(4)),
            comm_region: create("comm.region", AttrType::String, Properties::NESTED.with_level(1)),
            loop_attr: create("loop", AttrType::String, Properties::NESTED),
            class_iteration,
            channel: create("cali.channel", AttrType::String, global),
            starttime_sec: create("starttime.sec", AttrType::Uint, global),
            starttime_nsec: create("starttime.nsec", AttrType::Uint, global),
        };
        let version = create("cali.caliper.version", AttrType::String, global);
        let mut process =
            ProcessContext { blackboard: Blackboard::default(), cache: ChildCache::default(), entries: Arc::default() };
        process.blackboard.set(version, ValueKey::string(VERSION));
        sync::init();
        Caliper {
            tree,
            registry,
            builtins,
            config,
            channels: RwLock::new(Vec::new()),
            creating_channel: Mutex::new(()),
            channels_version: AtomicU64::new(0),
            active_channels: AtomicUsize::new(0),
            process: Mutex::new(process),
            process_version: AtomicU64::new(1),
            threads: Mutex::new(Vec::new()),
            pid: std::process::id(),
            forked_pid: AtomicU32::new(0),
            finished: AtomicBool::new(false),
            stack_errors: AtomicU64::new(0),
        }
    }

    /// Work that needs the runtime in place: the process context's entries,
    /// exit and fork handlers, the default channel.
    fn post_init(&'static self) {
        {
            let mut p = self.lock_process();
            self.rebuild_process_entries(&mut p);
        }
        // SAFETY: registering plain extern "C" functions.
        unsafe {
            libc::atexit(finish_at_exit);
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
        if !self.config.get_list("CALI_SERVICES_ENABLE", true).is_empty() {
            let channel = self.create_channel("default", self.config.clone());
            self.set_channel_active(&channel, true);
        }
        if let Some(config_string) = self.config.get("CALI_CONFIG") {
            crate::configmgr::start_from_env(self, &config_string);
        }
        log::info(format_args!("Initialized"));
    }

    /// The attributes every program has.
    pub fn builtins(&self) -> &Builtins {
        &self.builtins
    }

    /// The process's default configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The context tree.
    pub fn tree(&self) -> &ContextTree {
        &self.tree
    }

    fn register_thread(&'static self) -> Registration {
        let mut threads = sync::lock(&self.threads);
        let slot = Arc::new(ThreadSlot::new());
        threads.push(slot.clone());
        Registration { cali: self, slot }
    }

    /// At thread exit: the channels take over what the thread measured
    /// (see [`Channel::retire`]), and the thread list lets go of its slot.
    ///
    /// The hand-over is an update of the thread's data, made inside its
    /// busy flag like any other: a flush either has read the data before
    /// (and the hand-over waited for it), or reads it after, in the
    /// channels, finding the slot empty (a flush that took its list of
    /// slots before the slot left it). So the data is flushed once. When
    /// updates are refused (stopped for good at exit, or the thread exits
    /// from a signal handler that interrupted an update), the slot stays in
    /// the list as it is, and a flush still reads it there. So it does when
    /// the thread exits with regions open, which the validator's report at
    /// exit names (a rare case: a program's threads close what they open),
    /// or when a signal handler that interrupted the runtime ends the
    /// thread or the program.
    fn retire_thread(&self, slot: &Arc<ThreadSlot>) {
        if interrupted_in_runtime() {
            // `exit()` from a signal handler runs the exiting thread's
            // destructors: the locks and allocations below could wait for
            // the interrupted code or corrupt the heap.
            return;
        }
        let handed_over = slot.update(|t, _| {
            if !(t.blackboard.regions.is_empty() && t.blackboard.unaligned.is_empty()) {
                return false;
            }
            let channels = self.all_channels();
            self.process_captures(t, &channels);
            for (ct, channel) in std::mem::take(&mut t.channels).into_iter().zip(&channels) {
                if let Some(ct) = ct {
                    channel.retire(self, ct);
                }
            }
            true
        });
        if handed_over == Some(true) {
            sync::lock(&self.threads).retain(|s| !Arc::ptr_eq(s, slot));
        }
    }

    /// Every thread that uses the runtime, and threads that have exited
    /// while updates were refused.
    pub(crate) fn thread_slots(&self) -> Vec<Arc<ThreadSlot>> {
        sync::lock(&self.threads).clone()
    }

    fn lock_process(&self) -> sync::Held<std::sync::MutexGuard<'_, ProcessContext>> {
        sync::lock(&self.process)
    }

    // ----- attributes -----

    /// Creates attribute `name` (or returns the existing one) and tells
    /// every channel about a new one.
    pub fn create_attribute(
        &self,
        name: &str,
        ty: AttrType,
        props: Properties,
        metadata: &[(Id, Variant)],
    ) -> Attribute {
        let (attr, created) = self.registry.create(&self.tree, name, ty, props, metadata);
        if created {
            for channel in self.all_channels() {
                channel.mark_attribute(self, attr, name);
            }
        }
        attr
    }

    /// The attribute `name`.
    pub fn find_attribute(&self, name: &str) -> Option<Attribute> {
        self.registry.find(name)
    }

    /// What the runtime knows about attribute `id`.
    pub fn attribute_info(&self, id: Id) -> Option<AttributeInfo> {
        self.registry.info(id)
    }

    /// The attribute `iteration#<loop>` for a loop's iterations.
    pub fn iteration_attribute(&self, loop_name: &str) -> Attribute {
        self.create_attribute(
            &format!("iteration#{loop_name}"),
            AttrType::Int,
            Properties::ASVALUE,
            &[(self.builtins.class_iteration.id(), Variant::Bool(true))],
        )
    }

    // ----- updates -----

    /// Runs `f` with the calling thread's data and active channels, if the
    /// thread may update them.
    #[inline]
    fn with_thread<R>(&self, f: impl FnOnce(&mut ThreadData, &mut ActiveChannels) -> R) -> Option<R> {
        current_slot()?.update(f)
    }

    /// After an update that took snapshots: runs the flushes services asked
    /// for while processing them (a flush cannot run inside the update).
    #[inline(always)]
    pub(crate) fn after_snapshots(&self) {
        if DEFERRED_FLUSH.load(Ordering::Relaxed) {
            self.run_deferred_flushes();
        }
    }

    /// Flushes (writes and clears) the channels whose services asked for it.
    #[cold]
    fn run_deferred_flushes(&self) {
        if !DEFERRED_FLUSH.swap(false, Ordering::AcqRel) {
            return;
        }
        for channel in self.all_channels() {
            if channel.services().iter().any(|s| s.take_flush_request()) {
                log::info(format_args!("{}: Trace buffer full, flushing", channel.name()));
                // One stop for the write and the clear, so that no snapshot
                // lands between them (cleared unwritten).
                self.with_updates_stopped(|| {
                    self.flush_and_write(&channel);
                    self.clear(&channel);
                });
            }
        }
    }

    /// Refreshes a thread's list of active channels if it changed.
    /// The same check tells an update that signal snapshots wait in the
    /// thread's buffer: the handler that takes one marks the list's version
    /// ([`CAPTURES_WAITING`]), so that updates pay nothing for it.
    #[inline]
    fn refresh_active(&self, t: &mut ThreadData, active: &mut ActiveChannels) {
        let version = self.channels_version.load(Ordering::Acquire);
        if active.version != version {
            self.reload_active(t, active, version);
        }
    }

    #[cold]
    #[inline(never)]
    fn reload_active(&self, t: &mut ThreadData, active: &mut ActiveChannels, version: u64) {
        if active.version & !CAPTURES_WAITING != version {
            active.list = self.all_channels().into_iter().filter(|c| c.is_active()).collect();
        }
        active.version = version;
        if signal::WANTED.load(Ordering::Acquire) {
            match &t.captures {
                None => t.captures = Some(signal::Captures::new()),
                Some(c) if !c.is_empty() => self.process_captures(t, &active.list),
                Some(_) => {}
            }
            // A capture holds only a few stack entries without nodes: give
            // the thread's current entries theirs.
            t.blackboard.regions.node(&self.tree, &mut t.cache);
            t.blackboard.unaligned.node(&self.tree, &mut t.cache);
        }
    }

    /// Whether an update of `attr` may take snapshots. Checked inline by
    /// the updates, so that with no active channel they make no call.
    #[inline(always)]
    fn notifies(&self, attr: Attribute) -> bool {
        !attr.properties().skips_events() && self.active_channels.load(Ordering::Relaxed) != 0
    }

    /// Lets every active channel see an update before it happens (call
    /// when [`Caliper::notifies`]).
    #[inline(never)]
    fn notify(
        &self,
        t: &mut ThreadData,
        active: &mut ActiveChannels,
        kind: EventKind,
        attr: Attribute,
        value: ValueKey,
    ) {
        self.refresh_active(t, active);
        for channel in &active.list {
            channel.on_update(self, t, kind, attr, value);
        }
    }

    /// Begins `attr = value` on the calling thread (or the process, for a
    /// process-scope attribute).
    #[inline]
    pub fn begin(&self, attr: Attribute, value: ValueKey) {
        let notified = self.with_thread(|t, active| {
            if !t.tracking {
                return false;
            }
            let notifies = self.notifies(attr);
            if notifies {
                self.notify(t, active, EventKind::Begin, attr, value);
            }
            if attr.is_process_scope() {
                self.update_process(|bb| bb.begin(attr, value));
            } else {
                t.blackboard.begin(attr, value);
            }
            notifies
        });
        if notified == Some(true) {
            self.after_snapshots();
        }
    }

    /// Sets `attr = value`.
    pub fn set(&self, attr: Attribute, value: ValueKey) {
        let notified = self.with_thread(|t, active| {
            if !t.tracking {
                return false;
            }
            let notifies = self.notifies(attr);
            if notifies {
                self.notify(t, active, EventKind::Set, attr, value);
            }
            if attr.is_process_scope() {
                self.update_process(|bb| bb.set(attr, value));
            } else {
                t.blackboard.set(attr, value);
            }
            notifies
        });
        if notified == Some(true) {
            self.after_snapshots();
        }
    }

    /// Ends the innermost value of `attr`; with `expect`, only if it is
    /// that value. A mismatch is logged and stops tracking on the thread.
    #[inline]
    pub fn end(&self, attr: Attribute, expect: Option<ValueKey>) {
        let notified = self.with_thread(|t, active| {
            if !t.tracking {
                return false;
            }
            if attr.is_process_scope() {
                self.end_in_process(t, active, attr, expect);
                return true;
            }
            if !self.notifies(attr) {
                // No snapshot to take before the update: end in one step.
                if let Err(e) = t.blackboard.end(attr, expect) {
                    self.stack_error(t, attr, expect, e);
                }
                return false;
            }
            match t.blackboard.check_end(attr, expect) {
                Ok(value) => {
                    self.notify(t, active, EventKind::End, attr, value);
                    t.blackboard.end_checked(attr, expect);
                }
                Err(e) => self.stack_error(t, attr, expect, e),
            }
            true
        });
        if notified == Some(true) {
            self.after_snapshots();
        }
    }

    /// Ends a process-scope attribute (out of line: rare, and it locks).
    #[inline(never)]
    fn end_in_process(
        &self,
        t: &mut ThreadData,
        active: &mut ActiveChannels,
        attr: Attribute,
        expect: Option<ValueKey>,
    ) {
        let check = self.lock_process().blackboard.check_end(attr, expect);
        match check {
            Ok(value) => {
                if self.notifies(attr) {
                    self.notify(t, active, EventKind::End, attr, value);
                }
                let _ = self.update_process(|bb| bb.end(attr, expect));
            }
            Err(e) => self.stack_error(t, attr, expect, e),
        }
    }

    #[cold]
    fn stack_error(&self, t: &mut ThreadData, attr: Attribute, expect: Option<ValueKey>, error: EndError) {
        let name = |a: Attribute| self.registry.info(a.id()).map(|i| i.name.to_string()).unwrap_or_default();
        match (&error, expect) {
            (EndError::Empty, None) => log::error(format_args!(
                "Region stack mismatch: Trying to end \"{}\" but region stack is empty!",
                name(attr)
            )),
            (EndError::Empty, Some(v)) => log::error(format_args!(
                "Stack value mismatch: Trying to end {}={} but stack is empty",
                name(attr),
                v.to_variant()
            )),
            (EndError::OtherRegion(top), _) => log::error(format_args!(
                "Region stack mismatch: Trying to end \"{}\" but current region is \"{}\".",
                name(attr),
                top.value.to_variant()
            )),
            (EndError::OtherValue(top), v) => log::error(format_args!(
                "Stack value mismatch: Trying to end {}={} but current value is {}={}",
                name(attr),
                v.map(|v| v.to_variant().to_string()).unwrap_or_default(),
                name(top.attr),
                top.value.to_variant()
            )),
        }
        self.stack_errors.fetch_add(1, Ordering::Relaxed);
        if matches!(error, EndError::OtherRegion(_)) || !attr.is_process_scope() {
            log::error(format_args!("Ceasing region tracking!"));
            t.tracking = false;
        }
    }

    /// Updates the process blackboard and republishes its snapshot entries.
    #[inline(never)]
    fn update_process<R>(&self, f: impl FnOnce(&mut Blackboard) -> R) -> R {
        let mut p = self.lock_process();
        let r = f(&mut p.blackboard);
        self.rebuild_process_entries(&mut p);
        r
    }

    fn rebuild_process_entries(&self, p: &mut ProcessContext) {
        let ProcessContext { blackboard, cache, entries } = p;
        let mut list = Snapshot::default();
        if let Some(n) = blackboard.regions.node(&self.tree, cache) {
            list.push_node(n);
        }
        if let Some(n) = blackboard.unaligned.node(&self.tree, cache) {
            list.push_node(n);
        }
        for (a, v) in &blackboard.values {
            if !a.properties().is_hidden() {
                list.push_value(a.id(), *v);
            }
        }
        *entries = Arc::new(list);
        self.process_version.fetch_add(1, Ordering::Release);
    }

    /// Refreshes a thread's copy of the process context's entries.
    #[inline(always)]
    pub(crate) fn refresh_process_entries(&self, cache: &mut Arc<Snapshot>, version: &mut u64) {
        let current = self.process_version.load(Ordering::Acquire);
        if *version != current {
            self.reload_process_entries(cache, version, current);
        }
    }

    #[cold]
    fn reload_process_entries(&self, cache: &mut Arc<Snapshot>, version: &mut u64, current: u64) {
        *cache = self.lock_process().entries.clone();
        *version = current;
    }

    /// Takes an explicit snapshot on every active channel, with `trigger`
    /// entries added.
    pub fn push_snapshot(&self, trigger: &[Entry]) {
        self.snapshot_on(|_| true, trigger);
    }

    /// Takes a snapshot of an asynchronous event (with `info` as trigger
    /// entries) on every active channel that takes them.
    pub fn async_event(&self, info: &[Entry]) {
        self.snapshot_on(Channel::takes_async_events, info);
    }

    fn snapshot_on(&self, takes: impl Fn(&Channel) -> bool, trigger: &[Entry]) {
        self.with_thread(|t, active| {
            self.refresh_active(t, active);
            for channel in active.list.iter().filter(|c| takes(c)) {
                channel.push_snapshot(self, t, trigger);
            }
        });
        self.after_snapshots();
    }

    /// The innermost value of `attr` on the calling thread (or process).
    pub fn get(&self, attr: Attribute) -> Option<Variant> {
        if attr.is_process_scope() {
            return self.lock_process().blackboard.get(attr).map(|v| v.to_variant());
        }
        self.with_thread(|t, _| t.blackboard.get(attr).map(|v| v.to_variant())).flatten()
    }

    // ----- channels -----

    /// Every channel, in creation order.
    pub fn all_channels(&self) -> Vec<Arc<Channel>> {
        sync::read(&self.channels).clone()
    }

    /// Creates a channel with `config`; it starts inactive.
    pub fn create_channel(&self, name: &str, config: RuntimeConfig) -> Arc<Channel> {
        self.create_channel_with(name, config, Vec::new())
    }

    /// Creates a channel with `config` and, besides the services it
    /// enables, the given service objects; it starts inactive.
    pub(crate) fn create_channel_with(
        &self,
        name: &str,
        config: RuntimeConfig,
        extra: Vec<Arc<dyn Service>>,
    ) -> Arc<Channel> {
        let names = config.get_list("CALI_SERVICES_ENABLE", true);
        let mut list = Vec::new();
        let mut events = None;
        for service in &names {
            match services::create(service, self, name, &config) {
                Ok(Created::Service(s)) => list.push(s),
                Ok(Created::Events(e)) => events = Some(e),
                Err(NotCreated::Unknown) => log::error(format_args!("Service \"{service}\" not found!")),
                Err(NotCreated::BadSettings) => {}
            }
        }
        if config.get_bool("CALI_CHANNEL_CONFIG_CHECK", true) {
            services::check_pipeline(name, &names);
        }
        list.extend(extra);
        // A channel's id is its position in the list: held until the
        // channel is in it, so that channels created at once on several
        // threads get distinct ids (threads keep their per-channel states
        // by id).
        let creating = sync::lock(&self.creating_channel);
        let id = sync::read(&self.channels).len();
        let channel = Arc::new(Channel::new(self, id, name, config, list, events));
        {
            let mut bb = sync::lock(channel.blackboard());
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            bb.set(self.builtins.channel, ValueKey::string(name));
            bb.set(self.builtins.starttime_sec, ValueKey::from_variant(&Variant::Uint(now.as_secs())));
            bb.set(self.builtins.starttime_nsec, ValueKey::from_variant(&Variant::Uint(u64::from(now.subsec_nanos()))));
        }
        for info in self.registry.all() {
            channel.mark_attribute(self, info.attr, &info.name);
        }
        sync::write(&self.channels).push(channel.clone());
        drop(creating);
        self.channels_version.fetch_add(1, Ordering::Release);
        for s in channel.services() {
            log::info(format_args!("{name}: Registered {} service", s.name()));
        }
        channel
    }

    /// Activates or deactivates a channel.
    pub fn set_channel_active(&self, channel: &Channel, active: bool) {
        if channel.is_active() != active {
            channel.set_active(active);
            if active {
                self.active_channels.fetch_add(1, Ordering::AcqRel);
            } else {
                self.active_channels.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.channels_version.fetch_add(1, Ordering::Release);
    }

    /// The run metadata of a channel: the process's and the channel's
    /// global entries.
    pub fn globals(&self, channel: &Channel) -> Record {
        let mut record = Record::globals();
        {
            let mut p = self.lock_process();
            let ProcessContext { blackboard, cache, .. } = &mut *p;
            if let Some(n) = blackboard.unaligned.node(&self.tree, cache) {
                record.push_ref(n);
            }
            for (a, v) in &blackboard.values {
                if a.properties().is_global() {
                    record.push_imm(a.id(), v.to_variant());
                }
            }
        }
        let mut bb = sync::lock(channel.blackboard());
        let mut cache = ChildCache::default();
        if let Some(n) = bb.unaligned.node(&self.tree, &mut cache) {
            record.push_ref(n);
        }
        record.kind = RecordKind::Globals;
        record
    }

    /// Sets a global attribute of a channel (its run metadata), e.g. an
    /// `opts:` entry.
    pub fn set_channel_global(&self, channel: &Channel, attr: Attribute, value: &Variant) {
        sync::lock(channel.blackboard()).set(attr, ValueKey::from_variant(value));
    }

    /// Hands every record the channel gathered to `emit` (records refer to
    /// the context tree).
    pub fn flush(&self, channel: &Channel, emit: &mut dyn FnMut(&Record)) {
        self.with_updates_stopped(|| channel.flush(self, emit));
    }

    /// Flushes a channel and writes its outputs (reports, files). A service
    /// that fails costs its own output only (see [`contain`]).
    pub fn flush_and_write(&self, channel: &Channel) {
        log::info(format_args!("{}: Flushing Caliper data", channel.name()));
        self.with_updates_stopped(|| {
            for service in channel.services() {
                if service.writes_output() {
                    contain(&format!("{}: {}", channel.name(), service.name()), || service.write_output(self, channel));
                }
            }
        });
    }

    /// Runs `f` while no thread updates its data, so that `f` can read
    /// every thread's measurements.
    ///
    /// A flush from a signal handler that interrupted the runtime while it
    /// held a lock would wait for itself: it is skipped (and logged), and
    /// `f` not run.
    pub(crate) fn with_updates_stopped<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let inside_update = || own_slot().is_some_and(|s| s.busy.is_busy());
        if interrupted_in_runtime() || (inside_update() && !sync::inside_flush()) {
            // Inside an update, too: the update cannot end before the flush
            // does, and other threads' flushes would wait for it. (Not so
            // a flush inside the flush at exit, which has left the
            // interrupted update's data out.)
            log::error(format_args!("Flush skipped: called from a signal handler that interrupted Caliper"));
            return None;
        }
        let slots = self.thread_slots();
        let guard = stop_updates(&slots, Stop::Waited);
        if signal::WANTED.load(Ordering::Acquire) {
            self.process_all_captures(&slots);
        }
        let result = f();
        drop(guard);
        Some(result)
    }

    /// Processes the signal snapshots every thread captured (see
    /// [`crate::signal`]), so that a flush sees them. Updates must be
    /// stopped.
    fn process_all_captures(&self, slots: &[Arc<ThreadSlot>]) {
        let channels = self.all_channels();
        for slot in slots.iter().filter(|s| s.busy.is_readable()) {
            // SAFETY: updates are stopped, and each slot's data is borrowed
            // once, for this call only.
            self.process_captures(unsafe { slot.data_for_flush() }, &channels);
        }
    }

    /// Processes the captures waiting in thread `t` on their channels
    /// (captures of channels not in `channels` are dropped), in the order
    /// taken. Inside the thread's update, or with updates stopped.
    fn process_captures(&self, t: &mut ThreadData, channels: &[Arc<Channel>]) {
        let waiting = t.captures.as_ref().map_or(0, signal::Captures::len);
        for i in 0..waiting {
            let Some(capture) = t.captures.as_ref().and_then(|c| c.get(i)) else { break };
            if let Some(channel) = channels.iter().find(|c| c.id() == capture.channel) {
                channel.process_capture(self, t, &capture);
            }
        }
        if let Some(captures) = &mut t.captures {
            captures.clear();
        }
    }

    /// Records gathered by a channel's processing services, for output
    /// services; updates must be stopped (they are during
    /// `flush_and_write`).
    pub(crate) fn flush_stopped(&self, channel: &Channel, emit: &mut dyn FnMut(&Record)) {
        channel.flush(self, emit);
    }

    /// Drops what a channel gathered.
    pub fn clear(&self, channel: &Channel) {
        self.with_updates_stopped(|| channel.clear(self));
    }

    /// The number of mismatched ends so far.
    pub fn stack_errors(&self) -> u64 {
        self.stack_errors.load(Ordering::Relaxed)
    }

    /// The regions each thread has open, as `attr=value/...` paths
    /// (outermost first). Updates must be stopped.
    pub(crate) fn open_regions(&self) -> Vec<String> {
        let name = |a: Attribute| self.registry.info(a.id()).map(|i| i.name.to_string()).unwrap_or_default();
        let mut out = Vec::new();
        for slot in self.thread_slots().iter().filter(|s| s.busy.is_readable()) {
            // SAFETY: called with updates stopped (at finish), and the
            // slot's thread is not inside an update.
            let data = unsafe { slot.data_for_flush() };
            let entries = data.blackboard.regions.entries();
            if !entries.is_empty() {
                let path: Vec<String> =
                    entries.iter().map(|e| format!("{}={}", name(e.attr), e.value.to_variant())).collect();
                out.push(path.join("/"));
            }
        }
        out
    }

    /// Which of the runtime's locks another thread holds, if any: called in
    /// a forked child, where the thread that held it does not exist.
    fn lock_held_by_another_thread(&self) -> Option<&'static str> {
        let held = [
            ("the thread list", sync::is_held(&self.threads)),
            ("the channel list", sync::is_rw_held(&self.channels)),
            ("the channel creation lock", sync::is_held(&self.creating_channel)),
            ("the process context", sync::is_held(&self.process)),
            ("the attribute registry", self.registry.is_locked()),
            ("the context tree", self.tree.is_locked()),
            ("the string table", crate::value::interner_is_locked()),
            ("the deleted-channel list", embed::deleted_list_is_locked()),
            ("the log", log::is_busy()),
        ];
        if let Some((name, _)) = held.iter().find(|(_, h)| *h) {
            return Some(name);
        }
        let channels = self.channels.try_read().ok()?;
        channels.iter().any(|c| c.is_locked()).then_some("a channel's metadata")
    }

    /// Whether the flush at exit may run on the calling thread: not when a
    /// signal handler calling `exit()` interrupted the runtime's
    /// initialisation (its channels are half made), a lock, an allocation
    /// or a flush on it. Allocates nothing; says why not, once.
    fn may_finish(&self) -> bool {
        let reason = if !READY.load(Ordering::Acquire) {
            "Program exit interrupted Caliper's initialisation: not writing the report"
        } else if interrupted_in_runtime() || sync::inside_flush() {
            "Program exit interrupted Caliper on the exiting thread (exit() in a signal handler?): \
             not writing the report"
        } else {
            return true;
        };
        if !self.finished.swap(true, Ordering::AcqRel) {
            log::error(format_args!("{reason}"));
        }
        false
    }

    /// The end of the program: flush the channels that flush on exit, in
    /// creation order.
    ///
    /// A forked child flushes too, as the reference's does: its report
    /// holds what the process measured before the fork, on every thread,
    /// and what the child measured after. It does not when a thread of the
    /// parent held a runtime lock at the fork (the child would wait for it
    /// for ever), nor when the fork bypassed `pthread_atfork` (a raw
    /// `clone`), which leaves the parent's threads unaccounted for.
    fn finish(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        let pid = std::process::id();
        if pid != self.pid && pid != self.forked_pid.load(Ordering::Acquire) {
            log::error(format_args!("Forked child process (without fork handlers): not writing a report"));
            return;
        }
        let slots = self.thread_slots();
        stop_updates(&slots, Stop::Dropped).forever();
        for channel in self.all_channels().into_iter().filter(|c| !self.is_deleted(c)) {
            if channel.flush_on_exit() {
                self.flush_and_write(&channel);
            }
            for service in channel.services() {
                contain(&format!("{}: {}", channel.name(), service.name()), || service.finish(self, &channel));
            }
        }
        if signal::WANTED.load(Ordering::Acquire) {
            let c = signal::counts();
            log::info(format_args!(
                "Signal snapshots: {} taken, dropped {} (no thread state), {} (busy), {} (buffer full), {} (did not fit)",
                c.taken, c.no_thread, c.busy, c.full, c.unfit
            ));
        }
        log::info(format_args!("Finished"));
    }
}

/// Whether a signal handler running on the calling thread interrupted the
/// runtime holding a lock, or an allocation: a flush now would wait for
/// itself or corrupt the heap.
fn interrupted_in_runtime() -> bool {
    sync::holds_runtime_lock() || crate::alloc_guard::interrupted_allocation()
}

/// What happens to the updates other threads try while a flush runs.
enum Stop {
    /// They wait for it: during the run, a dropped begin or end would put
    /// the thread's region stack out of step with the program.
    Waited,
    /// They are dropped: at exit, when updates stay stopped for good.
    Dropped,
}

/// The calling thread's slot if it has one, without registering it.
fn own_slot() -> Option<&'static ThreadSlot> {
    let own = SLOT.with(Cell::get);
    // SAFETY: a non-null pointer is valid until the thread's registration
    // goes (see `current_slot`).
    (!own.is_null()).then(|| unsafe { &*own })
}

/// Stops updates on every thread of `slots` (see [`StopUpdates::new`]),
/// and says how many threads' data the flush must leave out.
fn stop_updates(slots: &[Arc<ThreadSlot>], stop: Stop) -> StopUpdates<'_> {
    let own = own_slot().map(|s| &s.busy);
    let flags = slots.iter().map(|s| &s.busy);
    let guard = match stop {
        Stop::Waited => StopUpdates::waited(flags, own),
        Stop::Dropped => StopUpdates::new(flags, own),
    };
    if guard.abandoned() > 0 {
        log::error(format_args!(
            "Flush: {} thread(s) stayed inside an annotation update (stopped, or interrupted by a signal); \
             their data is not included",
            guard.abandoned()
        ));
    }
    guard
}
