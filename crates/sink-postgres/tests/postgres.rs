//! End-to-end tests of the PostgreSQL sink against a real PostgreSQL 15 started by the
//! testbed (one throwaway server per test), with a hand-built schema, tag source and
//! batches, for every insert method, COPY format and layout.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tsload_core::{
    Batch, ColumnValues, DataType, ErrorKind, Schema, Sink, SinkConn, SinkError, TableSchema,
};
use tsload_sink_postgres::{
    CopyFormat, InsertMethod, Layout, PostgresConfig, PostgresConn, PostgresSink,
};
use tsload_testbed::fixtures::{
    TS0, field, next_id, push_bool, push_float, push_int, push_str, schema_of, tag, wide_batch,
    wide_schema,
};
use tsload_testbed::{Server, ServerKind};

/// `cpu`: 2 string tags + int, bigint, smallint, tinyint, float fields; `mem`: host and
/// rack tags + double, nullable ubigint, string (with characters COPY must escape), bool,
/// timestamp (ms) and nullable nchar fields. Every DataType appears.
fn schema() -> Arc<Schema> {
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
                field("usage_nice", DataType::TinyInt),
                field("load", DataType::Float),
            ],
        },
        TableSchema {
            name: "mem".to_string(),
            tags: vec![
                tag("hostname", DataType::Varchar(32), 0),
                tag("rack", DataType::BigInt, 2),
            ],
            fields: vec![
                field("used_percent", DataType::Double),
                field("swap", DataType::UBigInt),
                field("state", DataType::Varchar(32)),
                field("active", DataType::Bool),
                field("last_boot", DataType::Timestamp),
                field("note", DataType::NChar(20)),
            ],
        },
    ])
}

/// Nanosecond timestamp of `device` at `step`: not a whole microsecond, so the
/// truncation shows.
fn ts_of(device: u32, step: i64) -> i64 {
    TS0 + step * 1_000_000_000 + i64::from(device) * 1_000_123
}

/// The state string of a device: plain, or with a tab, a newline and a backslash, or a
/// literal `\N` (which must not turn into NULL).
fn state_of(device: u32) -> &'static str {
    match device % 4 {
        0 => "ok",
        1 => "tab\there",
        2 => "line\nbreak \\ back",
        _ => "\\N",
    }
}

/// One cpu and one mem row per device of `devices`, at `ts_of(device, step)`.
/// mem.swap is null for devices divisible by 3; mem.note for odd devices.
fn batch(schema: &Schema, devices: Range<u32>, step: i64) -> Batch {
    let mut b = Batch::for_schema(schema);
    for d in devices {
        let di = i64::from(d);
        let ts = ts_of(d, step);
        let cpu = &mut b.tables[0];
        cpu.device.push(d);
        cpu.ts.push(ts);
        push_int(&mut cpu.columns[0], di * 3);
        push_int(&mut cpu.columns[1], di * 3 + (1 << 40));
        push_int(&mut cpu.columns[2], 100 - di);
        push_int(&mut cpu.columns[3], -(di % 100));
        push_float(&mut cpu.columns[4], di as f64 * 0.25);

        let mem = &mut b.tables[1];
        let row = mem.rows();
        mem.device.push(d);
        mem.ts.push(ts);
        push_float(&mut mem.columns[0], di as f64 + 0.5);
        push_int(&mut mem.columns[1], di * 1000);
        push_str(&mut mem.columns[2], state_of(d));
        push_bool(&mut mem.columns[3], d.is_multiple_of(2));
        push_int(&mut mem.columns[4], 1_600_000_000_000 + di);
        push_str(&mut mem.columns[5], "é \"q\"");
        if d.is_multiple_of(3) {
            mem.set_null(1, row);
        }
        if d % 2 == 1 {
            mem.set_null(5, row);
        }
    }
    b.tables[1].finish_validity();
    b
}

fn start() -> Server {
    Server::start(ServerKind::Postgres).unwrap_or_else(|e| panic!("starting PostgreSQL: {e}"))
}

fn url(server: &Server) -> String {
    server
        .database_url()
        .expect("PostgreSQL has a database URL")
}

