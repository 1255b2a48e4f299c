//! The handshake between annotating threads and a flush.
//!
//! Each thread owns its measurement data and updates it without locks.
//! A flush (from another thread, or at exit) must read that data, so a
//! thread marks itself busy around each update, and a flush first counts
//! itself in a global word and then waits until no thread is busy; updates
//! that see a flush counted are dropped (the reference drops them too),
//! except during a flush that asks them to wait ([`StopUpdates::waited`]).
//!
//! A flush never waits for ever: a thread that is still inside an update
//! after [`WAIT_LIMIT`] (stopped, or interrupted by a signal handler that
//! flushes or exits), and the flushing thread's own flag if a signal
//! interrupted its update, are *abandoned*: the flush leaves their data
//! out, and the caller reports how many it could not include.
//!
//! The owner's side must be cheap: it only needs a compiler fence, because
//! the flusher issues `membarrier(2)`, which makes every running thread of
//! the process execute a full memory barrier. Where membarrier is not
//! available, both sides use full fences.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering, compiler_fence, fence};
use std::time::{Duration, Instant};

/// How long a flush waits for a thread to leave its update before it
/// leaves that thread's data out. An update takes nanoseconds; a thread
/// still inside one after this long is stopped or was interrupted.
pub const WAIT_LIMIT: Duration = Duration::from_secs(1);

/// What an update checks after marking its thread busy, in one word, so
/// that the common case is one load and one test: twice the number of
/// flushes reading the threads' data (updates are stopped while it is not
/// 0), plus [`FULL_FENCES`] until membarrier is known to work. A count,
/// not a flag each flush saves and restores: two threads flushing at once
/// would otherwise restore each other's saved value out of order and leave
/// updates stopped for good.
static STATE: AtomicUsize = AtomicUsize::new(FULL_FENCES);

/// In [`STATE`]: updates need a full fence between marking their thread
/// busy and reading the flush count (no membarrier).
const FULL_FENCES: usize = 1;
/// In [`STATE`]: one flush.
const ONE_FLUSH: usize = 2;

/// How many running flushes make updates wait rather than be dropped
/// (see [`StopUpdates::waited`]); counted before they count in [`STATE`].
static WAITED: AtomicUsize = AtomicUsize::new(0);

/// 0: not probed, 1: membarrier registered, 2: not available.
static MEMBARRIER: AtomicU8 = AtomicU8::new(0);

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Registers for expedited membarriers; call once before threads annotate.
pub fn init() {
    if MEMBARRIER.load(Ordering::Relaxed) != 0 {
        return;
    }
    // SAFETY: a plain syscall without pointers.
    let ok = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) } == 0;
    MEMBARRIER.store(if ok { 1 } else { 2 }, Ordering::SeqCst);
    if ok {
        STATE.fetch_and(!FULL_FENCES, Ordering::SeqCst);
    }
}

fn heavy_fence() {
    if MEMBARRIER.load(Ordering::Relaxed) == 1 {
        // SAFETY: a plain syscall without pointers.
        let ok = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) } == 0;
        if ok {
            return;
        }
    }
    fence(Ordering::SeqCst);
}

thread_local! {
    /// How many runtime locks the calling thread holds (see [`lock`]).
    static LOCKS_HELD: Cell<u32> = const { Cell::new(0) };
}

/// A guard of one of the runtime's locks, counted per thread: a flush at
/// exit that runs on a thread interrupted while holding one (a signal
/// handler calling `exit`) would wait for itself. The count covers the
/// lock from before it is taken until after it is released, so that a
/// signal never finds the lock held and the count zero.
pub struct Held<G> {
    guard: std::mem::ManuallyDrop<G>,
}

impl<G> Held<G> {
    /// Counts a lock about to be taken by `take`.
    fn take(take: impl FnOnce() -> G) -> Held<G> {
        LOCKS_HELD.with(|n| n.set(n.get() + 1));
        compiler_fence(Ordering::SeqCst);
        Held { guard: std::mem::ManuallyDrop::new(take()) }
    }
}

