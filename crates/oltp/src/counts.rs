//! Statements per request, split as sysbench's report splits its "queries": reads, writes
//! and other (BEGIN and COMMIT).
//!
//! sysbench counts every statement it sends, BEGIN and COMMIT included (as "other"), and
//! reports `queries = read + write + other` and QPS from that. tsload's `QueryAck`
//! counts statements without BEGIN and COMMIT. So, for a run of `n` requests:
//! - sysbench-comparable queries = `n * StatementCounts::queries()`
//!   (`oltp_read_write` by default: 14 reads + 4 writes + 2 other = 20 per transaction);
//! - the statements tsload executed = `n * StatementCounts::statements()` (18).
//!
//! sysbench's drivers classify by result, not by text: a statement returning rows is a
//! read; one without rows is a write if it changed rows, else "other". In the steady
//! state every UPDATE/DELETE/INSERT of these tests finds its row, so the split here is
//! what sysbench prints; an UPDATE or DELETE of an id missing at that moment (another
//! worker's DELETE + INSERT in flight) is a write here and "other" in sysbench.

use crate::config::{OltpConfig, OltpKind};

/// Statements of one request of a workload, by sysbench's categories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatementCounts {
    /// SELECTs.
    pub reads: u64,
    /// UPDATEs, DELETEs and INSERTs.
    pub writes: u64,
    /// BEGIN and COMMIT: 2 per explicit transaction, else 0.
    pub other: u64,
}

impl StatementCounts {
    /// Statements in the request itself (what `QueryAck::statements` counts).
    pub fn statements(&self) -> u64 {
        self.reads + self.writes
    }

    /// sysbench's "queries" per transaction: reads + writes + other.
    pub fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }
}

/// The statements per request (one transaction, or one statement for
/// `oltp_point_select` and `oltp_insert`) of `config`.
pub fn statement_counts(config: &OltpConfig) -> StatementCounts {
    let ranges = if config.range_selects {
        u64::from(config.simple_ranges)
            + u64::from(config.sum_ranges)
            + u64::from(config.order_ranges)
            + u64::from(config.distinct_ranges)
    } else {
        0
    };
    let reads = u64::from(config.point_selects) + ranges;
    let other = if config.skip_trx { 0 } else { 2 };
    match config.kind {
        OltpKind::ReadWrite => StatementCounts {
            reads,
            writes: u64::from(config.index_updates)
                + u64::from(config.non_index_updates)
                + 2 * u64::from(config.delete_inserts),
            other,
        },
        OltpKind::ReadOnly => StatementCounts {
            reads,
            writes: 0,
            other,
        },
        OltpKind::PointSelect => StatementCounts {
            reads: 1,
            writes: 0,
            other: 0,
        },
        OltpKind::Insert => StatementCounts {
            reads: 0,
            writes: 1,
            other: 0,
        },
    }
}
