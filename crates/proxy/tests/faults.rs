//! Fault injection through real sockets on 127.0.0.1: each action fires at its exact byte,
//! with and without delay lines; connection filters and `max_fires`; bad configurations.
//!
//! The tests drive both ends themselves (the test thread is the client and accepts the
//! proxy's upstream connection), and wait for what the other side has received before
//! sending more, so chunk boundaries, and so the outcomes, do not depend on timing.

mod common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use tsload_proxy::{
    Direction, Fault, FaultAction, FaultTrigger, Proxy, ProxyConfig, ProxyError, ProxyHandle,
    Stream,
};

/// How long a read waits before the test takes "nothing came" for an answer.
const QUIET: Duration = Duration::from_millis(300);
/// How long anything expected may take.
const PATIENCE: Duration = Duration::from_secs(10);

/// How a stream ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Eof,
    Reset,
    /// Still open after [`QUIET`].
    Quiet,
    Other(ErrorKind),
}

/// Reads until EOF, an error, or `wait` without data: what came, and how it ended.
fn read_all(conn: &mut TcpStream, wait: Duration) -> (Vec<u8>, End) {
    conn.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => return (got, End::Eof),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (got, End::Reset),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (got, End::Quiet);
            }
            Err(e) => return (got, End::Other(e.kind())),
        }
    }
}

fn read_exactly(conn: &mut TcpStream, n: usize) -> Vec<u8> {
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = vec![0u8; n];
    conn.read_exact(&mut buf).unwrap();
    buf
}

/// Waits until `f` holds, for at most [`PATIENCE`].
fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + PATIENCE;
    while !f() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

/// A proxy in front of a listener the test accepts from itself.
struct Rig {
    rt: tokio::runtime::Runtime,
    proxy: Option<ProxyHandle>,
    upstream: TcpListener,
}

impl Rig {
    fn new(faults: Vec<Fault>) -> Rig {
        Rig::with(faults, |_| {})
    }

    fn with(faults: Vec<Fault>, tune: impl FnOnce(&mut ProxyConfig)) -> Rig {
        let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
        let rt = runtime();
        let mut config = ProxyConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            upstream.local_addr().unwrap(),
        );
        config.faults = faults;
        tune(&mut config);
        let proxy = start(&rt, config);
        Rig {
            rt,
            proxy: Some(proxy),
            upstream,
        }
    }

    fn proxy(&self) -> &ProxyHandle {
        self.proxy.as_ref().unwrap()
    }

    /// A client connection and the server's side of it.
    fn connect(&self) -> (TcpStream, TcpStream) {
        let client = TcpStream::connect(self.proxy().local_addr()).unwrap();
        client.set_nodelay(true).unwrap();
        let (server, _) = self.upstream.accept().unwrap();
        server.set_nodelay(true).unwrap();
        (client, server)
    }

    fn finish(mut self) {
        eventually("every connection is closed", || {
            self.proxy().stats().active == 0
        });
        let proxy = self.proxy.take().unwrap();
        self.rt.block_on(proxy.shutdown());
        assert_eq!(proxy_panics(), 0, "a proxy task panicked");
    }
}

fn fault(trigger: FaultTrigger, action: FaultAction) -> Fault {
    Fault::new(trigger, action)
}

fn after_bytes(stream: Stream, bytes: u64) -> FaultTrigger {
    FaultTrigger::AfterBytes { stream, bytes }
}

fn after_pattern(stream: Stream, pattern: &[u8], occurrence: u64) -> FaultTrigger {
    FaultTrigger::AfterPattern {
        stream,
        pattern: pattern.to_vec(),
        occurrence,
    }
}

/// Sets a proxy's delay, jitter, rate and direction.
type Tune = fn(&mut ProxyConfig);

/// The delay settings the fault tests run under.
fn delays() -> Vec<(&'static str, Tune)> {
    vec![
        ("no delay", |_| {}),
        ("2 ms up", |c| {
            c.delay = Duration::from_millis(2);
            c.direction = Direction::Up;
        }),
        ("2 ms down", |c| {
            c.delay = Duration::from_millis(2);
            c.direction = Direction::Down;
        }),
        ("2 ms +- 2 ms both", |c| {
            c.delay = Duration::from_millis(2);
            c.jitter = Duration::from_millis(2);
            c.direction = Direction::Both;
        }),
        ("rate 1 MB/s both", |c| {
            c.delay = Duration::from_millis(1);
            c.rate = Some(1_000_000);
            c.direction = Direction::Both;
        }),
    ]
}

