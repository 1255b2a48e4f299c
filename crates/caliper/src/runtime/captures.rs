//! The runtime's side of snapshots taken in signal handlers (see
//! [`crate::capture`]): the capture itself, processing the captures the
//! threads hold, and the drain that processes them for threads that do
//! not update (a sampled program that was never annotated).

use super::*;
use std::time::Duration;

/// Takes a snapshot on channel `channel` (its [id](crate::channel::Channel::id))
/// with the `trigger` entries (immediate values, e.g. the program
/// counter) added, from inside a signal handler: async-signal-safe (see
/// [the `signal` module](crate::signal)). `trigger` values must be made without
/// allocating (numbers; a string must have been interned before).
pub fn push_snapshot_from_signal(channel: usize, trigger: &[(Id, ValueKey)]) -> capture::Outcome {
    capture_in_signal(channel, trigger, None).count()
}

/// [`push_snapshot_from_signal`] with a call path: the addresses `frames`
/// (outermost first, e.g. from [`crate::unwind::unwind_in_signal`]) become
/// a path of `attr` nodes in the snapshot's context (the innermost
/// [`MAX_FRAMES`](capture::MAX_FRAMES) of them).
pub fn push_snapshot_with_path_from_signal(
    channel: usize,
    trigger: &[(Id, ValueKey)],
    path: Option<(Id, &[u64])>,
) -> capture::Outcome {
    capture_in_signal(channel, trigger, path).count()
}

/// Prepares the calling thread for signal snapshots (its buffer), and
/// makes every thread prepare its own at its next update. Call it where a
/// thread starts (a sampler arms its timer there) or before signals come.
pub fn prepare_thread() {
    let first = !capture::WANTED.swap(true, Ordering::AcqRel);
    prepare_thread_for_signals(first);
}

/// The async-signal-safe part of
/// [`push_snapshot_from_signal`]: reads only atomics, the
/// thread's slot pointer (a constant-initialised thread local) and the
/// thread's data, and writes the capture into the thread's buffer.
pub(crate) fn capture_in_signal(
    channel: usize,
    trigger: &[(Id, ValueKey)],
    path: Option<(Id, &[u64])>,
) -> capture::Outcome {
    use capture::{CallPath, Entries, Outcome, StackCut};
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
        *capture = capture::Capture {
            channel,
            regions,
            unaligned,
            values,
            trigger: trigger.len(),
            time: None,
            measured: [0; capture::MAX_MEASURED],
            path: path.map_or(CallPath::of(0, &[]), |(attr, frames)| CallPath::of(attr, frames)),
        };
        if !ch.measure_capture(ct, &mut capture.time, &mut capture.measured) {
            return Outcome::Unfit;
        }
        captures.commit();
        active.version |= CAPTURES_WAITING;
        if captures.len() >= capture::CAPACITY / 2 {
            wake_capture_drain();
        }
        Outcome::Taken
    });
    outcome.unwrap_or(Outcome::Busy)
}

/// Set in a thread's [`ActiveChannels::version`] by a signal handler that
/// left a capture in the thread's buffer: the next update's check of the
/// version then processes it. Channel-list versions never reach it.
pub(super) const CAPTURES_WAITING: u64 = 1 << 63;

/// Registers the calling thread (outside any signal handler) and makes
/// its signal snapshot buffer (see [`prepare_thread`]). On the `first`
/// call, every other thread is told to make its own at its next update
/// (their channel lists go stale once); threads that come later make
/// theirs at their first update.
fn prepare_thread_for_signals(first: bool) {
    if let Some(c) = Caliper::instance() {
        if first {
            c.channels_version.fetch_add(1, Ordering::AcqRel);
        }
        c.with_thread(|t, active| {
            t.captures.get_or_insert_with(capture::Captures::new);
            c.refresh_active(t, active);
            for channel in &active.list {
                channel.prepare_thread(c, t);
            }
        });
    }
}

