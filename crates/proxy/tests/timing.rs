//! Timing of the proxy: added round-trip time against the configured delay, the rate
//! limit, and many connections at once. The tests run one at a time (they measure time on
//! a small machine) and print what they measured.

mod common;

use std::time::Duration;

use common::*;
use tsload_proxy::Direction;

const ROUNDS: usize = 200;
const SIZE: usize = 64;

/// Median added RTT for `delay` and `direction`, against the same ping-pong without the
/// proxy measured just before.
fn added_rtt(rt: &tokio::runtime::Runtime, delay: Duration, direction: Direction) -> (Duration, Duration) {
    let server = echo_server(SIZE);
    let base = median(ping_pong(server, ROUNDS, SIZE));
    let proxy = start(rt, config(server, delay, direction));
    let through = median(ping_pong(proxy.local_addr(), ROUNDS, SIZE));
    rt.block_on(proxy.shutdown());
    (through.saturating_sub(base), base)
}

fn check_added_rtt(direction: Direction, factor: u32) {
    let _serial = serial();
    let rt = runtime();
    let mut failures = Vec::new();
    for delay in [Duration::from_micros(100), Duration::from_millis(1), Duration::from_millis(10)] {
        let expected = delay * factor;
        let tolerance = (expected / 20).max(Duration::from_micros(50));
        let (added, base) = added_rtt(&rt, delay, direction);
        let error = added.abs_diff(expected);
        eprintln!(
            "{direction:?} delay {delay:?}: added RTT {added:?} (expected {expected:?}, error {error:?}, tolerance {tolerance:?}, base RTT {base:?})"
        );
        if error > tolerance {
            failures.push(format!("{delay:?}: added {added:?}, expected {expected:?} +- {tolerance:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn added_rtt_up_is_the_delay() {
    check_added_rtt(Direction::Up, 1);
}

#[test]
fn added_rtt_down_is_the_delay() {
    check_added_rtt(Direction::Down, 1);
}

#[test]
fn added_rtt_both_is_twice_the_delay() {
    check_added_rtt(Direction::Both, 2);
}
