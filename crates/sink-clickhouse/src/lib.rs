//! tsload target: ClickHouse over its HTTP interface (`http://HOST:8123`). One table per
//! measurement ([`sql::create_table`]: `ts Int64` nanoseconds, the tags, the fields, a
//! MergeTree ordered by the tags and `ts`), made in `prepare` (dropped first with
//! `drop_existing`). A batch is one `INSERT INTO db.table FORMAT RowBinary` POST per table
//! that has rows, its body encoded by hand ([`encode`]). Reads are SQL over the same
//! interface ([`ClickHouseQueryTarget`]).
//!
//! Delivery is at least once: a batch whose answer was lost (a timeout, a reset, a 5xx)
//! is sent again by the engine, and ClickHouse stores a resent batch twice (a MergeTree
//! does not deduplicate; only replicated tables keep insert checksums). Such attempts are
//! marked ambiguous, so the report bounds what the server may hold. A batch of several
//! tables is several inserts: when one fails after another was stored, the failure is
//! ambiguous too, and a retry stores the earlier tables again.
//!
//! Answers are classified as the other HTTP targets classify them (429 and 5xx retried,
//! other 4xx refuse the batch), with one refinement: ClickHouse answers most failed
//! statements (a type mismatch, a missing column) with 500 and its exception code in the
//! body (`Code: 53, e.displayText() = ...`); a code that does not say the server is busy
//! or short of a resource makes the error a rejection, which stops the run with the
//! server's message instead of retrying it.
//!
//! `tally` counts the rows of the schema's tables (`count()`: an insert is visible once it
//! is answered); `storage_bytes` sums their active parts' `bytes_on_disk`.

pub mod encode;
mod kind;
mod query;
mod render;
pub mod sql;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use tsload_core::stored::{RunScope, ServerTally};
use tsload_core::{Batch, BatchId, ErrorKind, Schema, Sink, SinkConn, SinkError, WriteAck};
use tsload_http::{answer_error, classify_request_error, classify_status};
use tsload_redact::Secret;

pub use encode::RowBinaryEncoder;
pub use kind::{ClickHouseKind, KIND};
pub use query::{ClickHouseQueryConn, ClickHouseQueryTarget};
pub use render::ClickHouseSql;

/// The header in which ClickHouse 19.x and later name the exception of a failed request
/// (18.x writes the code only in the body).
const EXCEPTION_CODE_HEADER: &str = "x-clickhouse-exception-code";

/// The rows ClickHouse parses and writes as one block of an insert
/// (`max_insert_block_size`'s default): a failed insert of more rows may have written
/// its first blocks.
const MAX_INSERT_BLOCK_ROWS: usize = 1_048_576;

/// ClickHouse's exception codes after which the same request may succeed: the server was
/// busy, short of memory or connections, or lost a connection of its own.
const RETRYABLE_CODES: &[u32] = &[
    95,  // CANNOT_READ_FROM_SOCKET
    96,  // CANNOT_WRITE_TO_SOCKET
    159, // TIMEOUT_EXCEEDED
    202, // TOO_MANY_SIMULTANEOUS_QUERIES
    203, // NO_FREE_CONNECTION
    209, // SOCKET_TIMEOUT
    210, // NETWORK_ERROR
    241, // MEMORY_LIMIT_EXCEEDED
    242, // TABLE_IS_READ_ONLY (a replica without its coordinator)
    252, // TOO_MANY_PARTS (inserts faster than merges)
    285, // TOO_FEW_LIVE_REPLICAS
    286, // UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE
    319, // UNKNOWN_STATUS_OF_INSERT
    364, // RECEIVED_ERROR_TOO_MANY_REQUESTS
];

/// Settings of the ClickHouse target.
#[derive(Clone, PartialEq)]
pub struct ClickHouseConfig {
    /// The HTTP interface's base URL, e.g. `http://127.0.0.1:8123`.
    pub url: String,
    /// The database of tsload's tables; created if missing.
    pub database: String,
    /// Basic auth user (`None`: the server's `default` user) and password (a secret).
    pub user: Option<String>,
    pub password: Option<Secret>,
    /// Drop the schema's tables before creating them.
    pub drop_existing: bool,
    /// Limit for one request, connect to last byte of the answer.
    pub timeout: Duration,
    pub tls: tsload_tls::TlsOptions,
    /// Connect here instead of resolving the URL's host (the `[network]` proxy in front of
    /// an https server named by host name).
    pub connect_to: Option<std::net::SocketAddr>,
}

