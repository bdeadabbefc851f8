//! InfluxQL for InfluxDB 1.x, after TSBS's influx generator: hosts as an OR of
//! `hostname = '...'` (InfluxQL has no IN), RFC 3339 time literals, `GROUP BY time(1m)`.

use super::{Query, push_aggs, push_int, push_rfc3339_literal};
use crate::types::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// `(hostname = 'host_1' OR hostname = 'host_5')`.
fn push_hosts(out: &mut String, hosts: &[u32]) {
    out.push('(');
    for (i, h) in hosts.iter().enumerate() {
        if i > 0 {
            out.push_str(" OR ");
        }
        out.push_str("hostname = 'host_");
        push_int(out, i64::from(*h));
        out.push('\'');
    }
    out.push(')');
}

/// `time >= '<start>' AND time < '<end>'`.
fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("time >= ");
    push_rfc3339_literal(out, q.window.start_ns);
    out.push_str(" AND time < ");
    push_rfc3339_literal(out, q.window.end_ns);
}

pub(super) fn render(q: &Query<'_>, out: &mut String) {
    match q.shape {
        QueryShape::MaxPerBucket => {
            out.push_str("SELECT ");
            push_aggs(out, "max", q.metrics, None, ", ");
            out.push_str(" FROM cpu WHERE ");
            push_hosts(out, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, q);
            out.push_str(" GROUP BY time(");
            out.push_str(q.bucket().short());
            out.push(')');
        }
        QueryShape::MeanPerBucketAndHost => {
            out.push_str("SELECT ");
            push_aggs(out, "mean", q.metrics, None, ", ");
            out.push_str(" FROM cpu WHERE ");
            push_time_range(out, q);
            out.push_str(" GROUP BY time(1h), hostname");
        }
        QueryShape::HighCpu => {
            out.push_str("SELECT * FROM cpu WHERE usage_user > ");
            out.push_str(&format!("{HIGH_CPU_THRESHOLD:.1}"));
            if !q.hosts.is_empty() {
                out.push_str(" AND ");
                push_hosts(out, q.hosts);
            }
            out.push_str(" AND ");
            push_time_range(out, q);
        }
        QueryShape::LastBucketsBeforeEnd => {
            // TSBS omits ORDER BY, which returns the first 5 minutes of the data; the
            // query means the last 5 before the end.
            out.push_str("SELECT max(usage_user) FROM cpu WHERE time < ");
            push_rfc3339_literal(out, q.window.end_ns);
            out.push_str(" GROUP BY time(1m) ORDER BY time DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => {
            out.push_str("SELECT * FROM cpu GROUP BY hostname ORDER BY time DESC LIMIT 1");
        }
    }
}
