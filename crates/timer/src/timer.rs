//! Precise sleeps: a timerfd through tokio's reactor, armed early, then a short yield.
//!
//! tokio's timer wheel has a 1 ms resolution and rounds up, so `sleep_until` wakes up to
//! a millisecond late: far too coarse for a 0.1 ms delay, or for sending requests at their
//! due times. On Linux each [`PreciseTimer`] owns a timerfd on CLOCK_MONOTONIC (the clock
//! of [`Instant`]): a kernel hrtimer, not subject to timer slack, whose expiry wakes the
//! task through tokio's reactor like any socket. A wake-up still reaches the task some
//! tens of microseconds after the expiry (30 to 90 us after 1 ms, up to 250 us after
//! 10 ms on a 2-vCPU virtual machine whose idle vCPU must be woken), so timers are armed
//! early by the learnt median of that lateness and the task yields (a busy wait that lets
//! other tasks run) for the rest. The median, not a higher percentile: half of the
//! wake-ups are a little late, but the busy wait stays short. Measured on such a machine
//! in the delay proxy with 1 ms of delay, the busy wait raises the proxy's CPU time from
//! about 27% to 35-43% of a core at 10,000 chunks per second, and from 4% to 6% at 1,000;
//! without it the round trip grows by 30 to 60 us more at 0.1 and 1 ms and by about
//! 150 us more at 10 ms.
//!
//! The busy wait is at most the early margin (at most 250 us, typically 30 to 90 us) plus
//! 10 us per sleep. A task whose deadlines are closer together than that would spend its
//! whole time in it, a core for evenly spaced wake-ups (and once the margin exceeds the
//! gap, no timerfd is armed, so the margin is never learnt down again);
//! [`PreciseTimer::with_max_busy_wait`] caps it: the timer is then armed later and wakes
//! up to the wake-up lateness late, but the task sleeps.
//!
//! Elsewhere, or where no timerfd can be made, the timer sleeps on tokio's timer until a
//! millisecond and a half before the deadline and yields until it is reached.

use std::io;
use std::time::{Duration, Instant};

use crate::median::RunningMedian;

/// Deadlines closer than this (after the early margin) are reached by yielding instead of
/// arming a timer: a wake-up through the reactor costs about as much.
const SPIN_BELOW: Duration = Duration::from_micros(10);
/// The last stretch of a wait spent spinning without yielding to other tasks.
const TIGHT_SPIN: Duration = Duration::from_micros(5);
/// How long before the deadline the fallback stops sleeping on tokio's timer.
const COARSE_MARGIN: Duration = Duration::from_micros(1500);
/// The most a timerfd is armed ahead of its deadline.
const MAX_EARLY: Duration = Duration::from_micros(250);

/// How long after its expiry a timerfd wake-up reaches the task: the running median of
/// recent wake-ups, tracked by every timer of the process (it is the machine's and the
/// runtime's, not a connection's or a worker's). Timers are armed that much early and
/// yield the rest.
static EARLY: RunningMedian = RunningMedian::new(Duration::from_micros(1), MAX_EARLY);

/// A reusable one-shot timer with microsecond accuracy.
///
/// A sleep may be cancelled (its future dropped, e.g. by a `select!` whose other branch
/// won): the timerfd stays armed, and the next sleep arms it again.
#[derive(Debug)]
pub struct PreciseTimer {
    kind: Kind,
    /// Caps the early margin and the deadlines reached by yielding alone.
    max_busy_wait: Duration,
}

#[derive(Debug)]
enum Kind {
    #[cfg(target_os = "linux")]
    TimerFd(tokio::io::unix::AsyncFd<linux::TimerFd>),
    Coarse,
    /// Yields until the deadline: for runtimes without tokio's time driver where no
    /// timerfd can be made.
    Spin,
}

impl PreciseTimer {
    /// A timerfd-backed timer where possible, the fallback otherwise. Must be called
    /// within a tokio runtime whose I/O driver is enabled (`enable_io` or `enable_all`),
    /// like any tokio socket.
    pub fn new() -> Self {
        #[cfg(target_os = "linux")]
        if let Ok(fd) = linux::TimerFd::new().and_then(linux::register) {
            return PreciseTimer::of(Kind::TimerFd(fd));
        }
        PreciseTimer::of(Kind::Coarse)
    }

