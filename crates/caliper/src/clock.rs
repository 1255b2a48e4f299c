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
    CLOCK.get_or_init(Clock::calibrate)
}

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

impl Clock {
    fn calibrate() -> Clock {
        let base = Instant::now();
        #[cfg(target_arch = "x86_64")]
        if invariant_tsc() {
            let c0 = read_tsc();
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(2) {
                std::hint::spin_loop();
            }
            let c1 = read_tsc();
            let ns = t0.elapsed().as_nanos() as u64;
            let ticks = c1.wrapping_sub(c0);
            if ticks > 0 && ns > 0 {
                let mult = ((u128::from(ns) << 32) / u128::from(ticks)) as u64;
                // The TSC base matches `base`: offset by the time between them.
                let since_base = t0.duration_since(base).as_nanos() as u64;
                let ticks_since_base = ((u128::from(since_base) << 32) / u128::from(mult.max(1))) as u64;
                return Clock { base, tsc: Some(Tsc { base: c0.wrapping_sub(ticks_since_base), mult }) };
            }
        }
        Clock { base, tsc: None }
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

    #[test]
    fn agrees_with_the_monotonic_clock() {
        let c = clock();
        let (a, t) = (c.now_ns(), Instant::now());
        std::thread::sleep(Duration::from_millis(50));
        let (b, elapsed) = (c.now_ns(), t.elapsed().as_nanos() as u64);
        assert!(b > a);
        let measured = b - a;
        // Within 2% of the monotonic clock over 50 ms.
        let diff = measured.abs_diff(elapsed);
        assert!(diff < elapsed / 50, "clock {measured} ns vs monotonic {elapsed} ns");
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
