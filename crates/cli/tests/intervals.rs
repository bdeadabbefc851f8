//! Each report interval of a write run carries what completed in it: the `--out csv`
//! records of an open-loop run with several workers into the `null` target.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

mod common;
use common::{text, tsload};

/// One CSV record of the write stream: (interval_s, rows, rows_per_s, total_rows); no
/// rate for an interval shorter than 50 ms.
type Interval = (f64, u64, Option<f64>, u64);

fn write_intervals(csv: &str) -> Vec<Interval> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}: {header:?}"))
    };
    let (stream, secs, rows, per_s, total) = (
        col("stream"),
        col("interval_s"),
        col("rows"),
        col("rows_per_s"),
        col("total_rows"),
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[stream] == "write")
        .map(|f| {
            let num = |i: usize| -> f64 { f[i].parse().unwrap_or_else(|e| panic!("{f:?}: {e}")) };
            let rate = (!f[per_s].is_empty()).then(|| num(per_s));
            (num(secs), num(rows) as u64, rate, num(total) as u64)
        })
        .collect()
}

#[test]
fn each_csv_interval_of_an_open_loop_run_holds_its_own_rows() {
    // 4 workers of 5,000-row requests at 100,000 rows/s for 2 s: a request every 50 ms,
    // 100,000 rows in each 1 s interval. Before the fix a worker handed an interval over
    // at its first write after the interval's end, after the reporter had closed it: the
    // CSV read `1.002,...,0,0` then about 200,000 rows/s.
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args([
            "run",
            "--target",
            "null",
            "-r",
            "100000",
            "-d",
            "2s",
            "-w",
            "4",
            "--out",
            "csv=i.csv",
            "--progress",
            "none",
        ])
        .current_dir(dir.path())
        .output()
        .expect("start tsload");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("i.csv")).unwrap();
    let intervals = write_intervals(&csv);
    assert!(intervals.len() >= 2, "{csv}");
    assert!(intervals[0].1 > 0, "the first interval is empty:\n{csv}");
    for &(secs, rows, per_s, _) in &intervals {
        // No interval holds another's rows: none runs far above the offered rate (a short
        // last one may hold a few late requests), and a full one is near it (a late
        // request moves 5% of an interval).
        assert!(
            rows as f64 <= 150_000.0 * secs.max(0.1),
            "{secs} s, {rows} rows:\n{csv}"
        );
        if secs >= 0.9 {
            let per_s = per_s.unwrap_or_default();
            assert!(
                (80_000.0..=120_000.0).contains(&per_s),
                "{secs} s, {per_s} rows/s:\n{csv}"
            );
        }
    }
    let sum: u64 = intervals.iter().map(|i| i.1).sum();
    let total = intervals.last().unwrap().3;
    assert_eq!(sum, total, "{csv}");
    assert!(total >= 150_000, "{csv}");
}
