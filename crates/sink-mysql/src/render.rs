//! SQL for MySQL / MariaDB, for the wide table the MySQL sink creates: `cpu (ts, <tags>,
//! <fields>)` with `ts` `DATETIME(6)` (the UTC wall clock) or `BIGINT` nanoseconds.
//! Buckets are computed without the session time zone (`DATE_FORMAT` of the stored wall
//! clock, or integer division); MySQL has no `DISTINCT ON`, so lastpoint joins each
//! host's latest `ts`.

use tsload_query::render::BucketUnit;
use tsload_query::render::{Query, Renderer, push_aggs, push_hostname_in, push_int};
use tsload_query::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

use crate::TsType;

/// TSBS's queries in MySQL's SQL, for the sink's `ts` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MysqlSql {
    pub ts: TsType,
}

fn push_bucket(out: &mut String, o: &MysqlSql, unit: BucketUnit) {
    match o.ts {
        TsType::DateTime6 => out.push_str(match unit {
            BucketUnit::Minute => "DATE_FORMAT(ts, '%Y-%m-%d %H:%i:00')",
            BucketUnit::Hour => "DATE_FORMAT(ts, '%Y-%m-%d %H:00:00')",
        }),
        TsType::BigIntNs => {
            out.push_str("ts DIV ");
            push_int(out, unit.ns());
            out.push_str(" * ");
            push_int(out, unit.ns());
        }
    }
}

fn push_time(out: &mut String, o: &MysqlSql, ns: i64) {
    match o.ts {
        TsType::DateTime6 => {
            out.push('\'');
            tsload_query::push_sql_datetime(out, ns);
            out.push('\'');
        }
        TsType::BigIntNs => push_int(out, ns),
    }
}

fn push_time_range(out: &mut String, o: &MysqlSql, q: &Query<'_>) {
    out.push_str("ts >= ");
    push_time(out, o, q.window.start_ns);
    out.push_str(" AND ts < ");
    push_time(out, o, q.window.end_ns);
}

fn render_sql(q: &Query<'_>, o: &MysqlSql, out: &mut String) {
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
            push_hostname_in(out, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, o, q);
            out.push_str(" GROUP BY ");
            out.push_str(unit.word());
            out.push_str(" ORDER BY ");
            out.push_str(unit.word());
        }
        QueryShape::MeanPerBucketAndHost => {
            out.push_str("SELECT ");
            push_bucket(out, o, BucketUnit::Hour);
            out.push_str(" AS hour, hostname, ");
            push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
            out.push_str(" FROM cpu WHERE ");
            push_time_range(out, o, q);
            out.push_str(" GROUP BY hour, hostname ORDER BY hour, hostname");
        }
        QueryShape::HighCpu => {
            out.push_str("SELECT * FROM cpu WHERE usage_user > ");
            out.push_str(&format!("{HIGH_CPU_THRESHOLD:.1}"));
            out.push_str(" AND ");
            push_time_range(out, o, q);
            if !q.hosts.is_empty() {
                out.push_str(" AND ");
                push_hostname_in(out, q.hosts);
            }
        }
        QueryShape::LastBucketsBeforeEnd => {
            out.push_str("SELECT ");
            push_bucket(out, o, BucketUnit::Minute);
            out.push_str(" AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < ");
            push_time(out, o, q.window.end_ns);
            out.push_str(" GROUP BY minute ORDER BY minute DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => out.push_str(
            "SELECT cpu.* FROM cpu JOIN (SELECT hostname, max(ts) AS max_ts FROM cpu \
             GROUP BY hostname) AS latest ON cpu.hostname = latest.hostname AND \
             cpu.ts = latest.max_ts ORDER BY cpu.hostname",
        ),
    }
}

impl Renderer for MysqlSql {
    fn name(&self) -> &'static str {
        "MySQL"
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
    fn golden_mysql_datetime() {
        check_goldens(
            &Dialect::new(MysqlSql::default()),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT DATE_FORMAT(ts, '%Y-%m-%d %H:%i:00') AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_3') AND ts >= '2016-01-01 05:17:23' AND ts < '2016-01-01 06:17:23' GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT DATE_FORMAT(ts, '%Y-%m-%d %H:%i:00') AS minute, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND ts >= '2016-01-01 05:17:23' AND ts < '2016-01-01 06:17:23' GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT DATE_FORMAT(ts, '%Y-%m-%d %H:00:00') AS hour, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE hostname IN ('host_3') AND ts >= '2016-01-01 05:17:23' AND ts < '2016-01-01 13:17:23' GROUP BY hour ORDER BY hour"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT DATE_FORMAT(ts, '%Y-%m-%d %H:00:00') AS hour, hostname, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE ts >= '2016-01-01 05:17:23' AND ts < '2016-01-01 17:17:23' GROUP BY hour, hostname ORDER BY hour, hostname"#,
                ),
                (
                    "high-cpu-1",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= '2016-01-01 05:17:23' AND ts < '2016-01-01 17:17:23' AND hostname IN ('host_3')"#,
                ),
                (
                    "high-cpu-all",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= '2016-01-01 05:17:23' AND ts < '2016-01-01 17:17:23'"#,
                ),
                (
                    "groupby-orderby-limit",
                    r#"SELECT DATE_FORMAT(ts, '%Y-%m-%d %H:%i:00') AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < '2016-01-01 06:17:23' GROUP BY minute ORDER BY minute DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT cpu.* FROM cpu JOIN (SELECT hostname, max(ts) AS max_ts FROM cpu GROUP BY hostname) AS latest ON cpu.hostname = latest.hostname AND cpu.ts = latest.max_ts ORDER BY cpu.hostname"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn golden_mysql_bigint_ns() {
        check_goldens(
            &Dialect::new(MysqlSql {
                ts: TsType::BigIntNs,
            }),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT ts DIV 60000000000 * 60000000000 AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000000000 AND ts < 1451629043000000000 GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT ts DIV 60000000000 * 60000000000 AS minute, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND ts >= 1451625443000000000 AND ts < 1451629043000000000 GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT ts DIV 3600000000000 * 3600000000000 AS hour, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000000000 AND ts < 1451654243000000000 GROUP BY hour ORDER BY hour"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT ts DIV 3600000000000 * 3600000000000 AS hour, hostname, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE ts >= 1451625443000000000 AND ts < 1451668643000000000 GROUP BY hour, hostname ORDER BY hour, hostname"#,
                ),
                (
                    "high-cpu-1",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= 1451625443000000000 AND ts < 1451668643000000000 AND hostname IN ('host_3')"#,
                ),
                (
                    "high-cpu-all",
                    r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= 1451625443000000000 AND ts < 1451668643000000000"#,
                ),
                (
                    "groupby-orderby-limit",
                    r#"SELECT ts DIV 60000000000 * 60000000000 AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < 1451629043000000000 GROUP BY minute ORDER BY minute DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT cpu.* FROM cpu JOIN (SELECT hostname, max(ts) AS max_ts FROM cpu GROUP BY hostname) AS latest ON cpu.hostname = latest.hostname AND cpu.ts = latest.max_ts ORDER BY cpu.hostname"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn mysql_renders_every_query_type() {
        check_every_type(
            &Dialect::new(MysqlSql {
                ts: TsType::BigIntNs,
            }),
            15,
        );
    }

    #[test]
    fn mysql_datetime_renders_every_query_type() {
        check_every_type(&Dialect::new(MysqlSql::default()), 15);
    }
}
