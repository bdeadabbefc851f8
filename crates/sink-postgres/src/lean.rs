//! The read path's own PostgreSQL connection ([`LeanConn`]): plain TCP, trust, cleartext
//! or MD5 passwords, named prepared statements bound and executed with the extended
//! protocol (binary values and results, as sqlx sends them) and every DataRow read off
//! the socket and counted in place (the message formats are [`crate::wire`]'s). It is
//! used where it can speak for sqlx exactly: a `postgres://` URL over TCP whose only
//! option is `sslmode` `disable` or `prefer`, to a server that refuses TLS (or with
//! `disable`) and asks for no other authentication (SCRAM included: sqlx's then).
//! Anything else ([`Lean::Unsupported`]) is opened by sqlx as before.
//!
//! The startup parameters are sqlx's (ISO dates, UTF8, UTC, `application_name` tsload),
//! and `synchronous_commit` is set as on sqlx's connections, so statements behave the
//! same on either.

use std::ops::Range;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tsload_core::{ErrorKind, SinkError, Statement};
use tsload_sql::read_buffer::{ReadBuffer, decode_url_part};
use tsload_sql::socket::{Socket, Waiting};
use tsload_sql::statement_cache::StatementCache;

use crate::error::kind_for_sqlstate;
use crate::wire::{self, Auth, Malformed};

/// Where and as whom the lean connection connects.
#[derive(Clone)]
pub(crate) struct LeanOptions {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) user: String,
    /// `None`: the URL names none (sqlx may find one in PGPASSWORD or a passfile).
    pub(crate) password: Option<String>,
    pub(crate) database: String,
    /// Whether to ask for TLS first (`sslmode=prefer`, sqlx's default).
    pub(crate) ask_tls: bool,
    /// A statement run after connecting (`SET synchronous_commit ...`).
    pub(crate) session: Option<String>,
    /// `host:port/database (user ...)`, for messages.
    pub(crate) target: String,
}

impl std::fmt::Debug for LeanOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeanOptions")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl LeanOptions {
    /// The options of `url` when the lean connection can serve it; `None` otherwise.
    pub(crate) fn from_url(url: &str, target: &str, session: Option<String>) -> Option<Self> {
        let parsed = url::Url::parse(url).ok()?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return None;
        }
        let mut ask_tls = true;
        for (key, value) in parsed.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("sslmode", "disable") => ask_tls = false,
                ("sslmode", "prefer") => ask_tls = true,
                _ => return None,
            }
        }
        // The environment sqlx reads would change what it does: leave those runs to it.
        if [
            "PGSSLMODE",
            "PGOPTIONS",
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
        {
            return None;
        }
        let decode = decode_url_part;
        let user = decode(parsed.username())?;
        let database = decode(parsed.path().trim_start_matches('/'))?;
        if user.is_empty() || database.is_empty() || database.contains('/') {
            return None;
        }
        Some(LeanOptions {
            host: parsed.host_str()?.trim_matches(['[', ']']).to_string(),
            port: parsed.port().unwrap_or(5432),
            user,
            password: match parsed.password() {
                Some(p) => Some(decode(p)?),
                None => None,
            },
            database,
            ask_tls,
            session,
            target: target.to_string(),
        })
    }
}

/// Why a lean connection was not made.
#[derive(Debug)]
pub(crate) enum Lean {
    /// TLS the server accepts, an authentication this connection does not speak, or a
    /// password the URL does not give: sqlx connects instead.
    Unsupported,
    Failed(SinkError),
}

/// A failed statement: the error, and whether it lost the connection.
#[derive(Debug)]
pub(crate) struct LeanFailure {
    pub(crate) error: SinkError,
    pub(crate) broken: bool,
}

/// Prepared statements kept per connection before they are all closed (sqlx's default
/// statement cache holds 100).
const STATEMENT_CACHE: usize = 256;

/// One connection to a PostgreSQL server.
#[derive(Debug)]
pub(crate) struct LeanConn {
    stream: Socket,
    rbuf: ReadBuffer,
    /// The current message: its type and where its body is in `rbuf`.
    tag: u8,
    body: Range<usize>,
    wbuf: Vec<u8>,
    /// Statement text -> its name (`s1`, `s2`, ...).
    statements: StatementCache<String>,
    next_statement: u64,
    /// A request was cut off midway (its future dropped): the connection is out of step.
    busy: bool,
    target: String,
}

impl LeanConn {
    /// How the socket waits for answers.
    pub(crate) fn waiting(&self) -> Waiting {
        self.stream.waiting()
    }

