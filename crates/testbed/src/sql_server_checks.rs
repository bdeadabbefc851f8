//! The read-target tests of the testbed's SQL servers (PostgreSQL, MariaDB), shared by the
//! sink crates: each starts a server, makes the target through a [`SqlServer`] that says
//! what differs between databases, fills the table `t` of [`crate::query_checks`] through
//! the target and runs checks on it, among them two connections that deadlock, a killed
//! and restarted server, a server that does not listen, and a worker alone on its thread
//! whose request times out. A [`Server`] is their [`Outside`].

use std::time::Duration;

use tsload_core::{ErrorKind, Param, QueryConn, QueryTarget, Statement};

use crate::query_checks::{
    self as checks, Outside, ROWS, SqlDialect, ack, assert_error, one, request,
};
use crate::{Server, ServerKind};

impl Outside for Server {
    /// Runs `query` through the server's command-line client.
    ///
    /// # Panics
    /// If the query fails (with the server's log tail) or does not return one number.
    async fn count(&self, query: &str) -> u64 {
        let text = self
            .sql(query)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.log_tail()));
        text.parse()
            .unwrap_or_else(|_| panic!("`{query}` returned {text:?}, not one number"))
    }
}

/// A SQL server of the testbed with its read target `T`, and what the checks need to know
/// about the two.
pub struct SqlServer<T> {
    pub kind: ServerKind,
    /// Makes the target of a database URL (sqlx's format).
    pub target: fn(url: String) -> T,
    /// The scheme of the target's URLs, e.g. `mysql`.
    pub scheme: &'static str,
    pub dialect: SqlDialect,
    /// A statement that sleeps 0.3 s.
    pub sleep: &'static str,
    /// What the error of a deadlock victim contains besides its statement: the server's
    /// error code.
    pub deadlock_code: &'static str,
    /// What the error of a failed reconnect, while the server is down, contains.
    pub cannot_connect: &'static str,
}

/// A started server with the table `t` filled through its target, the target, and the
/// connection (number 0) that filled it.
async fn start<T: QueryTarget>(db: &SqlServer<T>) -> (Server, T, T::Conn) {
    let server = Server::start(db.kind).unwrap();
    let target = (db.target)(server.database_url().unwrap());
    let mut conn = target.connect(0).await.unwrap();
    checks::fill_table(&mut conn, &db.dialect).await;
    (server, target, conn)
}

/// [`checks::select_reads_every_row`], [`checks::parameters_bind_int_float_and_text`] and
/// [`checks::data_changes_count_changed_rows`], in that order on one connection.
pub async fn reads_rows_binds_parameters_and_counts_changes<T: QueryTarget>(db: &SqlServer<T>) {
    let (_server, _target, mut conn) = start(db).await;
    checks::select_reads_every_row(&mut conn).await;
    checks::parameters_bind_int_float_and_text(&mut conn, &db.dialect).await;
    checks::data_changes_count_changed_rows(&mut conn, &db.dialect).await;
}

/// [`checks::transaction_commits`], then
/// [`checks::failing_transaction_rolls_back_and_names_the_statement`], seen through the
/// server's own client.
pub async fn transactions_commit_or_roll_back_whole<T: QueryTarget>(db: &SqlServer<T>) {
    let (server, _target, mut conn) = start(db).await;
    checks::transaction_commits(&mut conn, &db.dialect, &server).await;
    checks::failing_transaction_rolls_back_and_names_the_statement(&mut conn, &db.dialect, &server)
        .await;
}

/// [`checks::errors_are_rejected_and_the_next_request_succeeds`].
pub async fn errors_are_rejected_and_the_next_request_succeeds<T: QueryTarget>(db: &SqlServer<T>) {
    let (_server, _target, mut conn) = start(db).await;
    checks::errors_are_rejected_and_the_next_request_succeeds(&mut conn, &db.dialect).await;
}

