//! Renderers: pure functions from a [`QuerySpec`] to the text (and bind parameters) of
//! one target's query language, for the `cpu` table as tsload's sinks lay it out.
//!
//! A language is a [`Renderer`], implemented by the kind whose server speaks it, in its
//! own crate: InfluxQL and QuestDB's SQL in tsload-sink-influx, PostgreSQL/TimescaleDB,
//! MySQL/MariaDB, SQLite, ClickHouse and TDengine in theirs. What several kinds share
//! is here: PromQL ([`PromQl`], VictoriaMetrics through the influx kind and Prometheus
//! through its own), the SQL of a `cpu` table with `ts` in integer nanoseconds
//! ([`int_ns`], SQLite's and ClickHouse's), the checked [`Query`] every renderer reads and
//! the helpers that write its parts. [`conformance`] checks a renderer against every
//! query type.
//!
//! What a dialect cannot express is an [`QueryError::Unsupported`] naming the type and
//! the dialect. Only the PromQL dialects have such types, the four TSBS itself leaves out
//! of its VictoriaMetrics generator: `high-cpu-1`, `high-cpu-all` (rows with every
//! column), `groupby-orderby-limit` (ORDER BY / LIMIT over buckets) and `lastpoint` (each
//! host's last row).

pub mod conformance;
pub mod int_ns;
mod promql;

use std::fmt;
use std::sync::Arc;

use tsload_core::{Param, Statement};

pub use self::promql::PromQl;
use crate::QueryError;
use crate::spec::{QuerySpec, TimeWindow};
pub use crate::types::BucketUnit;
use crate::types::{QueryShape, QueryType};

/// A query language: how TSBS's queries are written for one kind of server, with the
/// settings of its sink that change the text (a table layout, a time type, a precision).
/// Pure: the same query gives the same text.
pub trait Renderer: fmt::Debug + Send + Sync {
    /// The language's name, for messages.
    fn name(&self) -> &'static str;

    /// Why `query_type` has no rendering in this language; `None` when it has one.
    fn unsupported_reason(&self, _query_type: QueryType) -> Option<&'static str> {
        None
    }

    /// Appends the text of `q` to `text` and its bind parameters (if the language takes
    /// any) to `params`. `q` is checked, of a type the language renders.
    fn render(&self, q: &Query<'_>, text: &mut String, params: &mut Vec<Param>);
}

/// A target's query language: the renderer its kind chose.
#[derive(Clone)]
pub struct Dialect(Arc<dyn Renderer>);

impl Dialect {
    pub fn new(renderer: impl Renderer + 'static) -> Dialect {
        Dialect(Arc::new(renderer))
    }

    /// The language's name, for messages.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// Why `query_type` has no rendering in this dialect; `None` when it has one.
    pub fn unsupported_reason(&self, query_type: QueryType) -> Option<&'static str> {
        self.0.unsupported_reason(query_type)
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

impl fmt::Debug for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Two dialects are equal when they are the same language with the same settings: a
/// renderer's `Debug` shows both (renderers are plain settings).
impl PartialEq for Dialect {
    fn eq(&self, other: &Dialect) -> bool {
        format!("{:?}", self.0) == format!("{:?}", other.0)
    }
}

impl Eq for Dialect {}

/// Renders `spec` in `dialect`: the text is appended to `text`, the bind parameters to
/// `params` (only the PromQL dialects have any). Fails, writing nothing, when the dialect
/// cannot express the type or the spec does not fit it.
pub fn render_into(
    spec: &QuerySpec,
    dialect: &Dialect,
    text: &mut String,
    params: &mut Vec<Param>,
) -> Result<(), QueryError> {
    dialect.check(spec.query_type)?;
    spec.check()?;
    dialect.0.render(&Query::new(spec), text, params);
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
pub struct Query<'a> {
    pub shape: QueryShape,
    pub metrics: &'static [&'static str],
    pub hosts: &'a [u32],
    /// The window; a zero-length window at 0 for lastpoint, which reads none.
    pub window: TimeWindow,
    /// Bucket width (ns) of the shapes that group by time; 0 otherwise.
    pub bucket_ns: i64,
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

    pub fn bucket(&self) -> BucketUnit {
        crate::types::bucket_unit(self.bucket_ns)
    }
}

/// Appends `agg(m1) AS agg_m1, agg(m2) AS agg_m2` (without aliases when `alias` is
/// `None`; with `alias` as the prefix otherwise), separated by `sep`.
pub fn push_aggs(out: &mut String, agg: &str, metrics: &[&str], alias: Option<&str>, sep: &str) {
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
pub fn push_host_literals(out: &mut String, hosts: &[u32]) {
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
pub fn push_hostname_in(out: &mut String, hosts: &[u32]) {
    out.push_str("hostname IN (");
    push_host_literals(out, hosts);
    out.push(')');
}

pub fn push_int(out: &mut String, v: i64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = write!(out, "{v}");
}

/// Appends `'<RFC 3339>'`.
pub fn push_rfc3339_literal(out: &mut String, ns: i64) {
    out.push('\'');
    crate::time::push_rfc3339(out, ns);
    out.push('\'');
}

#[cfg(test)]
mod tests;
