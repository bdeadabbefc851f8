//! What the proxy forwards: content and order under jitter, half-close, refused upstreams,
//! shutdown, configuration errors.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use tsload_proxy::{Direction, Proxy, ProxyConfig, ProxyError};

const MB: usize = 1024 * 1024;

/// Waits until `f` holds, for at most 5 s.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn round_trip_stream(config: ProxyConfig, len: usize, seed: u64) {
    let rt = runtime();
    let proxy = start(&rt, config);
    let data = stream(seed, len);
    let conn = TcpStream::connect(proxy.local_addr()).unwrap();
    let back = send_and_collect(conn, &data);
    assert_eq!(back.len(), data.len(), "length");
    assert_eq!(hash(&back), hash(&data), "content");
    assert!(back == data);
    eventually("the connection is closed", || proxy.stats().active == 0);
    let stats = proxy.stats();
    assert_eq!(stats.bytes_up, len as u64);
    assert_eq!(stats.bytes_down, len as u64);
    assert_eq!(stats.connections, 1);
    assert_eq!(stats.io_errors + stats.connect_errors, 0, "{stats:?}");
    assert_eq!(proxy_panics(), 0);
}

#[test]
fn jitter_keeps_order_and_content_both_ways() {
    let mut config = config(
        copy_echo_server(),
        Duration::from_millis(1),
        Direction::Both,
    );
    // Jitter as large as the delay: some chunks would go at once, others after 2 ms.
    config.jitter = Duration::from_millis(1);
    round_trip_stream(config, 8 * MB, 1);
}

#[test]
fn large_jitter_with_rate_keeps_order_and_content() {
    let mut config = config(
        copy_echo_server(),
        Duration::from_micros(200),
        Direction::Up,
    );
    config.jitter = Duration::from_millis(3);
    config.rate = Some(200 * MB as u64);
    round_trip_stream(config, 4 * MB, 2);
}

#[test]
fn zero_delay_copy_keeps_order_and_content() {
    let config = config(copy_echo_server(), Duration::ZERO, Direction::Both);
    round_trip_stream(config, 16 * MB, 3);
}

/// A server that reads until EOF, then answers with the length and hash of what it read.
fn reply_after_eof_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let mut got = Vec::new();
                conn.read_to_end(&mut got).unwrap();
                let reply = format!("got {} bytes, hash {:016x}", got.len(), hash(&got));
                conn.write_all(reply.as_bytes()).unwrap();
            });
        }
    });
    addr
}

