//! SQL for MySQL / MariaDB, for the wide table the MySQL sink creates: `cpu (ts, <tags>,
//! <fields>)` with `ts` `DATETIME(6)` (the UTC wall clock) or `BIGINT` nanoseconds.
//! Buckets are computed without the session time zone (`DATE_FORMAT` of the stored wall
//! clock, or integer division); MySQL has no `DISTINCT ON`, so lastpoint joins each
//! host's latest `ts`.

use super::{MysqlOptions, MysqlTs, Query, push_aggs, push_hostname_in, push_int};
use crate::types::{BucketUnit, GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

fn push_bucket(out: &mut String, o: &MysqlOptions, unit: BucketUnit) {
    match o.ts {
        MysqlTs::DateTime => out.push_str(match unit {
            BucketUnit::Minute => "DATE_FORMAT(ts, '%Y-%m-%d %H:%i:00')",
            BucketUnit::Hour => "DATE_FORMAT(ts, '%Y-%m-%d %H:00:00')",
        }),
        MysqlTs::BigIntNs => {
            out.push_str("ts DIV ");
            push_int(out, unit.ns());
            out.push_str(" * ");
            push_int(out, unit.ns());
        }
    }
}

fn push_time(out: &mut String, o: &MysqlOptions, ns: i64) {
    match o.ts {
        MysqlTs::DateTime => {
            out.push('\'');
            crate::time::push_sql_datetime(out, ns);
            out.push('\'');
        }
        MysqlTs::BigIntNs => push_int(out, ns),
    }
}

fn push_time_range(out: &mut String, o: &MysqlOptions, q: &Query<'_>) {
    out.push_str("ts >= ");
    push_time(out, o, q.window.start_ns);
    out.push_str(" AND ts < ");
    push_time(out, o, q.window.end_ns);
}

pub(super) fn render(q: &Query<'_>, o: &MysqlOptions, out: &mut String) {
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
