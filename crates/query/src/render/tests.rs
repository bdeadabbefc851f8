//! Golden strings of every dialect for one fixed spec of each shape (the texts were run
//! against the real servers by tests/servers.rs), and the renderers' errors.

use super::*;
use crate::spec::TimeWindow;

const S: i64 = 1_000_000_000;
const H: i64 = 3600 * S;
/// 2016-01-01T05:17:23Z
const START: i64 = 1_451_606_400 * S + 5 * H + 17 * 60 * S + 23 * S;

/// The spec of `t` used by the goldens: hosts 3 (one host) or 3, 1, 4, 0, 5, 9, 2, 6
/// (eight), windows from 2016-01-01T05:17:23Z.
fn spec(t: QueryType) -> QuerySpec {
    let hosts: &[u32] = match t.hosts() {
        0 => &[],
        1 => &[3],
        _ => &[3, 1, 4, 0, 5, 9, 2, 6],
    };
    QuerySpec {
        query_type: t,
        hosts: hosts.to_vec(),
        window: t.window_ns().map(|len| TimeWindow {
            start_ns: START,
            end_ns: START + len,
        }),
    }
}

/// Renders each named type in `dialect` and compares with its golden text; no dialect
/// but PromQL has parameters.
fn check(dialect: Dialect, goldens: &[(&str, &str)]) {
    for (name, golden) in goldens {
        let t: QueryType = name.parse().unwrap();
        let s = render(&spec(t), &dialect).unwrap();
        assert_eq!(&*s.text, *golden, "{dialect:?} {name}");
        assert!(s.params.is_empty(), "{dialect:?} {name}");
    }
}

/// Every type renders in every dialect but PromQL's four, deterministically.
#[test]
fn every_type_renders_in_every_dialect() {
    let dialects = [
        Dialect::InfluxQl,
        Dialect::Postgres(PostgresOptions::default()),
        Dialect::Postgres(PostgresOptions {
            layout: PgLayout::TagsTable,
            time_bucket: true,
        }),
        Dialect::Mysql(MysqlOptions::default()),
        Dialect::Mysql(MysqlOptions {
            ts: MysqlTs::BigIntNs,
        }),
        Dialect::Sqlite,
        Dialect::ClickHouse,
        Dialect::QuestDb,
        Dialect::Tdengine(TdengineOptions::default()),
        Dialect::PromQl,
        Dialect::Prometheus,
    ];
    for d in dialects {
        let mut rendered = 0;
        for t in QueryType::ALL {
            match render(&spec(t), &d) {
                Ok(s) => {
                    assert_eq!(s, render(&spec(t), &d).unwrap());
                    assert!(s.text.contains("cpu"), "{d:?} {t}: {}", s.text);
                    for h in &spec(t).hosts {
                        assert!(s.text.contains(&format!("host_{h}")), "{d:?} {t}");
                    }
                    for m in t.metrics() {
                        let needed = t.shape() != QueryShape::HighCpu
                            && t.shape() != QueryShape::LastPointPerHost;
                        assert!(!needed || s.text.contains(m), "{d:?} {t}: {m}");
                    }
                    rendered += 1;
                }
                Err(e) => {
                    assert!(
                        matches!(d, Dialect::PromQl | Dialect::Prometheus),
                        "{t}: {e}"
                    );
                    assert!(
                        matches!(e, QueryError::Unsupported { query_type, dialect, .. } if query_type == t && dialect == d.name()),
                        "{e}"
                    );
                }
            }
        }
        let promql = matches!(d, Dialect::PromQl | Dialect::Prometheus);
        let expected = if promql { 11 } else { 15 };
        assert_eq!(rendered, expected, "{d:?}");
        assert_eq!(d.supported_types().len(), expected);
    }
}

#[test]
fn promql_unsupported_types_name_the_type_and_dialect() {
    let unsupported: Vec<QueryType> = QueryType::ALL
        .into_iter()
        .filter(|t| Dialect::PromQl.unsupported_reason(*t).is_some())
        .collect();
    assert_eq!(
        unsupported,
        [
            QueryType::HighCpu_1,
            QueryType::HighCpu_All,
            QueryType::GroupbyOrderbyLimit,
            QueryType::Lastpoint
        ]
    );
    let mut text = String::from("kept");
    let mut params = vec![Param::Int(1)];
    let e = render_into(
        &spec(QueryType::Lastpoint),
        &Dialect::PromQl,
        &mut text,
        &mut params,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "query type lastpoint cannot be expressed in PromQL: PromQL has no row of all columns \
         per host (TSBS's VictoriaMetrics generator leaves it out too)"
    );
    assert_eq!(
        (text.as_str(), params.len()),
        ("kept", 1),
        "nothing written"
    );
}

