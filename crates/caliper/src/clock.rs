//! A fast monotonic nanosecond clock.
//!
//! Timers read the clock on every snapshot, so its cost is most of the
//! cost of a timed annotation. On x86-64 with an invariant time-stamp
//! counter (Linux reports `constant_tsc` and `nonstop_tsc`) the clock reads
//! the TSC and converts ticks to nanoseconds with a factor calibrated
//! against the monotonic clock once per process (2 ms); elsewhere it
//! reads the monotonic clock.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The calibrated clock.
pub struct Clock {
    base: Instant,
    tsc: Option<Tsc>,
}

/// TSC ticks to nanoseconds: `ns = (ticks - base) * mult >> 32`.
struct Tsc {
    base: u64,
    mult: u64,
}

/// The process's clock.
pub fn clock() -> &'static Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(|| Clock::calibrate().0)
}

/// The largest relative error of a TSC calibration put to use. A window
/// in which the thread was preempted between reading the two clocks
/// misses it, and is measured again; a clock that misses it in every one
/// of [`ATTEMPTS`] windows stays on the monotonic clock, which is exact.
const TARGET_ERROR: f64 = 1e-3;
/// Calibration windows at most (2 ms each).
const ATTEMPTS: usize = 5;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

fn invariant_tsc() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else { return false };
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// One calibration window: the TSC at its start, the conversion factor
/// and the relative error bound of that factor.
#[cfg(target_arch = "x86_64")]
struct Window {
    start: Instant,
    start_tsc: u64,
    mult: u64,
    error: f64,
}

#[cfg(target_arch = "x86_64")]
impl Window {
    /// Spins 2 ms. Each monotonic reading is bracketed by two TSC
    /// readings: the TSC read at that instant lies between them, so the
    /// window's ticks are the difference of the brackets' midpoints, give
    /// or take half of both brackets' widths.
    fn measure() -> Option<Window> {
        let (a0, start, a1) = (read_tsc(), Instant::now(), read_tsc());
        while start.elapsed() < Duration::from_millis(2) {
            std::hint::spin_loop();
        }
        let (b0, end, b1) = (read_tsc(), Instant::now(), read_tsc());
        let ns = end.duration_since(start).as_nanos() as u64;
        let (a, b) = (a0 + (a1 - a0) / 2, b0 + (b1 - b0) / 2);
        let ticks = b.checked_sub(a)?;
        // Half of each bracket, and a tick for each rounded midpoint.
        let slack = (a1 - a0) / 2 + (b1 - b0) / 2 + 2;
        if ticks <= slack || ns == 0 {
            return None;
        }
        // The ticks' error, and a nanosecond for the monotonic readings'
        // resolution.
        let error = slack as f64 / (ticks - slack) as f64 + 1.0 / ns as f64;
        let mult = ((u128::from(ns) << 32) / u128::from(ticks)) as u64;
        Some(Window { start, start_tsc: a, mult, error })
    }
}

impl Clock {
    /// The clock and the relative error bound of its conversion from TSC
    /// ticks (0 on the monotonic clock).
    fn calibrate() -> (Clock, f64) {
        let base = Instant::now();
        #[cfg(target_arch = "x86_64")]
        if invariant_tsc() {
            for _ in 0..ATTEMPTS {
                let Some(w) = Window::measure() else { continue };
                if w.error > TARGET_ERROR {
                    continue;
                }
                // The TSC base matches `base`: offset by the time between them.
                let since_base = w.start.duration_since(base).as_nanos() as u64;
                let ticks_since_base = ((u128::from(since_base) << 32) / u128::from(w.mult.max(1))) as u64;
                let tsc = Tsc { base: w.start_tsc.wrapping_sub(ticks_since_base), mult: w.mult };
                return (Clock { base, tsc: Some(tsc) }, w.error);
            }
        }
        (Clock { base, tsc: None }, 0.0)
    }

    /// Nanoseconds since the clock was calibrated.
    #[inline(always)]
    pub fn now_ns(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if let Some(tsc) = &self.tsc {
            let ticks = read_tsc().wrapping_sub(tsc.base);
            return ((u128::from(ticks) * u128::from(tsc.mult)) >> 32) as u64;
        }
        self.base.elapsed().as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How far CLOCK_MONOTONIC's rate may move against the TSC between
    /// calibration and test: NTP slews it by up to 500 ppm either way
    /// (the kernel's `MAXFREQ`).
    const MAX_SLEW_CHANGE: f64 = 2.0 * 500e-6;

    /// The clock agrees with the monotonic clock over 50 ms within what
    /// the calibration claims (at most [`TARGET_ERROR`], so a clock off
    /// by 10 % fails) plus the uncertainty of the test's own readings.
    #[test]
    fn agrees_with_the_monotonic_clock() {
        let (c, error) = Clock::calibrate();
        assert!(error <= TARGET_ERROR, "calibration error {error}");
        let window = Duration::from_millis(50).as_nanos() as f64;
        // As in calibration, each monotonic reading is bracketed by two
        // readings of the clock; a run preempted inside a bracket is
        // measured again, as calibration would.
        let reading = || {
            for _ in 0..ATTEMPTS {
                let (a0, t, a1) = (c.now_ns(), Instant::now(), c.now_ns());
                std::thread::sleep(Duration::from_millis(50));
                let (b0, elapsed, b1) = (c.now_ns(), t.elapsed().as_nanos() as u64, c.now_ns());
                let slack = (a1 - a0) / 2 + (b1 - b0) / 2 + 2;
                if slack as f64 <= TARGET_ERROR * window {
                    return ((b0 + (b1 - b0) / 2) - (a0 + (a1 - a0) / 2), elapsed, slack);
                }
            }
            panic!("every reading was preempted");
        };
        let (measured, elapsed, slack) = reading();
        let tolerance = ((error + MAX_SLEW_CHANGE) * elapsed as f64) as u64 + slack;
        let diff = measured.abs_diff(elapsed);
        assert!(diff <= tolerance, "clock {measured} ns vs monotonic {elapsed} ns (tolerance {tolerance} ns)");
    }

    #[test]
    fn never_goes_back() {
        let c = clock();
        let mut last = c.now_ns();
        for _ in 0..100_000 {
            let now = c.now_ns();
            assert!(now >= last);
            last = now;
        }
    }
}