/// The target's settings for one combination; on TimescaleDB every table is a hypertable
/// of 1 h chunks (the test data spans 50 s, so rows land in one or two chunks).
fn config(
    server: &Server,
    layout: Layout,
    method: InsertMethod,
    format: CopyFormat,
) -> PostgresConfig {
    let mut cfg = PostgresConfig::new(url(server));
    if server.kind() == ServerKind::TimescaleDb {
        cfg.hypertable = true;
        cfg.chunk_time_interval = Some(std::time::Duration::from_secs(3600));
    }
    cfg.layout = layout;
    cfg.method = method;
    cfg.copy_format = format;
    cfg
}

fn sql(server: &Server, statement: &str) -> String {
    server
        .sql(statement)
        .unwrap_or_else(|e| panic!("{statement}: {e}\n{}", server.log_tail()))
}

async fn open(cfg: PostgresConfig, schema: &Arc<Schema>) -> (PostgresSink, PostgresConn) {
    let sink = PostgresSink::new(cfg).unwrap();
    sink.prepare(schema).await.unwrap();
    let conn = sink.connect(schema, 0).await.unwrap();
    (sink, conn)
}

/// Every combination the sink supports: (layout, method, COPY format).
const COMBOS: [(Layout, InsertMethod, CopyFormat); 8] = [
    (Layout::Wide, InsertMethod::Copy, CopyFormat::Text),
    (Layout::Wide, InsertMethod::Copy, CopyFormat::Binary),
    (Layout::Wide, InsertMethod::Insert, CopyFormat::Binary),
    (Layout::Wide, InsertMethod::Unnest, CopyFormat::Binary),
    (Layout::TagsTable, InsertMethod::Copy, CopyFormat::Text),
    (Layout::TagsTable, InsertMethod::Copy, CopyFormat::Binary),
    (Layout::TagsTable, InsertMethod::Insert, CopyFormat::Binary),
    (Layout::TagsTable, InsertMethod::Unnest, CopyFormat::Binary),
];

/// `to_json(x)::text` of a string, as the test expects it back.
fn json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The columns read back, tags joined in from the tags table in that layout.
fn from(layout: Layout, table: &str) -> String {
    match layout {
        Layout::Wide => format!("{table} m"),
        Layout::TagsTable => format!("{table} m JOIN tags t ON t.id = m.tags_id"),
    }
}

/// A tag's column: in the tags layout `hostname`, which both tables have, is in the tags
/// table; `region` (cpu only) and `rack` (mem only) are columns of their own table.
fn tag_col(layout: Layout, name: &str) -> String {
    match layout {
        Layout::TagsTable if name == "hostname" => format!("t.{name}"),
        _ => format!("m.{name}"),
    }
}

