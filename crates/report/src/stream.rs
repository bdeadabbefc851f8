//! The two streams a run reports: its writes and its queries (a mixed run has both).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which stream a figure, an interval or a summary is of; `write` or `query` in reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKind {
    #[default]
    Write,
    Query,
}

impl StreamKind {
    /// Both, in the order reports show them.
    pub const ALL: [StreamKind; 2] = [StreamKind::Write, StreamKind::Query];

    /// The stream's word in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamKind::Write => "write",
            StreamKind::Query => "query",
        }
    }

    /// The stream of a report's word.
    pub fn of_word(word: &str) -> Option<StreamKind> {
        StreamKind::ALL.into_iter().find(|s| s.as_str() == word)
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
