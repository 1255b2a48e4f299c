//! `trace`: keeps every snapshot, in compact per-thread buffers (their
//! encoding: [`crate::buffer::trace`]).
//!
//! Buffers grow in chunks of `CALI_TRACE_BUFFER_SIZE` MiB, each decoded on
//! its own; with `CALI_TRACE_BUFFER_POLICY=stop` a thread stops recording
//! when its first chunk is full, and with `flush` a full chunk makes the
//! runtime write the channel's output and clear the buffers.

use super::registry::{Created, NotCreated, ServiceSpec, SettingKind, SettingSpec, Setup, Stage};
use crate::buffer::trace::{DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES, Policy, Shared, TraceThread};
use crate::log;
use crate::service::{Runtime, Service, ServiceState, ThreadService, state_mut};
use caliper_data::Record;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The trace service of a channel: its settings and what its threads
/// share.
pub struct Trace {
    channel: Arc<str>,
    policy: Policy,
    shared: Arc<Shared>,
}

/// The chunk size in bytes for a `CALI_TRACE_BUFFER_SIZE` of `setting` MiB,
/// or why it is unusable: not a number, not positive, or more than the
/// machine's memory (`memory`; a size that overflows is more than that).
///
/// A size up to the memory is taken as asked, and allocated when a thread
/// first records: chunks are allocated zeroed, which maps fresh pages that
/// cost memory only once written, so a huge chunk that the kernel grants
/// (overcommits) uses what the trace fills and no more; one that it
/// refuses falls back to the default then (see [`TraceThread`]). A
/// chunk larger than the memory is refused here, as it could never be
/// filled.
fn chunk_bytes(setting: &str, memory: usize) -> Result<usize, &'static str> {
    let mib: f64 = setting.trim().parse().map_err(|_| "not a number")?;
    if mib.is_nan() || mib <= 0.0 {
        return Err("not a positive size");
    }
    let bytes = mib * f64::from(1u32 << 20);
    // `as` saturates: a size beyond `usize` (or infinite) compares above
    // any memory; and no allocation may exceed `isize::MAX` bytes.
    if bytes as usize > memory.min(isize::MAX as usize) {
        return Err("more than the machine's memory");
    }
    Ok((bytes as usize).max(MIN_CHUNK_BYTES))
}

/// The machine's physical memory in bytes (`usize::MAX` if unknown).
fn physical_memory() -> usize {
    // SAFETY: plain queries without pointers.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (usize::try_from(pages), usize::try_from(page)) {
        (Ok(pages), Ok(page)) if pages > 0 && page > 0 => pages.saturating_mul(page),
        _ => usize::MAX,
    }
}

impl Trace {
    /// A new thread's trace.
    fn thread(&self) -> TraceThread {
        TraceThread::new(self.channel.clone(), self.policy, self.shared.clone())
    }

    pub fn new(setup: &Setup<'_>) -> Trace {
        let (channel, settings) = (setup.channel, &setup.settings);
        let setting = settings.get("buffer_size").filter(|s| !s.trim().is_empty());
        let chunk_bytes = match setting.as_deref().map(|s| chunk_bytes(s, physical_memory())) {
            None => DEFAULT_CHUNK_BYTES,
            Some(Ok(bytes)) => bytes,
            Some(Err(why)) => {
                log::error(format_args!(
                    "{channel}: trace: CALI_TRACE_BUFFER_SIZE \"{}\" is {why}, using {} MiB",
                    setting.unwrap_or_default(),
                    DEFAULT_CHUNK_BYTES >> 20
                ));
                DEFAULT_CHUNK_BYTES
            }
        };
        let policy = match settings.text("buffer_policy").as_str() {
            "grow" => Policy::Grow,
            "stop" => Policy::Stop,
            "flush" => Policy::Flush,
            other => {
                log::error(format_args!("trace: error: unknown buffer policy \"{other}\""));
                Policy::Grow
            }
        };
        let shared = Shared {
            chunk_bytes: AtomicUsize::new(chunk_bytes),
            flush_requested: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        };
        Trace { channel: channel.into(), policy, shared: Arc::new(shared) }
    }
}

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "trace",
    aliases: &[],
    description: "Keep every snapshot in per-thread trace buffers",
    stage: Stage::Buffer,
    settings: &[
        SettingSpec {
            key: "buffer_size",
            kind: SettingKind::Double,
            default: "2",
            description: "Size of a trace buffer chunk in MiB",
        },
        SettingSpec {
            key: "buffer_policy",
            kind: SettingKind::String,
            default: "grow",
            description: "What a full chunk does: grow (add one), stop (record no more), flush (write and clear)",
        },
    ],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> { Ok(Created::Service(Arc::new(Trace::new(setup)))) },
};

impl Service for Trace {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn processes(&self) -> bool {
        true
    }

    fn thread_state(&self) -> ServiceState {
        Box::new(self.thread())
    }

    fn take_flush_request(&self) -> bool {
        self.shared.flush_requested.swap(false, Ordering::AcqRel)
    }

    fn flush(&self, _cali: &dyn Runtime, states: &mut [&mut dyn ThreadService], emit: &mut dyn FnMut(&Record)) {
        let (mut flushed, mut bytes, mut dropped) = (0u64, 0usize, 0u64);
        for state in states.iter_mut() {
            if let Some(t) = state_mut::<TraceThread>(&mut **state) {
                let (f, b, d) = t.flush(emit);
                (flushed, bytes, dropped) = (flushed + f, bytes + b, dropped + d);
            }
        }
        if dropped > 0 {
            log::error(format_args!("{}: trace: {dropped} snapshots were dropped", self.channel));
        }
        log::info(format_args!("{}: trace: Flushed {flushed} snapshots.", self.channel));
        log::log(2, format_args!("{}: trace: {bytes} bytes of buffer in use.", self.channel));
    }

    fn clear(&self, states: &mut [&mut dyn ThreadService]) {
        for state in states.iter_mut() {
            if let Some(t) = state_mut::<TraceThread>(&mut **state) {
                t.clear();
            }
        }
        self.shared.stopped.store(false, Ordering::Relaxed);
    }

    /// Keeps an exited thread's chunks, after those of the threads that
    /// exited before it: each chunk is read on its own at flush.
    fn absorb(&self, _cali: &dyn Runtime, into: &mut dyn ThreadService, from: &mut dyn ThreadService) -> bool {
        match (state_mut::<TraceThread>(into), state_mut::<TraceThread>(from)) {
            (Some(into), Some(from)) => {
                into.absorb(from);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes_are_checked() {
        let memory = 1 << 30;
        assert_eq!(chunk_bytes("2", memory), Ok(2 << 20));
        assert_eq!(chunk_bytes(" 0.5 ", memory), Ok(1 << 19));
        assert_eq!(chunk_bytes("0.0001", memory), Ok(MIN_CHUNK_BYTES));
        assert_eq!(chunk_bytes("1024", memory), Ok(memory));
        assert_eq!(chunk_bytes("1025", memory), Err("more than the machine's memory"));
        assert_eq!(chunk_bytes("9999999999999999999", memory), Err("more than the machine's memory"));
        assert_eq!(chunk_bytes("9999999999999999999", usize::MAX), Err("more than the machine's memory"));
        assert_eq!(chunk_bytes("inf", usize::MAX), Err("more than the machine's memory"));
        for bad in ["0", "-1", "NaN"] {
            assert_eq!(chunk_bytes(bad, memory), Err("not a positive size"), "{bad}");
        }
        assert_eq!(chunk_bytes("lots", memory), Err("not a number"));
    }
}
