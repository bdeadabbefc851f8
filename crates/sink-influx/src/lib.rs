//! tsload-sink-influx: writes batches as InfluxDB line protocol over HTTP, one connection
//! per worker. It speaks InfluxDB 1.x's `/write?db=` (user and password as HTTP basic
//! auth) and InfluxDB 2.x/3.x's `/api/v2/write?org=&bucket=` (token), which covers
//! VictoriaMetrics, QuestDB, TDengine's taosAdapter and other InfluxDB-compatible servers.
//! Bodies are encoded by `tsload-lineproto`, optionally gzip'd. [`InfluxQueryTarget`] is
//! the read side: InfluxQL, PromQL (VictoriaMetrics) or QuestDB SQL queries over HTTP
//! ([`QueryApi`]), with the same [`InfluxConfig`].

mod influxql;
mod kind;
mod questdb;

use std::fmt;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{StatusCode, Url};
use tsload_core::stored::ServerTally;
use tsload_core::{Batch, BatchId, ErrorKind, Schema, Sink, SinkConn, SinkError, WriteAck};
use tsload_lineproto::LineEncoder;
use tsload_redact::Secret;

pub use influxql::InfluxQl;
pub use kind::{InfluxKind, KIND};
pub use questdb::QuestDbSql;
use tsload_http::{answer_error, classify_request_error, classify_status, join};
pub use tsload_lineproto::Precision;

/// Which write API the server is spoken to with. Its credentials are [`Secret`]s, so even
/// `Debug` shows none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Api {
    /// InfluxDB 1.x: `POST /write?db=DB&rp=RP&precision=P`, basic auth when a user is set.
    V1 {
        db: String,
        rp: Option<String>,
        user: Option<String>,
        password: Option<Secret>,
    },
    /// InfluxDB 2.x/3.x: `POST /api/v2/write?org=ORG&bucket=BUCKET&precision=P`,
    /// `Authorization: Token TOKEN` when a token is set.
    V2 {
        org: String,
        bucket: String,
        token: Option<Secret>,
    },
}

/// Settings of the line-protocol target.
#[derive(Debug, Clone, PartialEq)]
pub struct InfluxConfig {
    /// Base URL of the server, e.g. `http://127.0.0.1:8086`.
    pub url: String,
    pub api: Api,
    pub precision: Precision,
    /// Send `Content-Encoding: gzip` bodies.
    pub gzip: bool,
    /// InfluxDB 1.x only: `CREATE DATABASE` before the run. Servers without `/query`
    /// (VictoriaMetrics, QuestDB) answer 404, which is taken as "nothing to create".
    pub create_database: bool,
    /// Limit for one request, connect to last byte of the answer.
    pub timeout: Duration,
    /// For `https://` URLs: which certificates are trusted.
    pub tls: tsload_tls::TlsOptions,
    /// Connect to this address's IP instead of resolving the URL's host name, which TLS
    /// still checks the certificate against (a delay proxy in front of an https server).
    /// reqwest keeps the URL's port: the URL must name this address's port.
    pub connect_to: Option<std::net::SocketAddr>,
}

impl InfluxConfig {
    /// InfluxDB 1.x API into database `db`, nanosecond timestamps, no gzip.
    pub fn v1(url: impl Into<String>, db: impl Into<String>) -> Self {
        InfluxConfig {
            url: url.into(),
            api: Api::V1 {
                db: db.into(),
                rp: None,
                user: None,
                password: None,
            },
            precision: Precision::Ns,
            gzip: false,
            create_database: true,
            timeout: Duration::from_secs(60),
            tls: tsload_tls::TlsOptions::default(),
            connect_to: None,
        }
    }
}

/// The line-protocol target.
pub struct InfluxSink {
    cfg: InfluxConfig,
    write_url: Url,
    /// The server's base URL, as checked (reads go under it).
    base: Url,
    /// The `Authorization` header: a secret.
    auth: Option<Secret>,
    /// The TLS configuration every worker's client starts from (used for `https://`).
    tls: rustls::ClientConfig,
}

