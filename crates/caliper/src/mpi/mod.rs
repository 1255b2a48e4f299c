//! MPI support, without a dependency on an MPI library: an MPI binding
//! (`caliper-mpi`'s PMPI wrappers, in libcaliper-mpi or linked into a Rust
//! program) registers itself as the process's [`MpiLayer`], and the
//! runtime's `mpi`, `mpireport` and `mpiflush` services and the configs'
//! cross-rank reports work through it:
//!
//! * the wrapped MPI functions call [`functions::begin`] and
//!   [`functions::end`] around the real call (an `mpi.function` region
//!   made here), when the `mpi` service enabled them;
//! * `MPI_Init` calls [`on_init`] (`mpi.rank`, `mpi.world.size`), and
//!   `MPI_Finalize` calls [`finalize::on_finalize`] before the real one
//!   (the `mpiflush` channels and `CALI_CONFIG`'s configs write their
//!   output while MPI still works);
//! * with message tracing or the communication pattern on
//!   ([`reports_messages`]), the wrappers report messages to
//!   [`messages::record`], which feeds the [`pattern`] of `comm.region`s;
//! * cross-rank reports reduce per-rank profiles over a [`Comm`] with
//!   [`reduce`], a binary tree of point-to-point messages, and agree on
//!   what to reduce next with [`broadcast`] (see [`reduction`]).
//!
//! The registration and state here, [`pattern`] and [`reduction`] sit below the services (the
//! `mpi` services use them); [`functions`], [`messages`] and [`finalize`]
//! act on the runtime itself (its thread slots, its channels) and sit
//! above it.

pub mod finalize;
pub mod functions;
pub mod messages;
pub mod pattern;
pub mod reduction;

pub use reduction::{broadcast, reduce};

use crate::attributes::Attribute;
use crate::log;
use crate::service::{GlobalRuntime, Runtime};
use crate::value::ValueKey;
use caliper_data::{AttrType, Properties, Variant};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// A communicator: the ranks a cross-rank reduction runs over. Messages
/// are byte strings between two ranks, received in the order sent.
pub trait Comm {
    /// This process's rank in the communicator.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Sends `data` to rank `to`.
    fn send(&self, to: usize, data: &[u8]) -> Result<(), String>;
    /// Receives the next message from rank `from`.
    fn recv(&self, from: usize) -> Result<Vec<u8>, String>;
}

/// What a wrapped function did.
#[derive(Clone, Copy, Debug)]
pub enum Message {
    /// A message sent to rank `dst` of its communicator.
    Sent {
        /// The receiving rank, in the communicator the message went over
        /// (the pattern counts distinct ranks per communicator as given).
        dst: i64,
        /// The message's tag.
        tag: i64,
        /// The message's size in bytes (count times the datatype's size).
        bytes: i64,
    },
    /// A message received from rank `src`.
    Received {
        /// The sending rank, as the completed receive's status gives it
        /// (never `MPI_ANY_SOURCE`).
        src: i64,
        /// The message's tag, from the status too.
        tag: i64,
        /// The bytes received, which may be fewer than were posted.
        bytes: i64,
    },
    /// A collective of the reference's `kind` (1 barrier, 2 N-to-N, 3
    /// 1-to-N, 4 N-to-1), rooted at `root` (1-to-N and N-to-1).
    Collective {
        /// The reference's collective type, the value of `mpi.coll.type`.
        kind: i64,
        /// The root rank of a 1-to-N or N-to-1 collective; `None` for
        /// the others, which have none.
        root: Option<i64>,
        /// The bytes this rank contributes or receives.
        bytes: i64,
    },
}

/// A process's MPI binding, as the runtime uses it.
pub trait MpiLayer: Sync {
    /// The MPI functions the binding wraps; an index into this list names
    /// a function in [`MpiLayer::set_enabled`] and [`functions::begin`].
    fn functions(&self) -> &'static [&'static str];
    /// Makes the wrapper of function `index` annotate its calls, or not.
    fn set_enabled(&self, index: usize, on: bool);
    /// Whether `MPI_Finalize` has run.
    fn is_finalized(&self) -> bool;
    /// `MPI_COMM_WORLD`, while MPI is initialised and not finalised.
    fn world(&self) -> Option<Box<dyn Comm>>;
}

static LAYER: OnceLock<&'static dyn MpiLayer> = OnceLock::new();

/// Registers the process's MPI binding; only the first registration
/// counts. Register before the runtime starts (libcaliper-mpi does it in
/// a library constructor that runs before the runtime's), so that the
/// configs of `CALI_CONFIG` see MPI and report across ranks.
pub fn register_layer(layer: &'static dyn MpiLayer) -> bool {
    LAYER.set(layer).is_ok()
}

/// The process's MPI binding, if one registered.
pub fn layer() -> Option<&'static dyn MpiLayer> {
    LAYER.get().copied()
}

/// The `mpi.function` attribute and one interned value per wrapped
/// function, made when the first `mpi` service is.
struct Functions {
    attr: Attribute,
    names: Vec<ValueKey>,
}

static FUNCTIONS: OnceLock<Functions> = OnceLock::new();

/// The `mpi.rank` and `mpi.world.size` attributes.
struct RankAttributes {
    rank: Attribute,
    world_size: Attribute,
}

static RANK_ATTRIBUTES: OnceLock<RankAttributes> = OnceLock::new();

