//! PromQL / MetricsQL for VictoriaMetrics, after TSBS's victoriametrics generator: line
//! protocol `cpu,hostname=host_0 usage_user=...` lands as series
//! `cpu_usage_user{hostname="host_0",...}`. The text is the expression of a range query;
//! the parameters are `[start_ms, end_ms, step_seconds]` with the step the bucket width,
//! so each point is the aggregate over the bucket ending at it (`max_over_time(...[1m])`).
//! `keep_metric_names` (MetricsQL) keeps one series per metric where TSBS's
//! `by (__name__)` would merge them (rollup functions drop the name). Prometheus has no
//! `keep_metric_names`: its rendering takes one aggregate per metric, labelled `metric`,
//! joined with `or`.

use tsload_core::Param;

use super::Query;
use crate::types::QueryShape;

/// `cpu_usage_user{hostname='host_1'}` for one metric, otherwise
/// `{__name__=~'cpu_(usage_user|usage_system)',hostname=~'host_1|host_5'}`; no host
/// matcher for all hosts.
fn push_selector(out: &mut String, metrics: &[&str], hosts: &[u32]) {
    let mut matchers = Vec::with_capacity(2);
    if let [metric] = metrics {
        out.push_str("cpu_");
        out.push_str(metric);
    } else {
        matchers.push(format!("__name__=~'cpu_({})'", metrics.join("|")));
    }
    if !hosts.is_empty() {
        let names: Vec<String> = hosts.iter().map(|h| format!("host_{h}")).collect();
        let op = if hosts.len() == 1 { "=" } else { "=~" };
        matchers.push(format!("hostname{op}'{}'", names.join("|")));
    }
    if !matchers.is_empty() {
        out.push('{');
        out.push_str(&matchers.join(","));
        out.push('}');
    }
}

pub(super) fn render(q: &Query<'_>, standard: bool, out: &mut String, params: &mut Vec<Param>) {
    let unit = q.bucket();
    let (rollup, range, by, hosts) = match q.shape {
        QueryShape::MaxPerBucket => ("max", unit.short(), "", q.hosts),
        QueryShape::MeanPerBucketAndHost => ("avg", "1h", "hostname", &[][..]),
        // Refused by `Dialect::check` before rendering.
        QueryShape::HighCpu | QueryShape::LastBucketsBeforeEnd | QueryShape::LastPointPerHost => {
            return;
        }
    };
    if standard && q.metrics.len() > 1 {
        // Standard PromQL drops the name in a rollup, and `by (__name__)` would then merge
        // the metrics (or two series with one label set fail the query): one aggregate
        // per metric, named by a `metric` label, joined with `or`.
        for (i, metric) in q.metrics.iter().enumerate() {
            if i > 0 {
                out.push_str(" or ");
            }
            out.push_str("label_replace(");
            push_aggregate(out, rollup, &[*metric], hosts, range, by, standard);
            out.push_str(", 'metric', '");
            out.push_str(metric);
            out.push_str("', '', '')");
        }
    } else {
        push_aggregate(out, rollup, q.metrics, hosts, range, by, standard);
    }
    params.push(Param::Int(q.window.start_ns.div_euclid(1_000_000)));
    params.push(Param::Int(q.window.end_ns.div_euclid(1_000_000)));
    params.push(Param::Int(unit.ns() / 1_000_000_000));
}

/// `max(max_over_time(SELECTOR[RANGE]) keep_metric_names) by (__name__)`, `by` labels
/// after the name; in standard PromQL without `keep_metric_names` and the name.
fn push_aggregate(
    out: &mut String,
    rollup: &str,
    metrics: &[&str],
    hosts: &[u32],
    range: &str,
    by: &str,
    standard: bool,
) {
    out.push_str(rollup);
    out.push('(');
    out.push_str(rollup);
    out.push_str("_over_time(");
    push_selector(out, metrics, hosts);
    out.push('[');
    out.push_str(range);
    out.push_str("])");
    if standard {
        out.push(')');
        if !by.is_empty() {
            out.push_str(" by (");
            out.push_str(by);
            out.push(')');
        }
    } else {
        out.push_str(" keep_metric_names) by (__name__");
        if !by.is_empty() {
            out.push_str(", ");
            out.push_str(by);
        }
        out.push(')');
    }
}
