//! The container image: the `Dockerfile`'s runtime stage built with podman on a local
//! Debian base (no image registry is reachable here, so `cargo xtask test` makes the base
//! with debootstrap, and this test's own binary stands in for the build stage), then run
//! against a real VictoriaMetrics: it runs as the non-root user and lands every row.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use tsload_testbed::{Server, ServerKind};

mod common;
use common::text;

/// Made by `cargo xtask container-base` or `cargo xtask test` (xtask's `CONTAINER_BASE`).
const BASE_IMAGE: &str = "localhost/tsload-base:bookworm";

/// cpu-only, 3 hosts x 10 minutes = 180 rows of 10 metrics.
const ROWS: u64 = 180;

/// podman with the settings this VM needs: crun refuses its hybrid cgroups, so runc with
/// cgroupfs.
fn podman() -> Command {
    let mut c = Command::new("podman");
    c.args(["--runtime", "runc", "--cgroup-manager", "cgroupfs"]);
    c
}

/// `--ulimit` values no higher than this process's soft limits: podman would otherwise
/// ask for more than an unprivileged container manager may set.
fn ulimits() -> Vec<String> {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = |name: &str, cap: u64| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l[name.len()..].split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(cap, |v| v.min(cap))
    };
    let nofile = soft("Max open files", 10_000);
    let nproc = soft("Max processes", 4_096);
    vec![
        "--ulimit".into(),
        format!("nofile={nofile}:{nofile}"),
        "--ulimit".into(),
        format!("nproc={nproc}:{nproc}"),
    ]
}

/// Runs `command` to its end or `limit`, whichever comes first (then kills it).
fn output(mut command: Command, limit: Duration) -> Output {
    let shown = format!("{command:?}");
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start {shown}: {e} (cargo xtask test installs podman and runc)")
        });
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{shown}: {e}")),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{shown} did not finish in {limit:?}");
        }
    }
}

/// Removes the test's image however the test ends.
struct Image(String);

impl Drop for Image {
    fn drop(&mut self) {
        let _ = podman()
            .args(["rmi", "--force", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the image from the Dockerfile with this test's binary as the build stage.
fn build_image() -> Image {
    let exists = output(
        {
            let mut c = podman();
            c.args(["image", "exists", BASE_IMAGE]);
            c
        },
        Duration::from_secs(60),
    );
    assert!(
        exists.status.success(),
        "the container base {BASE_IMAGE} is missing: `cargo xtask container-base` (or \
         `cargo xtask test`) makes it with debootstrap ({})",
        text(&exists.stderr).trim()
    );
    let context = tempfile::tempdir().unwrap();
    std::fs::create_dir(context.path().join("out")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_tsload"),
        context.path().join("out/tsload"),
    )
    .unwrap();
    let image = Image(format!("localhost/tsload-test:{}", std::process::id()));
    let mut build = podman();
    build
        .args(["build", "--network", "host", "--build-arg"])
        .arg(format!("RUNTIME_IMAGE={BASE_IMAGE}"))
        .arg("--build-context")
        .arg(format!("build={}", context.path().display()))
        .args(ulimits())
        .args(["-t", &image.0, "-f"])
        .arg(repo_root().join("Dockerfile"))
        .arg(repo_root());
    let out = output(build, Duration::from_secs(600));
    assert!(
        out.status.success(),
        "podman build failed: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    image
}

fn run_image(image: &Image, args: &[&str]) -> Output {
    let mut run = podman();
    run.args(["run", "--rm", "--network", "host"])
        .args(ulimits())
        .arg(&image.0)
        .args(args);
    output(run, Duration::from_secs(300))
}

#[test]
fn the_image_runs_as_a_non_root_user_and_lands_every_row() {
    let image = build_image();

    let user = output(
        {
            let mut c = podman();
            c.args(["image", "inspect", "--format", "{{.Config.User}}", &image.0]);
            c
        },
        Duration::from_secs(60),
    );
    assert_eq!(
        text(&user.stdout).trim(),
        "tsload",
        "{}",
        text(&user.stderr)
    );

    let version = run_image(&image, &["--version"]);
    assert!(version.status.success(), "{}", text(&version.stderr));
    assert!(
        text(&version.stdout).starts_with("tsload "),
        "{}",
        text(&version.stdout)
    );

    let vm = Server::start(ServerKind::VictoriaMetrics).unwrap();
    let url = format!("target.url=\"{}\"", vm.base_url());
    let out = run_image(
        &image,
        &[
            "run",
            "--progress",
            "none",
            "--set",
            "target.kind=\"influx\"",
            "--set",
            &url,
            "--set",
            "workload.scale=3",
            "--set",
            "workload.end=\"2016-01-01T00:10:00Z\"",
            "--set",
            "load.workers=2",
            "--set",
            "load.batch=50",
            "--json",
            "/work/r.json",
        ],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("rows"), "{stdout}");
    vm.vm_flush();
    assert_eq!(vm.vm_sample_count("{__name__=~\"cpu_.*\"}"), ROWS * 10);
}
