//! Target dispatch: the one place that knows every sink crate. The registry of kinds
//! defined through `tsload_target` ([`KINDS`]); the kinds not moved there yet are matched
//! here by hand.

use std::sync::Arc;

use tsload_core::Workload;
use tsload_core::engine::{EngineError, Observer, RunOutcome, StopHandle};

use crate::plan::Plan;

/// Every kind defined in its own crate through `tsload_target::TargetKind`: adding one is
/// a line here.
pub static KINDS: &[&dyn tsload_target::TargetKind] = &[
    &tsload_target::NullKind,
    &tsload_sink_sqlite::KIND,
    &tsload_sink_postgres::KIND,
    &tsload_sink_mysql::KIND,
    &tsload_sink_influx::KIND,
    #[cfg(feature = "tdengine")]
    &tsload_sink_tdengine::KIND,
];

/// The registered kind named `name`.
pub fn kind(name: &str) -> Option<&'static dyn tsload_target::TargetKind> {
    KINDS.iter().copied().find(|k| k.name() == name)
}

/// Runs the plan's load against its target; `run_id` identifies this run's batches in
/// the ledger of an exactly-once target (fresh for every run: [`tsload_core::new_run_id`]).
pub async fn run(
    plan: &Plan,
    workload: Arc<dyn Workload>,
    stop: StopHandle,
    observer: &mut dyn Observer,
    run_id: i64,
) -> Result<RunOutcome, EngineError> {
    plan.target
        .write(tsload_target::WriteRun {
            workload,
            load: plan.load.clone(),
            stop,
            observer,
            run_id,
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sections::TARGET;

    /// While the reference is still rendered from `scenario/sections.rs`, a registered
    /// kind's own key list and the reference's must name the same keys with the same
    /// types.
    #[test]
    fn each_registered_kind_reads_the_keys_the_reference_gives_it() {
        for kind in KINDS {
            let mut own: Vec<&str> = kind.keys().iter().map(|k| k.name).collect();
            // `influx` is split by `api` in the reference: `influx v1`, `influx v2`.
            let mut reference: Vec<&str> = TARGET
                .kinds
                .iter()
                .filter(|k| **k == kind.name() || k.starts_with(&format!("{} ", kind.name())))
                .flat_map(|k| TARGET.keys_of(k))
                .collect();
            reference.dedup();
            own.sort_unstable();
            reference.sort_unstable();
            reference.dedup();
            assert_eq!(own, reference, "kind {}", kind.name());
            for key in kind.keys() {
                let doc = TARGET.keys.iter().find(|k| k.name == key.name).unwrap();
                if doc
                    .kinds
                    .iter()
                    .all(|k| k.split(' ').next() == Some(kind.name()))
                {
                    assert_eq!(doc.ty, key.ty, "{}.{}", kind.name(), key.name);
                }
            }
        }
    }
}
