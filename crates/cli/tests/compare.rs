//! `tsload compare` over four real servers started by the testbed (PostgreSQL, InfluxDB
//! 1.x, VictoriaMetrics, QuestDB), each watched by `[monitor]`: one command writes the
//! table (text, CSV, JSON), the five bar charts and each target's report, and the figures
//! are plausible: the same rows everywhere, server CPU and bytes per metric above zero.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use tsload_testbed::{Server, ServerKind};

mod common;

#[test]
fn compare_writes_the_table_and_the_charts_for_four_servers() {
    let servers: Vec<(&str, Server)> = [
        ("postgres", ServerKind::Postgres),
        ("influxdb", ServerKind::InfluxDb1),
        ("victoriametrics", ServerKind::VictoriaMetrics),
        ("questdb", ServerKind::QuestDb),
    ]
    .into_iter()
    .map(|(name, kind)| {
        let s = Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"));
        (name, s)
    })
    .collect();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "[workload]\nkind = \"cpu-only\"\nscale = 10\nend = \"2016-01-01T02:00:00Z\"\n\
         [target]\nkind = \"sqlite\"\nsynchronous = \"off\"\n\
         [load]\nworkers = 2\nbatch = 1000\n",
    )
    .unwrap();
    let mut profiles = Vec::new();
    for (name, s) in &servers {
        let target = match *name {
            "postgres" => format!(
                "kind = \"postgres\"\nurl = \"{}\"\nmethod = \"copy\"",
                s.database_url().unwrap()
            ),
            "questdb" => format!(
                "kind = \"influx\"\nurl = \"{}\"\ncreate_database = false",
                s.base_url()
            ),
            _ => format!("kind = \"influx\"\nurl = \"{}\"", s.base_url()),
        };
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[target]\n{target}\n[monitor]\npid = {}\ndata_dir = \"{}\"\n",
                s.pid(),
                s.data_dir().display()
            ),
        )
        .unwrap();
        profiles.push(path.display().to_string());
    }
    let out = common::tsload()
        .arg("compare")
        .arg(&scenario)
        .args(["--targets", &profiles.join(","), "--out", "r3"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let r3 = dir.path().join("r3");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r3.join("compare.json")).unwrap()).unwrap();
    let rows = json["targets"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{json}");
    for (row, (name, _)) in rows.iter().zip(&servers) {
        assert_eq!(row["target"], *name);
        assert_eq!(row["rows"], 7_200, "{row}");
        assert!(row["metrics_per_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(
            row["server_cpu_s_per_million_metrics"].as_f64().unwrap() > 0.0,
            "{row}"
        );
        let bpm = row["bytes_per_metric"].as_f64().unwrap_or(0.0);
        assert!(bpm > 0.0 && bpm < 10_000.0, "{name}: {row}");
        assert!(r3.join(format!("{name}.json")).is_file());
    }
    // The stored rows agree with the reports.
    assert_eq!(servers[0].1.sql_count("cpu"), 7_200);
    let csv = std::fs::read_to_string(r3.join("compare.csv")).unwrap();
    assert_eq!(csv.trim_end().split("\r\n").count(), 5, "{csv}");
    for chart in [
        "rate",
        "p99",
        "server_cpu",
        "bytes_per_metric",
        "client_cpu",
    ] {
        let svg = std::fs::read_to_string(r3.join(format!("{chart}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert!(
            doc.descendants().filter(|n| n.has_tag_name("rect")).count() >= 5,
            "{chart}"
        );
        for (name, _) in &servers {
            assert!(svg.contains(name), "{chart}: {name}");
        }
    }
    assert!(
        stdout.contains("victoriametrics") && stdout.contains("bytes/metric"),
        "{stdout}"
    );
    // compare.html: the five charts, then each target's report (their figures are
    // checked in a browser by tests/html_report.rs).
    let page = std::fs::read_to_string(r3.join("compare.html")).unwrap();
    assert_eq!(page.matches("<figure class=\"svgfig\">").count(), 5);
    for (k, (name, _)) in servers.iter().enumerate() {
        assert!(page.contains(&format!("<h2>{name}</h2>")), "{name}");
        assert!(page.contains(&format!("id=\"r{k}-write-rows\"")), "{name}");
    }
}
