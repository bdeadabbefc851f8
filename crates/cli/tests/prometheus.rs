//! `target.kind = "prometheus"` end to end: `tsload run` remote-writes TSBS data into a
//! real VictoriaMetrics and a real Prometheus (Debian's), and every sample the report
//! counts is counted by the server: in the report's `stored` block (the server's own
//! counters, read by tsload) and again here, by the testbed, independently. Then TSBS
//! queries in PromQL (and MetricsQL) read them back.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{start, text};

fn run(dir: &Path, sets: &[String]) -> (Output, serde_json::Value) {
    common::run_sets(dir, sets)
}

fn sets(server: &Server, kind: &str, workers: u32) -> Vec<String> {
    vec![
        "target.kind=\"prometheus\"".into(),
        format!("target.url=\"{}/api/v1/write\"", server.base_url()),
        format!("workload.kind=\"{kind}\""),
        "workload.scale=20".into(),
        "workload.end=\"2016-01-01T01:00:00Z\"".into(),
        "load.batch=500".into(),
        format!("load.workers={workers}"),
    ]
}

/// A successful run whose report says the server stored every sample it counted.
fn stored_all(name: &str, out: &Output, r: &serde_json::Value) -> u64 {
    assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    let metrics = r["metrics"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: {r}"));
    assert!(metrics > 0, "{name}: {r}");
    assert_eq!(r["stored"]["samples"], metrics, "{name}: {r}");
    assert!(r.get("stored_shortfall").is_none(), "{name}: {r}");
    assert_eq!(r["target"], "prometheus", "{name}: {r}");
    assert_eq!(r["scenario"]["target"]["kind"], "prometheus", "{name}: {r}");
    metrics
}

#[test]
fn victoria_metrics_counts_every_sample_of_every_tsbs_data_set() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["cpu-only", "devops", "iot"] {
        let vm = start(ServerKind::VictoriaMetrics);
        let (out, r) = run(dir.path(), &sets(&vm, kind, 2));
        let metrics = stored_all(kind, &out, &r);
        vm.vm_flush();
        assert_eq!(
            vm.vm_settled_sample_count(r#"{__name__=~".+"}"#),
            metrics,
            "{kind}"
        );
        // Line protocol's names: measurement_field, tags as labels; one sample per 10 s
        // of the hour (iot leaves some fields out: fewer).
        let (name, samples) = match kind {
            "iot" => (r#"{__name__="readings_velocity",name="truck_0"}"#, 1..=360),
            _ => (
                r#"{__name__="cpu_usage_user",hostname="host_0"}"#,
                360..=360,
            ),
        };
        let n = vm.vm_sample_count(name);
        assert!(samples.contains(&n) && n > 300, "{kind}: {name}: {n}");
    }
}

#[test]
fn prometheus_counts_every_sample_and_answers_tsbs_queries_in_promql() {
    let dir = tempfile::tempdir().unwrap();
    let prom = start(ServerKind::Prometheus);
    let (out, r) = run(dir.path(), &sets(&prom, "cpu-only", 1));
    let metrics = stored_all("prometheus", &out, &r);
    assert_eq!(prom.prometheus_samples(), metrics);
    let mut query = sets(&prom, "cpu-only", 1);
    query.extend([
        "query.kind=\"tsbs\"".into(),
        "query.types=[\"single-groupby-1-1-1\", \"single-groupby-5-8-1\"]".into(),
        "query.queries=6".into(),
    ]);
    let (out, r) = run(dir.path(), &query);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["requests"], 6, "{r}");
    assert_eq!(r["failed_requests"], 0, "{r}");
    for k in r["kinds"].as_array().unwrap() {
        assert!(k["rows"].as_u64().unwrap() > 0, "{k}");
    }
}

/// Two workers walk time on their own; Prometheus with an out-of-order window takes
/// them all.
#[test]
fn prometheus_with_an_out_of_order_window_takes_several_workers() {
    let dir = tempfile::tempdir().unwrap();
    let prom = Server::start_with(
        ServerKind::Prometheus,
        &[("out_of_order_time_window", "1d")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (out, r) = run(dir.path(), &sets(&prom, "devops", 3));
    let metrics = stored_all("prometheus ooo", &out, &r);
    assert_eq!(prom.prometheus_samples(), metrics);
}

/// MetricsQL, VictoriaMetrics' dialect, over remote-written data.
#[test]
fn victoria_metrics_answers_metricsql_over_remote_written_data() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start(ServerKind::VictoriaMetrics);
    let (out, r) = run(dir.path(), &sets(&vm, "cpu-only", 2));
    stored_all("vm", &out, &r);
    vm.vm_flush();
    for dialect in ["promql", "metricsql"] {
        let mut query = sets(&vm, "cpu-only", 2);
        query.extend([
            "query.kind=\"tsbs\"".into(),
            format!("query.dialect=\"{dialect}\""),
            "query.types=[\"single-groupby-1-1-1\", \"single-groupby-5-8-1\"]".into(),
            "query.queries=4".into(),
        ]);
        let (out, r) = run(dir.path(), &query);
        assert!(out.status.success(), "{dialect}: {}", text(&out.stderr));
        assert_eq!(r["failed_requests"], 0, "{dialect}: {r}");
        for k in r["kinds"].as_array().unwrap() {
            assert!(k["rows"].as_u64().unwrap() > 0, "{dialect}: {k}");
        }
    }
}

/// A replayed file with every line twice: Prometheus answers 204 and appends each
/// sample once, naming no reason. The run fails with a shortfall that says why samples
/// merge silently (it printed "stored" half and exited 0).
#[test]
fn prometheus_merging_duplicate_samples_is_a_shortfall() {
    let dir = tempfile::tempdir().unwrap();
    let prom = start(ServerKind::Prometheus);
    let generated = common::tsload()
        .args(["generate", "--set", "workload.scale=5"])
        .args(["--set", "workload.end=\"2016-01-01T00:10:00Z\""])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(generated.status.success(), "{}", text(&generated.stderr));
    let lines = text(&generated.stdout);
    let twice: String = lines.lines().map(|l| format!("{l}\n{l}\n")).collect();
    std::fs::write(dir.path().join("twice.lp"), twice).unwrap();
    let (out, r) = run(
        dir.path(),
        &[
            "target.kind=\"prometheus\"".to_string(),
            format!("target.url=\"{}/api/v1/write\"", prom.base_url()),
            "workload.kind=\"file\"".into(),
            "workload.path=\"twice.lp\"".into(),
            "load.batch=100".into(),
            // One worker: the file's lines in order (two would split each series' samples
            // between them, and Prometheus would refuse some as out of order).
            "load.workers=1".into(),
        ],
    );
    assert!(!out.status.success(), "{}", text(&out.stderr));
    let metrics = r["metrics"].as_u64().unwrap();
    assert_eq!(r["stored"]["samples"], metrics / 2, "{r}");
    assert_eq!(prom.prometheus_samples(), metrics / 2);
    let why = r["stored_shortfall"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        why.contains("it names no reason for: a sample repeating"),
        "{why}"
    );
}

/// Once Prometheus holds this hour's samples (as one that scrapes itself does), TSBS's
/// 2016 data is "out of bounds": the advice was "load.workers = 1" even with one worker.
/// It names the dates now, as the server does.
#[test]
fn prometheus_refusing_old_samples_is_told_to_move_the_dates_not_the_workers() {
    let dir = tempfile::tempdir().unwrap();
    let prom = start(ServerKind::Prometheus);
    let mut now = sets(&prom, "cpu-only", 1);
    now.retain(|s| !s.starts_with("workload.end"));
    now.extend([
        "workload.start=\"now-10m\"".into(),
        "workload.end=\"now\"".into(),
    ]);
    let (out, _) = run(dir.path(), &now);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (out, _) = run(dir.path(), &sets(&prom, "cpu-only", 1));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("out of bounds"), "{stderr}");
    assert!(
        stderr.contains("older than Prometheus' head block")
            && stderr.contains("workload.time = \"live\" with load.duration")
            && stderr.contains("workload.start = \"now-50m\""),
        "{stderr}"
    );
    assert!(!stderr.contains("load.workers = 1"), "{stderr}");
}

/// Live time (`workload.time = "live"`) with series churn into a Prometheus as installed
/// (scraping itself, so its head holds the present and TSBS's 2016 dates are refused as
/// out of bounds) and a VictoriaMetrics with its default one-month retention: every
/// sample the report counts lands, as the servers count them in the run's series, and
/// the servers hold a series per field of every device the report says it wrote.
#[test]
fn a_live_run_lands_every_sample_in_servers_with_their_default_settings() {
    let dir = tempfile::tempdir().unwrap();
    let prom = Server::start_with(ServerKind::Prometheus, &[("scrape_interval", "1s")])
        .unwrap_or_else(|e| panic!("{e}"));
    let vm = Server::start_with(ServerKind::VictoriaMetrics, &[("retentionPeriod", "1")])
        .unwrap_or_else(|e| panic!("{e}"));
    // Its head holds the present once it has scraped itself.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while prom.prometheus_samples() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "Prometheus never scraped itself"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let live = |server: &Server| -> Vec<String> {
        vec![
            "target.kind=\"prometheus\"".into(),
            format!("target.url=\"{}/api/v1/write\"", server.base_url()),
            "workload.kind=\"cpu-only\"".into(),
            "workload.scale=20".into(),
            "workload.interval=\"1s\"".into(),
            "workload.time=\"live\"".into(),
            "load.workers=2".into(),
            "load.duration=\"4s\"".into(),
            // Half the hosts replaced every second: each lives 2 s.
            "workload.churn_ratio=0.5".into(),
            "workload.churn_interval=\"1s\"".into(),
        ]
    };
    // The data set as TSBS dates it cannot land in this Prometheus.
    let (out, _) = run(dir.path(), &sets(&prom, "cpu-only", 1));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let cpu = r#"{__name__=~"cpu_.+"}"#;
    assert_eq!(prom.prometheus_sample_count(cpu, "30d"), 0);

    let (out, r) = run(dir.path(), &live(&prom));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("cpu-only (live time) -> prometheus"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(r["scenario"]["workload"]["time"], "live", "{r}");
    assert_eq!(r["scenario"]["load"]["rate"], 20.0, "{r}");
    let metrics = r["metrics"].as_u64().unwrap();
    // 20 hosts a second for 4 s, 10 fields each.
    assert!((600..=1_000).contains(&metrics), "{r}");
    assert_eq!(prom.prometheus_sample_count(cpu, "1h"), metrics, "{r}");
    // 20 hosts to start with, 10 new every second of the run: 10 series each.
    let devices = r["devices_written"].as_u64().unwrap();
    assert!((40..=80).contains(&devices), "{r}");
    assert!(
        text(&out.stdout).contains("each generation of a host under series churn"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(prom.prometheus_series_count(cpu, "1h"), devices * 10, "{r}");
    // The report says so, and what the server says it created: the run's series and
    // those its own scrapes made (the write handler's metrics appear with the first
    // write), so at least as many.
    assert_eq!(r["series_written"], devices * 10, "{r}");
    let created = r["server_series_created"].as_u64().unwrap();
    assert!(created >= devices * 10, "{r}");
    // Its own scrapes are in its sample counter: the report claims no figure of it.
    assert!(r.get("stored").is_none(), "{r}");
    assert!(
        r["stored_error"]
            .as_str()
            .unwrap()
            .contains("another writer is counted in them"),
        "{r}"
    );

    let (out, r) = run(dir.path(), &live(&vm));
    let metrics = stored_all("vm live", &out, &r);
    vm.vm_flush();
    assert_eq!(vm.vm_settled_sample_count(cpu), metrics);
    let devices = r["devices_written"].as_u64().unwrap();
    assert_eq!(vm.vm_series_count(cpu), devices * 10, "{r}");
    // VictoriaMetrics created exactly the series the run wrote, and says so.
    assert_eq!(r["series_written"], devices * 10, "{r}");
    assert_eq!(r["server_series_created"], devices * 10, "{r}");
    assert!(
        text(&out.stdout).contains("as many"),
        "{}",
        text(&out.stdout)
    );
}

/// Late and duplicate rows (`workload.out_of_order_ratio`, `duplicate_ratio`) land as each
/// server keeps them: Prometheus merges a sample repeating its series' time and value
/// into the one it holds and counts it nowhere, so it owes the samples less the
/// duplicates' and the run passes with exactly that many; with an out-of-order window it
/// takes the late ones too (not duplicates there: a copy of a late sample whose first
/// copy went into a full out-of-order chunk is appended again, 7 of 5,430 in one run).
/// VictoriaMetrics keeps every sample, duplicates included.
#[test]
fn late_and_duplicate_rows_land_as_each_server_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let recent = |server: &Server, kind: &str, workers: u32, late: f64, twice: f64| {
        let mut s = sets(server, kind, workers);
        s.retain(|s| !s.starts_with("workload.end"));
        s.extend([
            "workload.start=\"now-50m\"".into(),
            "workload.end=\"now\"".into(),
            format!("workload.duplicate_ratio={twice}"),
            format!("workload.out_of_order_ratio={late}"),
        ]);
        s
    };
    let duplicates = |name: &str, r: &serde_json::Value| -> (u64, u64) {
        let rows = r["duplicate_rows"].as_u64().unwrap_or(0);
        let samples = r["duplicate_metrics"].as_u64().unwrap_or(0);
        let all = r["rows"].as_u64().unwrap();
        // A tenth of the rows, twice: within 4.5 standard deviations of a binomial.
        let originals = (all - rows) as f64;
        let sd = (originals * 0.1 * 0.9).sqrt();
        assert!(
            (rows as f64 - originals * 0.1).abs() <= 4.5 * sd,
            "{name}: {rows} duplicates of {originals}: {r}"
        );
        (rows, samples)
    };

    // In time order (one worker, no late rows): Prometheus as installed.
    let prom = start(ServerKind::Prometheus);
    let (out, r) = run(dir.path(), &recent(&prom, "cpu-only", 1, 0.0, 0.1));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_, dup_samples) = duplicates("prometheus", &r);
    let owed = r["metrics"].as_u64().unwrap() - dup_samples;
    assert_eq!(r["stored"]["samples"], owed, "{r}");
    assert_eq!(r["stored"]["merges_duplicates"], true, "{r}");
    assert!(r.get("stored_shortfall").is_none(), "{r}");
    assert_eq!(prom.prometheus_samples(), owed);
    assert!(
        text(&out.stdout).contains("merged into their originals"),
        "{}",
        text(&out.stdout)
    );

    // Late rows need Prometheus' out-of-order window.
    let prom = Server::start_with(
        ServerKind::Prometheus,
        &[("out_of_order_time_window", "1d")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (out, r) = run(dir.path(), &recent(&prom, "devops", 3, 0.1, 0.0));
    let metrics = stored_all("prometheus ooo", &out, &r);
    assert!(r["late_rows"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(prom.prometheus_samples(), metrics);

    // With series churn too: a fifth of the hosts replaced every 10 minutes.
    let vm = start(ServerKind::VictoriaMetrics);
    let mut churn = recent(&vm, "cpu-only", 2, 0.1, 0.1);
    churn.extend([
        "workload.churn_ratio=0.2".into(),
        "workload.churn_interval=\"10m\"".into(),
    ]);
    let (out, r) = run(dir.path(), &churn);
    let metrics = stored_all("vm", &out, &r);
    assert!(r["late_rows"].as_u64().unwrap() > 0, "{r}");
    duplicates("vm", &r);
    vm.vm_flush();
    assert_eq!(vm.vm_settled_sample_count(r#"{__name__=~".+"}"#), metrics);
    let devices = r["devices_written"].as_u64().unwrap();
    assert!(devices > 20, "{r}");
    assert_eq!(vm.vm_series_count(r#"{__name__=~"cpu_.+"}"#), devices * 10);
    assert_eq!(r["server_series_created"], devices * 10, "{r}");
}

/// Pods (`workload.pods_per_host`): each host's rows carry one of its pods in turn, so
/// VictoriaMetrics holds a series per field of every (host, pod), as many as the report
/// says it wrote and the server says it created, at the hosts' rows.
#[test]
fn pods_multiply_the_series_victoria_metrics_holds() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start(ServerKind::VictoriaMetrics);
    let mut s = sets(&vm, "cpu-only", 2);
    s.retain(|s| !s.starts_with("workload.end") && !s.starts_with("workload.scale"));
    s.extend([
        "workload.scale=10".into(),
        "workload.pods_per_host=4".into(),
        "workload.start=\"now-1h\"".into(),
        "workload.end=\"now\"".into(),
    ]);
    let (out, r) = run(dir.path(), &s);
    let metrics = stored_all("vm pods", &out, &r);
    // 10 hosts every 10 s for an hour.
    assert_eq!(r["rows"], 3_600, "{r}");
    assert_eq!(r["devices_written"], 40, "{r}");
    assert_eq!(r["series_written"], 400, "{r}");
    assert_eq!(r["server_series_created"], 400, "{r}");
    vm.vm_flush();
    let cpu = r#"{__name__=~"cpu_.+"}"#;
    assert_eq!(vm.vm_settled_sample_count(cpu), metrics);
    assert_eq!(vm.vm_series_count(cpu), 400);
    assert_eq!(
        vm.vm_series_count(r#"{__name__="cpu_usage_user",hostname="host_3"}"#),
        4
    );
}

/// Live time on the custom schema: each table's next row in turn, stamped with the clock,
/// at `childtable_count / timestamp_step` rows a second, lands whole in Prometheus and
/// VictoriaMetrics as installed (its values a sine, each table at its own phase), with
/// half the tables replaced every second: each server holds the series the report says
/// it wrote.
#[test]
fn a_live_custom_run_lands_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    for kind in [ServerKind::Prometheus, ServerKind::VictoriaMetrics] {
        let server = start(kind);
        let (out, r) = run(
            dir.path(),
            &[
                "target.kind=\"prometheus\"".into(),
                format!("target.url=\"{}/api/v1/write\"", server.base_url()),
                "workload.kind=\"custom\"".into(),
                "workload.childtable_count=10".into(),
                "workload.timestamp_step=\"500ms\"".into(),
                "workload.columns=[{type=\"double\", count=3, min=0, max=10, shape=\"sine\", period=\"1m\"}]".into(),
                "workload.time=\"live\"".into(),
                "workload.churn_ratio=0.5".into(),
                "workload.churn_interval=\"1s\"".into(),
                "load.duration=\"3s\"".into(),
            ],
        );
        let metrics = stored_all(&format!("{kind:?}"), &out, &r);
        let devices = r["devices_written"].as_u64().unwrap();
        assert!(devices > 10, "{r}");
        assert_eq!(r["series_written"], devices * 3, "{r}");
        assert_eq!(r["scenario"]["workload"]["time"], "live", "{r}");
        assert_eq!(r["scenario"]["load"]["rate"], 20.0, "{r}");
        assert!(
            text(&out.stdout).contains("custom (live time) -> prometheus"),
            "{}",
            text(&out.stdout)
        );
        // 10 tables twice a second for 3 s, 3 values each.
        assert!((150..=210).contains(&metrics), "{r}");
        let meters = r#"{__name__=~"meters_.+"}"#;
        match kind {
            ServerKind::Prometheus => {
                assert_eq!(server.prometheus_sample_count(meters, "1h"), metrics);
                assert_eq!(server.prometheus_series_count(meters, "1h"), devices * 3);
            }
            _ => {
                server.vm_flush();
                assert_eq!(server.vm_settled_sample_count(meters), metrics);
                assert_eq!(server.vm_series_count(meters), devices * 3);
                assert_eq!(r["server_series_created"], devices * 3, "{r}");
            }
        }
    }
}

/// iot with series churn, live, its late rows as TSBS's: VictoriaMetrics holds every
/// sample and the series the report says it wrote (a truck's fields in each table it sent
/// a row of: a short-lived truck may miss one), and says it created as many.
#[test]
fn iot_with_churn_lands_live_in_victoria_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start(ServerKind::VictoriaMetrics);
    let (out, r) = run(
        dir.path(),
        &[
            "target.kind=\"prometheus\"".into(),
            format!("target.url=\"{}/api/v1/write\"", vm.base_url()),
            "workload.kind=\"iot\"".into(),
            "workload.scale=10".into(),
            "workload.interval=\"500ms\"".into(),
            "workload.missing_field_ratio=0".into(),
            "workload.time=\"live\"".into(),
            "workload.churn_ratio=0.5".into(),
            "workload.churn_interval=\"1s\"".into(),
            "load.duration=\"3s\"".into(),
        ],
    );
    let metrics = stored_all("vm iot churn", &out, &r);
    // 10 trucks twice a second, a row in each of two tables less 9% missing.
    assert_eq!(r["scenario"]["load"]["rate"], 36.4, "{r}");
    assert!(r["late_rows"].as_u64().unwrap() > 0, "{r}");
    // 10 trucks, a new one in each slot every 2 s of the 3.5 s of data.
    let devices = r["devices_written"].as_u64().unwrap();
    assert!((20..=30).contains(&devices), "{r}");
    vm.vm_flush();
    let trucks = r#"{__name__=~"(readings|diagnostics)_.+"}"#;
    assert_eq!(vm.vm_settled_sample_count(trucks), metrics);
    let series = r["series_written"].as_u64().unwrap();
    assert!(series > devices * 3 && series <= devices * 10, "{r}");
    assert_eq!(vm.vm_series_count(trucks), series, "{r}");
    assert_eq!(r["server_series_created"], series, "{r}");
}