/// Writes, counts and reads back rows of every type through one combination.
async fn round_trip(server: &Server, layout: Layout, method: InsertMethod, format: CopyFormat) {
    let what = format!("{layout} / {method} / {format}");
    let schema = schema();
    let mut cfg = config(server, layout, method, format);
    cfg.drop_existing = true;
    let (_sink, mut conn) = open(cfg, &schema).await;

    let ack = conn
        .write(&batch(&schema, 1..2, 0), next_id())
        .await
        .unwrap();
    assert_eq!(ack.rows, 2, "{what}");
    assert!(ack.bytes > 0, "{what}");
    let ack = conn
        .write(&batch(&schema, 0..50, 1), next_id())
        .await
        .unwrap();
    assert_eq!(ack.rows, 100, "{what}");
    let ack = conn
        .write(&Batch::for_schema(&schema), next_id())
        .await
        .unwrap();
    assert_eq!((ack.rows, ack.bytes), (0, 0), "{what}");
    assert_eq!(server.sql_count("cpu"), 51, "{what}");
    assert_eq!(server.sql_count("mem"), 51, "{what}");
    if layout == Layout::TagsTable {
        assert_eq!(
            server.sql_count("tags"),
            50,
            "{what}: one tags row per device"
        );
        assert_eq!(
            sql(server, "SELECT * FROM tags WHERE id IN (3, 4) ORDER BY id"),
            "3\thost_3\n4\thost_4",
            "{what}: the tags table holds the tag every table has"
        );
    }

    let us = |ns: i64| ns.div_euclid(1000);
    for d in [4u32, 7] {
        let cpu = sql(
            server,
            &format!(
                "SELECT (extract(epoch FROM m.ts) * 1000000)::bigint, {}, {}, usage_user, \
                 usage_system, usage_idle, usage_nice, load FROM {} WHERE {} = 'host_{d}' \
                 AND m.ts > '2023-11-14 22:13:20.5+00'",
                tag_col(layout, "hostname"),
                tag_col(layout, "region"),
                from(layout, "cpu"),
                tag_col(layout, "hostname"),
            ),
        );
        let di = i64::from(d);
        let region = if d % 2 == 0 { "eu-west" } else { "NULL" };
        let expect = format!(
            "{}\thost_{d}\t{region}\t{}\t{}\t{}\t{}\t{}",
            us(ts_of(d, 1)),
            di * 3,
            di * 3 + (1 << 40),
            100 - di,
            -(di % 100),
            di as f64 * 0.25
        );
        assert_eq!(cpu, expect, "{what}: cpu row of device {d}");

        let mem = sql(
            server,
            &format!(
                "SELECT (extract(epoch FROM m.ts) * 1000000)::bigint, {}, used_percent, swap, \
                 to_json(state)::text, active, last_boot, to_json(note)::text FROM {} \
                 WHERE {} = {} AND m.ts > '2023-11-14 22:13:20.5+00'",
                tag_col(layout, "rack"),
                from(layout, "mem"),
                tag_col(layout, "rack"),
                di * 10,
            ),
        );
        let swap = if d % 3 == 0 {
            "NULL".to_string()
        } else {
            (di * 1000).to_string()
        };
        let note = if d % 2 == 1 {
            "NULL".to_string()
        } else {
            json("é \"q\"")
        };
        let expect = format!(
            "{}\t{}\t{}\t{swap}\t{}\t{}\t{}\t{note}",
            us(ts_of(d, 1)),
            di * 10,
            di as f64 + 0.5,
            json(state_of(d)),
            if d % 2 == 0 { "t" } else { "f" },
            1_600_000_000_000 + di,
        );
        assert_eq!(mem, expect, "{what}: mem row of device {d}");
    }
    // Every escaped string came back as written; none turned into NULL.
    assert_eq!(
        sql(
            server,
            "SELECT count(*) FILTER (WHERE state = E'\\\\N'), count(state) FROM mem"
        ),
        "12\t51",
        "{what}"
    );
}

#[tokio::test]
async fn every_method_format_and_layout_round_trips() {
    let server = start();
    for (layout, method, format) in COMBOS {
        round_trip(&server, layout, method, format).await;
    }
}

/// The same on hypertables, and exactly-once delivery's ledger beside them.
#[tokio::test]
async fn timescaledb_hypertables_round_trip_and_store_a_retried_batch_once() {
    let server = Server::start(ServerKind::TimescaleDb)
        .unwrap_or_else(|e| panic!("starting TimescaleDB: {e}"));
    for (layout, method, format) in COMBOS {
        round_trip(&server, layout, method, format).await;
        assert_eq!(
            sql(
                &server,
                "SELECT string_agg(hypertable_name, ',' ORDER BY hypertable_name) \
                 FROM timescaledb_information.hypertables"
            ),
            "cpu,mem",
            "{layout} / {method} / {format}"
        );
    }
    exactly_once_on(&server).await;
}

