//! Write speed into a real PostgreSQL 15 (ignored by default; run it optimised):
//! `cargo test -p tsload-sink-postgres --release --test speed -- --ignored --nocapture`.
//!
//! A TSBS cpu-only-like table (10 string tags, 10 bigint fields), 100 devices x 2,160
//! time steps = 216,000 rows in time-major order, batches of 10,000 rows, one connection,
//! fresh tables for every method, format and layout. Rows per second include the server's
//! work (commit with the default synchronous_commit = on).

use std::sync::Arc;
use std::time::Instant;

use tsload_core::{
    Batch, ColumnValues, DataType, FieldDef, Schema, Sink, SinkConn, TableSchema, TagDef,
    TagSource, TagValue,
};
use tsload_sink_postgres::{CopyFormat, InsertMethod, Layout, PostgresConfig, PostgresSink};
use tsload_testbed::{Server, ServerKind};

const TAGS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];
const DEVICES: u32 = 100;
const STEPS: u32 = 2_160;
const BATCH: usize = 10_000;

#[derive(Debug)]
struct CpuTags;

impl TagSource for CpuTags {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        for (i, name) in TAGS.iter().enumerate() {
            out.push(TagValue::Str(
                format!("{name}_{}", device as usize * 7 % (i + 5)).into(),
            ));
        }
        out[0] = TagValue::Str(format!("host_{device}").into());
    }
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema {
        tables: vec![TableSchema {
            name: "cpu".into(),
            tags: TAGS
                .iter()
                .enumerate()
                .map(|(slot, n)| TagDef {
                    name: n.to_string(),
                    data_type: DataType::Varchar(32),
                    slot,
                })
                .collect(),
            fields: (0..10)
                .map(|i| FieldDef {
                    name: format!("usage_{i}"),
                    data_type: DataType::BigInt,
                })
                .collect(),
        }],
        tag_slots: TAGS.len(),
        device_count: DEVICES,
        tags: Arc::new(CpuTags),
    })
}

/// All batches of the run, built up front so that only the sink is timed.
fn batches(schema: &Schema) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut b = Batch::for_schema(schema);
    for step in 0..STEPS {
        for d in 0..DEVICES {
            let t = &mut b.tables[0];
            t.device.push(d);
            t.ts.push(1_451_606_400_000_000_000 + i64::from(step) * 10_000_000_000);
            for (i, c) in t.columns.iter_mut().enumerate() {
                if let ColumnValues::Int(v) = &mut c.values {
                    v.push((i64::from(d) * 31 + i64::from(step) * 17 + i as i64) % 100);
                }
            }
            if b.rows() == BATCH {
                out.push(std::mem::replace(&mut b, Batch::for_schema(schema)));
            }
        }
    }
    if !b.is_empty() {
        out.push(b);
    }
    out
}

#[tokio::test]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
async fn write_speed_of_each_method() {
    let server = Server::start(ServerKind::Postgres).unwrap();
    let schema = schema();
    let batches = batches(&schema);
    let rows: usize = batches.iter().map(Batch::rows).sum();
    assert_eq!(rows, 216_000);
    let combos = [
        (Layout::Wide, InsertMethod::Copy, CopyFormat::Binary),
        (Layout::Wide, InsertMethod::Copy, CopyFormat::Text),
        (Layout::Wide, InsertMethod::Unnest, CopyFormat::Binary),
        (Layout::Wide, InsertMethod::Insert, CopyFormat::Binary),
        (Layout::TagsTable, InsertMethod::Copy, CopyFormat::Binary),
        (Layout::TagsTable, InsertMethod::Copy, CopyFormat::Text),
        (Layout::TagsTable, InsertMethod::Unnest, CopyFormat::Binary),
        (Layout::TagsTable, InsertMethod::Insert, CopyFormat::Binary),
    ];
    for round in 0..2 {
        for (layout, method, format) in combos {
            let mut cfg = PostgresConfig::new(server.database_url().unwrap());
            cfg.layout = layout;
            cfg.method = method;
            cfg.copy_format = format;
            cfg.drop_existing = true;
            let sink = PostgresSink::new(cfg).unwrap();
            sink.prepare(&schema).await.unwrap();
            let mut conn = sink.connect(&schema, 0).await.unwrap();
            let cpu0 = cpu_seconds();
            let t0 = Instant::now();
            let mut bytes = 0;
            for b in &batches {
                bytes += conn.write(b).await.unwrap().bytes;
            }
            let secs = t0.elapsed().as_secs_f64();
            let client = cpu_seconds() - cpu0;
            assert_eq!(server.sql_count("cpu"), rows as u64);
            let fmt = if method == InsertMethod::Copy {
                format.as_str()
            } else {
                "-"
            };
            println!(
                "round {round} {layout:>4} {method:>6} {fmt:>6}: {:>9.0} rows/s  {:.2} s  \
                 client CPU {:.2} s  {:.1} MB sent",
                rows as f64 / secs,
                secs,
                client,
                bytes as f64 / 1e6
            );
        }
    }
}

/// CPU time (user + system) of this process so far, from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
        .unwrap_or(0.0);
    ticks / 100.0
}
