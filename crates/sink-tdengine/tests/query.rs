//! Runs queries through the TDengine read target against a real TDengine (through
//! taosAdapter): row counts, affected rows, and an error that names its statement and
//! leaves the session usable.
//!
//! Needs a server: set `TSLOAD_TDENGINE_DSN` (e.g. `ws://root:taosdata@127.0.0.1:6041`, no
//! database path) and run `cargo test -p tsload-sink-tdengine -- --ignored`. The test
//! creates and drops the database `tsload_it_query`.

use taos::{AsyncQueryable, AsyncTBuilder, TaosBuilder};
use tsload_core::{ErrorKind, QueryAck, QueryConn, QueryRequest, QueryTarget, Statement};
use tsload_sink_tdengine::{TdengineConfig, TdengineQueryTarget, redact_dsn};

const DSN_VAR: &str = "TSLOAD_TDENGINE_DSN";
const DB: &str = "tsload_it_query";
const ROWS: u64 = 20;

fn one(text: &str) -> QueryRequest {
    QueryRequest {
        kind: 0,
        statements: vec![Statement::new(text)],
        transaction: false,
        ..Default::default()
    }
}

fn ack(rows: u64, statements: u64) -> QueryAck {
    QueryAck { rows, statements }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a TDengine server: set TSLOAD_TDENGINE_DSN"]
async fn tdengine_server_queries() {
    let Ok(dsn) = std::env::var(DSN_VAR) else {
        let msg = format!(
            "tdengine_server_queries DID NOT RUN: {DSN_VAR} is not set. Point it at \
             taosAdapter (e.g. ws://root:taosdata@127.0.0.1:6041) to run it."
        );
        eprintln!("\n!!!!! {msg}\n");
        panic!("{msg}");
    };
    eprintln!("tdengine_server_queries: using {}", redact_dsn(&dsn));
    let admin = <TaosBuilder as AsyncTBuilder>::from_dsn(&dsn)
        .expect("DSN")
        .build()
        .await
        .expect("admin session");
    admin
        .exec(format!("DROP DATABASE IF EXISTS {DB}"))
        .await
        .expect("drop");
    admin
        .exec(format!("CREATE DATABASE {DB}"))
        .await
        .expect("create database");

    let mut cfg = TdengineConfig::new(&dsn);
    cfg.database = DB.to_string();
    let target = TdengineQueryTarget::new(&cfg).expect("config");
    let mut conn = target.connect(0).await.expect("connect");

    let created = conn
        .execute(&one(
            "CREATE STABLE meters (ts TIMESTAMP, v DOUBLE) TAGS (host VARCHAR(16))",
        ))
        .await
        .expect("create stable");
    assert_eq!(created, ack(0, 1));
    let mut insert = String::from("INSERT INTO d0 USING meters TAGS ('h0') VALUES ");
    for i in 0..ROWS {
        insert.push_str(&format!("({}, {i}.5) ", 1_500_000_000_000 + i * 1000));
    }
    assert_eq!(
        conn.execute(&one(&insert)).await.expect("insert"),
        ack(ROWS, 1)
    );
    assert_eq!(
        conn.execute(&one("SELECT * FROM meters"))
            .await
            .expect("select"),
        ack(ROWS, 1)
    );
    assert_eq!(
        conn.execute(&one("SELECT COUNT(*) FROM meters"))
            .await
            .expect("count"),
        ack(1, 1)
    );

    let err = conn
        .execute(&one("SELECT * FROM no_such_table"))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(
        err.message
            .starts_with("statement 1 `SELECT * FROM no_such_table`"),
        "{err}"
    );
    assert_eq!(
        conn.execute(&one("SELECT * FROM meters WHERE v > 10"))
            .await
            .expect("the session goes on"),
        ack(ROWS - 10, 1)
    );

    admin
        .exec(format!("DROP DATABASE IF EXISTS {DB}"))
        .await
        .expect("drop");
}
