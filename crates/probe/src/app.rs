//! Application RTT: the time of one request/answer over one kept-alive connection.
//!
//! [`AppPing`] is one such request; [`run_app`] times `count` of them, one every
//! `interval`. Two kinds come with the crate:
//!
//! - [`HttpPing`]: an HTTP/1.1 GET of a path through reqwest, one connection kept
//!   alive (InfluxDB [`INFLUXDB_PING`], VictoriaMetrics [`VICTORIAMETRICS_HEALTH`],
//!   QuestDB [`QUESTDB_SELECT_1`]); a 2xx answer is a reply, any other status an error.
//! - [`SqlPing`]: `SELECT 1` through sqlx on one PostgreSQL or MySQL/MariaDB
//!   connection (a prepared statement, so one round trip per ping).
//!
//! Both `connect` with one untimed request, so the timed ones never include opening
//! the connection (nor, for SQL, preparing the statement). A request that times out is
//! abandoned; the next one may then have to open a new connection, and that time is
//! part of its RTT.

use std::future::Future;
use std::time::Duration;

use reqwest::Url;
use sqlx::Connection as _;

use crate::error::ProbeError;
use crate::netns::maybe_in_netns;
use crate::report::{ProbeKind, ProbeReport};
use crate::sequential::{Sequential, validate};

/// InfluxDB 1.x/2.x's health endpoint (204 No Content).
pub const INFLUXDB_PING: &str = "/ping";
/// VictoriaMetrics' health endpoint (200 OK).
pub const VICTORIAMETRICS_HEALTH: &str = "/health";
/// QuestDB's SQL-over-HTTP endpoint running `select 1`.
pub const QUESTDB_SELECT_1: &str = "/exec?query=select%201";

/// One application-level request/answer.
///
/// Implement it with `async fn ping(&mut self) -> Result<(), ProbeError>`; the
/// declared form only adds that the future is `Send` (as tsload-core's `SinkConn`).
pub trait AppPing {
    /// Sends one request and waits for its answer: `Ok` if it was a good one.
    fn ping(&mut self) -> impl Future<Output = Result<(), ProbeError>> + Send;
}

/// How many application pings, how often, how long each may take.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// Pings to time (at least 1).
    pub count: u64,
    /// From one ping to the next (default 1 s; zero: back to back).
    pub interval: Duration,
    /// How long a ping may take before it counts as lost (default 10 s).
    pub timeout: Duration,
    /// For [`http_rtt`] and [`sql_rtt`]: connect and ping from inside this network
    /// namespace. ([`run_app`] runs wherever it is called.)
    pub netns: Option<String>,
    /// For `https://` URLs in [`http_rtt`]: which certificates are trusted.
    pub tls: tsload_tls::TlsOptions,
    /// For [`http_rtt`]: connect to this address's IP instead of the URL host's (a delay
    /// proxy in between), keeping the host name for TLS and the `Host` header. reqwest
    /// keeps the URL's port: the URL must name this address's port.
    pub connect_to: Option<std::net::SocketAddr>,
}

impl AppOptions {
    /// `count` pings, one a second, 10 s timeout.
    pub fn new(count: u64) -> Self {
        AppOptions {
            count,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            netns: None,
            tls: tsload_tls::TlsOptions::default(),
            connect_to: None,
        }
    }
}

/// Times `opts.count` pings of `ping`, one at a time, and reports them as `kind` on
/// `target`.
pub async fn run_app<P: AppPing>(
    ping: &mut P,
    kind: ProbeKind,
    target: &str,
    opts: &AppOptions,
) -> Result<ProbeReport, ProbeError> {
    validate(opts.count, opts.timeout)?;
    let mut seq = Sequential::new(opts.interval, opts.timeout);
    for _ in 0..opts.count {
        seq.wait_turn().await;
        seq.probe(ping.ping()).await;
    }
    Ok(seq.report(kind, target))
}

