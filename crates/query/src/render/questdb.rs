//! SQL for QuestDB, after TSBS's questdb generator, for the table line protocol creates:
//! `cpu` with tags as SYMBOL columns, fields, and the designated `timestamp`. Buckets are
//! `SAMPLE BY 1m` / `1h`, `ALIGN TO CALENDAR` (UTC minute and hour boundaries, as in the
//! other dialects); lastpoint is `LATEST ON timestamp PARTITION BY hostname`.

use super::{Query, push_aggs, push_hostname_in, push_int, push_rfc3339_literal};
use crate::types::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("timestamp >= ");
    push_rfc3339_literal(out, q.window.start_ns);
    out.push_str(" AND timestamp < ");
    push_rfc3339_literal(out, q.window.end_ns);
}

pub(super) fn render(q: &Query<'_>, out: &mut String) {
    match q.shape {
        QueryShape::MaxPerBucket => {
            out.push_str("SELECT timestamp, ");
            push_aggs(out, "max", q.metrics, Some("max"), ", ");
            out.push_str(" FROM cpu WHERE ");
            push_hostname_in(out, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, q);
            out.push_str(" SAMPLE BY ");
            out.push_str(q.bucket().short());
            out.push_str(" ALIGN TO CALENDAR");
        }
        QueryShape::MeanPerBucketAndHost => {
            out.push_str("SELECT timestamp, hostname, ");
            push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
            out.push_str(" FROM cpu WHERE ");
            push_time_range(out, q);
            out.push_str(" SAMPLE BY 1h ALIGN TO CALENDAR ORDER BY timestamp, hostname");
        }
        QueryShape::HighCpu => {
            out.push_str("SELECT * FROM cpu WHERE usage_user > ");
            out.push_str(&format!("{HIGH_CPU_THRESHOLD:.1}"));
            if !q.hosts.is_empty() {
                out.push_str(" AND ");
                push_hostname_in(out, q.hosts);
            }
            out.push_str(" AND ");
            push_time_range(out, q);
        }
        QueryShape::LastBucketsBeforeEnd => {
            out.push_str(
                "SELECT timestamp, max(usage_user) AS max_usage_user FROM cpu WHERE timestamp < ",
            );
            push_rfc3339_literal(out, q.window.end_ns);
            out.push_str(" SAMPLE BY 1m ALIGN TO CALENDAR ORDER BY timestamp DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => {
            out.push_str("SELECT * FROM cpu LATEST ON timestamp PARTITION BY hostname");
        }
    }
}
