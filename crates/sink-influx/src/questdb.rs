//! SQL for QuestDB, after TSBS's questdb generator, for the table line protocol creates:
//! `cpu` with tags as SYMBOL columns, fields, and the designated `timestamp`. Buckets are
//! `SAMPLE BY 1m` / `1h`, `ALIGN TO CALENDAR` (UTC minute and hour boundaries, as in the
//! other dialects); lastpoint is `LATEST ON timestamp PARTITION BY hostname`.

use tsload_query::render::{
    Query, Renderer, push_aggs, push_hostname_in, push_int, push_rfc3339_literal,
};
use tsload_query::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// TSBS's queries in QuestDB's SQL, for its `/exec` (or its PostgreSQL wire port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuestDbSql;

fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("timestamp >= ");
    push_rfc3339_literal(out, q.window.start_ns);
    out.push_str(" AND timestamp < ");
    push_rfc3339_literal(out, q.window.end_ns);
}

fn render_sql(q: &Query<'_>, out: &mut String) {
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

impl Renderer for QuestDbSql {
    fn name(&self) -> &'static str {
        "QuestDB"
    }

    fn render(&self, q: &Query<'_>, text: &mut String, _params: &mut Vec<tsload_core::Param>) {
        render_sql(q, text);
    }
}

#[cfg(test)]
mod tests {
    //! Golden texts of one fixed spec of each query type (run against the real server by
    //! tsload-query's tests/servers.rs), and every type rendered.

    use tsload_query::Dialect;
    use tsload_query::render::conformance::{check_every_type, check_goldens};

    use super::*;

    #[test]
    fn golden_questdb() {
        check_goldens(
            &Dialect::new(QuestDbSql),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT timestamp, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_3') AND timestamp >= '2016-01-01T05:17:23Z' AND timestamp < '2016-01-01T06:17:23Z' SAMPLE BY 1m ALIGN TO CALENDAR"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT timestamp, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND timestamp >= '2016-01-01T05:17:23Z' AND timestamp < '2016-01-01T06:17:23Z' SAMPLE BY 1m ALIGN TO CALENDAR"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT timestamp, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE hostname IN ('host_3') AND timestamp >= '2016-01-01T05:17:23Z' AND timestamp < '2016-01-01T13:17:23Z' SAMPLE BY 1h ALIGN TO CALENDAR"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT timestamp, hostname, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE timestamp >= '2016-01-01T05:17:23Z' AND timestamp < '2016-01-01T17:17:23Z' SAMPLE BY 1h ALIGN TO CALENDAR ORDER BY timestamp, hostname"#,
                ),
                (
                    "high-cpu-1",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND hostname IN ('host_3') AND timestamp >= '2016-01-01T05:17:23Z' AND timestamp < '2016-01-01T17:17:23Z'"#,
                ),
                (
                    "high-cpu-all",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND timestamp >= '2016-01-01T05:17:23Z' AND timestamp < '2016-01-01T17:17:23Z'"#,
                ),
                (
                    "groupby-orderby-limit",
                    r#"SELECT timestamp, max(usage_user) AS max_usage_user FROM cpu WHERE timestamp < '2016-01-01T06:17:23Z' SAMPLE BY 1m ALIGN TO CALENDAR ORDER BY timestamp DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT * FROM cpu LATEST ON timestamp PARTITION BY hostname"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn questdb_renders_every_query_type() {
        check_every_type(&Dialect::new(QuestDbSql), 15);
    }
}
