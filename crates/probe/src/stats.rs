//! RTT statistics kept the way iputils' `ping` keeps them, plus an HDR histogram.
//!
//! iputils works in whole microseconds: it sums the round-trip times (`tsum`) and their
//! squares (`tsum2`), keeps the minimum and the maximum, and at the end prints
//!
//! - avg  = `tsum / n` (integer division),
//! - mdev = `llsqrt(tmvar)` with `tmvar = (tsum2 - tsum * tsum / n) / n` while
//!   `tsum < INT_MAX`, else `tsum2 / n - avg * avg` (integer arithmetic throughout), and
//!   `llsqrt` its integer Newton iteration, which rounds `k^2 - 1` up to `k`,
//! - loss = `(float)((transmitted - received) * 100.0 / transmitted)` printed with `%g`.
//!
//! [`RttStats`] does the same (in 128-bit integers, so it cannot overflow where iputils'
//! 64-bit sums would not) and also records every RTT, in nanoseconds, into an HDR
//! histogram made by [`tsload_core::recorder::new_histogram`], the load engine's own.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use tsload_core::recorder::new_histogram;

/// C's `INT_MAX`: iputils switches its variance formula when `tsum` reaches it.
const INT_MAX: i128 = i32::MAX as i128;

/// iputils' integer square root (Newton's iteration from `a` down, stopping as soon as
/// it stops decreasing). Equals `floor(sqrt(a))` except for `a = k^2 - 1`, where it
/// returns `k`; non-positive inputs come back unchanged.
pub fn llsqrt(a: i128) -> i128 {
    let mut prev = i128::MAX;
    let mut x = a;
    if x > 0 {
        while x < prev {
            prev = x;
            x = (x + a / x) / 2;
        }
    }
    x
}

/// iputils' mean deviation, in microseconds, from the sums of `n` RTTs (µs) and of their
/// squares (µs²). `n` must be positive.
pub fn iputils_mdev_us(tsum: i128, tsum2: i128, n: i128) -> i128 {
    let tmvar = if tsum < INT_MAX {
        // iputils: "This slightly clumsy computation order is important to avoid integer
        // rounding errors for small ping times."
        (tsum2 - (tsum * tsum) / n) / n
    } else {
        let avg = tsum / n;
        tsum2 / n - avg * avg
    };
    llsqrt(tmvar)
}

/// Percentage of probes lost, as iputils computes it before printing (a C `float`
/// widened back to `double`); 0 when nothing was sent.
pub fn iputils_loss_pct(transmitted: u64, received: u64) -> f64 {
    if transmitted == 0 {
        return 0.0;
    }
    let lost = transmitted.saturating_sub(received) as f64;
    ((lost * 100.0) / transmitted as f64) as f32 as f64
}

/// Counters and RTT sums of one probe run.
#[derive(Debug, Clone)]
pub struct RttStats {
    transmitted: u64,
    received: u64,
    errors: u64,
    tsum_us: i128,
    tsum2_us: i128,
    tmin_us: i64,
    tmax_us: i64,
    histogram: Histogram<u64>,
    failures: BTreeMap<String, u64>,
}

impl Default for RttStats {
    fn default() -> Self {
        RttStats::new()
    }
}

impl RttStats {
    pub fn new() -> Self {
        RttStats {
            transmitted: 0,
            received: 0,
            errors: 0,
            tsum_us: 0,
            tsum2_us: 0,
            tmin_us: i64::MAX,
            tmax_us: 0,
            histogram: new_histogram(),
            failures: BTreeMap::new(),
        }
    }

    /// A probe went out.
    pub fn on_send(&mut self) {
        self.transmitted += 1;
    }

