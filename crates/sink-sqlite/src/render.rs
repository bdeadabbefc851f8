//! TSBS's queries in SQLite's SQL, for the table this sink creates: `cpu (ts INTEGER,
//! <tags>, <fields>)` with `ts` in nanoseconds since the epoch: tsload-query's queries of
//! such a table ([`render_int_ns`]) with SQLite's integer division and a lastpoint that
//! joins each host's latest `ts`.

use tsload_query::render::int_ns::{IntNsSql, render_int_ns};
use tsload_query::render::{Query, Renderer};

/// SQLite: `/` of two integers is integer division.
const SQLITE: IntNsSql = IntNsSql {
    div_open: "ts / ",
    div_close: "",
    lastpoint: "SELECT cpu.* FROM cpu JOIN (SELECT hostname, max(ts) AS max_ts FROM cpu \
                GROUP BY hostname) AS latest ON cpu.hostname = latest.hostname AND \
                cpu.ts = latest.max_ts ORDER BY cpu.hostname",
};

/// TSBS's queries in SQLite's SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SqliteSql;

impl Renderer for SqliteSql {
    fn name(&self) -> &'static str {
        "SQLite"
    }

    fn render(&self, q: &Query<'_>, text: &mut String, _params: &mut Vec<tsload_core::Param>) {
        render_int_ns(q, &SQLITE, text);
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
    fn golden_sqlite() {
        check_goldens(
            &Dialect::new(SqliteSql),
            &[
                (
                    "single-groupby-1-1-1",
                    r#"SELECT ts / 60000000000 * 60000000000 AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000000000 AND ts < 1451629043000000000 GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "single-groupby-5-8-1",
                    r#"SELECT ts / 60000000000 * 60000000000 AS minute, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND ts >= 1451625443000000000 AND ts < 1451629043000000000 GROUP BY minute ORDER BY minute"#,
                ),
                (
                    "cpu-max-all-1",
                    r#"SELECT ts / 3600000000000 * 3600000000000 AS hour, max(usage_user) AS max_usage_user, max(usage_system) AS max_usage_system, max(usage_idle) AS max_usage_idle, max(usage_nice) AS max_usage_nice, max(usage_iowait) AS max_usage_iowait, max(usage_irq) AS max_usage_irq, max(usage_softirq) AS max_usage_softirq, max(usage_steal) AS max_usage_steal, max(usage_guest) AS max_usage_guest, max(usage_guest_nice) AS max_usage_guest_nice FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000000000 AND ts < 1451654243000000000 GROUP BY hour ORDER BY hour"#,
                ),
                (
                    "double-groupby-5",
                    r#"SELECT ts / 3600000000000 * 3600000000000 AS hour, hostname, avg(usage_user) AS mean_usage_user, avg(usage_system) AS mean_usage_system, avg(usage_idle) AS mean_usage_idle, avg(usage_nice) AS mean_usage_nice, avg(usage_iowait) AS mean_usage_iowait FROM cpu WHERE ts >= 1451625443000000000 AND ts < 1451668643000000000 GROUP BY hour, hostname ORDER BY hour, hostname"#,
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
                    r#"SELECT ts / 60000000000 * 60000000000 AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < 1451629043000000000 GROUP BY minute ORDER BY minute DESC LIMIT 5"#,
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
    fn sqlite_renders_every_query_type() {
        check_every_type(&Dialect::new(SqliteSql), 15);
    }
}