    /// A timerfd-backed timer, or the error that kept one from being made (always an
    /// error elsewhere than on Linux). For runtimes without tokio's time driver, where
    /// [`PreciseTimer::new`]'s fallback cannot run.
    pub fn try_new() -> io::Result<Self> {
        #[cfg(target_os = "linux")]
        {
            linux::register(linux::TimerFd::new()?).map(|fd| PreciseTimer::of(Kind::TimerFd(fd)))
        }
        #[cfg(not(target_os = "linux"))]
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no timerfd on this platform",
        ))
    }

    /// A timer that yields to the runtime until each deadline (a busy wait that lets other
    /// tasks run): the fallback where neither a timerfd nor tokio's timer is at hand.
    pub fn spinning() -> Self {
        PreciseTimer::of(Kind::Spin)
    }

    fn of(kind: Kind) -> Self {
        PreciseTimer {
            kind,
            max_busy_wait: Duration::MAX,
        }
    }

    /// The fallback, whatever the platform: tokio's timer, then yielding for the last
    /// 1.5 ms (for tests and measurements, and after a timerfd failed).
    pub fn coarse() -> Self {
        PreciseTimer::of(Kind::Coarse)
    }

    /// Caps the busy wait before each deadline: the timer is armed at most `max` early
    /// (less than the learnt wake-up lateness when that is larger, so a wake-up may then
    /// come late by the difference), and only deadlines within `max` are reached by
    /// yielding alone. A sleep then waits busily for at most about twice `max`. Without a
    /// cap (the default) that is up to 260 us per sleep.
    pub fn with_max_busy_wait(mut self, max: Duration) -> Self {
        self.max_busy_wait = max;
        self
    }

    /// Whether this timer sleeps on a timerfd (not the fallback).
    pub fn is_precise(&self) -> bool {
        !matches!(self.kind, Kind::Coarse | Kind::Spin)
    }

    /// Returns once `Instant::now() >= deadline`. Errors only if the timerfd cannot be
    /// armed or read (the fallback never fails).
    pub async fn sleep_until(&mut self, deadline: Instant) -> io::Result<()> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            match &self.kind {
                #[cfg(target_os = "linux")]
                Kind::TimerFd(fd) => {
                    let early = EARLY.get().min(self.max_busy_wait);
                    let target = deadline - early;
                    let spin_below = SPIN_BELOW.min(self.max_busy_wait);
                    let Some(left) = target
                        .checked_duration_since(now)
                        .filter(|&l| l > spin_below)
                    else {
                        spin_until(deadline).await;
                        return Ok(());
                    };
                    fd.get_ref().arm(left)?;
                    loop {
                        let mut ready = fd.readable().await?;
                        if let Ok(expired) = ready.try_io(|fd| fd.get_ref().consume()) {
                            expired?;
                            break;
                        }
                    }
                    let woke = Instant::now();
                    // Earlier than the target is a stale expiry (of a sleep that was
                    // cancelled): arm again.
                    if woke >= target {
                        EARLY.learn(woke - target);
                        spin_until(deadline).await;
                        return Ok(());
                    }
                }
                Kind::Spin => {
                    spin_until(deadline).await;
                    return Ok(());
                }
                Kind::Coarse => {
                    let margin = COARSE_MARGIN.min(self.max_busy_wait);
                    if let Some(coarse) = deadline.checked_sub(margin).filter(|&c| c > now) {
                        tokio::time::sleep_until(coarse.into()).await;
                    }
                    spin_until(deadline).await;
                    return Ok(());
                }
            }
        }
    }
}

impl Default for PreciseTimer {
    fn default() -> Self {
        Self::new()
    }
}

/// Yields to the runtime until the deadline is near, then spins without yielding for the
/// last few microseconds (a round through the scheduler can take that long).
async fn spin_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        if deadline - now <= TIGHT_SPIN {
            while Instant::now() < deadline {
                std::hint::spin_loop();
            }
            return;
        }
        tokio::task::yield_now().await;
    }
}

#[cfg(target_os = "linux")]
pub(crate) mod linux {
    //! A timerfd that tokio's `AsyncFd` can watch.

    use std::io;
    use std::os::fd::{AsFd, AsRawFd, RawFd};
    use std::time::Duration;

    use nix::sys::time::TimeSpec;
    use nix::sys::timerfd::{self, ClockId, Expiration, TimerFlags, TimerSetTimeFlags};
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;

    #[derive(Debug)]
    pub(crate) struct TimerFd(timerfd::TimerFd);

