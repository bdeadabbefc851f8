//! `tsload netem` against the real kernel, on a veth pair in network namespaces the test
//! creates (and deletes): tbf is applied, shown and cleared over rtnetlink, netem on a
//! kernel without sch_netem fails with the specific message and leaves nothing, the
//! dry run prints iproute2's exact bytes, and bad input is a usage error.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::process::{Command, Output};

use tsload_netem::netns::VethPair;

mod common;
use common::text;

fn tsload(args: &[&str]) -> Output {
    common::tsload().args(args).output().expect("start tsload")
}

#[test]
fn apply_show_clear_on_a_veth_in_a_namespace() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pair = rt
        .block_on(VethPair::create("tsl-cli"))
        .expect("creating namespaces and a veth pair needs root (CI runs as root)");
    let ns = pair.left.name().to_string();
    let dev = pair.left_if.clone();
    let at = |cmd: &[&str]| -> Output {
        let mut args: Vec<&str> = cmd.to_vec();
        args.extend(["--dev", dev.as_str(), "--netns", ns.as_str()]);
        tsload(&args)
    };

    let apply = tsload(&[
        "netem", "apply", "--dev", &dev, "--netns", &ns, "--", "tbf", "rate", "8mbit", "burst",
        "32kbit", "latency", "400ms",
    ]);
    assert!(apply.status.success(), "{}", text(&apply.stderr));
    let show = at(&["netem", "show"]);
    assert!(
        text(&show.stdout).contains("tbf") && text(&show.stdout).contains("rate 8mbit"),
        "{}",
        text(&show.stdout)
    );
    let tc = Command::new("tc")
        .args(["-n", &ns, "qdisc", "show", "dev", &dev])
        .output()
        .unwrap();
    assert!(
        text(&tc.stdout).contains("qdisc tbf"),
        "tc agrees: {}",
        text(&tc.stdout)
    );

    let netem = tsload(&[
        "netem", "apply", "--dev", &dev, "--netns", &ns, "--", "delay", "10ms",
    ]);
    assert_eq!(netem.status.code(), Some(1));
    let e = text(&netem.stderr);
    assert!(e.contains("no netem qdisc") && e.contains("proxy"), "{e}");
    assert!(
        text(&at(&["netem", "show"]).stdout).contains("tbf"),
        "the failed apply changed nothing"
    );

    let clear = at(&["netem", "clear"]);
    assert!(
        clear.status.success() && text(&clear.stdout).contains("removed"),
        "{}",
        text(&clear.stderr)
    );
    let tc = Command::new("tc")
        .args(["-n", &ns, "qdisc", "show", "dev", &dev])
        .output()
        .unwrap();
    assert!(!text(&tc.stdout).contains("tbf"), "{}", text(&tc.stdout));
}

#[test]
fn dry_run_prints_iproute2s_bytes() {
    // REFERENCE vector "tc qdisc add dev DEV root netem delay 10ms" with ifindex 7; the dry
    // run of a missing interface uses ifindex 0, so compare everything but that field.
    let out = tsload(&[
        "netem",
        "apply",
        "--add",
        "--dev",
        "nosuch0",
        "--dry-run",
        "--hex",
        "--",
        "delay",
        "10ms",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let hex = stdout.lines().nth(1).unwrap();
    let golden = "4c000000240005060000000000000000000000000700000000000000ffffffff000000000a0001006e6574656d0000001c0002005a620200e803000000000000000000000000000000000000";
    assert_eq!(hex.len(), golden.len());
    assert_eq!(&hex[..40], &golden[..40]);
    assert_eq!(
        &hex[40..48],
        "00000000",
        "ifindex 0 for a missing interface"
    );
    assert_eq!(&hex[48..], &golden[48..]);
}

/// Without `--merge` apply replaces the root under a handle of its own (`7461:`), so the
/// kernel makes a new qdisc of exactly the spec; `--merge` sends tc's `replace` (handle 0,
/// the kernel changes a qdisc of the same kind in place); `--add` and `--merge` conflict.
#[test]
fn apply_is_exact_unless_merge() {
    let dry = |flags: &[&str]| -> (String, String) {
        let mut args = vec!["netem", "apply", "--dev", "nosuch0", "--dry-run", "--hex"];
        args.extend(flags);
        args.extend(["--", "delay", "10ms"]);
        let out = tsload(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let mut lines = stdout.lines();
        (
            lines.next().unwrap().to_string(),
            lines.next().unwrap().to_string(),
        )
    };
    let (line, hex) = dry(&[]);
    assert!(
        line.starts_with("replace handle 7461: root qdisc"),
        "{line}"
    );
    // flags REQUEST | ACK | REPLACE | CREATE; tcm_handle 7461:0 (little-endian).
    assert_eq!(&hex[12..16], "0505", "{hex}");
    assert_eq!(&hex[48..56], "00006174", "{hex}");
    let (line, hex) = dry(&["--merge"]);
    assert!(line.starts_with("replace root qdisc"), "{line}");
    assert_eq!(&hex[12..16], "0505", "{hex}");
    assert_eq!(&hex[48..56], "00000000", "{hex}");
    let out = tsload(&[
        "netem", "apply", "--add", "--merge", "--dev", "lo", "--", "delay", "1ms",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn bad_specs_and_missing_interfaces_are_clear_errors() {
    let out = tsload(&[
        "netem", "apply", "--dev", "lo", "--", "delay", "10ms", "jitter",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("netem spec"),
        "{}",
        text(&out.stderr)
    );
    let out = tsload(&["netem", "show", "--dev", "nosuch0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nosuch0"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_run_with_the_netem_backend_leaves_the_previous_qdisc_in_place_when_it_fails() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pair = rt
        .block_on(VethPair::create("tsl-run"))
        .expect("creating namespaces and a veth pair needs root (CI runs as root)");
    let ns = pair.left.name().to_string();
    let dev = pair.left_if.clone();
    let apply = tsload(&[
        "netem", "apply", "--dev", &dev, "--netns", &ns, "--", "tbf", "rate", "8mbit", "burst",
        "32kbit", "latency", "400ms",
    ]);
    assert!(apply.status.success(), "{}", text(&apply.stderr));
    let qdisc = || {
        let tc = Command::new("tc")
            .args(["-n", &ns, "qdisc", "show", "dev", &dev])
            .output()
            .unwrap();
        text(&tc.stdout)
    };
    let before = qdisc();
    assert!(before.contains("qdisc tbf"), "{before}");
    // Nothing listens on port 1: were netem there, the TCP probe would fail instead.
    let out = tsload(&[
        "run",
        "--progress",
        "none",
        "--set",
        "target.kind=\"postgres\"",
        "--set",
        "target.url=\"postgres://u@127.0.0.1:1/db\"",
        "--set",
        "network.backend=\"netem\"",
        "--set",
        &format!("network.dev=\"{dev}\""),
        "--set",
        &format!("network.netns=\"{ns}\""),
        "--set",
        "network.delay=\"5ms\"",
        "--set",
        "network.probe_count=2",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("sch_netem") || err.contains("measuring the RTT"),
        "{err}"
    );
    assert_eq!(qdisc(), before, "the interface is as it was: {err}");
}
