//! What the server stored, beside what it acknowledged: after a write run tsload asks the
//! server itself (`output.verify`, on by default), and a server that acknowledged rows
//! and then dropped them fails the run with its own reason, never a success.
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

fn run(dir: &Path, url: &str, kind: &str, sets: &[&str]) -> (Output, serde_json::Value) {
    let mut all = vec![
        format!("target.kind=\"{kind}\""),
        format!("target.url=\"{url}\""),
        "workload.scale=3".into(),
        "load.batch=100".into(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    common::run_sets(dir, &all)
}

#[test]
fn victoria_metrics_dropping_old_samples_fails_the_run_with_its_reason() {
    // VictoriaMetrics as installed: a month's retention, counted back from now.
    let vm = Server::start_with(ServerKind::VictoriaMetrics, &[("retentionPeriod", "1")])
        .expect("VictoriaMetrics starts");
    let dir = tempfile::tempdir().unwrap();
    let url = vm.base_url();
    // TSBS's default data set lies in 2016: every sample is refused as too old.
    let (out, r) = run(
        dir.path(),
        &url,
        "influx",
        &["workload.end=\"2016-01-01T00:10:00Z\""],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("small_timestamp") && stderr.contains("now-1d"),
        "{stderr}"
    );
    assert_eq!(r["rows"], 180, "{r}");
    assert_eq!(r["stored"]["samples"], 0, "{r}");
    assert_eq!(r["stored"]["refused"]["small_timestamp"], 1800, "{r}");
    assert!(r["stored_shortfall"].is_string(), "{r}");
    // The same load placed in the last hour is kept, and the report says so.
    let (out, r) = run(
        dir.path(),
        &url,
        "influx",
        &["workload.start=\"now-1h\"", "workload.end=\"now\""],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["stored"]["samples"], r["metrics"], "{r}");
    assert!(r.get("stored_shortfall").is_none(), "{r}");
    // The questions took their time outside the run's: VictoriaMetrics publishes its
    // counters up to a second late, and its page is asked again (every 100 ms) until it is
    // made anew, before and after.
    for when in ["before_s", "after_s"] {
        let s = r["server_questions"][when].as_f64().unwrap();
        assert!((0.1..30.0).contains(&s), "{when}: {r}");
    }
    assert!(
        text(&out.stdout).contains("asked     the server "),
        "{}",
        text(&out.stdout)
    );
    // A taosBenchmark-style super table places its data with its own key: the advice
    // named workload.start, which `custom` refuses.
    let custom = format!("{}/../../configs/custom.toml", env!("CARGO_MANIFEST_DIR"));
    let out = common::tsload()
        .args(["run", &custom, "--progress", "none", "-n", "200"])
        .args(["--set", "target.kind=\"influx\""])
        .args(["--set", &format!("target.url=\"{url}\"")])
        .args(["--set", "target.create_database=false"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("place it inside with workload.start_timestamp = \"now-1d\""),
        "{stderr}"
    );
    // Not asked: no figure, and no verdict.
    let (out, r) = run(
        dir.path(),
        &url,
        "influx",
        &[
            "workload.end=\"2016-01-01T00:10:00Z\"",
            "output.verify=false",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(r.get("stored").is_none(), "{r}");
}

#[test]
fn sql_and_line_protocol_servers_count_what_they_stored() {
    let dir = tempfile::tempdir().unwrap();
    let end = "workload.end=\"2016-01-01T00:10:00Z\"";
    for kind in [
        ServerKind::Postgres,
        ServerKind::MariaDb,
        ServerKind::ClickHouse,
        ServerKind::InfluxDb1,
    ] {
        let server = start(kind);
        let (url, target) = match kind {
            ServerKind::Postgres => (server.database_url().unwrap(), "postgres"),
            ServerKind::MariaDb => (server.database_url().unwrap(), "mysql"),
            ServerKind::ClickHouse => (server.base_url(), "clickhouse"),
            _ => (server.base_url(), "influx"),
        };
        let mut sets = vec![end];
        if kind.is_sql() || kind == ServerKind::ClickHouse {
            sets.push("target.drop_existing=true");
        }
        let (out, r) = run(dir.path(), &url, target, &sets);
        assert!(out.status.success(), "{kind:?}: {}", text(&out.stderr));
        assert_eq!(r["stored"]["rows"], r["rows"], "{kind:?}: {r}");
        assert_eq!(r["rows"], 180, "{kind:?}: {r}");
        // SQL servers count the rows of the run's own hosts (per `hostname`); InfluxDB's
        // points per database are every writer's.
        let own = kind != ServerKind::InfluxDb1;
        assert_eq!(
            r["stored"]["own_devices"].as_bool().unwrap_or(false),
            own,
            "{kind:?}: {r}"
        );
        assert_eq!(
            r["stored"]["server_wide"].as_bool().unwrap_or(false),
            !own,
            "{kind:?}: {r}"
        );
        assert!(
            text(&out.stdout).contains("rows, per the server"),
            "{kind:?}: {}",
            text(&out.stdout)
        );
    }
}

/// Another writer into the same VictoriaMetrics during the run: its samples grew the
/// server-wide counter too, and the report said "stored" of them (two shards each said
/// 2,160,000 for their own 1,080,000). Now the run claims no figure, and says why.
#[test]
fn another_writer_into_the_same_server_is_detected_and_no_stored_figure_is_claimed() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let url = vm.base_url();
    // The other writer: a line every 20 ms from before tsload starts until it has ended,
    // so it writes inside the run's window whatever the machine's speed.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, addr) = (stop.clone(), vm.http_addr());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = format!("other,host=x value={n}i\n");
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                use std::io::{Read as _, Write as _};
                write!(
                    s,
                    "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                let mut answer = String::new();
                let _ = s.read_to_string(&mut answer);
                assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            n
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (out, r) = run(
        dir.path(),
        &url,
        "influx",
        &["workload.start=\"now-1h\"", "workload.end=\"now-50m\""],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().unwrap();
    let stderr = text(&out.stderr);
    assert!(written > 10, "the other writer wrote {written} lines");
    assert!(out.status.success(), "{stderr}");
    assert!(r.get("stored").is_none(), "{r}");
    let why = r["stored_error"].as_str().unwrap();
    assert!(
        why.starts_with("the server's server-wide counts grew by")
            && why.contains("another writer is counted in them"),
        "{why}"
    );
    assert!(
        text(&out.stdout).contains("stored    not known: the server's server-wide counts"),
        "{}",
        text(&out.stdout)
    );
    // Alone again, the count is the run's.
    let (out, r) = run(
        dir.path(),
        &url,
        "influx",
        &["workload.start=\"now-40m\"", "workload.end=\"now-30m\""],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(r["stored"]["samples"], r["metrics"], "{r}");
    assert_eq!(r["stored"]["server_wide"], true, "{r}");
}
