//! tsload-workload: the data generators. TSBS `cpu-only`, `devops` and `iot`, and
//! taosBenchmark-style `custom` super tables, each a pure function of its seed, streamed
//! into reusable batches in constant memory; and [`FileReplay`], which streams a
//! line-protocol file (TSBS `--format=influx`) instead.
//!
//! Every device (host, truck, child table) has its own random stream seeded from
//! `(seed, device)`, and its rows depend on nothing else, so the union of the rows that
//! the sources of `workers` workers produce is the same data set for any `workers`. A
//! replayed file's workers share one reader instead (see [`FileReplay`]).

mod arrival;
mod churn;
mod custom;
mod devops;
mod file;
mod iot;
mod rng;
mod shape;
mod state;
mod tsbs;

mod cpu_only;

pub use arrival::Arrival;
pub use churn::Churn;
pub use cpu_only::{CPU_FIELDS, CpuOnly};
pub use custom::{ColumnSpec, Custom, CustomConfig, CustomValue};
pub use devops::Devops;
pub use file::{FileReplay, MAX_LINE_BYTES, ReplayInput, ReplayOptions};
pub use iot::{IOT_ARRIVAL, Iot, IotOptions};
pub use shape::{DEFAULT_PERIOD_NS, Shape, Wave};
pub use state::{StateEstimate, human_bytes};
pub use tsbs::TsbsConfig;

/// A workload definition that cannot generate data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct WorkloadError {
    /// The setting at fault, e.g. `scale` or `columns[1].values`.
    pub key: String,
    pub message: String,
    /// For column settings: which list (`columns` or `tags`) and the entry's index.
    pub column: Option<(ColumnList, usize)>,
}

/// The two column lists of a custom super table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnList {
    Columns,
    Tags,
}

impl WorkloadError {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        WorkloadError {
            key: key.into(),
            message: message.into(),
            column: None,
        }
    }
}
