//! tsload-query: the TSBS devops query workloads (`[query] kind = "tsbs"`).
//!
//! - [`QueryType`]: the 15 TSBS devops query types (`single-groupby-1-1-1` ..
//!   `lastpoint`) with what each asks for: metrics, random hosts, window length, buckets.
//! - [`QuerySpec`] and [`SpecGenerator`]: one query's random choices (distinct hosts
//!   among `scale`, a window inside the data's time range), a pure function of
//!   `(seed, query index)`.
//! - [`render`] / [`render_into`]: pure renderers from a spec to the text of one
//!   [`Dialect`]: InfluxQL, PostgreSQL (wide or tags layout, optional `time_bucket`),
//!   MySQL/MariaDB (`DATETIME(6)` or `BIGINT` ns), SQLite, QuestDB, TDengine, ClickHouse,
//!   PromQL / MetricsQL (VictoriaMetrics) and standard PromQL (Prometheus). A type a
//!   dialect cannot express is [`QueryError::Unsupported`].
//! - [`TsbsQueries`]: the [`tsload_core::QueryWorkload`] that hands each worker its share
//!   of the run's queries as [`tsload_core::QueryRequest`]s.
//! - [`reference_answer`]: the expected answer of a spec over `cpu-only` data, computed
//!   from the generator's rows, for tests that check what a database returns.
//!
//! Queries read only the `cpu` table (measurement) that the `cpu-only` and `devops`
//! workloads write: hosts `host_0` .. `host_{scale-1}` in tag `hostname`, integer fields
//! `usage_user` .. `usage_guest_nice`.

mod reference;
mod render;
mod spec;
mod time;
mod types;
mod workload;

pub use reference::{ReferenceRow, reference_answer};
pub use render::{
    Dialect, MysqlOptions, MysqlTs, PgLayout, PostgresOptions, TdPrecision, TdengineOptions,
    render, render_into,
};
pub use spec::{QuerySpec, SpecGenerator, TimeWindow};
pub use time::{push_rfc3339, rfc3339};
pub use types::{
    CPU_METRICS, GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, HOUR_NS, MINUTE_NS, QueryError,
    QueryShape, QueryType,
};
pub use workload::{TsbsQueries, TsbsQueriesConfig};
