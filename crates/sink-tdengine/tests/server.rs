//! Writes to a real TDengine (through taosAdapter) in every insert mode and reads back.
//!
//! Needs a server: set `TSLOAD_TDENGINE_DSN` (e.g. `ws://root:taosdata@127.0.0.1:6041`, no
//! database path) and run `cargo test -p tsload-sink-tdengine -- --ignored`. The test
//! creates and drops databases named `tsload_it_*`.

use std::sync::Arc;

use taos::{AsyncQueryable, AsyncTBuilder, TaosBuilder};
use tsload_core::{
    Batch, ColumnValues, DataType, FieldDef, Schema, Sink, SinkConn, TableSchema, TagDef,
    TagSource, TagValue,
};
use tsload_sink_tdengine::{ChildTables, InsertMode, TdengineConfig, TdengineSink, redact_dsn};

const DSN_VAR: &str = "TSLOAD_TDENGINE_DSN";
const DEVICES: u32 = 3;
const ROWS_PER_DEVICE: usize = 7;
/// 2017-07-14T02:40:00Z, as the custom workload starts.
const START_NS: i64 = 1_500_000_000_000_000_000;
const STEP_NS: i64 = 10_000_000_000;

/// The custom workload's tags: the child table name, then one varchar(10).
#[derive(Debug)]
struct Tags;

impl TagSource for Tags {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.push(TagValue::Str(format!("d{device}").into()));
        out.push(TagValue::Str(format!("loc'{device}").into()));
    }
}

/// docs/experiments.md R1's schema: columns 1 varchar(10) + 10 float, tags tbname + 1 varchar(10).
fn schema() -> Schema {
    let mut fields = vec![FieldDef {
        name: "c0".into(),
        data_type: DataType::Varchar(10),
    }];
    fields.extend((1..=10).map(|i| FieldDef {
        name: format!("c{i}"),
        data_type: DataType::Float,
    }));
    Schema {
        tables: vec![TableSchema {
            name: "meters".into(),
            tags: vec![
                TagDef {
                    name: "tbname".into(),
                    data_type: DataType::Varchar(11),
                    slot: 0,
                },
                TagDef {
                    name: "t0".into(),
                    data_type: DataType::Varchar(10),
                    slot: 1,
                },
            ],
            fields,
        }],
        tag_slots: 2,
        device_count: DEVICES,
        tags: Arc::new(Tags),
    }
}

/// Value of float column `col` at (device, step).
fn value(device: u32, step: usize, col: usize) -> f64 {
    device as f64 * 100.0 + step as f64 + col as f64 / 16.0
}

/// Timestamp of (device, step): device d is d ms late so the first row overall is d0's.
fn ts(device: u32, step: usize) -> i64 {
    START_NS + step as i64 * STEP_NS + device as i64 * 1_000_000
}