#[tokio::test]
async fn prepare_creates_tables_with_postgres_types() {
    let server = start();
    let schema = schema();
    let columns = |table: &str| {
        sql(
            &server,
            &format!(
                "SELECT string_agg(column_name || ' ' || \
                 CASE WHEN data_type = 'character varying' \
                 THEN 'varchar(' || character_maximum_length || ')' ELSE data_type END \
                 || CASE WHEN is_nullable = 'NO' THEN ' not null' ELSE '' END, ', ' \
                 ORDER BY ordinal_position) FROM information_schema.columns \
                 WHERE table_name = '{table}'"
            ),
        )
    };

    let mut cfg = config(
        &server,
        Layout::Wide,
        InsertMethod::Copy,
        CopyFormat::Binary,
    );
    cfg.create_index = true;
    PostgresSink::new(cfg)
        .unwrap()
        .prepare(&schema)
        .await
        .unwrap();
    assert_eq!(
        columns("cpu"),
        "ts timestamp with time zone not null, hostname varchar(32), region varchar(16), \
         usage_user integer, usage_system bigint, usage_idle smallint, usage_nice smallint, \
         load real"
    );
    assert_eq!(
        columns("mem"),
        "ts timestamp with time zone not null, hostname varchar(32), rack bigint, \
         used_percent double precision, swap bigint, state varchar(32), active boolean, \
         last_boot bigint, note text"
    );
    assert_eq!(
        sql(
            &server,
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'cpu'"
        ),
        "CREATE INDEX cpu_tags_ts_idx ON public.cpu USING btree (hostname, region, ts DESC)"
    );

    let mut cfg = config(
        &server,
        Layout::TagsTable,
        InsertMethod::Copy,
        CopyFormat::Binary,
    );
    cfg.drop_existing = true;
    cfg.create_index = true;
    PostgresSink::new(cfg)
        .unwrap()
        .prepare(&schema)
        .await
        .unwrap();
    assert_eq!(
        columns("cpu"),
        "ts timestamp with time zone not null, tags_id bigint not null, region varchar(16), \
         usage_user integer, usage_system bigint, usage_idle smallint, usage_nice smallint, \
         load real"
    );
    assert_eq!(columns("tags"), "id bigint not null, hostname varchar(32)");
    assert_eq!(
        sql(
            &server,
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'mem'"
        ),
        "CREATE INDEX mem_tags_ts_idx ON public.mem USING btree (tags_id, ts DESC)"
    );
}

