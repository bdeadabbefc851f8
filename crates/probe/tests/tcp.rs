//! TCP connect RTT on 127.0.0.1 only: to a listener the test opens, and to a port the
//! test has just closed.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tsload_probe::{ProbeKind, TcpOptions, connect_rtt};

#[tokio::test]
async fn connects_to_a_local_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut accepted = 0u32;
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
            accepted += 1;
            if accepted == 100 {
                break;
            }
        }
        accepted
    });
    let mut o = TcpOptions::new(addr, 100);
    o.interval = Duration::ZERO;
    let r = connect_rtt(&o).await.unwrap();
    println!("{}", r.render_text());
    assert_eq!(r.kind, ProbeKind::Tcp);
    assert_eq!(r.target, addr.to_string());
    assert_eq!((r.transmitted, r.received, r.errors), (100, 100, 0));
    assert_eq!(r.loss_pct, 0.0);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(r.latency.min_ms > 0.0 && r.avg_ms <= r.max_ms, "{r:?}");
    assert_eq!(r.latency.count, 100);
    assert_eq!(server.await.unwrap(), 100);
}

#[tokio::test]
async fn a_closed_port_counts_every_attempt_as_refused() {
    // A port that was just free on 127.0.0.1 and is closed again.
    let addr: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut o = TcpOptions::new(addr, 20);
    o.interval = Duration::from_millis(1);
    let r = connect_rtt(&o).await.unwrap();
    println!("{}", r.render_text());
    assert_eq!((r.transmitted, r.received, r.errors), (20, 0, 20));
    assert_eq!(r.loss_pct, 100.0);
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    assert_eq!(r.failures["connection refused"], 20);
    assert_eq!(r.latency.count, 0);
    let text = r.render_text();
    assert!(
        text.contains("20 probes transmitted, 0 received, +20 errors, 100% loss"),
        "{text}"
    );
    assert!(text.contains("failures: connection refused 20"), "{text}");
}

#[tokio::test]
async fn interval_paces_connects() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut o = TcpOptions::new(addr, 4);
    o.interval = Duration::from_millis(15);
    let r = connect_rtt(&o).await.unwrap();
    drop(listener);
    assert_eq!((r.transmitted, r.received), (4, 4));
    assert!(r.elapsed >= Duration::from_millis(45), "{:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_millis(100), "{:?}", r.elapsed);
}