impl fmt::Debug for InfluxSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InfluxSink")
            .field("cfg", &self.cfg)
            .field("write_url", &self.write_url.as_str())
            .field("auth", &self.auth.as_ref().map(|_| "***"))
            .finish()
    }
}

fn config_error(message: String) -> SinkError {
    SinkError::new(ErrorKind::Connection, message)
}

impl InfluxSink {
    /// Checks the URL and builds the write endpoint. The error names the bad URL.
    pub fn new(cfg: InfluxConfig) -> Result<Self, SinkError> {
        let shown = tsload_redact::url(&cfg.url);
        let base = Url::parse(&cfg.url)
            .map_err(|e| config_error(format!("target url \"{shown}\" is not a URL: {e}")))?;
        match base.scheme() {
            "http" | "https" => {}
            other => {
                return Err(config_error(format!(
                    "target url \"{shown}\": scheme \"{other}\" is not allowed; allowed: http, https"
                )));
            }
        }
        // Given to reqwest even for http: a client built without one panics unless the
        // process installed a default crypto provider.
        let tls = tsload_tls::client_config(&cfg.tls)
            .map_err(|e| config_error(format!("target url \"{shown}\": {e}")))?;
        if !base.username().is_empty() || base.password().is_some() {
            return Err(config_error(
                "target url: put credentials in `user`/`password` or `token`, not in the URL"
                    .to_string(),
            ));
        }
        let (path, auth) = match &cfg.api {
            Api::V1 { user, password, .. } => (
                "write",
                user.as_ref().map(|u| {
                    let none = Secret::new("");
                    tsload_redact::basic_auth_header(u, password.as_ref().unwrap_or(&none))
                }),
            ),
            Api::V2 { token, .. } => (
                "api/v2/write",
                token
                    .as_ref()
                    .map(|t| Secret::new(format!("Token {}", t.expose()))),
            ),
        };
        let mut write_url = join(&base, path);
        {
            let mut q = write_url.query_pairs_mut();
            match &cfg.api {
                Api::V1 { db, rp, .. } => {
                    q.append_pair("db", db);
                    if let Some(rp) = rp {
                        q.append_pair("rp", rp);
                    }
                }
                Api::V2 { org, bucket, .. } => {
                    q.append_pair("org", org);
                    q.append_pair("bucket", bucket);
                }
            }
            q.append_pair("precision", cfg.precision.as_str());
        }
        Ok(InfluxSink {
            cfg,
            write_url,
            base,
            auth,
            tls,
        })
    }

    /// The write endpoint (no secrets in it).
    pub fn write_url(&self) -> &Url {
        &self.write_url
    }

    fn client(&self) -> Result<reqwest::Client, SinkError> {
        let mut builder = tsload_http::client_builder(self.tls.clone())
            .timeout(self.cfg.timeout)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1);
        if let Some(addr) = self.cfg.connect_to
            && let Some(host) = self.write_url.host_str()
        {
            builder = builder.resolve(host, addr);
        }
        builder
            .build()
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("HTTP client: {e}")))
    }
}

