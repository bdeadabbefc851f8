//! Reading one shard's `--json` report from outside: through [`RunReport::read`] (its
//! size capped, its histograms decoded checked, its figures and intervals checked), then
//! what a merge takes of it, a write or a query run.

use crate::query_report::QuerySummary;
use crate::report::Summary;
use crate::run_report::{RunReport, Streams};

use super::{MergeError, ShardReport};

/// A shard's report of either kind, as [`read_report`] found it (boxed: a write report
/// is larger than a query report).
#[derive(Debug, Clone)]
pub enum AnyReport {
    Write(Box<ShardReport<Summary>>),
    Query(Box<ShardReport<QuerySummary>>),
}

/// Reads one shard's `--json` report (`source` names it in errors) with
/// [`RunReport::read`], which refuses a report no run can write by name before anything
/// sums or draws it; a mixed run's report, a query run's whose queries did not run, and
/// an already merged report are refused here.
pub fn read_report(source: &str, bytes: &[u8]) -> Result<AnyReport, MergeError> {
    let not = |reason: &str| MergeError::NotAReport {
        file: source.to_string(),
        reason: reason.to_string(),
    };
    let report = RunReport::read(source, bytes)?;
    let RunReport {
        streams,
        host,
        scenario_sha256,
        shard,
        exit,
        ..
    } = report;
    let head = ShardReport {
        source: source.to_string(),
        shard,
        host,
        scenario_sha256,
        exit: exit.map(|e| e.code),
        summary: (),
    };
    match streams {
        Streams::Write(summary) => Ok(AnyReport::Write(Box::new(head.with(*summary)))),
        Streams::Query {
            query: Some(summary),
            ..
        } => Ok(AnyReport::Query(Box::new(head.with(*summary)))),
        Streams::Query { query: None, .. } => Err(not(
            "a query run's report whose queries did not run: nothing to merge",
        )),
        Streams::Mixed(_) => Err(not(
            "a mixed report; mixed runs are not sharded, so there is nothing to merge",
        )),
    }
}
