//! Query mode: the read stream alone, after writing the data set first when TSBS's
//! `preload` asks; its report.

use std::sync::Arc;

use tsload_core::engine::{EngineError, RunOutcome, StopReason};
use tsload_core::query::QueryWorkload;
use tsload_core::query_engine::QueryOutcome;
use tsload_core::rusage::Usage;

use super::report::{Reporter, to_map};
use super::{Executed, Outcomes, Streams};
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
    executed: &mut Executed,
) -> anyhow::Result<()> {
    if let Some((p, preload_usage)) = preload
        && let Some(s) = r.write_summary(p, &preload_usage, "preload: ")
    {
        outln!(
            "preload: {} rows in {:.3} s ({:.0} rows/s)",
            s.rows,
            s.elapsed_s,
            s.rows_per_s
        );
        r.json.insert("preload".into(), serde_json::to_value(&s)?);
    }
    executed.query_summary = r.query_summary(query, usage);
    if let Some(s) = &executed.query_summary {
        out!("{}", s.render_text());
        let mut m = to_map(serde_json::to_value(s)?);
        m.append(&mut r.json);
        r.json = m;
    }
    Ok(())
}
