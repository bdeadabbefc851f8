//! The read path's own MySQL connection ([`LeanConn`]): plain TCP, `mysql_native_password`,
//! prepared statements executed with the binary protocol and every result row read off
//! the socket and counted in place (the protocol pieces are [`crate::wire`]'s). It is
//! used where it can speak for sqlx exactly: a `mysql://` URL over TCP whose only option
//! is `ssl-mode=disabled` or `preferred`, to a server that offers no TLS and accepts
//! `mysql_native_password` (or no password). Anything else ([`Lean::Unsupported`]) is
//! opened by sqlx as before.
//!
//! After the handshake it sets the session as sqlx's connect does (sql_mode additions,
//! UTC time zone, `utf8mb4`), so statements behave the same on either connection.

use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tsload_core::{ErrorKind, SinkError, Statement};
use tsload_sql::read_buffer::{MAX_MESSAGE_BYTES, ReadBuffer, decode_url_part, too_long};
use tsload_sql::socket::{Socket, Waiting};
use tsload_sql::statement_cache::StatementCache;

use crate::wire::{self, Malformed};

/// Where and as whom the lean connection connects.
#[derive(Clone)]
pub(crate) struct LeanOptions {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) user: String,
    pub(crate) password: String,
    pub(crate) database: String,
    /// The URL with its password hidden, for messages.
    pub(crate) label: String,
}

impl std::fmt::Debug for LeanOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeanOptions")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl LeanOptions {
    /// The options of `url` when the lean connection can serve it: `mysql://` or
    /// `mariadb://`, a host (no socket), a database, and no query option but `ssl-mode`
    /// `disabled` or `preferred`. `None` otherwise.
    pub(crate) fn from_url(url: &str, label: &str) -> Option<Self> {
        let parsed = url::Url::parse(url).ok()?;
        if !matches!(parsed.scheme(), "mysql" | "mariadb") {
            return None;
        }
        for (key, value) in parsed.query_pairs() {
            let ok = key == "ssl-mode"
                && (value.eq_ignore_ascii_case("disabled")
                    || value.eq_ignore_ascii_case("preferred"));
            if !ok {
                return None;
            }
        }
        let decode = decode_url_part;
        let database = decode(parsed.path().trim_start_matches('/'))?;
        if database.is_empty() || database.contains('/') {
            return None;
        }
        Some(LeanOptions {
            host: parsed.host_str()?.trim_matches(['[', ']']).to_string(),
            port: parsed.port().unwrap_or(3306),
            user: match parsed.username() {
                "" => "root".to_string(),
                user => decode(user)?,
            },
            password: decode(parsed.password().unwrap_or(""))?,
            database,
            label: label.to_string(),
        })
    }
}

/// Why a lean connection was not made.
#[derive(Debug)]
pub(crate) enum Lean {
    /// The server wants what this connection does not speak (TLS it offers, another
    /// authentication plugin): sqlx connects instead.
    Unsupported,
    Failed(SinkError),
}

/// Prepared statements kept per connection before they are all closed and prepared again
/// (sqlx's default statement cache holds 100).
const STATEMENT_CACHE: usize = 256;

/// One connection to a MySQL or MariaDB server.
#[derive(Debug)]
pub(crate) struct LeanConn {
    stream: Socket,
    rbuf: ReadBuffer,
    /// The current packet's payload: in `rbuf` (`cur`), or joined from 16 MiB parts into
    /// `big` when `cur` is `None`; and its sequence number.
    cur: Option<Range<usize>>,
    big: Vec<u8>,
    seq: u8,
    wbuf: Vec<u8>,
    payload: Vec<u8>,
    statements: StatementCache<u32>,
    /// A request was cut off midway (its future dropped): the connection is out of step.
    busy: bool,
    label: String,
}

/// The session sqlx's connect sets (sqlx-mysql 0.8's defaults).
const SESSION: &str = "SET sql_mode=(SELECT CONCAT(@@sql_mode, ',PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION')),\
time_zone='+00:00',NAMES utf8mb4 COLLATE utf8mb4_unicode_ci;";

impl LeanConn {
    /// How the socket waits for answers.
    pub(crate) fn waiting(&self) -> Waiting {
        self.stream.waiting()
    }

