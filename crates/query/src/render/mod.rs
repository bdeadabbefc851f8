//! Renderers: pure functions from a [`QuerySpec`] to the text (and bind parameters) of
//! one target's query language, for the `cpu` table as tsload's sinks lay it out.
//!
//! | dialect | target | table |
//! |---|---|---|
//! | [`Dialect::InfluxQl`] | InfluxDB 1.x `/query?db=` | measurement `cpu`, tag `hostname` |
//! | [`Dialect::Postgres`] | PostgreSQL / TimescaleDB | `cpu (ts timestamptz, <tags> \| tags_id, <fields>)` (+ `tags`) |
//! | [`Dialect::Mysql`] | MySQL / MariaDB | `cpu (ts DATETIME(6) \| BIGINT ns, <tags>, <fields>)` |
//! | [`Dialect::Sqlite`] | SQLite | `cpu (ts INTEGER ns, <tags>, <fields>)` |
//! | [`Dialect::ClickHouse`] | ClickHouse over HTTP | `cpu (ts Int64 ns, <tags>, <fields>)` (MergeTree) |
//! | [`Dialect::QuestDb`] | QuestDB `/exec` (line protocol in) | `cpu (<SYMBOL tags>, <fields>, timestamp)` |
//! | [`Dialect::Tdengine`] | TDengine 3 | super table `cpu (ts, <fields>) TAGS (<tags>)` |
//! | [`Dialect::PromQl`] | VictoriaMetrics `/api/v1/query_range` | series `cpu_<field>{hostname=...}` |
//! | [`Dialect::Prometheus`] | Prometheus `/api/v1/query_range` (PromQL without MetricsQL) | the same |
//!
//! What a dialect cannot express is an [`QueryError::Unsupported`] naming the type and
//! the dialect. Only the PromQL dialects have such types, the three TSBS itself leaves out of its
//! VictoriaMetrics generator: `high-cpu-1`, `high-cpu-all` (rows with every column),
//! `groupby-orderby-limit` (ORDER BY / LIMIT over buckets) and `lastpoint` (each host's
//! last row).

mod clickhouse;
mod influxql;
mod mysql;
mod postgres;
mod promql;
mod questdb;
mod sqlite;
mod tdengine;

use std::fmt;
use std::str::FromStr;

use tsload_core::{Param, Statement};

use crate::QueryError;
use crate::spec::{QuerySpec, TimeWindow};
use crate::types::{QueryShape, QueryType};

/// How the PostgreSQL sink stored the tags (its `layout`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PgLayout {
    /// Tag columns in every `cpu` row (`layout = "wide"`).
    #[default]
    Wide,
    /// TSBS's layout: a `tags` table (`id`, one column per tag) and `cpu.tags_id`
    /// (`layout = "tags"`).
    TagsTable,
}

/// PostgreSQL settings that change the query text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PostgresOptions {
    pub layout: PgLayout,
    /// Bucket with TimescaleDB's `time_bucket('1 minute', ts)` (as TSBS does) instead of
    /// `date_trunc('minute', ts, 'UTC')`; needs the timescaledb extension.
    pub time_bucket: bool,
}

/// How the MySQL sink stored `ts` (its `ts_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MysqlTs {
    /// `DATETIME(6)`, the UTC wall clock (`ts_type = "datetime"`).
    #[default]
    DateTime,
    /// `BIGINT` nanoseconds since the epoch (`ts_type = "bigint_ns"`).
    BigIntNs,
}

/// MySQL / MariaDB settings that change the query text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MysqlOptions {
    pub ts: MysqlTs,
}

/// The TDengine database's timestamp precision: time literals are integers in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TdPrecision {
    #[default]
    Ms,
    Us,
    Ns,
}

impl TdPrecision {
    /// Nanoseconds per unit.
    fn ns(self) -> i64 {
        match self {
            TdPrecision::Ms => 1_000_000,
            TdPrecision::Us => 1_000,
            TdPrecision::Ns => 1,
        }
    }
}

/// TDengine settings that change the query text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TdengineOptions {
    pub precision: TdPrecision,
    /// The data came through schemaless (line protocol) writes: the time column is `_ts`
    /// instead of `ts`.
    pub schemaless: bool,
}