    /// Connects, authenticates and sets the session, within `timeout`; the socket waits
    /// as `waiting` says.
    pub(crate) async fn connect(
        opts: &LeanOptions,
        timeout: Duration,
        waiting: Waiting,
    ) -> Result<Self, Lean> {
        // On the timer that needs no time driver: the query engine's per-worker runtimes
        // have none (see tsload_timer::ReactorTimer).
        match tsload_timer::timeout(timeout, Self::connect_inner(opts, waiting)).await {
            Ok(Some(result)) => result,
            Err(e) => Err(Lean::Failed(SinkError::new(
                ErrorKind::Connection,
                format!(
                    "cannot connect to PostgreSQL at {}: no timer for connect_timeout: {e}",
                    opts.target
                ),
            ))),
            Ok(None) => Err(Lean::Failed(SinkError::new(
                ErrorKind::Connection,
                format!(
                    "cannot connect to PostgreSQL at {}: no answer within {timeout:?} \
                     (connect_timeout)",
                    opts.target
                ),
            ))),
        }
    }

    async fn connect_inner(opts: &LeanOptions, waiting: Waiting) -> Result<Self, Lean> {
        let failed = |kind: ErrorKind, why: String| {
            Lean::Failed(SinkError::new(
                kind,
                format!("cannot connect to PostgreSQL at {}: {why}", opts.target),
            ))
        };
        let mut stream = Socket::connect(&opts.host, opts.port, waiting)
            .await
            .map_err(|e| failed(ErrorKind::Connection, e.to_string()))?;
        let mut out = Vec::new();
        if opts.ask_tls {
            wire::ssl_request(&mut out);
            stream
                .write_all(&out)
                .await
                .map_err(|e| failed(ErrorKind::Connection, e.to_string()))?;
            let mut answer = [0u8; 1];
            stream
                .read_exact(&mut answer)
                .await
                .map_err(|e| failed(ErrorKind::Connection, e.to_string()))?;
            match answer[0] {
                b'N' => {}
                // The server takes TLS: sqlx's connection uses it.
                b'S' => return Err(Lean::Unsupported),
                _ => {
                    return Err(failed(
                        ErrorKind::Connection,
                        "unexpected answer to the SSL request".into(),
                    ));
                }
            }
        }
        let mut conn = LeanConn {
            stream,
            rbuf: ReadBuffer::with_capacity(64 * 1024),
            tag: 0,
            body: 0..0,
            wbuf: Vec::new(),
            statements: StatementCache::default(),
            next_statement: 1,
            busy: false,
            target: opts.target.clone(),
        };
        conn.wbuf.clear();
        wire::startup(
            &mut conn.wbuf,
            &[
                ("user", &opts.user),
                ("database", &opts.database),
                ("DateStyle", "ISO, MDY"),
                ("client_encoding", "UTF8"),
                ("TimeZone", "UTC"),
                ("extra_float_digits", "2"),
                ("application_name", "tsload"),
            ],
        );
        let io = |f: LeanFailure| Lean::Failed(f.error);
        conn.flush().await.map_err(io)?;
        loop {
            conn.read_message().await.map_err(io)?;
            match conn.tag {
                b'R' => {
                    let auth = wire::parse_auth(conn.body())
                        .map_err(|e| failed(ErrorKind::Connection, e.to_string()))?;
                    let answer = match (auth, &opts.password) {
                        (Auth::Ok, _) => continue,
                        (Auth::Cleartext, Some(p)) => p.clone(),
                        (Auth::Md5(salt), Some(p)) => wire::md5_password(&opts.user, p, salt),
                        _ => return Err(Lean::Unsupported),
                    };
                    conn.wbuf.clear();
                    wire::password(&mut conn.wbuf, &answer);
                    conn.flush().await.map_err(io)?;
                }
                b'E' => {
                    let e = wire::parse_error(conn.body());
                    let kind = match kind_for_sqlstate(&e.code) {
                        ErrorKind::Other | ErrorKind::Rejected => ErrorKind::Connection,
                        kind => kind,
                    };
                    return Err(failed(kind, e.describe()));
                }
                b'Z' => break,
                // ParameterStatus, BackendKeyData, notices.
                _ => {}
            }
        }
        if let Some(session) = &opts.session {
            conn.query(session).await.map_err(|f| {
                Lean::Failed(SinkError::new(
                    f.error.kind,
                    format!("setting synchronous_commit: {}", f.error.message),
                ))
            })?;
        }
        Ok(conn)
    }