/// Makes the `mpi.function` attribute and the function names' values.
pub(crate) fn prepare_functions(cali: &dyn Runtime, names: &[&str]) {
    FUNCTIONS.get_or_init(|| {
        let subscription = cali.find_attribute("subscription_event").map(|a| (a.id(), Variant::Bool(true)));
        let meta: Vec<_> = subscription.into_iter().collect();
        let attr = cali.create_attribute("mpi.function", AttrType::String, Properties::NESTED, &meta);
        Functions { attr, names: names.iter().map(|n| ValueKey::string(n)).collect() }
    });
}

/// The `mpi.function` attribute and the value of wrapped function `index`,
/// once an `mpi` service has made them (see [`functions`]).
#[inline]
pub(crate) fn function_region(index: usize) -> Option<(Attribute, ValueKey)> {
    let f = FUNCTIONS.get()?;
    Some((f.attr, *f.names.get(index)?))
}

/// The `mpi.function` attribute, once made.
#[inline]
pub(crate) fn function_attribute() -> Option<Attribute> {
    FUNCTIONS.get().map(|f| f.attr)
}

/// The runtime, once an `mpi` service has been made.
static RUNTIME: OnceLock<GlobalRuntime> = OnceLock::new();

/// After `MPI_Init`: records `mpi.rank` and `mpi.world.size` if an `mpi`
/// service exists (one made later records them itself).
pub fn on_init() {
    if let Some(cali) = RUNTIME.get().and_then(|r| r()) {
        record_rank(cali);
    }
}

/// Sets `mpi.rank` (process scope) and `mpi.world.size` (a global) from
/// `MPI_COMM_WORLD`, and makes log lines name the rank and ranks above 0
/// quiet, as the reference does. Does nothing before `MPI_Init`.
pub(crate) fn record_rank(cali: &dyn Runtime) {
    RUNTIME.get_or_init(|| cali.global());
    let Some(world) = layer().and_then(|l| l.world()) else { return };
    let attrs = RANK_ATTRIBUTES.get_or_init(|| RankAttributes {
        rank: cali.create_attribute(
            "mpi.rank",
            AttrType::Int,
            Properties::ASVALUE | Properties::SKIP_EVENTS | Properties::SCOPE_PROCESS,
            &[],
        ),
        world_size: cali.create_attribute(
            "mpi.world.size",
            AttrType::Int,
            Properties::GLOBAL | Properties::SKIP_EVENTS | Properties::UNALIGNED,
            &[],
        ),
    });
    cali.set_global(attrs.rank, ValueKey::from_variant(&Variant::Int(world.rank() as i64)));
    cali.set_global(attrs.world_size, ValueKey::from_variant(&Variant::Int(world.size() as i64)));
    log::set_rank(world.rank());
}

/// What `mpi` services do with messages: bit [`TRACE`] (take a snapshot
/// of each) and bit [`PATTERN`] (tally them per `comm.region`).
static MESSAGES: AtomicU8 = AtomicU8::new(0);
const TRACE: u8 = 1;
const PATTERN: u8 = 2;

/// Whether the binding reports messages to [`messages::record`]
/// (and receives posted with `MPI_Irecv` to the binding's own
/// bookkeeping): an `mpi` service traces them (`CALI_MPI_MSG_TRACING`) or
/// keeps their pattern (`CALI_MPI_MSG_PATTERN`). One load, for the
/// wrappers to skip all message work when neither is on.
#[inline]
pub fn reports_messages() -> bool {
    MESSAGES.load(Ordering::Relaxed) != 0
}

/// Whether an `mpi` service takes a snapshot of each message.
#[inline]
pub fn message_tracing() -> bool {
    MESSAGES.load(Ordering::Relaxed) & TRACE != 0
}

/// Whether an `mpi` service keeps the communication pattern.
#[inline]
pub fn message_pattern() -> bool {
    MESSAGES.load(Ordering::Relaxed) & PATTERN != 0
}

/// Turns message tracing on for the process.
pub(crate) fn trace_messages() {
    MESSAGES.fetch_or(TRACE, Ordering::Relaxed);
}

/// Turns the communication pattern's bookkeeping on for the process.
pub(crate) fn keep_message_pattern() {
    MESSAGES.fetch_or(PATTERN, Ordering::Relaxed);
}

static FINALIZING: AtomicBool = AtomicBool::new(false);

/// Marks that `MPI_Finalize` has begun; `false` if it had already.
pub(crate) fn begin_finalize() -> bool {
    !FINALIZING.swap(true, Ordering::AcqRel)
}

/// Whether outputs were written before `MPI_Finalize`: they are not
/// written again at exit (MPI is gone by then).
pub(crate) fn finalize_flushed() -> bool {
    FINALIZING.load(Ordering::Acquire)
}

/// Why a cross-rank output cannot be made.
pub const FINALIZED: &str = "MPI is already finalized. Cannot aggregate output.";

/// The communicator cross-rank outputs reduce over: `MPI_COMM_WORLD`
/// while MPI runs, one rank without MPI or before `MPI_Init`; an error
/// once MPI is finalised.
pub fn world() -> Result<Box<dyn Comm>, &'static str> {
    match layer() {
        Some(l) if l.is_finalized() => Err(FINALIZED),
        Some(l) => Ok(l.world().unwrap_or_else(|| Box::new(SelfComm))),
        None => Ok(Box::new(SelfComm)),
    }
}

/// A communicator of one rank: cross-rank reports of a process that runs
/// without MPI (or before `MPI_Init`) reduce over it.
pub struct SelfComm;

impl Comm for SelfComm {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn send(&self, to: usize, _data: &[u8]) -> Result<(), String> {
        Err(format!("no rank {to} in a communicator of one"))
    }
    fn recv(&self, from: usize) -> Result<Vec<u8>, String> {
        Err(format!("no rank {from} in a communicator of one"))
    }
}
