//! Baselines against a real VictoriaMetrics behind tsload's proxy with a bandwidth limit:
//! `--repeat 3 --save-baseline` keeps three runs, an unchanged rerun compared with
//! `--baseline` passes, and the same load through a 30% narrower link is flagged by
//! `--regress-if 'rate<-10%'` (exit 3).
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::Path;
use std::process::Output;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::text;

/// 10 hosts x 1 hour of cpu-only (3,600 rows, about 0.7 MB of line protocol) through the
/// proxy at `rate`, plus `extra` arguments.
fn run(vm: &Server, rate: &str, extra: &[&str], dir: &Path) -> Output {
    let mut args: Vec<String> = vec!["run".into(), "--progress".into(), "none".into()];
    for set in [
        "target.kind=\"influx\"".to_string(),
        format!("target.url=\"{}\"", vm.base_url()),
        "workload.scale=10".into(),
        "workload.end=\"2016-01-01T01:00:00Z\"".into(),
        "load.workers=2".into(),
        "load.batch=100".into(),
        "network.backend=\"proxy\"".into(),
        format!("network.rate=\"{rate}\""),
        "network.probe=\"none\"".into(),
    ] {
        args.push("--set".into());
        args.push(set);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    common::tsload()
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("start tsload")
}

#[test]
fn a_thirty_percent_slower_link_is_flagged_and_an_unchanged_rerun_passes() {
    let vm = Server::start(ServerKind::VictoriaMetrics)
        .unwrap_or_else(|e| panic!("VictoriaMetrics did not start: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &vm,
        "4mbit",
        &["--repeat", "3", "--save-baseline", "link"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("baseline 'link' saved: 3 run(s)"),
        "{}",
        text(&out.stderr)
    );
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".tsload/baselines/link.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["runs"].as_array().unwrap().len(), 3);
    for r in saved["runs"].as_array().unwrap() {
        assert_eq!(r["rows"], 3_600);
    }

    let limit = [
        "--baseline",
        "link",
        "--regress-if",
        "rate<-10%",
        "--json",
        "r.json",
    ];
    let same = run(&vm, "4mbit", &limit, dir.path());
    assert!(
        same.status.success(),
        "{}\n{}",
        text(&same.stdout),
        text(&same.stderr)
    );
    assert!(text(&same.stdout).contains("baseline 'link' (3 run(s)) vs this (1 run(s))"));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["baseline"]["regressions"], serde_json::json!([]));

    let slow = run(&vm, "2800kbit", &limit, dir.path());
    assert_eq!(
        slow.status.code(),
        Some(3),
        "{}\n{}",
        text(&slow.stdout),
        text(&slow.stderr)
    );
    let e = text(&slow.stderr);
    assert!(e.contains("REGRESSION: rate<-10%: rate changed -"), "{e}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let change = r["baseline"]["changes"][0]["change_percent"]
        .as_f64()
        .unwrap();
    assert!((-40.0..=-20.0).contains(&change), "{change}");
}

#[test]
fn baseline_flags_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let t = |args: &[&str]| {
        common::tsload()
            .args(["run", "--set", "target.kind=\"null\""])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    for (args, msg) in [
        (
            &["--regress-if", "rate<-5%"][..],
            "--regress-if needs --baseline",
        ),
        (&["--baseline", "nope"][..], "save one first with"),
        (&["--save-baseline", "../x"][..], "baseline name '../x'"),
        (&["--repeat", "0"][..], "--repeat 0"),
        (
            &["--baseline", "nope", "--regress-if", "speed<1%"][..],
            "unknown figure 'speed'",
        ),
    ] {
        let out = t(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(msg),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
