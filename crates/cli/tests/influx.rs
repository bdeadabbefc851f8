//! The line-protocol HTTP target against real servers started on 127.0.0.1 by the testbed
//! (InfluxDB 1.x, VictoriaMetrics, QuestDB): every point tsload reports is in the server,
//! rows read back carry the generated tags and values, retries and rejections are
//! counted and reported as they happened.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

use tsload_testbed::ServerKind;
use tsload_testbed::http_front::{HttpFront, Storm};

mod common;
use common::{start, text};

fn tsload(args: &[&str], dir: &Path) -> Output {
    common::tsload()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

fn report(dir: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(dir.join("r.json")).expect("report written");
    serde_json::from_str(&s).expect("valid JSON")
}

/// `tsload run` of cpu-only (`scale` hosts, `minutes` of data) into `url` with `extra`
/// settings; returns the report.
fn run_into(
    url: &str,
    scale: u32,
    minutes: u32,
    extra: &[&str],
    dir: &Path,
) -> (Output, serde_json::Value) {
    let end = format!(
        "workload.end=\"2016-01-01T{:02}:{:02}:00Z\"",
        minutes / 60,
        minutes % 60
    );
    let mut args = vec![
        "run".to_string(),
        "--set".into(),
        "target.kind=\"influx\"".into(),
        "--set".into(),
        format!("target.url=\"{url}\""),
        "--set".into(),
        format!("workload.scale={scale}"),
        "--set".into(),
        end,
        "--json".into(),
        "r.json".into(),
        "--progress".into(),
        "none".into(),
    ];
    for e in extra {
        args.push("--set".into());
        args.push((*e).into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tsload(&args, dir);
    let r = if dir.join("r.json").exists() {
        report(dir)
    } else {
        serde_json::Value::Null
    };
    (out, r)
}

#[test]
fn victoria_metrics_holds_every_metric_reported_with_the_generated_values() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &vm.base_url(),
        10,
        60,
        &["load.workers=3", "load.batch=1000"],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        vm.log_tail()
    );
    assert_eq!(r["rows"], 3_600);
    assert_eq!(r["metrics"], 36_000);
    assert_eq!(r["errors"], serde_json::json!({}));
    vm.vm_flush();
    assert_eq!(vm.vm_sample_count("{__name__=~\"cpu_.*\"}"), 36_000);

    // The first generated line of host_3 against what VictoriaMetrics returns for it.
    let generated = tsload(
        &[
            "generate",
            "--set",
            "workload.scale=10",
            "--set",
            "workload.end=\"2016-01-01T01:00:00Z\"",
        ],
        dir.path(),
    );
    assert!(generated.status.success());
    let lines = text(&generated.stdout);
    let line = lines
        .lines()
        .find(|l| l.starts_with("cpu,hostname=host_3,"))
        .unwrap();
    let (key, rest) = line.split_once(' ').unwrap();
    let (fields, ts) = rest.split_once(' ').unwrap();
    let export = vm.vm_export("cpu_usage_idle{hostname=\"host_3\"}").unwrap();
    let series: serde_json::Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    for tag in key.split(',').skip(1) {
        let (k, v) = tag.split_once('=').unwrap();
        assert_eq!(series["metric"][k], v, "tag {k}");
    }
    let idle: f64 = fields
        .split(',')
        .find_map(|f| f.strip_prefix("usage_idle="))
        .unwrap()
        .trim_end_matches('i')
        .parse()
        .unwrap();
    let ts_ms: i64 = ts.parse::<i64>().unwrap() / 1_000_000;
    assert_eq!(series["timestamps"][0], ts_ms);
    assert_eq!(series["values"][0].as_f64().unwrap(), idle);
    assert_eq!(series["values"].as_array().unwrap().len(), 360);
}

#[test]
fn gzip_bodies_reach_victoria_metrics_whole() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &vm.base_url(),
        4,
        30,
        &["target.gzip=true", "load.batch=100"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["metrics"], 7_200);
    // Compressed bodies: far fewer bytes than the ~340 of each line.
    assert!(r["bytes"].as_u64().unwrap() < 720 * 200, "{}", r["bytes"]);
    vm.vm_flush();
    assert_eq!(vm.vm_sample_count("{__name__=~\"cpu_.*\"}"), 7_200);
}

#[test]
fn influxdb_counts_every_point_of_devops() {
    let influx = start(ServerKind::InfluxDb1);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &influx.base_url(),
        2,
        10,
        &[
            "workload.kind=\"devops\"",
            "target.db=\"ops\"",
            "load.workers=2",
            "load.batch=50",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        influx.log_tail()
    );
    assert_eq!(r["rows"], 2 * 60 * 9);
    assert_eq!(r["metrics"], 2 * 60 * 101);
    let mut points = 0;
    let mut fields = 0;
    for (m, first_field) in [
        ("cpu", "usage_user"),
        ("diskio", "reads"),
        ("disk", "total"),
        ("kernel", "boot_time"),
        ("mem", "total"),
        ("net", "bytes_sent"),
        ("nginx", "accepts"),
        ("postgresl", "numbackends"),
        ("redis", "uptime_in_seconds"),
    ] {
        points += influx.influx_count("ops", m, first_field).unwrap();
        let v = influx
            .influx_query("ops", &format!("SELECT count(*) FROM \"{m}\""))
            .unwrap();
        let row = &v["results"][0]["series"][0]["values"][0];
        fields += row.as_array().unwrap()[1..]
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum::<u64>();
    }
    assert_eq!(points, 2 * 60 * 9);
    assert_eq!(fields, 2 * 60 * 101);
}