/// Two connections each lock one row of `t`, wait, then want the other's row: the server
/// makes one of the two transactions its deadlock victim, an [`ErrorKind::Conflict`]
/// naming statement 3 and carrying the server's code. The winner's two updates are
/// committed, none of the victim's, and both connections go on. Run it on a
/// multi-threaded runtime.
pub async fn a_deadlock_is_a_conflict_naming_the_statement<T: QueryTarget>(db: &SqlServer<T>) {
    let (server, target, mut a) = start(db).await;
    let mut b = target.connect(1).await.unwrap();
    let d = &db.dialect;
    let crossed = |first: i64, second: i64| {
        request(
            vec![
                d.statement("UPDATE t SET v = -1 WHERE id = ?", vec![Param::Int(first)]),
                Statement::new(db.sleep),
                d.statement(
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
    let label = format!("statement 3 `{}`", first.statements[2].text);
    assert_error(&err, ErrorKind::Conflict, &[&label, db.deadlock_code]);
    assert_eq!(server.count("SELECT count(*) FROM t WHERE v = -1").await, 1);
    assert_eq!(
        server.count("SELECT count(*) FROM t WHERE v = 1000").await,
        1
    );
    assert_eq!(a.execute(&one("SELECT 1")).await.unwrap(), ack(1, 1));
    assert_eq!(b.execute(&one("SELECT 1")).await.unwrap(), ack(1, 1));
}

/// Killing the server makes requests of a connection and of a second one (whose prepared
/// statement is cached) connection errors, the first naming its statement; while the
/// server is down, reconnecting fails as a connection error too. Once it is restarted,
/// both connections work again.
pub async fn killed_server_is_a_connection_error_and_the_next_request_reconnects<T: QueryTarget>(
    db: &SqlServer<T>,
) {
    let (mut server, target, mut conn) = start(db).await;
    let mut prepared = target.connect(1).await.unwrap();
    let select = db
        .dialect
        .bound("SELECT * FROM t WHERE id < ?", vec![Param::Int(5)]);
    assert_eq!(prepared.execute(&select).await.unwrap(), ack(5, 1));
    server.kill();
    let all = one("SELECT * FROM t");
    let err = conn.execute(&all).await.unwrap_err();
    assert_error(
        &err,
        ErrorKind::Connection,
        &["statement 1 `SELECT * FROM t`"],
    );
    let err = prepared.execute(&select).await.unwrap_err();
    assert_error(&err, ErrorKind::Connection, &[]);
    let err = conn.execute(&all).await.unwrap_err();
    assert_error(&err, ErrorKind::Connection, &[db.cannot_connect]);
    server.restart().unwrap();
    assert_eq!(conn.execute(&all).await.unwrap(), ack(ROWS as u64, 1));
    assert_eq!(prepared.execute(&select).await.unwrap(), ack(5, 1));
}

/// Connecting to an address where nothing listens, with a password in the URL, is a
/// connection error that names the address and not the password.
pub async fn unreachable_server_is_a_connection_error_without_the_password<T: QueryTarget>(
    db: &SqlServer<T>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let target = (db.target)(format!("{}://u:hunter2@127.0.0.1:{port}/db", db.scheme));
    let err = match target.connect(0).await {
        Ok(_) => panic!("connected to 127.0.0.1:{port}, where nothing listens"),
        Err(err) => err,
    };
    assert_error(&err, ErrorKind::Connection, &[&format!("127.0.0.1:{port}")]);
    assert!(!err.message.contains("hunter2"), "{err}");
}

/// A worker's connection opened on its own thread ([`QueryTarget::connect_on_own_thread`])
/// and used there on a runtime as the query engine gives it (current-thread; I/O only
/// where [`tsload_timer::NEEDS_TIME_DRIVER`] is false): it reads every row and binds
/// parameters as any connection does; a request (the 0.3 s sleep) still waiting when the
/// worker's 20 ms timeout fires is cut off, which it is only if the connection's wait lets
/// that timer be polled; and a connection opened again on that thread works.
pub async fn on_its_own_thread_a_request_times_out_and_the_next_connection_works<T: QueryTarget>(
    db: &SqlServer<T>,
) {
    let (_server, target, _conn) = start(db).await;
    let sleep = db.sleep;
    let dialect = db.dialect;
    let worker = std::thread::spawn(move || {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        builder.enable_io();
        if tsload_timer::NEEDS_TIME_DRIVER {
            builder.enable_time();
        }
        builder.build().unwrap().block_on(async move {
            let mut conn = target.connect_on_own_thread(0).await.unwrap();
            checks::select_reads_every_row(&mut conn).await;
            checks::parameters_bind_int_float_and_text(&mut conn, &dialect).await;
            let timed = tsload_timer::timeout(Duration::from_millis(20), conn.execute(&one(sleep)))
                .await
                .unwrap();
            assert!(
                timed.is_none(),
                "`{sleep}` ended before the 20 ms timeout: {timed:?}"
            );
            // As the worker does after a timeout: a new connection.
            drop(conn);
            let mut conn = target.connect_on_own_thread(0).await.unwrap();
            checks::select_reads_every_row(&mut conn).await;
        });
    });
    // A panic on the worker's thread fails the test with its message.
    if let Err(panic) = tokio::task::spawn_blocking(move || worker.join())
        .await
        .unwrap()
    {
        std::panic::resume_unwind(panic);
    }
}
