//! End-to-end tests of the MySQL read target against a real MariaDB 10.11 started by
//! the testbed: row counts, parameter binding, transactions that commit and roll back,
//! deadlocks, errors that name their statement and leave the connection usable, and a
//! killed server. The tests are the testbed's, shared with the PostgreSQL target; this
//! file says what MariaDB's differ in. Each runs twice: on tsload's own connection (the
//! testbed's plain URL) and on sqlx's (a URL option only sqlx speaks); and a user with a
//! password logs in over tsload's `mysql_native_password`.

use tsload_sink_mysql::{MysqlConfig, MysqlQueryTarget, Waiting};
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

/// The same server through sqlx's connection.
const MARIADB_SQLX: SqlServer<MysqlQueryTarget> = SqlServer {
    target: sqlx_target,
    ..MARIADB
};

fn target(url: String) -> MysqlQueryTarget {
    MysqlQueryTarget::new(&MysqlConfig::new(url)).unwrap()
}

/// `url` with an option tsload's own connection leaves to sqlx (sqlx's default value).
fn sqlx_url(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}statement-cache-capacity=100")
}

fn sqlx_target(url: String) -> MysqlQueryTarget {
    target(sqlx_url(&url))
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

#[tokio::test]
async fn sqlx_reads_rows_binds_parameters_and_counts_changes() {
    checks::reads_rows_binds_parameters_and_counts_changes(&MARIADB_SQLX).await;
}

#[tokio::test]
async fn sqlx_transactions_commit_or_roll_back_whole() {
    checks::transactions_commit_or_roll_back_whole(&MARIADB_SQLX).await;
}

#[tokio::test]
async fn sqlx_errors_are_rejected_and_the_next_request_succeeds() {
    checks::errors_are_rejected_and_the_next_request_succeeds(&MARIADB_SQLX).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlx_a_deadlock_is_a_conflict_naming_the_statement() {
    checks::a_deadlock_is_a_conflict_naming_the_statement(&MARIADB_SQLX).await;
}

#[tokio::test]
async fn sqlx_killed_server_is_a_connection_error_and_the_next_request_reconnects() {
    checks::killed_server_is_a_connection_error_and_the_next_request_reconnects(&MARIADB_SQLX)
        .await;
}

#[tokio::test]
async fn sqlx_unreachable_server_is_a_connection_error_without_the_password() {
    checks::unreachable_server_is_a_connection_error_without_the_password(&MARIADB_SQLX).await;
}

/// The plain URL gets tsload's own connection, an option only sqlx reads gets sqlx's; a
/// user with a password logs in over `mysql_native_password` on tsload's, and a wrong
/// password is a permission error that shows neither password.
#[tokio::test]
async fn connections_and_passwords() {
    use tsload_core::{ErrorKind, QueryConn as _, QueryRequest, QueryTarget as _, Statement};
    let server = tsload_testbed::Server::start(ServerKind::MariaDb).unwrap();
    let url = server.database_url().unwrap();
    let lean = target(url.clone()).connect(0).await.unwrap();
    assert_eq!(lean.connection_kind(), "tsload");
    assert_eq!(lean.waiting(), Some(Waiting::Reactor));
    let alone = target(url.clone()).connect_on_own_thread(0).await.unwrap();
    assert_eq!(alone.connection_kind(), "tsload");
    assert_eq!(alone.waiting(), Some(Waiting::Blocking));
    let sqlx = target(sqlx_url(&url)).connect(0).await.unwrap();
    assert_eq!(sqlx.connection_kind(), "sqlx");
    assert_eq!(sqlx.waiting(), None);

    server
        .sql("CREATE USER 'pw'@'%' IDENTIFIED BY 's3cret-pw'; GRANT ALL ON tsload.* TO 'pw'@'%'")
        .unwrap();
    let with = |password: &str| url.replacen("root@", &format!("pw:{password}@"), 1);
    let mut conn = target(with("s3cret-pw")).connect(0).await.unwrap();
    assert_eq!(conn.connection_kind(), "tsload");
    let request = QueryRequest {
        statements: vec![Statement::new("SELECT CURRENT_USER()")],
        ..QueryRequest::default()
    };
    assert_eq!(conn.execute(&request).await.unwrap().rows, 1);
    let refused = target(with("wrong-pw")).connect(0).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::Permission, "{refused}");
    assert!(refused.message.contains("MySQL error 1045"), "{refused}");
    assert!(
        !refused.message.contains("wrong-pw") && !refused.message.contains("s3cret"),
        "{refused}"
    );
}

/// A row over 16 MiB comes in packet parts the connection joins: a server that allows
/// such packets returns two of them, as a text query and as a prepared statement's binary
/// row, between small rows, on both connections, and the connection stays in step.
#[tokio::test]
async fn rows_over_16_mib_are_read_whole_on_both_connections() {
    use tsload_core::{Param, QueryConn as _, QueryRequest, QueryTarget as _, Statement};
    let server =
        tsload_testbed::Server::start_with(ServerKind::MariaDb, &[("max-allowed-packet", "64M")])
            .unwrap();
    let url = server.database_url().unwrap();
    let big = 17_000_000i64;
    // Past max_allowed_packet REPEAT would return NULL, and no row would be big.
    let length = server
        .sql(&format!("SELECT LENGTH(REPEAT('x', {big}))"))
        .unwrap();
    assert_eq!(length.trim(), big.to_string());
    let text = format!("SELECT 'a' UNION ALL SELECT REPEAT('x', {big}) UNION ALL SELECT 'b'");
    let request = QueryRequest {
        statements: vec![
            Statement::new(text),
            Statement::with_params(
                "SELECT REPEAT('y', ?) UNION ALL SELECT 'c' UNION ALL SELECT REPEAT('z', ?)",
                vec![Param::Int(big), Param::Int(big + 3)],
            ),
            Statement::with_params("SELECT LENGTH(REPEAT('w', ?))", vec![Param::Int(big)]),
        ],
        ..QueryRequest::default()
    };
    for (url, kind) in [(url.clone(), "tsload"), (sqlx_url(&url), "sqlx")] {
        let mut conn = target(url).connect(0).await.unwrap();
        assert_eq!(conn.connection_kind(), kind);
        for round in 0..2 {
            let ack = conn.execute(&request).await.unwrap();
            assert_eq!((ack.rows, ack.statements), (7, 3), "{kind}, round {round}");
        }
    }
}

#[tokio::test]
async fn on_its_own_thread_a_request_times_out_and_the_next_connection_works() {
    checks::on_its_own_thread_a_request_times_out_and_the_next_connection_works(&MARIADB).await;
}

#[tokio::test]
async fn sqlx_on_its_own_thread_a_request_times_out_and_the_next_connection_works() {
    checks::on_its_own_thread_a_request_times_out_and_the_next_connection_works(&MARIADB_SQLX)
        .await;
}