/// A storage answer's body as text: server statistics, capped at
/// [`tsload_http::QUERY_BODY_CAP`].
async fn body_text(response: reqwest::Response) -> Result<String, tsload_http::BodyError> {
    let body = tsload_http::read_body(response, tsload_http::QUERY_BODY_CAP, false).await?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

impl InfluxSink {
    /// The read target of `api` at this sink's server, with its credentials, trust and
    /// timeout: InfluxQL queries the database of [`Api::V1`] (with its retention policy) or
    /// the bucket of [`Api::V2`] (as 2.x's compatibility API maps it).
    pub fn reader(&self, api: tsload_http::QueryApi) -> tsload_http::HttpQueryTarget {
        let database = match &self.cfg.api {
            Api::V1 { db, rp, .. } => (db.clone(), rp.clone()),
            Api::V2 { bucket, .. } => (bucket.clone(), None),
        };
        let endpoint = tsload_http::QueryEndpoint {
            base: self.base.clone(),
            database: Some(database),
            tls: self.tls.clone(),
            timeout: self.cfg.timeout,
            connect_to: self.cfg.connect_to,
            auth: self.auth.clone(),
        };
        tsload_http::HttpQueryTarget::new(endpoint, api)
    }
}

impl Sink for InfluxSink {
    type Conn = InfluxConn;

    async fn prepare(&self, _schema: &Arc<Schema>) -> Result<(), SinkError> {
        let Api::V1 { db, .. } = &self.cfg.api else {
            return Ok(());
        };
        if !self.cfg.create_database {
            return Ok(());
        }
        let base = Url::parse(&self.cfg.url).map_err(|e| config_error(e.to_string()))?;
        let mut url = join(&base, "query");
        let q = format!(
            "CREATE DATABASE \"{}\"",
            db.replace('\\', "\\\\").replace('"', "\\\"")
        );
        url.query_pairs_mut().append_pair("q", &q);
        let mut request = self.client()?.post(url);
        request = tsload_http::with_authorization(request, self.auth.as_ref());
        let response = request
            .send()
            .await
            .map_err(|e| classify_request_error(&e, &self.cfg.url))?;
        let status = response.status();
        if status.is_success() || status == StatusCode::NOT_FOUND {
            // 404: the server has no /query (VictoriaMetrics, QuestDB): nothing to create.
            return Ok(());
        }
        let body = tsload_http::error_text(response).await;
        let (kind, message) = classify_status(status, &body);
        Err(SinkError::new(
            if kind.is_retryable() {
                kind
            } else {
                ErrorKind::Schema
            },
            format!("CREATE DATABASE \"{db}\" at {}: {message}", self.cfg.url),
        ))
    }

    /// VictoriaMetrics: asked to flush its in-memory part, then the sum of
    /// `vm_data_size_bytes` in `/metrics` (the whole server's data and index). InfluxDB
    /// 1.x: the `diskBytes` of the database's shards in `/debug/vars`. QuestDB: once its
    /// write-ahead log is applied to the schema's tables, their partitions' `diskSize`.
    /// Others: `None`.
    async fn storage_bytes(&self, schema: &Arc<Schema>) -> Result<Option<u64>, SinkError> {
        let base = Url::parse(&self.cfg.url).map_err(|e| config_error(e.to_string()))?;
        let client = self.client()?;
        let get = |path: &str| self.get(&client, join(&base, path)).send();
        let failed = |e: reqwest::Error| classify_request_error(&e, &self.cfg.url);
        let metrics = match get("metrics").await {
            Ok(r) if r.status().is_success() => body_text(r).await.unwrap_or_default(),
            _ => String::new(),
        };
        if vm_data_size(&metrics).is_some() {
            // VictoriaMetrics: its in-memory part written out, then its own figures, which
            // it recomputes about once a second (an earlier scrape's are served until
            // then).
            let _ = get("internal/force_flush").await;
            let read = || async {
                body_text(get("metrics").await.map_err(failed)?)
                    .await
                    .map_err(|e| SinkError::new(ErrorKind::Other, format!("/metrics: {e}")))
            };
            let flushed = read().await?;
            let text = tsload_http::read_after_refresh(&flushed, VM_METRICS_REFRESH, read).await?;
            return Ok(vm_data_size(&text));
        }
        if let Api::V1 { db, .. } = &self.cfg.api
            && let Ok(r) = get("debug/vars").await
            && r.status().is_success()
        {
            let text = body_text(r)
                .await
                .map_err(|e| SinkError::new(ErrorKind::Other, format!("/debug/vars: {e}")))?;
            let vars: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                SinkError::new(ErrorKind::Other, format!("/debug/vars: not JSON: {e}"))
            })?;
            if let Some(bytes) = influxdb_disk_bytes(&vars, db) {
                return Ok(Some(bytes));
            }
        }
        self.questdb_storage(&base, &client, schema).await
    }

    /// VictoriaMetrics: the samples it took in over its influx endpoint less those it
    /// ignored (`vm_rows_inserted_total` - `vm_rows_ignored_total`), and the ignored ones
    /// by reason. InfluxDB 1.x: the points its shards of the database wrote
    /// (`writePointsOk`), and the points it dropped past a retention policy. QuestDB: the
    /// rows of the schema's tables once its write-ahead log is applied.
    async fn tally(
        &self,
        schema: &Arc<Schema>,
        _scope: &tsload_core::stored::RunScope,
        _settled: bool,
    ) -> Result<Option<ServerTally>, SinkError> {
        let base = Url::parse(&self.cfg.url).map_err(|e| config_error(e.to_string()))?;
        let client = self.client()?;
        let get = |path: &str| self.get(&client, join(&base, path)).send();
        let first = match get("metrics").await {
            Ok(r) if r.status().is_success() => body_text(r).await.unwrap_or_default(),
            _ => String::new(),
        };
        if vm_tally(&first).is_some() {
            // VictoriaMetrics serves the counters of a scrape up to a second old: read
            // them once they include every write before this moment, before the load too
            // (counts that lacked the last second of an earlier writer, say the sweep's
            // previous point, would grow by more than the run sent and read as another
            // writer's).
            let failed = |e: String| SinkError::new(ErrorKind::Other, format!("/metrics: {e}"));
            let text = tsload_http::read_after_refresh(&first, VM_METRICS_REFRESH, || async {
                let r = get("metrics").await.map_err(|e| failed(e.to_string()))?;
                body_text(r).await.map_err(|e| failed(e.to_string()))
            })
            .await?;
            return vm_tally(&text)
                .map(Some)
                .ok_or_else(|| failed("no vm_rows_inserted_total any more".into()));
        }
        if let Api::V1 { db, .. } = &self.cfg.api
            && let Ok(r) = get("debug/vars").await
            && r.status().is_success()
            && let Ok(vars) =
                serde_json::from_str::<serde_json::Value>(&body_text(r).await.unwrap_or_default())
            && let Some(t) = influxdb_tally(&vars, db)
        {
            return Ok(Some(t));
        }
        let rows = self
            .questdb_per_table(&base, &client, schema, "select count() from '{}'")
            .await?;
        Ok(rows.map(ServerTally::of_rows))
    }

    fn line_text_unit_ns(&self) -> Option<i64> {
        Some(self.cfg.precision.divisor())
    }

    async fn connect(&self, schema: &Arc<Schema>, _worker: usize) -> Result<InfluxConn, SinkError> {
        Ok(InfluxConn {
            client: self.client()?,
            url: self.write_url.clone(),
            auth: self.auth.clone(),
            gzip: self.cfg.gzip,
            encoder: LineEncoder::new(schema.clone(), self.cfg.precision),
            last_len: 0,
            bodies: tsload_http::BodyPool::new(),
        })
    }
}

