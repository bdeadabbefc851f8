//! The one error type of the testbed: every message says what failed, where, and (for a
//! server that would not start) the tail of its log.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::ServerKind;

/// Why a server could not be started or a helper query failed.
///
/// `Debug` prints the same text as `Display`, so `Server::start(..).unwrap()` in a test
/// shows a readable message (with the server's log tail) instead of a struct dump.
#[derive(thiserror::Error)]
pub enum TestbedError {
    /// A binary, jar or the Java runtime is not installed.
    #[error("{what} not found ({looked}); {install}")]
    Missing {
        what: String,
        looked: String,
        install: String,
    },
    /// A file-system step of the set-up failed (temp dir, config file, log file), or a
    /// command-line client could not be run.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The server process could not be spawned.
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The server exited before it answered its readiness probe.
    #[error(
        "{kind} exited during start-up with {status} (attempt {attempt} of {attempts}){hint}\n--- last lines of its log ---\n{log}"
    )]
    Exited {
        kind: ServerKind,
        status: String,
        attempt: u32,
        attempts: u32,
        hint: String,
        log: String,
    },
    /// A set-up step before the server starts (`initdb`, `mariadb-install-db`) failed.
    #[error("{kind}: {step} failed ({status}){hint}\n--- last lines of its output ---\n{log}")]
    Setup {
        kind: ServerKind,
        step: String,
        status: String,
        hint: String,
        log: String,
    },
    /// The server kept running but did not answer its readiness probe in time.
    #[error(
        "{kind} was not ready within {timeout:?} ({probe}: {last})\n--- last lines of its log ---\n{log}"
    )]
    NotReady {
        kind: ServerKind,
        timeout: Duration,
        probe: String,
        last: String,
        log: String,
    },
    /// An HTTP request failed below HTTP (connection refused, timeout, ...).
    #[error("{method} {url}: {message}")]
    Transport {
        method: &'static str,
        url: String,
        message: String,
    },
    /// The server answered with an unexpected HTTP status.
    #[error("{method} {url} answered HTTP {status}: {body}")]
    Status {
        method: &'static str,
        url: String,
        status: u16,
        body: String,
    },
    /// The server answered, but not what the helper expected (bad JSON, a query error).
    #[error("{what}: {detail}")]
    Answer { what: String, detail: String },
    /// A condition polled for (e.g. QuestDB's WAL applied) did not hold in time.
    #[error("{what} did not happen within {timeout:?}: {detail}")]
    Timeout {
        what: String,
        timeout: Duration,
        detail: String,
    },
}

impl fmt::Debug for TestbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl TestbedError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> TestbedError {
        TestbedError::Io {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn answer(what: impl Into<String>, detail: impl Into<String>) -> TestbedError {
        TestbedError::Answer {
            what: what.into(),
            detail: detail.into(),
        }
    }
}
