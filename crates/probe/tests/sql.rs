//! `SELECT 1` RTT against a real server on 127.0.0.1, given by URL in the environment:
//! `TSLOAD_PROBE_PG_URL` (e.g. `postgres://postgres@127.0.0.1:5432/postgres`) and
//! `TSLOAD_PROBE_MYSQL_URL` (e.g. `mysql://root@127.0.0.1:3306/mysql`). No server is
//! started here; run by hand with `cargo test -p tsload-probe --test sql -- --ignored`.

use std::time::Duration;

use tsload_probe::{AppOptions, ProbeKind, sql_rtt};

fn url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("set {var} to a server's URL to run this test"))
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

#[tokio::test]
#[ignore = "needs a PostgreSQL server: TSLOAD_PROBE_PG_URL"]
async fn postgres_select_1() {
    select_1_200_times(&url("TSLOAD_PROBE_PG_URL")).await;
}

#[tokio::test]
#[ignore = "needs a MySQL/MariaDB server: TSLOAD_PROBE_MYSQL_URL"]
async fn mysql_select_1() {
    select_1_200_times(&url("TSLOAD_PROBE_MYSQL_URL")).await;
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
