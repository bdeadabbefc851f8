//! The Kubernetes manifests in `deploy/k8s/`: they pass the Kubernetes 1.37 JSON schema
//! (kubernetes-validate, installed by `cargo xtask test`), agree with each other, and the
//! Indexed Job of shards and the merge Job run end to end as local processes against a
//! real VictoriaMetrics (`tsload_testbed::k8s`).
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tsload_testbed::k8s::{Cluster, ConfigMap, Job, Volume};
use tsload_testbed::{Server, ServerKind};

mod common;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn manifest(name: &str) -> PathBuf {
    workspace().join("deploy/k8s").join(name)
}

const MANIFESTS: [&str; 4] = [
    "scenario-configmap.yaml",
    "results-pvc.yaml",
    "shards-job.yaml",
    "merge-job.yaml",
];

/// Where `cargo xtask test` installs kubernetes-validate (pip --target).
fn validator() -> PathBuf {
    workspace().join("target/tools/kubernetes-validate")
}

#[test]
fn manifests_pass_the_kubernetes_schema() {
    let lib = validator();
    assert!(
        lib.join("kubernetes_validate").is_dir(),
        "kubernetes-validate is not installed at {}: run `cargo xtask test` (it installs it), or \
         `pip install --target {} kubernetes-validate==1.37.0`",
        lib.display(),
        lib.display()
    );
    let out = Command::new("python3")
        .args([
            "-m",
            "kubernetes_validate",
            "--strict",
            "--kubernetes-version",
            "1.37",
        ])
        .args(MANIFESTS.map(manifest))
        .env("PYTHONPATH", &lib)
        .output()
        .expect("start python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches("passed").count(), MANIFESTS.len(), "{text}");
}

#[test]
fn manifests_agree_with_each_other() {
    let shards = Job::load(&manifest("shards-job.yaml")).unwrap();
    let merge = Job::load(&manifest("merge-job.yaml")).unwrap();
    let cm = ConfigMap::load(&manifest("scenario-configmap.yaml")).unwrap();
    assert!(
        shards.indexed,
        "completionMode: Indexed gives each pod its shard"
    );
    let count: u32 = shards
        .env_value("TSLOAD_SHARD_COUNT")
        .expect("TSLOAD_SHARD_COUNT set")
        .parse()
        .unwrap();
    assert_eq!(shards.completions, count);
    assert_eq!(
        shards.parallelism, count,
        "all shards must run at once (barrier)"
    );
    assert_eq!(
        shards.backoff_limit,
        Some(0),
        "a retried shard would write twice"
    );
    assert!(shards.args.iter().any(|a| a == "--barrier"));
    assert_eq!(
        shards.volumes.get("scenario"),
        Some(&Volume::ConfigMap(cm.name.clone()))
    );
    assert_eq!(
        shards.volumes.get("results"),
        merge.volumes.get("results"),
        "the merge reads the volume the shards write"
    );
    assert_eq!(merge.env_value("SHARDS_JOB"), Some(shards.name.as_str()));
    // The scenario in the ConfigMap is one tsload accepts.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario.toml");
    std::fs::write(&file, &cm.data["scenario.toml"]).unwrap();
    let out = common::tsload()
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_shards_job_and_the_merge_job_run_locally_as_processes() {
    let vm = Server::start(ServerKind::VictoriaMetrics)
        .unwrap_or_else(|e| panic!("VictoriaMetrics did not start: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let mut cm = ConfigMap::load(&manifest("scenario-configmap.yaml")).unwrap();
    // The same scenario, smaller: 10 hosts x 1 hour (3,600 rows, 36,000 metrics).
    let scenario = cm.data.get_mut("scenario.toml").unwrap();
    for (from, to) in [
        ("scale = 1000", "scale = 10"),
        (
            "end = \"2016-01-02T00:00:00Z\"",
            "end = \"2016-01-01T01:00:00Z\"",
        ),
        ("batch = 10000", "batch = 500"),
    ] {
        assert!(
            scenario.contains(from),
            "the ConfigMap no longer has `{from}`"
        );
        *scenario = scenario.replace(from, to);
    }
    let cluster = Cluster {
        root: dir.path().to_path_buf(),
        tsload: PathBuf::from(env!("CARGO_BIN_EXE_tsload")),
        // The Service address, as the loopback server's.
        env_overrides: BTreeMap::from([("TSLOAD_TARGET".to_string(), vm.base_url())]),
        configmaps: vec![cm],
    };
    let shards = Job::load(&manifest("shards-job.yaml")).unwrap();
    let outs = cluster.run(&shards).unwrap();
    assert_eq!(outs.len(), 4);
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "pod {i}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let merge = Job::load(&manifest("merge-job.yaml")).unwrap();
    let outs = cluster.run(&merge).unwrap();
    assert!(
        outs[0].status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&outs[0].stdout),
        String::from_utf8_lossy(&outs[0].stderr)
    );
    let results = dir.path().join("claims/tsload-results/tsload-shards");
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("merged.json")).unwrap())
            .unwrap();
    assert_eq!(merged["merged_from"], 4);
    assert_eq!(merged["rows"], 3_600);
    vm.vm_flush();
    assert_eq!(
        vm.vm_sample_count("{__name__=~\"cpu_.*\"}"),
        merged["metrics"].as_u64().unwrap()
    );
    assert!(results.join("merged.hlog").is_file());
    // The merge Job again over the same directory: it skips its own earlier output.
    let again = cluster.run(&merge).unwrap();
    assert!(
        again[0].status.success(),
        "{}",
        String::from_utf8_lossy(&again[0].stderr)
    );
}
