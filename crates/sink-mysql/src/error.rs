//! Turns sqlx / MySQL failures into [`SinkError`]s whose kind tells the engine whether a
//! retry may succeed, by MySQL / MariaDB error number.

use sqlx::error::DatabaseError;
use sqlx::mysql::MySqlDatabaseError;
use tsload_core::{ErrorKind, SinkError};

/// The kind of a MySQL failure, from its error number.
///
/// Deadlocks and lock wait timeouts are transient conflicts; "too many connections" and a
/// server shutting down mean the server is unavailable; the client-side codes (2002..2013)
/// and a killed connection mean it could not be reached; access denied is a permission
/// problem; syntax, unknown table / column and bad values mean the statement itself was
/// refused (sending it again fails again).
pub(crate) fn kind_for_number(number: u16) -> ErrorKind {
    match number {
        // ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
        1213 | 1205 => ErrorKind::Conflict,
        // ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN, ER_TOO_MANY_USER_CONNECTIONS,
        // ER_USER_LIMIT_REACHED.
        1040 | 1053 | 1203 | 1226 => ErrorKind::Unavailable,
        // CR_CONNECTION_ERROR, CR_CONN_HOST_ERROR, CR_SERVER_GONE_ERROR, CR_SERVER_LOST,
        // ER_CONNECTION_KILLED (MariaDB), ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8).
        2002 | 2003 | 2006 | 2013 | 1927 | 4031 => ErrorKind::Connection,
        // ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR,
        // ER_COLUMNACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR,
        // ER_OPTION_PREVENTS_STATEMENT (read_only), ER_READ_ONLY_MODE.
        1044 | 1045 | 1142 | 1143 | 1227 | 1290 | 1836 => ErrorKind::Permission,
        // ER_PARSE_ERROR, ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR, ER_BAD_DB_ERROR,
        // ER_WRONG_VALUE_COUNT_ON_ROW, ER_BAD_NULL_ERROR, ER_DUP_ENTRY, ER_NET_PACKET_TOO_LARGE,
        // ER_WARN_DATA_OUT_OF_RANGE, ER_TRUNCATED_WRONG_VALUE,
        // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, ER_DATA_TOO_LONG.
        1064 | 1146 | 1054 | 1049 | 1136 | 1048 | 1062 | 1153 | 1264 | 1292 | 1366 | 1406 => {
            ErrorKind::Rejected
        }
        _ => ErrorKind::Other,
    }
}

/// MySQL's and MariaDB's server errors: their kind by error number
/// ([`kind_for_number`]), their text with the number.
pub(crate) struct Mysql;

impl tsload_sql::ServerErrors for Mysql {
    fn kind(error: &dyn DatabaseError) -> ErrorKind {
        error
            .try_downcast_ref::<MySqlDatabaseError>()
            .map_or(ErrorKind::Other, |e| kind_for_number(e.number()))
    }

    fn describe(error: &dyn DatabaseError) -> String {
        match error.try_downcast_ref::<MySqlDatabaseError>() {
            Some(e) => format!(
                "{} (MySQL error {}){}",
                error.message(),
                e.number(),
                advice(e.number())
            ),
            None => error.message().to_string(),
        }
    }
}

/// What to do about error `number`, where tsload's own settings cause it.
pub(crate) fn advice(number: u16) -> &'static str {
    match number {
        // ER_DUP_ENTRY on a data table (the ledger's is handled apart).
        1062 => {
            ": a row repeats another's primary key (primary_key = \"tags_ts\" is a row's tags \
             and time); the workload's duplicate rows (workload.duplicate_ratio) or the rows of \
             an earlier run into the same tables repeat them: set target.primary_key = \"none\" \
             or \"auto_increment\", or target.drop_existing = true"
        }
        _ => "",
    }
}

/// The kind of any sqlx failure (tsload-sql's, with MySQL's server errors).
pub(crate) fn kind_of(error: &sqlx::Error) -> ErrorKind {
    tsload_sql::kind_of::<Mysql>(error)
}

/// The driver's message, short: the server's own text and error number for database
/// errors.
pub(crate) fn describe(error: &sqlx::Error) -> String {
    tsload_sql::describe::<Mysql>(error)
}

/// A failure while working on `context` (e.g. ``table `cpu` ``), kind from [`kind_of`].
pub(crate) fn sink_error(context: &str, error: &sqlx::Error) -> SinkError {
    tsload_sql::sink_error::<Mysql>(context, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_error_numbers() {
        let cases = [
            (1213, ErrorKind::Conflict),
            (1205, ErrorKind::Conflict),
            (1040, ErrorKind::Unavailable),
            (1053, ErrorKind::Unavailable),
            (1203, ErrorKind::Unavailable),
            (2002, ErrorKind::Connection),
            (2003, ErrorKind::Connection),
            (2006, ErrorKind::Connection),
            (2013, ErrorKind::Connection),
            (1927, ErrorKind::Connection),
            (1044, ErrorKind::Permission),
            (1045, ErrorKind::Permission),
            (1142, ErrorKind::Permission),
            (1064, ErrorKind::Rejected),
            (1146, ErrorKind::Rejected),
            (1054, ErrorKind::Rejected),
            (1366, ErrorKind::Rejected),
            (1264, ErrorKind::Rejected),
            (1406, ErrorKind::Rejected),
            (1062, ErrorKind::Rejected),
            (1048, ErrorKind::Rejected),
            (1153, ErrorKind::Rejected),
            (1114, ErrorKind::Other), // table is full
            (1100, ErrorKind::Other),
            (0, ErrorKind::Other),
        ];
        for (number, kind) in cases {
            assert_eq!(kind_for_number(number), kind, "error {number}");
        }
        for retryable in [1213, 1205, 1040, 1053, 2013] {
            assert!(kind_for_number(retryable).is_retryable(), "{retryable}");
        }
        assert!(advice(1062).contains("workload.duplicate_ratio"));
        assert_eq!(advice(1064), "");
        for fatal in [1064, 1146, 1045, 1062] {
            assert!(!kind_for_number(fatal).is_retryable(), "{fatal}");
        }
    }

    #[test]
    fn maps_driver_errors() {
        let io = sqlx::Error::Io(std::io::Error::other("broken pipe"));
        assert_eq!(kind_of(&io), ErrorKind::Connection);
        assert_eq!(kind_of(&sqlx::Error::PoolClosed), ErrorKind::Connection);
        assert_eq!(kind_of(&sqlx::Error::PoolTimedOut), ErrorKind::Connection);
        assert_eq!(kind_of(&sqlx::Error::WorkerCrashed), ErrorKind::Connection);
        let protocol = sqlx::Error::Protocol("unexpected packet".into());
        assert_eq!(kind_of(&protocol), ErrorKind::Connection);
        let config = sqlx::Error::Configuration("bad url".into());
        assert_eq!(kind_of(&config), ErrorKind::Other);
        assert_eq!(kind_of(&sqlx::Error::RowNotFound), ErrorKind::Other);

        let e = sink_error("table `cpu`", &io);
        assert_eq!(e.kind, ErrorKind::Connection);
        assert!(
            e.message.starts_with("table `cpu`: ") && e.message.contains("broken pipe"),
            "{e}"
        );
    }
}
