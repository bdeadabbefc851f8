//! Golden strings of the PromQL dialects for one fixed spec of each shape (the texts were
//! run against the real servers by tests/servers.rs), every type rendered or refused, and
//! the renderers' errors.

use super::conformance::{check_every_type, golden_spec as spec};
use super::*;

const S: i64 = 1_000_000_000;
const H: i64 = 3600 * S;
/// 2016-01-01T05:17:23Z
const START: i64 = 1_451_606_400 * S + 5 * H + 17 * 60 * S + 23 * S;

#[test]
fn every_type_renders_in_promql_but_four() {
    check_every_type(&Dialect::new(PromQl::METRICSQL), 11);
    check_every_type(&Dialect::new(PromQl::PROMETHEUS), 11);
}

#[test]
fn promql_unsupported_types_name_the_type_and_dialect() {
    let unsupported: Vec<QueryType> = QueryType::ALL
        .into_iter()
        .filter(|t| {
            Dialect::new(PromQl::METRICSQL)
                .unsupported_reason(*t)
                .is_some()
        })
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
        &Dialect::new(PromQl::METRICSQL),
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
    let e = render(&s, &Dialect::new(PromQl::METRICSQL)).unwrap_err();
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
    assert!(render(&s, &Dialect::new(PromQl::METRICSQL)).is_err());
}

#[test]
fn render_into_appends() {
    let mut text = String::from("-- ");
    let mut params = vec![Param::Int(7)];
    render_into(
        &spec(QueryType::SingleGroupby_1_1_1),
        &Dialect::new(PromQl::METRICSQL),
        &mut text,
        &mut params,
    )
    .unwrap();
    assert_eq!(
        text,
        "-- max(max_over_time(cpu_usage_user{hostname='host_3'}[1m]) keep_metric_names) by (__name__)"
    );
    assert_eq!(params.len(), 4, "{params:?}");
    assert_eq!(params[0], Param::Int(7));
}

#[test]
fn golden_promql() {
    let d = Dialect::new(PromQl::METRICSQL);
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
    let d = Dialect::new(PromQl::PROMETHEUS);
    let one = render(&spec(QueryType::SingleGroupby_1_1_1), &d).unwrap();
    assert_eq!(
        &*one.text,
        "max(max_over_time(cpu_usage_user{hostname='host_3'}[1m]))"
    );
    assert_eq!(
        one.params,
        render(
            &spec(QueryType::SingleGroupby_1_1_1),
            &Dialect::new(PromQl::METRICSQL)
        )
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
