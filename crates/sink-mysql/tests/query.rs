//! End-to-end tests of the MySQL read target against a real MariaDB 10.11 started by
//! the testbed: row counts, parameter binding, transactions that commit and roll back,
//! deadlocks, errors that name their statement and leave the connection usable, and a
//! killed server.

use tsload_core::{
    ErrorKind, Param, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};
use tsload_sink_mysql::{MysqlConfig, MysqlQueryConn, MysqlQueryTarget};
use tsload_testbed::{Server, ServerKind};

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

fn sql(server: &Server, statement: &str) -> String {
    server
        .sql(statement)
        .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail()))
}

/// A server with `t(id, k, v, s)` holding ids 0..ROWS (k = id % 5, v = id / 2,
/// s = "s{id % 3}"), filled through the target itself with prepared INSERTs, and one open
/// connection.
async fn setup() -> (Server, MysqlQueryTarget, MysqlQueryConn) {
    let server = Server::start(ServerKind::MariaDb).unwrap();
    let cfg = MysqlConfig::new(server.database_url().unwrap());
    let target = MysqlQueryTarget::new(&cfg).unwrap();
    let mut conn = target.connect(0).await.unwrap();
    let created = conn
        .execute(&one(
            "CREATE TABLE t (id INT PRIMARY KEY, k INT, v DOUBLE, s VARCHAR(20))",
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
    (server, target, conn)
}

fn assert_rejected(err: &SinkError, label: &str, server: &str) {
    assert_eq!(err.kind, ErrorKind::Rejected, "{err}");
    assert!(
        err.message.contains(label) && err.message.contains(server),
        "expected {label:?} and {server:?} in: {err}"
    );
}

#[tokio::test]
async fn reads_rows_binds_parameters_and_counts_changes() {
    let (_server, _target, mut conn) = setup().await;
    assert_eq!(
        conn.execute(&one("SELECT * FROM t")).await.unwrap(),
        ack(ROWS as u64, 1)
    );
    let two = request(
        vec![
            Statement::new("SELECT id FROM t WHERE id < 7"),
            Statement::new("SELECT id FROM t WHERE id >= 40"),
        ],
        false,
    );
    assert_eq!(conn.execute(&two).await.unwrap(), ack(17, 2));
    assert_eq!(
        conn.execute(&one("SELECT * FROM t WHERE id < 0"))
            .await
            .unwrap(),
        ack(0, 1)
    );

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

    let update = Statement::with_params("UPDATE t SET v = v + 1 WHERE k = ?", vec![Param::Int(0)]);
    assert_eq!(
        conn.execute(&request(vec![update], false)).await.unwrap(),
        ack(10, 1)
    );
    assert_eq!(
        conn.execute(&one("DELETE FROM t WHERE id >= 45"))
            .await
            .unwrap(),
        ack(5, 1)
    );
}

#[tokio::test]
async fn transactions_commit_or_roll_back_whole() {
    let (server, _target, mut conn) = setup().await;
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
        sql(&server, "SELECT count(*) FROM t WHERE s = 'changed'"),
        "1"
    );

    let failing = request(
        vec![
            Statement::new("UPDATE t SET s = 'gone' WHERE id < 10"),
            Statement::new("SELECT * FROM missing_table"),
        ],
        true,
    );
    let err = conn.execute(&failing).await.unwrap_err();
    assert_rejected(
        &err,
        "statement 2 `SELECT * FROM missing_table`",
        "Table 'tsload.missing_table' doesn't exist (MySQL error 1146)",
    );
    assert_eq!(sql(&server, "SELECT count(*) FROM t WHERE s = 'gone'"), "0");
    // The connection is not left inside the transaction.
    assert_eq!(
        conn.execute(&one("SELECT * FROM t")).await.unwrap(),
        ack(ROWS as u64, 1)
    );
    assert_eq!(sql(&server, "SELECT count(*) FROM t WHERE s = 'gone'"), "0");
}

#[tokio::test]
async fn errors_are_rejected_and_the_next_request_succeeds() {
    let (_server, _target, mut conn) = setup().await;
    let err = conn
        .execute(&one("SELECT * FROM nowhere"))
        .await
        .unwrap_err();
    assert_rejected(
        &err,
        "statement 1 `SELECT * FROM nowhere`",
        "Table 'tsload.nowhere' doesn't exist",
    );
    let err = conn.execute(&one("SELEC 1")).await.unwrap_err();
    assert_rejected(&err, "`SELEC 1`", "error in your SQL syntax");
    let with_params = request(
        vec![Statement::with_params(
            "SELECT * FROM nowhere WHERE id = ?",
            vec![Param::Int(1)],
        )],
        false,
    );
    let err = conn.execute(&with_params).await.unwrap_err();
    assert_rejected(&err, "nowhere WHERE id = ?", "doesn't exist");
    assert_eq!(
        conn.execute(&one("SELECT * FROM t")).await.unwrap(),
        ack(ROWS as u64, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_is_a_conflict_naming_the_statement() {
    let (server, target, mut a) = setup().await;
    let mut b = target.connect(1).await.unwrap();
    // Each locks one row, waits, then wants the other's: InnoDB rolls back one of the two.
    let crossed = |first: i64, second: i64| {
        request(
            vec![
                Statement::with_params("UPDATE t SET v = -1 WHERE id = ?", vec![Param::Int(first)]),
                Statement::new("SELECT SLEEP(0.3)"),
                Statement::with_params(
                    "UPDATE t SET v = 1000 WHERE id = ?",
                    vec![Param::Int(second)],
                ),
            ],
            true,
        )
    };
    let (first, second) = (crossed(1, 2), crossed(2, 1));
    let (ra, rb) = tokio::join!(a.execute(&first), b.execute(&second));
    let (ok, err) = match (ra, rb) {
        (Ok(ok), Err(err)) | (Err(err), Ok(ok)) => (ok, err),
        other => panic!("expected one deadlock victim: {other:?}"),
    };
    assert_eq!(ok, ack(3, 3));
    assert_eq!(err.kind, ErrorKind::Conflict, "{err}");
    assert!(
        err.message
            .contains("statement 3 `UPDATE t SET v = 1000 WHERE id = ?`")
            && err.message.contains("MySQL error 1213"),
        "{err}"
    );
    // The winner's two updates, none of the victim's.
    assert_eq!(sql(&server, "SELECT count(*) FROM t WHERE v = -1"), "1");
    assert_eq!(sql(&server, "SELECT count(*) FROM t WHERE v = 1000"), "1");
    // Both connections go on.
    assert_eq!(a.execute(&one("SELECT 1")).await.unwrap(), ack(1, 1));
    assert_eq!(b.execute(&one("SELECT 1")).await.unwrap(), ack(1, 1));
}

#[tokio::test]
async fn killed_server_is_a_connection_error_and_the_next_request_reconnects() {
    let (mut server, target, mut conn) = setup().await;
    let mut prepared = target.connect(1).await.unwrap();
    let select = request(
        vec![Statement::with_params(
            "SELECT * FROM t WHERE id < ?",
            vec![Param::Int(5)],
        )],
        false,
    );
    assert_eq!(prepared.execute(&select).await.unwrap(), ack(5, 1));
    server.kill();
    let err = conn.execute(&one("SELECT * FROM t")).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(
        err.message.contains("statement 1 `SELECT * FROM t`"),
        "{err}"
    );
    let err = prepared.execute(&select).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    // Down: reconnecting fails as a connection error too.
    let err = conn.execute(&one("SELECT * FROM t")).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains("cannot connect to"), "{err}");
    server.restart().unwrap();
    assert_eq!(
        conn.execute(&one("SELECT * FROM t")).await.unwrap(),
        ack(ROWS as u64, 1)
    );
    assert_eq!(prepared.execute(&select).await.unwrap(), ack(5, 1));
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_without_the_password() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let cfg = MysqlConfig::new(format!("mysql://u:hunter2@127.0.0.1:{port}/db"));
    let target = MysqlQueryTarget::new(&cfg).unwrap();
    let err = target.connect(0).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(!err.message.contains("hunter2"), "{err}");
    assert!(err.message.contains(&format!("127.0.0.1:{port}")), "{err}");
}