fn half_close(delay: Duration, direction: Direction) {
    let rt = runtime();
    let proxy = start(&rt, config(reply_after_eof_server(), delay, direction));
    let mut conn = TcpStream::connect(proxy.local_addr()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = stream(9, 100_000);
    conn.write_all(&request).unwrap();
    conn.shutdown(Shutdown::Write).unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert_eq!(
        reply,
        format!("got 100000 bytes, hash {:016x}", hash(&request))
    );
    eventually("the connection is closed", || proxy.stats().active == 0);
    assert_eq!(proxy.stats().io_errors, 0);
    assert_eq!(proxy_panics(), 0);
}

#[test]
fn half_close_without_delay() {
    half_close(Duration::ZERO, Direction::Up);
}

#[test]
fn half_close_through_delay_lines() {
    half_close(Duration::from_millis(5), Direction::Up);
    half_close(Duration::from_millis(5), Direction::Down);
    half_close(Duration::from_millis(5), Direction::Both);
}

#[test]
fn the_fin_is_delayed_like_data() {
    // The server sees EOF no sooner than the delay after the client's shutdown, less the
    // other direction's hop through the proxy (at most 100 us), which a direction delayed
    // alone takes off its delay so that round trips grow by the delay.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let rt = runtime();
    let delay = Duration::from_millis(50);
    let proxy = start(
        &rt,
        config(listener.local_addr().unwrap(), delay, Direction::Up),
    );
    let client = TcpStream::connect(proxy.local_addr()).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let t0 = Instant::now();
    client.shutdown(Shutdown::Write).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(server.read(&mut buf).unwrap(), 0);
    let waited = t0.elapsed();
    assert!(
        waited >= delay - Duration::from_micros(100),
        "EOF after {waited:?}"
    );
    assert!(waited < delay * 2, "EOF after {waited:?}");
    assert_eq!(proxy_panics(), 0);
}

/// An address nothing listens on.
fn refused_addr() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

#[test]
fn refused_upstream_closes_the_client_and_counts() {
    for delay in [Duration::ZERO, Duration::from_millis(1)] {
        let rt = runtime();
        let proxy = start(&rt, config(refused_addr(), delay, Direction::Both));
        for i in 1..=3u64 {
            let mut conn = TcpStream::connect(proxy.local_addr()).unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = conn.write_all(b"hello?");
            let mut buf = [0u8; 16];
            match conn.read(&mut buf) {
                Ok(0) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
                other => panic!("expected the connection closed, got {other:?}"),
            }
            eventually("the error is counted", || proxy.stats().connect_errors == i);
        }
        eventually("nothing is open", || proxy.stats().active == 0);
        let stats = proxy.stats();
        assert_eq!(
            (stats.connections, stats.bytes_up, stats.bytes_down),
            (3, 0, 0)
        );
        assert_eq!(proxy_panics(), 0);
    }
}

#[test]
fn a_reset_by_the_server_closes_the_client() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let rt = runtime();
    let proxy = start(
        &rt,
        config(
            listener.local_addr().unwrap(),
            Duration::from_millis(1),
            Direction::Both,
        ),
    );
    let mut client = TcpStream::connect(proxy.local_addr()).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (mut server, _) = listener.accept().unwrap();
    client.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    server.read_exact(&mut buf).unwrap();
    // Unread data in the receive queue makes close() send a reset.
    client.write_all(b"unread").unwrap();
    thread::sleep(Duration::from_millis(20));
    drop(server);
    match client.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected the connection closed, got {other:?}"),
    }
    eventually("the error is counted", || proxy.stats().io_errors == 1);
    eventually("nothing is open", || proxy.stats().active == 0);
    assert_eq!(proxy_panics(), 0);
}

#[test]
fn shutdown_closes_the_listener_and_the_connections() {
    let rt = runtime();
    let proxy = start(
        &rt,
        config(echo_server(4), Duration::from_millis(1), Direction::Up),
    );
    let addr = proxy.local_addr();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    conn.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
    rt.block_on(proxy.shutdown());
    match conn.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected the connection closed, got {other:?}"),
    }
    let refused = TcpStream::connect(addr).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn dropping_the_handle_stops_the_proxy() {
    let rt = runtime();
    let proxy = start(&rt, config(echo_server(4), Duration::ZERO, Direction::Up));
    let addr = proxy.local_addr();
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    conn.read_exact(&mut buf).unwrap();
    drop(proxy);
    match conn.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected the connection closed, got {other:?}"),
    }
    // The listener goes with the accept task, which the runtime drops shortly.
    eventually("the listener is closed", || {
        TcpStream::connect(addr).is_err()
    });
}

#[test]
fn bad_configurations_are_refused() {
    let rt = runtime();
    let upstream = "127.0.0.1:9".parse().unwrap();
    let mut config = config(upstream, Duration::ZERO, Direction::Up);
    config.rate = Some(0);
    let err = rt.block_on(Proxy::start(config.clone())).unwrap_err();
    assert!(matches!(err, ProxyError::Config(_)), "{err}");
    config.rate = None;
    config.delay = Duration::from_secs(3601);
    assert!(matches!(
        rt.block_on(Proxy::start(config.clone())),
        Err(ProxyError::Config(_))
    ));
    config.delay = Duration::ZERO;
    config.jitter = Duration::from_secs(3601);
    assert!(matches!(
        rt.block_on(Proxy::start(config.clone())),
        Err(ProxyError::Config(_))
    ));

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    config.jitter = Duration::ZERO;
    config.listen = taken.local_addr().unwrap();
    let err = rt.block_on(Proxy::start(config)).unwrap_err();
    assert!(matches!(err, ProxyError::Bind { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&taken.local_addr().unwrap().to_string()),
        "{err}"
    );
}