impl<G> Drop for Held<G> {
    fn drop(&mut self) {
        // SAFETY: the guard is dropped once, here.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.guard) };
        compiler_fence(Ordering::SeqCst);
        LOCKS_HELD.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl<G: std::ops::Deref> std::ops::Deref for Held<G> {
    type Target = G::Target;
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: std::ops::DerefMut> std::ops::DerefMut for Held<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

/// Locks one of the runtime's mutexes (a poisoned one too: the data of a
/// panicking service is still the best there is).
pub fn lock<T: ?Sized>(m: &std::sync::Mutex<T>) -> Held<std::sync::MutexGuard<'_, T>> {
    Held::take(|| m.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Reads one of the runtime's read-write locks (see [`lock`]).
pub fn read<T: ?Sized>(l: &std::sync::RwLock<T>) -> Held<std::sync::RwLockReadGuard<'_, T>> {
    Held::take(|| l.read().unwrap_or_else(|e| e.into_inner()))
}

/// Writes one of the runtime's read-write locks (see [`lock`]).
pub fn write<T: ?Sized>(l: &std::sync::RwLock<T>) -> Held<std::sync::RwLockWriteGuard<'_, T>> {
    Held::take(|| l.write().unwrap_or_else(|e| e.into_inner()))
}

/// Whether the calling thread holds one of the runtime's locks: a flush
/// called now comes from a signal handler that interrupted the runtime,
/// and would wait for itself.
pub fn holds_runtime_lock() -> bool {
    LOCKS_HELD.with(Cell::get) > 0
}

/// Whether the calling thread is inside a flush (holds [`StopUpdates`]).
pub fn inside_flush() -> bool {
    HELD.with(Cell::get) > 0
}

/// Whether another thread holds `lock` (in a forked child: held for good,
/// by a thread of the parent). A poisoned lock is free.
pub fn is_held<T: ?Sized>(lock: &std::sync::Mutex<T>) -> bool {
    matches!(lock.try_lock(), Err(std::sync::TryLockError::WouldBlock))
}

/// As [`is_held`], for a read-write lock, read or written.
pub fn is_rw_held<T: ?Sized>(lock: &std::sync::RwLock<T>) -> bool {
    matches!(lock.try_write(), Err(std::sync::TryLockError::WouldBlock))
}

/// A thread's busy flag.
#[derive(Default)]
pub struct BusyFlag {
    busy: AtomicBool,
    /// Set by a flush that gave up waiting for this thread (see
    /// [`StopUpdates::new`]): its data may be half-updated and must not be
    /// read. Never read on the update path.
    abandoned: AtomicBool,
}

impl BusyFlag {
    /// Marks the thread busy; `false` (and not busy) if a flush is running
    /// or the thread is already inside an update (a signal handler that
    /// interrupted one), in which case the update must be skipped.
    #[inline]
    pub fn enter(&self) -> bool {
        match self.set_busy() {
            None => false,
            Some(0) => true,
            Some(state) => self.enter_checked(state, true),
        }
    }

    /// [`BusyFlag::enter`] for a signal handler: never waits, and so
    /// `false` whenever a flush runs (the handler may have interrupted the
    /// flushing thread itself).
    #[inline]
    pub fn try_enter(&self) -> bool {
        match self.set_busy() {
            None => false,
            Some(0) => true,
            Some(state) => self.enter_checked(state, false),
        }
    }

    /// Sets the flag unless it is set already; then the flush state, read
    /// after the flag is set.
    #[inline(always)]
    fn set_busy(&self) -> Option<usize> {
        if self.busy.load(Ordering::Relaxed) {
            return None;
        }
        self.busy.store(true, Ordering::Relaxed);
        // A flush's membarrier orders the store before this load.
        compiler_fence(Ordering::SeqCst);
        Some(STATE.load(Ordering::Relaxed))
    }

    /// The rest of an enter when a flush runs or updates need full fences
    /// (`state` read before the fence, with the flag set): waits for a
    /// flush that makes updates wait if `may_wait`.
    #[cold]
    fn enter_checked(&self, mut state: usize, may_wait: bool) -> bool {
        loop {
            if state & FULL_FENCES != 0 {
                fence(Ordering::SeqCst);
                state = STATE.load(Ordering::Relaxed);
            }
            if state < ONE_FLUSH {
                return true;
            }
            self.busy.store(false, Ordering::Release);
            if !(may_wait && wait_for_flushes()) {
                return false;
            }
            // Enter again.
            match self.set_busy() {
                Some(now) => state = now,
                None => return false,
            }
        }
    }

    /// Ends the update: the data written in it is visible to a flush.
    #[inline(always)]
    pub fn leave(&self) {
        self.busy.store(false, Ordering::Release);
    }

    /// In a forked child, for a thread of the parent (which does not exist
    /// in the child): a thread that was inside an update at the fork left
    /// its data half-written and is abandoned for good; the others' data
    /// is whole.
    pub fn settle_after_fork(&self) {
        if self.is_busy() {
            self.abandoned.store(true, Ordering::SeqCst);
        }
    }

    /// Whether a flush may read the thread's data: false once a flush gave
    /// up waiting for it (until that flush ends).
    pub fn is_readable(&self) -> bool {
        !self.abandoned.load(Ordering::Acquire)
    }

    /// Whether the thread is inside an update.
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// Waits until the thread leaves its update, up to `deadline`; false
    /// if it is still inside then.
    fn wait_until_idle(&self, deadline: Instant) -> bool {
        let mut spins = 0u32;
        while self.is_busy() {
            if spins > 1000 && spins.is_multiple_of(64) && Instant::now() >= deadline {
                return false;
            }
            pause(&mut spins, 1000);
        }
        true
    }
}

/// Waits (with the caller's busy flag clear) while a flush that makes
/// updates wait runs; `false` if the update must be dropped instead: no
/// such flush runs (at exit updates stay stopped for good), or the calling
/// thread is the one flushing (an update from inside its own flush, e.g. a
/// wrapped write of the output, or a signal handler interrupting it), or it
/// holds a runtime lock that the flush may need.
fn wait_for_flushes() -> bool {
    if HELD.try_with(Cell::get) != Ok(0) || LOCKS_HELD.try_with(Cell::get) != Ok(0) {
        return false;
    }
    let mut spins = 0u32;
    // A guard counts in `WAITED` before `STATE` and leaves `STATE` first,
    // so that `STATE` read again after `WAITED` tells a flush that makes
    // updates wait from one that does not.
    while STATE.load(Ordering::SeqCst) >= ONE_FLUSH {
        if WAITED.load(Ordering::SeqCst) == 0 {
            return STATE.load(Ordering::SeqCst) < ONE_FLUSH;
        }
        pause(&mut spins, 100);
    }
    true
}

/// One round of a wait for another thread: spins `spinning` rounds, then
/// yields the processor each round.
fn pause(spins: &mut u32, spinning: u32) {
    *spins += 1;
    if *spins > spinning {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Stops updates and waits until no thread is busy; the flush may then
/// read the data of every thread whose flag [`BusyFlag::is_readable`].
/// Updates resume when the last guard is dropped. One thread at a time
/// holds guards (nested guards on that thread are fine, e.g. a config's
/// flush inside the flush at exit), so two flushes never read and write the
/// same thread data at once.
pub struct StopUpdates<'a> {
    /// Whether this guard took [`FLUSH_LOCK`] (the outermost on its thread).
    exclusive: bool,
    /// The flags this guard abandoned; readable again when it ends.
    abandoned: Vec<&'a BusyFlag>,
    /// Whether it counts in [`WAITED`].
    waited: bool,
}

/// Held by the thread that stops updates. A flag rather than a mutex, so
/// that a forked child can release what a parent's thread held at the
/// fork ([`reset_after_fork`]).
static FLUSH_LOCK: AtomicBool = AtomicBool::new(false);

/// In a forked child: no flush is running (the threads that ran them do
/// not exist in the child).
pub fn reset_after_fork() {
    // The forking thread's own guards (a fork from inside a flush) release
    // the lock and the count themselves.
    if HELD.with(Cell::get) == 0 {
        FLUSH_LOCK.store(false, Ordering::SeqCst);
        STATE.fetch_and(FULL_FENCES, Ordering::SeqCst);
        WAITED.store(0, Ordering::SeqCst);
    }
}

fn lock_flushes() {
    let mut spins = 0u32;
    while FLUSH_LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        pause(&mut spins, 100);
    }
}

thread_local! {
    /// How many `StopUpdates` guards the calling thread holds.
    static HELD: Cell<u32> = const { Cell::new(0) };
}

impl<'a> StopUpdates<'a> {
    /// Stops updates on all threads whose flags are given; updates tried
    /// meanwhile are dropped. `own` is the calling thread's flag, if it has
    /// one: when it is busy, a signal handler interrupted the caller's
    /// update, which cannot finish before this returns, so it is abandoned
    /// at once. Other threads get until [`WAIT_LIMIT`] together.
    pub fn new(flags: impl IntoIterator<Item = &'a BusyFlag>, own: Option<&BusyFlag>) -> StopUpdates<'a> {
        StopUpdates::stop(flags, own, false)
    }

    /// [`StopUpdates::new`], but the other threads' updates wait for the
    /// guard to go rather than being dropped: for a flush in the middle of
    /// a run, where a dropped update loses its snapshots and leaves its
    /// thread's region stack out of step with the program (a dropped begin
    /// or end makes the next end mismatch). Waiting threads stall for as
    /// long as the guard lives.
    pub fn waited(flags: impl IntoIterator<Item = &'a BusyFlag>, own: Option<&BusyFlag>) -> StopUpdates<'a> {
        StopUpdates::stop(flags, own, true)
    }

    fn stop(flags: impl IntoIterator<Item = &'a BusyFlag>, own: Option<&BusyFlag>, waited: bool) -> StopUpdates<'a> {
        let exclusive = HELD.with(Cell::get) == 0;
        if exclusive {
            lock_flushes();
        }
        HELD.with(|h| h.set(h.get() + 1));
        if waited {
            WAITED.fetch_add(1, Ordering::SeqCst);
        }
        STATE.fetch_add(ONE_FLUSH, Ordering::SeqCst);
        heavy_fence();
        let deadline = Instant::now() + WAIT_LIMIT;
        let mut abandoned = Vec::new();
        for flag in flags {
            if !flag.is_readable() {
                continue; // abandoned by an enclosing flush or at a fork
            }
            let interrupted = own.is_some_and(|own| std::ptr::eq(own, flag)) && flag.is_busy();
            if interrupted || !flag.wait_until_idle(deadline) {
                flag.abandoned.store(true, Ordering::SeqCst);
                abandoned.push(flag);
            }
        }
        StopUpdates { exclusive, abandoned, waited }
    }

    /// How many threads this guard left out because they stayed inside an
    /// update.
    pub fn abandoned(&self) -> usize {
        self.abandoned.len()
    }

    /// Keeps updates stopped for good (at process exit).
    pub fn forever(self) {
        std::mem::forget(self);
    }
}

impl Drop for StopUpdates<'_> {
    fn drop(&mut self) {
        for flag in &self.abandoned {
            flag.abandoned.store(false, Ordering::Release);
        }
        STATE.fetch_sub(ONE_FLUSH, Ordering::SeqCst);
        if self.waited {
            WAITED.fetch_sub(1, Ordering::SeqCst);
        }
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
        if self.exclusive {
            FLUSH_LOCK.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    /// Holds the flush lock as a flush's outermost guard does, so that the
    /// flushes of other tests (in other threads) wait, and this thread's
    /// own guards nest in it.
    struct OtherFlushesWait;

    impl OtherFlushesWait {
        fn new() -> OtherFlushesWait {
            lock_flushes();
            HELD.with(|h| h.set(h.get() + 1));
            OtherFlushesWait
        }
    }

    impl Drop for OtherFlushesWait {
        fn drop(&mut self) {
            HELD.with(|h| h.set(h.get() - 1));
            FLUSH_LOCK.store(false, Ordering::Release);
        }
    }

    /// One test, not two: both depend on the process-wide flush flag.
    #[test]
    fn reentry_is_refused_and_a_flush_sees_consistent_data() {
        init();
        // Another test's flush would refuse the updates expected to enter.
        let others_wait = OtherFlushesWait::new();
        let flag = BusyFlag::default();
        assert!(flag.enter());
        assert!(!flag.enter(), "a nested update (signal handler) is skipped");
        flag.leave();
        assert!(flag.enter());
        flag.leave();
        // Two flushes at once, the first ending first: updates stay
        // stopped until both have ended.
        let (first, second) = (StopUpdates::new([], None), StopUpdates::new([], None));
        drop(first);
        assert!(!flag.enter(), "stopped by the second flush");
        drop(second);
        // A flush that makes updates wait: another thread's update enters
        // once it has ended, not before, and not refused; this thread's
        // own update (as from inside its flush) is refused.
        let waited = StopUpdates::waited([&flag], None);
        assert!(!flag.enter(), "the flushing thread's own update");
        let entered = AtomicBool::new(false);
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let ok = flag.enter();
                entered.store(true, Ordering::SeqCst);
                ok
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!entered.load(Ordering::SeqCst), "entered during the flush");
            drop(waited);
            assert!(other.join().unwrap(), "the waiting update was refused");
        });
        flag.leave();
        drop(others_wait);

        // Each update writes two counters that must stay equal; a flush
        // checks them while updates run.
        struct Slot {
            flag: BusyFlag,
            a: AtomicU64,
            b: AtomicU64,
        }
        let slots: Arc<Vec<Slot>> = Arc::new(
            (0..2).map(|_| Slot { flag: BusyFlag::default(), a: AtomicU64::new(0), b: AtomicU64::new(0) }).collect(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::scope(|s| {
            for i in 0..2 {
                let (slots, stop) = (slots.clone(), stop.clone());
                s.spawn(move || {
                    let slot = &slots[i];
                    while !stop.load(Ordering::Relaxed) {
                        if slot.flag.enter() {
                            let v = slot.a.load(Ordering::Relaxed) + 1;
                            slot.a.store(v, Ordering::Relaxed);
                            slot.b.store(v, Ordering::Relaxed);
                            slot.flag.leave();
                        }
                    }
                });
            }
            for _ in 0..200 {
                let guard = StopUpdates::new(slots.iter().map(|s| &s.flag), None);
                for slot in slots.iter() {
                    assert_eq!(slot.a.load(Ordering::Relaxed), slot.b.load(Ordering::Relaxed));
                }
                drop(guard);
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Relaxed);
        });
    }

    #[test]
    fn one_thread_flushes_at_a_time_and_may_nest() {
        let inside = Arc::new(AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..3 {
                let inside = inside.clone();
                s.spawn(move || {
                    for _ in 0..200 {
                        let outer = StopUpdates::new([], None);
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "another flush is running");
                        // A nested guard on the same thread does not wait
                        // for the lock its thread holds.
                        drop(StopUpdates::new([], None));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(outer);
                    }
                });
            }
        });
    }
}