/// A target's query language, with the settings of its sink that change the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// InfluxQL for InfluxDB 1.x (`GET /query?db=<db>&q=<text>`).
    InfluxQl,
    /// SQL for PostgreSQL / TimescaleDB.
    Postgres(PostgresOptions),
    /// SQL for MySQL / MariaDB.
    Mysql(MysqlOptions),
    /// SQL for SQLite.
    Sqlite,
    /// SQL for ClickHouse (its HTTP interface), `ts` as Int64 nanoseconds.
    ClickHouse,
    /// SQL for QuestDB (`GET /exec?query=<text>` or its PostgreSQL wire port).
    QuestDb,
    /// SQL for TDengine 3.
    Tdengine(TdengineOptions),
    /// PromQL / MetricsQL for VictoriaMetrics: the text is the expression, the
    /// parameters are `[Int(start_ms), Int(end_ms), Int(step_seconds)]` of
    /// `/api/v1/query_range`.
    PromQl,
    /// PromQL as Prometheus speaks it, without MetricsQL's extensions (which VictoriaMetrics
    /// also takes): the same series and parameters as [`Dialect::PromQl`].
    Prometheus,
}

impl Dialect {
    /// The language's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Dialect::InfluxQl => "InfluxQL",
            Dialect::Postgres(_) => "PostgreSQL",
            Dialect::Mysql(_) => "MySQL",
            Dialect::Sqlite => "SQLite",
            Dialect::ClickHouse => "ClickHouse",
            Dialect::QuestDb => "QuestDB",
            Dialect::Tdengine(_) => "TDengine",
            Dialect::PromQl => "PromQL",
            Dialect::Prometheus => "PromQL (Prometheus)",
        }
    }

    /// Why `query_type` has no rendering in this dialect; `None` when it has one.
    pub fn unsupported_reason(&self, query_type: QueryType) -> Option<&'static str> {
        match (self, query_type.shape()) {
            (Dialect::PromQl | Dialect::Prometheus, QueryShape::HighCpu) => Some(
                "PromQL selects series samples, not the rows with usage_user > 90 with all \
                 their columns (TSBS's VictoriaMetrics generator leaves it out too)",
            ),
            (Dialect::PromQl | Dialect::Prometheus, QueryShape::LastBucketsBeforeEnd) => Some(
                "PromQL has no ORDER BY ... LIMIT over time buckets (TSBS's VictoriaMetrics \
                 generator leaves it out too)",
            ),
            (Dialect::PromQl | Dialect::Prometheus, QueryShape::LastPointPerHost) => Some(
                "PromQL has no row of all columns per host (TSBS's VictoriaMetrics generator \
                 leaves it out too)",
            ),
            _ => None,
        }
    }

    /// Checks that `query_type` has a rendering in this dialect.
    pub fn check(&self, query_type: QueryType) -> Result<(), QueryError> {
        match self.unsupported_reason(query_type) {
            None => Ok(()),
            Some(reason) => Err(QueryError::Unsupported {
                query_type,
                dialect: self.name(),
                reason,
            }),
        }
    }

    /// The types this dialect can render, in TSBS's order.
    pub fn supported_types(&self) -> Vec<QueryType> {
        QueryType::ALL
            .into_iter()
            .filter(|t| self.unsupported_reason(*t).is_none())
            .collect()
    }
}

/// Renders `spec` in `dialect`: the text is appended to `text`, the bind parameters to
/// `params` (only the PromQL dialects have any). Fails, writing nothing, when the dialect cannot express
/// the type or the spec does not fit it.
pub fn render_into(
    spec: &QuerySpec,
    dialect: &Dialect,
    text: &mut String,
    params: &mut Vec<Param>,
) -> Result<(), QueryError> {
    dialect.check(spec.query_type)?;
    spec.check()?;
    let q = Query::new(spec);
    match dialect {
        Dialect::InfluxQl => influxql::render(&q, text),
        Dialect::Postgres(o) => postgres::render(&q, o, text),
        Dialect::Mysql(o) => mysql::render(&q, o, text),
        Dialect::Sqlite => sqlite::render(&q, text),
        Dialect::ClickHouse => clickhouse::render(&q, text),
        Dialect::QuestDb => questdb::render(&q, text),
        Dialect::Tdengine(o) => tdengine::render(&q, o, text),
        Dialect::PromQl => promql::render(&q, false, text, params),
        Dialect::Prometheus => promql::render(&q, true, text, params),
    }
    Ok(())
}

