//! Event sampling for `libpfm`: each thread opens its events with a sample
//! period, the kernel writes a sample into a ring buffer every period and
//! signals the thread (`SIGIO`, to that thread alone), and the handler
//! turns each sample into a snapshot through the async-signal-safe entry
//! (see [`crate::signal`]) with the sample's `libpfm.*` attributes: `ip`
//! (of class `symboladdress`, so `symbollookup` names it), `time`, `tid`,
//! `cpu`, `addr` (of class `memoryaddress`), `weight`, `data_src`, and the
//! event's name (`libpfm.event_sample_name`).

use super::signal_claim::SignalClaim;
use crate::log;
use crate::service::{Runtime, SignalEntry};
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::sync::{Mutex, OnceLock};

/// What a sample records, by name (`CALI_LIBPFM_SAMPLE_ATTRIBUTES`):
/// `perf_event_attr.sample_type` bits, in the order the kernel writes them.
const FIELDS: &[(&str, u64, AttrType)] = &[
    ("ip", 1 << 0, AttrType::Addr),
    ("tid", 1 << 1, AttrType::Uint),
    ("time", 1 << 2, AttrType::Uint),
    ("addr", 1 << 3, AttrType::Addr),
    ("cpu", 1 << 7, AttrType::Uint),
    ("weight", 1 << 14, AttrType::Uint),
    ("data_src", 1 << 15, AttrType::Uint),
];

/// Events per thread that can sample at once.
pub(super) const MAX_EVENTS: usize = 4;

/// The attributes of the fields sampled (by `FIELDS` index), of the event
/// names, and the names' values.
struct SampleAttributes {
    fields: Vec<(usize, Id)>,
    name: Id,
    names: Vec<ValueKey>,
}

/// What the handler reads: the channel, the entry and the attributes;
/// set once when sampling starts.
struct Target {
    entry: SignalEntry,
    attributes: SampleAttributes,
}

static TARGET: OnceLock<Target> = OnceLock::new();

/// The channel the samples go to (`u64::MAX`: none, the handler drops
/// them).
static CHANNEL: AtomicU64 = AtomicU64::new(u64::MAX);

static CLAIM: Mutex<Option<SignalClaim>> = Mutex::new(None);
/// The descriptors of every thread's sampling events, so that [`stop`]
/// can disable them all before `SIGIO` goes back to the program, whose
/// default action for it ends the process. A thread closes its own under
/// this lock, so that a number is never disabled after it was reused.
static OPEN: Mutex<Vec<libc::c_int>> = Mutex::new(Vec::new());
/// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// A thread's sampling event: its descriptor and ring buffer.
#[derive(Clone, Copy)]
struct Ring {
    fd: i32,
    event: u8,
    /// The mapping: a metadata page, then `size` bytes of data.
    base: usize,
    size: usize,
}

const NO_RING: Ring = Ring { fd: -1, event: 0, base: 0, size: 0 };

thread_local! {
    /// The calling thread's rings, for the handler (plain data: reading
    /// it in a handler initialises nothing).
    static RINGS: Cell<[Ring; MAX_EVENTS]> = const { Cell::new([NO_RING; MAX_EVENTS]) };
}

// fcntl(2) commands and `struct f_owner_ex` (<fcntl.h>, Linux).
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// Pages of sample data per ring (a power of two).
const DATA_PAGES: usize = 8;

