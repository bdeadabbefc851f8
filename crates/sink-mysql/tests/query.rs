//! End-to-end tests of the MySQL read target against a real MariaDB 10.11 started by
//! the testbed: row counts, parameter binding, transactions that commit and roll back,
//! deadlocks, errors that name their statement and leave the connection usable, and a
//! killed server. The tests are the testbed's, shared with the PostgreSQL target; this
//! file says what MariaDB's differ in.

use tsload_sink_mysql::{MysqlConfig, MysqlQueryTarget};
use tsload_testbed::ServerKind;
use tsload_testbed::query_checks::SqlDialect;
use tsload_testbed::sql_server_checks::{self as checks, SqlServer};

const MARIADB: SqlServer<MysqlQueryTarget> = SqlServer {
    kind: ServerKind::MariaDb,
    target,
    scheme: "mysql",
    dialect: SqlDialect {
        numbered_placeholders: false,
        create_table: "CREATE TABLE t (id INT PRIMARY KEY, k INT, v DOUBLE, s VARCHAR(20))",
        missing_table,
        syntax_error: "error in your SQL syntax",
    },
    sleep: "SELECT SLEEP(0.3)",
    // InnoDB rolls back one of the two transactions at once.
    deadlock_code: "MySQL error 1213",
    cannot_connect: "cannot connect to",
};

fn target(url: String) -> MysqlQueryTarget {
    MysqlQueryTarget::new(&MysqlConfig::new(url)).unwrap()
}

fn missing_table(name: &str) -> String {
    format!("Table 'tsload.{name}' doesn't exist (MySQL error 1146)")
}

#[tokio::test]
async fn reads_rows_binds_parameters_and_counts_changes() {
    checks::reads_rows_binds_parameters_and_counts_changes(&MARIADB).await;
}

#[tokio::test]
async fn transactions_commit_or_roll_back_whole() {
    checks::transactions_commit_or_roll_back_whole(&MARIADB).await;
}

#[tokio::test]
async fn errors_are_rejected_and_the_next_request_succeeds() {
    checks::errors_are_rejected_and_the_next_request_succeeds(&MARIADB).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_is_a_conflict_naming_the_statement() {
    checks::a_deadlock_is_a_conflict_naming_the_statement(&MARIADB).await;
}

#[tokio::test]
async fn killed_server_is_a_connection_error_and_the_next_request_reconnects() {
    checks::killed_server_is_a_connection_error_and_the_next_request_reconnects(&MARIADB).await;
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_without_the_password() {
    checks::unreachable_server_is_a_connection_error_without_the_password(&MARIADB).await;
}