#[test]
fn specs_that_do_not_fit_are_errors_not_text() {
    let mut s = spec(QueryType::CpuMaxAll_8);
    s.hosts.truncate(2);
    let e = render(&s, &Dialect::Sqlite).unwrap_err();
    assert!(
        matches!(
            e,
            QueryError::BadSpec {
                query_type: QueryType::CpuMaxAll_8,
                ..
            }
        ),
        "{e}"
    );
    let mut s = spec(QueryType::SingleGroupby_1_1_1);
    s.window = None;
    assert!(render(&s, &Dialect::InfluxQl).is_err());
}

#[test]
fn render_into_appends() {
    let mut text = String::from("-- ");
    let mut params = Vec::new();
    render_into(
        &spec(QueryType::Lastpoint),
        &Dialect::QuestDb,
        &mut text,
        &mut params,
    )
    .unwrap();
    assert_eq!(
        text,
        "-- SELECT * FROM cpu LATEST ON timestamp PARTITION BY hostname"
    );
}

#[test]
fn setting_words_parse_and_print() {
    assert_eq!("tags".parse::<PgLayout>().unwrap(), PgLayout::TagsTable);
    assert_eq!(PgLayout::Wide.to_string(), "wide");
    assert_eq!("bigint_ns".parse::<MysqlTs>().unwrap(), MysqlTs::BigIntNs);
    assert_eq!(MysqlTs::DateTime.as_str(), "datetime");
    assert_eq!("us".parse::<TdPrecision>().unwrap(), TdPrecision::Us);
    let e = "wider".parse::<PgLayout>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "layout: unknown value \"wider\"; expected one of: wide, tags"
    );
}

#[test]
fn golden_promql() {
    let d = Dialect::PromQl;
    let sel = "cpu_usage_user{hostname='host_3'}";
    let five = "__name__=~'cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait)'";
    let eight = "hostname=~'host_3|host_1|host_4|host_0|host_5|host_9|host_2|host_6'";
    let start_ms = START / 1_000_000;
    let goldens: [(QueryType, String, i64, i64); 5] = [
        (
            QueryType::SingleGroupby_1_1_1,
            format!("max(max_over_time({sel}[1m]) keep_metric_names) by (__name__)"),
            H,
            60,
        ),
        (
            QueryType::SingleGroupby_5_8_1,
            format!("max(max_over_time({{{five},{eight}}}[1m]) keep_metric_names) by (__name__)"),
            H,
            60,
        ),
        (
            QueryType::CpuMaxAll_1,
            "max(max_over_time({__name__=~'cpu_(usage_user|usage_system|usage_idle|usage_nice|\
             usage_iowait|usage_irq|usage_softirq|usage_steal|usage_guest|usage_guest_nice)',\
             hostname='host_3'}[1h]) keep_metric_names) by (__name__)"
                .to_string(),
            8 * H,
            3600,
        ),
        (
            QueryType::DoubleGroupby_1,
            "avg(avg_over_time(cpu_usage_user[1h]) keep_metric_names) by (__name__, hostname)"
                .to_string(),
            12 * H,
            3600,
        ),
        (
            QueryType::DoubleGroupby_5,
            format!("avg(avg_over_time({{{five}}}[1h]) keep_metric_names) by (__name__, hostname)"),
            12 * H,
            3600,
        ),
    ];
    for (t, text, len, step) in goldens {
        let s = render(&spec(t), &d).unwrap();
        assert_eq!(*s.text, text, "{t}");
        assert_eq!(
            s.params,
            [
                Param::Int(start_ms),
                Param::Int(start_ms + len / 1_000_000),
                Param::Int(step)
            ],
            "{t}"
        );
    }
    assert_eq!(start_ms, 1_451_625_443_000);
}

/// Prometheus' rendering: the same selectors without MetricsQL's `keep_metric_names`;
/// several metrics are one labelled aggregate each, joined with `or`.
#[test]
fn golden_prometheus() {
    let d = Dialect::Prometheus;
    let one = render(&spec(QueryType::SingleGroupby_1_1_1), &d).unwrap();
    assert_eq!(
        &*one.text,
        "max(max_over_time(cpu_usage_user{hostname='host_3'}[1m]))"
    );
    assert_eq!(
        one.params,
        render(&spec(QueryType::SingleGroupby_1_1_1), &Dialect::PromQl)
            .unwrap()
            .params
    );
    let two = render(&spec(QueryType::DoubleGroupby_5), &d).unwrap();
    let parts: Vec<&str> = two.text.split(" or ").collect();
    assert_eq!(parts.len(), 5, "{}", two.text);
    assert_eq!(
        parts[1],
        "label_replace(avg(avg_over_time(cpu_usage_system[1h])) by (hostname), 'metric', \
         'usage_system', '', '')"
    );
    let all = render(&spec(QueryType::CpuMaxAll_8), &d).unwrap();
    assert_eq!(all.text.matches(" or ").count(), 9, "{}", all.text);
    assert!(!all.text.contains("keep_metric_names") && !all.text.contains("__name__"));
}

#[test]
fn golden_influxql() {
    check(
        Dialect::InfluxQl,
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
    );
}

#[test]
fn golden_postgres_wide() {
    check(
        Dialect::Postgres(PostgresOptions::default()),
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
    );
}

