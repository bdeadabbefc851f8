//! SQL for PostgreSQL / TimescaleDB, after TSBS's timescaledb generator, for the tables the
//! PostgreSQL sink creates: `cpu ("ts" timestamptz, <tags>, <fields>)` (wide layout) or
//! `cpu ("ts", "tags_id", <fields>)` plus `tags ("id", <tags>)` (tags layout).

use tsload_query::render::BucketUnit;
use tsload_query::render::{
    Query, Renderer, push_aggs, push_hostname_in, push_int, push_rfc3339_literal,
};
use tsload_query::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

use crate::Layout;

/// TSBS's queries in PostgreSQL's SQL, for the sink's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PostgresSql {
    pub layout: Layout,
    /// Bucket with TimescaleDB's `time_bucket('1 minute', ts)` (as TSBS does) instead of
    /// `date_trunc('minute', ts, 'UTC')`; needs the timescaledb extension.
    pub time_bucket: bool,
}

/// `time_bucket('1 minute', ts)` or `date_trunc('minute', ts, 'UTC')`.
fn push_bucket(out: &mut String, o: &PostgresSql, unit: BucketUnit) {
    if o.time_bucket {
        out.push_str("time_bucket('1 ");
        out.push_str(unit.word());
        out.push_str("', ts)");
    } else {
        out.push_str("date_trunc('");
        out.push_str(unit.word());
        out.push_str("', ts, 'UTC')");
    }
}

/// The host filter: `hostname IN (...)` or `tags_id IN (SELECT id FROM tags WHERE
/// hostname IN (...))`.
fn push_hosts(out: &mut String, o: &PostgresSql, hosts: &[u32]) {
    match o.layout {
        Layout::Wide => push_hostname_in(out, hosts),
        Layout::TagsTable => {
            out.push_str("tags_id IN (SELECT id FROM tags WHERE ");
            push_hostname_in(out, hosts);
            out.push(')');
        }
    }
}

fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("ts >= ");
    push_rfc3339_literal(out, q.window.start_ns);
    out.push_str(" AND ts < ");
    push_rfc3339_literal(out, q.window.end_ns);
}

