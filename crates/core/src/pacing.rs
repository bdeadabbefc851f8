//! Open-loop pacing: when each request of a worker is due ([`Schedule`], one for both
//! engines), and a wait for that due time with microsecond accuracy ([`Pacer`]).
//!
//! Open-loop latency is measured from the due time, so a request that leaves late is
//! charged its lateness. tokio's `sleep_until` rounds up to the next millisecond (and the
//! runtime's park rounds up again), which put 0.6 to 1.5 ms on the median latency into
//! the `null` target; [`Pacer`] waits on a [`PreciseTimer`] instead: a timerfd armed a
//! little early (by the learnt median wake-up lateness, typically 30 to 90 us), then a
//! short yielding wait. On a 2-vCPU virtual machine the median request then leaves about
//! 10 us after its due time and the 99th percentile within about 0.1 ms.
//!
//! The yielding wait costs CPU, so it is capped at a tenth of the worker's period (about a
//! fifth of a core per worker at most). With periods of a millisecond or more the cap does
//! not bind (at 1,000 requests per second per worker the waiting costs about 2% of a core
//! per worker more than tokio's timer). Below about 0.5 ms it does: the timer is armed
//! later than the lateness calls for, requests leave up to the wake-up lateness late (a
//! median of 20 to 40 us), several at once when the period is shorter than a wake-up, and
//! the wake-ups themselves cost CPU (about 25% of a core per worker at a 0.1 ms period, 60%
//! at 20 us, where tokio's timer, waking once per millisecond, cost 4 to 6%).

use std::time::{Duration, Instant};

use tsload_timer::PreciseTimer;

/// When a worker's requests are due: at once in closed loop; in open loop request `seq`
/// at `t0 + period * (seq + offset)`, the offset being the worker's share of the period,
/// so that the workers' requests arrive evenly rather than in bursts of `workers`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Schedule {
    t0: Instant,
    /// Seconds between two of this worker's requests; `None` in closed loop.
    period: Option<f64>,
    /// The worker's share of the period: `worker / workers`.
    offset: f64,
}

/// When one request is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// At once (closed loop).
    Now,
    /// At this instant (open loop).
    At(Instant),
    /// Never: later than an `Instant` can hold (an absurdly low rate).
    Never,
}

impl Due {
    /// Whether the request is due at or after `deadline` (never counts as after it).
    pub(crate) fn is_at_or_after(self, deadline: Instant) -> bool {
        match self {
            Due::Now => false,
            Due::At(due) => due >= deadline,
            Due::Never => true,
        }
    }
}

impl Schedule {
    /// The schedule of worker `worker` of `workers` for a run that starts at `t0`, with
    /// `period` seconds between two of its requests (`None`: closed loop).
    pub(crate) fn new(t0: Instant, period: Option<f64>, worker: usize, workers: usize) -> Self {
        Schedule {
            t0,
            period,
            offset: worker as f64 / workers.max(1) as f64,
        }
    }

    /// When request `seq` (counted from 0) is due.
    pub(crate) fn due(&self, seq: u64) -> Due {
        let Some(period) = self.period else {
            return Due::Now;
        };
        match Duration::try_from_secs_f64(period * (seq as f64 + self.offset))
            .ok()
            .and_then(|d| self.t0.checked_add(d))
        {
            Some(due) => Due::At(due),
            None => Due::Never,
        }
    }

    /// Open loop: how many requests fall due before `deadline` beyond the `sent` first
    /// ones (the load offered but never sent); 0 in closed loop.
    pub(crate) fn unsent_before(&self, deadline: Instant, sent: u64) -> u64 {
        match self.period {
            None => 0,
            Some(period) => unsent_before(
                deadline.saturating_duration_since(self.t0),
                period,
                self.offset,
                sent,
            ),
        }
    }
}

/// Open loop: how many of a worker's requests fall due in the first `window` of the run
/// (request `i` is due at `period * (i + offset)` seconds) beyond the `sent` it sent.
pub(crate) fn unsent_before(window: Duration, period: f64, offset: f64, sent: u64) -> u64 {
    let due = (window.as_secs_f64() / period - offset).ceil();
    let due = if due.is_finite() && due > 0.0 {
        due.min(u64::MAX as f64) as u64
    } else {
        0
    };
    due.saturating_sub(sent)
}

/// The share of a worker's period that it may spend waiting busily, as a divisor.
const BUSY_WAIT_DIVISOR: u32 = 10;

