//! The read side of the HTTP kinds (influx, prometheus): [`HttpQueryTarget`] runs query
//! requests over HTTP, one client (one connection) per worker, with the kind's URL,
//! credentials and timeout ([`QueryEndpoint`]), against one of three query APIs
//! ([`QueryApi`]):
//!
//! - InfluxQL (InfluxDB 1.x, and 2.x's compatibility API): `GET /query?db=&q=` (`POST` for
//!   statements that are not `SELECT` or `SHOW`, as InfluxDB requires); rows are the
//!   points (the `values` rows) of every series of every result. InfluxDB reports a
//!   failing statement in a `200 OK` answer (`"error"` in the result): that is a rejected
//!   request too.
//! - PromQL (VictoriaMetrics, Prometheus): the statement text is the expression; parameters
//!   `[Int start_ms, Int end_ms, Int step_s]` make it `GET /api/v1/query_range`, none
//!   `GET /api/v1/query`; rows are the samples returned (every point of a range query's
//!   series, one per series of an instant vector, one for a scalar).
//! - QuestDB's SQL over HTTP: `GET /exec?query=`; rows are the rows of `dataset` (or
//!   `count`, or the rows an UPDATE reports).
//!
//! Answers are counted while they are parsed, without keeping the values. 429 and 5xx
//! answers are [`ErrorKind::Unavailable`], other 4xx and error answers
//! [`ErrorKind::Rejected`] (401/403 [`ErrorKind::Permission`]), timeouts
//! [`ErrorKind::Timeout`], failures to connect or to read the answer
//! [`ErrorKind::Connection`]. HTTP has no transactions: a request that asks for one is
//! rejected.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use reqwest::{Method, Url};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use tsload_core::{
    ErrorKind, Param, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};
use tsload_redact::Secret;

use crate::{classify_request_error, classify_status, join};

/// Longest piece of an unparsable answer kept in an error message.
const MAX_ANSWER: usize = 300;

/// Which query API the server is spoken to with. The write API does not tell (the
/// VictoriaMetrics and QuestDB targets write with InfluxDB 1.x's `/write`), so a read
/// target names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryApi {
    /// InfluxQL at `/query` (InfluxDB 1.x; 2.x through its 1.x compatibility API).
    InfluxQl,
    /// PromQL at `/api/v1/query` and `/api/v1/query_range` (VictoriaMetrics, Prometheus).
    PromQl,
    /// SQL at QuestDB's `/exec`.
    QuestDb,
}

impl QueryApi {
    /// The word a scenario uses for this API.
    pub fn as_str(self) -> &'static str {
        match self {
            QueryApi::InfluxQl => "influxql",
            QueryApi::PromQl => "promql",
            QueryApi::QuestDb => "questdb",
        }
    }
}

impl FromStr for QueryApi {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "influxql" => Ok(QueryApi::InfluxQl),
            "promql" => Ok(QueryApi::PromQl),
            "questdb" => Ok(QueryApi::QuestDb),
            _ => Err(format!(
                "unknown query API {s:?}: expected one of influxql, promql, questdb"
            )),
        }
    }
}

impl fmt::Display for QueryApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where and how a kind reaches an HTTP query API.
#[derive(Clone)]
pub struct QueryEndpoint {
    /// The server's base URL; a path prefix it has (a proxy's `/influx/`) is kept.
    pub base: Url,
    /// InfluxQL's database and retention policy (`db=`, `rp=`).
    pub database: Option<(String, Option<String>)>,
    /// The trust every worker's client starts from (used for `https://`).
    pub tls: rustls::ClientConfig,
    /// Each request's timeout.
    pub timeout: Duration,
    /// Where to connect instead of resolving the URL's host.
    pub connect_to: Option<SocketAddr>,
    /// The `Authorization` header: a secret.
    pub auth: Option<Secret>,
}

impl fmt::Debug for QueryEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryEndpoint")
            .field("base", &self.base.as_str())
            .field("database", &self.database)
            .field("timeout", &self.timeout)
            .field("connect_to", &self.connect_to)
            .finish_non_exhaustive()
    }
}

