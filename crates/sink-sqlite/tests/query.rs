//! End-to-end tests of the SQLite read target against a database file in a temporary
//! directory: row counts, parameter binding, transactions that commit and roll back, and
//! errors that name their statement and leave the connection usable.

use std::time::Duration;

use sqlx::{Connection, Executor, SqliteConnection};
use tempfile::TempDir;
use tsload_core::{
    ErrorKind, Param, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};
use tsload_sink_sqlite::{SqliteConfig, SqliteQueryConn, SqliteQueryTarget};

const ROWS: i64 = 50;

fn request(statements: Vec<Statement>, transaction: bool) -> QueryRequest {
    QueryRequest {
        kind: 0,
        statements,
        transaction,
    }
}

fn one(text: &str) -> QueryRequest {
    request(vec![Statement::new(text)], false)
}

fn ack(rows: u64, statements: u64) -> QueryAck {
    QueryAck { rows, statements }
}

/// A database `t(id, k, v, s)` with ids 0..ROWS: k = id % 5, v = id / 2, s = "s{id % 3}",
/// filled through the target itself (prepared INSERTs), and one open connection.
async fn setup() -> (TempDir, SqliteConfig, SqliteQueryTarget, SqliteQueryConn) {
    let dir = TempDir::new().unwrap();
    let url = format!("sqlite:{}", dir.path().join("q.db").display());
    let cfg = SqliteConfig::new(url);
    let target = SqliteQueryTarget::new(&cfg).unwrap();
    let mut conn = target.connect(0).await.unwrap();
    let created = conn
        .execute(&one(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v REAL, s TEXT)",
        ))
        .await
        .unwrap();
    assert_eq!(created, ack(0, 1));
    for id in 0..ROWS {
        let insert = Statement::with_params(
            "INSERT INTO t (id, k, v, s) VALUES (?, ?, ?, ?)",
            vec![
                Param::Int(id),
                Param::Int(id % 5),
                Param::Float(id as f64 / 2.0),
                Param::Text(format!("s{}", id % 3)),
            ],
        );
        let done = conn.execute(&request(vec![insert], false)).await.unwrap();
        assert_eq!(done, ack(1, 1), "insert {id}");
    }
    (dir, cfg, target, conn)
}

/// A plain sqlx connection to the same file, to check what was committed.
async fn count(cfg: &SqliteConfig, query: &str) -> i64 {
    let mut conn = SqliteConnection::connect(&cfg.url).await.unwrap();
    sqlx::query_scalar(query)
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

fn assert_rejected(err: &SinkError, label: &str, server: &str) {
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(
        err.message.contains(label) && err.message.contains(server),
        "expected {label:?} and {server:?} in: {err}"
    );
}

#[tokio::test]
async fn select_reads_every_row() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    let all = conn.execute(&one("SELECT * FROM t")).await.unwrap();
    assert_eq!(all, ack(ROWS as u64, 1));
    // Two statements: rows summed, both counted.
    let two = request(
        vec![
            Statement::new("SELECT id FROM t WHERE id < 7"),
            Statement::new("SELECT id FROM t WHERE id >= 40"),
        ],
        false,
    );
    assert_eq!(conn.execute(&two).await.unwrap(), ack(17, 2));
    let none = conn
        .execute(&one("SELECT * FROM t WHERE id < 0"))
        .await
        .unwrap();
    assert_eq!(none, ack(0, 1));
}

#[tokio::test]
async fn parameters_bind_int_float_and_text() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    let expected = (0..ROWS)
        .filter(|id| id % 5 == 1 && *id as f64 / 2.0 > 3.0 && id % 3 == 2)
        .count() as u64;
    assert!(expected > 0);
    let select = Statement::with_params(
        "SELECT id, v, s FROM t WHERE k = ? AND v > ? AND s = ?",
        vec![Param::Int(1), Param::Float(3.0), Param::Text("s2".into())],
    );
    // Twice: the second run uses the cached prepared statement.
    for _ in 0..2 {
        let done = conn
            .execute(&request(vec![select.clone()], false))
            .await
            .unwrap();
        assert_eq!(done, ack(expected, 1));
    }
}

#[tokio::test]
async fn data_changing_statements_count_changed_rows_and_selects_do_not() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    let update = Statement::with_params("UPDATE t SET v = v + 1 WHERE k = ?", vec![Param::Int(0)]);
    assert_eq!(
        conn.execute(&request(vec![update], false)).await.unwrap(),
        ack(10, 1)
    );
    // SQLite still reports the UPDATE's 10 changes after an empty SELECT: not counted.
    let empty = conn
        .execute(&one("SELECT id FROM t WHERE id < 0"))
        .await
        .unwrap();
    assert_eq!(empty, ack(0, 1));
    let deleted = conn
        .execute(&one("DELETE FROM t WHERE id >= 45"))
        .await
        .unwrap();
    assert_eq!(deleted, ack(5, 1));
}