/// ts + 3 tags + 40 bigint fields = 44 columns: 1,489 rows per INSERT, so 5,000 rows take
/// 4 statements; COPY and UNNEST send them at once.
#[tokio::test]
async fn batch_larger_than_the_bind_limit_is_written_completely() {
    let schema = wide_schema();
    let rows = 5_000u32;
    let b = wide_batch(&schema, rows, TS0, 1000);

    let server = start();
    let n = i64::from(rows);
    for method in [
        InsertMethod::Insert,
        InsertMethod::Unnest,
        InsertMethod::Copy,
    ] {
        let mut cfg = config(&server, Layout::Wide, method, CopyFormat::Binary);
        cfg.drop_existing = true;
        let (_sink, mut conn) = open(cfg, &schema).await;
        let ack = conn.write(&b, next_id()).await.unwrap();
        assert_eq!(ack.rows, u64::from(rows), "{method}");
        // The same size again reuses the cached statements.
        let mut again = b.clone();
        again.tables[0]
            .ts
            .iter_mut()
            .for_each(|ts| *ts += 1_000_000_000_000);
        conn.write(&again, next_id()).await.unwrap();

        assert_eq!(server.sql_count("wide"), 2 * u64::from(rows), "{method}");
        let summary = sql(
            &server,
            "SELECT count(DISTINCT hostname), count(*) FILTER (WHERE region IS NULL), sum(f39), \
             sum(rack) FROM wide",
        );
        let sum_f39 = 2 * (100 * n * (n - 1) / 2 + 39 * n);
        let sum_rack = 2 * 10 * n * (n - 1) / 2;
        assert_eq!(
            summary,
            format!("{n}\t{n}\t{sum_f39}\t{sum_rack}"),
            "{method}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_connections_both_commit() {
    let server = start();
    let schema = schema();
    for layout in [Layout::Wide, Layout::TagsTable] {
        for method in [
            InsertMethod::Copy,
            InsertMethod::Insert,
            InsertMethod::Unnest,
        ] {
            let what = format!("{layout} / {method}");
            let mut cfg = config(&server, layout, method, CopyFormat::Binary);
            cfg.drop_existing = true;
            let sink = PostgresSink::new(cfg).unwrap();
            sink.prepare(&schema).await.unwrap();
            let mut a = sink.connect(&schema, 0).await.unwrap();
            let mut b = sink.connect(&schema, 1).await.unwrap();
            let rounds = 5;
            for step in 0..rounds {
                // Devices 200..300 are written by both: in the tags layout both connections
                // insert their tags rows at the same time.
                let batch_a = batch(&schema, 0..300, step);
                let batch_b = batch(&schema, 200..500, step + 100);
                let (ra, rb) =
                    tokio::join!(a.write(&batch_a, next_id()), b.write(&batch_b, next_id()));
                assert_eq!(ra.unwrap().rows, 600, "{what}");
                assert_eq!(rb.unwrap().rows, 600, "{what}");
            }
            assert_eq!(server.sql_count("cpu"), 600 * rounds as u64, "{what}");
            assert_eq!(server.sql_count("mem"), 600 * rounds as u64, "{what}");
            if layout == Layout::TagsTable {
                assert_eq!(server.sql_count("tags"), 500, "{what}");
            }
        }
    }
}

#[tokio::test]
async fn drop_existing_empties_the_tables() {
    let server = start();
    let schema = schema();
    for layout in [Layout::Wide, Layout::TagsTable] {
        let cfg = config(&server, layout, InsertMethod::Copy, CopyFormat::Binary);
        let mut fresh = cfg.clone();
        fresh.drop_existing = true;
        let (_sink, mut conn) = open(fresh.clone(), &schema).await;
        conn.write(&batch(&schema, 0..20, 0), next_id())
            .await
            .unwrap();
        drop(conn);

        // Without drop_existing the rows stay.
        PostgresSink::new(cfg)
            .unwrap()
            .prepare(&schema)
            .await
            .unwrap();
        assert_eq!(server.sql_count("cpu"), 20, "{layout}");

        PostgresSink::new(fresh)
            .unwrap()
            .prepare(&schema)
            .await
            .unwrap();
        assert_eq!(server.sql_count("cpu"), 0, "{layout}");
        assert_eq!(server.sql_count("mem"), 0, "{layout}");
        if layout == Layout::TagsTable {
            assert_eq!(server.sql_count("tags"), 0);
        }
    }
    // A view on a table goes with it (CASCADE).
    sql(&server, "CREATE VIEW cpu_view AS SELECT * FROM cpu");
    let mut cfg = config(
        &server,
        Layout::Wide,
        InsertMethod::Copy,
        CopyFormat::Binary,
    );
    cfg.drop_existing = true;
    PostgresSink::new(cfg)
        .unwrap()
        .prepare(&schema)
        .await
        .unwrap();
    assert_eq!(sql(&server, "SELECT to_regclass('cpu_view') IS NULL"), "t");
}

fn assert_rejected(err: &SinkError, table: &str, what: &str) {
    assert_eq!(err.kind, ErrorKind::Rejected, "{what}: {err}");
    assert!(!err.is_retryable(), "{what}");
    assert!(
        err.message.contains(&format!("\"{table}\"")),
        "{what}: {err}"
    );
}

#[tokio::test]
async fn wrong_table_shape_is_rejected_and_writes_nothing() {
    let server = start();
    let schema = schema();
    for (layout, method, format) in COMBOS {
        let what = format!("{layout} / {method} / {format}");
        sql(&server, "DROP TABLE IF EXISTS cpu, mem, tags");
        sql(&server, "CREATE TABLE mem (x integer)");
        let (_sink, mut conn) = open(config(&server, layout, method, format), &schema).await;

        // cpu (first in the batch) is fine; mem fails, and takes cpu's rows with it.
        let err = conn
            .write(&batch(&schema, 0..10, 0), next_id())
            .await
            .unwrap_err();
        assert_rejected(&err, "mem", &what);
        assert_eq!(server.sql_count("cpu"), 0, "{what}");
        assert_eq!(server.sql_count("mem"), 0, "{what}");
        if layout == Layout::TagsTable {
            assert_eq!(
                server.sql_count("tags"),
                0,
                "{what}: the tags rows rolled back too"
            );
        }

        // A batch of mem alone (one statement, no explicit transaction) fails the same way.
        let mut mem_only = batch(&schema, 0..5, 1);
        mem_only.tables[0].clear();
        let err = conn.write(&mem_only, next_id()).await.unwrap_err();
        assert_rejected(&err, "mem", &what);

        // The connection is usable afterwards (no transaction left open), and the tags
        // rows that were rolled back are written with the next batch that needs them.
        let mut cpu_only = batch(&schema, 0..5, 2);
        cpu_only.tables[1].clear();
        conn.write(&cpu_only, next_id()).await.unwrap();
        assert_eq!(server.sql_count("cpu"), 5, "{what}");
        if layout == Layout::TagsTable {
            assert_eq!(server.sql_count("tags"), 5, "{what}");
        }
    }
}

#[tokio::test]
async fn out_of_range_values_are_rejected_before_sending() {
    let server = start();
    let schema = schema();
    for (layout, method, format) in COMBOS {
        let what = format!("{layout} / {method} / {format}");
        let mut cfg = config(&server, layout, method, format);
        cfg.drop_existing = true;
        let (_sink, mut conn) = open(cfg, &schema).await;
        let mut b = batch(&schema, 0..10, 0);
        if let ColumnValues::Int(v) = &mut b.tables[0].columns[2].values {
            v[3] = 40_000; // usage_idle is a smallint
        }
        let err = conn.write(&b, next_id()).await.unwrap_err();
        assert_rejected(&err, "cpu", &what);
        assert!(
            err.message.contains("usage_idle") && err.message.contains("40000"),
            "{what}: {err}"
        );
        assert_eq!(server.sql_count("cpu"), 0, "{what}");
        assert_eq!(server.sql_count("mem"), 0, "{what}");
    }
}

#[tokio::test]
async fn tag_values_that_do_not_fit_their_type_are_rejected() {
    let server = start();
    // Slot 0 holds "host_N": not an integer.
    let schema = schema_of(vec![TableSchema {
        name: "bad".to_string(),
        tags: vec![tag("host", DataType::Int, 0)],
        fields: vec![field("v", DataType::BigInt)],
    }]);
    for (layout, method, format) in COMBOS {
        let what = format!("{layout} / {method} / {format}");
        let mut cfg = config(&server, layout, method, format);
        cfg.drop_existing = true;
        let (_sink, mut conn) = open(cfg, &schema).await;
        let mut b = Batch::for_schema(&schema);
        b.tables[0].device.push(7);
        b.tables[0].ts.push(TS0);
        push_int(&mut b.tables[0].columns[0], 1);
        let err = conn.write(&b, next_id()).await.unwrap_err();
        let table = if layout == Layout::Wide {
            "bad"
        } else {
            "tags"
        };
        assert_rejected(&err, table, &what);
        assert!(
            err.message.contains("device 7")
                && err.message.contains("\"host_7\" is not a valid integer"),
            "{what}: {err}"
        );
        assert_eq!(server.sql_count("bad"), 0, "{what}");
    }
}

#[tokio::test]
async fn too_long_strings_are_rejected_by_the_server() {
    let server = start();
    let schema = schema();
    for (layout, method, format) in COMBOS {
        let what = format!("{layout} / {method} / {format}");
        let mut cfg = config(&server, layout, method, format);
        cfg.drop_existing = true;
        let (_sink, mut conn) = open(cfg, &schema).await;
        let mut b = Batch::for_schema(&schema);
        let mem = &mut b.tables[1];
        mem.device.push(1);
        mem.ts.push(TS0);
        push_float(&mut mem.columns[0], 1.0);
        push_int(&mut mem.columns[1], 1);
        push_str(&mut mem.columns[2], &"x".repeat(33)); // state is varchar(32)
        push_bool(&mut mem.columns[3], true);
        push_int(&mut mem.columns[4], 1);
        push_str(&mut mem.columns[5], "");
        let err = conn.write(&b, next_id()).await.unwrap_err();
        assert_rejected(&err, "mem", &what);
        assert!(err.message.contains("22001"), "{what}: {err}");
        assert_eq!(server.sql_count("mem"), 0, "{what}");
    }
}

#[tokio::test]
async fn hypertable_on_plain_postgres_names_the_missing_extension() {
    let server = start();
    let schema = schema();
    let mut cfg = config(
        &server,
        Layout::Wide,
        InsertMethod::Copy,
        CopyFormat::Binary,
    );
    cfg.hypertable = true;
    cfg.chunk_time_interval = Some(Duration::from_secs(3600));
    let err = PostgresSink::new(cfg)
        .unwrap()
        .prepare(&schema)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema, "{err}");
    assert!(err.message.contains("timescaledb"), "{err}");
    assert!(err.message.contains("timescaledb-2-postgresql-15"), "{err}");
    assert!(err.message.contains("shared_preload_libraries"), "{err}");
    assert!(err.message.contains("hypertable = false"), "{err}");
    // Nothing was created.
    assert_eq!(sql(&server, "SELECT to_regclass('cpu') IS NULL"), "t");
}

#[tokio::test]
async fn killed_server_gives_a_retryable_error_and_the_next_write_reconnects() {
    let mut server = start();
    let schema = schema();
    for (layout, method) in [
        (Layout::Wide, InsertMethod::Copy),
        (Layout::TagsTable, InsertMethod::Insert),
        (Layout::Wide, InsertMethod::Unnest),
    ] {
        let what = format!("{layout} / {method}");
        let mut cfg = config(&server, layout, method, CopyFormat::Binary);
        cfg.drop_existing = true;
        cfg.connect_timeout = Duration::from_secs(2);
        let (_sink, mut conn) = open(cfg, &schema).await;
        conn.write(&batch(&schema, 0..10, 0), next_id())
            .await
            .unwrap();

        server.kill();
        let b = batch(&schema, 0..10, 1);
        let err = conn.write(&b, next_id()).await.unwrap_err();
        eprintln!("{what}: after kill: {err}");
        assert_eq!(err.kind, ErrorKind::Connection, "{what}: {err}");
        assert!(err.is_retryable(), "{what}");
        // While the server is down, the retry cannot connect: still retryable.
        let err = conn.write(&b, next_id()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Connection, "{what}: {err}");
        assert!(err.message.contains("cannot connect"), "{what}: {err}");

        server.restart().unwrap();
        assert_eq!(conn.write(&b, next_id()).await.unwrap().rows, 20, "{what}");
        assert_eq!(server.sql_count("cpu"), 20, "{what}");
    }
}

/// A kill while writes are in flight (large single-table batches, so the single-statement
/// path without BEGIN is hit too): the write in flight fails retryably, nothing panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_write_fails_the_write_retryably() {
    let mut server = start();
    let schema = schema();
    for (method, tables) in [
        (InsertMethod::Copy, 1),
        (InsertMethod::Insert, 2),
        (InsertMethod::Unnest, 1),
    ] {
        let mut cfg = config(&server, Layout::Wide, method, CopyFormat::Binary);
        cfg.drop_existing = true;
        cfg.connect_timeout = Duration::from_secs(2);
        let (_sink, mut conn) = open(cfg, &schema).await;
        let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let writer = {
            let schema = schema.clone();
            let written = written.clone();
            tokio::spawn(async move {
                for step in 0.. {
                    let mut b = batch(&schema, 0..5_000, step);
                    if tables == 1 {
                        b.tables[1].clear();
                    }
                    if let Err(e) = conn.write(&b, next_id()).await {
                        return (step, e);
                    }
                    written.store(step as u64 + 1, std::sync::atomic::Ordering::Relaxed);
                }
                unreachable!()
            })
        };
        // Kill once a batch went through, a little into the next one.
        while written.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.kill();
        let (step, err) = writer.await.expect("the writer does not panic");
        eprintln!("{method}: killed at batch {step}: {err}");
        assert!(
            step > 0,
            "{method}: some batches were written before the kill"
        );
        assert_eq!(err.kind, ErrorKind::Connection, "{method}: {err}");
        server.restart().unwrap();
    }
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_without_the_password() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = PostgresConfig::new(format!("postgres://u:hunter2@127.0.0.1:{port}/db"));
    cfg.connect_timeout = Duration::from_secs(2);
    let sink = PostgresSink::new(cfg).unwrap();
    let schema = schema();
    let err = sink.prepare(&schema).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(!err.message.contains("hunter2"), "{err}");
    let Err(err) = sink.connect(&schema, 0).await else {
        panic!("connect succeeded");
    };
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
}