/// AfterBytes{Down, 10} + Reset: the client gets exactly 10 bytes of a 4 + 100 byte
/// answer (the trigger inside the second chunk), then a reset; so does the server.
fn reset_after_ten_down_bytes(rig: &Rig) {
    let (mut client, mut server) = rig.connect();
    let data = stream(7, 104);
    server.write_all(&data[..4]).unwrap();
    assert_eq!(read_exactly(&mut client, 4), data[..4]);
    server.write_all(&data[4..]).unwrap();
    let (got, end) = read_all(&mut client, PATIENCE);
    assert_eq!(got, data[4..10], "the client got {} more bytes", got.len());
    assert_eq!(end, End::Reset);
    let (got, end) = read_all(&mut server, PATIENCE);
    assert!(got.is_empty());
    assert_eq!(end, End::Reset);
}

#[test]
fn after_bytes_down_reset_delivers_exactly_n_bytes() {
    let rig = Rig::new(vec![fault(
        after_bytes(Stream::Down, 10),
        FaultAction::Reset,
    )]);
    reset_after_ten_down_bytes(&rig);
    let stats = rig.proxy().stats();
    assert_eq!((stats.faults_fired, stats.bytes_down), (1, 10), "{stats:?}");
    assert_eq!(stats.io_errors, 0);
    rig.finish();
}

#[test]
fn after_bytes_at_a_chunk_boundary_fires_without_waiting_for_more() {
    // The trigger is the end of the first chunk: the reset comes at once.
    let rig = Rig::new(vec![fault(after_bytes(Stream::Up, 6), FaultAction::Reset)]);
    let (mut client, mut server) = rig.connect();
    client.write_all(b"BEGIN;").unwrap();
    let (got, end) = read_all(&mut server, PATIENCE);
    assert_eq!((got.as_slice(), end), (&b"BEGIN;"[..], End::Reset));
    assert_eq!(read_all(&mut client, PATIENCE).1, End::Reset);
    rig.finish();
}

#[test]
fn after_pattern_up_split_across_two_writes_fires_at_the_right_occurrence() {
    let rig = Rig::new(vec![fault(
        after_pattern(Stream::Up, b"COMMIT", 2),
        FaultAction::Reset,
    )]);
    let (mut client, mut server) = rig.connect();
    // The first occurrence is forwarded; the second straddles the two writes.
    let first = b"BEGIN;COMMIT;BEGIN;INSERT;COM";
    client.write_all(first).unwrap();
    // The server has all of the first write before the second is sent: two chunks.
    assert_eq!(read_exactly(&mut server, first.len()), first);
    client.write_all(b"MIT;BEGIN;").unwrap();
    let (got, end) = read_all(&mut server, PATIENCE);
    assert_eq!(String::from_utf8_lossy(&got), "MIT");
    assert_eq!(end, End::Reset);
    assert_eq!(read_all(&mut client, PATIENCE).1, End::Reset);
    let stats = rig.proxy().stats();
    assert_eq!(
        (stats.faults_fired, stats.bytes_up),
        (1, first.len() as u64 + 3)
    );
    rig.finish();
}

#[test]
fn a_pattern_split_one_byte_per_write_is_found() {
    let rig = Rig::new(vec![fault(
        after_pattern(Stream::Down, b"\x00\xffEND", 1),
        FaultAction::Reset,
    )]);
    let (mut client, mut server) = rig.connect();
    let answer = b"data\x00\xff\x00\xffEND and more";
    let end_at = 4 + 2 + 5;
    for (i, b) in answer.iter().enumerate().take(end_at) {
        server.write_all(&[*b]).unwrap();
        if i + 1 < end_at {
            assert_eq!(read_exactly(&mut client, 1), [*b], "byte {i}");
        }
    }
    // The proxy may have reset the server's side already: this write may fail.
    let _ = server.write_all(&answer[end_at..]);
    let (got, end) = read_all(&mut client, PATIENCE);
    assert_eq!(
        got,
        [answer[end_at - 1]],
        "the last byte of the pattern, then nothing"
    );
    assert_eq!(end, End::Reset);
    rig.finish();
}