/// Renders `spec` in `dialect` as a new [`Statement`].
pub fn render(spec: &QuerySpec, dialect: &Dialect) -> Result<Statement, QueryError> {
    let mut text = String::new();
    let mut params = Vec::new();
    render_into(spec, dialect, &mut text, &mut params)?;
    Ok(Statement::with_params(text, params))
}

/// A checked spec, with what every renderer reads.
pub(crate) struct Query<'a> {
    pub(crate) shape: QueryShape,
    pub(crate) metrics: &'static [&'static str],
    pub(crate) hosts: &'a [u32],
    /// The window; a zero-length window at 0 for lastpoint, which reads none.
    pub(crate) window: TimeWindow,
    /// Bucket width (ns) of the shapes that group by time; 0 otherwise.
    pub(crate) bucket_ns: i64,
}

impl<'a> Query<'a> {
    fn new(spec: &'a QuerySpec) -> Self {
        let t = spec.query_type;
        Query {
            shape: t.shape(),
            metrics: t.metrics(),
            hosts: &spec.hosts,
            window: spec.window.unwrap_or(TimeWindow {
                start_ns: 0,
                end_ns: 0,
            }),
            bucket_ns: t.bucket_ns().unwrap_or(0),
        }
    }

    pub(crate) fn bucket(&self) -> crate::types::BucketUnit {
        crate::types::bucket_unit(self.bucket_ns)
    }
}

/// Appends `agg(m1) AS agg_m1, agg(m2) AS agg_m2` (without aliases when `alias` is
/// `None`; with `alias` as the prefix otherwise), separated by `sep`.
pub(crate) fn push_aggs(
    out: &mut String,
    agg: &str,
    metrics: &[&str],
    alias: Option<&str>,
    sep: &str,
) {
    for (i, m) in metrics.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(agg);
        out.push('(');
        out.push_str(m);
        out.push(')');
        if let Some(prefix) = alias {
            out.push_str(" AS ");
            out.push_str(prefix);
            out.push('_');
            out.push_str(m);
        }
    }
}

/// Appends `'host_1', 'host_5'`.
pub(crate) fn push_host_literals(out: &mut String, hosts: &[u32]) {
    for (i, h) in hosts.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str("'host_");
        push_int(out, i64::from(*h));
        out.push('\'');
    }
}

/// Appends `hostname IN ('host_1', 'host_5')`.
pub(crate) fn push_hostname_in(out: &mut String, hosts: &[u32]) {
    out.push_str("hostname IN (");
    push_host_literals(out, hosts);
    out.push(')');
}

pub(crate) fn push_int(out: &mut String, v: i64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = write!(out, "{v}");
}

/// Appends `'<RFC 3339>'`.
pub(crate) fn push_rfc3339_literal(out: &mut String, ns: i64) {
    out.push('\'');
    crate::time::push_rfc3339(out, ns);
    out.push('\'');
}

/// The words a scenario uses for a setting's values, for `FromStr` and `Display`.
macro_rules! word_enum {
    ($t:ty, $what:literal, $($word:literal => $v:path),+ $(,)?) => {
        impl $t {
            /// The word a scenario uses for this value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($v => $word,)+
                }
            }
        }

        impl FromStr for $t {
            type Err = QueryError;

            fn from_str(s: &str) -> Result<Self, QueryError> {
                match s {
                    $($word => Ok($v),)+
                    _ => Err(QueryError::config(
                        $what,
                        format!("unknown value {:?}; expected one of: {}", s, [$($word),+].join(", ")),
                    )),
                }
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum!(PgLayout, "layout", "wide" => PgLayout::Wide, "tags" => PgLayout::TagsTable);
word_enum!(MysqlTs, "ts_type", "datetime" => MysqlTs::DateTime, "bigint_ns" => MysqlTs::BigIntNs);
word_enum!(
    TdPrecision,
    "precision",
    "ms" => TdPrecision::Ms,
    "us" => TdPrecision::Us,
    "ns" => TdPrecision::Ns,
);

#[cfg(test)]
mod tests;