/// Starts sampling: the attributes of `fields` (names from the settings),
/// the handler. `events` are the names of the events sampled.
pub(super) fn start(cali: &dyn Runtime, fields: &[String], events: &[String]) -> Result<u64, String> {
    let class = |name: &str| cali.create_attribute(name, AttrType::Bool, Properties::SKIP_EVENTS, &[]).id();
    let value = Properties::ASVALUE | Properties::SKIP_EVENTS;
    let mut sample_type = 0;
    let mut attrs = Vec::new();
    for name in fields {
        let Some(i) = FIELDS.iter().position(|(n, _, _)| n == name) else {
            log::error(format_args!("libpfm: unknown sample attribute \"{name}\"; left out"));
            continue;
        };
        let (_, bit, ty) = FIELDS[i];
        let meta = match name.as_str() {
            "ip" => vec![(class("class.symboladdress"), Variant::Bool(true))],
            "addr" => vec![(class("class.memoryaddress"), Variant::Bool(true))],
            _ => Vec::new(),
        };
        sample_type |= bit;
        attrs.push((i, cali.create_attribute(&format!("libpfm.{name}"), ty, value, &meta).id()));
    }
    attrs.sort_by_key(|&(i, _)| FIELDS[i].1);
    let name = cali.create_attribute("libpfm.event_sample_name", AttrType::String, value, &[]).id();
    let names = events.iter().map(|e| ValueKey::string(e)).collect();
    let attributes = SampleAttributes { fields: attrs, name, names };
    if TARGET.set(Target { entry: cali.signal_entry(), attributes }).is_err() {
        return Err("event sampling runs in one channel per process".to_string());
    }
    let claim = SignalClaim::claim(libc::SIGIO, "SIGIO", on_sigio)?;
    *crate::sync::lock(&CLAIM) = Some(claim);
    crate::capture::WANTED.store(true, Ordering::Release);
    Ok(sample_type)
}

/// Names the channel the samples go to.
pub(super) fn attach(channel: usize) {
    CHANNEL.store(channel as u64, Ordering::Release);
}

/// Stops sampling: the handler drops what still comes, every thread's
/// events stop counting (a signal due after the handler is gone would end
/// the program), and `SIGIO` goes back to the program (the claim's release
/// discards signals still pending).
pub(super) fn stop() {
    CHANNEL.store(u64::MAX, Ordering::Release);
    for &fd in crate::sync::lock(&OPEN).iter() {
        // SAFETY: an open sampling event (closed only under the lock).
        unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) };
    }
    if let Some(claim) = crate::sync::lock(&CLAIM).take() {
        claim.release();
    }
}

/// A thread's sampling events, closed when the thread exits.
pub(super) struct ThreadSampling {
    rings: Vec<Ring>,
}

impl ThreadSampling {
    /// Opens the events (`fds`, already made with a sample period) for
    /// sampling on the calling thread: a ring each, signalled to this
    /// thread. An event that cannot be set up is closed and left out.
    pub(super) fn new(fds: Vec<(u8, std::os::fd::OwnedFd)>) -> ThreadSampling {
        use std::os::fd::IntoRawFd;
        let page = page_size();
        let size = DATA_PAGES * page;
        let mut rings = Vec::new();
        for (event, fd) in fds.into_iter().take(MAX_EVENTS) {
            let fd = fd.into_raw_fd();
            // SAFETY: mapping and configuring a descriptor owned here; on
            // failure it is closed.
            let ring = unsafe {
                let base = libc::mmap(
                    std::ptr::null_mut(),
                    page + size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                let owner = OwnerEx { kind: F_OWNER_TID, pid: libc::gettid() };
                let ok = base != libc::MAP_FAILED
                    && libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC | libc::O_NONBLOCK) == 0
                    && libc::fcntl(fd, F_SETSIG, libc::SIGIO) == 0
                    && libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) == 0;
                if !ok {
                    if base != libc::MAP_FAILED {
                        libc::munmap(base, page + size);
                    }
                    libc::close(fd);
                    continue;
                }
                Ring { fd, event, base: base as usize, size }
            };
            rings.push(ring);
        }
        crate::sync::lock(&OPEN).extend(rings.iter().map(|r| r.fd));
        let mut table = [NO_RING; MAX_EVENTS];
        table[..rings.len()].copy_from_slice(&rings);
        RINGS.with(|r| r.set(table));
        ThreadSampling { rings }
    }
}