/// The HTTP read target.
#[derive(Debug)]
pub struct HttpQueryTarget {
    endpoint: QueryEndpoint,
    api: QueryApi,
    /// The endpoint: `/query?db=..[&rp=..]`, `/api/v1/query`, or `/exec`.
    url: Url,
    /// PromQL's `/api/v1/query_range`.
    range_url: Url,
}

impl HttpQueryTarget {
    /// Reads `api` at `endpoint`. InfluxQL queries the endpoint's database.
    pub fn new(endpoint: QueryEndpoint, api: QueryApi) -> Self {
        let base = &endpoint.base;
        let url = match api {
            QueryApi::InfluxQl => {
                let mut url = join(base, "query");
                if let Some((db, rp)) = &endpoint.database {
                    let mut q = url.query_pairs_mut();
                    q.append_pair("db", db);
                    if let Some(rp) = rp {
                        q.append_pair("rp", rp);
                    }
                }
                url
            }
            QueryApi::PromQl => join(base, "api/v1/query"),
            QueryApi::QuestDb => join(base, "exec"),
        };
        HttpQueryTarget {
            range_url: join(base, "api/v1/query_range"),
            endpoint,
            api,
            url,
        }
    }

    pub fn api(&self) -> QueryApi {
        self.api
    }

    /// The endpoint queries go to (no secrets in it); PromQL range queries go to
    /// `/api/v1/query_range` beside it.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// A worker's client: one connection, the endpoint's trust, timeout and address.
    fn client(&self) -> Result<reqwest::Client, SinkError> {
        let e = &self.endpoint;
        let mut builder = crate::client_builder(e.tls.clone())
            .timeout(e.timeout)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1);
        if let Some(addr) = e.connect_to
            && let Some(host) = e.base.host_str()
        {
            builder = builder.resolve(host, addr);
        }
        builder
            .build()
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("HTTP client: {e}")))
    }
}

impl QueryTarget for HttpQueryTarget {
    type Conn = HttpQueryConn;

    async fn connect(&self, _worker: usize) -> Result<HttpQueryConn, SinkError> {
        Ok(HttpQueryConn {
            client: self.client()?,
            api: self.api,
            url: self.url.clone(),
            range_url: self.range_url.clone(),
            auth: self.endpoint.auth.clone(),
        })
    }
}

/// One worker's HTTP client for reads.
pub struct HttpQueryConn {
    client: reqwest::Client,
    api: QueryApi,
    url: Url,
    range_url: Url,
    /// The `Authorization` header: a secret.
    auth: Option<Secret>,
}

impl fmt::Debug for HttpQueryConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpQueryConn")
            .field("api", &self.api)
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl QueryConn for HttpQueryConn {
    async fn execute(&mut self, request: &QueryRequest) -> Result<QueryAck, SinkError> {
        if request.transaction {
            return Err(SinkError::new(
                ErrorKind::Rejected,
                format!(
                    "the {} query API has no transactions: run these statements without \
                     `transaction`",
                    self.api
                ),
            ));
        }
        let mut ack = QueryAck::default();
        for (i, statement) in request.statements.iter().enumerate() {
            // Saturating: the counts are the server's numbers.
            ack.rows = ack.rows.saturating_add(self.run(statement, i).await?);
            ack.statements += 1;
        }
        Ok(ack)
    }
}

