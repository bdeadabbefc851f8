//! Write mode: the workload into the target; its report.

use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::rusage::Usage;

use tsload_report::run_report::Streams as Reported;

use super::report::Reporter;
use super::{Outcomes, Streams};
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
) -> Option<Reported> {
    let s = r.write_summary(outcome, usage, "")?;
    out!("{}", s.render_text());
    Some(Reported::Write(Box::new(s)))
}
