//! 2000 idle clients through one proxy: what they cost in memory and descriptors. On its
//! own in this file (its own process), so that the resident set it measures is the
//! proxy's and this test's only.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use common::*;
use tsload_proxy::Direction;

const CLIENTS: usize = 2000;
const MB: u64 = 1_000_000;
/// The most 2000 idle connections may add to the process's resident set: their tasks,
/// sockets' user-space state and queues, but no per-connection read buffer (two 64 KiB
/// buffers each came to 280 MB).
const RSS_BOUND: u64 = 20 * MB;

/// Each connection both ways delayed (two delay lines, the most a connection holds): 2000
/// clients connect and stay idle, then each sends one byte and stays idle again.
#[test]
fn two_thousand_idle_clients_hold_no_buffers() {
    // Four descriptors a connection in this process (the client's, the proxy's two, the
    // upstream's), and the timers of the proxy's delay lines once they carried bytes.
    raise_nofile(CLIENTS as u64 * 6 + 500);
    let rt = runtime();
    let (upstream, accepted) = holding_server();
    let mut config = config(upstream, Duration::from_millis(10), Direction::Both);
    config.max_connections = Some(CLIENTS + 10);
    let proxy = start(&rt, config);
    thread::sleep(Duration::from_millis(100));
    let rss0 = rss_bytes();
    let fds0 = fd_count();

    let mut clients: Vec<TcpStream> = (0..CLIENTS)
        .map(|_| TcpStream::connect(proxy.local_addr()).unwrap())
        .collect();
    wait_until(
        "every client is connected upstream",
        Duration::from_secs(30),
        || proxy.stats().active == CLIENTS as u64 && accepted.load(Ordering::SeqCst) == CLIENTS,
    );
    thread::sleep(Duration::from_millis(200));
    let idle_rss = rss_bytes().saturating_sub(rss0);
    let idle_fds = fd_count() - fds0;
    let idle_stats = proxy.stats();
    eprintln!(
        "{CLIENTS} idle clients: resident set +{:.1} MB ({} bytes a connection), \
         descriptors +{idle_fds}, accounted buffers {} bytes",
        idle_rss as f64 / 1e6,
        idle_rss / CLIENTS as u64,
        idle_stats.buffered_bytes
    );

    // One byte up each, then idle again: what a used connection keeps.
    for client in &mut clients {
        client.write_all(b"x").unwrap();
    }
    wait_until(
        "every byte reached the upstream",
        Duration::from_secs(30),
        || proxy.stats().bytes_up == CLIENTS as u64,
    );
    thread::sleep(Duration::from_millis(200));
    let used_rss = rss_bytes().saturating_sub(rss0);
    let used_fds = fd_count() - fds0;
    let used_stats = proxy.stats();
    eprintln!(
        "after a byte each: resident set +{:.1} MB, descriptors +{used_fds}, accounted \
         buffers {} bytes",
        used_rss as f64 / 1e6,
        used_stats.buffered_bytes
    );

    assert_eq!(idle_stats.buffered_bytes, 0, "{idle_stats:?}");
    assert_eq!(used_stats.buffered_bytes, 0, "{used_stats:?}");
    assert!(
        idle_rss < RSS_BOUND,
        "{CLIENTS} idle connections grew the resident set by {idle_rss} bytes"
    );
    assert!(
        used_rss < RSS_BOUND,
        "{CLIENTS} used and idle connections grew the resident set by {used_rss} bytes"
    );
    // An idle delay line has no timer until its first delayed chunk; then it keeps one
    // (the up lines here; the down lines carried nothing).
    assert!(idle_fds <= CLIENTS * 4 + 50, "{idle_fds} descriptors");
    assert!(used_fds <= CLIENTS * 5 + 50, "{used_fds} descriptors");
    assert_eq!(used_stats.io_errors + used_stats.connect_errors, 0);
    assert_eq!(used_stats.refused, 0);
    drop(clients);
    rt.block_on(proxy.shutdown());
    assert_eq!(proxy_panics(), 0);
}