#[tokio::test]
async fn wrong_database_and_settings_are_reported() {
    let server = start();
    let schema = schema();
    let base = url(&server);
    let other_db = format!("{}/nosuchdb", base.strip_suffix("/tsload").unwrap());
    let err = PostgresSink::new(PostgresConfig::new(other_db))
        .unwrap()
        .prepare(&schema)
        .await
        .unwrap_err();
    assert!(
        err.message.contains("nosuchdb") && err.message.contains("3D000"),
        "{err}"
    );

    let mut cfg = config(
        &server,
        Layout::Wide,
        InsertMethod::Copy,
        CopyFormat::Binary,
    );
    cfg.synchronous_commit = Some(tsload_sink_postgres::SynchronousCommit::Off);
    let (_sink, mut conn) = open(cfg, &schema).await;
    conn.write(&batch(&schema, 0..3, 0), next_id())
        .await
        .unwrap();
    assert_eq!(server.sql_count("cpu"), 3);
}

#[tokio::test]
async fn schema_the_layout_cannot_hold_fails_before_connecting() {
    // No server: these fail on the schema alone.
    let cfg = PostgresConfig::new("postgres://u@127.0.0.1:1/db");
    let clash = schema_of(vec![TableSchema {
        name: "disk".to_string(),
        tags: vec![tag("path", DataType::Varchar(32), 0)],
        fields: vec![field("path", DataType::Int)],
    }]);
    let err = PostgresSink::new(cfg.clone())
        .unwrap()
        .prepare(&clash)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert!(
        err.message.contains("disk") && err.message.contains("path"),
        "{err}"
    );

    let mut tags_cfg = cfg;
    tags_cfg.layout = Layout::TagsTable;
    let named_tags = schema_of(vec![TableSchema {
        name: "tags".to_string(),
        tags: vec![],
        fields: vec![field("v", DataType::Int)],
    }]);
    let err = PostgresSink::new(tags_cfg)
        .unwrap()
        .prepare(&named_tags)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Schema);
    assert!(err.message.contains("\"tags\""), "{err}");
}

