//! The one error type of this crate: bad settings, a query type a dialect cannot express,
//! a spec that does not fit its type.

use crate::types::{QueryType, all_names};

/// Why a query workload cannot be built or a query cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A setting of the workload is out of range; `key` names it (`scale`, `end`,
    /// `types`, `queries`, ...).
    #[error("{key}: {message}")]
    Config { key: String, message: String },

    /// No such TSBS devops query type.
    #[error("unknown query type {name:?}; expected one of: {}", all_names())]
    UnknownType { name: String },

    /// The dialect has no equivalent of this query type.
    #[error("query type {query_type} cannot be expressed in {dialect}: {reason}")]
    Unsupported {
        query_type: QueryType,
        dialect: &'static str,
        reason: &'static str,
    },

    /// A [`crate::QuerySpec`] that does not fit its query type (wrong host count, no
    /// window, ...).
    #[error("query spec for {query_type}: {message}")]
    BadSpec {
        query_type: QueryType,
        message: String,
    },
}

impl QueryError {
    pub(crate) fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        QueryError::Config {
            key: key.into(),
            message: message.into(),
        }
    }
}
