//! End-to-end tests of the HTTP read target against real servers started by the testbed:
//! InfluxQL on InfluxDB 1.x, PromQL on VictoriaMetrics and SQL on QuestDB, each with
//! known data: row and sample counts, errors (also InfluxDB's errors inside a 200 answer)
//! that name their statement and leave the connection usable, and a killed server.

use tsload_core::{ErrorKind, Param, QueryConn, QueryTarget, SinkError, Statement};
use tsload_http::{HttpQueryConn, QueryApi};
use tsload_sink_influx::{InfluxConfig, InfluxSink};
use tsload_testbed::query_checks::{ack, assert_error, assert_rejected, one, request};
use tsload_testbed::{Server, ServerKind};

/// Points per host; two hosts.
const POINTS: u64 = 60;
/// 2016-01-01T00:00:00Z, as TSBS starts.
const START_MS: i64 = 1_451_606_400_000;
const STEP_MS: i64 = 10_000;
const DB: &str = "bench";

/// `cpu,host=h0|h1 usage_user=..,usage_system=..` every 10 s from START_MS.
fn lines() -> String {
    let mut out = String::new();
    for host in 0..2 {
        for i in 0..POINTS as i64 {
            let ts_ns = (START_MS + i * STEP_MS) * 1_000_000;
            out.push_str(&format!(
                "cpu,host=h{host} usage_user={},usage_system={} {ts_ns}\n",
                i + host * 100,
                i as f64 / 2.0
            ));
        }
    }
    out
}

async fn open(server: &Server, db: &str, api: QueryApi) -> HttpQueryConn {
    let cfg = InfluxConfig::v1(server.base_url(), db);
    let target = InfluxSink::new(cfg).unwrap().reader(api);
    target.connect(0).await.unwrap()
}

/// HTTP has no transactions, and these APIs take no bind parameters.
async fn refuses_transactions_and_parameters(conn: &mut HttpQueryConn, text: &str) {
    let err = conn
        .execute(&request(vec![Statement::new(text)], true))
        .await
        .unwrap_err();
    assert_error(&err, ErrorKind::Rejected, &["no transactions"]);
    let with_params = Statement::with_params(text, vec![Param::Text("x".into())]);
    let err = conn
        .execute(&request(vec![with_params], false))
        .await
        .unwrap_err();
    assert_rejected(&err, "statement 1", "no bind parameters");
}

/// After an error the run goes on: `SELECT * FROM cpu` reads every point, and
/// transactions and parameters are refused; then, the server killed, that query is a
/// connection error naming it (returned for more checks).
async fn goes_on_until_the_server_is_killed(
    server: &mut Server,
    conn: &mut HttpQueryConn,
) -> SinkError {
    let all = one("SELECT * FROM cpu");
    assert_eq!(conn.execute(&all).await.unwrap(), ack(2 * POINTS, 1));
    refuses_transactions_and_parameters(conn, "SELECT * FROM cpu").await;
    server.kill();
    let err = conn.execute(&all).await.unwrap_err();
    assert_error(
        &err,
        ErrorKind::Connection,
        &["statement 1 `SELECT * FROM cpu`"],
    );
    err
}

#[tokio::test]
async fn influxql_counts_points_of_every_series() {
    let mut server = Server::start(ServerKind::InfluxDb1).unwrap();
    server.influx_create_db(DB).unwrap();
    server.write_lines(Some(DB), &lines()).unwrap();
    let mut conn = open(&server, DB, QueryApi::InfluxQl).await;

    assert_eq!(
        conn.execute(&one("SELECT * FROM cpu")).await.unwrap(),
        ack(2 * POINTS, 1)
    );
    // Two series (GROUP BY), and two statements in one request.
    let two = request(
        vec![
            Statement::new("SELECT usage_user FROM cpu WHERE host = 'h0'"),
            Statement::new(
                "SELECT max(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' \
                 AND time < '2016-01-01T00:10:00Z' GROUP BY host, time(1m)",
            ),
        ],
        false,
    );
    assert_eq!(conn.execute(&two).await.unwrap(), ack(POINTS + 2 * 10, 2));
    assert_eq!(
        conn.execute(&one("SELECT * FROM nothing_here"))
            .await
            .unwrap(),
        ack(0, 1)
    );
    // Not a SELECT: sent by POST, as InfluxDB requires.
    assert_eq!(
        conn.execute(&one("CREATE DATABASE other")).await.unwrap(),
        ack(0, 1)
    );
    let shown = conn.execute(&one("SHOW DATABASES")).await.unwrap();
    assert!(shown.rows >= 2, "{shown:?}");

    // A syntax error: HTTP 400.
    let err = conn.execute(&one("SELEC * FROM cpu")).await.unwrap_err();
    assert_rejected(
        &err,
        "statement 1 `SELEC * FROM cpu`",
        "error parsing query",
    );
    // An error inside a 200 answer.
    let mut missing = open(&server, "nope", QueryApi::InfluxQl).await;
    let err = missing
        .execute(&one("SELECT * FROM cpu"))
        .await
        .unwrap_err();
    assert_rejected(
        &err,
        "statement 1 `SELECT * FROM cpu`",
        "database not found: nope",
    );
    // The run goes on, until the server is killed.
    let err = goes_on_until_the_server_is_killed(&mut server, &mut conn).await;
    assert!(err.message.contains("/query"), "{err}");
    assert!(!err.message.contains("q=SELECT"), "{err}");
}

