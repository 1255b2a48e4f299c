//! MPI support, without a dependency on an MPI library: an MPI binding
//! (`caliper-mpi`'s PMPI wrappers, in libcaliper-mpi or linked into a Rust
//! program) registers itself as the process's [`MpiLayer`], and the
//! runtime's `mpi`, `mpireport` and `mpiflush` services and the configs'
//! cross-rank reports work through it:
//!
//! * the wrapped MPI functions call `mpi_functions::begin` and
//!   `mpi_functions::end` around the real call (an `mpi.function` region
//!   made here), when the `mpi` service enabled them;
//! * `MPI_Init` calls [`on_init`] (`mpi.rank`, `mpi.world.size`), and
//!   `MPI_Finalize` calls `mpi_finalize::on_finalize` before the real one
//!   (the `mpiflush` channels and `CALI_CONFIG`'s configs write their
//!   output while MPI still works);
//! * with message tracing or the communication pattern on
//!   ([`reports_messages`]), the wrappers report messages to
//!   `mpi_messages::record`;
//! * cross-rank reports reduce per-rank profiles over a [`Comm`] with
//!   [`reduce`], a binary tree of point-to-point messages, and agree on
//!   what to reduce next with [`broadcast`].

use crate::attributes::Attribute;
use crate::log;
use crate::service::{GlobalRuntime, Runtime};
use crate::value::ValueKey;
use caliper_data::cali::{CaliWriter, read_records};
use caliper_data::{AttrType, MetadataDb, Properties, Record, Variant};
use caliper_query::aggregate::Aggregator;
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
    Sent { dst: i64, tag: i64, bytes: i64 },
    /// A message received from rank `src`.
    Received { src: i64, tag: i64, bytes: i64 },
    /// A collective of the reference's `kind` (1 barrier, 2 N-to-N, 3
    /// 1-to-N, 4 N-to-1), rooted at `root` (1-to-N and N-to-1).
    Collective { kind: i64, root: Option<i64>, bytes: i64 },
}

