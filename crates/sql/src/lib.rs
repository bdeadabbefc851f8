//! What the SQL targets share: how a sqlx failure becomes an engine error (its kind, which
//! says whether a retry may succeed, and its message), where each database supplies only
//! the reading of its own server errors ([`ServerErrors`]); and the statement that records
//! a batch in the exactly-once ledger ([`tsload_core::LEDGER_TABLE`]) and commits; the
//! stored check's row count per device ([`count_rows`]); and
//! the read buffer, statement cache and socket of the targets' own wire connections
//! ([`read_buffer`], [`statement_cache`], [`socket`]).

pub mod read_buffer;
pub mod socket;
pub mod statement_cache;

use sqlx::error::DatabaseError;
use tsload_core::{ErrorKind, SinkError};

/// How one database's server errors read: the only part of a sqlx failure that differs
/// between the SQL targets.
pub trait ServerErrors {
    /// The kind of an error the server answered with (its SQLSTATE, error number or
    /// result code).
    fn kind(error: &dyn DatabaseError) -> ErrorKind;

    /// The server's error as a message: its own text, with its code and detail.
    fn describe(error: &dyn DatabaseError) -> String;
}

/// The kind of any sqlx failure: the server's errors as `S` reads them; a certificate the
/// client does not trust is a permission problem (no retry changes it); I/O, TLS and
/// protocol failures and a closed pool or crashed worker mean the connection is gone; a
/// value that cannot be encoded is refused.
pub fn kind_of<S: ServerErrors>(error: &sqlx::Error) -> ErrorKind {
    if tsload_tls::certificate_hint_of(error).is_some() {
        return ErrorKind::Permission;
    }
    match error {
        sqlx::Error::Database(db) => S::kind(db.as_ref()),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => ErrorKind::Connection,
        sqlx::Error::Encode(_) | sqlx::Error::InvalidArgument(_) => ErrorKind::Rejected,
        _ => ErrorKind::Other,
    }
}

/// The driver's message, short: the server's own for its errors, else sqlx's, with what
/// to do about an untrusted certificate.
pub fn describe<S: ServerErrors>(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(db) => S::describe(db.as_ref()),
        other => match tsload_tls::certificate_hint_of(other) {
            Some(hint) => format!("{other}; {hint}"),
            None => other.to_string(),
        },
    }
}

/// A failure while working on `context` (e.g. `table "cpu"`), its kind from [`kind_of`].
pub fn sink_error<S: ServerErrors>(context: &str, error: &sqlx::Error) -> SinkError {
    SinkError::new(
        kind_of::<S>(error),
        format!("{context}: {}", describe::<S>(error)),
    )
}

/// Records batch `seq` of `worker` in the ledger and commits, in one round trip: a text
/// query of two statements, run inside the open transaction, whose COMMIT runs only if the
/// INSERT succeeded (a second attempt of a stored batch violates the ledger's key).
/// Numbers only, so literals are safe and no prepared statement is needed. PostgreSQL and
/// MySQL/MariaDB take the same text.
pub fn ledger_and_commit(run_id: i64, worker: u32, seq: u64, rows: usize) -> String {
    format!(
        "INSERT INTO {} (run_id, worker, seq, batch_rows) \
         VALUES ({run_id}, {worker}, {seq}, {rows}); COMMIT",
        tsload_core::LEDGER_TABLE
    )
}

/// The rows of one table for the stored check ([`tsload_core::Sink::tally`]): `text`
/// answers `(key, count)` rows, `SELECT <key as text>, count(*) FROM t GROUP BY <key>`
/// with `names` (the run's devices, whose counts are summed) or `SELECT '', count(*)
/// FROM t` without (its one count).
pub async fn count_rows<'c, DB>(
    conn: &'c mut DB::Connection,
    text: &str,
    names: Option<&tsload_core::stored::DeviceNames>,
) -> Result<u64, sqlx::Error>
where
    DB: sqlx::Database,
    &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'r> (Option<String>, i64): sqlx::FromRow<'r, DB::Row>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
{
    let counts: Vec<(Option<String>, i64)> = sqlx::query_as::<DB, _>(text).fetch_all(conn).await?;
    let counts = counts
        .into_iter()
        .map(|(key, n)| (key.unwrap_or_default(), n.max(0) as u64));
    Ok(match names {
        Some(names) => names.own(counts),
        None => counts.map(|(_, n)| n).fold(0, u64::saturating_add),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database whose every server error is a conflict: only transport failures are
    /// read by the shared code.
    struct Conflicts;

    impl ServerErrors for Conflicts {
        fn kind(_: &dyn DatabaseError) -> ErrorKind {
            ErrorKind::Conflict
        }

        fn describe(error: &dyn DatabaseError) -> String {
            format!("server: {}", error.message())
        }
    }

    #[test]
    fn transport_failures_have_the_same_kind_for_every_database() {
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        ));
        assert_eq!(kind_of::<Conflicts>(&io), ErrorKind::Connection);
        assert_eq!(
            kind_of::<Conflicts>(&sqlx::Error::PoolTimedOut),
            ErrorKind::Connection
        );
        assert_eq!(
            kind_of::<Conflicts>(&sqlx::Error::WorkerCrashed),
            ErrorKind::Connection
        );
        assert_eq!(
            kind_of::<Conflicts>(&sqlx::Error::Protocol("bad packet".into())),
            ErrorKind::Connection
        );
        assert_eq!(
            kind_of::<Conflicts>(&sqlx::Error::InvalidArgument("x".into())),
            ErrorKind::Rejected
        );
        assert_eq!(
            kind_of::<Conflicts>(&sqlx::Error::RowNotFound),
            ErrorKind::Other
        );
        let e = sink_error::<Conflicts>("table \"cpu\"", &io);
        assert_eq!(e.kind, ErrorKind::Connection);
        assert_eq!(
            e.message,
            "table \"cpu\": error communicating with database: reset by peer"
        );
    }

    #[test]
    fn the_ledger_row_and_the_commit_are_one_text() {
        assert_eq!(
            ledger_and_commit(7, 2, 41, 1000),
            "INSERT INTO tsload_ledger (run_id, worker, seq, batch_rows) \
             VALUES (7, 2, 41, 1000); COMMIT"
        );
    }
}
