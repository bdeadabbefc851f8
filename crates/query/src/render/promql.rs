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

use super::{Query, Renderer};
use crate::types::{QueryShape, QueryType};

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

fn render(q: &Query<'_>, standard: bool, out: &mut String, params: &mut Vec<Param>) {
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

/// PromQL over the series line protocol lands as (`cpu_<field>{hostname=...}`): the text
/// is the expression, the parameters `[Int(start_ms), Int(end_ms), Int(step_seconds)]` of
/// `/api/v1/query_range`. Shared by the kinds whose servers speak it: VictoriaMetrics
/// (through the influx kind) and Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromQl {
    /// Prometheus' own PromQL, without MetricsQL's extensions (`keep_metric_names`),
    /// which VictoriaMetrics also takes.
    pub standard: bool,
}

impl PromQl {
    /// MetricsQL, as VictoriaMetrics speaks it.
    pub const METRICSQL: PromQl = PromQl { standard: false };
    /// Standard PromQL, as Prometheus speaks it.
    pub const PROMETHEUS: PromQl = PromQl { standard: true };
}

impl Renderer for PromQl {
    fn name(&self) -> &'static str {
        if self.standard {
            "PromQL (Prometheus)"
        } else {
            "PromQL"
        }
    }

    fn unsupported_reason(&self, query_type: QueryType) -> Option<&'static str> {
        match query_type.shape() {
            QueryShape::HighCpu => Some(
                "PromQL selects series samples, not the rows with usage_user > 90 with all \
                 their columns (TSBS's VictoriaMetrics generator leaves it out too)",
            ),
            QueryShape::LastBucketsBeforeEnd => Some(
                "PromQL has no ORDER BY ... LIMIT over time buckets (TSBS's VictoriaMetrics \
                 generator leaves it out too)",
            ),
            QueryShape::LastPointPerHost => Some(
                "PromQL has no row of all columns per host (TSBS's VictoriaMetrics generator \
                 leaves it out too)",
            ),
            _ => None,
        }
    }

    fn render(&self, q: &Query<'_>, text: &mut String, params: &mut Vec<Param>) {
        render(q, self.standard, text, params);
    }
}
