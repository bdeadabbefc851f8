//! Sleeps and timeouts for runtimes built without tokio's time driver: a timerfd watched
//! by tokio's reactor, like a socket.
//!
//! A current-thread runtime with the time driver pays for it on every park, timer or not:
//! a lock, a look at the wheel and a clock read before and after each wait (about 480
//! instructions per wait, measured with callgrind on an OLTP worker that waits once per
//! point select, about 10% of its work). The query engine's per-worker runtimes are built
//! with I/O only (see [`NEEDS_TIME_DRIVER`]), and whatever runs on them waits with a
//! [`ReactorTimer`] instead of `tokio::time`: failure back-off, request and connect
//! timeouts. Unlike [`crate::PreciseTimer`] it neither arms early nor waits busily: these
//! waits are for seconds, not microseconds.
//!
//! Elsewhere than on Linux the timer is tokio's, and the runtime needs its time driver.

use std::future::Future;
use std::io;
use std::time::Duration;

/// Whether a runtime that runs [`ReactorTimer`]s needs tokio's time driver (`enable_time`):
/// false on Linux, where they are timerfds that the I/O driver watches.
pub const NEEDS_TIME_DRIVER: bool = !cfg!(target_os = "linux");

/// A reusable timer for sleeps and timeouts, one wait at a time.
#[derive(Debug)]
pub struct ReactorTimer {
    #[cfg(target_os = "linux")]
    fd: tokio::io::unix::AsyncFd<crate::timer::linux::TimerFd>,
}

impl ReactorTimer {
    /// A new timer. Must be called within a tokio runtime whose I/O driver is enabled
    /// (its time driver too where [`NEEDS_TIME_DRIVER`]). Errors where no timerfd can be
    /// made (out of file descriptors).
    pub fn new() -> io::Result<Self> {
        #[cfg(target_os = "linux")]
        {
            use crate::timer::linux;
            Ok(ReactorTimer {
                fd: linux::register(linux::TimerFd::new()?)?,
            })
        }
        #[cfg(not(target_os = "linux"))]
        Ok(ReactorTimer {})
    }

    /// Returns after `d` (at once for zero).
    pub async fn sleep(&mut self, d: Duration) -> io::Result<()> {
        self.timeout(d, std::future::pending::<()>()).await?;
        Ok(())
    }

    /// `fut`'s output if it completes within `limit`, `None` if the time ran out first (and
    /// `fut` is dropped). `fut` is polled first, so a future that is ready at once is never
    /// timed out, even with a zero `limit`.
    pub async fn timeout<F: Future>(
        &mut self,
        limit: Duration,
        fut: F,
    ) -> io::Result<Option<F::Output>> {
        #[cfg(target_os = "linux")]
        {
            use std::pin::pin;
            use std::task::Poll;

            let mut fut = pin!(fut);
            // A zero duration disarms a timerfd: the shortest wait instead.
            self.fd.get_ref().arm(limit.max(Duration::from_nanos(1)))?;
            std::future::poll_fn(|cx| {
                if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                    return Poll::Ready(Ok(Some(out)));
                }
                loop {
                    let mut ready = match self.fd.poll_read_ready(cx) {
                        Poll::Ready(Ok(ready)) => ready,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => return Poll::Pending,
                    };
                    // Readiness left from an earlier wait's expiry reads as WouldBlock (arming
                    // resets the count) and is cleared by `try_io`: poll again.
                    match ready.try_io(|fd| fd.get_ref().consume()) {
                        Ok(Ok(())) => return Poll::Ready(Ok(None)),
                        Ok(Err(e)) => return Poll::Ready(Err(e)),
                        Err(_would_block) => continue,
                    }
                }
            })
            .await
        }
        #[cfg(not(target_os = "linux"))]
        Ok(tokio::time::timeout(limit, fut).await.ok())
    }
}

/// `fut`'s output if it completes within `limit`, `None` otherwise, on a timer made for
/// this one wait (a connect, not a per-request path: see [`ReactorTimer`] for that).
pub async fn timeout<F: Future>(limit: Duration, fut: F) -> io::Result<Option<F::Output>> {
    ReactorTimer::new()?.timeout(limit, fut).await
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    /// A runtime as the query engine builds its workers' on Linux: no time driver.
    fn runtime() -> tokio::runtime::Runtime {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        builder.enable_io();
        if NEEDS_TIME_DRIVER {
            builder.enable_time();
        }
        builder.build().unwrap()
    }

    #[test]
    fn sleeps_last_their_duration_without_a_time_driver() {
        runtime().block_on(async {
            let mut timer = ReactorTimer::new().unwrap();
            for ms in [0, 1, 20, 5] {
                let d = Duration::from_millis(ms);
                let t0 = Instant::now();
                timer.sleep(d).await.unwrap();
                let took = t0.elapsed();
                assert!(took >= d, "{d:?}: woke after {took:?}");
                // Generous: a loaded machine runs tests in parallel.
                assert!(took < d + Duration::from_millis(500), "{d:?}: {took:?}");
            }
        });
    }

    #[test]
    fn a_timeout_gives_the_output_in_time_and_none_after() {
        runtime().block_on(async {
            let mut timer = ReactorTimer::new().unwrap();
            // Ready at once: never timed out, even with no time at all.
            assert_eq!(
                timer.timeout(Duration::ZERO, async { 7 }).await.unwrap(),
                Some(7)
            );
            // Completes (on another timer) before the limit.
            let inner = async {
                let mut other = ReactorTimer::new().unwrap();
                other.sleep(Duration::from_millis(5)).await.unwrap();
                8
            };
            assert_eq!(
                timer.timeout(Duration::from_secs(5), inner).await.unwrap(),
                Some(8)
            );
            // Never completes: None once the limit has passed, not before.
            let t0 = Instant::now();
            let limit = Duration::from_millis(30);
            let out = timer
                .timeout(limit, std::future::pending::<u8>())
                .await
                .unwrap();
            assert_eq!(out, None);
            assert!(t0.elapsed() >= limit, "timed out after {:?}", t0.elapsed());
        });
    }

    #[test]
    fn an_expiry_left_from_a_dropped_wait_does_not_cut_the_next_short() {
        runtime().block_on(async {
            let mut timer = ReactorTimer::new().unwrap();
            // Armed for 1 ms and polled once, then dropped; the timerfd expires while
            // another timer waits 3 ms, and its readiness is left set.
            {
                let dropped = timer.sleep(Duration::from_millis(1));
                let mut dropped = std::pin::pin!(dropped);
                std::future::poll_fn(|cx| {
                    assert!(dropped.as_mut().poll(cx).is_pending());
                    std::task::Poll::Ready(())
                })
                .await;
            }
            let mut other = ReactorTimer::new().unwrap();
            other.sleep(Duration::from_millis(3)).await.unwrap();
            let d = Duration::from_millis(20);
            let t0 = Instant::now();
            timer.sleep(d).await.unwrap();
            assert!(t0.elapsed() >= d, "woke after {:?}", t0.elapsed());
        });
    }
}