    /// Connects, authenticates and sets the session, within `timeout` (zero: no limit);
    /// the socket waits as `waiting` says.
    pub(crate) async fn connect(
        opts: &LeanOptions,
        timeout: Duration,
        waiting: Waiting,
    ) -> Result<Self, Lean> {
        let connect = Self::connect_inner(opts, waiting);
        if timeout.is_zero() {
            return connect.await;
        }
        // On the timer that needs no time driver: the query engine's per-worker runtimes
        // have none (see tsload_timer::ReactorTimer).
        match tsload_timer::timeout(timeout, connect).await {
            Ok(Some(result)) => result,
            Err(e) => Err(Lean::Failed(SinkError::new(
                ErrorKind::Connection,
                format!(
                    "cannot connect to {}: no timer for the connect timeout: {e}",
                    opts.label
                ),
            ))),
            Ok(None) => Err(Lean::Failed(SinkError::new(
                ErrorKind::Connection,
                format!(
                    "cannot connect to {}: timed out after {timeout:?}",
                    opts.label
                ),
            ))),
        }
    }

    async fn connect_inner(opts: &LeanOptions, waiting: Waiting) -> Result<Self, Lean> {
        let failed = |kind: ErrorKind, why: String| {
            Lean::Failed(SinkError::new(
                kind,
                format!("cannot connect to {}: {why}", opts.label),
            ))
        };
        let stream = Socket::connect(&opts.host, opts.port, waiting)
            .await
            .map_err(|e| failed(ErrorKind::Connection, e.to_string()))?;
        let mut conn = LeanConn {
            stream,
            rbuf: ReadBuffer::with_capacity(64 * 1024),
            cur: None,
            big: Vec::new(),
            seq: 0,
            wbuf: Vec::new(),
            payload: Vec::new(),
            statements: StatementCache::default(),
            busy: false,
            label: opts.label.clone(),
        };
        let io = |e: SinkError| Lean::Failed(e);
        conn.read_packet().await.map_err(io)?;
        let first = conn.packet();
        if first.first() == Some(&0xFF) {
            let e = wire::parse_err(first);
            return Err(failed(
                crate::error::kind_for_number(e.code),
                format!("{} (MySQL error {})", e.message, e.code),
            ));
        }
        let handshake = wire::parse_handshake(first)
            .map_err(|e| failed(ErrorKind::Connection, e.to_string()))?;
        if handshake.capabilities & wire::CLIENT_SSL != 0
            || handshake.capabilities & wire::CLIENT_PROTOCOL_41 == 0
        {
            // ssl-mode=preferred with a server that offers TLS: sqlx uses it.
            return Err(Lean::Unsupported);
        }
        let mut plugin = handshake.plugin.clone();
        let mut scramble = handshake.scramble.clone();
        if plugin != "mysql_native_password" {
            // Answer for mysql_native_password and let the server switch if it must.
            plugin = "mysql_native_password".to_string();
        }
        let auth = wire::native_password(opts.password.as_bytes(), &scramble);
        conn.payload.clear();
        wire::handshake_response(
            &mut conn.payload,
            &opts.user,
            &auth,
            &opts.database,
            &plugin,
        );
        conn.send_payload(1).await.map_err(io)?;
        loop {
            conn.read_packet().await.map_err(io)?;
            let p = conn.packet();
            match p.first() {
                Some(0x00) => break,
                Some(0xFF) => {
                    let e = wire::parse_err(p);
                    let kind = match crate::error::kind_for_number(e.code) {
                        ErrorKind::Other => ErrorKind::Connection,
                        kind => kind,
                    };
                    let hint = if e.code == 1049 {
                        " (set create_database to create it)"
                    } else {
                        ""
                    };
                    return Err(failed(
                        kind,
                        format!("{} (MySQL error {}){hint}", e.message, e.code),
                    ));
                }
                // An authentication switch: only to mysql_native_password.
                Some(0xFE) if p.len() > 1 => {
                    let body = &p[1..];
                    let name_end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                    if &body[..name_end] != b"mysql_native_password" {
                        return Err(Lean::Unsupported);
                    }
                    let data = &body[(name_end + 1).min(body.len())..];
                    scramble = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
                    let answer = wire::native_password(opts.password.as_bytes(), &scramble);
                    let seq = conn.last_seq().wrapping_add(1);
                    conn.payload.clear();
                    conn.payload.extend_from_slice(&answer);
                    conn.send_payload(seq).await.map_err(io)?;
                }
                _ => return Err(Lean::Unsupported),
            }
        }
        conn.query_text(SESSION).await.map_err(io)?;
        Ok(conn)
    }

