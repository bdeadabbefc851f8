//! Open-loop pacing: waits for a request's due time with microsecond accuracy.
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

/// The share of a worker's period that it may spend waiting busily, as a divisor.
const BUSY_WAIT_DIVISOR: u32 = 10;

/// One worker's pacer. Its timer is made on the first wait, inside the runtime (closed
/// loop never makes one). A wait may be cancelled (a `select!` whose other branch won).
#[derive(Debug)]
pub(crate) struct Pacer {
    period: Duration,
    timer: Option<PreciseTimer>,
}

impl Pacer {
    /// A pacer for requests due every `period_s` seconds.
    pub(crate) fn new(period_s: f64) -> Self {
        Pacer {
            period: Duration::try_from_secs_f64(period_s).unwrap_or(Duration::MAX),
            timer: None,
        }
    }

    /// Returns once `Instant::now() >= due`.
    pub(crate) async fn wait_until(&mut self, due: Instant) {
        let max_busy_wait = self.period / BUSY_WAIT_DIVISOR;
        let timer = self
            .timer
            .get_or_insert_with(|| PreciseTimer::new().with_max_busy_wait(max_busy_wait));
        if timer.sleep_until(due).await.is_err() {
            // The timerfd could not be armed or read (never seen): the fallback, which
            // cannot fail, for the rest of the run.
            let coarse = self
                .timer
                .insert(PreciseTimer::coarse().with_max_busy_wait(max_busy_wait));
            let _ = coarse.sleep_until(due).await;
        }
    }
}
