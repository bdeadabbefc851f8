//! `tsload merge` on reports and interval logs that no run writes: figures past any
//! `Duration`, counts whose sum overflows, times past any calendar, corrupt histograms,
//! files and lines past the read caps. Each is refused with exit code 2 and a message that
//! names the file, the field, the value and what is allowed; never a panic (exit 101),
//! never a wrapped sum.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine as _;

mod common;
use common::{text, tsload};

/// Two shards' reports and interval logs of one null-target run, in `dir`.
fn shards(dir: &Path) -> [(PathBuf, PathBuf); 2] {
    [0, 1].map(|i| {
        let (json, hlog) = (
            dir.join(format!("s{i}.json")),
            dir.join(format!("s{i}.hlog")),
        );
        let out = tsload()
            .args(["run", "--target", "null", "--shard", &format!("{i}/2")])
            .args(["-n", "2000", "--progress", "none", "--json"])
            .arg(&json)
            .arg("--hlog")
            .arg(&hlog)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        (json, hlog)
    })
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, v.to_string()).unwrap();
}

fn merge(args: &[&Path]) -> Output {
    tsload().arg("merge").args(args).output().unwrap()
}

/// Exit code 2 and `expected` in standard error; no panic.
fn refused(out: &Output, expected: &str) {
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "a panic: {err}");
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(expected), "expected {expected:?} in: {err}");
}

#[test]
fn merge_refuses_elapsed_seconds_that_are_no_duration() {
    let dir = tempfile::tempdir().unwrap();
    let [(a, _), (b, _)] = shards(dir.path());
    for (value, shown) in [(1e300, "1e300"), (1e19, "1e19"), (-1.0, "-1.0")] {
        edit_json(&b, |v| v["elapsed_s"] = value.into());
        refused(
            &merge(&[&a, &b]),
            &format!(
                "error: {}: elapsed_s is {shown}; allowed: a finite number of seconds from 0 \
                 to 1000000000 (about 31.7 years)",
                b.display()
            ),
        );
    }
}

#[test]
fn merge_refuses_counts_whose_sum_overflows() {
    let dir = tempfile::tempdir().unwrap();
    let [(a, _), (b, _)] = shards(dir.path());
    edit_json(&a, |v| v["rows"] = u64::MAX.into());
    edit_json(&b, |v| v["rows"] = 500.into());
    // Before: 18446744073709551615 + 500 merged to 499 with exit 0 (a release build).
    refused(
        &merge(&[&a, &b]),
        &format!(
            "error: {}: rows is 500, and the reports before it sum to 18446744073709551615: the \
             total passes 18446744073709551615, the most it can hold, so these cannot be the \
             counts of one run",
            b.display()
        ),
    );
}

#[test]
fn merge_refuses_interval_logs_with_times_past_any_calendar() {
    let dir = tempfile::tempdir().unwrap();
    let [(a, ha), (b, hb)] = shards(dir.path());
    for h in [&ha, &hb] {
        let log = std::fs::read_to_string(h).unwrap();
        let log: String = log
            .lines()
            .map(|l| match l.starts_with("#[BaseTime: ") {
                true => "#[BaseTime: 18446744073709551615.000 (seconds since epoch)]\n".into(),
                false => format!("{l}\n"),
            })
            .collect();
        std::fs::write(h, log).unwrap();
    }
    let merged = dir.path().join("merged.hlog");
    let out = tsload()
        .arg("merge")
        .args([&a, &b])
        .arg("--hlog")
        .arg(&ha)
        .arg("--hlog")
        .arg(&hb)
        .arg("--hlog-out")
        .arg(&merged)
        .output()
        .unwrap();
    refused(
        &out,
        &format!(
            "error: --hlog-out {}: {}:5: BaseTime is 18446744073709551615.000000000 s; allowed: \
             0 to 253402300799 s (up to 9999-12-31T23:59:59Z)",
            merged.display(),
            ha.display()
        ),
    );
    assert!(!merged.exists(), "no half-written log");
}

#[test]
fn merge_refuses_a_corrupt_histogram_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let [(a, _), (b, _)] = shards(dir.path());
    // V2, 3 digits, 1..2048, and counts that say "a run of 2^63 zeros" (zig-zag of
    // i64::MIN), which hdrhistogram's own decoder negates: a panic in a debug build.
    let mut v2 = Vec::new();
    for (x, n) in [
        (0x1c84_9313u64, 4),
        (9, 4),
        (0, 4),
        (3, 4),
        (1, 8),
        (2048, 8),
    ] {
        v2.extend(&x.to_be_bytes()[8 - n..]);
    }
    v2.extend(1.0f64.to_bits().to_be_bytes());
    v2.extend([0xff; 9]);
    let hdr = base64::engine::general_purpose::STANDARD.encode(&v2);
    edit_json(&b, |v| v["service"]["hdr"] = hdr.into());
    refused(
        &merge(&[&a, &b]),
        &format!(
            "error: {}: service.hdr: not an encoded histogram: its counts: a run of 2^63 zero \
             counts",
            b.display()
        ),
    );
}

#[test]
fn merge_reads_no_report_and_no_log_line_past_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let [(a, ha), (b, _)] = shards(dir.path());
    // Sparse files: nothing is written to the disk.
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    refused(
        &merge(&[&a, &big]),
        &format!(
            "error: {}: larger than 67108864 bytes, the most a report is read",
            big.display()
        ),
    );
    let long = dir.path().join("long.hlog");
    std::fs::File::create(&long)
        .unwrap()
        .set_len(5 << 20)
        .unwrap();
    let merged = dir.path().join("merged.hlog");
    let out = tsload()
        .arg("merge")
        .args([&a, &b])
        .arg("--hlog")
        .arg(&ha)
        .arg("--hlog")
        .arg(&long)
        .arg("--hlog-out")
        .arg(&merged)
        .output()
        .unwrap();
    refused(
        &out,
        &format!(
            "{}:1: a line longer than 4194304 bytes, the most an interval log's line is read",
            long.display()
        ),
    );
}