impl HttpQueryConn {
    /// Sends statement `index` and counts the rows of the answer.
    async fn run(&self, statement: &Statement, index: usize) -> Result<u64, SinkError> {
        let label = || statement.label(index);
        let (method, url) = self.request_of(statement).map_err(|reason| {
            SinkError::new(ErrorKind::Rejected, format!("{}: {reason}", label()))
        })?;
        // The endpoint without the statement, for messages.
        let endpoint = {
            let mut shown = url.clone();
            shown.set_query(None);
            shown
        };
        let transport = |e: reqwest::Error| {
            let e = classify_request_error(&e.without_url(), endpoint.as_str());
            SinkError::new(e.kind, format!("{}: {}", label(), e.message))
        };
        let mut builder = self.client.request(method, url);
        builder = crate::with_authorization(builder, self.auth.as_ref());
        let response = builder.send().await.map_err(transport)?;
        let status = response.status();
        if let Some(message) = crate::redirect_message(status, response.headers()) {
            return Err(SinkError::new(
                ErrorKind::Rejected,
                format!("{}: {message}", label()),
            ));
        }
        if !status.is_success() {
            let body = crate::error_text(response).await;
            let (kind, message) = classify_status(status, &body);
            return Err(SinkError::new(kind, format!("{}: {message}", label())));
        }
        let body = crate::read_body(response, crate::QUERY_BODY_CAP, false)
            .await
            .map_err(|e| match e {
                crate::BodyError::Transport(e) => transport(e),
                other => SinkError::new(ErrorKind::Rejected, format!("{}: {other}", label())),
            })?;
        count_rows(self.api, &body)
            .map_err(|(kind, reason)| SinkError::new(kind, format!("{}: {reason}", label())))
    }

    /// The method and URL of `statement`, or why it cannot be sent.
    fn request_of(&self, statement: &Statement) -> Result<(Method, Url), String> {
        match self.api {
            QueryApi::InfluxQl => {
                no_params(statement, "InfluxQL")?;
                let mut url = self.url.clone();
                url.query_pairs_mut().append_pair("q", &statement.text);
                let method = if reads_only(&statement.text) {
                    Method::GET
                } else {
                    Method::POST
                };
                Ok((method, url))
            }
            QueryApi::QuestDb => {
                no_params(statement, "QuestDB's /exec")?;
                let mut url = self.url.clone();
                url.query_pairs_mut().append_pair("query", &statement.text);
                Ok((Method::GET, url))
            }
            QueryApi::PromQl => match statement.params.as_slice() {
                [] => {
                    let mut url = self.url.clone();
                    url.query_pairs_mut().append_pair("query", &statement.text);
                    Ok((Method::GET, url))
                }
                [Param::Int(start), Param::Int(end), Param::Int(step)] => {
                    if *step <= 0 {
                        return Err(format!("the step must be positive, not {step} s"));
                    }
                    let mut url = self.range_url.clone();
                    url.query_pairs_mut()
                        .append_pair("query", &statement.text)
                        .append_pair("start", &seconds(*start))
                        .append_pair("end", &seconds(*end))
                        .append_pair("step", &step.to_string());
                    Ok((Method::GET, url))
                }
                other => Err(format!(
                    "PromQL takes no parameters (an instant query) or three integers \
                     [start_ms, end_ms, step_s] (a range query), not {other:?}"
                )),
            },
        }
    }
}

fn no_params(statement: &Statement, api: &str) -> Result<(), String> {
    if statement.params.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{api} takes no bind parameters (got {}): put the values in the text",
            statement.params.len()
        ))
    }
}

/// Milliseconds since the epoch as the seconds Prometheus' API takes: `1451606400.5`.
fn seconds(ms: i64) -> String {
    let (s, frac) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    if frac == 0 {
        s.to_string()
    } else {
        format!("{s}.{frac:03}")
    }
}

/// Whether an InfluxQL statement may go by GET (`SELECT`, `SHOW`); InfluxDB answers
/// anything else sent by GET with an error.
fn reads_only(text: &str) -> bool {
    let word = text
        .trim_start()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    word.eq_ignore_ascii_case("SELECT") || word.eq_ignore_ascii_case("SHOW")
}

/// A counted answer, or the kind and reason of a failure.
type Counted = Result<u64, (ErrorKind, String)>;

/// The start of an answer that could not be read, for messages.
fn unreadable(body: &[u8], e: &serde_json::Error) -> (ErrorKind, String) {
    let text = String::from_utf8_lossy(body);
    let mut start: String = text.trim().chars().take(MAX_ANSWER).collect();
    if start.len() < text.trim().len() {
        start.push_str("...");
    }
    (
        ErrorKind::Other,
        format!("unexpected answer ({e}): {start}"),
    )
}

