//! Turns sqlx / PostgreSQL failures into [`SinkError`]s whose kind, from the SQLSTATE
//! code, tells the engine whether a retry may succeed; and keeps passwords out of every
//! message (connection URLs are shown redacted).

use sqlx::error::DatabaseError;
use sqlx::postgres::{PgDatabaseError, PgSeverity};
use tsload_core::{ErrorKind, SinkError};

/// The kind of a PostgreSQL error from its SQLSTATE code.
///
/// - `40001` serialization_failure, `40P01` deadlock_detected, `55P03` lock_not_available:
///   transient conflicts ([`ErrorKind::Conflict`]).
/// - `53300` too_many_connections, `57P01` admin_shutdown, `57P02` crash_shutdown, `57P03`
///   cannot_connect_now: the server is unavailable for now.
/// - class `08` connection exceptions: [`ErrorKind::Connection`].
/// - `42501` insufficient_privilege and class `28` (invalid authorization):
///   [`ErrorKind::Permission`].
/// - classes `42` (syntax error, undefined table/column), `22` (data exceptions) and `23`
///   (constraint violations): the statement was refused ([`ErrorKind::Rejected`]).
/// - anything else: [`ErrorKind::Other`].
pub(crate) fn kind_for_sqlstate(code: &str) -> ErrorKind {
    match code {
        "40001" | "40P01" | "55P03" => ErrorKind::Conflict,
        "53300" | "57P01" | "57P02" | "57P03" => ErrorKind::Unavailable,
        "42501" => ErrorKind::Permission,
        _ => match code.get(..2) {
            Some("08") => ErrorKind::Connection,
            Some("28") => ErrorKind::Permission,
            Some("42" | "22" | "23") => ErrorKind::Rejected,
            _ => ErrorKind::Other,
        },
    }
}

/// PostgreSQL's server errors: their kind by SQLSTATE ([`kind_for_sqlstate`]), their
/// text with the SQLSTATE and the detail.
pub(crate) struct Postgres;

impl tsload_sql::ServerErrors for Postgres {
    fn kind(error: &dyn DatabaseError) -> ErrorKind {
        match error.code() {
            Some(code) => kind_for_sqlstate(&code),
            None => ErrorKind::Other,
        }
    }

    fn describe(error: &dyn DatabaseError) -> String {
        let mut out = error.message().to_string();
        if let Some(code) = error.code() {
            out.push_str(&format!(" (SQLSTATE {code})"));
        }
        if let Some(detail) = error
            .try_downcast_ref::<PgDatabaseError>()
            .and_then(PgDatabaseError::detail)
        {
            out.push_str(&format!("; {detail}"));
        }
        out
    }
}

/// The kind of any sqlx failure (tsload-sql's, with PostgreSQL's server errors).
pub(crate) fn kind_of(error: &sqlx::Error) -> ErrorKind {
    tsload_sql::kind_of::<Postgres>(error)
}

/// Whether the connection cannot be used after `error` (the next write reconnects): the
/// kinds that say so, or a FATAL / PANIC server error (the server closes the session).
pub(crate) fn breaks_connection(kind: ErrorKind, error: Option<&sqlx::Error>) -> bool {
    if matches!(kind, ErrorKind::Connection | ErrorKind::Unavailable) {
        return true;
    }
    let Some(sqlx::Error::Database(db)) = error else {
        return false;
    };
    db.try_downcast_ref::<PgDatabaseError>()
        .is_some_and(|pg| matches!(pg.severity(), PgSeverity::Fatal | PgSeverity::Panic))
}

/// The driver's message: for server errors the server's text, SQLSTATE and detail.
pub(crate) fn describe(error: &sqlx::Error) -> String {
    tsload_sql::describe::<Postgres>(error)
}

/// A failure while working on `context` (e.g. `table "cpu"`), kind from [`kind_of`].
pub(crate) fn sink_error(context: &str, error: &sqlx::Error) -> SinkError {
    tsload_sql::sink_error::<Postgres>(context, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_sqlstates() {
        let cases = [
            ("40001", ErrorKind::Conflict),    // serialization_failure
            ("40P01", ErrorKind::Conflict),    // deadlock_detected
            ("55P03", ErrorKind::Conflict),    // lock_not_available
            ("53300", ErrorKind::Unavailable), // too_many_connections
            ("57P01", ErrorKind::Unavailable), // admin_shutdown
            ("57P02", ErrorKind::Unavailable), // crash_shutdown
            ("57P03", ErrorKind::Unavailable), // cannot_connect_now
            ("08000", ErrorKind::Connection),  // connection_exception
            ("08006", ErrorKind::Connection),  // connection_failure
            ("08P01", ErrorKind::Connection),  // protocol_violation
            ("42501", ErrorKind::Permission),  // insufficient_privilege
            ("28000", ErrorKind::Permission),  // invalid_authorization_specification
            ("28P01", ErrorKind::Permission),  // invalid_password
            ("42601", ErrorKind::Rejected),    // syntax_error
            ("42P01", ErrorKind::Rejected),    // undefined_table
            ("42703", ErrorKind::Rejected),    // undefined_column
            ("42804", ErrorKind::Rejected),    // datatype_mismatch
            ("22001", ErrorKind::Rejected),    // string_data_right_truncation
            ("22003", ErrorKind::Rejected),    // numeric_value_out_of_range
            ("22P03", ErrorKind::Rejected),    // invalid_binary_representation
            ("23505", ErrorKind::Rejected),    // unique_violation
            ("23502", ErrorKind::Rejected),    // not_null_violation
            ("0A000", ErrorKind::Other),       // feature_not_supported
            ("53100", ErrorKind::Other),       // disk_full
            ("57014", ErrorKind::Other),       // query_canceled
            ("XX000", ErrorKind::Other),       // internal_error
            ("", ErrorKind::Other),
        ];
        for (code, kind) in cases {
            assert_eq!(kind_for_sqlstate(code), kind, "SQLSTATE {code}");
        }
        assert!(kind_for_sqlstate("40P01").is_retryable());
        assert!(kind_for_sqlstate("57P01").is_retryable());
        assert!(!kind_for_sqlstate("42P01").is_retryable());
    }

    #[test]
    fn maps_driver_errors() {
        let io = sqlx::Error::Io(std::io::Error::other("reset"));
        assert_eq!(kind_of(&io), ErrorKind::Connection);
        assert_eq!(kind_of(&sqlx::Error::PoolClosed), ErrorKind::Connection);
        assert_eq!(kind_of(&sqlx::Error::WorkerCrashed), ErrorKind::Connection);
        assert_eq!(
            kind_of(&sqlx::Error::Protocol("eof".into())),
            ErrorKind::Connection
        );
        assert_eq!(
            kind_of(&sqlx::Error::Configuration("x".into())),
            ErrorKind::Other
        );
        assert_eq!(
            kind_of(&sqlx::Error::Encode("x".into())),
            ErrorKind::Rejected
        );

        let e = sink_error("table \"cpu\"", &io);
        assert_eq!(e.kind, ErrorKind::Connection);
        assert!(
            e.message.starts_with("table \"cpu\": ") && e.message.contains("reset"),
            "{e}"
        );
        assert!(breaks_connection(ErrorKind::Connection, Some(&io)));
        assert!(breaks_connection(ErrorKind::Unavailable, None));
        assert!(!breaks_connection(ErrorKind::Rejected, None));
        assert!(!breaks_connection(ErrorKind::Conflict, None));
    }
}