fn render_sql(q: &Query<'_>, o: &PostgresSql, out: &mut String) {
    let threshold = format!("{HIGH_CPU_THRESHOLD:.1}");
    match q.shape {
        QueryShape::MaxPerBucket => {
            let unit = q.bucket();
            out.push_str("SELECT ");
            push_bucket(out, o, unit);
            out.push_str(" AS ");
            out.push_str(unit.word());
            out.push_str(", ");
            push_aggs(out, "max", q.metrics, Some("max"), ", ");
            out.push_str(" FROM cpu WHERE ");
            push_hosts(out, o, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, q);
            out.push_str(" GROUP BY ");
            out.push_str(unit.word());
            out.push_str(" ORDER BY ");
            out.push_str(unit.word());
        }
        QueryShape::MeanPerBucketAndHost => match o.layout {
            Layout::Wide => {
                out.push_str("SELECT ");
                push_bucket(out, o, BucketUnit::Hour);
                out.push_str(" AS hour, hostname, ");
                push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
                out.push_str(" FROM cpu WHERE ");
                push_time_range(out, q);
                out.push_str(" GROUP BY hour, hostname ORDER BY hour, hostname");
            }
            Layout::TagsTable => {
                out.push_str("WITH cpu_avg AS (SELECT ");
                push_bucket(out, o, BucketUnit::Hour);
                out.push_str(" AS hour, tags_id, ");
                push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
                out.push_str(" FROM cpu WHERE ");
                push_time_range(out, q);
                out.push_str(" GROUP BY hour, tags_id) SELECT hour, tags.hostname");
                for m in q.metrics {
                    out.push_str(", mean_");
                    out.push_str(m);
                }
                out.push_str(
                    " FROM cpu_avg JOIN tags ON cpu_avg.tags_id = tags.id \
                     ORDER BY hour, tags.hostname",
                );
            }
        },
        QueryShape::HighCpu => {
            out.push_str("SELECT * FROM cpu WHERE usage_user > ");
            out.push_str(&threshold);
            out.push_str(" AND ");
            push_time_range(out, q);
            if !q.hosts.is_empty() {
                out.push_str(" AND ");
                push_hosts(out, o, q.hosts);
            }
        }
        QueryShape::LastBucketsBeforeEnd => {
            out.push_str("SELECT ");
            push_bucket(out, o, BucketUnit::Minute);
            out.push_str(" AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < ");
            push_rfc3339_literal(out, q.window.end_ns);
            out.push_str(" GROUP BY minute ORDER BY minute DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => match o.layout {
            Layout::Wide => {
                out.push_str("SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, ts DESC");
            }
            Layout::TagsTable => out.push_str(
                "SELECT DISTINCT ON (t.hostname) * FROM tags t INNER JOIN LATERAL \
                 (SELECT * FROM cpu c WHERE c.tags_id = t.id ORDER BY ts DESC LIMIT 1) AS b \
                 ON true ORDER BY t.hostname, b.ts DESC",
            ),
        },
    }
}

impl Renderer for PostgresSql {
    fn name(&self) -> &'static str {
        "PostgreSQL"
    }

    fn render(&self, q: &Query<'_>, text: &mut String, _params: &mut Vec<tsload_core::Param>) {
        render_sql(q, self, text);
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
    fn golden_postgres_wide() {
        check_goldens(
            &Dialect::new(PostgresSql::default()),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT date_trunc('minute', ts, 'UTC') AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_3') AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T06:17:23Z' GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT date_trunc('minute', ts, 'UTC') AS minute, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T06:17:23Z' GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT date_trunc('hour', ts, 'UTC') AS hour, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE hostname IN ('host_3') AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T13:17:23Z' GROUP BY hour ORDER BY hour"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT date_trunc('hour', ts, 'UTC') AS hour, hostname, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T17:17:23Z' GROUP BY hour, hostname ORDER BY hour, hostname"#,
                ),
                (
                    "high-cpu-1",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T17:17:23Z' AND hostname IN ('host_3')"#,
                ),
                (
                    "high-cpu-all",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T17:17:23Z'"#,
                ),
                (
                    "groupby-orderby-limit",
                    r#"SELECT date_trunc('minute', ts, 'UTC') AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < '2016-01-01T06:17:23Z' GROUP BY minute ORDER BY minute DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, ts DESC"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn golden_postgres_tags_time_bucket() {
        check_goldens(
            &Dialect::new(PostgresSql {
                layout: Layout::TagsTable,
                time_bucket: true,
            }),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT time_bucket('1 minute', ts) AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_3')) AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T06:17:23Z' GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT time_bucket('1 minute', ts) AS minute, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6')) AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T06:17:23Z' GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT time_bucket('1 hour', ts) AS hour, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_3')) AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T13:17:23Z' GROUP BY hour ORDER BY hour"#,
                ),
                (
                    "double-groupby-5",
                    r#"WITH cpu_avg AS (SELECT time_bucket('1 hour', ts) AS hour, tags_id, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T17:17:23Z' GROUP BY hour, tags_id) SELECT hour, tags.hostname, mean_usage_user, mean_usage_system, mean_usage_idle, mean_usage_nice, mean_usage_iowait FROM cpu_avg JOIN tags ON cpu_avg.tags_id = tags.id ORDER BY hour, tags.hostname"#,
                ),
                (
                    "high-cpu-1",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T17:17:23Z' AND tags_id IN (SELECT id FROM tags WHERE hostname IN ('host_3'))"#,
                ),
                (
                    "high-cpu-all",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= '2016-01-01T05:17:23Z' AND ts < '2016-01-01T17:17:23Z'"#,
                ),
                (
                    "groupby-orderby-limit",
                    r#"SELECT time_bucket('1 minute', ts) AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < '2016-01-01T06:17:23Z' GROUP BY minute ORDER BY minute DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT DISTINCT ON (t.hostname) * FROM tags t INNER JOIN LATERAL (SELECT * FROM cpu c WHERE c.tags_id = t.id ORDER BY ts DESC LIMIT 1) AS b ON true ORDER BY t.hostname, b.ts DESC"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn postgres_renders_every_query_type() {
        check_every_type(
            &Dialect::new(PostgresSql {
                layout: Layout::TagsTable,
                time_bucket: true,
            }),
            15,
        );
    }

    #[test]
    fn postgres_wide_renders_every_query_type() {
        check_every_type(&Dialect::new(PostgresSql::default()), 15);
    }
}
