//! The ClickHouse target against a real ClickHouse (Debian's `clickhouse-server` 18.16)
//! on 127.0.0.1, started by the testbed: every row written is counted by `count()` with
//! its values as sent, `drop_existing` starts over, refused inserts and queries are
//! rejections (an insert refused after another table of its batch was stored is
//! ambiguous), and a query counts the rows it returns.

use std::sync::Arc;

use tsload_core::schema::DataType;
use tsload_core::stored::{RunScope, stored_between};
use tsload_core::{Batch, ErrorKind, QueryConn, QueryTarget, Schema, Sink, SinkConn};
use tsload_sink_clickhouse::{ClickHouseConfig, ClickHouseQueryTarget, ClickHouseSink};
use tsload_testbed::fixtures::{TS0, cpu_mem_batch, cpu_mem_schema, next_id, schema_of};
use tsload_testbed::query_checks::{ack, assert_error, assert_rejected, one, request};
use tsload_testbed::{Server, ServerKind};

const SECOND: i64 = 1_000_000_000;

fn start() -> Server {
    Server::start(ServerKind::ClickHouse).unwrap_or_else(|e| panic!("{e}"))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn config(server: &Server) -> ClickHouseConfig {
    ClickHouseConfig::new(server.base_url())
}

/// Round `i`: one cpu and one mem row per device of 0..8, at `TS0 + i s`.
fn batches(schema: &Schema, rounds: i64) -> Vec<Batch> {
    (0..rounds)
        .map(|i| cpu_mem_batch(schema, 0..8, i, |_, step| TS0 + step * SECOND, "bad"))
        .collect()
}

/// Prepares `cfg`'s tables and writes `batches` through one connection; every write must
/// be acknowledged with all its rows.
fn write_all(cfg: &ClickHouseConfig, schema: &Arc<Schema>, batches: &[Batch]) {
    let sink = ClickHouseSink::new(cfg.clone()).unwrap();
    rt().block_on(async {
        sink.prepare(schema).await.unwrap();
        let mut conn = sink.connect(schema, 0).await.unwrap();
        for b in batches {
            let ack = conn.write(b, next_id()).await.unwrap();
            assert_eq!(ack.rows, b.rows() as u64);
            assert!(ack.bytes > 0);
        }
    });
}

#[test]
fn every_row_written_is_counted_with_its_values() {
    let server = start();
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let cfg = config(&server);
    let sink = ClickHouseSink::new(cfg.clone()).unwrap();
    let before = rt().block_on(async {
        sink.prepare(&schema).await.unwrap();
        sink.tally(&schema, &RunScope::default(), false)
            .await
            .unwrap()
            .unwrap()
    });
    let written = batches(&schema, 5);
    write_all(&cfg, &schema, &written);
    assert_eq!(server.clickhouse_count("tsload.cpu"), 40);
    assert_eq!(server.clickhouse_count("tsload.mem"), 40);

    // The server's own count, as the run report reads it, and its storage.
    let (after, bytes) = rt().block_on(async {
        (
            sink.tally(&schema, &RunScope::default(), true)
                .await
                .unwrap()
                .unwrap(),
            sink.storage_bytes(&schema).await.unwrap().unwrap(),
        )
    });
    assert_eq!(stored_between(&before, &after).unwrap().rows, Some(80));
    // A run of devices 4 to 7 alone (a shard's) counts their rows, not the others'.
    let cpu_only = schema_of(vec![schema.tables[0].clone()]);
    let shard = RunScope {
        devices: Some(tsload_core::stored::DeviceSet::whole(10_000, 1).with_slots(4..8)),
        part: Some("shard 1/2".into()),
    };
    let own = rt()
        .block_on(sink.tally(&cpu_only, &shard, true))
        .unwrap()
        .unwrap();
    assert_eq!((own.rows, own.own_devices), (Some(20), true));
    assert!(bytes > 0, "{bytes}");

    // Values as sent: tags (a null tag is the empty string), nulls, booleans, strings.
    let cpu = server
        .clickhouse_query(
            "SELECT ts, hostname, region, usage_user, usage_system, usage_idle FROM tsload.cpu \
             WHERE hostname = 'host_3' ORDER BY ts LIMIT 1",
        )
        .unwrap();
    assert_eq!(cpu, format!("{TS0}\thost_3\t\t9\t10\t97"));
    let mem = server
        .clickhouse_query(
            "SELECT rack, used_percent, swap, state, active FROM tsload.mem \
             WHERE rack IN (30, 40) AND ts = 1700000000000000000 ORDER BY rack",
        )
        .unwrap();
    assert_eq!(mem, "30\t3.5\t\\N\tbad\t0\n40\t4.5\t4000\tok\t1");
    let types = server
        .clickhouse_query(
            "SELECT name, type FROM system.columns WHERE database = 'tsload' AND table = 'mem'",
        )
        .unwrap();
    assert_eq!(
        types,
        "ts\tInt64\nrack\tInt64\nused_percent\tNullable(Float64)\nswap\tNullable(Int64)\n\
         state\tNullable(String)\nactive\tNullable(UInt8)"
    );
}

#[test]
fn drop_existing_starts_over_and_without_it_rows_are_kept() {
    let server = start();
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let mut cfg = config(&server);
    cfg.database = "other db".into();
    write_all(&cfg, &schema, &batches(&schema, 2));
    write_all(&cfg, &schema, &batches(&schema, 1));
    assert_eq!(server.clickhouse_count("`other db`.cpu"), 24);
    cfg.drop_existing = true;
    write_all(&cfg, &schema, &batches(&schema, 1));
    assert_eq!(server.clickhouse_count("`other db`.cpu"), 8);
    assert_eq!(server.clickhouse_count("`other db`.mem"), 8);
}

/// A column the table lacks is a rejection naming the insert and the server's message,
/// not a retry. When the batch's first table was stored before its second was refused,
/// the failure is ambiguous: part of the batch is in the database.
#[test]
fn a_refused_insert_is_rejected_and_ambiguous_after_a_stored_table() {
    let server = start();
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let cfg = config(&server);
    let sink = ClickHouseSink::new(cfg).unwrap();
    let batch = &batches(&schema, 1)[0];
    rt().block_on(async {
        sink.prepare(&schema).await.unwrap();
        server
            .clickhouse_query("ALTER TABLE tsload.cpu DROP COLUMN usage_idle")
            .unwrap();
        let mut conn = sink.connect(&schema, 0).await.unwrap();
        let e = conn.write(batch, next_id()).await.unwrap_err();
        assert_error(
            &e,
            ErrorKind::Rejected,
            &["INSERT INTO `tsload`.`cpu`", "usage_idle"],
        );
        assert!(!e.ambiguous, "{e:?}");

        // cpu made again whole; mem loses a column.
        server.clickhouse_query("DROP TABLE tsload.cpu").unwrap();
        sink.prepare(&schema).await.unwrap();
        server
            .clickhouse_query("ALTER TABLE tsload.mem DROP COLUMN state")
            .unwrap();
        let e = conn.write(batch, next_id()).await.unwrap_err();
        assert_error(
            &e,
            ErrorKind::Rejected,
            &["`tsload`.`mem`", "state", "were stored"],
        );
        assert!(e.ambiguous, "{e:?}");
    });
    assert_eq!(server.clickhouse_count("tsload.cpu"), 8);
    assert_eq!(server.clickhouse_count("tsload.mem"), 0);
}

#[test]
fn a_query_counts_its_rows_and_errors_are_rejections() {
    let server = start();
    let schema = cpu_mem_schema(DataType::Varchar(8));
    write_all(&config(&server), &schema, &batches(&schema, 3));
    let target = ClickHouseQueryTarget::new(&config(&server)).unwrap();
    rt().block_on(async {
        let mut conn = target.connect(0).await.unwrap();
        let hosts = one("SELECT * FROM cpu WHERE hostname IN ('host_1', 'host_2')");
        assert_eq!(conn.execute(&hosts).await.unwrap(), ack(6, 1));
        let two = request(
            vec![
                tsload_core::Statement::new("SELECT count() FROM mem"),
                tsload_core::Statement::new("SELECT state FROM mem WHERE state = 'nothing'"),
            ],
            false,
        );
        assert_eq!(conn.execute(&two).await.unwrap(), ack(1, 2));

        let e = conn
            .execute(&one("SELECT * FROM nowhere"))
            .await
            .unwrap_err();
        assert_rejected(
            &e,
            "statement 1 `SELECT * FROM nowhere`",
            "nowhere doesn't exist",
        );
        let e = conn.execute(&one("SELEC 1")).await.unwrap_err();
        assert_rejected(&e, "statement 1 `SELEC 1`", "Syntax error");
        // A 500 with a code that is the statement's fault.
        let e = conn.execute(&one("SELECT throwIf(1)")).await.unwrap_err();
        assert_rejected(&e, "throwIf", "Code: 395");
        let e = conn
            .execute(&request(
                vec![tsload_core::Statement::new("SELECT 1")],
                true,
            ))
            .await
            .unwrap_err();
        assert_rejected(&e, "", "no transactions");
        // The connection is still good.
        assert_eq!(conn.execute(&hosts).await.unwrap(), ack(6, 1));
    });
}

#[test]
fn a_wrong_password_is_a_permission_error_and_no_server_a_connection_error() {
    let server = start();
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let mut cfg = config(&server);
    cfg.password = Some("not-the-password".into());
    let e = rt()
        .block_on(ClickHouseSink::new(cfg).unwrap().prepare(&schema))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Permission, "{e}");
    assert!(!e.message.contains("not-the-password"), "{e}");

    let gone = format!("http://{}", server.http_addr());
    drop(server);
    let e = rt()
        .block_on(
            ClickHouseSink::new(ClickHouseConfig::new(gone))
                .unwrap()
                .prepare(&schema),
        )
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Connection, "{e}");
}