    /// A reply came back after `rtt` (truncated to whole microseconds for the iputils
    /// figures; the histogram keeps nanoseconds).
    pub fn on_reply(&mut self, rtt: Duration) {
        self.received += 1;
        let us = i64::try_from(rtt.as_micros()).unwrap_or(i64::MAX);
        self.record_us(us);
        let ns = u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX);
        if self.histogram.record(ns).is_err() {
            self.histogram.saturating_record(ns);
        }
    }

    /// Adds one reply known only in whole microseconds (hand-made samples; the histogram
    /// records it as `us * 1000` ns).
    pub fn on_reply_us(&mut self, us: i64) {
        self.on_reply(Duration::from_micros(us.max(0).unsigned_abs()));
    }

    fn record_us(&mut self, us: i64) {
        let t = i128::from(us);
        self.tsum_us += t;
        self.tsum2_us += t * t;
        self.tmin_us = self.tmin_us.min(us);
        self.tmax_us = self.tmax_us.max(us);
    }

    /// A probe failed with an error (iputils' `+N errors`: an ICMP error, a refused
    /// connection, an HTTP error status); `reason` is counted in [`failures`](Self::failures).
    pub fn on_error(&mut self, reason: &str) {
        self.errors += 1;
        *self.failures.entry(reason.to_string()).or_default() += 1;
    }

    /// A probe got no answer (plain loss, e.g. `"timeout"`); counted under `reason`.
    pub fn on_loss(&mut self, reason: &str) {
        *self.failures.entry(reason.to_string()).or_default() += 1;
    }

    pub fn transmitted(&self) -> u64 {
        self.transmitted
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    /// Probes that failed with an error (not counting plain losses).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Failed or unanswered probes by reason.
    pub fn failures(&self) -> &BTreeMap<String, u64> {
        &self.failures
    }

    /// The RTTs in nanoseconds.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// iputils' loss percentage.
    pub fn loss_pct(&self) -> f64 {
        iputils_loss_pct(self.transmitted, self.received)
    }

    /// Minimum RTT in µs (0 without replies).
    pub fn min_us(&self) -> i64 {
        if self.received == 0 { 0 } else { self.tmin_us }
    }

    /// Maximum RTT in µs (0 without replies).
    pub fn max_us(&self) -> i64 {
        self.tmax_us
    }

    /// iputils' average RTT in µs (integer division; 0 without replies).
    pub fn avg_us(&self) -> i64 {
        if self.received == 0 {
            return 0;
        }
        i64::try_from(self.tsum_us / i128::from(self.received)).unwrap_or(i64::MAX)
    }

    /// iputils' mdev in µs (0 without replies).
    pub fn mdev_us(&self) -> i64 {
        if self.received == 0 {
            return 0;
        }
        let m = iputils_mdev_us(self.tsum_us, self.tsum2_us, i128::from(self.received));
        i64::try_from(m.max(0)).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(samples_us: &[i64]) -> RttStats {
        let mut s = RttStats::new();
        for &us in samples_us {
            s.on_send();
            s.on_reply_us(us);
        }
        s
    }

    #[test]
    fn llsqrt_is_iputils_newton() {
        assert_eq!(llsqrt(0), 0);
        assert_eq!(llsqrt(1), 1);
        assert_eq!(llsqrt(2), 1);
        // Newton's integer iteration oscillates for k^2 - 1 and iputils returns k.
        assert_eq!(llsqrt(3), 2);
        assert_eq!(llsqrt(4), 2);
        assert_eq!(llsqrt(8), 3);
        assert_eq!(llsqrt(15), 4);
        assert_eq!(llsqrt(16), 4);
        assert_eq!(llsqrt(17), 4);
        assert_eq!(llsqrt(99), 10);
        assert_eq!(llsqrt(1_000_000), 1000);
        assert_eq!(llsqrt(-5), -5);
    }

    #[test]
    fn mdev_avg_min_max_as_iputils() {
        // 10, 20, 30, 40 µs: tsum 100, tsum2 3000, n 4.
        // tmvar = (3000 - 10000 / 4) / 4 = (3000 - 2500) / 4 = 125; llsqrt(125) = 11.
        let s = stats(&[10, 20, 30, 40]);
        assert_eq!(s.avg_us(), 25);
        assert_eq!(s.mdev_us(), 11);
        assert_eq!(s.min_us(), 10);
        assert_eq!(s.max_us(), 40);
        assert_eq!(s.loss_pct(), 0.0);

        // 21, 34, 212 µs: tsum 267, tsum2 441 + 1156 + 44944 = 46541.
        // avg = 89 (267/3 = 89); tmvar = (46541 - 71289/3) / 3 = (46541 - 23763) / 3
        // = 22778 / 3 = 7592; llsqrt(7592) = 87 (87^2 = 7569, 88^2 = 7744).
        let s = stats(&[21, 34, 212]);
        assert_eq!(s.avg_us(), 89);
        assert_eq!(s.mdev_us(), 87);

        // One sample: no deviation.
        let s = stats(&[500]);
        assert_eq!((s.avg_us(), s.mdev_us()), (500, 0));

        // The integer steps truncate: 1, 2 µs -> avg 1, tmvar = (5 - 9/2)/2 = (5-4)/2 = 0.
        let s = stats(&[1, 2]);
        assert_eq!((s.avg_us(), s.mdev_us()), (1, 0));

        // tmvar 3 -> llsqrt rounds up to 2 (iputils' quirk): samples 0, 0, 0, 4? tsum 4,
        // tsum2 16, n 4: tmvar = (16 - 16/4)/4 = 12/4 = 3.
        let s = stats(&[0, 0, 0, 4]);
        assert_eq!(s.mdev_us(), 2);
    }

    #[test]
    fn mdev_switches_formula_past_int_max() {
        // Two samples of 1.5e9 µs: tsum = 3e9 >= INT_MAX -> tsum2/n - avg^2 = 0.
        let s = stats(&[1_500_000_000, 1_500_000_000]);
        assert_eq!(s.mdev_us(), 0);
        // 1e9 and 3e9 µs: avg 2e9, tsum2/n = (1e18 + 9e18)/2 = 5e18, var 1e18, mdev 1e9.
        assert_eq!(
            iputils_mdev_us(4_000_000_000, 10_000_000_000_000_000_000, 2),
            1_000_000_000
        );
        // Same figures with the small-sum formula agree when the division is exact.
        assert_eq!(iputils_mdev_us(100, 3000, 4), 11);
    }

    #[test]
    fn mdev_matches_float_definition_closely() {
        // sqrt(mean(x^2) - mean(x)^2) on a spread of values: within 1 µs of the float one.
        let samples: Vec<i64> = (0..1000).map(|i| 20 + (i * 37) % 200).collect();
        let s = stats(&samples);
        let n = samples.len() as f64;
        let mean = samples.iter().map(|&x| x as f64).sum::<f64>() / n;
        let mean2 = samples.iter().map(|&x| (x * x) as f64).sum::<f64>() / n;
        let exact = (mean2 - mean * mean).sqrt();
        assert!(
            (s.mdev_us() as f64 - exact).abs() <= 1.0,
            "{} vs {exact}",
            s.mdev_us()
        );
    }

    #[test]
    fn loss_as_iputils() {
        assert_eq!(iputils_loss_pct(0, 0), 0.0);
        assert_eq!(iputils_loss_pct(10, 10), 0.0);
        assert_eq!(iputils_loss_pct(10, 0), 100.0);
        assert_eq!(iputils_loss_pct(4, 3), 25.0);
        // 1/3 lost: the C float 33.333332061767578.
        assert_eq!(iputils_loss_pct(3, 2), (100.0f64 / 3.0) as f32 as f64);
        assert_eq!(iputils_loss_pct(3, 2), 33.33333206176758);

        let mut s = RttStats::new();
        for _ in 0..3 {
            s.on_send();
        }
        s.on_reply_us(40);
        s.on_error("destination unreachable");
        s.on_loss("timeout");
        assert_eq!(s.transmitted(), 3);
        assert_eq!(s.received(), 1);
        assert_eq!(s.errors(), 1);
        assert_eq!(s.loss_pct(), (200.0f64 / 3.0) as f32 as f64);
        assert_eq!(s.failures()["timeout"], 1);
        assert_eq!(s.failures()["destination unreachable"], 1);
    }

    #[test]
    fn no_replies_means_zeros() {
        let mut s = RttStats::new();
        s.on_send();
        s.on_loss("timeout");
        assert_eq!(
            (s.min_us(), s.avg_us(), s.max_us(), s.mdev_us()),
            (0, 0, 0, 0)
        );
        assert!(s.histogram().is_empty());
        assert_eq!(s.loss_pct(), 100.0);
    }

    #[test]
    fn histogram_keeps_nanoseconds() {
        let mut s = RttStats::new();
        s.on_send();
        s.on_reply(Duration::from_nanos(21_499));
        assert_eq!(s.min_us(), 21);
        assert_eq!(s.histogram().len(), 1);
        let v = s.histogram().max();
        assert!(v.abs_diff(21_499) <= 21_499 / 1000, "{v}");
    }
}
