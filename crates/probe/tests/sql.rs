//! `SELECT 1` RTT against real PostgreSQL and MariaDB servers that the testbed starts on
//! 127.0.0.1 (schemes in any case), and a clean failure against a closed port.

use std::time::Duration;

use tsload_probe::{AppOptions, ProbeKind, sql_rtt};
use tsload_testbed::{Server, ServerKind};

fn url(kind: ServerKind) -> (Server, String) {
    let server = Server::start(kind).unwrap_or_else(|e| panic!("{kind} did not start: {e}"));
    let url = server.database_url().expect("an SQL server has a URL");
    (server, url)
}

async fn select_1_200_times(url: &str) {
    let mut opts = AppOptions::new(200);
    opts.interval = Duration::ZERO;
    let r = sql_rtt(url, &opts).await.unwrap();
    println!("{}", r.render_text());
    assert_eq!(r.kind, ProbeKind::Sql);
    assert_eq!((r.transmitted, r.received, r.errors), (200, 200, 0));
    assert!(r.min_ms > 0.0 && r.avg_ms <= r.max_ms, "{r:?}");
}

/// `url` with its scheme replaced by `scheme` (schemes are case-insensitive).
fn with_scheme(url: &str, scheme: &str) -> String {
    format!("{scheme}://{}", url.split_once("://").unwrap().1)
}

#[tokio::test]
async fn postgres_select_1() {
    let (_server, url) = url(ServerKind::Postgres);
    select_1_200_times(&url).await;
    select_1_200_times(&with_scheme(&url, "PostgreSQL")).await;
}

#[tokio::test]
async fn mysql_select_1() {
    let (_server, url) = url(ServerKind::MariaDb);
    select_1_200_times(&url).await;
    select_1_200_times(&with_scheme(&url, "MariaDB")).await;
}

#[tokio::test]
async fn a_closed_port_fails_cleanly() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut opts = AppOptions::new(1);
    opts.timeout = Duration::from_secs(5);
    for scheme in ["postgres", "mysql"] {
        let e = sql_rtt(&format!("{scheme}://u:secret@{addr}/db"), &opts)
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(e.reason(), "connection refused", "{scheme}: {text}");
    }
}
