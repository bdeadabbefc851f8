//! SQL for ClickHouse, for the table the ClickHouse sink creates: `cpu (ts Int64, <tags>,
//! <fields>)` with `ts` in nanoseconds since the epoch, a MergeTree ordered by the tags
//! and `ts`: tsload-query's queries of a table with `ts` in integer nanoseconds ([`render_int_ns`]) with ClickHouse's integer
//! division (`intDiv`: its `/` divides as floats) and a lastpoint that keeps each host's
//! rows at its latest `ts`.

use tsload_query::render::int_ns::{IntNsSql, render_int_ns};
use tsload_query::render::{Query, Renderer};

const CLICKHOUSE: IntNsSql = IntNsSql {
    div_open: "intDiv(ts, ",
    div_close: ")",
    lastpoint: "SELECT * FROM cpu WHERE (hostname, ts) IN (SELECT hostname, max(ts) FROM cpu \
                GROUP BY hostname) ORDER BY hostname",
};

/// TSBS's queries in ClickHouse's SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClickHouseSql;

impl Renderer for ClickHouseSql {
    fn name(&self) -> &'static str {
        "ClickHouse"
    }

    fn render(&self, q: &Query<'_>, text: &mut String, _params: &mut Vec<tsload_core::Param>) {
        render_int_ns(q, &CLICKHOUSE, text);
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
    fn golden_clickhouse() {
        check_goldens(
            &Dialect::new(ClickHouseSql),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT intDiv(ts, 60000000000) * 60000000000 AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000000000 AND ts < 1451629043000000000 GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT intDiv(ts, 60000000000) * 60000000000 AS minute, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND ts >= 1451625443000000000 AND ts < 1451629043000000000 GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT intDiv(ts, 3600000000000) * 3600000000000 AS hour, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000000000 AND ts < 1451654243000000000 GROUP BY hour ORDER BY hour"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT intDiv(ts, 3600000000000) * 3600000000000 AS hour, hostname, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE ts >= 1451625443000000000 AND ts < 1451668643000000000 GROUP BY hour, hostname ORDER BY hour, hostname"#,
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
                    r#"SELECT intDiv(ts, 60000000000) * 60000000000 AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < 1451629043000000000 GROUP BY minute ORDER BY minute DESC LIMIT 5"#,
                ),
                (
                    "lastpoint",
                    r#"SELECT * FROM cpu WHERE (hostname, ts) IN (SELECT hostname, max(ts) FROM cpu GROUP BY hostname) ORDER BY hostname"#,
                ),
            ],
            false,
        );
    }

    #[test]
    fn clickhouse_renders_every_query_type() {
        check_every_type(&Dialect::new(ClickHouseSql), 15);
    }
}