#[test]
fn stall_keeps_both_open_and_forwards_nothing_more() {
    let rig = Rig::new(vec![fault(
        after_bytes(Stream::Down, 5),
        FaultAction::Stall,
    )]);
    let (mut client, mut server) = rig.connect();
    server.write_all(b"0123456789abcdefghij").unwrap();
    assert_eq!(read_exactly(&mut client, 5), b"01234");
    // Open, and silent, both ways.
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    client.write_all(b"hello?").unwrap();
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    server.write_all(b"more").unwrap();
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    let stats = rig.proxy().stats();
    assert_eq!(
        (
            stats.faults_fired,
            stats.bytes_down,
            stats.bytes_up,
            stats.active
        ),
        (1, 5, 0, 1)
    );
    // The client goes: the proxy closes the server's side.
    drop(client);
    let (got, end) = read_all(&mut server, PATIENCE);
    assert!(got.is_empty());
    assert!(matches!(end, End::Eof | End::Reset), "{end:?}");
    rig.finish();
}

#[test]
fn stall_ends_when_the_server_closes() {
    let rig = Rig::new(vec![fault(after_bytes(Stream::Up, 3), FaultAction::Stall)]);
    let (mut client, mut server) = rig.connect();
    client.write_all(b"abcdef").unwrap();
    assert_eq!(read_exactly(&mut server, 3), b"abc");
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    drop(server);
    let (got, end) = read_all(&mut client, PATIENCE);
    assert!(got.is_empty());
    assert!(matches!(end, End::Eof | End::Reset), "{end:?}");
    rig.finish();
}

#[test]
fn stall_holds_a_client_that_half_closed_before_it() {
    // The client sent its request and its FIN, and waits for the answer: the stall holds
    // it (no EOF) until the server goes.
    let rig = Rig::new(vec![fault(
        after_bytes(Stream::Down, 2),
        FaultAction::Stall,
    )]);
    let (mut client, mut server) = rig.connect();
    client.write_all(b"request").unwrap();
    client.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(
        read_all(&mut server, PATIENCE),
        (b"request".to_vec(), End::Eof)
    );
    server.write_all(b"answer").unwrap();
    assert_eq!(read_exactly(&mut client, 2), b"an");
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    drop(server);
    let (got, end) = read_all(&mut client, PATIENCE);
    assert!(got.is_empty());
    assert!(matches!(end, End::Eof | End::Reset), "{end:?}");
    rig.finish();
}

#[test]
fn stall_pushes_back_on_the_sender() {
    // Reading stops: a client writing a lot is blocked by TCP, not swallowed.
    let rig = Rig::new(vec![fault(after_bytes(Stream::Up, 1), FaultAction::Stall)]);
    let (mut client, mut server) = rig.connect();
    client.write_all(b"x").unwrap();
    assert_eq!(read_exactly(&mut server, 1), b"x");
    client.set_write_timeout(Some(QUIET)).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut sent = 0usize;
    let blocked = loop {
        match client.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break true;
            }
            Err(e) => panic!("write failed: {e}"),
        }
        if sent > 256 << 20 {
            break false;
        }
    };
    assert!(blocked, "{sent} bytes went into a stalled connection");
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    drop(client);
    drop(server);
    rig.finish();
}

#[test]
fn blackhole_reads_and_discards_both_ways() {
    let rig = Rig::new(vec![fault(
        after_bytes(Stream::Up, 5),
        FaultAction::Blackhole,
    )]);
    let (mut client, mut server) = rig.connect();
    client.write_all(b"hello world").unwrap();
    assert_eq!(read_exactly(&mut server, 5), b"hello");
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    // The proxy keeps reading: far more than the sockets' buffers hold goes in.
    client.set_write_timeout(Some(PATIENCE)).unwrap();
    client.write_all(&vec![7u8; 32 << 20]).unwrap();
    server.write_all(b"an answer").unwrap();
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    let stats = rig.proxy().stats();
    assert_eq!(
        (stats.faults_fired, stats.bytes_up, stats.bytes_down),
        (1, 5, 0)
    );
    // The client's close does not reach the server either; the server's own ends it.
    drop(client);
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    assert_eq!(rig.proxy().stats().active, 1);
    drop(server);
    rig.finish();
}

