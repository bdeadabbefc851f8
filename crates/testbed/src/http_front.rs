//! An HTTP/1.1 front for a testbed server that answers a storm of errors first: the first
//! `failures` POST requests (writes) get `status` (with `Retry-After` when asked), the
//! rest pass through to the server unchanged. Faults are counted by request, so tests are
//! deterministic.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the front answers to the first requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storm {
    /// HTTP status of the injected answers (e.g. 429, 500, 503).
    pub status: u16,
    /// `Retry-After` in seconds on the injected answers.
    pub retry_after: Option<u32>,
    /// How many requests get the injected answer before the others pass through.
    pub failures: usize,
    /// A `Location` header on the injected answers (for redirects).
    pub location: Option<&'static str>,
    /// The injected answers' body length: `injected failure`, then 'x' up to this many
    /// bytes, written while the client reads (a body larger than memory is never built).
    pub body_bytes: usize,
}

impl Storm {
    /// `failures` answers of `status`, no `Retry-After`, a short body.
    pub fn of(status: u16, failures: usize) -> Storm {
        Storm {
            status,
            retry_after: None,
            failures,
            location: None,
            body_bytes: 0,
        }
    }
}

/// A running front: its URL and the number of requests it has seen.
#[derive(Debug, Clone)]
pub struct HttpFront {
    pub url: String,
    seen: Arc<AtomicUsize>,
}

impl HttpFront {
    /// Listens on 127.0.0.1 (a free port) and serves every connection on its own thread
    /// for as long as the test process lives.
    pub fn start(upstream: SocketAddr, storm: Storm) -> HttpFront {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let counter = counter.clone();
                std::thread::spawn(move || serve(conn, upstream, storm, &counter));
            }
        });
        HttpFront { url, seen }
    }

    /// POST requests seen so far, injected answers included.
    pub fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        302 => "Found",
        303 => "See Other",
        400 => "Bad Request",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Injected",
    }
}

/// One HTTP/1.1 request as a test server reads it: the request line and headers as sent
/// (`head`, ending with the blank line) and the body of its `Content-Length`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub head: String,
    pub body: Vec<u8>,
}

impl Request {
    /// The next request on `reader`; `None` when the client closes or a read fails.
    pub fn read(reader: &mut impl BufRead) -> Option<Request> {
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            let end = line == "\r\n";
            head.push_str(&line);
            if end {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        Some(Request { head, body })
    }

    /// Whether the request line starts with `method` and `path` (a prefix of the path).
    pub fn is(&self, method: &str, path: &str) -> bool {
        self.head
            .strip_prefix(method)
            .and_then(|r| r.strip_prefix(' '))
            .is_some_and(|r| r.starts_with(path))
    }
}

/// Serves one client connection until it closes (or a read fails).
fn serve(conn: TcpStream, upstream: SocketAddr, storm: Storm, seen: &AtomicUsize) {
    let Ok(read_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut conn = conn;
    while let Some(Request { head, body }) = Request::read(&mut reader) {
        // Only writes (POST) meet the storm: the client's reads of the server's own
        // figures (GET /metrics, /debug/vars) pass through and are not counted.
        let post = head.starts_with("POST ");
        if post && seen.fetch_add(1, Ordering::SeqCst) < storm.failures {
            let msg = "injected failure";
            let retry = storm
                .retry_after
                .map(|s| format!("retry-after: {s}\r\n"))
                .unwrap_or_default();
            let location = storm
                .location
                .map(|l| format!("location: {l}\r\n"))
                .unwrap_or_default();
            let length = storm.body_bytes.max(msg.len());
            let answer = format!(
                "HTTP/1.1 {} {}\r\n{retry}{location}content-length: {length}\r\n\r\n{msg}",
                storm.status,
                reason(storm.status),
            );
            if conn.write_all(answer.as_bytes()).is_err() {
                return;
            }
            let piece = vec![b'x'; 64 * 1024];
            let mut left = length - msg.len();
            while left > 0 {
                let n = left.min(piece.len());
                if conn.write_all(&piece[..n]).is_err() {
                    return;
                }
                left -= n;
            }
            continue;
        }
        // Pass the request through unchanged on a fresh upstream connection.
        let Ok(mut up) = TcpStream::connect(upstream) else {
            return;
        };
        let head = format!(
            "{}\r\nconnection: close\r\n\r\n",
            head.trim_end_matches("\r\n")
        );
        let mut answer = Vec::new();
        if up.write_all(head.as_bytes()).is_err()
            || up.write_all(&body).is_err()
            || up.read_to_end(&mut answer).is_err()
        {
            return;
        }
        // Keep our own connection open: strip a `connection: close` from the answer.
        let answer = String::from_utf8_lossy(&answer)
            .replace("Connection: close\r\n", "")
            .replace("connection: close\r\n", "");
        if conn.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}