/// Connects an [`HttpPing`] to `url` and times `opts.count` GETs.
pub async fn http_rtt(url: &str, opts: &AppOptions) -> Result<ProbeReport, ProbeError> {
    validate(opts.count, opts.timeout)?;
    let (url, o) = (url.to_string(), opts.clone());
    maybe_in_netns(opts.netns.as_deref(), move || async move {
        let mut ping = HttpPing::connect_via(&url, o.timeout, &o.tls, o.connect_to).await?;
        let target = ping.target().to_string();
        run_app(&mut ping, ProbeKind::Http, &target, &o).await
    })
    .await
}

/// Connects a [`SqlPing`] to `url` and times `opts.count` `SELECT 1`s.
pub async fn sql_rtt(url: &str, opts: &AppOptions) -> Result<ProbeReport, ProbeError> {
    validate(opts.count, opts.timeout)?;
    let (url, o) = (url.to_string(), opts.clone());
    maybe_in_netns(opts.netns.as_deref(), move || async move {
        let mut ping = tokio::time::timeout(o.timeout, SqlPing::connect(&url))
            .await
            .map_err(|_| ProbeError::Timeout(o.timeout))??;
        run_app(&mut ping, ProbeKind::Sql, &redact(&url), &o).await
    })
    .await
}

/// `url` with its secrets hidden, for reports and messages: tsload's one redaction.
pub use tsload_redact::url as redact;

/// An HTTP GET of one URL over one kept-alive HTTP/1.1 connection.
#[derive(Debug)]
pub struct HttpPing {
    client: reqwest::Client,
    url: Url,
    shown: String,
}

impl HttpPing {
    /// Parses `url` (`http://` or `https://`, verified as `tls` says), opens the
    /// connection with one untimed GET (which must answer 2xx) and keeps it. `timeout`
    /// bounds that first GET and every connection attempt.
    pub async fn connect(
        url: &str,
        timeout: Duration,
        tls: &tsload_tls::TlsOptions,
    ) -> Result<Self, ProbeError> {
        HttpPing::connect_via(url, timeout, tls, None).await
    }

    /// As [`HttpPing::connect`], but connecting to `connect_to` when given (the URL's
    /// host name still names the server for TLS and `Host`).
    pub async fn connect_via(
        url: &str,
        timeout: Duration,
        tls: &tsload_tls::TlsOptions,
        connect_to: Option<std::net::SocketAddr>,
    ) -> Result<Self, ProbeError> {
        let parsed = Url::parse(url)
            .map_err(|e| ProbeError::InvalidOptions(format!("bad URL {}: {e}", redact(url))))?;
        match parsed.scheme() {
            "http" | "https" => {}
            _ => {
                return Err(ProbeError::InvalidOptions(format!(
                    "only http:// and https:// URLs can be probed (got {})",
                    redact(url)
                )));
            }
        }
        // Given to reqwest even for http: a client built without one panics unless the
        // process installed a default crypto provider.
        let config = tsload_tls::client_config(tls)
            .map_err(|e| ProbeError::InvalidOptions(e.to_string()))?;
        let shown = redact(url);
        let mut builder = tsload_http::client_builder(config);
        if let (Some(addr), Some(host)) = (connect_to, parsed.host_str()) {
            builder = builder.resolve(host, addr);
        }
        let client = builder
            .no_proxy()
            .http1_only()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1)
            .pool_idle_timeout(None)
            .connect_timeout(timeout)
            .build()
            .map_err(|source| ProbeError::Http {
                url: shown.clone(),
                source,
            })?;
        let mut ping = HttpPing {
            client,
            url: parsed,
            shown,
        };
        tokio::time::timeout(timeout, ping.get())
            .await
            .map_err(|_| ProbeError::Timeout(timeout))??;
        Ok(ping)
    }

    /// The URL, password hidden.
    pub fn target(&self) -> &str {
        &self.shown
    }

    async fn get(&mut self) -> Result<(), ProbeError> {
        let http_err = |source| ProbeError::Http {
            url: self.shown.clone(),
            source,
        };
        let response = self
            .client
            .get(self.url.clone())
            .send()
            .await
            .map_err(http_err)?;
        let status = response.status();
        // Read the body (up to a cap) so that the connection goes back to the pool.
        tsload_http::drain(response).await;
        if status.is_success() {
            Ok(())
        } else {
            Err(ProbeError::HttpStatus {
                url: self.shown.clone(),
                status: status.as_u16(),
            })
        }
    }
}

