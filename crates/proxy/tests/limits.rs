//! The proxy's limits: the idle timeout, the connection cap, the upstream connect timeout,
//! and their configuration.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use tsload_proxy::{Direction, Log, MAX_HOP_CREDIT, Proxy, ProxyConfig, ProxyError};

/// Reads until EOF or an error, for at most 5 s; the time it took and how it ended.
fn read_to_end_timed(conn: &mut TcpStream) -> (Duration, std::io::Result<Vec<u8>>) {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    let mut got = Vec::new();
    let result = conn.read_to_end(&mut got).map(|_| got);
    (t0.elapsed(), result)
}

fn ping(conn: &mut TcpStream, msg: &[u8]) {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(msg).unwrap();
    let mut back = vec![0u8; msg.len()];
    conn.read_exact(&mut back).unwrap();
    assert_eq!(back, msg);
}

fn expect_reset(conn: &mut TcpStream) {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 16];
    match conn.read(&mut buf) {
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected a reset, got {other:?}"),
    }
}

const IDLE: Duration = Duration::from_millis(300);

fn idle_config(delay: Duration) -> ProxyConfig {
    let mut config = config(copy_echo_server(), delay, Direction::Up);
    config.idle_timeout = Some(IDLE);
    config
}

/// A connection that moves no byte for the idle timeout is closed: the client reads EOF,
/// never before the timeout has passed since its last byte went through.
#[test]
fn an_idle_connection_is_closed_after_the_timeout() {
    let rt = runtime();
    let proxy = start(&rt, idle_config(Duration::ZERO));
    let mut conn = TcpStream::connect(proxy.local_addr()).unwrap();
    // The proxy's last activity is at the earliest when this request reaches it.
    let t0 = Instant::now();
    ping(&mut conn, b"hello");
    let (_, end) = read_to_end_timed(&mut conn);
    let closed_after = t0.elapsed();
    assert_eq!(end.unwrap(), b"", "EOF, nothing more");
    assert!(closed_after >= IDLE, "closed after {closed_after:?}");
    assert!(
        closed_after < IDLE + Duration::from_secs(2),
        "closed after {closed_after:?}"
    );
    wait_until("the close is counted", Duration::from_secs(5), || {
        proxy.stats().idle_closed == 1 && proxy.stats().active == 0
    });
    let stats = proxy.stats();
    assert_eq!(stats.io_errors, 0, "{stats:?}");
    assert_eq!(proxy_panics(), 0);
}

/// The timeout counts from the last byte, not from the connect: a connection busy for
/// several times the timeout stays open.
#[test]
fn traffic_keeps_a_connection_open() {
    // Longer than the others: a ping every 100 ms must not miss it on a busy machine.
    let idle = Duration::from_secs(1);
    let rt = runtime();
    let mut config = idle_config(Duration::ZERO);
    config.idle_timeout = Some(idle);
    let proxy = start(&rt, config);
    let mut conn = TcpStream::connect(proxy.local_addr()).unwrap();
    let start = Instant::now();
    let mut last = start;
    while start.elapsed() < idle * 3 {
        last = Instant::now();
        ping(&mut conn, b"still here");
        thread::sleep(idle / 10);
    }
    assert_eq!(proxy.stats().idle_closed, 0);
    let (_, end) = read_to_end_timed(&mut conn);
    assert_eq!(end.unwrap(), b"");
    assert!(last.elapsed() >= idle, "{:?}", last.elapsed());
    wait_until("the close is counted", Duration::from_secs(5), || {
        proxy.stats().idle_closed == 1
    });
    assert_eq!(proxy_panics(), 0);
}

/// Bytes in a delay line are moving: a delay longer than the idle timeout does not close
/// the connection under them, and the timeout counts from their delivery.
#[test]
fn bytes_in_a_delay_line_are_not_idle() {
    let delay = IDLE * 2;
    let rt = runtime();
    let proxy = start(&rt, idle_config(delay));
    let mut conn = TcpStream::connect(proxy.local_addr()).unwrap();
    let t0 = Instant::now();
    ping(&mut conn, b"slow");
    assert!(t0.elapsed() >= delay - MAX_HOP_CREDIT, "{:?}", t0.elapsed());
    let (_, end) = read_to_end_timed(&mut conn);
    assert_eq!(end.unwrap(), b"");
    let closed_after = t0.elapsed();
    // The delay line takes the hop of the other direction off its delay.
    assert!(
        closed_after >= delay + IDLE - MAX_HOP_CREDIT,
        "closed after {closed_after:?}"
    );
    wait_until("the close is counted", Duration::from_secs(5), || {
        proxy.stats().idle_closed == 1
    });
    assert_eq!(proxy_panics(), 0);
}

/// A log that keeps its lines.
fn kept_log() -> (Log, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let log = Log::to(move |line| sink.lock().unwrap().push(line.to_owned()));
    (log, lines)
}