/// A line server: records every line it reads and answers `ok LINE`, except that with
/// `close_on` it closes instead of answering that line. Returns what it recorded (all
/// the bytes it read) and how its connection ended.
fn line_server(
    conn: TcpStream,
    close_on: Option<&'static str>,
) -> thread::JoinHandle<(Vec<u8>, End)> {
    thread::spawn(move || {
        conn.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut writer = conn.try_clone().unwrap();
        let mut reader = BufReader::new(conn);
        let mut got = Vec::new();
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => return (got, End::Eof),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return (got, End::Reset),
                Err(e) => return (got, End::Other(e.kind())),
            }
            got.extend_from_slice(&line);
            if line.last() != Some(&b'\n') {
                continue;
            }
            let text = String::from_utf8_lossy(&line).trim_end().to_string();
            if close_on == Some(text.as_str()) {
                return (got, End::Eof);
            }
            if writer.write_all(format!("ok {text}\n").as_bytes()).is_err() {
                return (got, End::Reset);
            }
        }
    })
}

/// BEGIN, INSERT, COMMIT through a `ResetOnReply` on the first COMMIT: the server gets
/// all three lines in full and answers; the client gets the first two answers and then a
/// reset, never the COMMIT's answer.
fn commit_answer_lost(rig: &Rig) {
    let (mut client, server) = rig.connect();
    let server = line_server(server, None);
    let mut answers = Vec::new();
    for line in ["BEGIN", "INSERT 1"] {
        client.write_all(format!("{line}\n").as_bytes()).unwrap();
        let answer = format!("ok {line}\n");
        let got = read_exactly(&mut client, answer.len());
        assert_eq!(String::from_utf8_lossy(&got), answer);
        answers.extend(got);
    }
    client.write_all(b"COMMIT\n").unwrap();
    let (got, end) = read_all(&mut client, PATIENCE);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "",
        "the COMMIT's answer got through"
    );
    assert_eq!(end, End::Reset);
    let (recorded, server_end) = server.join().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&recorded),
        "BEGIN\nINSERT 1\nCOMMIT\n",
        "the server did not get the whole COMMIT"
    );
    assert_eq!(server_end, End::Reset);
}

#[test]
fn reset_on_reply_the_server_gets_the_commit_the_client_never_the_answer() {
    let rig = Rig::new(vec![fault(
        after_pattern(Stream::Up, b"COMMIT", 1),
        FaultAction::ResetOnReply,
    )]);
    commit_answer_lost(&rig);
    let stats = rig.proxy().stats();
    assert_eq!(stats.faults_fired, 1);
    assert_eq!(stats.bytes_down, ("ok BEGIN\nok INSERT 1\n".len()) as u64);
    assert_eq!(stats.bytes_up, ("BEGIN\nINSERT 1\nCOMMIT\n".len()) as u64);
    rig.finish();
}

#[test]
fn reset_on_reply_resets_the_client_when_the_server_closes_first() {
    let rig = Rig::new(vec![fault(
        after_pattern(Stream::Up, b"COMMIT", 1),
        FaultAction::ResetOnReply,
    )]);
    let (mut client, server) = rig.connect();
    let server = line_server(server, Some("COMMIT"));
    client.write_all(b"BEGIN\n").unwrap();
    assert_eq!(read_exactly(&mut client, 9), b"ok BEGIN\n");
    client.write_all(b"COMMIT\n").unwrap();
    let (got, end) = read_all(&mut client, PATIENCE);
    assert!(got.is_empty());
    assert_eq!(end, End::Reset);
    let (recorded, _) = server.join().unwrap();
    assert_eq!(recorded, b"BEGIN\nCOMMIT\n");
    rig.finish();
}

#[test]
fn reset_on_reply_at_once_loses_the_server_greeting() {
    let rig = Rig::new(vec![fault(
        FaultTrigger::Immediately,
        FaultAction::ResetOnReply,
    )]);
    let (mut client, mut server) = rig.connect();
    // The client's bytes still reach the server; the server's first bytes reset both.
    client.write_all(b"hello").unwrap();
    assert_eq!(read_exactly(&mut server, 5), b"hello");
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    server.write_all(b"greetings").unwrap();
    assert_eq!(read_all(&mut client, PATIENCE), (Vec::new(), End::Reset));
    assert_eq!(read_all(&mut server, PATIENCE), (Vec::new(), End::Reset));
    rig.finish();
}

