//! Hand-built schemas, tag source and batches that the SQL sink crates' integration tests share.

use std::ops::Range;
use std::sync::Arc;

use tsload_core::{
    Batch, Column, ColumnValues, DataType, FieldDef, Schema, TableSchema, TagDef, TagSource,
    TagValue,
};

/// 2023-11-14 22:13:20 UTC, in nanoseconds: the first timestamp of the test batches.
pub const TS0: i64 = 1_700_000_000_000_000_000;

/// Three tag slots per device. Slot 0: host name `host_<device>`; slot 1: region
/// `eu-west`, null for odd devices; slot 2: rack number `device * 10`.
#[derive(Debug)]
pub struct Tags;

impl TagSource for Tags {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.push(TagValue::Str(format!("host_{device}").into()));
        out.push(if device.is_multiple_of(2) {
            TagValue::Str("eu-west".into())
        } else {
            TagValue::Null
        });
        out.push(TagValue::Int(i64::from(device) * 10));
    }

    fn key_slot(&self) -> Option<usize> {
        Some(0)
    }
}

/// A tag named `name` of `data_type`, read from `Tags`' slot `slot`.
pub fn tag(name: &str, data_type: DataType, slot: usize) -> TagDef {
    TagDef {
        name: name.to_string(),
        data_type,
        slot,
    }
}

/// A field named `name` of `data_type`.
pub fn field(name: &str, data_type: DataType) -> FieldDef {
    FieldDef {
        name: name.to_string(),
        data_type,
    }
}

/// A schema of `tables` with `Tags` (3 slots) and 10,000 devices.
pub fn schema_of(tables: Vec<TableSchema>) -> Arc<Schema> {
    Arc::new(Schema {
        tables,
        tag_slots: 3,
        device_count: 10_000,
        tags: Arc::new(Tags),
    })
}

/// `cpu`: tags hostname (slot 0), region (slot 1) + int `usage_user`, bigint
/// `usage_system`, smallint `usage_idle`; `mem`: tag rack (slot 2) + double
/// `used_percent`, bigint `swap`, `state` of `state_type`, bool `active`: the tables
/// `cpu_mem_batch` fills.
pub fn cpu_mem_schema(state_type: DataType) -> Arc<Schema> {
    schema_of(vec![
        TableSchema {
            name: "cpu".to_string(),
            tags: vec![
                tag("hostname", DataType::Varchar(32), 0),
                tag("region", DataType::Varchar(16), 1),
            ],
            fields: vec![
                field("usage_user", DataType::Int),
                field("usage_system", DataType::BigInt),
                field("usage_idle", DataType::SmallInt),
            ],
        },
        TableSchema {
            name: "mem".to_string(),
            tags: vec![tag("rack", DataType::BigInt, 2)],
            fields: vec![
                field("used_percent", DataType::Double),
                field("swap", DataType::BigInt),
                field("state", state_type),
                field("active", DataType::Bool),
            ],
        },
    ])
}

/// Appends `v` to `c` if it is an integer column (does nothing otherwise).
pub fn push_int(c: &mut Column, v: i64) {
    if let ColumnValues::Int(values) = &mut c.values {
        values.push(v);
    }
}

/// Appends `v` to `c` if it is a float column (does nothing otherwise).
pub fn push_float(c: &mut Column, v: f64) {
    if let ColumnValues::Float(values) = &mut c.values {
        values.push(v);
    }
}

/// Appends `v` to `c` if it is a string column (does nothing otherwise).
pub fn push_str(c: &mut Column, v: &str) {
    if let ColumnValues::Str(values) = &mut c.values {
        values.push(v);
    }
}

/// Appends `v` to `c` if it is a bool column (does nothing otherwise).
pub fn push_bool(c: &mut Column, v: bool) {
    if let ColumnValues::Bool(values) = &mut c.values {
        values.push(v);
    }
}

/// One cpu and one mem row per device of `devices`, at `ts_of(device, step)`, for a
/// schema whose table 0 has 3 integer fields and table 1 has float, nullable integer,
/// string and bool fields. cpu: `d * 3`, `d * 3 + 1`, `100 - d`; mem: `d + 0.5`,
/// `d * 1000` (null for devices divisible by 3), "ok" for even devices and `odd_state`
/// for odd ones, `d` is even.
pub fn cpu_mem_batch(
    schema: &Schema,
    devices: Range<u32>,
    step: i64,
    ts_of: impl Fn(u32, i64) -> i64,
    odd_state: &str,
) -> Batch {
    let mut b = Batch::for_schema(schema);
    for d in devices {
        let di = i64::from(d);
        let ts = ts_of(d, step);
        let cpu = &mut b.tables[0];
        cpu.device.push(d);
        cpu.ts.push(ts);
        push_int(&mut cpu.columns[0], di * 3);
        push_int(&mut cpu.columns[1], di * 3 + 1);
        push_int(&mut cpu.columns[2], 100 - di);

        let mem = &mut b.tables[1];
        let row = mem.rows();
        mem.device.push(d);
        mem.ts.push(ts);
        push_float(&mut mem.columns[0], di as f64 + 0.5);
        push_int(&mut mem.columns[1], di * 1000);
        push_str(
            &mut mem.columns[2],
            if d.is_multiple_of(2) { "ok" } else { odd_state },
        );
        push_bool(&mut mem.columns[3], d.is_multiple_of(2));
        if d.is_multiple_of(3) {
            mem.set_null(1, row);
        }
    }
    b.tables[1].finish_validity();
    b
}

/// Table `wide`: 3 tags (hostname, region, rack) + 40 bigint fields `f0`..`f39`, so
/// ts + 3 tags + 40 fields = 44 columns.
pub fn wide_schema() -> Arc<Schema> {
    let fields: Vec<FieldDef> = (0..40)
        .map(|i| field(&format!("f{i}"), DataType::BigInt))
        .collect();
    schema_of(vec![TableSchema {
        name: "wide".to_string(),
        tags: vec![
            tag("hostname", DataType::Varchar(32), 0),
            tag("region", DataType::Varchar(16), 1),
            tag("rack", DataType::Int, 2),
        ],
        fields,
    }])
}

/// `rows` rows of `wide_schema()`'s table, devices `0..rows`: device d at
/// `first_ts + d * spacing`, field i holding `d * 100 + i`.
pub fn wide_batch(schema: &Schema, rows: u32, first_ts: i64, spacing: i64) -> Batch {
    let mut b = Batch::for_schema(schema);
    let t = &mut b.tables[0];
    for d in 0..rows {
        t.device.push(d);
        t.ts.push(first_ts + i64::from(d) * spacing);
        for (i, c) in t.columns.iter_mut().enumerate() {
            push_int(c, i64::from(d) * 100 + i as i64);
        }
    }
    b
}

/// A fresh batch id for a test's direct `SinkConn::write`: worker 0, a new sequence
/// number every call (so that exactly-once targets never take two writes for retries of
/// one batch), attempt 0.
pub fn next_id() -> tsload_core::BatchId {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    tsload_core::BatchId {
        worker: 0,
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
        attempt: 0,
    }
}
