//! The idle timeout (a connection that moved no byte either way for a while is closed)
//! and the upstream connect timeout.
//!
//! Each connection has one [`Activity`]: its lanes note when they last read or wrote a
//! byte, and delay lines until when they hold bytes waiting for their release (bytes on
//! their way are not idle, however long the delay). [`Activity::idle`] sleeps until the
//! later of the two plus the timeout and checks again, so a busy connection costs a
//! clock read per chunk and one timer wake-up per timeout period, not a timer per chunk.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When a connection last moved a byte, and until when its delay lines hold bytes.
#[derive(Debug)]
pub(crate) struct Activity {
    base: Instant,
    /// Nanoseconds from `base` to the last read or write of a byte.
    last: AtomicU64,
    /// Nanoseconds from `base` to the release of the last queued chunk.
    until: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Activity {
            base: Instant::now(),
            last: AtomicU64::new(0),
            until: AtomicU64::new(0),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }

    /// Bytes were read or written now.
    pub(crate) fn touch(&self) {
        self.touch_at(Instant::now());
    }

    /// Bytes were read or written at `now`.
    pub(crate) fn touch_at(&self, now: Instant) {
        self.last.store(self.nanos(now), Ordering::Relaxed);
    }

    /// A delay line holds bytes to be released at `release`.
    pub(crate) fn hold_until(&self, release: Instant) {
        self.until.fetch_max(self.nanos(release), Ordering::Relaxed);
    }

    /// When the connection is idle for `timeout` if nothing moves any more.
    fn deadline(&self, timeout: Duration) -> Instant {
        let last = self
            .last
            .load(Ordering::Relaxed)
            .max(self.until.load(Ordering::Relaxed));
        self.base + Duration::from_nanos(last) + timeout
    }

    /// Completes once no byte has moved for `timeout` (and none waits in a delay line).
    pub(crate) async fn idle(&self, timeout: Duration) {
        loop {
            let deadline = self.deadline(timeout);
            if Instant::now() >= deadline {
                return;
            }
            // tokio's timer rounds up to the millisecond: never early.
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

/// `future`'s output, or `None` once `limit` has passed first (`None` limit: no limit).
pub(crate) async fn within<F: Future>(limit: Option<Duration>, future: F) -> Option<F::Output> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, future).await.ok(),
        None => Some(future.await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn within_gives_up_on_a_future_that_never_completes() {
        let t0 = Instant::now();
        let limit = Duration::from_millis(50);
        let r = within(Some(limit), std::future::pending::<()>()).await;
        assert_eq!(r, None);
        let waited = t0.elapsed();
        assert!(waited >= limit, "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        assert_eq!(within(Some(limit), async { 5 }).await, Some(5));
        assert_eq!(within(None, async { 6 }).await, Some(6));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn idle_counts_from_the_last_byte_and_the_last_release() {
        let activity = Activity::new();
        let timeout = Duration::from_millis(50);
        let t0 = Instant::now();
        activity.idle(timeout).await;
        let first = t0.elapsed();
        assert!(first >= timeout, "{first:?}");

        // A touch moves the deadline.
        let t1 = Instant::now();
        activity.touch();
        activity.idle(timeout).await;
        assert!(t1.elapsed() >= timeout, "{:?}", t1.elapsed());

        // Bytes held until 200 ms from now keep the connection busy until then.
        let t2 = Instant::now();
        activity.hold_until(t2 + Duration::from_millis(200));
        activity.touch();
        activity.idle(timeout).await;
        assert!(
            t2.elapsed() >= Duration::from_millis(250),
            "{:?}",
            t2.elapsed()
        );
    }
}