#[test]
fn immediate_reset_and_blackhole() {
    let rig = Rig::new(vec![fault(FaultTrigger::Immediately, FaultAction::Reset)]);
    let (mut client, mut server) = rig.connect();
    assert_eq!(read_all(&mut client, PATIENCE), (Vec::new(), End::Reset));
    assert_eq!(read_all(&mut server, PATIENCE), (Vec::new(), End::Reset));
    assert_eq!(rig.proxy().stats().faults_fired, 1);
    rig.finish();

    let rig = Rig::new(vec![fault(
        after_bytes(Stream::Down, 0),
        FaultAction::Blackhole,
    )]);
    let (mut client, mut server) = rig.connect();
    client.write_all(b"ping").unwrap();
    server.write_all(b"pong").unwrap();
    assert_eq!(read_all(&mut server, QUIET), (Vec::new(), End::Quiet));
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    drop((client, server));
    rig.finish();
}

#[test]
fn connection_filter_leaves_the_other_connections_untouched() {
    let faults = vec![Fault {
        connection: Some(1),
        ..fault(after_bytes(Stream::Down, 3), FaultAction::Reset)
    }];
    let rig = Rig::new(faults);
    let (mut c0, mut s0) = rig.connect();
    let (mut c1, mut s1) = rig.connect();
    let (mut c2, mut s2) = rig.connect();
    for (c, s) in [(&mut c0, &mut s0), (&mut c2, &mut s2)] {
        s.write_all(b"hello").unwrap();
        assert_eq!(read_exactly(c, 5), b"hello");
    }
    s1.write_all(b"hello").unwrap();
    assert_eq!(read_all(&mut c1, PATIENCE), (b"hel".to_vec(), End::Reset));
    // Connection 0 still works both ways, and past connection 1's trigger point.
    c0.write_all(b"again, and longer").unwrap();
    assert_eq!(read_exactly(&mut s0, 17), b"again, and longer");
    s0.write_all(b"answer").unwrap();
    assert_eq!(read_exactly(&mut c0, 6), b"answer");
    assert_eq!(rig.proxy().stats().faults_fired, 1);
    assert_eq!(rig.proxy().fault_fires(), [1]);
    drop((c0, s0, c2, s2));
    rig.finish();
}

#[test]
fn max_fires_limits_fires_across_connections() {
    let faults = vec![Fault {
        max_fires: Some(2),
        ..fault(after_bytes(Stream::Down, 2), FaultAction::Reset)
    }];
    let rig = Rig::new(faults);
    for i in 0..4 {
        let (mut client, mut server) = rig.connect();
        server.write_all(b"hello").unwrap();
        if i < 2 {
            assert_eq!(
                read_all(&mut client, PATIENCE),
                (b"he".to_vec(), End::Reset),
                "#{i}"
            );
        } else {
            assert_eq!(read_exactly(&mut client, 5), b"hello", "#{i}");
        }
    }
    assert_eq!(rig.proxy().stats().faults_fired, 2);
    rig.finish();
}

#[test]
fn max_fires_holds_with_concurrent_connections() {
    let faults = vec![Fault {
        max_fires: Some(3),
        ..fault(after_bytes(Stream::Up, 4), FaultAction::Reset)
    }];
    let rt = runtime();
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), copy_echo_server());
    config.faults = faults;
    let proxy = start(&rt, config);
    let addr = proxy.local_addr();
    let clients: Vec<_> = (0..12)
        .map(|_| {
            thread::spawn(move || {
                let mut conn = TcpStream::connect(addr).unwrap();
                // 4 bytes first: the trigger point falls between the two writes.
                conn.write_all(b"ping").unwrap();
                let mut first = [0u8; 4];
                let r = conn
                    .set_read_timeout(Some(PATIENCE))
                    .and_then(|_| conn.read_exact(&mut first));
                if r.is_err() {
                    return End::Reset;
                }
                let _ = conn.write_all(b"pong");
                let _ = conn.shutdown(std::net::Shutdown::Write);
                let (rest, end) = read_all(&mut conn, PATIENCE);
                match end {
                    End::Eof if rest == b"pong" => End::Eof,
                    End::Eof | End::Reset => End::Reset,
                    other => other,
                }
            })
        })
        .collect();
    let ends: Vec<End> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let resets = ends.iter().filter(|e| **e == End::Reset).count();
    let clean = ends.iter().filter(|e| **e == End::Eof).count();
    assert_eq!((resets, clean), (3, 9), "{ends:?}");
    assert_eq!(proxy.stats().faults_fired, 3);
    assert_eq!(proxy.fault_fires(), [3]);
    eventually("every connection is closed", || proxy.stats().active == 0);
    assert_eq!(proxy_panics(), 0);
}