    /// Runs one statement (prepared and executed with its values when it has parameters,
    /// as a text query otherwise) and reads its results to the end; returns the rows read
    /// or, for a statement that returned none, the rows it affected.
    pub(crate) async fn run(&mut self, statement: &Statement) -> Result<u64, SinkError> {
        if self.busy {
            return Err(self.lost("a request was cut off midway"));
        }
        self.busy = true;
        let rows = if statement.params.is_empty() {
            self.query_text(&statement.text).await?
        } else {
            let id = match self.statements.get(&statement.text) {
                Some(id) => *id,
                None => self.prepare(&statement.text).await?,
            };
            self.payload.clear();
            wire::execute(&mut self.payload, id, &statement.params);
            self.send_payload(0).await?;
            self.read_results(true).await?
        };
        self.busy = false;
        Ok(rows)
    }

    /// A text query (COM_QUERY), its results read to the end.
    pub(crate) async fn query_text(&mut self, sql: &str) -> Result<u64, SinkError> {
        self.busy = true;
        self.payload.clear();
        wire::query(&mut self.payload, sql);
        self.send_payload(0).await?;
        let rows = self.read_results(false).await?;
        self.busy = false;
        Ok(rows)
    }

    async fn prepare(&mut self, sql: &Arc<str>) -> Result<u32, SinkError> {
        if self.statements.len() >= STATEMENT_CACHE {
            // Close them all (COM_STMT_CLOSE has no answer) and start again.
            self.wbuf.clear();
            for id in self.statements.values() {
                let mut close = vec![wire::COM_STMT_CLOSE];
                close.extend_from_slice(&id.to_le_bytes());
                wire::frame(&mut self.wbuf, &close, 0);
            }
            self.statements.clear();
            let (stream, wbuf) = (&mut self.stream, &self.wbuf);
            stream
                .write_all(wbuf)
                .await
                .map_err(|e| lost(&self.label, &e))?;
        }
        self.payload.clear();
        wire::prepare(&mut self.payload, sql);
        self.send_payload(0).await?;
        self.read_packet().await?;
        let p = self.packet();
        if p.first() == Some(&0xFF) {
            let e = wire::parse_err(p);
            // The connection stays in step: the answer was read.
            self.busy = false;
            return Err(server_error(&e));
        }
        let ok = wire::parse_prepare_ok(p).map_err(|e| self.malformed(e))?;
        for defs in [ok.params, ok.columns] {
            if defs > 0 {
                for _ in 0..defs {
                    self.read_packet().await?;
                }
                self.read_packet().await?; // EOF
            }
        }
        self.statements.insert(sql.clone(), ok.statement_id);
        Ok(ok.statement_id)
    }

    /// Reads a command's answer to its end ([`wire::Answer`]): the rows read or, for a
    /// statement that returned none, the rows it affected.
    async fn read_results(&mut self, binary: bool) -> Result<u64, SinkError> {
        let mut answer = wire::Answer::new(binary);
        loop {
            if !self.buffered_packet() && !self.read_more().await? {
                continue;
            }
            match answer.feed(self.packet()) {
                wire::Step::More => {}
                wire::Step::Done(total) => return Ok(total),
                wire::Step::Server(e) => {
                    // The connection stays in step: the answer was read.
                    self.busy = false;
                    return Err(server_error(&e));
                }
                wire::Step::Malformed(e) => return Err(self.malformed(e)),
            }
        }
    }

    fn malformed(&self, e: Malformed) -> SinkError {
        SinkError::new(ErrorKind::Connection, format!("{}: {e}", self.label))
    }

    fn lost(&self, why: &str) -> SinkError {
        SinkError::new(
            ErrorKind::Connection,
            format!("{}: connection lost: {why}", self.label),
        )
    }

    /// Frames `self.payload` from sequence number `seq` and writes it.
    async fn send_payload(&mut self, seq: u8) -> Result<(), SinkError> {
        self.wbuf.clear();
        wire::frame(&mut self.wbuf, &self.payload, seq);
        let (stream, wbuf) = (&mut self.stream, &self.wbuf);
        stream
            .write_all(wbuf)
            .await
            .map_err(|e| lost(&self.label, &e))
    }

    /// The payload of the packet last read.
    fn packet(&self) -> &[u8] {
        match &self.cur {
            Some(at) => self.rbuf.get(at.clone()),
            None => &self.big,
        }
    }

    /// The sequence number of the packet last read.
    fn last_seq(&self) -> u8 {
        self.seq
    }

