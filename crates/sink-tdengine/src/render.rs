//! SQL for TDengine 3, for the super table the TDengine sink creates: `cpu (ts TIMESTAMP,
//! <fields>) TAGS (<tags>)` with one child table per host (`_ts` is the time column after
//! schemaless writes). Time literals are integers in the database's precision; buckets
//! are `INTERVAL(1m)` / `INTERVAL(1h)` windows (`_wstart`), per host with
//! `PARTITION BY hostname`; lastpoint is `last_row(*)` per host.

use tsload_query::render::{Query, Renderer, push_aggs, push_hostname_in, push_int};
use tsload_query::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

use crate::config::Precision;

/// TSBS's queries in TDengine's SQL, for the database's precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TdengineSql {
    /// Time literals are integers in the database's precision.
    pub precision: Precision,
    /// The data came through schemaless (line protocol) writes: the time column is `_ts`
    /// instead of `ts`.
    pub schemaless: bool,
}

/// Nanoseconds per unit of `p`.
fn unit_ns(p: Precision) -> i64 {
    match p {
        Precision::Ms => 1_000_000,
        Precision::Us => 1_000,
        Precision::Ns => 1,
    }
}

fn ts_column(o: &TdengineSql) -> &'static str {
    if o.schemaless { "_ts" } else { "ts" }
}

/// `ns` in the database's precision (window bounds are whole seconds after the data's
/// start, so exact unless the data starts at a fraction of the unit).
fn push_time(out: &mut String, o: &TdengineSql, ns: i64) {
    push_int(out, ns.div_euclid(unit_ns(o.precision)));
}

fn push_time_range(out: &mut String, o: &TdengineSql, q: &Query<'_>) {
    let ts = ts_column(o);
    out.push_str(ts);
    out.push_str(" >= ");
    push_time(out, o, q.window.start_ns);
    out.push_str(" AND ");
    out.push_str(ts);
    out.push_str(" < ");
    push_time(out, o, q.window.end_ns);
}

fn render_sql(q: &Query<'_>, o: &TdengineSql, out: &mut String) {
    match q.shape {
        QueryShape::MaxPerBucket => {
            out.push_str("SELECT _wstart, ");
            push_aggs(out, "max", q.metrics, None, ", ");
            out.push_str(" FROM cpu WHERE ");
            push_hostname_in(out, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, o, q);
            out.push_str(" INTERVAL(");
            out.push_str(q.bucket().short());
            out.push(')');
        }
        QueryShape::MeanPerBucketAndHost => {
            out.push_str("SELECT _wstart, hostname, ");
            push_aggs(out, "avg", q.metrics, None, ", ");
            out.push_str(" FROM cpu WHERE ");
            push_time_range(out, o, q);
            out.push_str(" PARTITION BY hostname INTERVAL(1h)");
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
            out.push_str("SELECT _wstart, max(usage_user) FROM cpu WHERE ");
            out.push_str(ts_column(o));
            out.push_str(" < ");
            push_time(out, o, q.window.end_ns);
            out.push_str(" INTERVAL(1m) ORDER BY _wstart DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => {
            out.push_str("SELECT last_row(*), hostname FROM cpu PARTITION BY hostname");
        }
    }
}

impl Renderer for TdengineSql {
    fn name(&self) -> &'static str {
        "TDengine"
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
    fn golden_tdengine_ms() {
        check_goldens(
            &Dialect::new(TdengineSql::default()),
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
            false,
        );
    }

    #[test]
    fn golden_tdengine_ns_schemaless() {
        check_goldens(
            &Dialect::new(TdengineSql {
                precision: Precision::Ns,
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
            false,
        );
    }

    #[test]
    fn tdengine_renders_every_query_type() {
        check_every_type(&Dialect::new(TdengineSql::default()), 15);
    }
}