#[test]
fn golden_postgres_tags_time_bucket() {
    check(
        Dialect::Postgres(PostgresOptions {
            layout: PgLayout::TagsTable,
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
    );
}

#[test]
fn golden_mysql_datetime() {
    check(
        Dialect::Mysql(MysqlOptions::default()),
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
    );
}

#[test]
fn golden_mysql_bigint_ns() {
    check(
        Dialect::Mysql(MysqlOptions {
            ts: MysqlTs::BigIntNs,
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
    );
}

#[test]
fn golden_sqlite() {
    check(
        Dialect::Sqlite,
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
    );
}

#[test]
fn golden_clickhouse() {
    check(
        Dialect::ClickHouse,
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
    );
}

#[test]
fn golden_questdb() {
    check(
        Dialect::QuestDb,
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
    );
}

#[test]
fn golden_tdengine_ms() {
    check(
        Dialect::Tdengine(TdengineOptions::default()),
        &[
            (
                "single-groupby-1-1-1",
                r#"SELECT _wstart, max(usage_user) FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000 AND ts < 1451629043000 INTERVAL(1m)"#,
            ),
            (
                "single-groupby-5-8-1",
                r#"SELECT _wstart, max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND ts >= 1451625443000 AND ts < 1451629043000 INTERVAL(1m)"#,
            ),
            (
                "cpu-max-all-1",
                r#"SELECT _wstart, max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait), max(usage_irq), max(usage_softirq), max(usage_steal), max(usage_guest), max(usage_guest_nice) FROM cpu WHERE hostname IN ('host_3') AND ts >= 1451625443000 AND ts < 1451654243000 INTERVAL(1h)"#,
            ),
            (
                "double-groupby-5",
                r#"SELECT _wstart, hostname, avg(usage_user), avg(usage_system), avg(usage_idle), avg(usage_nice), avg(usage_iowait) FROM cpu WHERE ts >= 1451625443000 AND ts < 1451668643000 PARTITION BY hostname INTERVAL(1h)"#,
            ),
            (
                "high-cpu-1",
                r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= 1451625443000 AND ts < 1451668643000 AND hostname IN ('host_3')"#,
            ),
            (
                "high-cpu-all",
                r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND ts >= 1451625443000 AND ts < 1451668643000"#,
            ),
            (
                "groupby-orderby-limit",
                r#"SELECT _wstart, max(usage_user) FROM cpu WHERE ts < 1451629043000 INTERVAL(1m) ORDER BY _wstart DESC LIMIT 5"#,
            ),
            (
                "lastpoint",
                r#"SELECT last_row(*), hostname FROM cpu PARTITION BY hostname"#,
            ),
        ],
    );
}

#[test]
fn golden_tdengine_ns_schemaless() {
    check(
        Dialect::Tdengine(TdengineOptions {
            precision: TdPrecision::Ns,
            schemaless: true,
        }),
        &[
            (
                "single-groupby-1-1-1",
                r#"SELECT _wstart, max(usage_user) FROM cpu WHERE hostname IN ('host_3') AND _ts >= 1451625443000000000 AND _ts < 1451629043000000000 INTERVAL(1m)"#,
            ),
            (
                "single-groupby-5-8-1",
                r#"SELECT _wstart, max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) FROM cpu WHERE hostname IN ('host_3', 'host_1', 'host_4', 'host_0', 'host_5', 'host_9', 'host_2', 'host_6') AND _ts >= 1451625443000000000 AND _ts < 1451629043000000000 INTERVAL(1m)"#,
            ),
            (
                "cpu-max-all-1",
                r#"SELECT _wstart, max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait), max(usage_irq), max(usage_softirq), max(usage_steal), max(usage_guest), max(usage_guest_nice) FROM cpu WHERE hostname IN ('host_3') AND _ts >= 1451625443000000000 AND _ts < 1451654243000000000 INTERVAL(1h)"#,
            ),
            (
                "double-groupby-5",
                r#"SELECT _wstart, hostname, avg(usage_user), avg(usage_system), avg(usage_idle), avg(usage_nice), avg(usage_iowait) FROM cpu WHERE _ts >= 1451625443000000000 AND _ts < 1451668643000000000 PARTITION BY hostname INTERVAL(1h)"#,
            ),
            (
                "high-cpu-1",
                r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND _ts >= 1451625443000000000 AND _ts < 1451668643000000000 AND hostname IN ('host_3')"#,
            ),
            (
                "high-cpu-all",
                r#"SELECT * FROM cpu WHERE usage_user > 90.0 AND _ts >= 1451625443000000000 AND _ts < 1451668643000000000"#,
            ),
            (
                "groupby-orderby-limit",
                r#"SELECT _wstart, max(usage_user) FROM cpu WHERE _ts < 1451629043000000000 INTERVAL(1m) ORDER BY _wstart DESC LIMIT 5"#,
            ),
            (
                "lastpoint",
                r#"SELECT last_row(*), hostname FROM cpu PARTITION BY hostname"#,
            ),
        ],
    );
}
