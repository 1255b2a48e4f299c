//! `sampler`: snapshots at a fixed frequency, whatever the program is
//! doing, with the program counter it was interrupted at
//! (`cali.sampler.pc`, an address of class `symboladdress`) and the
//! thread's region context. Each thread that meets the channel gets a
//! POSIX timer (`timer_create` with `SIGEV_THREAD_ID`) that sends it
//! `SIGPROF` every `1/CALI_SAMPLER_FREQUENCY` seconds; the handler pushes a
//! snapshot through the async-signal-safe entry (see [`crate::signal`]),
//! and the runtime processes it outside the handler. The global
//! `sample.frequency` records the rate, so that reports can turn sample
//! counts into time.
//!
//! As in the reference, one channel per process may sample, and a program
//! that handles `SIGPROF` itself keeps it: the sampler then stays off, and
//! says so. At the end of the program the timers are deleted and the
//! program's `SIGPROF` disposition comes back.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use super::signal_claim::SignalClaim;
use crate::log;
use crate::service::{ChannelView, Runtime, Service, ServiceState, SignalEntry, ThreadService};
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "sampler",
    aliases: &[],
    description: "Take snapshots at a fixed frequency from a per-thread timer signal (SIGPROF), with the program \
                  counter (cali.sampler.pc)",
    stage: Stage::Trigger,
    settings: &[
        SettingSpec {
            key: "frequency",
            kind: SettingKind::Int,
            default: "50",
            description: "Samples per second and thread (1 to 10000)",
        },
        SettingSpec {
            key: "clock",
            kind: SettingKind::String,
            default: "wall",
            description: "What the timers count: wall (elapsed time, as the reference's; a sample may interrupt \
                          a system call) or cpu (the thread's CPU time: a thread that sleeps or waits is not sampled)",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        Sampler::new(setup).map(|s| Created::Service(Arc::new(s)))
    },
};

/// The lowest and highest frequencies (Hz), as the reference clamps them.
const FREQUENCIES: (i64, i64) = (1, 10_000);

/// Set while a channel samples: one per process.
static SAMPLING: AtomicBool = AtomicBool::new(false);

/// What the handler needs, in one word so that it reads it at once: the
/// channel's id (high half) and `cali.sampler.pc`'s (low half);
/// [`NO_TARGET`] until the channel is made and after the end.
static TARGET: AtomicU64 = AtomicU64::new(NO_TARGET);
const NO_TARGET: u64 = u64::MAX;

/// The runtime's signal snapshot entry, for the handler.
static ENTRY: OnceLock<SignalEntry> = OnceLock::new();

/// The program's `SIGPROF` disposition before the sampler's, restored at
/// the end.
static PREVIOUS_ACTION: Mutex<Option<SignalClaim>> = Mutex::new(None);

/// The timers of the threads, deleted at the end (a thread that exits
/// deletes its own).
static TIMERS: Mutex<Vec<Timer>> = Mutex::new(Vec::new());

struct Sampler {
    pc: Id,
    /// The timers' interval.
    interval: libc::timespec,
    clock: libc::clockid_t,
}

// SAFETY: `timespec` is plain data.
unsafe impl Send for Sampler {}
// SAFETY: `timespec` is plain data, never written after creation.
unsafe impl Sync for Sampler {}

impl Sampler {
    fn new(setup: &Setup<'_>) -> Result<Sampler, NotCreated> {
        let settings = &setup.settings;
        let clock = match settings.text("clock").as_str() {
            "wall" => libc::CLOCK_MONOTONIC,
            "cpu" => libc::CLOCK_THREAD_CPUTIME_ID,
            other => {
                log::error(format_args!("sampler: unknown clock \"{other}\" (wall or cpu); sampler disabled"));
                return Err(NotCreated::BadSettings);
            }
        };
        if SAMPLING.swap(true, Ordering::AcqRel) {
            log::error(format_args!("Cannot enable sampler service twice!"));
            return Err(NotCreated::BadSettings);
        }
        match SignalClaim::claim(libc::SIGPROF, "SIGPROF", on_sigprof) {
            Ok(claim) => *crate::sync::lock(&PREVIOUS_ACTION) = Some(claim),
            Err(why) => {
                SAMPLING.store(false, Ordering::Release);
                log::error(format_args!("sampler: {why}; sampler disabled"));
                return Err(NotCreated::BadSettings);
            }
        }
        let frequency = settings.number::<i64>("frequency").clamp(FREQUENCIES.0, FREQUENCIES.1);
        let cali = setup.cali;
        ENTRY.get_or_init(|| cali.signal_entry());
        let pc_props = Properties::ASVALUE | Properties::SKIP_EVENTS;
        let symbol_address = cali.create_attribute("class.symboladdress", AttrType::Bool, Properties::SKIP_EVENTS, &[]);
        let pc = cali.create_attribute(
            "cali.sampler.pc",
            AttrType::Addr,
            pc_props,
            &[(symbol_address.id(), Variant::Bool(true))],
        );
        let global = Properties::GLOBAL | Properties::UNALIGNED | Properties::SKIP_EVENTS;
        let rate = cali.create_attribute("sample.frequency", AttrType::Int, global, &[]);
        cali.set_global(rate, ValueKey::from_variant(&Variant::Int(frequency)));
        let nanos = 1_000_000_000 / frequency;
        let interval =
            libc::timespec { tv_sec: (nanos / 1_000_000_000) as libc::time_t, tv_nsec: nanos % 1_000_000_000 };
        // Threads make their channel states (and so their timers) at their
        // next update, and the thread that activates the channel at once.
        crate::capture::WANTED.store(true, Ordering::Release);
        Ok(Sampler { pc: pc.id(), interval, clock })
    }
}

