//! Query mode: the read stream alone, after writing the data set first when TSBS's
//! `preload` asks; its report.

use std::sync::Arc;

use tsload_core::engine::{EngineError, RunOutcome, StopReason};
use tsload_core::query::QueryWorkload;
use tsload_core::query_engine::QueryOutcome;
use tsload_core::rusage::Usage;

use tsload_report::run_report::Streams as Reported;

use super::report::Reporter;
use super::{Outcomes, Streams};
use crate::progress::RunObserver;
use crate::queries;
use tsload_scenario::plan::{ProgressMode, QueryPlan, QueryWorkloadPlan};

pub(super) async fn run(
    s: &Streams<'_>,
    q: &QueryPlan,
    workload: Arc<dyn QueryWorkload>,
    observer: &mut RunObserver,
) -> Outcomes {
    let preload = match &q.workload {
        QueryWorkloadPlan::Tsbs { preload: true, .. } => {
            errln!("preload: writing the data set the queries read");
            let mut quiet = RunObserver::new(ProgressMode::None, None, None, String::new());
            let o = crate::run::write_target(
                s.plan,
                s.workload.clone(),
                s.preload_stop.clone(),
                &mut quiet,
                s.run_id,
            )
            .await;
            // The preload's own client cost (the query run's is counted apart).
            Some((o, Usage::now().since(&quiet.usage_at_start)))
        }
        _ => None,
    };
    let preload_failed = matches!(&preload, Some((Err(_), _)))
        || matches!(&preload, Some((Ok(o), _)) if o.fatal.is_some());
    let interrupted = s.preload_stop.reason() == Some(StopReason::Interrupted);
    let query = if preload_failed || interrupted {
        Err(EngineError::Config("the preload did not complete".into()))
    } else {
        queries::run(
            &s.plan.target,
            q,
            workload,
            q.config.clone(),
            s.query_stop.clone(),
            observer,
        )
        .await
    };
    Outcomes::Query { preload, query }
}

pub(super) fn report(
    preload: Option<(Result<RunOutcome, EngineError>, Usage)>,
    query: Result<QueryOutcome, EngineError>,
    usage: &Usage,
    r: &mut Reporter<'_>,
) -> Option<Reported> {
    let preload = preload.and_then(|(p, preload_usage)| {
        let s = r.write_summary(p, &preload_usage, "preload: ")?;
        outln!(
            "preload: {} rows in {:.3} s ({:.0} rows/s)",
            s.rows,
            s.elapsed_s,
            s.rows_per_s
        );
        Some(Box::new(s))
    });
    let query = r.query_summary(query, usage).map(Box::new);
    if let Some(s) = &query {
        out!("{}", s.render_text());
    }
    (query.is_some() || preload.is_some()).then_some(Reported::Query { query, preload })
}