impl InfluxSink {
    /// A GET of `url` with the configured credentials.
    fn get(&self, client: &reqwest::Client, url: Url) -> reqwest::RequestBuilder {
        tsload_http::with_authorization(client.get(url), self.auth.as_ref())
    }

    /// QuestDB's figure for the schema's tables (see `storage_bytes`), `None` when `/exec`
    /// is not QuestDB's SQL endpoint.
    async fn questdb_storage(
        &self,
        base: &Url,
        client: &reqwest::Client,
        schema: &Schema,
    ) -> Result<Option<u64>, SinkError> {
        self.questdb_per_table(
            base,
            client,
            schema,
            "select sum(diskSize) from table_partitions('{}')",
        )
        .await
    }

    /// The sum over the schema's existing tables of `sql` (one long; `{}` is the table's
    /// name as a string literal), once QuestDB has applied its write-ahead log; `None`
    /// when `/exec` is not QuestDB's SQL endpoint.
    async fn questdb_per_table(
        &self,
        base: &Url,
        client: &reqwest::Client,
        schema: &Schema,
        sql: &str,
    ) -> Result<Option<u64>, SinkError> {
        let exec = |sql: String| {
            let mut url = join(base, "exec");
            url.query_pairs_mut().append_pair("query", &sql);
            let request = self.get(client, url);
            async move {
                let response = request.send().await.ok()?;
                if !response.status().is_success() {
                    return None;
                }
                serde_json::from_str::<serde_json::Value>(&body_text(response).await.ok()?).ok()
            }
        };
        let other = |e: String| SinkError::new(ErrorKind::Other, format!("QuestDB: {e}"));
        let wanted: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        // Every table, WAL or not (tables created without one, or by an older QuestDB).
        let Some(answer) = exec("tables()".to_string()).await else {
            return Ok(None);
        };
        let existing = questdb_tables(&answer, &wanted).map_err(other)?;
        let names: Vec<&str> = existing.iter().map(String::as_str).collect();
        let deadline = tokio::time::Instant::now() + QUESTDB_WAL_TIMEOUT;
        loop {
            let answer = exec(QUESTDB_WAL_TABLES.to_string())
                .await
                .ok_or_else(|| other("no answer to wal_tables()".into()))?;
            let pending = questdb_wal_pending(&answer, &names).map_err(other)?;
            if pending.is_empty() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(SinkError::new(
                    ErrorKind::Timeout,
                    format!(
                        "QuestDB had not applied its write-ahead log within {} s: {}",
                        QUESTDB_WAL_TIMEOUT.as_secs(),
                        pending.join(", ")
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut sum = 0u64;
        for table in existing {
            let answer = exec(sql.replace("{}", &table.replace('\'', "''"))).await;
            sum += answer
                .as_ref()
                .and_then(questdb_single_long)
                .ok_or_else(|| other(format!("no figure for table {table}: {answer:?}")))?;
        }
        Ok(Some(sum))
    }
}

/// How long a storage figure waits for QuestDB to apply its write-ahead log.
const QUESTDB_WAL_TIMEOUT: Duration = Duration::from_secs(60);

/// QuestDB's WAL tables: each one's name, whether it is suspended, and how far its
/// writer has applied the transactions its sequencer holds.
const QUESTDB_WAL_TABLES: &str =
    "select name, suspended, writerTxn, sequencerTxn, errorMessage from wal_tables()";

/// The rows of an `/exec` answer to `what`, or QuestDB's error, or why it is no answer.
fn questdb_dataset<'a>(
    answer: &'a serde_json::Value,
    what: &str,
) -> Result<&'a Vec<serde_json::Value>, String> {
    if let Some(error) = answer["error"].as_str() {
        return Err(format!("{what}: {error}"));
    }
    answer["dataset"]
        .as_array()
        .ok_or_else(|| format!("{what}: no dataset in {answer}"))
}

/// The tables of `wanted` that an `/exec` answer to `tables()` lists, as QuestDB spells
/// them (its names are case-insensitive). The name column is `table_name` (`name` before
/// QuestDB 7.x).
fn questdb_tables(answer: &serde_json::Value, wanted: &[&str]) -> Result<Vec<String>, String> {
    let rows = questdb_dataset(answer, "tables()")?;
    let columns = answer["columns"]
        .as_array()
        .ok_or_else(|| format!("tables(): no columns in {answer}"))?;
    let at = ["table_name", "name"]
        .iter()
        .find_map(|n| columns.iter().position(|c| c["name"] == *n))
        .ok_or_else(|| format!("tables(): no table_name column in {answer}"))?;
    Ok(rows
        .iter()
        .filter_map(|row| row[at].as_str())
        .filter(|name| wanted.iter().any(|w| w.eq_ignore_ascii_case(name)))
        .map(str::to_string)
        .collect())
}

/// The tables of `tables` whose write-ahead log is not yet applied, in words, from an
/// `/exec` answer to [`QUESTDB_WAL_TABLES`] (a table without a WAL is not listed there);
/// an error for a suspended table (its WAL cannot be applied) or an answer of another
/// shape.
fn questdb_wal_pending(answer: &serde_json::Value, tables: &[&str]) -> Result<Vec<String>, String> {
    let rows = questdb_dataset(answer, "wal_tables()")?;
    let mut pending = Vec::new();
    for row in rows {
        let Some(name) = row[0].as_str() else {
            continue;
        };
        // QuestDB's table names are case-insensitive.
        if !tables.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            continue;
        }
        if row[1].as_bool() == Some(true) {
            return Err(format!(
                "table {name} is suspended, its write-ahead log cannot be applied: {}",
                row[4]
            ));
        }
        let (writer, sequencer) = (row[2].as_i64(), row[3].as_i64());
        if writer < sequencer {
            pending.push(format!(
                "{name} at transaction {} of {}",
                writer.unwrap_or(0),
                sequencer.unwrap_or(0)
            ));
        }
    }
    Ok(pending)
}

/// The one long value of an `/exec` answer with one row and one column (`sum()` over no
/// partitions is null: 0).
fn questdb_single_long(answer: &serde_json::Value) -> Option<u64> {
    if answer.get("error").is_some() {
        return None;
    }
    let cell = &answer["dataset"].as_array()?.first()?[0];
    if cell.is_null() {
        return Some(0);
    }
    cell.as_u64()
}

/// How long VictoriaMetrics serves an earlier scrape's figures (its `/metrics` page is made
/// anew about once a second), with a margin: the most [`tsload_http::read_after_refresh`]
/// waits.
const VM_METRICS_REFRESH: Duration = Duration::from_millis(1_200);

/// The sum of VictoriaMetrics' `vm_data_size_bytes` samples in Prometheus text; `None`
/// when there are none (not VictoriaMetrics).
fn vm_data_size(text: &str) -> Option<u64> {
    let mut sum = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("vm_data_size_bytes") else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        let value = rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        if let Some(v) = value.filter(|v| v.is_finite() && *v >= 0.0) {
            *sum.get_or_insert(0u64) += v as u64;
        }
    }
    sum
}

