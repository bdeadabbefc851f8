//! SQL for ClickHouse, for the table the ClickHouse sink creates: `cpu (ts Int64, <tags>,
//! <fields>)` with `ts` in nanoseconds since the epoch, a MergeTree ordered by the tags
//! and `ts`: SQLite's queries ([`super::sqlite::render_int_ns`]) with ClickHouse's integer
//! division (`intDiv`: its `/` divides as floats) and a lastpoint that keeps each host's
//! rows at its latest `ts`.

use super::Query;
use super::sqlite::{IntNsSql, render_int_ns};

const CLICKHOUSE: IntNsSql = IntNsSql {
    div_open: "intDiv(ts, ",
    div_close: ")",
    lastpoint: "SELECT * FROM cpu WHERE (hostname, ts) IN (SELECT hostname, max(ts) FROM cpu \
                GROUP BY hostname) ORDER BY hostname",
};

pub(super) fn render(q: &Query<'_>, out: &mut String) {
    render_int_ns(q, &CLICKHOUSE, out);
}
