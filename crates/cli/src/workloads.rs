//! Plan -> Workload: builds the generator a scenario names, and describes a data set for
//! `tsload validate`. Errors point back at the scenario's key (and line, for columns).

use std::sync::Arc;

use serde_json::{Value, json};
use tsload_core::Workload;
use tsload_workload::{
    ColumnList, CpuOnly, Custom, Devops, FileReplay, Iot, ReplayInput, ReplayOptions, WorkloadError,
};

use crate::plan::{Plan, WorkloadPlan};
use crate::scenario::ScenarioError;

/// Builds the plan's workload.
pub fn build(plan: &Plan) -> Result<Arc<dyn Workload>, ScenarioError> {
    let located = |e: WorkloadError| {
        if e.key == "file" {
            // The replayed file's own errors name that file and line already.
            return ScenarioError {
                file: plan.source.clone(),
                line: None,
                key: Some("workload.path".into()),
                message: e.message,
            };
        }
        let line = match (&plan.workload, e.column) {
            (
                WorkloadPlan::Custom {
                    column_lines,
                    tag_lines,
                    ..
                },
                Some((list, i)),
            ) => match list {
                ColumnList::Columns => column_lines.get(i).copied(),
                ColumnList::Tags => tag_lines.get(i).copied(),
            },
            _ => None,
        };
        ScenarioError {
            file: plan.source.clone(),
            line,
            key: Some(format!("workload.{}", e.key)),
            message: e.message,
        }
    };
    Ok(match &plan.workload {
        WorkloadPlan::File { path, precision } => {
            let input = if path == "-" {
                ReplayInput::Stdin
            } else {
                ReplayInput::Path(path.into())
            };
            let precision_ns = match precision.as_str() {
                "us" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                _ => 1,
            };
            Arc::new(FileReplay::open(input, ReplayOptions { precision_ns }).map_err(located)?)
        }
        WorkloadPlan::CpuOnly(t) => Arc::new(CpuOnly::new(*t).map_err(located)?),
        WorkloadPlan::Devops(t) => Arc::new(Devops::new(*t).map_err(located)?),
        WorkloadPlan::Iot(t, o) => Arc::new(Iot::new(*t, *o).map_err(located)?),
        WorkloadPlan::Custom { cfg, .. } => Arc::new(Custom::new(cfg.clone()).map_err(located)?),
    })
}

/// The data set's shape and size, for `tsload validate`.
pub fn describe(w: &dyn Workload) -> Value {
    let schema = w.schema();
    let tables: Vec<Value> = schema
        .tables
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "tags": t.tags.iter().map(|g| json!({"name": g.name, "type": g.data_type.to_string()})).collect::<Vec<_>>(),
                "fields": t.fields.iter().map(|f| json!({"name": f.name, "type": f.data_type.to_string()})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "devices": schema.device_count,
        "rows": w.total_rows(),
        "fields_per_device_and_step": schema.field_count(),
        "tables": tables,
    })
}
