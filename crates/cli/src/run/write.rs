//! Write mode: the workload into the target; its report.

use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::rusage::Usage;

use super::report::{Reporter, to_map};
use super::{Executed, Outcomes, Streams};
use crate::progress::RunObserver;

pub(super) async fn run(s: &Streams<'_>, observer: &mut RunObserver) -> Outcomes {
    Outcomes::Write(
        crate::run::write_target(
            s.plan,
            s.workload.clone(),
            s.write_stop.clone(),
            observer,
            s.run_id,
        )
        .await,
    )
}

pub(super) fn report(
    outcome: Result<RunOutcome, EngineError>,
    usage: &Usage,
    r: &mut Reporter<'_>,
    executed: &mut Executed,
) -> anyhow::Result<()> {
    executed.summary = r.write_summary(outcome, usage, "");
    if let Some(s) = &executed.summary {
        out!("{}", s.render_text());
        r.json = to_map(serde_json::to_value(s)?);
    }
    Ok(())
}