    /// Runs one statement (bound to its prepared statement when it has parameters, as a
    /// simple Query otherwise) and reads its results to the end; returns the rows read
    /// or, for a statement that returned none, the rows it affected.
    pub(crate) async fn run(&mut self, statement: &Statement) -> Result<u64, LeanFailure> {
        if statement.params.is_empty() {
            return self.query(&statement.text).await;
        }
        if self.busy {
            return Err(self.lost("a request was cut off midway"));
        }
        self.wbuf.clear();
        // Whether this call sends the statement's Parse (it was not prepared yet).
        let parsed = match self.statements.get(&statement.text) {
            Some(name) => {
                wire::bind_execute_sync(&mut self.wbuf, name, &statement.params);
                false
            }
            None => {
                if self.statements.len() >= STATEMENT_CACHE {
                    // Close them all: one simple Query, then prepare again as needed.
                    self.statements.clear();
                    self.query("DEALLOCATE ALL").await?;
                }
                let name = format!("tsload_s{}", self.next_statement);
                self.next_statement += 1;
                wire::parse(&mut self.wbuf, &name, &statement.text, &statement.params);
                wire::bind_execute_sync(&mut self.wbuf, &name, &statement.params);
                self.statements.insert(statement.text.clone(), name);
                true
            }
        };
        self.busy = true;
        self.flush().await?;
        let result = self.read_until_ready().await;
        if parsed && result.is_err() {
            // The Parse may have failed: prepare it again next time. (A statement that
            // was prepared before and failed on its values stays prepared.)
            self.statements.remove(&statement.text);
        }
        result
    }

    /// A simple Query, its results read to the end.
    pub(crate) async fn query(&mut self, sql: &str) -> Result<u64, LeanFailure> {
        if self.busy {
            return Err(self.lost("a request was cut off midway"));
        }
        self.wbuf.clear();
        wire::query(&mut self.wbuf, sql);
        self.busy = true;
        self.flush().await?;
        self.read_until_ready().await
    }

    /// Reads the answer up to ReadyForQuery: counts DataRows per statement (the rows, or
    /// the CommandComplete count when there were none), keeps the first error.
    async fn read_until_ready(&mut self) -> Result<u64, LeanFailure> {
        let mut total: u64 = 0;
        let mut rows: u64 = 0;
        let mut error: Option<wire::ServerError> = None;
        loop {
            if !self.buffered_message() {
                self.read_more().await?;
                continue;
            }
            match self.tag {
                b'D' => rows += 1,
                b'C' => {
                    let count = if rows > 0 {
                        rows
                    } else {
                        wire::tag_rows(self.body())
                    };
                    total = total.saturating_add(count);
                    rows = 0;
                }
                b'E' => {
                    let e = wire::parse_error(self.body());
                    if e.is_fatal() {
                        return Err(LeanFailure {
                            error: server_error(&e),
                            broken: true,
                        });
                    }
                    error.get_or_insert(e);
                }
                b'Z' => break,
                // ParseComplete, BindComplete, RowDescription, NoData, EmptyQueryResponse,
                // notices, parameter changes, notifications.
                _ => {}
            }
        }
        self.busy = false;
        match error {
            None => Ok(total),
            Some(e) => Err(LeanFailure {
                error: server_error(&e),
                broken: false,
            }),
        }
    }

    fn body(&self) -> &[u8] {
        self.rbuf.get(self.body.clone())
    }

    fn lost(&self, why: &str) -> LeanFailure {
        LeanFailure {
            error: SinkError::new(
                ErrorKind::Connection,
                format!("PostgreSQL at {}: connection lost: {why}", self.target),
            ),
            broken: true,
        }
    }

    fn malformed(&self, e: Malformed) -> LeanFailure {
        self.lost(&e.to_string())
    }

    async fn flush(&mut self) -> Result<(), LeanFailure> {
        let (stream, wbuf) = (&mut self.stream, &self.wbuf);
        let written = stream.write_all(wbuf).await;
        self.wbuf.clear();
        written.map_err(|e| self.lost(&e.to_string()))
    }

    /// Reads the next message into `tag` and [`Self::body`].
    /// Takes the next message (its tag and body) when the read buffer holds it whole;
    /// false otherwise, taking nothing (a bad length too: [`Self::read_more`] says so).
    /// [`Self::read_until_ready`] takes every message it can so, and awaits a read only
    /// when the buffer runs out: an answer's messages mostly come in one read, and each
    /// await through nested reads cost more than handling a message.
    fn buffered_message(&mut self) -> bool {
        let unread = self.rbuf.unread();
        let [tag, a, b, c, d, ..] = *unread else {
            return false;
        };
        let len = match usize::try_from(i32::from_be_bytes([a, b, c, d])) {
            Ok(len) if len >= 4 && unread.len() > len => len,
            _ => return false,
        };
        self.rbuf.consume(5);
        self.tag = tag;
        self.body = self.rbuf.consume(len - 4);
        true
    }