/// With `max_connections` open, the next connection is reset at once (not queued), counted
/// and logged; once one closes, a new one is served.
#[test]
fn the_connection_cap_refuses_one_more() {
    const CAP: usize = 3;
    let rt = runtime();
    let mut config = config(copy_echo_server(), Duration::ZERO, Direction::Up);
    config.max_connections = Some(CAP);
    let (log, lines) = kept_log();
    config.log = log;
    let proxy = start(&rt, config);
    let addr = proxy.local_addr();
    let mut open: Vec<TcpStream> = (0..CAP)
        .map(|i| {
            let mut conn = TcpStream::connect(addr).unwrap();
            ping(&mut conn, format!("client {i}").as_bytes());
            conn
        })
        .collect();
    assert_eq!(proxy.stats().active, CAP as u64);

    let mut over = TcpStream::connect(addr).unwrap();
    let t0 = Instant::now();
    expect_reset(&mut over);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let stats = proxy.stats();
    assert_eq!(
        (stats.refused, stats.connections, stats.active),
        (1, CAP as u64, CAP as u64),
        "{stats:?}"
    );
    {
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("refused a connection") && lines[0].contains("max_connections"),
            "{lines:?}"
        );
    }
    // The ones open are untouched.
    for (i, conn) in open.iter_mut().enumerate() {
        ping(conn, format!("still {i}").as_bytes());
    }

    drop(open.pop());
    wait_until("one is closed", Duration::from_secs(5), || {
        proxy.stats().active == CAP as u64 - 1
    });
    let mut again = TcpStream::connect(addr).unwrap();
    ping(&mut again, b"served");
    let stats = proxy.stats();
    assert_eq!((stats.refused, stats.connections), (1, CAP as u64 + 1));
    assert_eq!(proxy_panics(), 0);
}

/// A listener whose accept queue is full: the kernel drops the SYNs of further
/// connections, which then wait for a SYN-ACK that does not come (until the listener
/// accepts, which it never does). Returns it with the connection that fills it.
fn unanswering_upstream() -> (TcpListener, TcpStream, SocketAddr) {
    use nix::sys::socket::{Backlog, listen};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // Linux lets a listening socket's backlog be changed; 0 takes one connection.
    listen(&listener, Backlog::new(0).unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let filler = TcpStream::connect(addr).unwrap();
    let probe = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
    assert!(
        matches!(&probe, Err(e) if e.kind() == ErrorKind::TimedOut),
        "a full accept queue should leave a connect unanswered, got {probe:?}"
    );
    (listener, filler, addr)
}

/// An upstream that does not answer is given up after `connect_timeout`: the client's
/// connection is reset, and the timeout counted.
#[test]
fn an_unanswered_upstream_connect_times_out() {
    let timeout = Duration::from_millis(300);
    let (_listener, _filler, upstream) = unanswering_upstream();
    let rt = runtime();
    let mut config = config(upstream, Duration::ZERO, Direction::Up);
    config.connect_timeout = Some(timeout);
    let proxy = start(&rt, config);
    let mut conn = TcpStream::connect(proxy.local_addr()).unwrap();
    let t0 = Instant::now();
    expect_reset(&mut conn);
    let waited = t0.elapsed();
    assert!(waited >= timeout - Duration::from_millis(5), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    wait_until("the connection is closed", Duration::from_secs(5), || {
        proxy.stats().active == 0
    });
    let stats = proxy.stats();
    assert_eq!(
        (stats.connect_errors, stats.connect_timeouts),
        (1, 1),
        "{stats:?}"
    );
    assert_eq!(proxy_panics(), 0);
}

#[test]
fn the_defaults_are_the_documented_ones() {
    let config = ProxyConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.1:9".parse().unwrap(),
    );
    assert_eq!(config.idle_timeout, Some(Duration::from_secs(300)));
    assert_eq!(config.max_connections, Some(1024));
    assert_eq!(config.connect_timeout, Some(Duration::from_secs(10)));
    assert_eq!(config.queue_limit, 16 * 1024 * 1024);
    assert_eq!(config.log, Log::Stderr);
}

#[test]
fn zero_limits_are_refused() {
    let rt = runtime();
    let base = config(
        "127.0.0.1:9".parse().unwrap(),
        Duration::ZERO,
        Direction::Up,
    );
    type Tune = fn(&mut ProxyConfig);
    let tunes: [(&str, Tune); 4] = [
        ("idle_timeout", |c| c.idle_timeout = Some(Duration::ZERO)),
        ("connect_timeout", |c| {
            c.connect_timeout = Some(Duration::ZERO)
        }),
        ("max_connections", |c| c.max_connections = Some(0)),
        ("queue_limit", |c| c.queue_limit = 1000),
    ];
    for (name, tune) in tunes {
        let mut config = base.clone();
        tune(&mut config);
        match rt.block_on(Proxy::start(config)) {
            Err(ProxyError::Config(e)) => assert!(e.contains(name), "{name}: {e}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    // `None` is never, no cap, the system's own.
    let mut config = base;
    config.idle_timeout = None;
    config.max_connections = None;
    config.connect_timeout = None;
    config.queue_limit = tsload_proxy::MIN_QUEUE_LIMIT;
    rt.block_on(Proxy::start(config)).unwrap();
}
