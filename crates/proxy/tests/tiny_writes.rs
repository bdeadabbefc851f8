//! 1-byte writes into a long delay: the queue limit holds the memory the proxy really
//! allocates (each chunk's allocation and entry), not the payload, and the sender is
//! pushed back. On its own in this file (its own process), so that the resident set it
//! measures is the proxy's and this test's only.

mod common;

use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use tsload_proxy::Direction;

const MIB: u64 = 1024 * 1024;
/// The queue limit of the test: small, so that it fills fast.
const LIMIT: u64 = 2 * MIB;
/// What the process may grow by: the queue, the kernel-side buffering is not resident,
/// and some slack for the allocator's own rounding and the runtime.
const RSS_BOUND: u64 = LIMIT * 2 + 8 * MIB;
/// How long writes must have been refused in a row to call it pushed back.
const PUSHED_BACK: Duration = Duration::from_millis(500);

#[test]
fn one_byte_writes_into_a_long_delay_stay_within_the_queue_limit() {
    let rt = runtime();
    // The upstream never reads: nothing leaves the proxy but what the delay releases, and
    // the delay releases nothing during the test.
    let (upstream, _) = holding_server();
    let mut config = config(upstream, Duration::from_secs(30), Direction::Up);
    config.queue_limit = LIMIT as usize;
    let proxy = start(&rt, config);
    let mut client = TcpStream::connect(proxy.local_addr()).unwrap();
    client.set_nodelay(true).unwrap();
    wait_until("the connection is up", Duration::from_secs(5), || {
        proxy.stats().active == 1
    });
    thread::sleep(Duration::from_millis(100));
    let rss0 = rss_bytes();
    client.set_nonblocking(true).unwrap();

    let t0 = Instant::now();
    let mut written: u64 = 0;
    let mut peak_buffered = 0;
    let mut refused_since: Option<Instant> = None;
    loop {
        match client.write(&[written as u8]) {
            Ok(1) => {
                written += 1;
                refused_since = None;
            }
            Ok(n) => panic!("wrote {n} bytes of 1"),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let since = *refused_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= PUSHED_BACK {
                    break;
                }
                thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("write: {e}"),
        }
        if written.is_multiple_of(1024) || refused_since.is_some() {
            let stats = proxy.stats();
            peak_buffered = peak_buffered.max(stats.buffered_bytes);
            let grown = rss_bytes().saturating_sub(rss0);
            assert!(
                grown <= RSS_BOUND,
                "after {written} 1-byte writes the resident set grew by {grown} bytes \
                 (the proxy counts {} bytes held): the queue limit of {LIMIT} does not \
                 bound what is allocated",
                stats.buffered_bytes
            );
            assert!(
                stats.buffered_bytes <= LIMIT,
                "after {written} 1-byte writes the proxy holds {} bytes, over its limit of \
                 {LIMIT}",
                stats.buffered_bytes
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no push-back after {written} 1-byte writes in {:?}; the proxy holds {} bytes",
            t0.elapsed(),
            proxy.stats().buffered_bytes
        );
    }
    // The queue is what stopped the reading: it is full, by its real size, to within the
    // room for one more chunk (64 KiB and its entry) that the reader waits for. (Waited
    // for: a proxy held up on a busy machine may still be catching up.)
    let full = LIMIT - 64 * 1024 - 100;
    wait_until("the queue is full", Duration::from_secs(10), || {
        proxy.stats().buffered_bytes > full
    });
    let stats = proxy.stats();
    let grown = rss_bytes().saturating_sub(rss0);
    eprintln!(
        "{written} 1-byte writes in {:?} before the push-back; the proxy holds {} bytes \
         (limit {LIMIT}, peak seen {peak_buffered}), the resident set grew by {:.1} MB",
        t0.elapsed() - PUSHED_BACK,
        stats.buffered_bytes,
        grown as f64 / 1e6
    );
    assert_eq!(stats.bytes_up, 0, "the delay released bytes early");
    assert!(stats.buffered_bytes <= LIMIT, "{stats:?}");
    assert!(grown <= RSS_BOUND, "grew by {grown} bytes");
    rt.block_on(proxy.shutdown());
    assert_eq!(proxy_panics(), 0);
}
