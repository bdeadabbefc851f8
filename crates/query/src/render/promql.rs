//! PromQL / MetricsQL for VictoriaMetrics, after TSBS's victoriametrics generator: line
//! protocol `cpu,hostname=host_0 usage_user=...` lands as series
//! `cpu_usage_user{hostname="host_0",...}`. The text is the expression of a range query;
//! the parameters are `[start_ms, end_ms, step_seconds]` with the step the bucket width,
//! so each point is the aggregate over the bucket ending at it (`max_over_time(...[1m])`).
//! `keep_metric_names` (MetricsQL) keeps one series per metric where TSBS's
//! `by (__name__)` would merge them (rollup functions drop the name).

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

pub(super) fn render(q: &Query<'_>, out: &mut String, params: &mut Vec<Param>) {
    let unit = q.bucket();
    match q.shape {
        QueryShape::MaxPerBucket => {
            out.push_str("max(max_over_time(");
            push_selector(out, q.metrics, q.hosts);
            out.push('[');
            out.push_str(unit.short());
            out.push_str("]) keep_metric_names) by (__name__)");
        }
        QueryShape::MeanPerBucketAndHost => {
            out.push_str("avg(avg_over_time(");
            push_selector(out, q.metrics, &[]);
            out.push_str("[1h]) keep_metric_names) by (__name__, hostname)");
        }
        // Refused by `Dialect::check` before rendering.
        QueryShape::HighCpu | QueryShape::LastBucketsBeforeEnd | QueryShape::LastPointPerHost => {
            return;
        }
    }
    params.push(Param::Int(q.window.start_ns.div_euclid(1_000_000)));
    params.push(Param::Int(q.window.end_ns.div_euclid(1_000_000)));
    params.push(Param::Int(unit.ns() / 1_000_000_000));
}
