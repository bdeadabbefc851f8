//! tsload-timer: sleeps with microsecond accuracy on tokio.
//!
//! tokio's timer wheel has a 1 ms resolution and rounds up, so `sleep_until` wakes up to a
//! millisecond late. [`PreciseTimer`] wakes within tens of microseconds of its deadline (a
//! timerfd on Linux, armed a little early, then a short yielding wait), for the delay
//! proxy's delay lines and the engines' open-loop pacing. [`RunningMedian`] is the
//! process-wide estimate it learns that margin with (the proxy also uses it for the cost
//! of a hop). [`ReactorTimer`] sleeps and times out without tokio's time driver, for the
//! query engine's per-worker runtimes.

mod median;
mod reactor;
mod timer;

pub use median::RunningMedian;
pub use reactor::{NEEDS_TIME_DRIVER, ReactorTimer, timeout};
pub use timer::PreciseTimer;