impl fmt::Debug for ClickHouseConfig {
    // The password never reaches a log or a report, not even through Debug.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClickHouseConfig")
            .field("url", &tsload_redact::url(&self.url))
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("drop_existing", &self.drop_existing)
            .field("timeout", &self.timeout)
            .field("tls", &self.tls)
            .field("connect_to", &self.connect_to)
            .finish()
    }
}

impl ClickHouseConfig {
    /// Database `tsload` at `url`, the server's `default` user, a 1 minute timeout.
    pub fn new(url: impl Into<String>) -> Self {
        ClickHouseConfig {
            url: url.into(),
            database: kind::DEFAULT_DATABASE.to_string(),
            user: None,
            password: None,
            drop_existing: false,
            timeout: kind::DEFAULT_TIMEOUT,
            tls: tsload_tls::TlsOptions::default(),
            connect_to: None,
        }
    }

    /// The `Authorization` header of the credentials, if any (a password alone is the
    /// `default` user's).
    fn auth(&self) -> Option<Secret> {
        if self.user.is_none() && self.password.is_none() {
            return None;
        }
        let user = self.user.as_deref().unwrap_or("default");
        let none = Secret::new("");
        Some(tsload_redact::basic_auth_header(
            user,
            self.password.as_ref().unwrap_or(&none),
        ))
    }
}

