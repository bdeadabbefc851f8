//! A run's figures compared with a baseline's ([`crate::baseline::compare`] makes it): each
//! figure's medians and spreads, the `--regress-if` limits broken and how the scenarios
//! differ; rendered as text and kept in the last run's report.

use std::fmt::Write as _;

/// The figures a baseline compares, with how to read them from a report and which way is
/// better.
pub(crate) const FIGURES: &[(&str, &str, bool)] = &[
    // (name, unit, higher is better)
    ("rate", "/s", true),
    ("mean", "ms", false),
    ("p50", "ms", false),
    ("p90", "ms", false),
    ("p95", "ms", false),
    ("p99", "ms", false),
    ("p99.9", "ms", false),
    ("max", "ms", false),
    ("cpu", "us", false),
    ("server_cpu", "s/M", false),
];

/// One figure compared.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    pub figure: String,
    pub baseline_median: f64,
    pub baseline_min: f64,
    pub baseline_max: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// (this median - baseline median) / baseline median, in percent.
    pub change_percent: f64,
    /// Whether this median lies outside the baseline's spread (else the change is noise).
    pub outside_noise: bool,
    /// Whether the change is for the worse.
    pub worse: bool,
}

/// The comparison of this run's reports with a baseline's.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub baseline_runs: usize,
    pub runs: usize,
    pub changes: Vec<Change>,
    /// The `--regress-if` limits broken (by a change outside the noise band).
    pub regressions: Vec<String>,
    /// Where this run's scenario differs from the baseline's (`load.workers: 4 -> 1`):
    /// its figures then compare different loads.
    pub differences: Vec<String>,
}

pub(crate) fn num(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

impl Comparison {
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "baseline '{}' ({} run(s)) vs this ({} run(s)): medians, [min .. max] of the runs; a change inside the baseline's spread is noise",
            self.baseline, self.baseline_runs, self.runs
        );
        if !self.differences.is_empty() {
            let shown: Vec<&str> = self
                .differences
                .iter()
                .take(8)
                .map(String::as_str)
                .collect();
            let more = self.differences.len().saturating_sub(shown.len());
            let _ = writeln!(
                s,
                "  NOTE      the scenarios differ, so these figures compare different loads: {}{}",
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            );
        }
        for c in &self.changes {
            let unit = FIGURES.iter().find(|f| f.0 == c.figure).map_or("", |f| f.1);
            let verdict = match (c.outside_noise, c.worse) {
                (false, _) => "noise",
                (true, true) => "worse",
                (true, false) => "better",
            };
            let _ = writeln!(
                s,
                "  {:<10} {:>12} [{} .. {}] -> {:>12} [{} .. {}] {unit}  {:+7.1}%  {verdict}",
                c.figure,
                num(c.baseline_median),
                num(c.baseline_min),
                num(c.baseline_max),
                num(c.median),
                num(c.min),
                num(c.max),
                c.change_percent
            );
        }
        s
    }
}
