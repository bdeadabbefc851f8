//! tsload-query: the TSBS devops query workloads (`[query] kind = "tsbs"`).
//!
//! - [`QueryType`]: the 15 TSBS devops query types (`single-groupby-1-1-1` ..
//!   `lastpoint`) with what each asks for: metrics, random hosts, window length, buckets.
//! - [`QuerySpec`] and [`SpecGenerator`]: one query's random choices (distinct hosts
//!   among `scale`, a window inside the data's time range), a pure function of
//!   `(seed, query index)`.
//! - [`render`] / [`render_into`]: a spec in one [`Dialect`], the [`Renderer`] a kind
//!   implements for its language in its own crate (InfluxQL, PostgreSQL, MySQL, SQLite,
//!   QuestDB, TDengine, ClickHouse); PromQL / MetricsQL (VictoriaMetrics) and standard
//!   PromQL (Prometheus), which two kinds speak, are here ([`render::PromQl`]). A type a
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
pub mod render;
mod spec;
mod time;
mod types;
mod workload;

pub use reference::{ReferenceRow, reference_answer};
pub use render::{Dialect, Renderer, render, render_into};
pub use spec::{QuerySpec, SpecGenerator, TimeWindow};
pub use time::{push_rfc3339, push_sql_datetime, rfc3339};
pub use types::{
    CPU_METRICS, GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, HOUR_NS, MINUTE_NS, QueryError,
    QueryShape, QueryType,
};
pub use workload::{TsbsQueries, TsbsQueriesConfig};