#[tokio::test]
async fn promql_counts_samples_of_range_and_instant_queries() {
    let mut server = Server::start(ServerKind::VictoriaMetrics).unwrap();
    server.write_lines(None, &lines()).unwrap();
    server.vm_flush();
    assert_eq!(
        server.vm_sample_count(r#"{__name__="cpu_usage_user"}"#),
        2 * POINTS
    );
    let mut conn = open(&server, DB, QueryApi::PromQl).await;

    let end_ms = START_MS + (POINTS as i64 - 1) * STEP_MS;
    let range = |expr: &str, step_s: i64| {
        request(
            vec![Statement::with_params(
                expr,
                vec![Param::Int(START_MS), Param::Int(end_ms), Param::Int(step_s)],
            )],
            false,
        )
    };
    // One sample per step and series: 60 steps of 10 s over two series.
    assert_eq!(
        conn.execute(&range("cpu_usage_user", 10)).await.unwrap(),
        ack(2 * POINTS, 1)
    );
    assert_eq!(
        conn.execute(&range(r#"cpu_usage_user{host="h1"}"#, 10))
            .await
            .unwrap(),
        ack(POINTS, 1)
    );
    // One series, one sample a minute.
    assert_eq!(
        conn.execute(&range("max(cpu_usage_user)", 60))
            .await
            .unwrap(),
        ack(POINTS / 6, 1)
    );
    assert_eq!(
        conn.execute(&range("no_such_metric", 10)).await.unwrap(),
        ack(0, 1)
    );
    // Instant queries: a scalar, a vector of one series.
    assert_eq!(conn.execute(&one("1 + 1")).await.unwrap(), ack(1, 1));
    assert_eq!(conn.execute(&one("vector(1)")).await.unwrap(), ack(1, 1));

    let err = conn
        .execute(&range("rate(cpu_usage_user[1m]", 10))
        .await
        .unwrap_err();
    assert_rejected(&err, "statement 1 `rate(cpu_usage_user[1m]`", "HTTP 4");
    let bad = request(
        vec![Statement::with_params(
            "cpu_usage_user",
            vec![Param::Int(1)],
        )],
        false,
    );
    let err = conn.execute(&bad).await.unwrap_err();
    assert_rejected(&err, "statement 1", "[start_ms, end_ms, step_s]");
    assert_eq!(
        conn.execute(&range("cpu_usage_user", 10)).await.unwrap(),
        ack(2 * POINTS, 1)
    );

    server.kill();
    let err = conn.execute(&one("1 + 1")).await.unwrap_err();
    assert_error(&err, ErrorKind::Connection, &["statement 1 `1 + 1`"]);
}

#[tokio::test]
async fn questdb_counts_rows() {
    let mut server = Server::start(ServerKind::QuestDb).unwrap();
    server.write_lines(None, &lines()).unwrap();
    assert_eq!(server.questdb_count("cpu"), 2 * POINTS);
    let mut conn = open(&server, DB, QueryApi::QuestDb).await;

    assert_eq!(
        conn.execute(&one("SELECT * FROM cpu")).await.unwrap(),
        ack(2 * POINTS, 1)
    );
    assert_eq!(
        conn.execute(&one("SELECT count() FROM cpu")).await.unwrap(),
        ack(1, 1)
    );
    let two = request(
        vec![
            Statement::new("SELECT * FROM cpu WHERE host = 'h0' AND usage_user < 10"),
            Statement::new("SELECT host, max(usage_user) FROM cpu"),
        ],
        false,
    );
    assert_eq!(conn.execute(&two).await.unwrap(), ack(10 + 2, 2));

    let err = conn.execute(&one("SELECT * FROM nope")).await.unwrap_err();
    assert_rejected(
        &err,
        "statement 1 `SELECT * FROM nope`",
        "table does not exist",
    );
    goes_on_until_the_server_is_killed(&mut server, &mut conn).await;
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_naming_the_endpoint() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut cfg = InfluxConfig::v1(format!("http://127.0.0.1:{port}"), DB);
    cfg.api = tsload_sink_influx::Api::V1 {
        db: DB.into(),
        rp: None,
        user: Some("u".into()),
        password: Some("pw-secret".into()),
    };
    let target = InfluxSink::new(cfg).unwrap().reader(QueryApi::InfluxQl);
    let mut conn = target.connect(0).await.unwrap();
    let err = conn.execute(&one("SELECT * FROM cpu")).await.unwrap_err();
    let endpoint = format!("http://127.0.0.1:{port}/query");
    assert_error(&err, ErrorKind::Connection, &[&endpoint]);
    assert!(!err.message.contains("pw-secret"), "{err}");
}