#[test]
fn influxdb_field_type_conflict_stops_the_run_with_the_servers_message() {
    let influx = start(ServerKind::InfluxDb1);
    let dir = tempfile::tempdir().unwrap();
    influx.influx_create_db("conflict").unwrap();
    influx
        .write_lines(
            Some("conflict"),
            "cpu,hostname=host_0 usage_user=\"text\" 1451606400000000000",
        )
        .unwrap();
    let (out, r) = run_into(
        &influx.base_url(),
        2,
        1,
        &[
            "target.db=\"conflict\"",
            "load.max_retries=5",
            "load.workers=1",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("field type conflict"), "{stderr}");
    assert!(stderr.contains("HTTP 400"), "{stderr}");
    assert_eq!(r["retries"], 0, "a 400 is not retried");
    assert_eq!(r["errors"]["rejected"], 1);
    assert_eq!(r["failed_rows"], 12);
    assert_eq!(r["stop_reason"], "fatal error");
}

#[test]
fn questdb_counts_every_row() {
    let qdb = start(ServerKind::QuestDb);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &qdb.base_url(),
        5,
        20,
        &["target.create_database=false", "load.batch=100"],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        qdb.log_tail()
    );
    assert_eq!(r["rows"], 600);
    // questdb_count waits until QuestDB has applied its write-ahead log.
    assert_eq!(qdb.questdb_count("cpu"), 600, "{}", qdb.log_tail());
}

#[test]
fn two_500s_are_retried_and_the_data_is_written_once() {
    let vm = start(ServerKind::VictoriaMetrics);
    let front = HttpFront::start(vm.http_addr(), Storm::of(500, 2));
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &front.url,
        3,
        10,
        &[
            "load.retry_backoff=\"10ms\"",
            "load.batch=30",
            "target.create_database=false",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["retries"], 2);
    assert_eq!(r["errors"]["unavailable"], 2);
    // A 500 may have been applied: each failed attempt's 30 rows are counted ambiguous
    // (here the front stored nothing, so the bound is loose, never wrong).
    assert_eq!(r["ambiguous_rows"], 60);
    assert_eq!(r["rows"], 180);
    assert_eq!(r["requests"], 6);
    assert_eq!(front.seen(), 8, "6 batches + 2 failed attempts");
    vm.vm_flush();
    assert_eq!(
        vm.vm_sample_count("{__name__=~\"cpu_.*\"}"),
        1_800,
        "each point once"
    );
}

