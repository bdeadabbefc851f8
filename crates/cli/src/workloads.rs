//! Plan -> Workload: builds the generator a scenario names, and describes a data set for
//! `tsload validate`. Errors point back at the scenario's key (and line, for columns).

use std::sync::Arc;

use serde_json::{Value, json};
use tsload_core::Workload;
use tsload_core::schema::DataType;
use tsload_workload::{
    ColumnList, ColumnSpec, CpuOnly, Custom, CustomConfig, Devops, FileReplay, Iot, IotOptions,
    ReplayInput, ReplayOptions, TsbsConfig, WorkloadError,
};

use crate::plan::{CustomColumn, Plan, WorkloadPlan};
use crate::scenario::ScenarioError;

/// Default length of varchar, binary and nchar columns that give no `len`.
const DEFAULT_STRING_LEN: u32 = 16;

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
            (WorkloadPlan::Custom { columns, tags, .. }, Some((list, i))) => {
                let list = match list {
                    ColumnList::Columns => columns,
                    ColumnList::Tags => tags,
                };
                list.as_ref().and_then(|l| l.get(i)).map(|c| c.line)
            }
            _ => None,
        };
        ScenarioError {
            file: plan.source.clone(),
            line,
            key: Some(format!("workload.{}", e.key)),
            message: e.message,
        }
    };
    let tsbs = |seed, scale, start_ns, end_ns, interval_ns| TsbsConfig {
        seed,
        scale,
        start_ns,
        end_ns,
        interval_ns,
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
        WorkloadPlan::CpuOnly {
            seed,
            scale,
            start_ns,
            end_ns,
            interval_ns,
        } => Arc::new(
            CpuOnly::new(tsbs(*seed, *scale, *start_ns, *end_ns, *interval_ns)).map_err(located)?,
        ),
        WorkloadPlan::Devops {
            seed,
            scale,
            start_ns,
            end_ns,
            interval_ns,
        } => Arc::new(
            Devops::new(tsbs(*seed, *scale, *start_ns, *end_ns, *interval_ns)).map_err(located)?,
        ),
        WorkloadPlan::Iot {
            seed,
            scale,
            start_ns,
            end_ns,
            interval_ns,
            missing_field_ratio,
            missing_row_ratio,
            out_of_order_ratio,
            out_of_order_max_steps,
        } => {
            let d = IotOptions::default();
            let opts = IotOptions {
                missing_field_ratio: missing_field_ratio.unwrap_or(d.missing_field_ratio),
                missing_row_ratio: missing_row_ratio.unwrap_or(d.missing_row_ratio),
                out_of_order_ratio: out_of_order_ratio.unwrap_or(d.out_of_order_ratio),
                out_of_order_max_steps: out_of_order_max_steps.unwrap_or(d.out_of_order_max_steps),
            };
            Arc::new(
                Iot::new(tsbs(*seed, *scale, *start_ns, *end_ns, *interval_ns), opts)
                    .map_err(located)?,
            )
        }
        WorkloadPlan::Custom {
            seed,
            stable,
            childtable_count,
            childtable_prefix,
            insert_rows,
            timestamp_step_ns,
            start_timestamp_ns,
            interlace_rows,
            disorder_ratio,
            disorder_range_ns,
            columns,
            tags,
        } => {
            let d = CustomConfig::default();
            let cfg = CustomConfig {
                seed: *seed,
                stable: stable.clone().unwrap_or(d.stable),
                childtable_count: childtable_count.unwrap_or(d.childtable_count),
                childtable_prefix: childtable_prefix.clone().unwrap_or(d.childtable_prefix),
                insert_rows: insert_rows.unwrap_or(d.insert_rows),
                timestamp_step_ns: timestamp_step_ns.unwrap_or(d.timestamp_step_ns),
                start_timestamp_ns: start_timestamp_ns.unwrap_or(d.start_timestamp_ns),
                interlace_rows: interlace_rows.unwrap_or(d.interlace_rows),
                disorder_ratio: disorder_ratio.unwrap_or(d.disorder_ratio),
                disorder_range_ns: disorder_range_ns.unwrap_or(d.disorder_range_ns),
                columns: columns.as_deref().map_or(d.columns, column_specs),
                tags: tags.as_deref().map_or(d.tags, column_specs),
            };
            Arc::new(Custom::new(cfg).map_err(located)?)
        }
    })
}

fn column_specs(list: &[CustomColumn]) -> Vec<ColumnSpec> {
    list.iter()
        .map(|c| {
            let len = c.len.unwrap_or(DEFAULT_STRING_LEN);
            // The scenario parser has checked the type names.
            let data_type = match c.data_type.as_str() {
                "bool" => DataType::Bool,
                "tinyint" => DataType::TinyInt,
                "smallint" => DataType::SmallInt,
                "int" => DataType::Int,
                "bigint" => DataType::BigInt,
                "float" => DataType::Float,
                "double" => DataType::Double,
                "nchar" => DataType::NChar(len),
                "timestamp" => DataType::Timestamp,
                _ => DataType::Varchar(len),
            };
            ColumnSpec {
                data_type,
                count: c.count,
                min: c.min,
                max: c.max,
                values: c.values.clone(),
            }
        })
        .collect()
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
