//! The network side of `tsload run`, `tsload proxy` and `tsload probe` against real servers
//! on 127.0.0.1: a run through the in-process delay proxy lands every row and its probe
//! sees the added delay; the stand-alone proxy adds its delay to an application ping.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{start, text, tsload};

fn run_pg(pg: &Server, dir: &Path, sets: &[&str]) -> (Output, serde_json::Value) {
    let url = pg.database_url().unwrap();
    let mut cmd = tsload();
    cmd.args(["run", "--json", "r.json", "--progress", "none"])
        .args(["--set", "target.kind=\"postgres\""])
        .args(["--set", &format!("target.url=\"{url}\"")])
        .args(["--set", "target.drop_existing=true"])
        .args(["--set", "workload.scale=5"])
        .args(["--set", "workload.end=\"2016-01-01T00:30:00Z\""])
        .args(["--set", "load.batch=100"])
        .current_dir(dir);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("start tsload");
    let r = if out.status.success() {
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap()
    } else {
        serde_json::Value::Null
    };
    (out, r)
}

#[test]
fn a_run_through_the_proxy_lands_every_row_and_its_probe_sees_the_delay() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let mut p50 = Vec::new();
    for delay in ["0ms", "5ms"] {
        let d = format!("network.delay=\"{delay}\"");
        let (out, r) = run_pg(
            &pg,
            dir.path(),
            &[
                "network.backend=\"proxy\"",
                &d,
                "network.probe_count=20",
                "load.workers=1",
            ],
        );
        assert!(
            out.status.success(),
            "{delay}: {}\n{}",
            text(&out.stderr),
            pg.log_tail()
        );
        let stderr = text(&out.stderr);
        assert!(stderr.contains("network: proxy 127.0.0.1:"), "{stderr}");
        assert!(stderr.contains("sql ping statistics"), "{stderr}");
        assert_eq!(r["rows"], 900, "{delay}");
        assert_eq!(pg.sql_count("cpu"), 900, "{delay}");
        assert_eq!(r["rtt"]["received"], 20, "{r}");
        assert_eq!(r["scenario"]["network"]["backend"], "proxy");
        // The report never shows the URL's password, and the plan keeps the real target.
        assert!(
            !r["scenario"]["target"]["url"]
                .as_str()
                .unwrap()
                .contains("@127.0.0.1:0"),
        );
        p50.push((
            r["rtt"]["latency"]["p50_ms"].as_f64().unwrap(),
            r["latency"]["p50_ms"].as_f64().unwrap(),
        ));
    }
    let (rtt0, _) = p50[0];
    let (rtt5, write5) = p50[1];
    assert!(rtt0 < 4.0, "no delay: SELECT 1 RTT p50 {rtt0} ms");
    assert!(
        (5.0..20.0).contains(&rtt5),
        "delay 5ms: SELECT 1 RTT p50 {rtt5} ms"
    );
    // A COPY batch needs at least one round trip.
    assert!(write5 >= 5.0, "delay 5ms: write latency p50 {write5} ms");
}

/// A PostgreSQL URL without a port reaches PGPORT's, as sqlx does: the proxy forwards
/// there, and every row lands.
#[test]
fn the_proxy_forwards_a_portless_postgres_url_to_pgport() {
    let pg = start(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let url = pg.database_url().unwrap();
    let port = pg.pg_addr().unwrap().port();
    let portless = url.replace(&format!(":{port}/"), "/");
    assert_ne!(portless, url, "no :{port}/ in {url}");
    let out = tsload()
        .env("PGPORT", port.to_string())
        .args(["run", "--json", "r.json", "--progress", "none"])
        .args(["--set", "target.kind=\"postgres\""])
        .args(["--set", &format!("target.url=\"{portless}\"")])
        .args(["--set", "target.drop_existing=true"])
        .args(["--set", "workload.scale=5"])
        .args(["--set", "workload.end=\"2016-01-01T00:30:00Z\""])
        .args(["--set", "network.backend=\"proxy\""])
        .args(["--set", "network.delay=\"1ms\""])
        .current_dir(dir.path())
        .output()
        .unwrap();
    // Before sqlx's default was followed the proxy forwarded to 5432, where no server is.
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["rows"], 900, "{r}");
    assert_eq!(pg.sql_count("cpu"), 900);
}