impl AppPing for HttpPing {
    async fn ping(&mut self) -> Result<(), ProbeError> {
        self.get().await
    }
}

/// `SELECT 1` over one SQL connection.
#[derive(Debug)]
pub enum SqlPing {
    Postgres(sqlx::PgConnection),
    MySql(sqlx::MySqlConnection),
}

impl SqlPing {
    /// Connects to `postgres://`/`postgresql://` or `mysql://`/`mariadb://` `url` and
    /// runs one untimed `SELECT 1` (preparing the statement).
    pub async fn connect(url: &str) -> Result<Self, ProbeError> {
        // Schemes are case-insensitive (RFC 3986); sqlx is given the one it knows.
        let (scheme, rest) = url.split_once("://").unwrap_or(("", ""));
        let mut ping = match scheme.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => {
                let url = format!("postgres://{rest}");
                SqlPing::Postgres(sqlx::PgConnection::connect(&url).await?)
            }
            "mysql" | "mariadb" => {
                let url = format!("mysql://{rest}");
                SqlPing::MySql(sqlx::MySqlConnection::connect(&url).await?)
            }
            _ => {
                return Err(ProbeError::InvalidOptions(format!(
                    "a SQL ping needs a postgres://, postgresql://, mysql:// or mariadb:// URL (got {})",
                    redact(url)
                )));
            }
        };
        ping.select_1().await?;
        Ok(ping)
    }

    async fn select_1(&mut self) -> Result<(), ProbeError> {
        match self {
            SqlPing::Postgres(c) => {
                sqlx::query("SELECT 1").execute(&mut *c).await?;
            }
            SqlPing::MySql(c) => {
                sqlx::query("SELECT 1").execute(&mut *c).await?;
            }
        }
        Ok(())
    }
}

impl AppPing for SqlPing {
    async fn ping(&mut self) -> Result<(), ProbeError> {
        self.select_1().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_urls_are_refused_before_any_io() {
        let e = SqlPing::connect("sqlite://x.db").await.unwrap_err();
        assert!(e.to_string().contains("postgres://"), "{e}");
        let e = HttpPing::connect(
            "ftp://127.0.0.1:1/ping",
            Duration::from_secs(1),
            &Default::default(),
        )
        .await
        .unwrap_err();
        assert!(e.to_string().contains("only http:// and https://"), "{e}");
        let e = run_app(&mut Never, ProbeKind::App, "x", &AppOptions::new(0))
            .await
            .unwrap_err();
        assert!(matches!(e, ProbeError::InvalidOptions(_)));
    }

    struct Never;
    impl AppPing for Never {
        async fn ping(&mut self) -> Result<(), ProbeError> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_ping_past_its_timeout_is_lost() {
        let mut opts = AppOptions::new(3);
        opts.interval = Duration::ZERO;
        opts.timeout = Duration::from_millis(5);
        let r = run_app(&mut Never, ProbeKind::App, "never", &opts)
            .await
            .unwrap();
        assert_eq!((r.transmitted, r.received, r.errors), (3, 0, 0));
        assert_eq!(r.failures["timeout"], 3);
        assert_eq!(r.loss_pct, 100.0);
    }

    struct Flaky(u32);
    impl AppPing for Flaky {
        async fn ping(&mut self) -> Result<(), ProbeError> {
            self.0 += 1;
            if self.0.is_multiple_of(2) {
                Err(ProbeError::HttpStatus {
                    url: "u".into(),
                    status: 503,
                })
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test]
    async fn errors_are_counted_by_reason() {
        let mut opts = AppOptions::new(4);
        opts.interval = Duration::ZERO;
        let r = run_app(&mut Flaky(0), ProbeKind::App, "flaky", &opts)
            .await
            .unwrap();
        assert_eq!((r.transmitted, r.received, r.errors), (4, 2, 2));
        assert_eq!(r.failures["http 503"], 2);
        assert_eq!(r.loss_pct, 50.0);
        assert!(
            r.render_text()
                .contains("4 probes transmitted, 2 received, +2 errors, 50% loss")
        );
    }
}