/// One worker's pacer. Its timer is made on the first wait, inside the runtime (closed
/// loop never makes one). A wait may be cancelled (a `select!` whose other branch won).
#[derive(Debug)]
pub(crate) struct Pacer {
    period: Duration,
    timer: Option<PreciseTimer>,
    /// Whether the runtime has tokio's time driver, which the coarse fallback needs.
    time_driver: bool,
}

impl Pacer {
    /// A pacer for requests due every `period_s` seconds, on a runtime with tokio's time
    /// driver (`time_driver`) or without.
    pub(crate) fn new(period_s: f64, time_driver: bool) -> Self {
        Pacer {
            period: Duration::try_from_secs_f64(period_s).unwrap_or(Duration::MAX),
            timer: None,
            time_driver,
        }
    }

    /// The timer when no timerfd can be had: tokio's, or yielding where the runtime has no
    /// time driver.
    fn fallback(&self) -> PreciseTimer {
        if self.time_driver {
            PreciseTimer::coarse()
        } else {
            PreciseTimer::spinning()
        }
    }

    /// Returns once `Instant::now() >= due`.
    pub(crate) async fn wait_until(&mut self, due: Instant) {
        let max_busy_wait = self.period / BUSY_WAIT_DIVISOR;
        let timer = match self.timer.take() {
            Some(timer) => timer,
            None => PreciseTimer::try_new()
                .unwrap_or_else(|_| self.fallback())
                .with_max_busy_wait(max_busy_wait),
        };
        let timer = self.timer.insert(timer);
        if timer.sleep_until(due).await.is_err() {
            // The timerfd could not be armed or read (never seen): the fallback, which
            // cannot fail, for the rest of the run.
            let fallback = self.fallback().with_max_busy_wait(max_busy_wait);
            let _ = self.timer.insert(fallback).sleep_until(due).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_due_at_the_workers_share_of_each_period() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Half a second between one worker's requests, 4 workers: staggered by 125 ms.
        let schedule = |worker| Schedule::new(t0, Some(0.5), worker, 4);
        assert_eq!(schedule(0).due(0), Due::At(t0));
        assert_eq!(schedule(1).due(0), Due::At(t0 + ms(125)));
        assert_eq!(schedule(1).due(2), Due::At(t0 + ms(1125)));
        assert_eq!(schedule(3).due(1), Due::At(t0 + ms(875)));
        // No workers counts as one.
        assert_eq!(
            Schedule::new(t0, Some(0.5), 0, 0).due(3),
            Due::At(t0 + ms(1500))
        );
        // Closed loop: always at once.
        assert_eq!(Schedule::new(t0, None, 1, 4).due(7), Due::Now);
    }

    #[test]
    fn a_due_time_past_what_an_instant_holds_is_never() {
        let t0 = Instant::now();
        // Past what a Duration holds.
        assert_eq!(Schedule::new(t0, Some(1e30), 0, 1).due(1), Due::Never);
        assert_eq!(
            Schedule::new(t0, Some(f64::INFINITY), 0, 1).due(0),
            Due::Never
        );
        // A Duration, but past what an Instant holds.
        assert_eq!(Schedule::new(t0, Some(1.5e19), 0, 1).due(1), Due::Never);
        // Request 0 of worker 0 is due at t0 whatever the period.
        assert_eq!(Schedule::new(t0, Some(1e30), 0, 1).due(0), Due::At(t0));
    }

    #[test]
    fn due_is_at_or_after_a_deadline_when_it_is_not_before_it() {
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(1);
        assert!(!Due::Now.is_at_or_after(deadline));
        assert!(!Due::At(t0).is_at_or_after(deadline));
        assert!(Due::At(deadline).is_at_or_after(deadline));
        assert!(Due::Never.is_at_or_after(deadline));
    }

    #[test]
    fn unsent_requests_are_those_due_before_the_deadline_beyond_those_sent() {
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(2);
        // 10 requests/s for 2 s, worker 0: requests 0..20 are due (the 20th at 2 s is not).
        let first = Schedule::new(t0, Some(0.1), 0, 2);
        assert_eq!(first.unsent_before(deadline, 20), 0);
        assert_eq!(first.unsent_before(deadline, 12), 8);
        assert_eq!(first.unsent_before(deadline, 25), 0, "never negative");
        // Worker 1 of 2: due at 0.05, 0.15, ..., 1.95: 20 of them.
        let second = Schedule::new(t0, Some(0.1), 1, 2);
        assert_eq!(second.unsent_before(deadline, 0), 20);
        // A deadline at or before the start: nothing was due.
        assert_eq!(second.unsent_before(t0, 0), 0);
        // Closed loop: nothing is ever unsent.
        assert_eq!(Schedule::new(t0, None, 0, 1).unsent_before(deadline, 0), 0);
    }
}