/// The delay proxy cannot stand in front of a PostgreSQL server whose certificate's name
/// is checked; `PGSSLMODE=verify-full` asks for that as the URL's own `sslmode` does.
#[test]
fn a_name_checked_sql_target_is_refused_behind_the_proxy_pgsslmode_included() {
    let validate = |url: &str, pgsslmode: Option<&str>| {
        let mut cmd = tsload();
        cmd.env_remove("PGSSLMODE");
        if let Some(mode) = pgsslmode {
            cmd.env("PGSSLMODE", mode);
        }
        cmd.args(["validate", "--set", "target.kind=\"postgres\""])
            .args(["--set", &format!("target.url=\"{url}\"")])
            .args(["--set", "network.backend=\"proxy\""])
            .args(["--set", "network.delay=\"1ms\""]);
        let out = cmd.output().unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let named = "postgres://u@db.example:5432/x";
    let (code, err) = validate(named, Some("verify-full"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("instead of db.example"), "{err}");
    let (code, err) = validate(&format!("{named}?sslmode=verify-full"), None);
    assert_eq!(code, Some(2), "{err}");
    // The URL's own mode wins over the environment, as in sqlx; an address checks no name.
    for (url, env) in [
        (format!("{named}?sslmode=require"), Some("verify-full")),
        (named.to_string(), Some("require")),
        (named.to_string(), None),
        (
            "postgres://u@127.0.0.1:5432/x?sslmode=verify-full".to_string(),
            None,
        ),
    ] {
        let (code, err) = validate(&url, env);
        assert_eq!(code, Some(0), "{url} PGSSLMODE={env:?}: {err}");
    }
}

/// sqlx connects to a PostgreSQL URL's `host`/`hostaddr`/`port` query keys, or a MySQL
/// URL's `socket`, instead of its authority: the proxy would stand where no connection
/// goes, and the probes would measure another path. Refused, naming the key; the same URL
/// without `[network]` is fine.
#[test]
fn a_sql_url_that_connects_elsewhere_than_its_authority_is_refused_under_network() {
    let cases = [
        (
            "postgres",
            "postgres://u@127.0.0.1:5432/x?host=db.example",
            "proxy",
            "`host=db.example`",
        ),
        (
            "postgres",
            "postgres://u@127.0.0.1/x?port=5433",
            "netem",
            "`port=5433`",
        ),
        (
            "postgres",
            "postgres://u@127.0.0.1/x?hostaddr=10.1.2.3",
            "proxy",
            "`hostaddr=10.1.2.3`",
        ),
        (
            "postgres",
            "postgres://u@127.0.0.1/x?host=/run/postgresql",
            "proxy",
            "a Unix socket",
        ),
        // Percent-encoded key and value: sqlx decodes both.
        (
            "postgres",
            "postgres://u@127.0.0.1/x?ho%73t=%2Frun%2Fpostgresql",
            "proxy",
            "`host=/run/postgresql`",
        ),
        (
            "mysql",
            "mysql://u@127.0.0.1/x?socket=/run/mysqld/mysqld.sock",
            "proxy",
            "a Unix socket",
        ),
    ];
    for (kind, url, backend, expect) in cases {
        let validate = |network: bool| {
            let mut cmd = tsload();
            cmd.args(["validate", "--set", &format!("target.kind=\"{kind}\"")])
                .args(["--set", &format!("target.url=\"{url}\"")]);
            if network {
                cmd.args(["--set", &format!("network.backend=\"{backend}\"")])
                    .args(["--set", "network.delay=\"1ms\""]);
                if backend == "netem" {
                    cmd.args(["--set", "network.dev=\"veth0\""]);
                }
            }
            let out = cmd.output().unwrap();
            (out.status.code(), text(&out.stderr))
        };
        let (code, err) = validate(true);
        assert_eq!(code, Some(2), "{url} {backend}: {err}");
        assert!(err.contains(expect), "{url}: expected `{expect}` in: {err}");
        assert!(err.contains("network.backend"), "{url}: {err}");
        let (code, err) = validate(false);
        assert_eq!(code, Some(0), "{url} without [network]: {err}");
    }
}

#[test]
fn network_settings_are_checked_before_anything_runs() {
    let cases: &[(&[&str], &str)] = &[
        (&["network.delay=\"1ms\""], "network.backend"),
        (
            &[
                "network.backend=\"proxy\"",
                "network.dev=\"eth0\"",
                "target.kind=\"postgres\"",
            ],
            "not a setting of backend \"proxy\" (only of netem)",
        ),
        (
            &[
                "network.backend=\"proxy\"",
                "network.probe=\"tcp\"",
                "target.kind=\"postgres\"",
            ],
            "the proxy's delay is not on",
        ),
        (
            &["network.backend=\"proxy\""],
            "target kind \"sqlite\" is not reached over the network",
        ),
        (
            &["network.backend=\"netem\"", "target.kind=\"postgres\""],
            "network.dev",
        ),
        (
            &[
                "network.backend=\"netem\"",
                "network.dev=\"veth0\"",
                "network.loss=\"150%\"",
                "target.kind=\"postgres\"",
            ],
            "network.loss",
        ),
        (
            &["network.backend=\"carrier-pigeon\""],
            "allowed: proxy, netem",
        ),
    ];
    for (sets, expect) in cases {
        let mut cmd = tsload();
        cmd.arg("validate");
        if sets.iter().any(|s| s.contains("postgres")) {
            cmd.args(["--set", "target.url=\"postgres://u@127.0.0.1:1/db\""]);
        }
        for s in *sets {
            cmd.args(["--set", s]);
        }
        let out = cmd.output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sets:?}: {err}");
        assert!(
            err.contains(expect),
            "{sets:?}: expected `{expect}` in: {err}"
        );
    }
}

#[test]
fn the_stand_alone_proxy_adds_its_delay_to_an_application_ping() {
    let vm = start(ServerKind::VictoriaMetrics);
    let dir = tempfile::tempdir().unwrap();
    let direct = tsload()
        .args(["probe", "app", &format!("{}/health", vm.base_url())])
        .args(["--count", "20", "--interval", "0", "--json", "direct.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(direct.status.success(), "{}", text(&direct.stderr));
    let out = text(&direct.stdout);
    assert!(out.contains("20 probes transmitted, 20 received"), "{out}");

    let mut proxy = tsload()
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(vm.http_addr().to_string())
        .args(["--delay", "4ms"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(proxy.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    let listen = first
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no address in `{first}`"))
        .to_string();
    let through = tsload()
        .args(["probe", "app", &format!("http://{listen}/health")])
        .args(["--count", "20", "--interval", "0", "--json", "p.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    // SIGINT: the proxy prints its counters and exits 0.
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    let proxy_out = proxy.wait_with_output().unwrap();
    assert!(through.status.success(), "{}", text(&through.stderr));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("p.json")).unwrap()).unwrap();
    let p50 = r["latency"]["p50_ms"].as_f64().unwrap();
    assert!(
        (4.0..15.0).contains(&p50),
        "through the 4 ms proxy: p50 {p50} ms"
    );
    assert!(
        proxy_out.status.success(),
        "proxy exit {:?}",
        proxy_out.status
    );
    let stats = text(&proxy_out.stdout);
    // One kept-alive connection carried the 20 pings (it may not be seen closed yet).
    assert!(stats.contains("connections 1 ("), "{stats}");
    assert!(!stats.contains("bytes up 0,"), "{stats}");
}

#[test]
fn tcp_probe_and_bad_targets() {
    let vm = start(ServerKind::VictoriaMetrics);
    let out = tsload()
        .args(["probe", "tcp", &vm.http_addr().to_string()])
        .args(["--count", "5", "--interval", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("5 probes transmitted, 5 received"),
        "{}",
        text(&out.stdout)
    );
    // Nothing listens on the port of a closed socket: every probe fails, exit 1.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let out = tsload()
        .args([
            "probe",
            "tcp",
            &addr.to_string(),
            "--count",
            "2",
            "--interval",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("refused"),
        "{}",
        text(&out.stdout)
    );
    let out = tsload()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "127.0.0.1:1",
        ])
        .args(["--delay", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not a duration"),
        "{}",
        text(&out.stderr)
    );
}
