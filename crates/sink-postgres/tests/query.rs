//! End-to-end tests of the PostgreSQL read target against a real PostgreSQL 15 started by
//! the testbed: row counts, parameter binding, transactions that commit and roll back,
//! deadlocks, errors that name their statement and leave the connection usable, and a
//! killed server. The tests are the testbed's, shared with the MySQL target; this file
//! says what PostgreSQL's differ in.

use tsload_sink_postgres::{PostgresConfig, PostgresQueryTarget};
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

fn target(url: String) -> PostgresQueryTarget {
    PostgresQueryTarget::new(&PostgresConfig::new(url)).unwrap()
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
