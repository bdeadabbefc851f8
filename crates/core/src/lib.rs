//! tsload-core: the database-agnostic heart of tsload.
//!
//! It holds the data model ([`Schema`], [`Batch`]), the two seams every workload and
//! every database plugs into ([`Workload`]/[`BatchSource`] and [`Sink`]/[`SinkConn`]),
//! the engine that drives workers in closed or open loop and the latency recorder; for
//! reads, the query engine ([`run_queries`]). The reports a run ends with are
//! tsload-report's. It knows no database, no CLI and no netlink.

pub mod answer_budget;
pub mod batch;
pub mod engine;
mod pacing;
pub mod query;
pub mod query_engine;
pub mod recorder;
pub mod rusage;
pub mod schema;
pub mod shard;
pub mod sink;
pub mod stored;
pub mod workload;

pub use batch::{Batch, BatchShapeError, Column, ColumnValues, LineText, StrValues, TableBatch};
pub use engine::{LoadConfig, LoadMode, RunOutcome};
pub use query::{
    Param, QueryAck, QueryConn, QueryRequest, QuerySource, QueryTarget, QueryWorkload, SpareParams,
    Statement,
};
pub use query_engine::{KindOutcome, QueryConfig, QueryOutcome, run_queries};
pub use schema::{
    ColumnClash, DataType, FieldDef, Schema, TableSchema, TagCache, TagDef, TagSource, TagValue,
    find_column_clash,
};
pub use sink::{
    BatchId, Delivery, ErrorKind, LEDGER_TABLE, NullSink, Sink, SinkConn, SinkError, WriteAck,
    new_run_id,
};
pub use workload::{BatchSource, Workload};
