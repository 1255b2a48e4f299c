//! Performance events through `perf_event_open`, shared by the counting
//! services (`libpfm`, `perf_topdown`): an event's code, opening it on the
//! calling thread to count in a group or to sample, and a thread's counter
//! group read with one system call, as counts since the previous read.

pub(super) use caliper_perf::{EXCLUDE_HV, EXCLUDE_KERNEL, EventCode, PRECISE_IP_SHIFT, why_refused};
use caliper_perf::{PERF_FORMAT_GROUP, PerfEventAttr};
use std::os::fd::OwnedFd;
use std::os::unix::io::AsRawFd;

/// How an event is opened: counting in a group, or sampling on its own.
#[derive(Clone, Copy)]
pub(super) enum Mode {
    /// In the group of this leader (-1: as the leader).
    Count { group: i32 },
    /// Every `period` events, recording `sample_type`.
    Sample { period: u64, sample_type: u64 },
}

/// Opens `event` on the calling thread.
pub(super) fn open(event: EventCode, mode: Mode, flags: u64, config1: u64) -> std::io::Result<OwnedFd> {
    let mut attr = PerfEventAttr { kind: event.kind, config: event.config, flags, config1, ..PerfEventAttr::default() };
    let group = match mode {
        Mode::Count { group } => {
            attr.read_format = PERF_FORMAT_GROUP;
            group
        }
        Mode::Sample { period, sample_type } => {
            attr.sample_period = period;
            attr.sample_type = sample_type;
            attr.wakeup_events = 1;
            -1
        }
    };
    // pid 0 and cpu -1: the calling thread on any processor.
    caliper_perf::open(&attr, 0, -1, group, 0)
}

/// A thread's counter group: the events it could open, and their counts
/// at the previous read.
pub(super) struct CounterGroup {
    /// The group's descriptors, the leader first.
    fds: Vec<OwnedFd>,
    /// For each descriptor, the index of its event in the list opened.
    opened: Vec<usize>,
    last: Vec<u64>,
    /// The group as read: the number of events, then their counts.
    buffer: Vec<u64>,
}

impl CounterGroup {
    /// Opens `events` on the calling thread as one group, the first one
    /// that opens leading; an event that fails is left out of this thread.
    pub(super) fn open(events: &[EventCode], flags: u64, config1: u64) -> CounterGroup {
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(events.len());
        let mut opened = Vec::with_capacity(events.len());
        for (i, &code) in events.iter().enumerate() {
            let group = fds.first().map_or(-1, |leader| leader.as_raw_fd());
            if let Ok(fd) = open(code, Mode::Count { group }, flags, config1) {
                fds.push(fd);
                opened.push(i);
            }
        }
        let n = opened.len();
        CounterGroup { fds, opened, last: vec![0; n], buffer: vec![0; n + 1] }
    }

    /// Reads the group: for each event opened, its index in the list
    /// given to [`CounterGroup::open`] and its count since the previous
    /// read. Nothing if the read fails.
    pub(super) fn deltas(&mut self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let read_ok = self.fds.first().is_some_and(|leader| {
            let bytes = std::mem::size_of_val(self.buffer.as_slice());
            // SAFETY: reads at most `bytes` into the buffer.
            let read = unsafe { libc::read(leader.as_raw_fd(), self.buffer.as_mut_ptr().cast(), bytes) };
            read == bytes as isize && self.buffer[0] as usize == self.opened.len()
        });
        let counts = if read_ok { &self.buffer[1..] } else { &[][..] };
        self.opened.iter().zip(&mut self.last).zip(counts).map(|((&i, last), &now)| {
            let delta = now.wrapping_sub(*last);
            *last = now;
            (i, delta)
        })
    }
}
