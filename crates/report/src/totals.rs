//! A run's totals: the counts that reports turn into rates, and the seconds they took.
//!
//! The write report ([`Summary`](crate::report::Summary)), the query report
//! ([`QuerySummary`](crate::query_report::QuerySummary), each of its kinds) and the merge
//! of shards' reports ([`crate::merge`]) all derive their rates from [`Totals`].

use std::fmt;

use tsload_core::recorder::Counters;

/// What a run (or the shards of one run) counted, and over how many seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Requests that succeeded.
    pub requests: u64,
    /// Rows written (write runs) or result rows read (query runs).
    pub rows: u64,
    /// Metrics written (write runs) or statements executed (query runs).
    pub metrics: u64,
    /// Bytes written (write runs; 0 in query runs).
    pub bytes: u64,
    /// Seconds over which the counts were made.
    pub elapsed_s: f64,
}

/// One count of [`Totals`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Requests,
    Rows,
    Metrics,
    Bytes,
}

impl Count {
    /// The count's field name in [`Totals`]: `requests`, `rows`, `metrics`, `bytes`.
    pub fn name(self) -> &'static str {
        match self {
            Count::Requests => "requests",
            Count::Rows => "rows",
            Count::Metrics => "metrics",
            Count::Bytes => "bytes",
        }
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Totals whose sum does not fit a `u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{count} is {value}, and the totals before it are {before}: the sum passes {}",
    u64::MAX
)]
pub struct TotalsOverflow {
    /// The count that overflowed (the first of requests, rows, metrics, bytes that did).
    pub count: Count,
    /// The count of the totals being added.
    pub value: u64,
    /// The count of the totals added to.
    pub before: u64,
}

impl Totals {
    /// A run's counters, counted over `elapsed_s` seconds.
    pub fn from_counters(counters: &Counters, elapsed_s: f64) -> Self {
        Totals {
            requests: counters.requests,
            rows: counters.rows,
            metrics: counters.metrics,
            bytes: counters.bytes,
            elapsed_s,
        }
    }

    /// `count` per second of [`Totals::elapsed_s`]; 0 when no time passed.
    pub fn per_s(&self, count: u64) -> f64 {
        if self.elapsed_s > 0.0 {
            count as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    /// Requests that succeeded per second (TPS when requests are transactions).
    pub fn requests_per_s(&self) -> f64 {
        self.per_s(self.requests)
    }

    /// Rows per second.
    pub fn rows_per_s(&self) -> f64 {
        self.per_s(self.rows)
    }

    /// Metrics (write runs) or statements (query runs, QPS) per second.
    pub fn metrics_per_s(&self) -> f64 {
        self.per_s(self.metrics)
    }

    /// Megabytes (10^6 bytes) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.per_s(self.bytes) / 1e6
    }

    /// Adds `other`'s counts to these (the shards of one run). [`Totals::elapsed_s`] stays
    /// as it is: the shards' time together is the union of their windows, which needs
    /// their start times, so it is the caller's to set. On an overflow nothing is added.
    pub fn merge(&mut self, other: &Totals) -> Result<(), TotalsOverflow> {
        let add = |count, before: u64, value: u64| {
            before.checked_add(value).ok_or(TotalsOverflow {
                count,
                value,
                before,
            })
        };
        let requests = add(Count::Requests, self.requests, other.requests)?;
        let rows = add(Count::Rows, self.rows, other.rows)?;
        let metrics = add(Count::Metrics, self.metrics, other.metrics)?;
        let bytes = add(Count::Bytes, self.bytes, other.bytes)?;
        (self.requests, self.rows, self.metrics, self.bytes) = (requests, rows, metrics, bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_counts_per_second_and_zero_without_time() {
        let t = Totals {
            requests: 5,
            rows: 50,
            metrics: 10,
            bytes: 3_000_000,
            elapsed_s: 2.0,
        };
        assert_eq!(t.requests_per_s(), 2.5);
        assert_eq!(t.rows_per_s(), 25.0);
        assert_eq!(t.metrics_per_s(), 5.0);
        assert_eq!(t.mb_per_s(), 1.5);
        assert_eq!(t.per_s(7), 3.5);
        let none = Totals {
            elapsed_s: 0.0,
            ..t
        };
        assert_eq!(none.rows_per_s(), 0.0);
        assert_eq!(none.mb_per_s(), 0.0);
    }

    #[test]
    fn merged_totals_add_counts_and_keep_their_seconds() {
        let mut t = Totals {
            requests: 1,
            rows: 10,
            metrics: 100,
            bytes: 1000,
            elapsed_s: 1.5,
        };
        let shard = Totals {
            requests: 2,
            rows: 20,
            metrics: 200,
            bytes: 2000,
            elapsed_s: 1.0,
        };
        t.merge(&shard).unwrap();
        assert_eq!(
            t,
            Totals {
                requests: 3,
                rows: 30,
                metrics: 300,
                bytes: 3000,
                elapsed_s: 1.5,
            }
        );
        assert_eq!(t.rows_per_s(), 20.0);
    }

    #[test]
    fn an_overflow_names_the_count_and_adds_nothing() {
        let mut t = Totals {
            requests: 1,
            metrics: u64::MAX,
            ..Totals::default()
        };
        let before = t;
        let e = t
            .merge(&Totals {
                requests: 1,
                metrics: 2,
                ..Totals::default()
            })
            .unwrap_err();
        assert_eq!(
            e,
            TotalsOverflow {
                count: Count::Metrics,
                value: 2,
                before: u64::MAX,
            }
        );
        assert_eq!(
            e.to_string(),
            "metrics is 2, and the totals before it are 18446744073709551615: the sum passes \
             18446744073709551615"
        );
        assert_eq!(t, before);
    }
}
