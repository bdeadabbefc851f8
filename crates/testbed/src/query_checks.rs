//! Checks of a read target's connection ([`QueryConn`]) that every SQL target passes,
//! shared by the sink crates' tests: request builders, error assertions, and scenarios on
//! a table `t(id, k, v, s)` that the target itself fills. What differs between databases
//! (placeholders, DDL, the server's messages) comes in a [`SqlDialect`]; how a test reads
//! the table from outside the target, in an [`Outside`].
//!
//! This file uses only `std` and `tsload-core`, so that a crate whose tests start no
//! server (tsload-sink-sqlite) can include it with `#[path]` instead of depending on the
//! testbed. Checks that need a running server are in [`crate::sql_server_checks`].

use std::future::Future;

use tsload_core::{ErrorKind, Param, QueryAck, QueryConn, QueryRequest, SinkError, Statement};

/// Rows of the test table `t`: ids `0..ROWS`.
pub const ROWS: i64 = 50;

/// A request of `statements`, inside a transaction or not.
pub fn request(statements: Vec<Statement>, transaction: bool) -> QueryRequest {
    QueryRequest {
        kind: 0,
        statements,
        transaction,
        ..Default::default()
    }
}

/// A request of one statement without parameters, outside a transaction.
pub fn one(text: &str) -> QueryRequest {
    request(vec![Statement::new(text)], false)
}

/// The acknowledgement of `rows` rows over `statements` statements.
pub fn ack(rows: u64, statements: u64) -> QueryAck {
    QueryAck { rows, statements }
}

/// Asserts that `err` is of `kind` and that its message contains each of `parts`.
#[track_caller]
pub fn assert_error(err: &SinkError, kind: ErrorKind, parts: &[&str]) {
    assert_eq!(err.kind, kind, "{err}");
    for part in parts {
        assert!(err.message.contains(part), "expected {part:?} in: {err}");
    }
}

/// Asserts that `err` is [`ErrorKind::Rejected`] and names both the statement (`label`)
/// and what the server said (`server`).
#[track_caller]
pub fn assert_rejected(err: &SinkError, label: &str, server: &str) {
    assert_error(err, ErrorKind::Rejected, &[label, server]);
}

/// What the checks need to know about one SQL database.
#[derive(Clone, Copy)]
pub struct SqlDialect {
    /// Whether bind parameters are numbered, `$1, $2, ...` (PostgreSQL), rather than `?`.
    pub numbered_placeholders: bool,
    /// `CREATE TABLE t (...)`: `id` an integer primary key, `k` an integer, `v` a double,
    /// `s` a text.
    pub create_table: &'static str,
    /// The server's message about a table `name` that does not exist, as the target
    /// reports it.
    pub missing_table: fn(name: &str) -> String,
    /// Part of the server's message about the syntax error in `SELEC 1`.
    pub syntax_error: &'static str,
}

impl SqlDialect {
    /// `text`, written with `?` placeholders, in this dialect's placeholder style.
    pub fn text(&self, text: &str) -> String {
        if !self.numbered_placeholders {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len() + 8);
        let mut n = 0;
        for c in text.chars() {
            if c == '?' {
                n += 1;
                out.push_str(&format!("${n}"));
            } else {
                out.push(c);
            }
        }
        out
    }

    /// A statement of `text` (written with `?` placeholders) binding `params`.
    pub fn statement(&self, text: &str, params: Vec<Param>) -> Statement {
        Statement::with_params(self.text(text), params)
    }

    /// A request of that one statement, outside a transaction.
    pub fn bound(&self, text: &str, params: Vec<Param>) -> QueryRequest {
        request(vec![self.statement(text, params)], false)
    }
}

/// The database seen from outside the target (its own client or connection), to check
/// what a request committed.
pub trait Outside {
    /// The one number that `query` (e.g. `SELECT count(*) FROM t WHERE ...`) returns.
    fn count(&self, query: &str) -> impl Future<Output = u64>;
}

/// Creates `t` through the target and fills it, one prepared INSERT a request, with ids
/// `0..ROWS`: `k = id % 5`, `v = id / 2`, `s = "s{id % 3}"`.
pub async fn fill_table<C: QueryConn>(conn: &mut C, d: &SqlDialect) {
    let created = conn.execute(&one(d.create_table)).await.unwrap();
    assert_eq!(created, ack(0, 1));
    for id in 0..ROWS {
        let insert = d.bound(
            "INSERT INTO t (id, k, v, s) VALUES (?, ?, ?, ?)",
            vec![
                Param::Int(id),
                Param::Int(id % 5),
                Param::Float(id as f64 / 2.0),
                Param::Text(format!("s{}", id % 3)),
            ],
        );
        let done = conn.execute(&insert).await.unwrap();
        assert_eq!(done, ack(1, 1), "insert {id}");
    }
}