/// Counts the elements of a JSON array (null counts 0) without keeping them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Counter;
        impl<'de> Visitor<'de> for Counter {
            type Value = Count;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        d.deserialize_any(Counter)
    }
}

/// InfluxDB 1.x's `/query` answer.
#[derive(Deserialize)]
struct InfluxAnswer {
    #[serde(default)]
    results: Vec<InfluxResult>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct InfluxResult {
    #[serde(default)]
    series: Vec<InfluxSeries>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct InfluxSeries {
    #[serde(default)]
    values: Count,
}

/// The rows an answer of `api` holds, or the error it is (a fuzz test reads every body
/// with every API).
pub fn count_rows(api: QueryApi, body: &[u8]) -> Result<u64, (ErrorKind, String)> {
    match api {
        QueryApi::InfluxQl => influxql_rows(body),
        QueryApi::PromQl => promql_rows(body),
        QueryApi::QuestDb => questdb_rows(body),
    }
}

/// The points of every series of every result; an `"error"` anywhere is a rejection.
fn influxql_rows(body: &[u8]) -> Counted {
    let answer: InfluxAnswer = serde_json::from_slice(body).map_err(|e| unreadable(body, &e))?;
    if let Some(error) = answer.error {
        return Err((ErrorKind::Rejected, format!("InfluxDB: {error}")));
    }
    let mut rows = 0;
    for result in answer.results {
        if let Some(error) = result.error {
            return Err((ErrorKind::Rejected, format!("InfluxDB: {error}")));
        }
        rows += result.series.iter().map(|s| s.values.0).sum::<u64>();
    }
    Ok(rows)
}

/// The Prometheus API's answer.
#[derive(Deserialize)]
struct PromAnswer {
    status: String,
    #[serde(default)]
    data: Option<PromData>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct PromData {
    #[serde(default)]
    result: PromSamples,
}

/// The samples of a `result`: the points of a matrix, one per series of a vector, one for
/// a scalar or string (`[time, "value"]`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct PromSamples(u64);

/// One element of a `result` array.
enum PromItem {
    /// A series: its `values` (matrix) or 1 for its `value` (vector).
    Series(u64),
    /// A scalar's time or value.
    Plain,
}

impl<'de> Deserialize<'de> for PromSamples {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Samples;
        impl<'de> Visitor<'de> for Samples {
            type Value = PromSamples;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Prometheus result array")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PromSamples, A::Error> {
                let mut samples = 0;
                let mut plain = false;
                while let Some(item) = seq.next_element::<PromItem>()? {
                    match item {
                        PromItem::Series(n) => samples += n,
                        PromItem::Plain => plain = true,
                    }
                }
                Ok(PromSamples(if plain { 1 } else { samples }))
            }

            fn visit_unit<E: de::Error>(self) -> Result<PromSamples, E> {
                Ok(PromSamples(0))
            }
        }
        d.deserialize_any(Samples)
    }
}

/// The keys of a series object that matter (read without allocating).
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum SeriesKey {
    Values,
    Value,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for PromItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Item;
        impl<'de> Visitor<'de> for Item {
            type Value = PromItem;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a series object, a time or a value")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PromItem, A::Error> {
                let mut samples = 0;
                while let Some(key) = map.next_key::<SeriesKey>()? {
                    match key {
                        SeriesKey::Values => samples += map.next_value::<Count>()?.0,
                        SeriesKey::Value => {
                            map.next_value::<IgnoredAny>()?;
                            samples += 1;
                        }
                        SeriesKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(PromItem::Series(samples))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<PromItem, E> {
                Ok(PromItem::Plain)
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<PromItem, E> {
                Ok(PromItem::Plain)
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<PromItem, E> {
                Ok(PromItem::Plain)
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<PromItem, E> {
                Ok(PromItem::Plain)
            }
        }
        d.deserialize_any(Item)
    }
}

/// The samples of a Prometheus API answer; `"status": "error"` is a rejection.
fn promql_rows(body: &[u8]) -> Counted {
    let answer: PromAnswer = serde_json::from_slice(body).map_err(|e| unreadable(body, &e))?;
    if answer.status != "success" {
        let error = answer.error.unwrap_or_else(|| "no error message".into());
        let kind = answer
            .error_type
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        return Err((
            ErrorKind::Rejected,
            format!("status {}{kind}: {error}", answer.status),
        ));
    }
    Ok(answer.data.map_or(0, |d| d.result.0))
}

/// QuestDB's `/exec` answer.
#[derive(Deserialize)]
struct QuestAnswer {
    #[serde(default)]
    dataset: Option<Count>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    updated: Option<u64>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    position: Option<i64>,
}

/// The rows of QuestDB's `dataset` (else its `count`, else the rows an UPDATE changed);
/// an `"error"` is a rejection.
fn questdb_rows(body: &[u8]) -> Counted {
    let answer: QuestAnswer = serde_json::from_slice(body).map_err(|e| unreadable(body, &e))?;
    if let Some(error) = answer.error {
        let at = answer
            .position
            .map(|p| format!(" (at position {p})"))
            .unwrap_or_default();
        return Err((ErrorKind::Rejected, format!("QuestDB: {error}{at}")));
    }
    Ok(answer
        .dataset
        .map(|d| d.0)
        .or(answer.count)
        .or(answer.updated)
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_words() {
        for api in [QueryApi::InfluxQl, QueryApi::PromQl, QueryApi::QuestDb] {
            assert_eq!(api.as_str().parse::<QueryApi>(), Ok(api));
            assert_eq!(api.to_string(), api.as_str());
        }
        let e = "flux".parse::<QueryApi>().unwrap_err();
        assert_eq!(
            e,
            "unknown query API \"flux\": expected one of influxql, promql, questdb"
        );
    }

    #[test]
    fn counts_influxql_points_and_finds_errors() {
        let body = br#"{"results":[{"statement_id":0,"series":[
            {"name":"cpu","tags":{"host":"h0"},"columns":["time","v"],"values":[["t",1],["t",2]]},
            {"name":"cpu","tags":{"host":"h1"},"columns":["time","v"],"values":[["t",3]]}]},
            {"statement_id":1,"series":[{"name":"m","columns":["x"]}]},
            {"statement_id":2}]}"#;
        assert_eq!(influxql_rows(body), Ok(3));
        let in_result = br#"{"results":[{"statement_id":0,"error":"database not found: nope"}]}"#;
        assert_eq!(
            influxql_rows(in_result),
            Err((
                ErrorKind::Rejected,
                "InfluxDB: database not found: nope".into()
            ))
        );
        let top = br#"{"error":"error parsing query: found EOF"}"#;
        assert_eq!(influxql_rows(top).unwrap_err().0, ErrorKind::Rejected);
        let (kind, reason) = influxql_rows(b"<html>proxy</html>").unwrap_err();
        assert_eq!(kind, ErrorKind::Other);
        assert!(reason.contains("<html>proxy</html>"), "{reason}");
    }

    #[test]
    fn counts_prometheus_samples() {
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"a"},"values":[[1,"1"],[2,"2"],[3,"3"]]},
            {"metric":{},"values":[[1,"1"]]}]},"stats":{"seriesFetched":"2"}}"#;
        assert_eq!(promql_rows(matrix), Ok(4));
        let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"2"]}]}}"#;
        assert_eq!(promql_rows(vector), Ok(2));
        let scalar = br#"{"status":"success","data":{"resultType":"scalar","result":[1.5,"2"]}}"#;
        assert_eq!(promql_rows(scalar), Ok(1));
        let empty = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert_eq!(promql_rows(empty), Ok(0));
        let error = br#"{"status":"error","errorType":"422","error":"cannot parse"}"#;
        assert_eq!(
            promql_rows(error),
            Err((
                ErrorKind::Rejected,
                "status error (422): cannot parse".into()
            ))
        );
    }

    #[test]
    fn counts_questdb_rows() {
        let select = br#"{"query":"x","columns":[{"name":"a","type":"LONG"}],"timestamp":-1,
            "dataset":[[1],[2],[3]],"count":3}"#;
        assert_eq!(questdb_rows(select), Ok(3));
        assert_eq!(questdb_rows(br#"{"count":7}"#), Ok(7));
        assert_eq!(questdb_rows(br#"{"dml":"OK","updated":4}"#), Ok(4));
        assert_eq!(questdb_rows(br#"{"ddl":"OK"}"#), Ok(0));
        let error = br#"{"query":"select * from nope","error":"table does not exist [table=nope]","position":14}"#;
        assert_eq!(
            questdb_rows(error),
            Err((
                ErrorKind::Rejected,
                "QuestDB: table does not exist [table=nope] (at position 14)".into()
            ))
        );
    }

    #[test]
    fn range_times_are_seconds() {
        assert_eq!(seconds(1_451_606_400_000), "1451606400");
        assert_eq!(seconds(1_451_606_400_050), "1451606400.050");
        assert_eq!(seconds(-1), "-1.999");
    }

    #[test]
    fn reads_go_by_get() {
        assert!(reads_only("  select * from cpu"));
        assert!(reads_only("SHOW MEASUREMENTS"));
        assert!(!reads_only("DROP SERIES FROM cpu"));
        assert!(!reads_only("SELECT_x"));
        assert!(!reads_only(""));
    }

    fn target(api: QueryApi) -> HttpQueryTarget {
        let endpoint = QueryEndpoint {
            base: Url::parse("http://h:8086/prefix/").unwrap(),
            database: Some(("bench db".into(), Some("week".into()))),
            tls: tsload_tls::client_config(&tsload_tls::TlsOptions::default()).unwrap(),
            timeout: Duration::from_secs(10),
            connect_to: None,
            auth: Some(Secret::new("Basic pw-secret")),
        };
        HttpQueryTarget::new(endpoint, api)
    }

    #[test]
    fn endpoints_and_requests() {
        let t = target(QueryApi::InfluxQl);
        assert_eq!(
            t.url().as_str(),
            "http://h:8086/prefix/query?db=bench+db&rp=week"
        );
        assert!(!format!("{t:?}").contains("pw-secret"));
        assert_eq!(
            target(QueryApi::QuestDb).url().as_str(),
            "http://h:8086/prefix/exec"
        );
        let t = target(QueryApi::PromQl);
        assert_eq!(t.url().as_str(), "http://h:8086/prefix/api/v1/query");
        let conn = HttpQueryConn {
            client: reqwest::Client::builder()
                .tls_backend_preconfigured(
                    tsload_tls::client_config(&tsload_tls::TlsOptions::default()).unwrap(),
                )
                .build()
                .unwrap(),
            api: QueryApi::PromQl,
            url: t.url.clone(),
            range_url: t.range_url.clone(),
            auth: None,
        };
        let range = Statement::with_params(
            "rate(cpu_usage_user[1m])",
            vec![Param::Int(1_000), Param::Int(61_500), Param::Int(15)],
        );
        let (method, url) = conn.request_of(&range).unwrap();
        assert_eq!(method, Method::GET);
        assert_eq!(
            url.as_str(),
            "http://h:8086/prefix/api/v1/query_range?query=rate%28cpu_usage_user%5B1m%5D%29\
             &start=1&end=61.500&step=15"
        );
        let bad = Statement::with_params("up", vec![Param::Int(1)]);
        assert!(
            conn.request_of(&bad)
                .unwrap_err()
                .contains("[start_ms, end_ms, step_s]")
        );
        let zero = Statement::with_params("up", vec![Param::Int(1), Param::Int(2), Param::Int(0)]);
        assert!(
            conn.request_of(&zero)
                .unwrap_err()
                .contains("step must be positive")
        );
    }
}
