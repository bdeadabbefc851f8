//! [`ProbeError`]: what can go wrong setting up or running a probe, and the short reason
//! under which a failed probe is counted in a report.

use std::io;
use std::time::Duration;

/// An error of a probe run, or of one probe.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Bad options (a zero count, an oversized payload, ...).
    #[error("invalid probe options: {0}")]
    InvalidOptions(String),

    /// An ICMP socket could not be opened for lack of privilege. `hint` names what is
    /// missing: CAP_NET_RAW for a raw socket, `net.ipv4.ping_group_range` for a datagram
    /// one.
    #[error("cannot open an ICMP {socket} socket: {source}; {hint}")]
    IcmpPermission {
        /// `raw`, `datagram`, or `raw or datagram`.
        socket: &'static str,
        source: io::Error,
        hint: String,
    },

    /// A network namespace could not be entered.
    #[error("network namespace {name}: {source}")]
    Netns { name: String, source: io::Error },

    /// Another I/O error (`what` says doing what).
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },

    /// One probe got no answer in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),

    /// An HTTP request failed before an answer.
    #[error("HTTP request to {url} failed: {source}")]
    Http { url: String, source: reqwest::Error },

    /// An HTTP answer with a status other than 2xx.
    #[error("HTTP status {status} from {url}{}", not_found_hint(*status, url))]
    HttpStatus { url: String, status: u16 },

    /// A SQL error (connecting or running the query).
    #[error("SQL: {0}")]
    Sql(#[from] sqlx::Error),
}

/// For a 404 of a URL without a path: the endpoint every line-protocol server answers.
fn not_found_hint(status: u16, url: &str) -> &'static str {
    let path = url
        .split_once("://")
        .map(|(_, rest)| rest.split_once('/').map_or("", |(_, p)| p))
        .unwrap_or("");
    if status == 404 && path.trim_matches('/').is_empty() {
        " (the URL has no path: InfluxDB, VictoriaMetrics and QuestDB answer at `/ping`, e.g. `tsload probe app http://HOST:8086/ping`)"
    } else {
        ""
    }
}

impl ProbeError {
    /// A short, stable reason for counting failed probes (`timeout`,
    /// `connection refused`, `http 503`, ...).
    pub fn reason(&self) -> String {
        match self {
            ProbeError::Timeout(_) => "timeout".to_string(),
            ProbeError::Io { source, .. } => io_reason(source),
            ProbeError::Http { source, .. } => {
                if source.is_timeout() {
                    "timeout".to_string()
                } else if source.is_connect() {
                    "connect error".to_string()
                } else {
                    "http error".to_string()
                }
            }
            ProbeError::HttpStatus { status, .. } => format!("http {status}"),
            ProbeError::Sql(e) => match e {
                sqlx::Error::Io(io) => io_reason(io),
                sqlx::Error::Database(db) => match db.code() {
                    Some(code) => format!("sql error {code}"),
                    None => "sql error".to_string(),
                },
                sqlx::Error::PoolTimedOut => "timeout".to_string(),
                _ => "sql error".to_string(),
            },
            ProbeError::InvalidOptions(_) => "invalid options".to_string(),
            ProbeError::IcmpPermission { .. } => "permission denied".to_string(),
            ProbeError::Netns { .. } => "network namespace".to_string(),
        }
    }

    /// Whether this is a probe that simply got no answer (loss) rather than an error.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ProbeError::Timeout(_)) || self.reason() == "timeout"
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> ProbeError {
        let what = what.into();
        move |source| ProbeError::Io { what, source }
    }
}

/// `connection refused`, `host unreachable`, ...: the error kind's own words, or the
/// OS error's text where the kind says nothing.
pub fn io_reason(e: &io::Error) -> String {
    let kind = e.kind().to_string();
    if e.kind() == io::ErrorKind::Other || kind == "uncategorized error" {
        e.to_string()
    } else {
        kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_short() {
        let refused = ProbeError::Io {
            what: "connecting".into(),
            source: io::Error::from(io::ErrorKind::ConnectionRefused),
        };
        assert_eq!(refused.reason(), "connection refused");
        assert!(!refused.is_timeout());
        let t = ProbeError::Timeout(Duration::from_secs(1));
        assert_eq!(t.reason(), "timeout");
        assert!(t.is_timeout());
        let s = ProbeError::HttpStatus {
            url: "http://127.0.0.1:1/ping".into(),
            status: 503,
        };
        assert_eq!(s.reason(), "http 503");
        assert_eq!(
            s.to_string(),
            "HTTP status 503 from http://127.0.0.1:1/ping"
        );
        let root = ProbeError::HttpStatus {
            url: "http://127.0.0.1:8086/".into(),
            status: 404,
        };
        assert!(root.to_string().contains("`/ping`"), "{root}");
        let pathed = ProbeError::HttpStatus {
            url: "http://127.0.0.1:8086/health".into(),
            status: 404,
        };
        assert!(!pathed.to_string().contains("/ping"), "{pathed}");
        let unreachable = io::Error::from_raw_os_error(nix::libc::EHOSTUNREACH);
        assert_eq!(io_reason(&unreachable), "host unreachable");
    }
}