impl Service for Sampler {
    fn name(&self) -> &'static str {
        "sampler"
    }

    fn samples(&self) -> bool {
        true
    }

    fn attach(&self, channel: usize) {
        // Attribute ids are node ids, which take 32 bits.
        TARGET.store(((channel as u64) << 32) | (self.pc & 0xffff_ffff), Ordering::Release);
    }

    /// The calling thread's timer, which runs until the thread exits or
    /// the program ends.
    fn thread_state(&self) -> ServiceState {
        match Timer::start(self.clock, self.interval) {
            Ok(timer) => {
                crate::sync::lock(&TIMERS).push(timer);
                Box::new(ThreadTimer(timer))
            }
            Err(e) => {
                log::error(format_args!("sampler: no timer for this thread ({e}); it is not sampled"));
                Box::new(())
            }
        }
    }

    /// Stops sampling: the handler takes no more snapshots, every timer is
    /// deleted, and `SIGPROF` goes back to what the program had.
    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        TARGET.store(NO_TARGET, Ordering::Release);
        for timer in crate::sync::lock(&TIMERS).drain(..) {
            timer.delete();
        }
        if let Some(claim) = crate::sync::lock(&PREVIOUS_ACTION).take() {
            claim.release();
        }
        SAMPLING.store(false, Ordering::Release);
    }
}

/// A thread's part of the sampler: its timer, deleted when the thread
/// exits (unless the end of the program did first).
struct ThreadTimer(Timer);

impl ThreadService for ThreadTimer {}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        let mut timers = crate::sync::lock(&TIMERS);
        if let Some(i) = timers.iter().position(|t| *t == self.0) {
            timers.swap_remove(i).delete();
        }
    }
}

/// A POSIX timer that signals one thread.
#[derive(Copy, Clone, PartialEq, Eq)]
struct Timer(libc::timer_t);

// SAFETY: a timer id is a handle the kernel resolves for any thread of the
// process.
unsafe impl Send for Timer {}

impl Timer {
    /// A timer on `clock` that sends `SIGPROF` to the calling thread every
    /// `interval`, started.
    fn start(clock: libc::clockid_t, interval: libc::timespec) -> std::io::Result<Timer> {
        // SAFETY: plain system calls on structures made here.
        unsafe {
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = libc::SIGPROF;
            event.sigev_notify_thread_id = libc::gettid();
            let mut id: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(clock, &mut event, &mut id) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let spec = libc::itimerspec { it_interval: interval, it_value: interval };
            if libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) != 0 {
                let error = std::io::Error::last_os_error();
                libc::timer_delete(id);
                return Err(error);
            }
            Ok(Timer(id))
        }
    }

    fn delete(self) {
        // SAFETY: the id came from timer_create and is deleted once (it
        // leaves `TIMERS` before).
        unsafe { libc::timer_delete(self.0) };
    }
}

/// The `SIGPROF` handler: a snapshot with the interrupted program counter,
/// its call stack if a channel records call paths, and its OpenMP state if
/// the channel has `ompt`. Async-signal-safe
/// (atomics, the unwinder and the signal entry), and keeps `errno`.
extern "C" fn on_sigprof(_signal: libc::c_int, _info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let (target, Some(push)) = (TARGET.load(Ordering::Acquire), ENTRY.get()) else { return };
    if target == NO_TARGET {
        return;
    }
    // SAFETY: errno is the thread's own; the context is the kernel's.
    unsafe {
        let errno = *libc::__errno_location();
        let channel = (target >> 32) as usize;
        let pc = (target & 0xffff_ffff, ValueKey::from_variant(&Variant::Addr(program_counter(context))));
        // The OpenMP state the thread was interrupted in, where the channel
        // has `ompt`: read here, as the program counter is.
        let state = super::ompt::sampled_state(channel);
        let entries = [pc, state.unwrap_or(pc)];
        let entries = &entries[..1 + usize::from(state.is_some())];
        let mut frames = [0u64; crate::capture::MAX_FRAMES];
        let path = super::callpath::request().map(|(attr, skip)| {
            let n = crate::unwind::unwind_in_signal(context, skip, &mut frames);
            (attr, &frames[..n])
        });
        push(channel, entries, path);
        *libc::__errno_location() = errno;
    }
}

/// The program counter of the interrupted code, from the handler's
/// context (0 where this architecture's layout is not known).
///
/// # Safety
/// `context` must be the `ucontext_t` the kernel passed the handler.
unsafe fn program_counter(context: *mut libc::c_void) -> u64 {
    let context = context as *const libc::ucontext_t;
    if context.is_null() {
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a valid context, by the caller.
    return unsafe { (*context).uc_mcontext.gregs[libc::REG_RIP as usize] as u64 };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a valid context, by the caller.
    return unsafe { (*context).uc_mcontext.pc };
    #[allow(unreachable_code)]
    0
}
