//! InfluxQL for InfluxDB 1.x, after TSBS's influx generator: hosts as an OR of
//! `hostname = '...'` (InfluxQL has no IN), RFC 3339 time literals, `GROUP BY time(1m)`.

use tsload_query::render::{Query, Renderer, push_aggs, push_int, push_rfc3339_literal};
use tsload_query::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// TSBS's queries in InfluxQL, for InfluxDB 1.x's `/query?db=` (and 2.x's compatibility
/// API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InfluxQl;

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

fn render_sql(q: &Query<'_>, out: &mut String) {
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

impl Renderer for InfluxQl {
    fn name(&self) -> &'static str {
        "InfluxQL"
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
    fn golden_influxql() {
        check_goldens(
            &Dialect::new(InfluxQl),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT max(usage_user) FROM cpu WHERE (hostname = 'host_3') AND time >= '2016-01-01T05:17:23Z' AND time < '2016-01-01T06:17:23Z' GROUP BY time(1m)"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) FROM cpu WHERE (hostname = 'host_3' OR hostname = 'host_1' OR hostname = 'host_4' OR hostname = 'host_0' OR hostname = 'host_5' OR hostname = 'host_9' OR hostname = 'host_2' OR hostname = 'host_6') AND time >= '2016-01-01T05:17:23Z' AND time < '2016-01-01T06:17:23Z' GROUP BY time(1m)"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait), max(usage_irq), max(usage_softirq), max(usage_steal), max(usage_guest), max(usage_guest_nice) FROM cpu WHERE (hostname = 'host_3') AND time >= '2016-01-01T05:17:23Z' AND time < '2016-01-01T13:17:23Z' GROUP BY time(1h)"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT mean(usage_user), mean(usage_system), mean(usage_idle), mean(usage_nice), mean(usage_iowait) FROM cpu WHERE time >= '2016-01-01T05:17:23Z' AND time < '2016-01-01T17:17:23Z' GROUP BY time(1h), hostname"#,
                ),
                (
                    "high-cpu-1",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND (hostname = 'host_3') AND time >= '2016-01-01T05:17:23Z' AND time < '2016-01-01T17:17:23Z'"#,
                ),
                (
                    "high-cpu-all",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND time >= '2016-01-01T05:17:23Z' AND time < '2016-01-01T17:17:23Z'"#,
                ),
                (
                    "groupby-orderby-limit",
                    r#"SELECT max(usage_user) FROM cpu WHERE time < '2016-01-01T06:17:23Z' GROUP BY time(1m) ORDER BY time DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT * FROM cpu GROUP BY hostname ORDER BY time DESC LIMIT 1"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn influxql_renders_every_query_type() {
        check_every_type(&Dialect::new(InfluxQl), 15);
    }
}
