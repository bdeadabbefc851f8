//! The driver of one-at-a-time probes (TCP connect, application pings): waits for each
//! probe's turn (one every `interval`, send to send, as ping's interval mode; back to
//! back when the interval is zero or a probe took longer), bounds each by a timeout and
//! records the outcome.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::ProbeError;
use crate::report::{ProbeKind, ProbeReport};
use crate::schedule::{Decision, Pacing, next_send};
use crate::stats::RttStats;

pub(crate) struct Sequential {
    interval: Duration,
    timeout: Duration,
    stats: RttStats,
    first_send: Option<Instant>,
    last_send: Option<Instant>,
}

impl Sequential {
    pub(crate) fn new(interval: Duration, timeout: Duration) -> Self {
        Sequential {
            interval,
            timeout,
            stats: RttStats::new(),
            first_send: None,
            last_send: None,
        }
    }

    /// Waits for the next probe's turn.
    pub(crate) async fn wait_turn(&self) {
        loop {
            let now = Instant::now();
            let since = self.last_send.map(|t| now.saturating_duration_since(t));
            match next_send(Pacing::Interval(self.interval), since, 0) {
                Decision::SendNow => return,
                Decision::Wait(d) => tokio::time::sleep(d).await,
            }
        }
    }

    /// Times one probe (`probe` must do all its work when polled: nothing before) and
    /// records it: a reply, an error, or a loss when it times out. What a successful
    /// probe returns is handed back after the clock stopped (to be dropped untimed).
    pub(crate) async fn probe<T, F>(&mut self, probe: F) -> Option<T>
    where
        F: Future<Output = Result<T, ProbeError>>,
    {
        let start = Instant::now();
        self.stats.on_send();
        self.first_send.get_or_insert(start);
        self.last_send = Some(start);
        let outcome = tokio::time::timeout(self.timeout, probe).await;
        let rtt = start.elapsed();
        match outcome {
            Ok(Ok(value)) => {
                self.stats.on_reply(rtt);
                return Some(value);
            }
            Ok(Err(e)) if e.is_timeout() => self.stats.on_loss("timeout"),
            Ok(Err(e)) => self.stats.on_error(&e.reason()),
            Err(_) => self.stats.on_loss("timeout"),
        }
        None
    }

    pub(crate) fn report(&self, kind: ProbeKind, target: impl Into<String>) -> ProbeReport {
        let elapsed = match (self.first_send, self.last_send) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        };
        ProbeReport::from_stats(kind, target, &self.stats, elapsed)
    }
}

/// Checks what every sequential probe needs.
pub(crate) fn validate(count: u64, timeout: Duration) -> Result<(), ProbeError> {
    if count == 0 {
        return Err(ProbeError::InvalidOptions(
            "count must be at least 1".into(),
        ));
    }
    if timeout.is_zero() {
        return Err(ProbeError::InvalidOptions(
            "timeout must be positive".into(),
        ));
    }
    Ok(())
}