impl Drop for ThreadSampling {
    fn drop(&mut self) {
        // The handler forgets the rings before they go (on their thread;
        // a state dropped elsewhere leaves that thread's table alone).
        let _ = RINGS.try_with(|r| {
            if r.get().iter().any(|ring| self.rings.iter().any(|mine| mine.fd == ring.fd)) {
                r.set([NO_RING; MAX_EVENTS]);
            }
        });
        let page = page_size();
        let mut open = crate::sync::lock(&OPEN);
        open.retain(|fd| self.rings.iter().all(|mine| mine.fd != *fd));
        for ring in &self.rings {
            // SAFETY: the ring's own mapping and descriptor, released once.
            unsafe {
                libc::close(ring.fd);
                libc::munmap(ring.base as *mut libc::c_void, page + ring.size);
            }
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// `struct perf_event_mmap_page`'s `data_head` and `data_tail` offsets.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const PERF_RECORD_SAMPLE: u32 = 9;

/// The `SIGIO` handler: every sample waiting in the signalled ring becomes
/// a snapshot. Async-signal-safe (loads, stores and the signal entry), and
/// keeps `errno`.
extern "C" fn on_sigio(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let (channel, Some(target)) = (CHANNEL.load(Ordering::Acquire), TARGET.get()) else { return };
    if channel == u64::MAX || info.is_null() {
        return;
    }
    // SAFETY: errno is the thread's own; `info` is the kernel's, and for a
    // signal from a descriptor (`F_SETSIG`) carries it in `si_fd`, which
    // follows the band (a long) at the start of the fields.
    unsafe {
        let errno = *libc::__errno_location();
        let fields = (info as *const u8).add(16);
        let fd = *(fields.add(std::mem::size_of::<libc::c_long>()) as *const libc::c_int);
        let rings = RINGS.with(Cell::get);
        if let Some(ring) = rings.iter().find(|r| r.fd == fd && r.fd >= 0) {
            drain(ring, target, channel as usize);
        }
        *libc::__errno_location() = errno;
    }
}

/// Turns the samples between the ring's tail and head into snapshots and
/// moves the tail.
///
/// # Safety
/// `ring` is a live mapping of the calling thread.
unsafe fn drain(ring: &Ring, target: &Target, channel: usize) {
    let page = page_size();
    let meta = ring.base as *mut u8;
    // SAFETY: the metadata page's head and tail words, per the caller.
    let (head, tail) =
        unsafe { (&*(meta.add(DATA_HEAD) as *const AtomicU64), &*(meta.add(DATA_TAIL) as *const AtomicU64)) };
    let end = head.load(Ordering::Acquire);
    let mut at = tail.load(Ordering::Relaxed);
    let data = ring.base + page;
    let read = |offset: u64| -> u64 {
        let i = (offset as usize) % ring.size;
        // SAFETY: inside the data area; samples are 8-byte aligned.
        unsafe { std::ptr::read_volatile((data + i) as *const u64) }
    };
    let a = &target.attributes;
    while at < end {
        let header = read(at);
        let (kind, size) = (header as u32, (header >> 48) as u16 as u64);
        if size == 0 {
            break;
        }
        if kind == PERF_RECORD_SAMPLE {
            let mut entries: [(Id, ValueKey); FIELDS.len() + 1] = [(0, ValueKey::EMPTY); FIELDS.len() + 1];
            let mut n = 0;
            let mut offset = at + 8;
            for &(i, attr) in &a.fields {
                let word = read(offset);
                offset += 8;
                let value = match FIELDS[i] {
                    ("tid", _, _) => ValueKey::uint(word >> 32),
                    ("cpu", _, _) => ValueKey::uint(word & 0xffff_ffff),
                    (_, _, AttrType::Addr) => ValueKey::from_variant(&Variant::Addr(word)),
                    _ => ValueKey::uint(word),
                };
                entries[n] = (attr, value);
                n += 1;
            }
            if let Some(&name) = a.names.get(usize::from(ring.event)) {
                entries[n] = (a.name, name);
                n += 1;
            }
            let trigger = &entries[..n];
            (target.entry)(channel, trigger, None);
        }
        at += size;
    }
    fence(Ordering::Release);
    tail.store(at, Ordering::Release);
}
