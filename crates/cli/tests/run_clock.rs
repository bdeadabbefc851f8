//! One run clock: `-d` and SIGTERM end a run whatever is in flight. A silent server
//! (started here: it answers the set-up and then takes every write or query and never
//! answers) holds requests for longer than the run; each run must end within its duration
//! plus its drain (or a signal plus its grace), count what it gave up on as unknown, write its report and say so in its
//! exit code. A hostile PostgreSQL (its first answer declares a 2 GB message, then
//! silence) must be refused at once, not read into memory; answers held by all workers
//! together stop at the process's answer budget.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: its own servers and files are not tsload's output"
)]

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tsload_testbed::http_front::Request;

mod common;
use common::{json, text, tsload};

/// What a busy machine may add to a run's end: far below the request timeouts the runs
/// are given (60 s), which were what a run waited for before.
const SLACK: Duration = Duration::from_secs(12);

/// An HTTP server that speaks just enough InfluxDB 1.x for tsload to start (ping, CREATE
/// DATABASE, no statistics or metrics) and then never answers a write or a query. Each request it
/// holds is told on the channel.
fn silent_influx() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || serve(stream, &tx));
        }
    });
    (format!("http://{addr}"), rx)
}

fn serve(stream: TcpStream, held: &mpsc::Sender<String>) {
    answer_each(stream, |r, out| {
        let answer = if r.is("GET", "/ping") {
            "HTTP/1.1 204 No Content\r\n\r\n"
        } else if r.is("POST", "/query") {
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 34\r\n\r\n{\"results\":[{\"statement_id\":0}]}\r\n"
        } else if ["/debug/vars", "/metrics", "/exec"]
            .iter()
            .any(|p| r.is("GET", p))
        {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
        } else {
            // A write or a query: taken, never answered (the connection stays open).
            let _ = held.send(r.head.lines().next().unwrap_or_default().to_string());
            std::thread::sleep(Duration::from_secs(3600));
            return false;
        };
        out.write_all(answer.as_bytes()).is_ok()
    });
}

/// Serves every request of `stream` with `answer`, until it returns false or the client
/// closes.
fn answer_each(stream: TcpStream, mut answer: impl FnMut(&Request, &mut TcpStream) -> bool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some(request) = Request::read(&mut reader) {
        if !answer(&request, &mut out) {
            return;
        }
    }
}

fn write_run(url: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = tsload();
    cmd.args(["run", "--target", url, "--progress", "none"])
        .args([
            "--set",
            "target.kind=\"influx\"",
            "--set",
            "target.timeout=\"60s\"",
        ])
        .args(["--set", "load.workers=2", "--set", "load.batch=100"])
        .args(extra);
    cmd
}

fn finished(child: Child) -> (Output, Duration) {
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    (out, started.elapsed())
}

/// `-d 2s` against a server that never answers a write: the run ends at its duration plus
/// its drain (it waited for the 60 s request timeout and its retries), its report counts
/// the writes in flight as abandoned and their rows as unknown, and it exits 1.
#[test]
fn a_duration_ends_a_write_run_whose_requests_never_come_back() {
    let (url, held) = silent_influx();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = write_run(
        &url,
        &["-d", "2s", "--set", "load.drain=\"1s\"", "--json", "r.json"],
    )
    .current_dir(dir.path())
    .output()
    .unwrap();
    let took = started.elapsed();
    assert!(
        held.try_recv().is_ok(),
        "no write reached the silent server"
    );
    assert!(
        took < Duration::from_secs(3) + SLACK,
        "took {took:?}: {}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("still unanswered 1s after the run's end"),
        "{}",
        text(&out.stderr)
    );
    let r = json(&dir.path().join("r.json"));
    assert_eq!(r["stop_reason"], "duration", "{r}");
    assert_eq!(r["abandoned_requests"], 2, "{r}");
    assert_eq!(r["failed_rows"], 200, "{r}");
    assert_eq!(r["ambiguous_rows"], 200, "{r}");
    assert_eq!(r["exit"]["code"], 1, "{r}");
}

/// SIGTERM while requests hang: the run ends within its grace of the signal (not at its
/// 60 s duration or request timeout), writes its report, and exits 143.
#[test]
fn sigterm_ends_a_run_within_its_grace_whatever_is_in_flight() {
    let (url, held) = silent_influx();
    let dir = tempfile::tempdir().unwrap();
    let child = write_run(&url, &["-d", "60s", "--grace", "1s", "--json", "r.json"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run is under way (its signal handlers are in place) once a write is held, and
    // both workers' writes are in flight once two are.
    for _ in 0..2 {
        held.recv_timeout(Duration::from_secs(60))
            .expect("no write reached the silent server");
    }
    let signalled = Instant::now();
    // SAFETY: kill(2) on the child's own pid, which it still holds (not yet waited for).
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let (out, _) = finished(child);
    let took = signalled.elapsed();
    assert!(
        took < Duration::from_secs(1) + SLACK,
        "took {took:?} after SIGTERM: {}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    let r = json(&dir.path().join("r.json"));
    assert_eq!(r["exit"]["code"], 143, "{r}");
    assert_eq!(r["abandoned_requests"], 2, "{r}");
    assert_eq!(r["ambiguous_rows"], 200, "{r}");
}

/// A query run against a server that never answers a query: `query.duration` ends it
/// within its drain (it waited for the 60 s query timeout).
#[test]
fn a_duration_ends_a_query_run_whose_answers_never_come() {
    let (url, held) = silent_influx();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = write_run(
        &url,
        &[
            "--set",
            "mode=\"query\"",
            "--set",
            "query.kind=\"tsbs\"",
            "--set",
            "query.types=[\"single-groupby-1-1-1\"]",
            "--set",
            "query.duration=\"2s\"",
            "--set",
            "query.timeout=\"60s\"",
            "--set",
            "load.drain=\"1s\"",
            "--json",
            "q.json",
        ],
    )
    .current_dir(dir.path())
    .output()
    .unwrap();
    let took = started.elapsed();
    assert!(
        held.try_recv().is_ok(),
        "no query reached the silent server"
    );
    assert!(
        took < Duration::from_secs(3) + SLACK,
        "took {took:?}: {}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r = json(&dir.path().join("q.json"));
    assert_eq!(r["abandoned_requests"], 1, "{r}");
    assert!(
        r["exit"]["why"].as_str().unwrap().contains("abandoned"),
        "{r}"
    );
}

/// A PostgreSQL whose first answer declares a 2 GB authentication message and then says
/// nothing: a TSBS query run with 2 workers is refused at once, naming the cap, in little
/// memory (it took 4.2 GB). Peak memory is the largest of this test process's waited
/// children (getrusage), so any tsload this binary ran counts: all are small.
#[test]
fn a_hostile_postgres_is_refused_at_once_in_little_memory() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            std::thread::spawn(move || {
                // The startup message (or an SSL request, answered 'N' first).
                let mut head = [0u8; 8];
                if s.read_exact(&mut head).is_err() {
                    return;
                }
                let len = u32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
                let mut rest = vec![0; len.saturating_sub(8)];
                let _ = s.read_exact(&mut rest);
                if head[4..8] == [0x04, 0xd2, 0x16, 0x2f] {
                    let _ = s.write_all(b"N");
                    let mut head = [0u8; 4];
                    if s.read_exact(&mut head).is_err() {
                        return;
                    }
                    let len = u32::from_be_bytes(head) as usize;
                    let mut rest = vec![0; len.saturating_sub(4)];
                    let _ = s.read_exact(&mut rest);
                }
                // 'R', length 0x7ffffff0, then silence.
                let _ = s.write_all(&[b'R', 0x7f, 0xff, 0xff, 0xf0, 0, 0, 0, 0]);
                std::thread::sleep(Duration::from_secs(3600));
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = tsload()
        .args(["run", "--progress", "none"])
        .args(["--set", "target.kind=\"postgres\""])
        .args(["--set", &format!("target.url=\"postgres://u@{addr}/db\"")])
        .args(["--set", "mode=\"query\"", "--set", "query.kind=\"tsbs\""])
        .args(["--set", "query.types=[\"single-groupby-1-1-1\"]"])
        .args(["--set", "query.workers=2", "--set", "query.queries=4"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(took < SLACK, "took {took:?}: {stderr}");
    assert!(stderr.contains("MiB"), "the cap is not named: {stderr}");
    // SAFETY: getrusage fills the struct it is given.
    #[allow(unsafe_code)]
    let peak_kib = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage.ru_maxrss
    };
    assert!(
        peak_kib < 512 * 1024,
        "a tsload child of this test peaked at {peak_kib} KiB"
    );
}

/// An InfluxDB whose every query answer is 60 MiB, its last byte held back 8 s: 8 workers
/// would hold 480 MiB of answers at once (each answer is under the 64 MiB cap of one). The
/// process's answer budget (256 MiB for all workers together) refuses the answers past it,
/// naming the cap, and the process stays far below 480 MiB.
#[test]
fn answers_held_at_once_by_all_workers_stop_at_the_process_cap() {
    const BODY: usize = 60 << 20;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                answer_each(stream, |r, out| {
                    if r.is("GET", "/ping") {
                        return out.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_ok();
                    }
                    if !r.is("GET", "/query") {
                        let body = "{\"results\":[{\"statement_id\":0}]}";
                        let status = if r.is("POST", "/query") {
                            "200 OK"
                        } else {
                            "404 Not Found"
                        };
                        return write!(
                            out,
                            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .is_ok();
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {BODY}\r\n\r\n"
                    );
                    let mut answer = vec![b' '; BODY];
                    answer[..2].copy_from_slice(b"{}");
                    if out.write_all(head.as_bytes()).is_err()
                        || out.write_all(&answer[..BODY - 1]).is_err()
                    {
                        return false;
                    }
                    std::thread::sleep(Duration::from_secs(8));
                    out.write_all(&answer[BODY - 1..]).is_ok()
                });
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args(["run", "--progress", "none", "--json", "q.json"])
        .args(["--target", &format!("http://{addr}")])
        .args(["--set", "target.kind=\"influx\"", "--set", "mode=\"query\""])
        .args(["--set", "query.kind=\"tsbs\""])
        .args(["--set", "query.types=[\"single-groupby-1-1-1\"]"])
        .args(["--set", "query.workers=8", "--set", "query.queries=8"])
        .args(["--set", "query.timeout=\"60s\""])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    let r = json(&dir.path().join("q.json"));
    assert_eq!(
        r["requests"].as_u64().unwrap() + r["failed_requests"].as_u64().unwrap(),
        8,
        "{r}"
    );
    assert!(r["failed_requests"].as_u64().unwrap() >= 4, "{r}\n{stderr}");
    assert!(
        stderr.contains("268435456 bytes (tsload's cap for all workers together"),
        "{stderr}"
    );
    // SAFETY: getrusage fills the struct it is given.
    #[allow(unsafe_code)]
    let peak_kib = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage.ru_maxrss
    };
    assert!(
        peak_kib < 400 * 1024,
        "a tsload child of this test peaked at {peak_kib} KiB"
    );
}
