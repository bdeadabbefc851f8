//! Turns sqlx / SQLite failures into [`SinkError`]s whose kind tells the engine whether a
//! retry may succeed.

use sqlx::error::DatabaseError;
use tsload_core::{ErrorKind, SinkError};

// Primary SQLite result codes (an extended code's low byte is its primary code).
const SQLITE_ERROR: i32 = 1;
const SQLITE_PERM: i32 = 3;
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;
const SQLITE_READONLY: i32 = 8;
const SQLITE_IOERR: i32 = 10;
const SQLITE_CANTOPEN: i32 = 14;
const SQLITE_TOOBIG: i32 = 18;
const SQLITE_CONSTRAINT: i32 = 19;
const SQLITE_MISMATCH: i32 = 20;
const SQLITE_AUTH: i32 = 23;
const SQLITE_RANGE: i32 = 25;

/// The kind of a SQLite failure, from its (possibly extended) result code and message.
///
/// BUSY / LOCKED are transient lock conflicts (retryable); I/O errors mean the database
/// could not be reached; PERM / READONLY / CANTOPEN / AUTH are missing rights; SQL,
/// constraint and type errors mean the statement itself was refused.
pub(crate) fn kind_for_code(code: Option<i32>, message: &str) -> ErrorKind {
    let locked = message.contains("database is locked") || message.contains("table is locked");
    match code.map(|c| c & 0xff) {
        Some(SQLITE_BUSY | SQLITE_LOCKED) => ErrorKind::Conflict,
        _ if locked => ErrorKind::Conflict,
        Some(SQLITE_IOERR) => ErrorKind::Connection,
        Some(SQLITE_PERM | SQLITE_READONLY | SQLITE_CANTOPEN | SQLITE_AUTH) => {
            ErrorKind::Permission
        }
        Some(SQLITE_ERROR | SQLITE_TOOBIG | SQLITE_CONSTRAINT | SQLITE_MISMATCH | SQLITE_RANGE) => {
            ErrorKind::Rejected
        }
        _ => ErrorKind::Other,
    }
}

/// SQLite's errors: their kind by result code and message ([`kind_for_code`]), their
/// text with the code.
pub(crate) struct Sqlite;

impl tsload_sql::ServerErrors for Sqlite {
    fn kind(error: &dyn DatabaseError) -> ErrorKind {
        let code = error.code().and_then(|c| c.parse::<i32>().ok());
        kind_for_code(code, error.message())
    }

    fn describe(error: &dyn DatabaseError) -> String {
        match error.code() {
            Some(code) => format!("{} (SQLite code {code})", error.message()),
            None => error.message().to_string(),
        }
    }
}

/// The driver's message, short: SQLite's own text and code for database errors.
pub(crate) fn describe(error: &sqlx::Error) -> String {
    tsload_sql::describe::<Sqlite>(error)
}

/// A failure while working on `context` (e.g. `table "cpu"`), kind from
/// [`tsload_sql::kind_of`].
pub(crate) fn sink_error(context: &str, error: &sqlx::Error) -> SinkError {
    tsload_sql::sink_error::<Sqlite>(context, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_result_codes() {
        let cases = [
            (5, ErrorKind::Conflict),     // BUSY
            (517, ErrorKind::Conflict),   // BUSY_SNAPSHOT
            (6, ErrorKind::Conflict),     // LOCKED
            (262, ErrorKind::Conflict),   // LOCKED_SHAREDCACHE
            (10, ErrorKind::Connection),  // IOERR
            (266, ErrorKind::Connection), // IOERR_READ
            (3, ErrorKind::Permission),   // PERM
            (8, ErrorKind::Permission),   // READONLY
            (14, ErrorKind::Permission),  // CANTOPEN
            (23, ErrorKind::Permission),  // AUTH
            (1, ErrorKind::Rejected),     // ERROR: no such table / column
            (19, ErrorKind::Rejected),    // CONSTRAINT
            (2067, ErrorKind::Rejected),  // CONSTRAINT_UNIQUE
            (1299, ErrorKind::Rejected),  // CONSTRAINT_NOTNULL
            (20, ErrorKind::Rejected),    // MISMATCH
            (25, ErrorKind::Rejected),    // RANGE
            (13, ErrorKind::Other),       // FULL
            (11, ErrorKind::Other),       // CORRUPT
        ];
        for (code, kind) in cases {
            assert_eq!(kind_for_code(Some(code), "x"), kind, "code {code}");
        }
        assert!(kind_for_code(Some(5), "").is_retryable());
        assert!(!kind_for_code(Some(1), "").is_retryable());
    }

    #[test]
    fn maps_lock_messages_without_a_code() {
        assert_eq!(
            kind_for_code(None, "database is locked"),
            ErrorKind::Conflict
        );
        assert_eq!(
            kind_for_code(None, "database table is locked"),
            ErrorKind::Conflict
        );
        assert_eq!(kind_for_code(None, "something else"), ErrorKind::Other);
    }

    #[test]
    fn maps_driver_errors() {
        let io = sqlx::Error::Io(std::io::Error::other("broken"));
        assert_eq!(tsload_sql::kind_of::<Sqlite>(&io), ErrorKind::Connection);
        assert_eq!(
            tsload_sql::kind_of::<Sqlite>(&sqlx::Error::WorkerCrashed),
            ErrorKind::Connection
        );
        assert_eq!(
            tsload_sql::kind_of::<Sqlite>(&sqlx::Error::PoolClosed),
            ErrorKind::Connection
        );
        let config = sqlx::Error::Configuration("bad url".into());
        assert_eq!(tsload_sql::kind_of::<Sqlite>(&config), ErrorKind::Other);

        let e = sink_error("table \"cpu\"", &io);
        assert_eq!(e.kind, ErrorKind::Connection);
        assert!(
            e.message.starts_with("table \"cpu\": ") && e.message.contains("broken"),
            "{e}"
        );
    }
}
