//! A failed step of a write: the error, whether the connection is lost with it, and
//! whether the ledger shows the batch stored already.

use tsload_core::{ErrorKind, SinkError};

use crate::error::{breaks_connection, describe, kind_of};
use crate::sql;

/// A failed step: the error, and whether the connection is lost with it.
pub(super) struct Failure {
    pub(super) error: SinkError,
    pub(super) broken: bool,
    /// The ledger's primary key was violated: the batch is stored already.
    pub(super) ledger_conflict: bool,
}

impl From<SinkError> for Failure {
    fn from(error: SinkError) -> Self {
        Failure {
            error,
            broken: false,
            ledger_conflict: false,
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        SinkError::new(ErrorKind::Rejected, message).into()
    }
}

/// A driver failure while working on `context`: kind by SQLSTATE, server message.
pub(super) fn db_failure(context: &str, e: &sqlx::Error) -> Failure {
    let kind = kind_of(e);
    let ledger_conflict = matches!(e, sqlx::Error::Database(db)
        if db.is_unique_violation() && db.constraint() == Some(sql::LEDGER_KEY));
    Failure {
        error: SinkError::new(kind, format!("{context}: {}", describe(e))),
        broken: breaks_connection(kind, Some(e)),
        ledger_conflict,
    }
}

/// Whether the failure is the ledger's primary key: the batch was stored by an earlier
/// attempt (the statement waited for it if it was still committing).
pub(super) fn is_ledger_conflict(f: &Failure) -> bool {
    f.ledger_conflict
}