impl Caliper {
    /// If signal snapshots are wanted (a sampler runs), makes the calling
    /// thread's buffer and channel states now rather than at its next
    /// update, which may never come: the thread that starts the runtime or
    /// a sampling channel in a program that was not annotated. Call once
    /// the runtime is ready (a thread's first call during the
    /// initialisation would leave it without a slot).
    pub(super) fn prepare_calling_thread_for_signals(&self) {
        if capture::WANTED.load(Ordering::Acquire) {
            self.with_thread(|t, active| self.refresh_active(t, active));
        }
    }

    /// Processes the signal snapshots every thread captured (see
    /// [`crate::capture`]), so that a flush sees them. Updates must be
    /// stopped.
    pub(super) fn process_all_captures(&self, slots: &[Arc<ThreadSlot>]) {
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
    pub(super) fn process_captures(&self, t: &mut ThreadData, channels: &[Arc<Channel>]) {
        let waiting = t.captures.as_ref().map_or(0, capture::Captures::len);
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
}

thread_local! {
    /// Set while the calling thread starts one of the runtime's own
    /// threads, which a `pthread_create` wrapper must not prepare for
    /// signal snapshots (a sampler would sample the runtime itself).
    static SPAWNING_OWN_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is starting one of the runtime's own
/// threads, which a `pthread_create` wrapper must not prepare for signal
/// snapshots (a sampler would sample the runtime itself).
pub fn spawning_own_thread() -> bool {
    SPAWNING_OWN_THREAD.with(Cell::get)
}

/// Bumped by a handler that left its thread's buffer half full, to wake
/// the drain (a futex word: waking it is one system call, which a signal
/// handler may make).
static DRAIN_WAKE: AtomicU32 = AtomicU32::new(0);

/// How long the drain sleeps when no buffer fills: captures of threads
/// that sample slowly wait at most this long.
const DRAIN_PERIOD: Duration = Duration::from_millis(500);

/// Wakes the capture drain. Async-signal-safe: an atomic add and a futex
/// wake (errno is the handler's to keep).
fn wake_capture_drain() {
    DRAIN_WAKE.fetch_add(1, Ordering::Release);
    // SAFETY: a futex wake on a static word.
    unsafe { libc::syscall(libc::SYS_futex, DRAIN_WAKE.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1) };
}

/// Sleeps until [`wake_capture_drain`] or `timeout`, whichever comes
/// first (`seen` is the wake count the caller last saw).
fn wait_for_capture_drain(seen: u32, timeout: Duration) {
    let timeout = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos().into() };
    // SAFETY: a futex wait on a static word with a valid timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            DRAIN_WAKE.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seen,
            &timeout as *const libc::timespec,
        )
    };
}

impl Caliper {
    /// Starts, once, the thread that processes the captures of every
    /// thread (with updates stopped, as a flush does) when a buffer is half
    /// full or every [`DRAIN_PERIOD`] while captures were taken: a thread
    /// that never updates (an unannotated program under a sampler) would
    /// otherwise fill its buffer and drop the rest until the flush. It ends
    /// when the runtime finishes; a forked child has none (its captures
    /// wait for its updates and flushes).
    pub(super) fn start_capture_drain(&self) {
        static STARTED: Once = Once::new();
        STARTED.call_once(|| {
            SPAWNING_OWN_THREAD.with(|s| s.set(true));
            let spawned = std::thread::Builder::new().name("caliper-captures".into()).spawn(|| {
                let Some(cali) = CALIPER.get() else { return };
                let mut processed = 0;
                loop {
                    wait_for_capture_drain(DRAIN_WAKE.load(Ordering::Acquire), DRAIN_PERIOD);
                    if cali.finished.load(Ordering::Acquire) {
                        return;
                    }
                    let taken = capture::counts().taken;
                    if taken != processed {
                        processed = taken;
                        cali.with_updates_stopped(|| ());
                    }
                }
            });
            SPAWNING_OWN_THREAD.with(|s| s.set(false));
            if let Err(e) = spawned {
                log::error(format_args!("Signal snapshots: no thread to process them ({e}); they wait for updates"));
            }
        });
    }
}