/// VictoriaMetrics' counts in its Prometheus text: samples stored (taken in less ignored),
/// the ignored ones by reason, and its start time; `None` when the text is not
/// VictoriaMetrics' (no `vm_rows_inserted_total`).
fn vm_tally(text: &str) -> Option<ServerTally> {
    let mut inserted = None;
    let mut tally = ServerTally::default();
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Some(value) = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
        else {
            continue;
        };
        let value = value as u64;
        if name.starts_with("vm_rows_inserted_total{") {
            *inserted.get_or_insert(0u64) += value;
        } else if let Some(labels) = name.strip_prefix("vm_rows_ignored_total{") {
            let reason = labels
                .split_once("reason=\"")
                .and_then(|(_, r)| r.split_once('"'))
                .map_or("ignored", |(r, _)| r);
            *tally.refused.entry(reason.to_string()).or_insert(0) += value;
        } else if name == "process_start_time_seconds" {
            tally.epoch = Some(value.to_string());
        } else if name == "vm_new_timeseries_created_total" {
            tally.series_created = Some(value);
        }
    }
    let ignored: u64 = tally.refused.values().sum();
    tally.samples = Some(inserted?.saturating_sub(ignored));
    // Every writer's samples over the influx endpoint.
    tally.server_wide = true;
    Some(tally)
}