/// A SELECT counts every row it returns; two statements sum their rows and both count;
/// a SELECT of no rows counts 0.
pub async fn select_reads_every_row<C: QueryConn>(conn: &mut C) {
    let all = conn.execute(&one("SELECT * FROM t")).await.unwrap();
    assert_eq!(all, ack(ROWS as u64, 1));
    let two = request(
        vec![
            Statement::new("SELECT id FROM t WHERE id < 7"),
            Statement::new("SELECT id FROM t WHERE id >= 40"),
        ],
        false,
    );
    assert_eq!(conn.execute(&two).await.unwrap(), ack(17, 2));
    let none = conn.execute(&one("SELECT * FROM t WHERE id < 0")).await;
    assert_eq!(none.unwrap(), ack(0, 1));
}

/// Int, float and text parameters bind: the SELECT returns the rows they select, twice
/// (the second run uses the cached prepared statement).
pub async fn parameters_bind_int_float_and_text<C: QueryConn>(conn: &mut C, d: &SqlDialect) {
    let expected = (0..ROWS)
        .filter(|id| id % 5 == 1 && *id as f64 / 2.0 > 3.0 && id % 3 == 2)
        .count() as u64;
    assert!(expected > 0);
    let select = d.bound(
        "SELECT id, v, s FROM t WHERE k = ? AND v > ? AND s = ?",
        vec![Param::Int(1), Param::Float(3.0), Param::Text("s2".into())],
    );
    for _ in 0..2 {
        assert_eq!(conn.execute(&select).await.unwrap(), ack(expected, 1));
    }
}

/// UPDATE and DELETE count the rows they change; a SELECT after them counts its own rows
/// only (SQLite, for one, still reports the UPDATE's changes after an empty SELECT).
pub async fn data_changes_count_changed_rows<C: QueryConn>(conn: &mut C, d: &SqlDialect) {
    let update = d.bound("UPDATE t SET v = v + 1 WHERE k = ?", vec![Param::Int(0)]);
    assert_eq!(conn.execute(&update).await.unwrap(), ack(10, 1));
    let empty = conn.execute(&one("SELECT id FROM t WHERE id < 0")).await;
    assert_eq!(empty.unwrap(), ack(0, 1));
    let deleted = conn.execute(&one("DELETE FROM t WHERE id >= 45")).await;
    assert_eq!(deleted.unwrap(), ack(5, 1));
}

/// A transaction's UPDATE is committed, and its SELECT sees the change.
pub async fn transaction_commits<C: QueryConn>(
    conn: &mut C,
    d: &SqlDialect,
    outside: &impl Outside,
) {
    let tx = request(
        vec![
            d.statement(
                "UPDATE t SET s = ? WHERE id = ?",
                vec![Param::Text("changed".into()), Param::Int(3)],
            ),
            d.statement(
                "SELECT s FROM t WHERE s = ?",
                vec![Param::Text("changed".into())],
            ),
        ],
        true,
    );
    assert_eq!(conn.execute(&tx).await.unwrap(), ack(2, 2));
    let changed = outside.count("SELECT count(*) FROM t WHERE s = 'changed'");
    assert_eq!(changed.await, 1);
}

/// A transaction whose statement 2 fails is rejected naming that statement and the
/// server's message, its UPDATE is rolled back, and the connection is not left inside
/// the (aborted) transaction.
pub async fn failing_transaction_rolls_back_and_names_the_statement<C: QueryConn>(
    conn: &mut C,
    d: &SqlDialect,
    outside: &impl Outside,
) {
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
        &(d.missing_table)("missing_table"),
    );
    let gone = "SELECT count(*) FROM t WHERE s = 'gone'";
    assert_eq!(outside.count(gone).await, 0);
    let next = conn.execute(&one("SELECT * FROM t")).await.unwrap();
    assert_eq!(next, ack(ROWS as u64, 1));
    assert_eq!(outside.count(gone).await, 0);
}

/// A missing table, a syntax error and a missing table in a statement with parameters
/// are each rejected naming the statement and the server's message, and the next
/// request succeeds.
pub async fn errors_are_rejected_and_the_next_request_succeeds<C: QueryConn>(
    conn: &mut C,
    d: &SqlDialect,
) {
    let missing = (d.missing_table)("nowhere");
    let err = conn.execute(&one("SELECT * FROM nowhere")).await;
    assert_rejected(
        &err.unwrap_err(),
        "statement 1 `SELECT * FROM nowhere`",
        &missing,
    );
    let err = conn.execute(&one("SELEC 1")).await.unwrap_err();
    assert_rejected(&err, "statement 1 `SELEC 1`", d.syntax_error);
    let with_params = d.bound("SELECT * FROM nowhere WHERE id = ?", vec![Param::Int(1)]);
    let err = conn.execute(&with_params).await.unwrap_err();
    let label = format!("statement 1 `{}`", with_params.statements[0].text);
    assert_rejected(&err, &label, &missing);
    let next = conn.execute(&one("SELECT * FROM t")).await.unwrap();
    assert_eq!(next, ack(ROWS as u64, 1));
}
