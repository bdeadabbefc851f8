//! Remote write into real receivers on 127.0.0.1, started by the testbed: VictoriaMetrics
//! (`/api/v1/write`) and Prometheus from Debian's packages
//! (`--web.enable-remote-write-receiver`). Every sample the encoder says it sent is counted
//! by the server itself, under the names VictoriaMetrics gives line protocol; what each
//! server does with a sample out of order, or sent twice, is pinned here.

use std::sync::Arc;

use tsload_core::schema::DataType;
use tsload_core::{Batch, Schema, Sink, SinkConn};
use tsload_sink_prometheus::{PrometheusConfig, PrometheusSink, RemoteWriteEncoder};
use tsload_testbed::fixtures::{cpu_mem_batch, cpu_mem_schema, next_id};
use tsload_testbed::{Server, ServerKind};

/// 2016-01-01T00:00:00Z, the test data sets' era, in ns.
const T0: i64 = 1_451_606_400_000_000_000;

fn start(kind: ServerKind) -> Server {
    Server::start(kind).unwrap_or_else(|e| panic!("{e}"))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn sink(server: &Server) -> PrometheusSink {
    PrometheusSink::new(PrometheusConfig::new(format!(
        "{}/api/v1/write",
        server.base_url()
    )))
    .unwrap()
}

/// One row per device of 0..8 per table, at `ts`.
fn batch(schema: &Schema, ts: i64) -> Batch {
    cpu_mem_batch(schema, 0..8, 0, |_, _| ts, "bad")
}

/// The samples `batch` carries, as the encoder counts them.
fn samples_of(schema: &Arc<Schema>, batch: &Batch) -> u64 {
    RemoteWriteEncoder::new(schema.clone())
        .unwrap()
        .encode(batch)
        .samples
}

/// Writes `batches` through one connection; every write must be acknowledged.
fn write_all(server: &Server, schema: &Arc<Schema>, batches: &[Batch]) {
    let sink = sink(server);
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
fn victoria_metrics_stores_every_sample_under_line_protocols_names() {
    let vm = start(ServerKind::VictoriaMetrics);
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let batches: Vec<Batch> = (0..5)
        .map(|i| batch(&schema, T0 + i * 10_000_000_000))
        .collect();
    let sent: u64 = batches.iter().map(|b| samples_of(&schema, b)).sum();
    let before = tally(&vm, &schema, false);
    write_all(&vm, &schema, &batches);
    vm.vm_flush();
    // The strings of `mem_state` carry no sample: 3 cpu fields x 8 devices + mem's
    // double, bool and bigint (null for devices 0, 3, 6) per round.
    assert_eq!(sent, 5 * (3 * 8 + 8 + 8 + 5));
    assert_eq!(vm.vm_sample_count(r#"{__name__=~"(cpu|mem)_.*"}"#), sent);
    assert_eq!(
        vm.vm_sample_count(r#"{__name__="cpu_usage_user",hostname="host_0"}"#),
        5
    );
    assert_eq!(vm.vm_series_count(r#"{__name__="mem_state"}"#), 0);
    // The server's own counters, as the run report reads them.
    let after = tally(&vm, &schema, true);
    let stored = tsload_core::stored::stored_between(&before, &after).unwrap();
    assert_eq!(stored.samples, Some(sent));
    assert!(stored.refused.is_empty(), "{stored:?}");
}

/// VictoriaMetrics takes a sample older than one it holds, and stores a batch sent twice
/// twice (it deduplicates only when started with `-dedup.minScrapeInterval`): a retried
/// ambiguous write can double samples there, as the run report's `ambiguous` count warns.
#[test]
fn victoria_metrics_takes_out_of_order_samples_and_stores_a_resent_batch_again() {
    let vm = start(ServerKind::VictoriaMetrics);
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let late = batch(&schema, T0 + 60_000_000_000);
    let early = batch(&schema, T0);
    let (l, e) = (samples_of(&schema, &late), samples_of(&schema, &early));
    write_all(&vm, &schema, &[late.clone(), early, late]);
    vm.vm_flush();
    assert_eq!(
        vm.vm_sample_count(r#"{__name__=~"(cpu|mem)_.*"}"#),
        2 * l + e
    );
}

#[test]
fn prometheus_appends_every_sample_it_is_sent() {
    let prom = start(ServerKind::Prometheus);
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let batches: Vec<Batch> = (0..5)
        .map(|i| batch(&schema, T0 + i * 10_000_000_000))
        .collect();
    let sent: u64 = batches.iter().map(|b| samples_of(&schema, b)).sum();
    let before = tally(&prom, &schema, false);
    write_all(&prom, &schema, &batches);
    assert_eq!(prom.prometheus_samples(), sent);
    let after = tally(&prom, &schema, true);
    let stored = tsload_core::stored::stored_between(&before, &after).unwrap();
    assert_eq!(stored.samples, Some(sent));
    // PromQL reads them back under the same names: 5 samples of one host's series.
    let answer = prom
        .get(
            "/api/v1/query",
            &[
                (
                    "query",
                    "count_over_time(cpu_usage_user{hostname=\"host_0\"}[1h])",
                ),
                ("time", "1451610000"),
            ],
        )
        .unwrap()
        .json("query")
        .unwrap();
    assert_eq!(
        answer["data"]["result"][0]["value"][1],
        serde_json::json!("5"),
        "{answer}"
    );
}

/// Prometheus refuses a request holding a sample older than the newest of its series (a
/// 400, not retried) and stores none of that request; the same batch sent again is taken
/// without a second copy (an identical sample is not appended twice).
#[test]
fn prometheus_refuses_out_of_order_requests_whole_and_keeps_one_copy_of_a_resent_batch() {
    let prom = start(ServerKind::Prometheus);
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let late = batch(&schema, T0 + 60_000_000_000);
    let early = batch(&schema, T0);
    let sent = samples_of(&schema, &late);
    let sink = sink(&prom);
    rt().block_on(async {
        let mut conn = sink.connect(&schema, 0).await.unwrap();
        conn.write(&late, next_id()).await.unwrap();
        let e = conn.write(&early, next_id()).await.unwrap_err();
        assert_eq!(e.kind, tsload_core::ErrorKind::Rejected, "{e}");
        assert!(!e.kind.is_retryable());
        assert!(e.message.contains("HTTP 400"), "{e}");
        assert!(e.message.contains("out of order"), "{e}");
        let again = conn.write(&late, next_id()).await.unwrap();
        assert_eq!(again.rows, late.rows() as u64);
    });
    assert_eq!(prom.prometheus_samples(), sent);
}

/// A server without a receiver at the URL is named as such, not retried.
#[test]
fn a_url_without_a_receiver_says_so() {
    let prom = start(ServerKind::Prometheus);
    let schema = cpu_mem_schema(DataType::Varchar(8));
    let sink = PrometheusSink::new(PrometheusConfig::new(format!(
        "{}/api/v1/push",
        prom.base_url()
    )))
    .unwrap();
    let e = rt().block_on(async {
        let mut conn = sink.connect(&schema, 0).await.unwrap();
        conn.write(&batch(&schema, T0), next_id())
            .await
            .unwrap_err()
    });
    assert_eq!(e.kind, tsload_core::ErrorKind::Rejected, "{e}");
    assert!(
        e.message.contains("--web.enable-remote-write-receiver"),
        "{e}"
    );
}

fn tally(server: &Server, schema: &Arc<Schema>, settled: bool) -> tsload_core::stored::ServerTally {
    rt().block_on(sink(server).tally(schema, &Default::default(), settled))
        .unwrap()
        .expect("the server publishes its counters")
}