/// A process's MPI binding, as the runtime uses it.
pub trait MpiLayer: Sync {
    /// The MPI functions the binding wraps; an index into this list names
    /// a function in [`MpiLayer::set_enabled`] and `mpi_functions::begin`.
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
/// once an `mpi` service has made them (see `mpi_functions`).
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

/// Whether the binding reports messages to [`crate::mpi_messages::record`]
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

/// Reduces aggregated profiles over `comm` into rank 0's `aggregator`: a
/// binary tree, `log2(size)` rounds. In round `s` (1, 2, 4, ...), a rank
/// that is a multiple of `2s` receives the profile of rank `rank + s` (if
/// there is one) and adds it to its own; a rank that is an odd multiple of
/// `s` sends its profile, as a `.cali` stream of the aggregator's results,
/// to `rank - s` and is done. Each message holds one merged profile, so
/// no rank holds more than its own profile and one other at a time.
///
/// On ranks other than 0 the aggregator is left empty.
pub fn reduce(comm: &dyn Comm, db: &mut MetadataDb, aggregator: &mut Aggregator) -> Result<(), String> {
    let (rank, size) = (comm.rank(), comm.size());
    let mut step = 1;
    while step < size {
        if rank % (2 * step) == 0 {
            if rank + step < size {
                let data = comm.recv(rank + step)?;
                // An empty profile (a rank that measured nothing) is no
                // stream at all.
                if !data.is_empty() {
                    let source = format!("rank {}", rank + step);
                    let records = read_records(db, &source, &data).map_err(|e| e.to_string())?;
                    for record in &records {
                        aggregator.add(db, record);
                    }
                }
            }
        } else if rank % step == 0 {
            let data = serialize(db, aggregator).map_err(|e| e.to_string())?;
            return comm.send(rank - step, &data);
        }
        step *= 2;
    }
    Ok(())
}

/// Sends rank 0's `data` to every rank of `comm` down a binary tree
/// (log2(size) rounds, the reduction's rounds in reverse); returns it on
/// every rank (`data` is ignored on the others).
pub fn broadcast(comm: &dyn Comm, data: Vec<u8>) -> Result<Vec<u8>, String> {
    let (rank, size) = (comm.rank(), comm.size());
    let mut step = size.next_power_of_two() / 2;
    let mut data = if rank == 0 { Some(data) } else { None };
    while step >= 1 {
        if rank % (2 * step) == 0 {
            if rank + step < size
                && let Some(d) = &data
            {
                comm.send(rank + step, d)?;
            }
        } else if rank % step == 0 && data.is_none() {
            data = Some(comm.recv(rank - step)?);
        }
        step /= 2;
    }
    data.ok_or_else(|| "broadcast: nothing received".to_string())
}

/// The aggregator's results as a `.cali` stream (their nodes, then the
/// records); the aggregator is emptied.
fn serialize(db: &mut MetadataDb, aggregator: &mut Aggregator) -> std::io::Result<Vec<u8>> {
    let mut records: Vec<Record> = Vec::new();
    aggregator.flush(db, |_, r| records.push(r.clone()));
    let mut writer = CaliWriter::new(Vec::new());
    for record in &records {
        writer.write_record(&*db, record)?;
    }
    writer.finish()
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

#[cfg(test)]
mod tests {
    use super::*;
    use caliper_query::parse_query;
    use std::collections::HashMap;
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::sync::{Arc, Mutex};

    /// Ranks as threads, messages over channels.
    struct ThreadComm {
        rank: usize,
        size: usize,
        senders: Arc<Vec<Vec<Sender<Vec<u8>>>>>,
        receivers: Mutex<HashMap<usize, Receiver<Vec<u8>>>>,
    }

    fn comms(size: usize) -> Vec<ThreadComm> {
        // senders[to][from]
        let mut senders = vec![Vec::new(); size];
        let mut receivers: Vec<HashMap<usize, Receiver<Vec<u8>>>> = (0..size).map(|_| HashMap::new()).collect();
        for (to, row) in senders.iter_mut().enumerate() {
            for from in 0..size {
                let (s, r) = channel();
                row.push(s);
                receivers[to].insert(from, r);
            }
        }
        let senders = Arc::new(senders);
        receivers
            .into_iter()
            .enumerate()
            .map(|(rank, r)| ThreadComm { rank, size, senders: senders.clone(), receivers: Mutex::new(r) })
            .collect()
    }

    impl Comm for ThreadComm {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn send(&self, to: usize, data: &[u8]) -> Result<(), String> {
            self.senders[to][self.rank].send(data.to_vec()).map_err(|e| e.to_string())
        }
        fn recv(&self, from: usize) -> Result<Vec<u8>, String> {
            self.receivers.lock().unwrap()[&from].recv().map_err(|e| e.to_string())
        }
    }

    /// Each rank's profile: region `main` with time `rank + 1`, region
    /// `main/r<rank % 3>` with time 10.
    fn local_records(db: &mut MetadataDb, rank: usize) -> Vec<Record> {
        let region = db.create_attribute("region", AttrType::String, Properties::NESTED, &[]);
        let t = db.create_attribute("t", AttrType::Int, Properties::ASVALUE, &[]);
        let main = db.get_or_create_node(region, Variant::string("main"), None);
        let inner = db.get_or_create_node(region, Variant::string(&format!("r{}", rank % 3)), Some(main));
        let record = |node, time: i64| {
            let mut r = Record::ctx();
            r.push_ref(node);
            r.push_imm(t, Variant::Int(time));
            r
        };
        vec![record(main, rank as i64 + 1), record(inner, 10)]
    }

    #[test]
    fn tree_reduction_gives_what_one_aggregation_of_all_ranks_gives() {
        let query = "aggregate min(t),max(t),sum(t),avg(t),count() group by region";
        for size in [1, 2, 3, 4, 7, 8] {
            let results: Vec<Option<Vec<String>>> = std::thread::scope(|s| {
                let handles: Vec<_> = comms(size)
                    .into_iter()
                    .map(|comm| {
                        s.spawn(move || {
                            let mut db = MetadataDb::new();
                            let mut agg = Aggregator::new(&parse_query(query).unwrap()).unwrap();
                            for r in local_records(&mut db, comm.rank()).into_iter().filter(|_| comm.rank() != 2) {
                                agg.add(&mut db, &r);
                            }
                            reduce(&comm, &mut db, &mut agg).unwrap();
                            (comm.rank() == 0).then(|| summary(&mut db, &mut agg))
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut db = MetadataDb::new();
            let mut agg = Aggregator::new(&parse_query(query).unwrap()).unwrap();
            // Rank 2 measured nothing.
            for rank in (0..size).filter(|&r| r != 2) {
                for r in local_records(&mut db, rank) {
                    agg.add(&mut db, &r);
                }
            }
            assert_eq!(results[0].as_ref().unwrap(), &summary(&mut db, &mut agg), "{size} ranks");
            assert!(results[1..].iter().all(Option::is_none));
        }
    }

    #[test]
    fn broadcast_reaches_every_rank() {
        for size in [1, 2, 3, 5, 8] {
            let got: Vec<Vec<u8>> = std::thread::scope(|s| {
                let handles: Vec<_> = comms(size)
                    .into_iter()
                    .map(|comm| {
                        s.spawn(move || {
                            let mine = if comm.rank() == 0 { b"loops".to_vec() } else { Vec::new() };
                            broadcast(&comm, mine).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(got.iter().all(|d| d == b"loops"), "{size} ranks: {got:?}");
        }
    }

    /// The aggregator's results as sorted `expand` lines.
    fn summary(db: &mut MetadataDb, agg: &mut Aggregator) -> Vec<String> {
        #[derive(Clone, Default)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().write(buf)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Shared::default();
        let spec = parse_query("format expand").unwrap();
        let mut formatter =
            caliper_query::format::make_formatter(&spec, caliper_query::spec::Formatter::Expand, Box::new(out.clone()))
                .unwrap();
        agg.flush(db, |db, r| formatter.process(db, r).unwrap());
        formatter.finish(db).unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    }
}
