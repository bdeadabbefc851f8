//! A running median of durations, shared by the whole process without locks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A running median of durations shared by the whole process (relaxed atomics: a lost
/// update now and then does not matter). It moves one small step towards each sample,
/// which settles at the median and shrugs off outliers; the first samples move it
/// halfway, so that it starts near the right value instead of creeping up from zero.
#[derive(Debug)]
pub struct RunningMedian {
    nanos: AtomicU64,
    samples: AtomicU64,
    step: u64,
    max: u64,
}

/// How many samples a [`RunningMedian`] takes halfway before it steps.
const WARM_UP: u64 = 16;

impl RunningMedian {
    /// An estimate of zero, moving by `step` per sample, never above `max`.
    pub const fn new(step: Duration, max: Duration) -> Self {
        RunningMedian {
            nanos: AtomicU64::new(0),
            samples: AtomicU64::new(0),
            step: step.as_nanos() as u64,
            max: max.as_nanos() as u64,
        }
    }

    /// The current estimate.
    pub fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// Moves the estimate towards `sample`.
    pub fn learn(&self, sample: Duration) {
        let sample = u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX);
        let estimate = self.nanos.load(Ordering::Relaxed);
        let next = if self.samples.fetch_add(1, Ordering::Relaxed) < WARM_UP {
            estimate / 2 + sample.min(self.max) / 2
        } else if sample > estimate {
            estimate + self.step
        } else {
            estimate.saturating_sub(self.step)
        };
        self.nanos.store(next.min(self.max), Ordering::Relaxed);
    }

    #[cfg(test)]
    fn reset(&self) {
        self.nanos.store(0, Ordering::Relaxed);
        self.samples.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_median_warms_up_fast_then_tracks_the_median() {
        let m = RunningMedian::new(Duration::from_micros(1), Duration::from_micros(250));
        // Warm-up: halfway to each sample, so 16 samples of 50 us get within 1 us of it.
        for _ in 0..16 {
            m.learn(Duration::from_micros(50));
        }
        assert!(m.get().abs_diff(Duration::from_micros(50)) <= Duration::from_micros(1));
        // Then the median: 20, 30, 40 us and a 5 ms outlier settle between 30 and 40 us.
        for i in 0..4000u64 {
            let us = [20, 30, 40, 5000][(i % 4) as usize];
            m.learn(Duration::from_micros(us));
        }
        let median = m.get();
        assert!(
            median >= Duration::from_micros(28) && median <= Duration::from_micros(43),
            "{median:?}"
        );
        for _ in 0..1000 {
            m.learn(Duration::from_secs(1));
        }
        assert_eq!(m.get(), Duration::from_micros(250));
        m.reset();
        assert_eq!(m.get(), Duration::ZERO);
    }
}
