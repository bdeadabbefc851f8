//! When the next probe goes out: the pure decision, as iputils' `pinger()` makes it.
//!
//! - Interval mode (`ping -i`): a probe goes out once `interval` has passed since the
//!   previous one went out, whether or not it was answered (probes may overlap).
//! - Flood mode (`ping -f`, preload 1): a probe goes out as soon as nothing is in flight
//!   (so on each reply), or once [`FLOOD_MIN_INTERVAL`] (10 ms) has passed since the
//!   previous one went out, whichever comes first: at least 100 probes a second, more
//!   when replies come back faster.
//!
//! The first probe always goes out at once.

use std::time::Duration;

/// iputils' `MININTERVAL`: in flood mode, the longest wait for a reply before the next
/// probe goes out anyway.
pub const FLOOD_MIN_INTERVAL: Duration = Duration::from_millis(10);

/// How probes are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// One probe every this long (send to send); `ping -i`. Default 1 s, like ping.
    Interval(Duration),
    /// `ping -f`: the next probe on each reply or every 10 ms, whichever comes first.
    Flood,
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing::Interval(Duration::from_secs(1))
    }
}

/// What the sender does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send the next probe now.
    SendNow,
    /// Wait this long (or, in flood mode, for a reply) and decide again.
    Wait(Duration),
}

/// The next step, given the time since the previous probe went out (`None` before the
/// first) and how many probes are still waiting for an answer.
pub fn next_send(pacing: Pacing, since_last_send: Option<Duration>, in_flight: usize) -> Decision {
    let Some(since) = since_last_send else {
        return Decision::SendNow;
    };
    let gap = match pacing {
        Pacing::Interval(interval) => interval,
        Pacing::Flood if in_flight == 0 => return Decision::SendNow,
        Pacing::Flood => FLOOD_MIN_INTERVAL,
    };
    if since >= gap {
        Decision::SendNow
    } else {
        Decision::Wait(gap - since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn first_probe_goes_at_once() {
        assert_eq!(next_send(Pacing::Flood, None, 0), Decision::SendNow);
        assert_eq!(next_send(Pacing::default(), None, 3), Decision::SendNow);
    }

    #[test]
    fn flood_sends_on_reply_or_after_10ms() {
        // Answered (nothing in flight): next one right away, however soon.
        assert_eq!(
            next_send(Pacing::Flood, Some(Duration::from_micros(30)), 0),
            Decision::SendNow
        );
        // Unanswered: wait out the rest of the 10 ms.
        assert_eq!(
            next_send(Pacing::Flood, Some(3 * MS), 1),
            Decision::Wait(7 * MS)
        );
        assert_eq!(
            next_send(Pacing::Flood, Some(Duration::ZERO), 1),
            Decision::Wait(10 * MS)
        );
        // 10 ms without a reply: send anyway (lost packets do not stall a flood).
        assert_eq!(
            next_send(Pacing::Flood, Some(10 * MS), 1),
            Decision::SendNow
        );
        assert_eq!(
            next_send(Pacing::Flood, Some(25 * MS), 5),
            Decision::SendNow
        );
    }

    #[test]
    fn interval_ignores_replies() {
        let p = Pacing::Interval(20 * MS);
        assert_eq!(next_send(p, Some(5 * MS), 0), Decision::Wait(15 * MS));
        assert_eq!(next_send(p, Some(5 * MS), 1), Decision::Wait(15 * MS));
        assert_eq!(next_send(p, Some(20 * MS), 1), Decision::SendNow);
        assert_eq!(next_send(p, Some(31 * MS), 0), Decision::SendNow);
        // A zero interval is back to back.
        assert_eq!(
            next_send(Pacing::Interval(Duration::ZERO), Some(Duration::ZERO), 0),
            Decision::SendNow
        );
    }

    #[test]
    fn default_is_one_second() {
        assert_eq!(Pacing::default(), Pacing::Interval(Duration::from_secs(1)));
    }
}
