//! The line-protocol HTTP target against real servers started on 127.0.0.1 by the testbed
//! (InfluxDB 1.x, VictoriaMetrics, QuestDB): every point tsload reports is in the server,
//! rows read back carry the generated tags and values, retries and rejections are
//! counted and reported as they happened.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tsload_testbed::{Server, ServerKind};

fn tsload(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tsload"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn report(dir: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(dir.join("r.json")).expect("report written");
    serde_json::from_str(&s).expect("valid JSON")
}

fn start(kind: ServerKind) -> Server {
    Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"))
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

/// An HTTP front for `upstream` that answers 500 to the first `failures` requests and
/// passes the others through; counts the requests it saw.
fn flaky_front(upstream: std::net::SocketAddr, failures: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let counter = counter.clone();
            std::thread::spawn(move || serve(conn, upstream, failures, &counter));
        }
    });
    (url, seen)
}

fn serve(conn: TcpStream, upstream: std::net::SocketAddr, failures: usize, seen: &AtomicUsize) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut head = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            let end = line == "\r\n";
            head.extend_from_slice(line.as_bytes());
            if end {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let n = seen.fetch_add(1, Ordering::SeqCst);
        if n < failures {
            let msg = "injected failure";
            write!(
                conn,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\n\r\n{msg}",
                msg.len()
            )
            .unwrap();
            continue;
        }
        // Pass the request through unchanged on a fresh upstream connection.
        let mut up = TcpStream::connect(upstream).unwrap();
        let head = String::from_utf8(head).unwrap();
        let head = format!(
            "{}\r\nconnection: close\r\n\r\n",
            head.trim_end_matches("\r\n")
        );
        up.write_all(head.as_bytes()).unwrap();
        up.write_all(&body).unwrap();
        let mut answer = Vec::new();
        up.read_to_end(&mut answer).unwrap();
        // Keep our own connection open: strip a `connection: close` from the answer.
        let answer = String::from_utf8_lossy(&answer)
            .replace("Connection: close\r\n", "")
            .replace("connection: close\r\n", "");
        conn.write_all(answer.as_bytes()).unwrap();
    }
}

#[test]
fn two_500s_are_retried_and_the_data_is_written_once() {
    let vm = start(ServerKind::VictoriaMetrics);
    let (front, seen) = flaky_front(vm.http_addr(), 2);
    let dir = tempfile::tempdir().unwrap();
    let (out, r) = run_into(
        &front,
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
    assert_eq!(r["rows"], 180);
    assert_eq!(r["requests"], 6);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        8,
        "6 batches + 2 failed attempts"
    );
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