#[tokio::test]
async fn transaction_commits_its_update() {
    let (_dir, cfg, _target, mut conn) = setup().await;
    let tx = request(
        vec![
            Statement::with_params(
                "UPDATE t SET s = ? WHERE id = ?",
                vec![Param::Text("changed".into()), Param::Int(3)],
            ),
            Statement::with_params(
                "SELECT s FROM t WHERE s = ?",
                vec![Param::Text("changed".into())],
            ),
        ],
        true,
    );
    assert_eq!(conn.execute(&tx).await.unwrap(), ack(2, 2));
    assert_eq!(
        count(&cfg, "SELECT count(*) FROM t WHERE s = 'changed'").await,
        1
    );
}

#[tokio::test]
async fn failing_transaction_rolls_back_and_names_the_statement() {
    let (_dir, cfg, _target, mut conn) = setup().await;
    let tx = request(
        vec![
            Statement::new("UPDATE t SET s = 'gone' WHERE id < 10"),
            Statement::new("SELECT * FROM missing_table"),
        ],
        true,
    );
    let err = conn.execute(&tx).await.unwrap_err();
    assert_rejected(
        &err,
        "statement 2 `SELECT * FROM missing_table`",
        "no such table: missing_table",
    );
    assert_eq!(
        count(&cfg, "SELECT count(*) FROM t WHERE s = 'gone'").await,
        0
    );
    // The connection is not left inside the transaction.
    let next = conn.execute(&one("SELECT * FROM t")).await.unwrap();
    assert_eq!(next, ack(ROWS as u64, 1));
    assert_eq!(
        count(&cfg, "SELECT count(*) FROM t WHERE s = 'gone'").await,
        0
    );
}

#[tokio::test]
async fn errors_are_rejected_and_the_next_request_succeeds() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    let err = conn
        .execute(&one("SELECT * FROM nowhere"))
        .await
        .unwrap_err();
    assert_rejected(&err, "statement 1 `SELECT * FROM nowhere`", "no such table");
    let err = conn.execute(&one("SELEC 1")).await.unwrap_err();
    assert_rejected(&err, "`SELEC 1`", "syntax error");
    let with_params = request(
        vec![Statement::with_params(
            "SELECT * FROM nowhere WHERE id = ?",
            vec![Param::Int(1)],
        )],
        false,
    );
    let err = conn.execute(&with_params).await.unwrap_err();
    assert_rejected(&err, "nowhere WHERE id = ?", "no such table");
    assert_eq!(
        conn.execute(&one("SELECT * FROM t")).await.unwrap(),
        ack(ROWS as u64, 1)
    );
}

#[tokio::test]
async fn a_held_write_lock_is_a_conflict() {
    let (_dir, mut cfg, _target, _conn) = setup().await;
    cfg.busy_timeout = Duration::from_millis(100);
    let target = SqliteQueryTarget::new(&cfg).unwrap();
    let mut conn = target.connect(1).await.unwrap();
    let mut holder = SqliteConnection::connect(&cfg.url).await.unwrap();
    holder.execute("BEGIN IMMEDIATE").await.unwrap();
    let err = conn
        .execute(&one("UPDATE t SET v = 0 WHERE id = 1"))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err}");
    assert!(err.message.contains("statement 1 `UPDATE t"), "{err}");
    holder.execute("ROLLBACK").await.unwrap();
    assert_eq!(
        conn.execute(&one("UPDATE t SET v = 0 WHERE id = 1"))
            .await
            .unwrap(),
        ack(1, 1)
    );
}

#[tokio::test]
async fn in_memory_database_is_shared_by_the_targets_connections() {
    let target = SqliteQueryTarget::new(&SqliteConfig::new("sqlite::memory:")).unwrap();
    {
        let mut setup = target.connect(0).await.unwrap();
        setup
            .execute(&one(
                "CREATE TABLE m (x INTEGER); INSERT INTO m VALUES (1), (2)",
            ))
            .await
            .unwrap();
    }
    let mut conn = target.connect(1).await.unwrap();
    assert_eq!(
        conn.execute(&one("SELECT x FROM m")).await.unwrap(),
        ack(2, 1)
    );
}

#[tokio::test]
async fn unopenable_database_is_a_connection_error() {
    let cfg = SqliteConfig::new("sqlite:/nonexistent-dir-tsload/q.db");
    let target = SqliteQueryTarget::new(&cfg).unwrap();
    let err = target.connect(0).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(
        err.message.contains("/nonexistent-dir-tsload/q.db"),
        "{err}"
    );
    let err = SqliteQueryTarget::new(&SqliteConfig::new("sqlite:x.db?mode=sometimes")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains("invalid SQLite URL"), "{err}");
}
