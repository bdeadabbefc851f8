//! Read runs: builds the `[query]` workload (TSBS devops queries in the target's own
//! language, or sysbench-shaped OLTP transactions) and the read target of `[target]`, and
//! drives core's query engine. Like `targets`, the one place that knows every read target.

use std::sync::Arc;

use tsload_core::engine::{EngineError, Observer, StopHandle};
use tsload_core::query::{QueryRequest, QuerySource, QueryWorkload};
use tsload_core::query_engine::{QueryConfig, QueryOutcome};
use tsload_query::{Dialect, TsbsQueries, TsbsQueriesConfig};

use tsload_scenario::plan::{Plan, QueryPlan, QueryWorkloadPlan, TargetPlan};

/// The query language `query.dialect` chose, for a target that speaks several.
fn language(q: &QueryPlan) -> Option<&str> {
    match &q.workload {
        QueryWorkloadPlan::Tsbs { dialect, .. } => dialect.as_deref(),
        QueryWorkloadPlan::Oltp { .. } => None,
    }
}

/// The TSBS query language that matches what the target's sink wrote.
fn tsbs_dialect(target: &TargetPlan, q: &QueryPlan, time_bucket: bool) -> Result<Dialect, String> {
    target
        .reads_or_why()?
        .tsbs_dialect(language(q), time_bucket)
}

/// The read workload of the plan's `[query]` section.
pub fn build(plan: &Plan) -> Result<Arc<dyn QueryWorkload>, String> {
    build_part(plan, plan)
}

/// The read workload of `part`, this process's part of `whole` ([`crate::shard::split`]).
/// TSBS queries are numbered over the whole run: `whole`'s `query.queries` is their limit,
/// and a shard's workload (`tsload_core::query::ShardedQueries`) runs its block of them.
/// (`part`'s `query.queries`, the shard's share, is what its engine counts to.)
pub fn build_part(whole: &Plan, part: &Plan) -> Result<Arc<dyn QueryWorkload>, String> {
    let plan = part;
    let q = plan
        .query
        .as_ref()
        .ok_or_else(|| format!("{}: the scenario has no [query] section", plan.source))?;
    let at = |e: String| format!("{}: [query]: {e}", plan.source);
    match &q.workload {
        QueryWorkloadPlan::Tsbs {
            data,
            seed,
            types,
            time_bucket,
            ..
        } => {
            let dialect = tsbs_dialect(&plan.target, q, *time_bucket).map_err(at)?;
            let mut cfg =
                TsbsQueriesConfig::new(*seed, data.scale, data.start_ns, data.end_ns, dialect);
            cfg.types = types.clone();
            cfg.queries = whole
                .query
                .as_ref()
                .map_or(q.config.requests, |w| w.config.requests);
            let w = TsbsQueries::new(cfg).map_err(|e| {
                at(format!(
                    "{e} (the queries read the data set [workload] describes: scale {}, {} to {})",
                    data.scale,
                    tsload_query::rfc3339(data.start_ns),
                    tsload_query::rfc3339(data.end_ns)
                ))
            })?;
            Ok(Arc::new(w))
        }
        QueryWorkloadPlan::Oltp { config, prepare } => {
            let w = tsload_oltp::Oltp::new(config.clone()).map_err(|e| at(e.to_string()))?;
            if *prepare {
                Ok(Arc::new(w))
            } else {
                Ok(Arc::new(Prepared(w)))
            }
        }
    }
}

/// An OLTP workload over tables prepared earlier (`prepare = false`): no setup, no load.
struct Prepared(tsload_oltp::Oltp);

impl QueryWorkload for Prepared {
    fn kinds(&self) -> &[String] {
        self.0.kinds()
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn QuerySource> {
        self.0.source(worker, workers)
    }

    fn setup(&self) -> Vec<QueryRequest> {
        Vec::new()
    }
}

/// Runs `workload` against the read target of `target`.
pub async fn run(
    target: &TargetPlan,
    q: &QueryPlan,
    workload: Arc<dyn QueryWorkload>,
    cfg: QueryConfig,
    stop: StopHandle,
    observer: &mut dyn Observer,
) -> Result<QueryOutcome, EngineError> {
    let reads = target.reads_or_why().map_err(|why| {
        EngineError::Prepare(tsload_core::SinkError::new(
            tsload_core::ErrorKind::Schema,
            why,
        ))
    })?;
    reads
        .query(tsload_target::QueryRun {
            language: language(q),
            workload,
            cfg,
            stop,
            observer,
        })
        .await
}
