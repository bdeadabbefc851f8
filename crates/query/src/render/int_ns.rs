//! SQL for a `cpu (ts, <tags>, <fields>)` table with `ts` in integer nanoseconds since the
//! epoch, as the SQLite and ClickHouse sinks create it. Buckets are integer divisions of
//! `ts` (bucket starts in ns); each language gives its division and its lastpoint
//! ([`IntNsSql`]).

use super::{BucketUnit, Query, push_aggs, push_hostname_in, push_int};
use crate::types::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// What differs between the SQL dialects of a `cpu` table with `ts` in integer
/// nanoseconds.
pub struct IntNsSql {
    /// Integer division of `ts` by a bucket's nanoseconds, before `(ns)`.
    pub div_open: &'static str,
    /// ... and after it.
    pub div_close: &'static str,
    /// The lastpoint query: each host's row at its latest `ts`.
    pub lastpoint: &'static str,
}

/// `ts / 60000000000 * 60000000000` (integer division: the start of the bucket of a
/// timestamp after 1970), in `sql`'s words.
fn push_bucket(out: &mut String, sql: &IntNsSql, unit: BucketUnit) {
    out.push_str(sql.div_open);
    push_int(out, unit.ns());
    out.push_str(sql.div_close);
    out.push_str(" * ");
    push_int(out, unit.ns());
}

fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("ts >= ");
    push_int(out, q.window.start_ns);
    out.push_str(" AND ts < ");
    push_int(out, q.window.end_ns);
}

/// The query over a `cpu` table with `ts` in integer nanoseconds, in `sql`'s words.
pub fn render_int_ns(q: &Query<'_>, sql: &IntNsSql, out: &mut String) {
    match q.shape {
        QueryShape::MaxPerBucket => {
            let unit = q.bucket();
            out.push_str("SELECT ");
            push_bucket(out, sql, unit);
            out.push_str(" AS ");
            out.push_str(unit.word());
            out.push_str(", ");
            push_aggs(out, "max", q.metrics, Some("max"), ", ");
            out.push_str(" FROM cpu WHERE ");
            push_hostname_in(out, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, q);
            out.push_str(" GROUP BY ");
            out.push_str(unit.word());
            out.push_str(" ORDER BY ");
            out.push_str(unit.word());
        }
        QueryShape::MeanPerBucketAndHost => {
            out.push_str("SELECT ");
            push_bucket(out, sql, BucketUnit::Hour);
            out.push_str(" AS hour, hostname, ");
            push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
            out.push_str(" FROM cpu WHERE ");
            push_time_range(out, q);
            out.push_str(" GROUP BY hour, hostname ORDER BY hour, hostname");
        }
        QueryShape::HighCpu => {
            out.push_str("SELECT * FROM cpu WHERE usage_user > ");
            out.push_str(&format!("{HIGH_CPU_THRESHOLD:.1}"));
            out.push_str(" AND ");
            push_time_range(out, q);
            if !q.hosts.is_empty() {
                out.push_str(" AND ");
                push_hostname_in(out, q.hosts);
            }
        }
        QueryShape::LastBucketsBeforeEnd => {
            out.push_str("SELECT ");
            push_bucket(out, sql, BucketUnit::Minute);
            out.push_str(" AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < ");
            push_int(out, q.window.end_ns);
            out.push_str(" GROUP BY minute ORDER BY minute DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => out.push_str(sql.lastpoint),
    }
}
