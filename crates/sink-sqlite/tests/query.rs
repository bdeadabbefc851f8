//! End-to-end tests of the SQLite read target against a database file in a temporary
//! directory: row counts, parameter binding, transactions that commit and roll back, and
//! errors that name their statement and leave the connection usable (the checks shared
//! with the other SQL targets), a held write lock, and in-memory and unopenable databases.

use std::time::Duration;

use sqlx::{Connection, Executor, SqliteConnection};
use tempfile::TempDir;
use tsload_core::{ErrorKind, QueryConn, QueryTarget};
use tsload_sink_sqlite::{SqliteConfig, SqliteQueryConn, SqliteQueryTarget};

use tsload_testbed::query_checks::{self as checks, Outside, SqlDialect, ack, assert_error, one};

const SQLITE: SqlDialect = SqlDialect {
    numbered_placeholders: false,
    create_table: "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v REAL, s TEXT)",
    missing_table,
    syntax_error: "syntax error",
};

fn missing_table(name: &str) -> String {
    format!("no such table: {name}")
}

/// The database file seen through a plain sqlx connection, to check what was committed.
struct File<'a>(&'a SqliteConfig);

impl Outside for File<'_> {
    async fn count(&self, query: &str) -> u64 {
        let mut conn = SqliteConnection::connect(&self.0.url).await.unwrap();
        let n: i64 = sqlx::query_scalar(query)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        u64::try_from(n).unwrap()
    }
}

/// A database with the checks' table `t`, filled through the target, and one open
/// connection.
async fn setup() -> (TempDir, SqliteConfig, SqliteQueryTarget, SqliteQueryConn) {
    let dir = TempDir::new().unwrap();
    let url = format!("sqlite:{}", dir.path().join("q.db").display());
    let cfg = SqliteConfig::new(url);
    let target = SqliteQueryTarget::new(&cfg).unwrap();
    let mut conn = target.connect(0).await.unwrap();
    checks::fill_table(&mut conn, &SQLITE).await;
    (dir, cfg, target, conn)
}

#[tokio::test]
async fn select_reads_every_row() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    checks::select_reads_every_row(&mut conn).await;
}

#[tokio::test]
async fn parameters_bind_int_float_and_text() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    checks::parameters_bind_int_float_and_text(&mut conn, &SQLITE).await;
}

#[tokio::test]
async fn data_changing_statements_count_changed_rows_and_selects_do_not() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    checks::data_changes_count_changed_rows(&mut conn, &SQLITE).await;
}

#[tokio::test]
async fn transaction_commits_its_update() {
    let (_dir, cfg, _target, mut conn) = setup().await;
    checks::transaction_commits(&mut conn, &SQLITE, &File(&cfg)).await;
}

#[tokio::test]
async fn failing_transaction_rolls_back_and_names_the_statement() {
    let (_dir, cfg, _target, mut conn) = setup().await;
    checks::failing_transaction_rolls_back_and_names_the_statement(&mut conn, &SQLITE, &File(&cfg))
        .await;
}

#[tokio::test]
async fn errors_are_rejected_and_the_next_request_succeeds() {
    let (_dir, _cfg, _target, mut conn) = setup().await;
    checks::errors_are_rejected_and_the_next_request_succeeds(&mut conn, &SQLITE).await;
}

#[tokio::test]
async fn a_held_write_lock_is_a_conflict() {
    let (_dir, mut cfg, _target, _conn) = setup().await;
    cfg.busy_timeout = Duration::from_millis(100);
    let target = SqliteQueryTarget::new(&cfg).unwrap();
    let mut conn = target.connect(1).await.unwrap();
    let mut holder = SqliteConnection::connect(&cfg.url).await.unwrap();
    holder.execute("BEGIN IMMEDIATE").await.unwrap();
    let update = one("UPDATE t SET v = 0 WHERE id = 1");
    let err = conn.execute(&update).await.unwrap_err();
    assert_error(&err, ErrorKind::Conflict, &["statement 1 `UPDATE t"]);
    holder.execute("ROLLBACK").await.unwrap();
    assert_eq!(conn.execute(&update).await.unwrap(), ack(1, 1));
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
    assert_error(
        &err,
        ErrorKind::Connection,
        &["/nonexistent-dir-tsload/q.db"],
    );
    let err = SqliteQueryTarget::new(&SqliteConfig::new("sqlite:x.db?mode=sometimes")).unwrap_err();
    assert_error(&err, ErrorKind::Connection, &["invalid SQLite URL"]);
}
