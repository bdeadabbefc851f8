//! SQL for TDengine 3, for the super table the TDengine sink creates: `cpu (ts TIMESTAMP,
//! <fields>) TAGS (<tags>)` with one child table per host (`_ts` is the time column after
//! schemaless writes). Time literals are integers in the database's precision; buckets
//! are `INTERVAL(1m)` / `INTERVAL(1h)` windows (`_wstart`), per host with
//! `PARTITION BY hostname`; lastpoint is `last_row(*)` per host.

use super::{Query, TdengineOptions, push_aggs, push_hostname_in, push_int};
use crate::types::{GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

fn ts_column(o: &TdengineOptions) -> &'static str {
    if o.schemaless { "_ts" } else { "ts" }
}

/// `ns` in the database's precision (window bounds are whole seconds after the data's
/// start, so exact unless the data starts at a fraction of the unit).
fn push_time(out: &mut String, o: &TdengineOptions, ns: i64) {
    push_int(out, ns.div_euclid(o.precision.ns()));
}

fn push_time_range(out: &mut String, o: &TdengineOptions, q: &Query<'_>) {
    let ts = ts_column(o);
    out.push_str(ts);
    out.push_str(" >= ");
    push_time(out, o, q.window.start_ns);
    out.push_str(" AND ");
    out.push_str(ts);
    out.push_str(" < ");
    push_time(out, o, q.window.end_ns);
}

pub(super) fn render(q: &Query<'_>, o: &TdengineOptions, out: &mut String) {
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
