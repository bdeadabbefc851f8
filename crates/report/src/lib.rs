//! tsload-report: what a run says when it ends, read back and merged. One run's report
//! ([`run_report::RunReport`], read and checked once by [`RunReport::read`]) holds its
//! streams' summaries: the write stream's ([`report::Summary`]) and the read stream's
//! ([`query_report::QuerySummary`]), both with rates from [`totals::Totals`]; the HdrHistogram interval log ([`hlog`]); the
//! `--fail-if` thresholds ([`threshold`]); a run's verdict ([`verdict`]); and the merge of
//! shards' reports ([`merge`]); and baselines, a run's figures kept to compare later runs
//! with ([`baseline`]). Core is the engine; this crate is its reports.

pub mod baseline;
pub mod comparison;
pub mod hlog;
pub mod merge;
pub mod query_report;
pub mod report;
pub mod run_report;
pub mod stop;
pub mod stream;
pub mod threshold;
pub mod totals;
pub mod verdict;

#[cfg(test)]
pub(crate) mod fixture;

pub use query_report::{KindSummary, QuerySummary};
pub use run_report::{RunReport, Streams};
pub use stop::StopReasons;
pub use stream::StreamKind;
