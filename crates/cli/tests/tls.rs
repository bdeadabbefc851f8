//! TLS against real servers started with TLS on, their certificates signed by a CA made
//! in the test: every row lands (count == report) in VictoriaMetrics, InfluxDB 1.x,
//! PostgreSQL and MariaDB; a client given the wrong CA fails with a clear error and no
//! retries; TLS settings that cannot apply are refused before anything runs.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

use tsload_testbed::{Server, ServerKind, TestCa};

mod common;
use common::text;

fn tsload(args: &[String], dir: &Path) -> Output {
    common::tsload()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

/// cpu-only, 3 hosts x 10 minutes = 180 rows, 1,800 metrics.
const ROWS: u64 = 180;

/// `tsload run` with `sets`; the report when one was written.
fn run(sets: &[String], dir: &Path) -> (Output, Option<serde_json::Value>) {
    let _ = std::fs::remove_file(dir.join("r.json"));
    let mut args: Vec<String> = ["run", "--json", "r.json", "--progress", "none"]
        .map(String::from)
        .to_vec();
    for s in [
        "workload.scale=3",
        "workload.end=\"2016-01-01T00:10:00Z\"",
        "load.workers=2",
        "load.batch=50",
        "load.max_retries=2",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(sets.iter().cloned())
    {
        args.push("--set".into());
        args.push(s);
    }
    let out = tsload(&args, dir);
    let report = std::fs::read_to_string(dir.join("r.json"))
        .ok()
        .map(|s| serde_json::from_str(&s).expect("valid JSON"));
    (out, report)
}

fn start_tls(kind: ServerKind, ca: &TestCa) -> Server {
    Server::start_tls(kind, ca).unwrap_or_else(|e| panic!("{kind:?} with TLS did not start: {e}"))
}

fn ca(name: &str) -> TestCa {
    TestCa::new(name).unwrap_or_else(|e| panic!("making a test CA: {e}"))
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// The target settings for a server: line protocol to its HTTPS base URL, or its SQL URL.
fn target(server: &Server) -> Vec<String> {
    match server.kind() {
        ServerKind::Postgres | ServerKind::TimescaleDb | ServerKind::MariaDb => {
            let kind = if server.kind().is_postgres() {
                "postgres"
            } else {
                "mysql"
            };
            let mut sets = vec![
                format!("target.kind=\"{kind}\""),
                format!(
                    "target.url=\"{}\"",
                    server.database_url().expect("a SQL server")
                ),
                "target.drop_existing=true".into(),
            ];
            if server.kind() == ServerKind::TimescaleDb {
                sets.push("target.hypertable=true".into());
                sets.push("target.layout=\"tags\"".into());
            }
            sets
        }
        _ => {
            assert!(
                server.base_url().starts_with("https://"),
                "{}",
                server.base_url()
            );
            vec![
                "target.kind=\"influx\"".into(),
                format!("target.url=\"{}\"", server.base_url()),
            ]
        }
    }
}

/// A run with the right CA lands every row; one trusting another CA fails on the
/// certificate, says what to do, and is not retried.
fn check_server(kind: ServerKind, stored: impl Fn(&Server) -> u64) {
    let right = ca("right");
    let wrong = ca("wrong");
    let server = start_tls(kind, &right);
    let dir = tempfile::tempdir().unwrap();
    let with_ca = |ca: &TestCa| {
        let mut sets = target(&server);
        sets.push(format!("target.ca_file=\"{}\"", path(&ca.ca_file())));
        sets
    };

    let (out, report) = run(&with_ca(&wrong), dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{kind:?} with the wrong CA: {stderr}"
    );
    assert!(
        stderr.contains("certificate") && stderr.contains("target.ca_file"),
        "{kind:?}: the error names the certificate and the key to set: {stderr}"
    );
    if let Some(r) = report {
        assert_eq!(
            r["retries"], 0,
            "{kind:?}: a certificate error is not retried: {r}"
        );
    }

    let (out, report) = run(&with_ca(&right), dir.path());
    assert!(
        out.status.success(),
        "{kind:?}: {}\n{}",
        text(&out.stderr),
        server.log_tail()
    );
    let r = report.expect("report written");
    assert_eq!(r["rows"], ROWS, "{r}");
    assert_eq!(r["errors"], serde_json::json!({}), "{r}");
    assert_eq!(
        stored(&server),
        ROWS,
        "{kind:?}: rows stored == rows reported"
    );
}

#[test]
fn victoria_metrics_over_https_stores_every_row_and_refuses_a_wrong_ca() {
    check_server(ServerKind::VictoriaMetrics, |vm| {
        vm.vm_flush();
        vm.vm_sample_count("{__name__=\"cpu_usage_user\"}")
    });
}

#[test]
fn influxdb_over_https_stores_every_row_and_refuses_a_wrong_ca() {
    check_server(ServerKind::InfluxDb1, |influx| {
        influx
            .influx_count("benchmark", "cpu", "usage_user")
            .expect("count")
    });
}

#[test]
fn postgres_over_tls_stores_every_row_and_refuses_a_wrong_ca() {
    check_server(ServerKind::Postgres, |pg| pg.sql_count("cpu"));
}

#[test]
fn timescaledb_over_tls_stores_every_row_and_refuses_a_wrong_ca() {
    check_server(ServerKind::TimescaleDb, |db| db.sql_count("cpu"));
}

#[test]
fn mariadb_over_tls_stores_every_row_and_refuses_a_wrong_ca() {
    check_server(ServerKind::MariaDb, |db| db.sql_count("cpu"));
}

#[test]
fn insecure_skip_verify_encrypts_without_a_ca_and_says_so_in_the_plan() {
    let server = start_tls(ServerKind::VictoriaMetrics, &ca("any"));
    let dir = tempfile::tempdir().unwrap();
    let mut sets = target(&server);
    // Without a CA, Mozilla's roots do not know the test CA: refused.
    let (out, _) = run(&sets, dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    sets.push("target.insecure_skip_verify=true".into());
    let (out, report) = run(&sets, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = report.unwrap();
    assert_eq!(r["rows"], ROWS);
    assert_eq!(r["scenario"]["target"]["insecure_skip_verify"], true, "{r}");
}

#[test]
fn tls_settings_that_cannot_apply_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("settings");
    let validate = |sets: &[&str]| {
        let mut args = vec!["validate".to_string()];
        for s in sets {
            args.push("--set".into());
            args.push(s.to_string());
        }
        let out = tsload(&args, dir.path());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{sets:?}: {}",
            text(&out.stderr)
        );
        text(&out.stderr)
    };
    let ca_set = format!("target.ca_file=\"{}\"", path(&ca.ca_file()));
    let e = validate(&[
        "target.kind=\"influx\"",
        "target.url=\"http://127.0.0.1:1\"",
        &ca_set,
    ]);
    assert!(
        e.contains("key `target.ca_file`") && e.contains("does not ask for TLS"),
        "{e}"
    );
    let e = validate(&[
        "target.kind=\"influx\"",
        "target.url=\"https://127.0.0.1:1\"",
        "target.ca_file=\"/nonexistent/ca.pem\"",
    ]);
    assert!(
        e.contains("key `target.ca_file`") && e.contains("/nonexistent/ca.pem"),
        "{e}"
    );
    let e = validate(&[
        "target.kind=\"influx\"",
        "target.url=\"https://127.0.0.1:1\"",
        &ca_set,
        "target.insecure_skip_verify=true",
    ]);
    assert!(e.contains("give one of the two"), "{e}");
    let e = validate(&[
        "target.kind=\"postgres\"",
        "target.url=\"postgres://u@127.0.0.1:1/d?sslmode=require\"",
        &ca_set,
    ]);
    assert!(e.contains("sets sslmode already"), "{e}");
    // Every spelling sqlx reads counts: a CA in the URL, MySQL's sslca.
    let e = validate(&[
        "target.kind=\"postgres\"",
        "target.url=\"postgres://u@127.0.0.1:1/d?sslrootcert=/x.pem\"",
        "target.insecure_skip_verify=true",
    ]);
    assert!(
        e.contains("key `target.insecure_skip_verify`") && e.contains("sets sslrootcert already"),
        "{e}"
    );
    let e = validate(&[
        "target.kind=\"mysql\"",
        "target.url=\"mysql://u@127.0.0.1:1/d?sslca=/x.pem\"",
        &ca_set,
    ]);
    assert!(e.contains("sets sslca already"), "{e}");
    // insecure_skip_verify = false asks for nothing: the URL's own mode stands.
    let mut args = vec!["validate".to_string()];
    for s in [
        "target.kind=\"postgres\"",
        "target.url=\"postgres://u@127.0.0.1:1/d?sslmode=require\"",
        "target.insecure_skip_verify=false",
    ] {
        args.push("--set".into());
        args.push(s.into());
    }
    let out = tsload(&args, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let e = validate(&["target.kind=\"influx\"", "target.url=\"ftp://127.0.0.1:1\""]);
    assert!(e.contains("not an HTTP URL"), "{e}");
}

/// Through the delay proxy, an https server named by host name keeps its name for the
/// certificate check (the connection goes to the proxy): every row lands, and the RTT
/// probe goes through the proxy too (it sees the delay). A verified TLS connection to a
/// named SQL server, which cannot be pointed elsewhere, is refused with the reason; by
/// address it goes through the proxy.
#[test]
fn a_delay_proxy_in_front_of_tls_keeps_the_certificate_name() {
    let right = ca("right");
    let vm = start_tls(ServerKind::VictoriaMetrics, &right);
    let dir = tempfile::tempdir().unwrap();
    let named = vm.base_url().replace("127.0.0.1", "localhost");
    let proxied = |kind: &str, url: &str| {
        vec![
            format!("target.kind=\"{kind}\""),
            format!("target.url=\"{url}\""),
            format!("target.ca_file=\"{}\"", path(&right.ca_file())),
            "network.backend=\"proxy\"".into(),
            "network.delay=\"5ms\"".into(),
            "network.probe=\"app\"".into(),
            "network.probe_count=5".into(),
            "network.probe_path=\"/health\"".into(),
        ]
    };
    let (out, report) = run(&proxied("influx", &named), dir.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("network: proxy"), "{stderr}");
    assert!(stderr.contains("TLS to the name localhost"), "{stderr}");
    let r = report.expect("report written");
    assert_eq!(r["rows"], ROWS, "{r}");
    // 5 ms each way is added on the way to the server only (direction up).
    let rtt = r["rtt"]["latency"]["p50_ms"].as_f64().unwrap();
    assert!(
        rtt >= 4.5,
        "the probe bypassed the proxy: p50 {rtt} ms\n{r}"
    );
    let write = r["latency"]["p50_ms"].as_f64().unwrap();
    assert!(
        write >= 4.5,
        "the writes bypassed the proxy: p50 {write} ms\n{r}"
    );
    vm.vm_flush();
    assert_eq!(vm.vm_sample_count("{__name__=~\"cpu_.*\"}"), ROWS * 10);

    let pg = start_tls(ServerKind::Postgres, &right);
    let by_address = pg.database_url().unwrap();
    let mut sets = proxied("postgres", &by_address);
    sets.retain(|s| !s.starts_with("network.probe_path"));
    sets.push("target.drop_existing=true".into());
    let (out, report) = run(&sets, dir.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = report.expect("report written");
    assert_eq!(r["rows"], ROWS, "{r}");
    let rtt = r["rtt"]["latency"]["p50_ms"].as_f64().unwrap();
    assert!(rtt >= 4.5, "p50 {rtt} ms\n{r}");

    let named = by_address.replace("127.0.0.1", "localhost");
    let (out, _) = run(&proxied("postgres", &named), dir.path());
    let stderr = text(&out.stderr);
    // Refused while the scenario is read, before anything connects.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("instead of localhost") && stderr.contains("use backend = \"netem\""),
        "{stderr}"
    );
}

/// `tsload probe app` applies `--ca-file` / `--insecure-skip-verify` to SQL URLs too: the
/// right CA answers every `SELECT 1`, another CA fails on the certificate; the flags with
/// an http:// URL, or with TLS keys already in the URL, are refused.
#[test]
fn probe_app_takes_the_tls_flags_for_sql_urls() {
    let right = ca("right");
    let wrong = ca("wrong");
    let dir = tempfile::tempdir().unwrap();
    for kind in [ServerKind::Postgres, ServerKind::MariaDb] {
        let server = start_tls(kind, &right);
        let url = server.database_url().unwrap();
        let probe = |extra: &[&str]| {
            let mut args: Vec<String> = ["probe", "app", &url, "--count", "3", "--interval"]
                .map(String::from)
                .to_vec();
            args.push("10ms".into());
            args.extend(extra.iter().map(|s| s.to_string()));
            tsload(&args, dir.path())
        };
        let ok = probe(&["--ca-file", &path(&right.ca_file())]);
        assert!(ok.status.success(), "{kind:?}: {}", text(&ok.stderr));
        assert!(
            text(&ok.stdout).contains("3 received"),
            "{}",
            text(&ok.stdout)
        );
        let bad = probe(&["--ca-file", &path(&wrong.ca_file())]);
        assert!(!bad.status.success(), "{kind:?}: {}", text(&bad.stdout));
        let e = text(&bad.stderr).to_lowercase();
        assert!(e.contains("certificate"), "{kind:?}: {e}");
        // (--insecure-skip-verify becomes sslmode=require / ssl-mode=REQUIRED: a unit
        // test of sql_tls; these servers also take plain connections, so a run here
        // could not tell.)
    }
    let twice = tsload(
        &[
            "probe".into(),
            "app".into(),
            "postgres://u@127.0.0.1:1/db?sslmode=require".into(),
            "--insecure-skip-verify".into(),
        ],
        dir.path(),
    );
    assert!(!twice.status.success());
    assert!(
        text(&twice.stderr).contains("sets sslmode already"),
        "{}",
        text(&twice.stderr)
    );
    let plain = tsload(
        &[
            "probe".into(),
            "app".into(),
            "http://127.0.0.1:1/health".into(),
            "--insecure-skip-verify".into(),
        ],
        dir.path(),
    );
    assert!(!plain.status.success());
    assert!(
        text(&plain.stderr).contains("not encrypted"),
        "{}",
        text(&plain.stderr)
    );
}