/// The exception code at the start of a ClickHouse error text (`Code: 60, e.displayText()
/// = ...`, `Code: 60. DB::Exception: ...`), also after an `HTTP 500 ...: ` prefix.
pub fn exception_code(text: &str) -> Option<u32> {
    let at = text.find("Code: ")? + "Code: ".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `kind` (of an answer's status) given ClickHouse's exception code: a retryable kind
/// with a code that does not say the server is busy is a rejection.
pub fn refine_kind(kind: ErrorKind, code: Option<u32>) -> ErrorKind {
    match code {
        Some(c) if kind.is_retryable() && !RETRYABLE_CODES.contains(&c) => ErrorKind::Rejected,
        _ => kind,
    }
}

/// [`refine_kind`] for a write's error; a rejection by code was not stored (ClickHouse
/// writes an insert's block whole or not at all), so it is not ambiguous.
fn refine(e: SinkError, code: Option<u32>) -> SinkError {
    let kind = refine_kind(e.kind, code);
    if kind == e.kind {
        return e;
    }
    SinkError::new(kind, e.message)
}

/// The exception code of an answer: its header, else its body's text.
fn answer_code(headers: &reqwest::header::HeaderMap) -> Option<u32> {
    headers
        .get(EXCEPTION_CODE_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// The start of a statement, for messages.
fn excerpt(sql: &str) -> String {
    tsload_core::Statement::new(sql).excerpt()
}

fn config_error(message: String) -> SinkError {
    SinkError::new(ErrorKind::Connection, message)
}

/// The ClickHouse target.
pub struct ClickHouseSink {
    cfg: ClickHouseConfig,
    /// The interface's endpoint: the base URL's path with a trailing `/`, no query.
    endpoint: Url,
    /// The `Authorization` header: a secret.
    auth: Option<Secret>,
    tls: rustls::ClientConfig,
}

impl fmt::Debug for ClickHouseSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClickHouseSink")
            .field("cfg", &self.cfg)
            .field("endpoint", &self.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl ClickHouseSink {
    /// Checks the URL and the TLS settings; connects to nothing yet.
    pub fn new(cfg: ClickHouseConfig) -> Result<Self, SinkError> {
        let shown = tsload_redact::url(&cfg.url);
        let mut endpoint = Url::parse(&cfg.url)
            .map_err(|e| config_error(format!("target url \"{shown}\" is not a URL: {e}")))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(config_error(format!(
                "target url \"{shown}\": scheme \"{}\" is not allowed; allowed: http, https",
                endpoint.scheme()
            )));
        }
        if !endpoint.username().is_empty() || endpoint.password().is_some() {
            return Err(config_error(
                "target url: put credentials in `user`/`password`, not in the URL".to_string(),
            ));
        }
        let tls = tsload_tls::client_config(&cfg.tls)
            .map_err(|e| SinkError::new(ErrorKind::Permission, e.to_string()))?;
        // A path prefix (a proxy's `/clickhouse/`) is kept.
        let path = format!("{}/", endpoint.path().trim_end_matches('/'));
        endpoint.set_path(&path);
        endpoint.set_query(None);
        endpoint.set_fragment(None);
        Ok(ClickHouseSink {
            auth: cfg.auth(),
            cfg,
            endpoint,
            tls,
        })
    }

    pub fn config(&self) -> &ClickHouseConfig {
        &self.cfg
    }

    /// The endpoint with `pairs` as its query (settings of ClickHouse's HTTP interface).
    pub(crate) fn url_with(&self, pairs: &[(&str, &str)]) -> Url {
        let mut url = self.endpoint.clone();
        if !pairs.is_empty() {
            url.query_pairs_mut().extend_pairs(pairs);
        }
        url
    }

    pub(crate) fn auth(&self) -> Option<&Secret> {
        self.auth.as_ref()
    }

    /// One client (one connection) with the target's timeout and trust.
    pub(crate) fn client(&self) -> Result<reqwest::Client, SinkError> {
        let mut builder = tsload_http::client_builder(self.tls.clone())
            .timeout(self.cfg.timeout)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1);
        if let Some(addr) = self.cfg.connect_to
            && let Some(host) = self.endpoint.host_str()
        {
            builder = builder.resolve(host, addr);
        }
        builder
            .build()
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("HTTP client: {e}")))
    }

    /// POSTs `sql` and returns the answer's body as text (at most
    /// [`tsload_http::QUERY_BODY_CAP`] bytes). Errors name the statement.
    pub async fn execute(&self, client: &reqwest::Client, sql: &str) -> Result<String, SinkError> {
        let label = || format!("`{}` at {}", excerpt(sql), self.endpoint);
        let mut request = client.post(self.endpoint.clone());
        request = tsload_http::with_authorization(request, self.auth.as_ref());
        let response = request.body(sql.to_string()).send().await.map_err(|e| {
            let e = classify_request_error(&e.without_url(), self.endpoint.as_str());
            SinkError::new(e.kind, format!("`{}`: {}", excerpt(sql), e.message))
        })?;
        let status = response.status();
        if let Some(message) = tsload_http::redirect_message(status, response.headers()) {
            return Err(SinkError::new(
                ErrorKind::Rejected,
                format!("{}: {message}", label()),
            ));
        }
        if !status.is_success() {
            let header = answer_code(response.headers());
            let body = tsload_http::error_text(response).await;
            let (kind, message) = classify_status(status, &body);
            let kind = refine_kind(kind, header.or_else(|| exception_code(&body)));
            return Err(SinkError::new(kind, format!("{}: {message}", label())));
        }
        let body = tsload_http::read_body(response, tsload_http::QUERY_BODY_CAP, false)
            .await
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("{}: {e}", label())))?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// [`ClickHouseSink::execute`] of a statement answered with one number.
    async fn number(&self, client: &reqwest::Client, sql: &str) -> Result<u64, SinkError> {
        let text = self.execute(client, sql).await?;
        text.trim().parse().map_err(|_| {
            SinkError::new(
                ErrorKind::Other,
                format!(
                    "`{}`: expected a number, the server answered {:?}",
                    excerpt(sql),
                    text.chars().take(200).collect::<String>()
                ),
            )
        })
    }
}

/// A failed DDL statement: retryable failures and refused credentials keep their kind,
/// others are schema errors.
fn schema_error(e: SinkError) -> SinkError {
    if e.is_retryable() || e.kind == ErrorKind::Permission {
        e
    } else {
        SinkError::new(ErrorKind::Schema, e.message)
    }
}

