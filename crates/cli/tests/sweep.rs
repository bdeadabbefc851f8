//! `tsload sweep` against a real PostgreSQL on 127.0.0.1 through the in-process delay
//! proxy: one run per grid point, each with its measured RTT, a rate that falls as the
//! RTT grows, and the table, fit and plot written out; a bad point stops the sweep before
//! anything runs.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use tsload_testbed::{Server, ServerKind};

mod common;
use common::{text, tsload};

fn config() -> String {
    format!(
        "{}/../../configs/r1-rtt-sweep.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn pg_sets(pg: &Server) -> Vec<String> {
    vec![
        "target.kind=\"postgres\"".into(),
        format!("target.url=\"{}\"", pg.database_url().unwrap()),
        "target.method=\"insert\"".into(),
        "network.probe=\"app\"".into(),
        "network.probe_count=20".into(),
        "load.workers=2".into(),
        "load.duration=\"1500ms\"".into(),
    ]
}

#[test]
fn an_rtt_sweep_through_the_proxy_measures_each_point_and_fits_the_model() {
    let pg = Server::start(ServerKind::Postgres).expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tsload();
    cmd.args(["sweep", &config(), "--out", "out"])
        .current_dir(dir.path());
    let mut sets = pg_sets(&pg);
    // Delays well above the machine's own noise (a loaded 2-core CI box).
    sets.push("sweep.delay=[\"0ms\", \"5ms\", \"20ms\"]".into());
    for s in &sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        text(&out.stderr),
        pg.log_tail()
    );
    let csv = std::fs::read_to_string(dir.path().join("out/sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "header + 3 points:\n{csv}");
    assert!(lines[0].starts_with("delay,"), "{}", lines[0]);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/sweep.json")).unwrap())
            .unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let rtt: Vec<f64> = rows
        .iter()
        .map(|r| r["rtt"]["median_ms"].as_f64().unwrap())
        .collect();
    let rate: Vec<f64> = rows
        .iter()
        .map(|r| r["rows_per_s"].as_f64().unwrap())
        .collect();
    assert!(
        rtt[0] < 5.0 && rtt[1] >= 5.0 && rtt[2] >= 20.0,
        "RTTs {rtt:?}"
    );
    assert!(rtt[2] < 60.0, "RTTs {rtt:?}");
    assert!(
        rate[0] > rate[1] && rate[1] > rate[2],
        "the rate must fall as the RTT grows: {rate:?} at {rtt:?}"
    );
    let fit = &json["fits"][0]["fit"];
    let k = fit["k"].as_f64().unwrap();
    assert!(
        k >= 0.8,
        "at least one round trip per request: k = {k}\n{fit}"
    );
    assert!(fit["r_squared"].as_f64().unwrap() > 0.8, "{fit}");
    assert!(stdout.contains("round trips per request"), "{stdout}");
    // Each point's own report, with the rows that landed.
    for i in 1..=3 {
        let p: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("out/points/{i:03}.json"))).unwrap(),
        )
        .unwrap();
        assert!(p["rows"].as_u64().unwrap() > 0, "{p}");
        assert_eq!(p["rtt"]["kind"], "sql");
    }
    let svg = std::fs::read_to_string(dir.path().join("out/sweep.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    assert!(svg.contains("RTT"), "axis title");
    assert_eq!(svg.matches("<circle").count(), 3, "one marker per point");
}

#[test]
fn a_bad_point_stops_the_sweep_before_anything_runs() {
    let pg = Server::start(ServerKind::Postgres).expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tsload();
    cmd.args(["sweep", &config(), "--out", "out"])
        .current_dir(dir.path());
    let mut sets = pg_sets(&pg);
    sets.push("sweep.workers=[1, 0]".into());
    for s in &sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("load.workers"), "{err}");
    assert!(err.contains("value 0 is out of range"), "{err}");
    assert!(!err.contains("=== point"), "nothing ran: {err}");
    // No table was created: prepare never ran.
    assert!(pg.sql("SELECT count(*) FROM meters").is_err());

    let out = tsload()
        .args(["sweep", "--set", "load.workers=2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("has no [sweep] table"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn validate_checks_every_point_of_a_sweep() {
    let grid = format!("{}/../../configs/r4-grid.toml", env!("CARGO_MANIFEST_DIR"));
    let out = tsload().args(["validate", &grid]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sweep_points"], 25, "batch 5 x workers 5");
    let out = tsload()
        .args(["validate", &grid, "--set", "sweep.workers=[1, 0]"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("sweep point 2 (batch=1 workers=0)"), "{err}");
}
