//! End-to-end tests of the PostgreSQL read target against a real PostgreSQL 15 started by
//! the testbed: row counts, parameter binding, transactions that commit and roll back,
//! deadlocks, errors that name their statement and leave the connection usable, and a
//! killed server. The tests are the testbed's, shared with the MySQL target; this file
//! says what PostgreSQL's differ in. Each runs twice: on tsload's own connection (the
//! testbed's plain URL) and on sqlx's (a URL option only sqlx speaks).

use tsload_sink_postgres::{PostgresConfig, PostgresQueryTarget, Waiting};
use tsload_testbed::ServerKind;
use tsload_testbed::query_checks::SqlDialect;
use tsload_testbed::sql_server_checks::{self as checks, SqlServer};

const POSTGRES: SqlServer<PostgresQueryTarget> = SqlServer {
    kind: ServerKind::Postgres,
    target,
    scheme: "postgres",
    dialect: SqlDialect {
        numbered_placeholders: true,
        create_table: "CREATE TABLE t (id integer PRIMARY KEY, k integer, v double precision, s text)",
        missing_table,
        syntax_error: "syntax error",
    },
    sleep: "SELECT pg_sleep(0.3)",
    // PostgreSQL cancels one of the two transactions after deadlock_timeout (1 s).
    deadlock_code: "40P01",
    cannot_connect: "cannot connect to PostgreSQL",
};

/// The same server through sqlx's connection.
const POSTGRES_SQLX: SqlServer<PostgresQueryTarget> = SqlServer {
    target: sqlx_target,
    ..POSTGRES
};

fn target(url: String) -> PostgresQueryTarget {
    PostgresQueryTarget::new(&PostgresConfig::new(url)).unwrap()
}

/// `url` with an option tsload's own connection leaves to sqlx (sqlx's default value).
fn sqlx_url(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}statement-cache-capacity=100")
}

fn sqlx_target(url: String) -> PostgresQueryTarget {
    target(sqlx_url(&url))
}

fn missing_table(name: &str) -> String {
    format!("relation \"{name}\" does not exist (SQLSTATE 42P01)")
}

#[tokio::test]
async fn reads_rows_binds_parameters_and_counts_changes() {
    checks::reads_rows_binds_parameters_and_counts_changes(&POSTGRES).await;
}

#[tokio::test]
async fn transactions_commit_or_roll_back_whole() {
    checks::transactions_commit_or_roll_back_whole(&POSTGRES).await;
}

#[tokio::test]
async fn errors_are_rejected_and_the_next_request_succeeds() {
    checks::errors_are_rejected_and_the_next_request_succeeds(&POSTGRES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_is_a_conflict_naming_the_statement() {
    checks::a_deadlock_is_a_conflict_naming_the_statement(&POSTGRES).await;
}

#[tokio::test]
async fn killed_server_is_a_connection_error_and_the_next_request_reconnects() {
    checks::killed_server_is_a_connection_error_and_the_next_request_reconnects(&POSTGRES).await;
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_without_the_password() {
    checks::unreachable_server_is_a_connection_error_without_the_password(&POSTGRES).await;
}

#[tokio::test]
async fn sqlx_reads_rows_binds_parameters_and_counts_changes() {
    checks::reads_rows_binds_parameters_and_counts_changes(&POSTGRES_SQLX).await;
}

#[tokio::test]
async fn sqlx_transactions_commit_or_roll_back_whole() {
    checks::transactions_commit_or_roll_back_whole(&POSTGRES_SQLX).await;
}

#[tokio::test]
async fn sqlx_errors_are_rejected_and_the_next_request_succeeds() {
    checks::errors_are_rejected_and_the_next_request_succeeds(&POSTGRES_SQLX).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlx_a_deadlock_is_a_conflict_naming_the_statement() {
    checks::a_deadlock_is_a_conflict_naming_the_statement(&POSTGRES_SQLX).await;
}

#[tokio::test]
async fn sqlx_killed_server_is_a_connection_error_and_the_next_request_reconnects() {
    checks::killed_server_is_a_connection_error_and_the_next_request_reconnects(&POSTGRES_SQLX)
        .await;
}

#[tokio::test]
async fn sqlx_unreachable_server_is_a_connection_error_without_the_password() {
    checks::unreachable_server_is_a_connection_error_without_the_password(&POSTGRES_SQLX).await;
}

/// The plain URL gets tsload's own connection, an option only sqlx reads gets sqlx's, and
/// `synchronous_commit` is set on tsload's as on sqlx's.
#[tokio::test]
async fn connections_and_session_settings() {
    use tsload_core::{Param, QueryConn as _, QueryRequest, QueryTarget as _, Statement};
    use tsload_sink_postgres::SynchronousCommit;
    let server = tsload_testbed::Server::start(ServerKind::Postgres).unwrap();
    let url = server.database_url().unwrap();
    let sqlx = target(sqlx_url(&url)).connect(0).await.unwrap();
    assert_eq!(sqlx.connection_kind(), "sqlx");
    assert_eq!(sqlx.waiting(), None);
    let alone = target(url.clone()).connect_on_own_thread(0).await.unwrap();
    assert_eq!(alone.connection_kind(), "tsload");
    assert_eq!(alone.waiting(), Some(Waiting::Blocking));
    let mut cfg = PostgresConfig::new(url);
    cfg.synchronous_commit = Some(SynchronousCommit::Off);
    let mut lean = PostgresQueryTarget::new(&cfg)
        .unwrap()
        .connect(0)
        .await
        .unwrap();
    assert_eq!(lean.connection_kind(), "tsload");
    assert_eq!(lean.waiting(), Some(Waiting::Reactor));
    for (setting, want) in [
        ("synchronous_commit", "off"),
        ("TimeZone", "UTC"),
        ("application_name", "tsload"),
    ] {
        let request = QueryRequest {
            statements: vec![Statement::with_params(
                "SELECT 1 WHERE current_setting($1) = $2",
                vec![Param::Text(setting.into()), Param::Text(want.into())],
            )],
            ..QueryRequest::default()
        };
        let ack = lean.execute(&request).await.unwrap();
        assert_eq!(ack.rows, 1, "{setting} is {want}");
    }
}

#[tokio::test]
async fn on_its_own_thread_a_request_times_out_and_the_next_connection_works() {
    checks::on_its_own_thread_a_request_times_out_and_the_next_connection_works(&POSTGRES).await;
}

#[tokio::test]
async fn sqlx_on_its_own_thread_a_request_times_out_and_the_next_connection_works() {
    checks::on_its_own_thread_a_request_times_out_and_the_next_connection_works(&POSTGRES_SQLX)
        .await;
}
