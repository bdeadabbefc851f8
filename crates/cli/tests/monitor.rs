//! `[monitor]` against a real PostgreSQL started by the testbed: the report's server block
//! sums the CPU of every backend (the postmaster's whole process tree), and agrees with
//! what /proc says over the run, read here independently of tsload.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::time::Duration;

use tsload_testbed::{Server, ServerKind};

mod common;

/// CPU seconds of `pids` (user + system, with reaped children), read from /proc/PID/stat.
fn cpu_seconds(pids: &[u32]) -> f64 {
    let ticks_per_s = 100.0; // USER_HZ on Linux
    let mut ticks = 0.0;
    for pid in pids {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name (which may hold spaces): utime stime cutime cstime are
        // the 12th to 15th fields.
        let after = stat.rsplit(')').next().unwrap_or("");
        let fields: Vec<&str> = after.split_whitespace().collect();
        ticks += (11..=14)
            .filter_map(|i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
            .sum::<f64>();
    }
    ticks / ticks_per_s
}

fn run(dir: &Path, sets: &[String]) -> (std::process::Output, serde_json::Value) {
    let mut args: Vec<String> = ["run", "--json", "r.json", "--progress", "none"]
        .map(String::from)
        .to_vec();
    for s in sets {
        args.push("--set".into());
        args.push(s.clone());
    }
    let out = common::tsload()
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("start tsload");
    let r = std::fs::read_to_string(dir.join("r.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, r)
}

/// [`run`], which must succeed: its standard output and report.
fn run_ok(dir: &Path, sets: &[String]) -> (String, serde_json::Value) {
    let (out, r) = run(dir, sets);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8_lossy(&out.stdout).into_owned(), r)
}

#[test]
fn postgres_server_cpu_is_summed_over_every_backend_and_matches_proc() {
    let pg = Server::start(ServerKind::Postgres)
        .unwrap_or_else(|e| panic!("PostgreSQL did not start: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let url = pg.database_url().unwrap();
    let sets = vec![
        "target.kind=\"postgres\"".to_string(),
        format!("target.url=\"{url}\""),
        "target.drop_existing=true".into(),
        "target.method=\"insert\"".into(),
        "workload.scale=100".into(),
        "workload.end=\"2016-01-02T00:00:00Z\"".into(),
        "load.workers=2".into(),
        "load.batch=200".into(),
        "load.duration=\"4s\"".into(),
        format!("monitor.pid={}", pg.pid()),
        format!("monitor.data_dir=\"{}\"", pg.data_dir().display()),
    ];
    let before = cpu_seconds(&pg.processes());
    let (out, r) = run(dir.path(), &sets);
    // The backends of the run have exited by now and were reaped into the postmaster's
    // children's times; give it a moment to reap the last one.
    std::thread::sleep(Duration::from_millis(300));
    let after = cpu_seconds(&pg.processes());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = &r["server"];
    let reported = server["cpu_s"].as_f64().expect("a server block");
    let measured = after - before;
    eprintln!("server cpu: reported {reported:.2} s, /proc over the run {measured:.2} s");
    for line in stdout.lines().skip_while(|l| !l.starts_with("  server")) {
        eprintln!("{line}");
    }
    assert!(
        measured > 0.5,
        "the load kept PostgreSQL busy: {measured} s"
    );
    assert!(
        (reported - measured).abs() <= 0.2 * measured,
        "reported {reported:.2} s vs /proc {measured:.2} s"
    );
    assert!(
        server["watched"]
            .as_str()
            .unwrap()
            .contains(&pg.pid().to_string())
    );
    assert!(
        server["peak_rss_bytes"].as_u64().unwrap() > 10 << 20,
        "{server}"
    );
    assert!(server["cpu_s_per_million_metrics"].as_f64().unwrap() > 0.0);
    // The table grew on disk: bytes per metric from the data directory.
    assert!(server["disk_bytes_added"].as_u64().unwrap() > 0, "{server}");
    let bpm = server["bytes_per_metric"].as_f64().unwrap();
    assert!(bpm > 0.5 && bpm < 1_000.0, "{bpm}");
    assert!(stdout.contains("  server    cpu "), "{stdout}");
    assert!(stdout.contains("saturated: "), "{stdout}");
}

#[test]
fn a_monitor_that_names_no_process_or_a_missing_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = vec![
        "target.kind=\"null\"".to_string(),
        "workload.scale=1".into(),
    ];
    let (out, _) = run(
        dir.path(),
        &[base.clone(), vec!["monitor.data_dir=\"/tmp\"".into()]].concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("none of pid, process and systemd_unit given"),
        "{e}"
    );
    let (out, _) = run(
        dir.path(),
        &[
            base.clone(),
            vec![
                "monitor.pid=1".into(),
                "monitor.process=\"postgres\"".into(),
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let (out, _) = run(
        dir.path(),
        &[
            base,
            vec!["monitor.process=\"no-such-server-tsload\"".into()],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("[monitor]: processes named no-such-server-tsload and their descendants: no such process"),
        "{e}"
    );
}

/// A 1-hour, 100-host cpu-only load into `server` (line protocol) with its process and
/// data directory watched; returns the report's server block.
fn line_protocol_server_block(server: &Server) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let sets = vec![
        "target.kind=\"influx\"".to_string(),
        format!("target.url=\"{}\"", server.base_url()),
        "workload.scale=100".into(),
        "workload.end=\"2016-01-01T01:00:00Z\"".into(),
        "load.workers=2".into(),
        "load.batch=5000".into(),
        format!("monitor.pid={}", server.pid()),
        format!("monitor.data_dir=\"{}\"", server.data_dir().display()),
    ];
    let (out, r) = run(dir.path(), &sets);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["metrics"], 360_000);
    r["server"].clone()
}

#[test]
fn victoria_metrics_and_influxdb_report_bytes_per_metric() {
    for kind in [ServerKind::VictoriaMetrics, ServerKind::InfluxDb1] {
        let server = Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"));
        let block = line_protocol_server_block(&server);
        let bpm = block["bytes_per_metric"].as_f64().unwrap_or(0.0);
        eprintln!("{kind:?}: {bpm:.3} bytes per metric, {block}");
        assert!(bpm > 0.0 && bpm < 1_000.0, "{kind:?}: {block}");
        assert!(block["cpu_s"].as_f64().unwrap() > 0.0, "{kind:?}: {block}");
    }
}

/// `[monitor] storage = true` alone: the database's own figure for its tables, asked at
/// the start and the end (as it would be of a server on another machine).
fn storage_block(target: &[String]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = target.to_vec();
    sets.extend([
        "workload.scale=100".to_string(),
        "workload.end=\"2016-01-01T02:00:00Z\"".into(),
        "load.workers=2".into(),
        "load.batch=2000".into(),
        "monitor.storage=true".into(),
    ]);
    let (stdout, r) = run_ok(dir.path(), &sets);
    assert_eq!(r["metrics"], 720_000);
    assert!(stdout.contains("  storage   +"), "{stdout}");
    assert!(r.get("server").is_none(), "no process was named: {r}");
    r["storage"].clone()
}

#[test]
fn the_databases_own_storage_figures_give_bytes_per_metric() {
    let pg = Server::start(ServerKind::Postgres).unwrap();
    let maria = Server::start(ServerKind::MariaDb).unwrap();
    let vm = Server::start(ServerKind::VictoriaMetrics).unwrap();
    let influx = Server::start(ServerKind::InfluxDb1).unwrap();
    let questdb = Server::start(ServerKind::QuestDb).unwrap();
    let sqlite_dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "postgres",
            vec![
                "target.kind=\"postgres\"".into(),
                format!("target.url=\"{}\"", pg.database_url().unwrap()),
                "target.drop_existing=true".into(),
            ],
        ),
        (
            "mariadb",
            vec![
                "target.kind=\"mysql\"".into(),
                format!("target.url=\"{}\"", maria.database_url().unwrap()),
                "target.drop_existing=true".into(),
            ],
        ),
        (
            "victoriametrics",
            vec![
                "target.kind=\"influx\"".into(),
                format!("target.url=\"{}\"", vm.base_url()),
            ],
        ),
        (
            "influxdb",
            vec![
                "target.kind=\"influx\"".into(),
                format!("target.url=\"{}\"", influx.base_url()),
            ],
        ),
        (
            "questdb",
            vec![
                "target.kind=\"influx\"".into(),
                format!("target.url=\"{}\"", questdb.base_url()),
                "target.create_database=false".into(),
            ],
        ),
        (
            "sqlite",
            vec![
                "target.kind=\"sqlite\"".into(),
                format!("target.url=\"sqlite:{}/s.db\"", sqlite_dir.path().display()),
            ],
        ),
    ];
    for (name, target) in cases {
        let s = storage_block(&target);
        let added = s["bytes_added"].as_u64().unwrap_or(0);
        let bpm = s["bytes_per_metric"].as_f64().unwrap_or(0.0);
        eprintln!("{name}: +{added} bytes, {bpm:.3} bytes per metric");
        assert!(added > 0, "{name}: {s}");
        assert!(bpm > 0.0 && bpm < 1_000.0, "{name}: {s}");
        assert_eq!(
            s["bytes_after"].as_u64().unwrap() - s["bytes_before"].as_u64().unwrap(),
            added,
            "{name}"
        );
        if name == "victoriametrics" {
            // Read once VictoriaMetrics had flushed what it held in memory: as much as it
            // says it holds after another flush (a figure read before the flush counts
            // only the parts already on disk).
            let flushed = vm_data_size_after_a_flush(&vm);
            let after = s["bytes_after"].as_u64().unwrap();
            eprintln!("victoriametrics: {after} bytes reported, {flushed} after another flush");
            assert!(
                after as f64 >= 0.95 * flushed as f64,
                "victoriametrics: {after} bytes reported, {flushed} once flushed again"
            );
        }
    }
}

/// The sum of VictoriaMetrics' `vm_data_size_bytes` once a flush is in its figures (it
/// recomputes them about once a second).
fn vm_data_size_after_a_flush(vm: &Server) -> u64 {
    vm.vm_flush();
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let metrics = vm.get("/metrics", &[]).expect("GET /metrics").body;
    metrics
        .lines()
        .filter(|l| l.starts_with("vm_data_size_bytes{") || l.starts_with("vm_data_size_bytes "))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A target that cannot say what its tables hold: the report says storage was not
/// measured, and why, rather than leave the figure out silently.
#[test]
fn storage_from_a_target_that_cannot_tell_is_said_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    let sets: Vec<String> = [
        "target.kind=\"null\"",
        "workload.scale=10",
        "workload.end=\"2016-01-01T00:10:00Z\"",
        "monitor.storage=true",
    ]
    .map(String::from)
    .to_vec();
    let (stdout, r) = run_ok(dir.path(), &sets);
    assert!(
        stdout.contains("storage   not measured: the target cannot tell"),
        "{stdout}"
    );
    assert_eq!(r["storage_error"], "the target cannot tell", "{r}");
    assert!(r.get("storage").is_none(), "{r}");
}