/// InfluxDB 1.x's counts in `/debug/vars`: the points the shards of database `db` wrote,
/// the points it dropped (past a retention policy, shard errors), and its start time;
/// `None` when the document is not InfluxDB's.
fn influxdb_tally(vars: &serde_json::Value, db: &str) -> Option<ServerTally> {
    let entries = vars.as_object()?;
    let write = entries.get("write").filter(|w| w["name"] == "write")?;
    let shards = || {
        entries
            .values()
            .filter(|v| v["name"] == "shard" && v["tags"]["database"] == db)
    };
    let sum = |field: &str| -> u64 {
        shards()
            .filter_map(|v| v["values"][field].as_u64())
            .fold(0u64, u64::saturating_add)
    };
    let mut refused = std::collections::BTreeMap::new();
    refused.insert(
        "points beyond a retention policy".to_string(),
        write["values"]["writeDrop"].as_u64().unwrap_or(0),
    );
    refused.insert(
        "points a shard failed to write".to_string(),
        sum("writePointsErr").saturating_add(sum("writePointsDropped")),
    );
    Some(ServerTally {
        epoch: vars["system"]["started"].as_str().map(str::to_string),
        rows: Some(sum("writePointsOk")),
        samples: None,
        counts_every_sample: false,
        refused,
        // The database's points, whoever wrote them.
        server_wide: true,
        own_devices: false,
        // writePointsOk counts a point that overwrites one with its series and time.
        merges_duplicates: false,
        // Its series are a measurement's tag sets, not fields: not asked.
        series_created: None,
    })
}

