//! SQL for PostgreSQL / TimescaleDB, after TSBS's timescaledb generator, for the tables the
//! PostgreSQL sink creates: `cpu ("ts" timestamptz, <tags>, <fields>)` (wide layout) or
//! `cpu ("ts", "tags_id", <fields>)` plus `tags ("id", <tags>)` (tags layout).

use super::{
    PgLayout, PostgresOptions, Query, push_aggs, push_hostname_in, push_int, push_rfc3339_literal,
};
use crate::types::{BucketUnit, GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// `time_bucket('1 minute', ts)` or `date_trunc('minute', ts, 'UTC')`.
fn push_bucket(out: &mut String, o: &PostgresOptions, unit: BucketUnit) {
    if o.time_bucket {
        out.push_str("time_bucket('1 ");
        out.push_str(unit.word());
        out.push_str("', ts)");
    } else {
        out.push_str("date_trunc('");
        out.push_str(unit.word());
        out.push_str("', ts, 'UTC')");
    }
}

/// The host filter: `hostname IN (...)` or `tags_id IN (SELECT id FROM tags WHERE
/// hostname IN (...))`.
fn push_hosts(out: &mut String, o: &PostgresOptions, hosts: &[u32]) {
    match o.layout {
        PgLayout::Wide => push_hostname_in(out, hosts),
        PgLayout::TagsTable => {
            out.push_str("tags_id IN (SELECT id FROM tags WHERE ");
            push_hostname_in(out, hosts);
            out.push(')');
        }
    }
}

fn push_time_range(out: &mut String, q: &Query<'_>) {
    out.push_str("ts >= ");
    push_rfc3339_literal(out, q.window.start_ns);
    out.push_str(" AND ts < ");
    push_rfc3339_literal(out, q.window.end_ns);
}

pub(super) fn render(q: &Query<'_>, o: &PostgresOptions, out: &mut String) {
    let threshold = format!("{HIGH_CPU_THRESHOLD:.1}");
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
            push_hosts(out, o, q.hosts);
            out.push_str(" AND ");
            push_time_range(out, q);
            out.push_str(" GROUP BY ");
            out.push_str(unit.word());
            out.push_str(" ORDER BY ");
            out.push_str(unit.word());
        }
        QueryShape::MeanPerBucketAndHost => match o.layout {
            PgLayout::Wide => {
                out.push_str("SELECT ");
                push_bucket(out, o, BucketUnit::Hour);
                out.push_str(" AS hour, hostname, ");
                push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
                out.push_str(" FROM cpu WHERE ");
                push_time_range(out, q);
                out.push_str(" GROUP BY hour, hostname ORDER BY hour, hostname");
            }
            PgLayout::TagsTable => {
                out.push_str("WITH cpu_avg AS (SELECT ");
                push_bucket(out, o, BucketUnit::Hour);
                out.push_str(" AS hour, tags_id, ");
                push_aggs(out, "avg", q.metrics, Some("mean"), ", ");
                out.push_str(" FROM cpu WHERE ");
                push_time_range(out, q);
                out.push_str(" GROUP BY hour, tags_id) SELECT hour, tags.hostname");
                for m in q.metrics {
                    out.push_str(", mean_");
                    out.push_str(m);
                }
                out.push_str(
                    " FROM cpu_avg JOIN tags ON cpu_avg.tags_id = tags.id \
                     ORDER BY hour, tags.hostname",
                );
            }
        },
        QueryShape::HighCpu => {
            out.push_str("SELECT * FROM cpu WHERE usage_user > ");
            out.push_str(&threshold);
            out.push_str(" AND ");
            push_time_range(out, q);
            if !q.hosts.is_empty() {
                out.push_str(" AND ");
                push_hosts(out, o, q.hosts);
            }
        }
        QueryShape::LastBucketsBeforeEnd => {
            out.push_str("SELECT ");
            push_bucket(out, o, BucketUnit::Minute);
            out.push_str(" AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ts < ");
            push_rfc3339_literal(out, q.window.end_ns);
            out.push_str(" GROUP BY minute ORDER BY minute DESC LIMIT ");
            push_int(out, GROUPBY_ORDERBY_LIMIT_ROWS as i64);
        }
        QueryShape::LastPointPerHost => match o.layout {
            PgLayout::Wide => {
                out.push_str("SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, ts DESC");
            }
            PgLayout::TagsTable => out.push_str(
                "SELECT DISTINCT ON (t.hostname) * FROM tags t INNER JOIN LATERAL \
                 (SELECT * FROM cpu c WHERE c.tags_id = t.id ORDER BY ts DESC LIMIT 1) AS b \
                 ON true ORDER BY t.hostname, b.ts DESC",
            ),
        },
    }
}