    impl AsRawFd for TimerFd {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_fd().as_raw_fd()
        }
    }

    impl TimerFd {
        pub(crate) fn new() -> io::Result<Self> {
            let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
            Ok(TimerFd(timerfd::TimerFd::new(
                ClockId::CLOCK_MONOTONIC,
                flags,
            )?))
        }

        /// Arms the timer to expire `after` from now (`after` must not be zero: a zero
        /// value disarms it). Re-arming resets the expiry count.
        pub(crate) fn arm(&self, after: Duration) -> io::Result<()> {
            let spec = Expiration::OneShot(TimeSpec::from_duration(after));
            Ok(self.0.set(spec, TimerSetTimeFlags::empty())?)
        }

        /// Reads the expiry count; `WouldBlock` if the timer has not expired.
        pub(crate) fn consume(&self) -> io::Result<()> {
            Ok(self.0.wait()?)
        }
    }

    /// Registers the timerfd with tokio's reactor.
    ///
    /// `AsyncFd::new` is deprecated since tokio 1.52 in favour of the `unsafe`
    /// `AsyncFd::register`, whose contract is that the descriptor stays open and the same
    /// for the `AsyncFd`'s whole life. That holds here by construction: [`TimerFd`] owns its
    /// descriptor (an `OwnedFd`), never replaces it, and the `AsyncFd` owns the `TimerFd`.
    /// The deprecated safe form is used because this workspace denies `unsafe`.
    #[allow(deprecated)]
    pub(crate) fn register(fd: TimerFd) -> io::Result<AsyncFd<TimerFd>> {
        AsyncFd::with_interest(fd, Interest::READABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Median lateness of `n` sleeps of `d`.
    async fn lateness(mut timer: PreciseTimer, d: Duration, n: usize) -> Duration {
        let mut late = Vec::with_capacity(n);
        for _ in 0..n {
            let deadline = Instant::now() + d;
            timer.sleep_until(deadline).await.unwrap();
            let now = Instant::now();
            assert!(now >= deadline, "woke early");
            late.push(now - deadline);
        }
        late.sort();
        late[n / 2]
    }

    #[tokio::test(flavor = "current_thread")]
    async fn sleeps_are_never_early_and_rarely_late() {
        for d in [
            Duration::from_micros(10),
            Duration::from_micros(100),
            Duration::from_millis(2),
        ] {
            let late = lateness(PreciseTimer::new(), d, 50).await;
            // Generous: a loaded machine runs tests in parallel.
            assert!(
                late < Duration::from_micros(500),
                "{d:?}: median {late:?} late"
            );
            let late = lateness(PreciseTimer::coarse(), d, 20).await;
            assert!(
                late < Duration::from_micros(500),
                "coarse {d:?}: median {late:?} late"
            );
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_capped_busy_wait_is_never_early_and_rarely_late() {
        for max in [Duration::ZERO, Duration::from_micros(5)] {
            for d in [
                Duration::from_micros(1),
                Duration::from_micros(100),
                Duration::from_millis(2),
            ] {
                let timer = PreciseTimer::new().with_max_busy_wait(max);
                let late = lateness(timer, d, 50).await;
                // Late by the wake-up lateness instead of yielding through it.
                assert!(
                    late < Duration::from_micros(500),
                    "cap {max:?}, {d:?}: median {late:?} late"
                );
            }
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn linux_timers_use_a_timerfd() {
        assert_eq!(PreciseTimer::new().is_precise(), cfg!(target_os = "linux"));
        assert!(!PreciseTimer::coarse().is_precise());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn past_deadlines_return_at_once() {
        let mut timer = PreciseTimer::new();
        let past = Instant::now();
        timer.sleep_until(past).await.unwrap();
        timer
            .sleep_until(past - Duration::from_millis(1))
            .await
            .unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_cancelled_sleep_does_not_cut_the_next_short() {
        let mut timer = PreciseTimer::new();
        // Arm for 1 ms, then give up after 0.2 ms: the timerfd stays armed and expires.
        let _ = tokio::time::timeout(
            Duration::from_micros(200),
            timer.sleep_until(Instant::now() + Duration::from_millis(1)),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(3)).await;
        let deadline = Instant::now() + Duration::from_millis(5);
        timer.sleep_until(deadline).await.unwrap();
        assert!(Instant::now() >= deadline);
    }
}