impl Sink for ClickHouseSink {
    type Conn = ClickHouseConn;

    /// Checks every table's columns, creates the database and the tables (dropping them
    /// first with `drop_existing`).
    async fn prepare(&self, schema: &Arc<Schema>) -> Result<(), SinkError> {
        for table in &schema.tables {
            sql::check_table(table)?;
        }
        let client = self.client()?;
        let db = &self.cfg.database;
        self.execute(&client, &sql::create_database(db))
            .await
            .map_err(schema_error)?;
        for table in &schema.tables {
            if self.cfg.drop_existing {
                self.execute(&client, &sql::drop_table(db, table))
                    .await
                    .map_err(schema_error)?;
            }
            self.execute(&client, &sql::create_table(db, table))
                .await
                .map_err(schema_error)?;
        }
        Ok(())
    }

    async fn connect(
        &self,
        schema: &Arc<Schema>,
        _worker: usize,
    ) -> Result<ClickHouseConn, SinkError> {
        let db = &self.cfg.database;
        let tables = schema
            .tables
            .iter()
            .map(|t| TableInsert {
                url: self.url_with(&[("query", &sql::insert(db, t))]),
                label: format!("INSERT INTO {}", sql::table_name(db, &t.name)),
                fields: t.fields.len(),
            })
            .collect();
        Ok(ClickHouseConn {
            client: self.client()?,
            endpoint: self.endpoint.clone(),
            auth: self.auth.clone(),
            tables,
            encoder: RowBinaryEncoder::new(schema.clone()),
            bodies: tsload_http::BodyPool::new(),
        })
    }

    /// The bytes on disk of the active parts of the schema's tables.
    async fn storage_bytes(&self, schema: &Arc<Schema>) -> Result<Option<u64>, SinkError> {
        if schema.tables.is_empty() {
            return Ok(Some(0));
        }
        let client = self.client()?;
        let bytes = self
            .number(
                &client,
                &sql::storage_bytes(&self.cfg.database, &schema.tables),
            )
            .await?;
        Ok(Some(bytes))
    }

    /// The rows of the run's devices in the schema's tables, counted per device by their
    /// key column (`GROUP BY`), so another writer's devices (another shard's) are not in
    /// them; the rows of whole tables (`count()`) where the scope names no devices.
    async fn tally(
        &self,
        schema: &Arc<Schema>,
        scope: &RunScope,
        _settled: bool,
    ) -> Result<Option<ServerTally>, SinkError> {
        let client = self.client()?;
        let names = scope.device_names(schema);
        let mut rows = 0u64;
        for table in &schema.tables {
            let n = match &names {
                Some(names) => {
                    let text = sql::count_per_key(&self.cfg.database, table, names.column(table));
                    let answer = self.execute(&client, &text).await?;
                    names.own(sql::read_counts_per_key(&answer).map_err(|e| {
                        SinkError::new(ErrorKind::Other, format!("`{}`: {e}", excerpt(&text)))
                    })?)
                }
                None => {
                    self.number(&client, &sql::count(&self.cfg.database, table))
                        .await?
                }
            };
            rows = rows.saturating_add(n);
        }
        Ok(Some(if names.is_some() {
            ServerTally::of_own_rows(rows)
        } else {
            ServerTally::of_rows(rows)
        }))
    }
}

/// One table's insert: its URL (the statement in its query) and what messages call it.
#[derive(Debug)]
struct TableInsert {
    url: Url,
    label: String,
    fields: usize,
}

/// One worker's connection: its client, the tables' insert URLs and its body buffers.
pub struct ClickHouseConn {
    client: reqwest::Client,
    endpoint: Url,
    auth: Option<Secret>,
    tables: Vec<TableInsert>,
    encoder: RowBinaryEncoder,
    /// Buffers of sent bodies, encoded into again.
    bodies: tsload_http::BodyPool,
}

