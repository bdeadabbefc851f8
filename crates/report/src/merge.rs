//! Merging the reports of the shards of one run (write or query) into one report: counts
//! summed, latency histograms merged exactly (never percentiles averaged), rates over the
//! union of the shards' windows, client CPU and memory per shard and summed.
//!
//! Reports come from outside (files), so [`read_report`] reads at most
//! [`MAX_REPORT_BYTES`] and decodes histograms with [`crate::hlog::decode_checked`], and
//! the merge checks every figure it sums or turns into a time: counts are summed with
//! `checked_add` (an overflow names the file and the field), seconds must be finite and
//! within range. Bad input is a [`MergeError`], never a panic or a wrapped sum.

use std::collections::BTreeMap;

use crate::hlog::HistogramError;
use crate::report::{ClientSummary, Summary};
use tsload_core::shard::Shard;

mod check;
mod query;
mod read;
mod render;
mod shards;
mod sums;
mod write;

pub use check::check_intervals;
pub use query::merge_queries;
pub use read::{AnyReport, read_report};
pub use render::RenderText;
pub use write::merge;

/// The largest report [`read_report`] reads (64 MiB); tsload's reports are a few KiB to a
/// few MiB (the scenario and the histograms).
pub const MAX_REPORT_BYTES: u64 = 64 << 20;
/// The longest run a report may state, in seconds (about 31.7 years).
pub const MAX_ELAPSED_S: f64 = 1e9;
/// The most client CPU seconds a report may state (about 31,700 CPU-years).
pub const MAX_CPU_S: f64 = 1e12;
/// The most request kinds a query report may have (tsload's workloads have at most 15).
pub const MAX_KINDS: usize = 1000;
/// The most entries a report's `intervals` may hold (11.6 days of 1 s intervals; a report
/// of [`MAX_REPORT_BYTES`] holds about 200,000).
pub const MAX_INTERVALS: usize = 1_000_000;
/// The longest latency an interval may state, in milliseconds: the longest run.
pub const MAX_LATENCY_MS: f64 = MAX_ELAPSED_S * 1000.0;

/// One shard's report, as read from its JSON: a write [`Summary`] or a [`crate::QuerySummary`].
#[derive(Debug, Clone)]
pub struct ShardReport<S = Summary> {
    /// Where it came from (a file name), for messages.
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
    pub scenario_sha256: Option<String>,
    /// The shard's exit code (`exit.code`; `None` in a report of an older tsload).
    pub exit: Option<i64>,
    pub summary: S,
}

/// What merging needs of either report.
pub trait Report {
    fn target(&self) -> &str;
    fn workload(&self) -> &str;
    fn started_at(&self) -> &str;
    fn elapsed_s(&self) -> f64;
    fn stop_reason(&self) -> &crate::StopReasons;
    fn fatal_error(&self) -> Option<&str>;
    fn errors(&self) -> &BTreeMap<String, u64>;
    /// Refuses figures no run can have: seconds that are not finite or out of range,
    /// negative rates.
    fn validate(&self, file: &str) -> Result<(), MergeError>;
    /// What its shard's line in the merged report shows of it.
    fn shard_figures(&self) -> ShardFigures;
}

/// A shard's own figures, as its line in the merged report shows them.
pub struct ShardFigures {
    /// Write reports: rows written; query reports: result rows read.
    pub rows: u64,
    pub rows_per_s: f64,
    pub requests: u64,
    pub ambiguous_rows: u64,
    pub ledger_run_id: Option<i64>,
    /// What the server stored of the shard's own devices (rows, else samples).
    pub stored: Option<u64>,
    pub client: ClientSummary,
}

impl<S> ShardReport<S> {
    /// The same shard's report with `summary` for its summary.
    pub fn with<T>(self, summary: T) -> ShardReport<T> {
        ShardReport {
            source: self.source,
            shard: self.shard,
            host: self.host,
            scenario_sha256: self.scenario_sha256,
            exit: self.exit,
            summary,
        }
    }
}

impl<S: Report> Merged<S> {
    /// The merged report of `reports` whose sums are `summary`: each shard's line beside
    /// it.
    fn of(summary: S, reports: &[ShardReport<S>]) -> Merged<S> {
        Merged {
            summary,
            shards: reports.iter().map(ShardReport::line).collect(),
            scenario_sha256: reports.first().and_then(|r| r.scenario_sha256.clone()),
        }
    }
}