#[test]
fn faults_fire_at_the_same_bytes_through_delay_lines() {
    for (name, tune) in delays() {
        let rig = Rig::with(
            vec![fault(after_bytes(Stream::Down, 10), FaultAction::Reset)],
            tune,
        );
        reset_after_ten_down_bytes(&rig);
        rig.finish();

        let rig = Rig::with(
            vec![fault(
                after_pattern(Stream::Up, b"COMMIT", 1),
                FaultAction::ResetOnReply,
            )],
            tune,
        );
        commit_answer_lost(&rig);
        rig.finish();

        let rig = Rig::with(
            vec![fault(after_bytes(Stream::Up, 3), FaultAction::Stall)],
            tune,
        );
        let (mut client, mut server) = rig.connect();
        client.write_all(b"abcdef").unwrap();
        assert_eq!(read_exactly(&mut server, 3), b"abc", "{name}");
        assert_eq!(
            read_all(&mut server, QUIET),
            (Vec::new(), End::Quiet),
            "{name}"
        );
        drop(client);
        assert!(matches!(
            read_all(&mut server, PATIENCE).1,
            End::Eof | End::Reset
        ));
        rig.finish();
    }
}

#[test]
fn a_delayed_trigger_fires_when_its_bytes_are_written() {
    // 50 ms on the way down: the client gets the 10 bytes after the delay, and only then
    // the reset (the trigger is applied where the bytes are written, not read).
    let delay = Duration::from_millis(50);
    let rig = Rig::with(
        vec![fault(after_bytes(Stream::Down, 10), FaultAction::Reset)],
        |c| {
            c.delay = delay;
            c.direction = Direction::Down;
        },
    );
    let (mut client, mut server) = rig.connect();
    let t0 = Instant::now();
    server.write_all(&stream(3, 100)).unwrap();
    let (got, end) = read_all(&mut client, PATIENCE);
    let waited = t0.elapsed();
    assert_eq!((got, end), (stream(3, 10), End::Reset));
    assert!(
        waited >= delay - Duration::from_millis(1),
        "after {waited:?}"
    );
    rig.finish();
}

#[test]
fn the_first_trigger_reached_wins() {
    let rig = Rig::new(vec![
        fault(after_bytes(Stream::Down, 50), FaultAction::Reset),
        fault(after_pattern(Stream::Down, b"X", 1), FaultAction::Stall),
    ]);
    let (mut client, mut server) = rig.connect();
    server
        .write_all(b"abcX and on and on and on and on and on and on and on")
        .unwrap();
    assert_eq!(read_exactly(&mut client, 4), b"abcX");
    assert_eq!(read_all(&mut client, QUIET), (Vec::new(), End::Quiet));
    assert_eq!(rig.proxy().fault_fires(), [0, 1]);
    drop((client, server));
    rig.finish();
}

#[test]
fn bad_fault_configurations_are_refused() {
    let rt = runtime();
    let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for (bad, expect) in [
        (
            fault(after_pattern(Stream::Up, b"", 1), FaultAction::Reset),
            "pattern is empty",
        ),
        (
            fault(after_pattern(Stream::Up, b"COMMIT", 0), FaultAction::Reset),
            "occurrence 0",
        ),
        (
            Fault {
                max_fires: Some(0),
                ..fault(FaultTrigger::Immediately, FaultAction::Stall)
            },
            "max_fires 0",
        ),
    ] {
        let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream);
        config.faults = vec![fault(FaultTrigger::Immediately, FaultAction::Reset), bad];
        let err = rt.block_on(Proxy::start(config)).unwrap_err();
        assert!(matches!(err, ProxyError::Config(_)), "{err}");
        let message = err.to_string();
        assert!(message.contains("fault 2"), "{message}");
        assert!(message.contains(expect), "{message}");
    }
}