impl fmt::Debug for ClickHouseConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClickHouseConn")
            .field("endpoint", &self.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl ClickHouseConn {
    /// POSTs `body` (RowBinary rows) to table `t`'s insert URL.
    async fn insert(&self, t: usize, body: bytes::Bytes) -> Result<(), SinkError> {
        let table = &self.tables[t];
        let label = || format!("{} at {}", table.label, self.endpoint);
        let mut request = self
            .client
            .post(table.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream");
        request = tsload_http::with_authorization(request, self.auth.as_ref());
        let response = request.body(body).send().await.map_err(|e| {
            // Without the URL: its query is the whole INSERT statement.
            classify_request_error(&e.without_url(), &label())
        })?;
        let status = response.status();
        if status.is_success() {
            tsload_http::drain(response).await;
            return Ok(());
        }
        let header = answer_code(response.headers());
        let e = answer_error(response).await;
        let code = header.or_else(|| exception_code(&e.message));
        let mut e = refine(e, code);
        e.message = format!("{}: {}", label(), e.message);
        Err(e)
    }
}

impl SinkConn for ClickHouseConn {
    async fn write(&mut self, batch: &Batch, _id: BatchId) -> Result<WriteAck, SinkError> {
        batch
            .check_shape(self.tables.iter().map(|t| t.fields))
            .map_err(|e| {
                let message = match e.table {
                    Some(i) => format!("{}: malformed batch: {}", self.tables[i].label, e.message),
                    None => format!("malformed batch: {}", e.message),
                };
                SinkError::new(ErrorKind::Rejected, message)
            })?;
        let mut bytes = 0u64;
        for (t, rows) in batch.tables.iter().enumerate() {
            if rows.rows() == 0 {
                continue;
            }
            let mut buf = self.bodies.take(0);
            self.encoder.encode_table(t, rows, &mut buf);
            let body = self.bodies.bytes(buf);
            bytes += body.len() as u64;
            if let Err(e) = self.insert(t, body).await {
                return Err(partial(e, batch, t, &self.tables));
            }
        }
        Ok(WriteAck {
            rows: batch.rows() as u64,
            bytes,
            duplicate: false,
            metrics: None,
        })
    }
}

/// The failed insert of `batch`'s table `failed`, ambiguous when part of the batch may be
/// stored: its earlier tables with rows were (they are inserted in order, each after the
/// one before succeeded), or the insert had more rows than one block.
fn partial(e: SinkError, batch: &Batch, failed: usize, tables: &[TableInsert]) -> SinkError {
    let mut e = e;
    let rows = batch.tables.get(failed).map_or(0, |t| t.rows());
    if rows > MAX_INSERT_BLOCK_ROWS {
        e.message.push_str(&format!(
            " (an insert of {rows} rows is written in blocks of {MAX_INSERT_BLOCK_ROWS}: its \
             first blocks may be stored)"
        ));
        e = e.into_ambiguous();
    }
    let names: Vec<&str> = batch.tables[..failed.min(batch.tables.len())]
        .iter()
        .zip(tables)
        .filter(|(rows, _)| rows.rows() > 0)
        .map(|(_, t)| t.label.trim_start_matches("INSERT INTO "))
        .collect();
    if !names.is_empty() {
        e.message.push_str(&format!(
            " (this batch's rows of {} were stored before it; a retry stores them again)",
            names.join(", ")
        ));
        e = e.into_ambiguous();
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_codes_are_read_from_either_format() {
        assert_eq!(
            exception_code("Code: 60, e.displayText() = DB::Exception: Table x doesn't exist."),
            Some(60)
        );
        assert_eq!(
            exception_code(
                "HTTP 500 Internal Server Error: Code: 53. DB::Exception: Type mismatch"
            ),
            Some(53)
        );
        assert_eq!(exception_code("HTTP 502 Bad Gateway"), None);
        assert_eq!(exception_code("Code: x"), None);
    }

    #[test]
    fn a_coded_server_error_is_a_rejection_unless_the_server_was_busy() {
        assert_eq!(
            refine_kind(ErrorKind::Unavailable, Some(53)),
            ErrorKind::Rejected
        );
        assert_eq!(
            refine_kind(ErrorKind::Unavailable, Some(241)),
            ErrorKind::Unavailable
        );
        assert_eq!(
            refine_kind(ErrorKind::Unavailable, None),
            ErrorKind::Unavailable
        );
        assert_eq!(
            refine_kind(ErrorKind::Permission, Some(193)),
            ErrorKind::Permission
        );
        let e = tsload_http::status_error(
            reqwest::StatusCode::INTERNAL_SERVER_ERROR,
            "Code: 33, e.displayText() = DB::Exception: Cannot read all data",
            None,
        );
        assert!(e.ambiguous);
        let e = refine(e, Some(33));
        assert_eq!(e.kind, ErrorKind::Rejected);
        assert!(
            !e.ambiguous && e.message.contains("Cannot read all data"),
            "{e:?}"
        );
    }

    #[test]
    fn a_failure_after_an_earlier_table_was_stored_is_ambiguous() {
        let tables: Vec<TableInsert> = ["cpu", "mem", "disk"]
            .iter()
            .map(|t| TableInsert {
                url: Url::parse("http://h/").unwrap(),
                label: format!("INSERT INTO `tsload`.`{t}`"),
                fields: 0,
            })
            .collect();
        let rows = |n: usize| tsload_core::TableBatch {
            device: vec![0; n],
            ts: vec![0; n],
            columns: Vec::new(),
        };
        let batch = Batch {
            tables: vec![rows(0), rows(10), rows(10)],
            ..Batch::default()
        };
        let e = || SinkError::new(ErrorKind::Rejected, "HTTP 400: bad");
        // cpu had no rows: nothing of the batch was stored before mem failed.
        let first = partial(e(), &batch, 1, &tables);
        assert!(!first.ambiguous, "{first:?}");
        let second = partial(e(), &batch, 2, &tables);
        assert!(second.ambiguous);
        assert!(
            second
                .message
                .contains("rows of `tsload`.`mem` were stored"),
            "{}",
            second.message
        );
        assert!(!second.message.contains("cpu"), "{}", second.message);
        let huge = Batch {
            tables: vec![rows(MAX_INSERT_BLOCK_ROWS + 1)],
            ..Batch::default()
        };
        let huge = partial(e(), &huge, 0, &tables);
        assert!(
            huge.ambiguous && huge.message.contains("blocks"),
            "{}",
            huge.message
        );
    }

    #[test]
    fn urls_keep_a_prefix_and_refuse_credentials() {
        let s = ClickHouseSink::new(ClickHouseConfig::new("http://h:8123/ch?x=1")).unwrap();
        assert_eq!(
            s.url_with(&[("query", "INSERT INTO t FORMAT RowBinary")])
                .as_str(),
            "http://h:8123/ch/?query=INSERT+INTO+t+FORMAT+RowBinary"
        );
        assert_eq!(
            ClickHouseSink::new(ClickHouseConfig::new("https://h"))
                .unwrap()
                .url_with(&[])
                .as_str(),
            "https://h/"
        );
        let e = ClickHouseSink::new(ClickHouseConfig::new("http://u:pw@h")).unwrap_err();
        assert!(
            e.message.contains("credentials") && !e.message.contains("pw"),
            "{e}"
        );
        let e = ClickHouseSink::new(ClickHouseConfig::new("ftp://h")).unwrap_err();
        assert!(e.message.contains("allowed: http, https"), "{e}");
    }

    #[test]
    fn basic_auth_for_a_user_or_a_password_alone() {
        let mut cfg = ClickHouseConfig::new("http://h");
        assert_eq!(cfg.auth(), None);
        cfg.password = Some("pw".into());
        // base64("default:pw")
        assert_eq!(
            cfg.auth().as_ref().map(Secret::expose),
            Some("Basic ZGVmYXVsdDpwdw==")
        );
        cfg.user = Some("u".into());
        cfg.password = None;
        assert_eq!(cfg.auth().as_ref().map(Secret::expose), Some("Basic dTo="));
        cfg.password = Some("s3cret".into());
        assert!(!format!("{cfg:?}").contains("s3cret"));
    }
}
