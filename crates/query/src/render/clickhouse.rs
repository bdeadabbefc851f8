//! SQL for ClickHouse, for the table the ClickHouse sink creates: `cpu (ts Int64, <tags>,
//! <fields>)` with `ts` in nanoseconds since the epoch, a MergeTree ordered by the tags
//! and `ts`. Buckets are integer divisions of `ts` (`intDiv`: ClickHouse's `/` divides as
//! floats); lastpoint keeps each host's rows at its latest `ts`.

use super::{Query, push_aggs, push_hostname_in, push_int};
use crate::types::{BucketUnit, GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// `intDiv(ts, 60000000000) * 60000000000` (the start of the bucket of a timestamp after
/// 1970).
fn push_bucket(out: &mut String, unit: BucketUnit) {
    out.push_str("intDiv(ts, ");
    push_int(out, unit.ns());
    out.push_str(") * ");
    push_int(out, unit.ns());
}

fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("ts >= ");
    push_int(out, q.window.start_ns);
    out.push_str(" AND ts < ");
    push_int(out, q.window.end_ns);
}

pub(super) fn render(q: &Query<'_>, out: &mut String) {
    match q.shape {
        QueryShape::MaxPerBucket => {
            let unit = q.bucket();
            out.push_str("SELECT ");
            push_bucket(out, unit);
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
            push_bucket(out, BucketUnit::Hour);
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
            push_bucket(out, BucketUnit::Minute);
            out.push_str(" AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < ");
            push_int(out, q.window.end_ns);
            out.push_str(" GROUP BY minute ORDER BY minute DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => out.push_str(
            "SELECT * FROM cpu WHERE (hostname, ts) IN (SELECT hostname, max(ts) FROM cpu \
             GROUP BY hostname) ORDER BY hostname",
        ),
    }
}