/// The `diskBytes` of the shards of database `db` in InfluxDB 1.x's `/debug/vars` (0
/// before its first shard); `None` when the document is not InfluxDB's (no `httpd`
/// statistics).
fn influxdb_disk_bytes(vars: &serde_json::Value, db: &str) -> Option<u64> {
    let entries = vars.as_object()?;
    if !entries.values().any(|v| v["name"] == "httpd") {
        return None;
    }
    Some(
        entries
            .values()
            .filter(|v| v["name"] == "shard" && v["tags"]["database"] == db)
            .filter_map(|v| v["values"]["diskBytes"].as_u64())
            .sum(),
    )
}

/// One worker's HTTP connection and encoder.
pub struct InfluxConn {
    client: reqwest::Client,
    url: Url,
    auth: Option<Secret>,
    gzip: bool,
    encoder: LineEncoder,
    /// Size of the previous body, to size the next one in one allocation.
    last_len: usize,
    /// Buffers of sent bodies, encoded into again.
    bodies: tsload_http::BodyPool,
}

impl fmt::Debug for InfluxConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InfluxConn")
            .field("url", &self.url.as_str())
            .finish()
    }
}

impl InfluxConn {
    /// The request body for `batch`: line protocol, gzip'd when configured, in a buffer
    /// of the connection's pool (a sent body's buffer comes back to it).
    ///
    /// A batch that carries its rows as line protocol in this sink's unit
    /// ([`tsload_core::LineText`]: a replayed file's own lines) is sent as it is.
    fn body(&mut self, batch: &Batch) -> bytes::Bytes {
        let mut body = self.bodies.take(self.last_len + self.last_len / 8 + 4096);
        match &batch.text {
            Some(text) => body.extend_from_slice(&text.bytes),
            None => self.encoder.encode(batch, &mut body),
        }
        self.last_len = body.len();
        if !self.gzip {
            return self.bodies.bytes(body);
        }
        let mut gz = flate2::write::GzEncoder::new(
            self.bodies.take(body.len() / 4 + 64),
            flate2::Compression::fast(),
        );
        // Writing into a Vec cannot fail.
        let _ = gz.write_all(&body);
        // The plain text was only a step: its buffer goes straight back.
        drop(self.bodies.bytes(body));
        self.bodies.bytes(gz.finish().unwrap_or_default())
    }
}

impl SinkConn for InfluxConn {
    async fn write(&mut self, batch: &Batch, _id: BatchId) -> Result<WriteAck, SinkError> {
        let body = self.body(batch);
        let bytes = body.len() as u64;
        // Line protocol carries numeric tags as fields: count what was sent.
        let fields = match &batch.text {
            Some(text) => text.metrics,
            None => self.encoder.fields_written(),
        };
        let mut request = self
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8");
        if self.gzip {
            request = request.header(reqwest::header::CONTENT_ENCODING, "gzip");
        }
        request = tsload_http::with_authorization(request, self.auth.as_ref());
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| classify_request_error(&e, self.url.as_str()))?;
        let status = response.status();
        if status.is_success() {
            // Read the (empty) answer so the connection goes back to the pool.
            tsload_http::drain(response).await;
            return Ok(WriteAck {
                rows: batch.rows() as u64,
                bytes,
                duplicate: false,
                metrics: Some(fields),
            });
        }
        Err(answer_error(response).await)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod prop;
