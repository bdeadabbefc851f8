//! Application RTT against a tiny HTTP/1.1 server on 127.0.0.1 written here: 204 to
//! `/ping`, 204 to the first `/busy` on a connection and 503 to the next ones, 404 to
//! anything else; connections kept alive.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tsload_probe::app::INFLUXDB_PING;
use tsload_probe::{AppOptions, HttpPing, ProbeError, ProbeKind, http_rtt, run_app};

struct Server {
    base: String,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

async fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let (c, r) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, r.clone()));
        }
    });
    Server {
        base,
        connections,
        requests,
    }
}

async fn serve(mut stream: TcpStream, requests: Arc<AtomicUsize>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    let mut busy = 0;
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        requests.fetch_add(1, Ordering::SeqCst);
        let answer: &[u8] = match head.split_whitespace().nth(1) {
            Some("/ping") => b"HTTP/1.1 204 No Content\r\n\r\n",
            Some("/busy") => {
                busy += 1;
                if busy == 1 {
                    b"HTTP/1.1 204 No Content\r\n\r\n"
                } else {
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy"
                }
            }
            _ => b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nnot found",
        };
        if stream.write_all(answer).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn http_ping_200_times_on_one_connection() {
    let s = server().await;
    let url = format!("{}{INFLUXDB_PING}", s.base);
    let mut opts = AppOptions::new(200);
    opts.interval = Duration::ZERO;
    let r = http_rtt(&url, &opts).await.unwrap();
    println!("{}", r.render_text());
    assert_eq!(r.kind, ProbeKind::Http);
    assert_eq!(r.target, url);
    assert_eq!((r.transmitted, r.received, r.errors), (200, 200, 0));
    assert_eq!(r.loss_pct, 0.0);
    assert_eq!(r.latency.count, 200);
    assert!(r.min_ms > 0.0 && r.avg_ms <= r.max_ms, "{r:?}");
    // One untimed GET to open the connection, 200 timed ones, all on it.
    assert_eq!(s.requests.load(Ordering::SeqCst), 201);
    assert_eq!(s.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn error_statuses_are_errors() {
    let s = server().await;
    let e = HttpPing::connect(
        &format!("{}/nope", s.base),
        Duration::from_secs(2),
        &Default::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(e, ProbeError::HttpStatus { status: 404, .. }),
        "{e}"
    );

    // A server that starts failing: each failure is an error with its status, and the
    // connection stays up (the error bodies are read).
    let mut ping = HttpPing::connect(
        &format!("{}/busy", s.base),
        Duration::from_secs(2),
        &Default::default(),
    )
    .await
    .unwrap();
    let mut opts = AppOptions::new(3);
    opts.interval = Duration::ZERO;
    let target = ping.target().to_string();
    let r = run_app(&mut ping, ProbeKind::Http, &target, &opts)
        .await
        .unwrap();
    println!("{}", r.render_text());
    assert_eq!((r.transmitted, r.received, r.errors), (3, 0, 3));
    assert_eq!(r.failures["http 503"], 3);
    assert_eq!(s.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn http_connect_to_a_closed_port_fails_cleanly() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let e = HttpPing::connect(
        &format!("http://{addr}/ping"),
        Duration::from_secs(2),
        &Default::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, ProbeError::Http { .. }), "{e}");
    assert_eq!(e.reason(), "connect error");
}