/// Two batches of interlaced rows (d0, d1, d2, d0, ...): every batch holds every child
/// table, so grouping by child table matters.
fn batches(schema: &Schema) -> Vec<Batch> {
    let split = ROWS_PER_DEVICE / 2;
    [(0..split), (split..ROWS_PER_DEVICE)]
        .into_iter()
        .map(|steps| {
            let mut batch = Batch::for_schema(schema);
            let tb = &mut batch.tables[0];
            for step in steps {
                for device in 0..DEVICES {
                    tb.device.push(device);
                    tb.ts.push(ts(device, step));
                    for (col, column) in tb.columns.iter_mut().enumerate() {
                        match &mut column.values {
                            ColumnValues::Str(v) => v.push(&format!("s{device}_{step}")),
                            ColumnValues::Float(v) => v.push(value(device, step, col)),
                            other => panic!("unexpected column {other:?}"),
                        }
                    }
                }
            }
            batch
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs a TDengine server: set TSLOAD_TDENGINE_DSN"]
async fn tdengine_server_roundtrip() {
    let Ok(dsn) = std::env::var(DSN_VAR) else {
        let msg = format!(
            "tdengine_server_roundtrip DID NOT RUN: {DSN_VAR} is not set. Point it at \
             taosAdapter (e.g. ws://root:taosdata@127.0.0.1:6041) to run it."
        );
        eprintln!("\n!!!!! {msg}\n");
        panic!("{msg}");
    };
    eprintln!("tdengine_server_roundtrip: using {}", redact_dsn(&dsn));
    let schema = Arc::new(schema());
    let cases = [
        ("stmt_prepare", InsertMode::Stmt, ChildTables::Prepare),
        ("stmt_auto", InsertMode::Stmt, ChildTables::Auto),
        ("sql_prepare", InsertMode::Sql, ChildTables::Prepare),
        ("sql_auto", InsertMode::Sql, ChildTables::Auto),
        ("schemaless", InsertMode::Schemaless, ChildTables::Auto),
    ];
    let reader = <TaosBuilder as AsyncTBuilder>::from_dsn(&dsn)
        .expect("DSN")
        .build()
        .await
        .expect("reader session");
    for (name, mode, child_tables) in cases {
        let db = format!("tsload_it_{name}");
        let mut cfg = TdengineConfig::new(&dsn);
        assert_eq!(
            cfg.database, "tsload",
            "give {DSN_VAR} without a database path"
        );
        cfg.database = db.clone();
        cfg.mode = mode;
        cfg.child_tables = child_tables;
        cfg.drop_existing = true;
        cfg.batch_create_tbl_num = 2; // more than one CREATE TABLE statement
        cfg.max_sql_length = 1024; // more than one INSERT per batch in sql mode
        let sink = TdengineSink::new(cfg).expect("config");
        sink.prepare(&schema)
            .await
            .unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
        let mut conn = sink
            .connect(&schema, 0)
            .await
            .unwrap_or_else(|e| panic!("{name}: connect: {e}"));
        let mut written = 0;
        for batch in batches(&schema) {
            let ack = conn
                .write(&batch, tsload_core::BatchId::default())
                .await
                .unwrap_or_else(|e| panic!("{name}: write: {e}"));
            assert_eq!(ack.rows, batch.rows() as u64, "{name}");
            written += ack.rows;
        }
        assert_eq!(written, u64::from(DEVICES) * ROWS_PER_DEVICE as u64);

        let count: i64 = reader
            .query_one(format!("SELECT COUNT(*) FROM {db}.`meters`"))
            .await
            .unwrap_or_else(|e| panic!("{name}: count: {e}"))
            .unwrap_or_default();
        assert_eq!(count as u64, written, "{name}: rows stored");

        // The first row of the whole super table is d0's first.
        let (ts_col, name_col) = if mode == InsertMode::Schemaless {
            ("_ts", "tname")
        } else {
            ("ts", "tbname")
        };
        let (c0, c1, table): (String, f64, String) = reader
            .query_one(format!(
                "SELECT c0, c1, {name_col} FROM {db}.`meters` ORDER BY {ts_col} LIMIT 1"
            ))
            .await
            .unwrap_or_else(|e| panic!("{name}: read back: {e}"))
            .unwrap_or_else(|| panic!("{name}: no row"));
        assert_eq!(c0, "s0_0", "{name}");
        assert!((c1 - value(0, 0, 1)).abs() < 1e-4, "{name}: c1 = {c1}");
        assert_eq!(table, "d0", "{name}");
        if mode != InsertMode::Schemaless {
            let t0: String = reader
                .query_one(format!(
                    "SELECT t0 FROM {db}.`meters` WHERE tbname = 'd2' LIMIT 1"
                ))
                .await
                .unwrap_or_else(|e| panic!("{name}: tag: {e}"))
                .unwrap_or_default();
            assert_eq!(t0, "loc'2", "{name}");
        }
        drop(conn);
        reader
            .exec(format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap_or_else(|e| panic!("{name}: drop: {e}"));
        eprintln!("tdengine_server_roundtrip: {name}: {written} rows written and read back");
    }
}