    /// Takes the next packet into [`Self::packet`] when the read buffer holds it whole
    /// and it is not a 16 MiB part (those [`Self::read_packet`] joins); false otherwise,
    /// taking nothing. [`Self::read_results`] takes every packet it can so, and awaits a
    /// read only when the buffer runs out: an answer's packets mostly come in one read,
    /// and each await through nested reads cost more than handling a packet.
    fn buffered_packet(&mut self) -> bool {
        let unread = self.rbuf.unread();
        let [a, b, c, seq, ..] = *unread else {
            return false;
        };
        let len = usize::from(a) | usize::from(b) << 8 | usize::from(c) << 16;
        if len >= wire::MAX_PAYLOAD || unread.len() - 4 < len {
            return false;
        }
        self.seq = seq;
        self.rbuf.consume(4);
        self.cur = Some(self.rbuf.consume(len));
        true
    }

    /// Reads until the buffer holds the next packet whole, for [`Self::buffered_packet`]
    /// to take (false); a 16 MiB part is read and joined with the rest into
    /// [`Self::packet`] by [`Self::read_packet`] (true: taken).
    async fn read_more(&mut self) -> Result<bool, SinkError> {
        let need = match *self.rbuf.unread() {
            [a, b, c, _, ..] => {
                let len = usize::from(a) | usize::from(b) << 8 | usize::from(c) << 16;
                if len >= wire::MAX_PAYLOAD {
                    self.read_packet().await?;
                    return Ok(true);
                }
                4 + len
            }
            _ => 4,
        };
        self.rbuf
            .fill(&mut self.stream, need)
            .await
            .map_err(|e| lost(&self.label, &e))?;
        Ok(false)
    }

    /// Reads the next packet (joining 16 MiB parts) into [`Self::packet`].
    async fn read_packet(&mut self) -> Result<(), SinkError> {
        let at = self.read_part().await?;
        if at.len() < wire::MAX_PAYLOAD {
            self.cur = Some(at);
            return Ok(());
        }
        let mut big = std::mem::take(&mut self.big);
        big.clear();
        big.extend_from_slice(self.rbuf.get(at));
        loop {
            let at = self.read_part().await?;
            let last = at.len() < wire::MAX_PAYLOAD;
            // The joined packet has the one cap a single read has.
            if big.len() + at.len() > MAX_MESSAGE_BYTES {
                return Err(lost(&self.label, &too_long(big.len() + at.len())));
            }
            big.extend_from_slice(self.rbuf.get(at));
            if last {
                break;
            }
        }
        self.big = big;
        self.cur = None;
        Ok(())
    }

    /// Reads one packet part; returns where its payload lies in `rbuf`.
    async fn read_part(&mut self) -> Result<Range<usize>, SinkError> {
        self.fill(4).await?;
        let h = self.rbuf.peek(4);
        let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        self.seq = h[3];
        self.fill(4 + len).await?;
        self.rbuf.consume(4);
        Ok(self.rbuf.consume(len))
    }

    async fn fill(&mut self, n: usize) -> Result<(), SinkError> {
        self.rbuf
            .fill(&mut self.stream, n)
            .await
            .map_err(|e| lost(&self.label, &e))
    }
}

fn lost(label: &str, e: &io::Error) -> SinkError {
    SinkError::new(
        ErrorKind::Connection,
        format!("{label}: connection lost: {e}"),
    )
}

/// A server's ERR packet as sqlx's path words it: the text and the error number.
fn server_error(e: &wire::ServerError) -> SinkError {
    SinkError::new(
        crate::error::kind_for_number(e.code),
        format!("{} (MySQL error {})", e.message, e.code),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_plain_urls_only() {
        let o = LeanOptions::from_url("mysql://u:p%40ss@127.0.0.1:3307/db", "L").unwrap();
        assert_eq!(
            (
                o.host.as_str(),
                o.port,
                o.user.as_str(),
                o.password.as_str()
            ),
            ("127.0.0.1", 3307, "u", "p@ss")
        );
        assert_eq!(o.database, "db");
        assert!(!format!("{o:?}").contains("p@ss"));
        let root = LeanOptions::from_url("mariadb://h/db?ssl-mode=DISABLED", "L").unwrap();
        assert_eq!((root.user.as_str(), root.port), ("root", 3306));
        for refused in [
            "mysql://h/db?ssl-mode=required",
            "mysql://h/db?charset=latin1",
            "mysql://h/db?socket=/run/mysqld.sock",
            "mysql://h",
            "mysql://h/",
            "postgres://h/db",
        ] {
            assert!(LeanOptions::from_url(refused, "L").is_none(), "{refused}");
        }
    }
}