#[test]
fn replaying_a_tsbs_file_into_victoria_metrics_writes_every_point_of_it() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let sample = format!(
        "{}/../../testdata/tsbs/cpu-only-seed123-scale10-1h.influx.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = tsload(
        &[
            "run",
            "--set",
            "workload.kind=\"file\"",
            "--set",
            &format!("workload.path=\"{sample}\""),
            "--set",
            "target.kind=\"influx\"",
            "--set",
            &format!("target.url=\"{}\"", vm.base_url()),
            "--set",
            "load.workers=3",
            "--set",
            "load.batch=500",
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report(dir.path());
    assert_eq!(r["rows"], 3_600, "the file's lines");
    assert_eq!(r["metrics"], 36_000);
    assert_eq!(vm.vm_sample_count("{__name__=~\"cpu_.*\"}"), 36_000);
    assert_eq!(vm.vm_series_count("{__name__=\"cpu_usage_user\"}"), 10);
}

#[test]
fn a_replayed_file_goes_to_a_line_protocol_server_as_written_when_the_units_match() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    // `2.50` and `1.000` would be encoded again as `2.5` and `1`.
    let file = "m,host=a x=2.50,y=7i 1451606400000000000\n\
                m,host=b x=1.000,y=3i 1451606410000000000\n";
    std::fs::write(dir.path().join("f.influx"), file).unwrap();
    let run = |target_precision: &str| {
        let (out, r) = common::run_sets(
            dir.path(),
            &[
                "workload.kind=\"file\"".to_string(),
                "workload.path=\"f.influx\"".into(),
                "target.kind=\"influx\"".into(),
                format!("target.url=\"{}\"", vm.base_url()),
                format!("target.precision=\"{target_precision}\""),
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        r
    };
    // The file's unit is the target's: its lines go out byte for byte.
    let r = run("ns");
    assert_eq!(r["rows"], 2);
    assert_eq!(r["metrics"], 4);
    assert_eq!(r["bytes"], file.len(), "the file's own bytes");
    vm.vm_flush();
    assert_eq!(vm.vm_sample_count("{__name__=~\"m_.*\"}"), 4);
    // Another unit: each line is parsed and encoded again, in milliseconds.
    let r = run("ms");
    assert_eq!(r["metrics"], 4);
    let encoded = "m,host=a x=2.5,y=7i 1451606400000\nm,host=b x=1,y=3i 1451606410000\n";
    assert_eq!(r["bytes"], encoded.len(), "encoded again");
}

#[test]
fn out_influx_pushes_every_interval_of_the_run_into_victoria_metrics() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let out = tsload(
        &[
            "run",
            "--target",
            "null",
            "-r",
            "20000",
            "-b",
            "100",
            "-d",
            "2s",
            "--set",
            "load.report_interval=\"250ms\"",
            "--out",
            &format!("influx={}/write?db=selfmetrics", vm.base_url()),
            "--out",
            "csv=i.csv",
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows_reported = report(dir.path())["rows"].as_u64().unwrap();
    let intervals = std::fs::read_to_string(dir.path().join("i.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    let series = vm
        .vm_export_json("{__name__=\"tsload_rows\",stream=\"write\"}")
        .unwrap();
    assert_eq!(series.len(), 1, "{series:?}");
    let values = series[0]["values"].as_array().unwrap();
    assert_eq!(
        values.len(),
        intervals,
        "one sample per interval: {series:?}"
    );
    let sum: u64 = values.iter().map(|v| v.as_f64().unwrap() as u64).sum();
    assert_eq!(sum, rows_reported, "the intervals add up to the run");
    // The latency and rate fields came along.
    assert_eq!(
        vm.vm_sample_count("{__name__=\"tsload_p99_ms\"}") as usize,
        intervals
    );
}

/// An unreachable `--out influx` server is said once, and the URL's secrets stay out of
/// what is said and of the report.
#[test]
fn out_influx_to_a_closed_port_never_shows_its_secrets() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let out = tsload(
        &[
            "run",
            "--target",
            "null",
            "-r",
            "20000",
            "-d",
            "1s",
            "--set",
            "load.report_interval=\"250ms\"",
            "--out",
            &format!("influx=http://me:pw1@{closed}/write?db=x&u=me&p=s3cret&token=t0ken"),
            "--json",
            "r.json",
            "--progress",
            "none",
        ],
        dir.path(),
    );
    let stderr = text(&out.stderr);
    let stdout = text(&out.stdout);
    let json = std::fs::read_to_string(dir.path().join("r.json")).unwrap_or_default();
    assert!(stderr.contains("--out influx="), "{stderr}");
    assert!(
        stderr.to_lowercase().contains("connect"),
        "the reason is said: {stderr}"
    );
    for secret in ["pw1", "s3cret", "t0ken"] {
        for (what, said) in [("stderr", &stderr), ("stdout", &stdout), ("report", &json)] {
            assert!(!said.contains(secret), "{secret} in {what}: {said}");
        }
    }
}

/// `--target http://host/write`: the kind adds its write path, and InfluxDB's "404 page
/// not found" was all the run said.
#[test]
fn a_404_names_the_url_asked() {
    let influx = start(ServerKind::InfluxDb1);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/write", influx.base_url());
    let out = tsload(
        &["run", "--target", &url, "-n", "100", "--progress", "none"],
        dir.path(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "(asked {url}/write: target.url is the server's base URL"
        )),
        "{stderr}"
    );
}

/// iot's numeric tags (load_capacity, fuel_capacity, nominal_fuel_consumption) go out as
/// fields of every line, as TSBS sends them, and VictoriaMetrics stores each as a sample:
/// the report counted 98,824 metrics for 158,824 stored. It counts what it sent.
#[test]
fn iot_over_line_protocol_counts_the_numeric_tags_it_sends_as_fields() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &vm.base_url(),
        5,
        20,
        &["workload.kind=\"iot\"", "load.batch=100"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = r["rows"].as_u64().unwrap();
    let metrics = r["metrics"].as_u64().unwrap();
    vm.vm_flush();
    let held = vm.vm_settled_sample_count(r#"{__name__=~".+"}"#);
    assert_eq!(held, metrics, "{r}");
    assert_eq!(r["stored"]["samples"], metrics, "{r}");
    // Three numeric tags on every row, beside its own fields.
    let capacities = vm.vm_settled_sample_count(r#"{__name__=~".+_load_capacity"}"#);
    assert_eq!(capacities, rows, "{r}");
}

/// `--out influx=` into a database that does not exist failed only after the whole run.
#[test]
fn out_influx_to_a_missing_database_is_refused_before_the_run() {
    let influx = start(ServerKind::InfluxDb1);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/write?db=no_such_db", influx.base_url());
    let out = tsload(
        &[
            "run",
            "--target",
            "null",
            "-n",
            "1000",
            "--progress",
            "none",
            "--json",
            "r.json",
            "--out",
            &format!("influx={url}"),
        ],
        dir.path(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the server answered an empty write with HTTP 404")
            && stderr.contains("database not found")
            && stderr.contains("the run did not start"),
        "{stderr}"
    );
    assert!(!dir.path().join("r.json").exists(), "it ran");
}