impl<S: Report> ShardReport<S> {
    /// Its line in the merged report, as its own report says it.
    pub fn line(&self) -> ShardLine {
        let f = self.summary.shard_figures();
        ShardLine {
            source: self.source.clone(),
            shard: self.shard,
            host: self.host.clone(),
            exit: self.exit,
            started_at: self.summary.started_at().to_string(),
            elapsed_s: self.summary.elapsed_s(),
            stop_reason: self.summary.stop_reason().clone(),
            fatal_error: self.summary.fatal_error().map(str::to_string),
            rows: f.rows,
            rows_per_s: f.rows_per_s,
            requests: f.requests,
            ambiguous_rows: f.ambiguous_rows,
            ledger_run_id: f.ledger_run_id,
            stored: f.stored,
            client: f.client,
        }
    }
}

/// The [`Report`] methods both summaries have alike (their fields have the same names),
/// `$validate` the check of its figures.
macro_rules! report_fields {
    ($validate:path) => {
        fn target(&self) -> &str {
            &self.target
        }
        fn workload(&self) -> &str {
            &self.workload
        }
        fn started_at(&self) -> &str {
            &self.started_at
        }
        fn elapsed_s(&self) -> f64 {
            self.elapsed_s
        }
        fn stop_reason(&self) -> &crate::StopReasons {
            &self.stop_reason
        }
        fn fatal_error(&self) -> Option<&str> {
            self.fatal_error.as_deref()
        }
        fn errors(&self) -> &BTreeMap<String, u64> {
            &self.errors
        }
        fn validate(&self, file: &str) -> Result<(), MergeError> {
            $validate(self, file)
        }
    };
}
use report_fields;

/// One shard's line in the merged report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShardLine {
    pub source: String,
    pub shard: Option<Shard>,
    pub host: Option<String>,
    /// The shard's exit code (0 passed); a shard that failed is in the sums all the same,
    /// and the merged text says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i64>,
    pub started_at: String,
    pub elapsed_s: f64,
    pub stop_reason: crate::StopReasons,
    pub fatal_error: Option<String>,
    /// Write reports: rows written; query reports: result rows read.
    pub rows: u64,
    pub rows_per_s: f64,
    pub requests: u64,
    pub ambiguous_rows: u64,
    pub ledger_run_id: Option<i64>,
    /// What the server says it stored of the shard's own devices (rows, else samples);
    /// `None`: not asked, not known, or a query report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<u64>,
    pub client: ClientSummary,
}

/// The merged report.
#[derive(Debug, Clone)]
pub struct Merged<S = Summary> {
    /// The whole run: sums, merged histograms, rates over the union window, client
    /// figures summed over the shards.
    pub summary: S,
    pub shards: Vec<ShardLine>,
    pub scenario_sha256: Option<String>,
}

/// Reports that cannot be merged into one honest report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("no reports to merge")]
    Empty,
    #[error(
        "{file}: {what} has no histogram ('hdr'), so its percentiles cannot be merged; rerun with a tsload that writes them"
    )]
    NoHistogram { file: String, what: String },
    #[error(
        "{file}: {field} is '{value}', but {first} has '{expected}': these are not shards of one run"
    )]
    Mismatch {
        file: String,
        field: String,
        value: String,
        first: String,
        expected: String,
    },
    #[error(
        "{file}: no shard recorded (it ran the whole workload, not a part: run with --shard I/N)"
    )]
    NoShard { file: String },
    #[error("{file} and {other} are both shard {shard}")]
    DuplicateShard {
        file: String,
        other: String,
        shard: Shard,
    },
    #[error(
        "shards {missing} of {count} are missing (the reports cover only part of the run); \
         --allow-partial merges what is there"
    )]
    MissingShards { missing: String, count: u32 },
    #[error("{file}: started_at '{value}' is not an RFC 3339 time")]
    BadTime { file: String, value: String },
    #[error("{file}: {field} is {value}; allowed: {allowed}")]
    OutOfRange {
        file: String,
        field: String,
        value: String,
        allowed: String,
    },
    #[error(
        "{file}: {field} is {value}, and the reports before it sum to {before}: the total passes {max}, the most it can hold, so these cannot be the counts of one run"
    )]
    Overflow {
        file: String,
        field: String,
        value: u64,
        before: u64,
        max: u64,
    },
    #[error(
        "{file}: {field} is {value}, and the sum over the reports before it is {before}: the total is not a finite number"
    )]
    NotFinite {
        file: String,
        field: String,
        value: String,
        before: String,
    },
    #[error(
        "{file}: larger than {cap} bytes, the most a report is read (tsload's reports are a few KiB to a few MiB)"
    )]
    TooLarge { file: String, cap: u64 },
    #[error("{file}: {field}: not an encoded histogram: {source}")]
    BadHistogram {
        file: String,
        field: String,
        #[source]
        source: HistogramError,
    },
    #[error("{file}: {reason}")]
    NotAReport { file: String, reason: String },
}

#[cfg(test)]
mod tests;