#[tokio::test]
async fn exactly_once_stores_a_retried_batch_once_for_every_method() {
    exactly_once_on(&start()).await;
}

async fn exactly_once_on(server: &Server) {
    let schema = schema();
    for (layout, method, format) in COMBOS {
        let what = format!("{layout} / {method} / {format}");
        let mut cfg = config(server, layout, method, format);
        cfg.drop_existing = true;
        let run_id = cfg.run_id;
        let (_sink, mut conn) = open(cfg, &schema).await;
        let b = batch(&schema, 0..10, 0);
        let id = tsload_core::BatchId {
            worker: 1,
            seq: 9,
            attempt: 0,
        };
        let first = conn.write(&b, id).await.unwrap();
        assert_eq!((first.rows, first.duplicate), (20, false), "{what}");
        // The engine's retry after a COMMIT whose answer was lost: stored already.
        let retry = conn
            .write(&b, tsload_core::BatchId { attempt: 1, ..id })
            .await
            .unwrap();
        assert_eq!((retry.rows, retry.duplicate), (20, true), "{what}");
        // The connection is usable afterwards (the duplicate's transaction rolled back).
        conn.write(&batch(&schema, 10..12, 0), next_id())
            .await
            .unwrap();
        assert_eq!(server.sql_count("cpu"), 12, "{what}");
        assert_eq!(server.sql_count("mem"), 12, "{what}");
        assert_eq!(
            sql(
                server,
                &format!(
                    "SELECT count(*), sum(batch_rows) FROM tsload_ledger WHERE run_id = {run_id}"
                )
            ),
            "2\t24",
            "{what}"
        );
    }
}

#[tokio::test]
async fn at_least_once_keeps_the_single_statement_path_and_no_ledger() {
    let server = start();
    let schema = schema();
    let mut cfg = config(
        &server,
        Layout::Wide,
        InsertMethod::Copy,
        CopyFormat::Binary,
    );
    cfg.drop_existing = true;
    cfg.delivery = tsload_core::Delivery::AtLeastOnce;
    let (_sink, mut conn) = open(cfg, &schema).await;
    let b = batch(&schema, 0..10, 0);
    let id = next_id();
    conn.write(&b, id).await.unwrap();
    let again = conn
        .write(&b, tsload_core::BatchId { attempt: 1, ..id })
        .await
        .unwrap();
    assert!(!again.duplicate);
    assert_eq!(server.sql_count("cpu"), 20, "at least once: stored twice");
    assert_eq!(
        sql(
            &server,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'tsload_ledger'"
        ),
        "0"
    );
}
