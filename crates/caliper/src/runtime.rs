//! The runtime: the process-wide state (context tree, attributes, process
//! blackboard, channels, threads), initialised on first use and flushed
//! when the program ends.

use crate::attributes::{Attribute, AttributeInfo, Builtins, Registry};
use crate::blackboard::{Blackboard, ChildCache, EndError};
use crate::capture;
use crate::channel::thread::{ActiveChannels, ThreadData, ThreadSlot};
use crate::channel::{Channel, Host};
use crate::config::RuntimeConfig;
use crate::contain::contain;
use crate::log;
use crate::service::{ChannelView, Runtime, SignalEntry};
use crate::service::{EventKind, Service};
use crate::services::{self, Created, NotCreated};
use crate::snapshot::Snapshot;
use crate::sync::{self, StopUpdates};
use crate::tree::ContextTree;
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Entry, Properties, Record, RecordKind, Variant};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock, RwLock};

mod captures;
mod channels;
mod embed;
mod flush;
mod memory;
mod stack_switch;
mod threads;
mod updates;

use captures::CAPTURES_WAITING;
pub use captures::{
    prepare_thread, push_snapshot_from_signal, push_snapshot_with_path_from_signal, spawning_own_thread,
};
pub use channels::ChannelOutput;
use flush::{after_fork_in_child, finish_at_exit, interrupted_in_runtime};
pub(crate) use threads::current_slot;
use threads::{Registration, log_thread_release, own_slot};

/// The version of the Caliper API this runtime implements, which it
/// reports as `cali.caliper.version` (and `cali_caliper_version()`): tools
/// and programs compare it with the reference's versions. The same as
/// `CALIPER_VERSION` of `caliper/caliper-config.h`.
pub const API_VERSION: &str = "2.15.0";

/// This implementation's own version, reported as the channel global
/// `cali.caliper-rs.version` beside [`API_VERSION`].
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

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
        c.prepare_calling_thread_for_signals();
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
            implementation_version: create("cali.caliper-rs.version", AttrType::String, global),
        };
        let version = create("cali.caliper.version", AttrType::String, global);
        let mut process =
            ProcessContext { blackboard: Blackboard::default(), cache: ChildCache::default(), entries: Arc::default() };
        process.blackboard.set(version, ValueKey::string(API_VERSION));
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
            (crate::START_CONFIGS)(self, &config_string);
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

    /// The number of mismatched ends so far.
    pub fn stack_errors(&self) -> u64 {
        self.stack_errors.load(Ordering::Relaxed)
    }
}