    /// Reads until the buffer holds the next message whole, for
    /// [`Self::buffered_message`] to take.
    async fn read_more(&mut self) -> Result<(), LeanFailure> {
        let need = match *self.rbuf.unread() {
            [_, a, b, c, d, ..] => usize::try_from(i32::from_be_bytes([a, b, c, d]))
                .ok()
                .filter(|&l| l >= 4)
                .ok_or_else(|| self.malformed(Malformed("message length")))?
                .saturating_add(1),
            _ => 5,
        };
        self.fill(need).await
    }

    async fn read_message(&mut self) -> Result<(), LeanFailure> {
        self.fill(5).await?;
        let h = self.rbuf.peek(5);
        let tag = h[0];
        let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]);
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l >= 4)
            .ok_or_else(|| self.malformed(Malformed("message length")))?;
        self.fill(1 + len).await?;
        self.rbuf.consume(5);
        self.tag = tag;
        self.body = self.rbuf.consume(len - 4);
        Ok(())
    }

    async fn fill(&mut self, n: usize) -> Result<(), LeanFailure> {
        match self.rbuf.fill(&mut self.stream, n).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.lost(&e.to_string())),
        }
    }
}

impl Drop for LeanConn {
    fn drop(&mut self) {
        // Say goodbye when the socket can take it now (as sqlx's close does); never wait.
        let mut bye = Vec::new();
        wire::terminate(&mut bye);
        let _ = self.stream.try_write(&bye);
    }
}

/// A server error as sqlx's path words it.
fn server_error(e: &wire::ServerError) -> SinkError {
    SinkError::new(kind_for_sqlstate(&e.code), e.describe())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile server: reads the startup message, answers with an authentication message
    /// that declares 0x7ffffff0 bytes, and then says nothing more, keeping the connection.
    #[tokio::test]
    async fn a_server_declaring_a_two_gigabyte_message_is_refused_at_once() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).await.unwrap();
            let mut rest = vec![0u8; u32::from_be_bytes(len) as usize - 4];
            s.read_exact(&mut rest).await.unwrap();
            s.write_all(&[b'R', 0x7f, 0xff, 0xff, 0xf0, 0, 0, 0, 0])
                .await
                .unwrap();
            // Silence, the connection held until the client drops it.
            let mut end = Vec::new();
            let _ = s.read_to_end(&mut end).await;
        });
        let url = format!("postgres://u@127.0.0.1:{port}/db?sslmode=disable");
        let opts = LeanOptions::from_url(&url, "T", None).unwrap();
        let started = std::time::Instant::now();
        let e = LeanConn::connect(&opts, Duration::from_secs(30), Waiting::Reactor)
            .await
            .unwrap_err();
        let Lean::Failed(e) = e else {
            panic!("refused as unsupported, not as the server's fault")
        };
        let text = e.to_string();
        assert!(
            text.contains("2147483633 bytes") && text.contains("at most 67108864"),
            "{text}"
        );
        // Refused as it was read, not at the connect timeout.
        assert!(started.elapsed() < Duration::from_secs(20), "{text}");
        server.await.unwrap();
    }

    #[test]
    fn takes_plain_urls_only() {
        let o = LeanOptions::from_url("postgres://u:p%40ss@127.0.0.1:5433/db", "T", None).unwrap();
        assert_eq!(
            (
                o.host.as_str(),
                o.port,
                o.user.as_str(),
                o.password.as_deref()
            ),
            ("127.0.0.1", 5433, "u", Some("p@ss"))
        );
        assert!(o.ask_tls);
        assert!(!format!("{o:?}").contains("p@ss"));
        let plain =
            LeanOptions::from_url("postgresql://u@h/db?sslmode=disable", "T", None).unwrap();
        assert_eq!(
            (plain.port, plain.password, plain.ask_tls),
            (5432, None, false)
        );
        for refused in [
            "postgres://u@h/db?sslmode=require",
            "postgres://u@h/db?options=-c%20x%3D1",
            "postgres://h/db",
            "postgres://u@h",
            "mysql://u@h/db",
        ] {
            assert!(
                LeanOptions::from_url(refused, "T", None).is_none(),
                "{refused}"
            );
        }
    }
}
