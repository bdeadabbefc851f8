//! Baselines, criterion's habit for a whole run: `run --save-baseline NAME` keeps the
//! reports of this run (of each of `--repeat N` runs) under `.tsload/baselines/`, and
//! `--baseline NAME` compares a new run's figures with them: medians, the spread of the
//! repeats as the noise band (a change inside it is noise), and `--regress-if` limits that
//! fail the run (exit 3).

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::comparison::{Change, Comparison};
use crate::comparison::{FIGURES, num};
use crate::report::LatencySummary;
use crate::run_report::{RunReport, Streams};

/// Where baselines are kept, relative to the working directory.
pub const BASELINE_DIR: &str = ".tsload/baselines";

/// One figure of one report: `rate` is rows/s (requests/s for a query run), latencies are
/// the corrected latency in ms, `cpu` the client's CPU per 1,000 metrics (per request for
/// queries), `server_cpu` the server's CPU per million metrics (with `[monitor]`). A mixed
/// run's figures are its writes'.
pub fn figure(report: &RunReport, name: &str) -> Option<f64> {
    let server = || Some(report.server.as_ref()?.cpu_s_per_million_metrics);
    if let Streams::Query { query, .. } = &report.streams {
        let q = query.as_deref()?;
        return match name {
            "rate" => Some(q.requests_per_s),
            "cpu" => Some(q.cpu_us_per_request),
            "server_cpu" => server(),
            _ => latency(&q.latency, name),
        };
    }
    let w = report.streams.write()?;
    match name {
        "rate" => Some(w.rows_per_s),
        "cpu" => w.client.cpu_us_per_1000_metrics,
        "server_cpu" => server(),
        _ => latency(&w.latency, name),
    }
}

/// A latency figure of [`FIGURES`] (`None` for any other name, or when nothing was
/// measured).
fn latency(l: &LatencySummary, name: &str) -> Option<f64> {
    matches!(
        name,
        "mean" | "p50" | "p90" | "p95" | "p99" | "p99.9" | "max"
    )
    .then(|| l.get(name))
    .flatten()
}

/// Median and spread of one figure over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        // Halves added, not the sum halved: two figures near f64::MAX have a finite
        // median.
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            v[n / 2 - 1] / 2.0 + v[n / 2] / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            runs: n,
        })
    }
}

/// A `--regress-if` limit: `rate<-5%` (a regression when the rate falls more than 5%),
/// `p99>+10%` (when p99 grows more than 10%).
#[derive(Debug, Clone, PartialEq)]
pub struct RegressIf {
    pub text: String,
    pub figure: String,
    /// `true`: regressed when the change is below `percent`; `false`: above it.
    pub below: bool,
    pub percent: f64,
}

impl RegressIf {
    pub fn parse(text: &str) -> Result<RegressIf, String> {
        let names: Vec<&str> = FIGURES.iter().map(|f| f.0).collect();
        let err = |why: &str| {
            format!(
                "--regress-if '{text}': {why}; expected FIGURE<-N% or FIGURE>+N% with FIGURE one of {}, e.g. 'rate<-5%' or 'p99>+10%'",
                names.join(", ")
            )
        };
        let t = text.trim();
        let (i, below) = match (t.find('<'), t.find('>')) {
            (Some(i), None) => (i, true),
            (None, Some(i)) => (i, false),
            _ => return Err(err("one comparison, < or >")),
        };
        let figure = t[..i].trim();
        if !names.contains(&figure) {
            return Err(err(&format!("unknown figure '{figure}'")));
        }
        let value = t[i + 1..].trim();
        let number = value
            .strip_suffix('%')
            .ok_or_else(|| err("the limit is a percentage"))?;
        let percent: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| err(&format!("'{value}' is not a number")))?;
        Ok(RegressIf {
            text: t.to_string(),
            figure: figure.to_string(),
            below,
            percent,
        })
    }

    fn broken_by(&self, change_percent: f64) -> bool {
        if self.below {
            change_percent < self.percent
        } else {
            change_percent > self.percent
        }
    }
}

/// The keys of the resolved scenarios (the reports' `scenario`) whose values differ,
/// as `key: baseline -> this`; names, sources and outputs do not count.
fn scenario_differences(baseline: &RunReport, current: &RunReport) -> Vec<String> {
    fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    if path.is_empty()
                        && matches!(k.as_str(), "name" | "description" | "source" | "output")
                    {
                        continue;
                    }
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(
                        &p,
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        out,
                    );
                }
            }
            _ if a != b => out.push(format!("{path}: {a} -> {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", baseline.scenario(), current.scenario(), &mut out);
    out
}

/// Compares `current` reports with `baseline` reports, figure by figure.
pub fn compare(
    name: &str,
    baseline: &[RunReport],
    current: &[RunReport],
    limits: &[RegressIf],
) -> Comparison {
    let mut changes = Vec::new();
    for (figure_name, _, higher_better) in FIGURES {
        let of = |rs: &[RunReport]| -> Option<Spread> {
            let v: Vec<f64> = rs.iter().filter_map(|r| figure(r, figure_name)).collect();
            Spread::of(&v)
        };
        let (Some(b), Some(c)) = (of(baseline), of(current)) else {
            continue;
        };
        let change_percent = if b.median != 0.0 {
            (c.median - b.median) / b.median * 100.0
        } else {
            0.0
        };
        changes.push(Change {
            figure: figure_name.to_string(),
            baseline_median: b.median,
            baseline_min: b.min,
            baseline_max: b.max,
            median: c.median,
            min: c.min,
            max: c.max,
            change_percent,
            outside_noise: c.median < b.min || c.median > b.max,
            worse: if *higher_better {
                c.median < b.median
            } else {
                c.median > b.median
            },
        });
    }
    let mut regressions = Vec::new();
    for l in limits {
        match changes.iter().find(|c| c.figure == l.figure) {
            Some(c) if c.outside_noise && l.broken_by(c.change_percent) => {
                regressions.push(format!(
                    "{}: {} changed {:+.1}% ({} -> {}), outside the baseline's spread",
                    l.text,
                    c.figure,
                    c.change_percent,
                    num(c.baseline_median),
                    num(c.median)
                ))
            }
            Some(_) => {}
            None => regressions.push(format!(
                "{}: {} is not in both this run's and the baseline's reports",
                l.text, l.figure
            )),
        }
    }
    let differences = match (baseline.first(), current.first()) {
        (Some(b), Some(c)) => scenario_differences(b, c),
        _ => Vec::new(),
    };
    Comparison {
        baseline: name.to_string(),
        baseline_runs: baseline.len(),
        runs: current.len(),
        changes,
        regressions,
        differences,
    }
}

/// The file of baseline `name`; names are plain words (no paths).
pub fn path_of(name: &str) -> Result<PathBuf, String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if !ok {
        return Err(format!(
            "baseline name '{name}': use letters, digits, '-', '_' and '.' (it names a file in {BASELINE_DIR})"
        ));
    }
    Ok(Path::new(BASELINE_DIR).join(format!("{name}.json")))
}

/// Stores `reports` as baseline `name`.
pub fn save(name: &str, reports: &[RunReport]) -> Result<PathBuf, String> {
    let path = path_of(name)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let runs = reports
        .iter()
        .map(RunReport::to_json)
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|e| format!("baseline '{name}': a report does not encode: {e}"))?;
    let doc = serde_json::json!({
        "name": name,
        "saved_at": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        "runs": runs,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    tsload_redact::file::write_text(&path, &(text + "\n"))
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The reports of baseline `name`, each read by [`RunReport::from_json`] (at most
/// [`crate::merge::MAX_REPORT_BYTES`] of file) and its figures checked.
pub fn load(name: &str) -> Result<Vec<RunReport>, String> {
    let path = path_of(name)?;
    let missing = |e: std::io::Error| {
        format!(
            "baseline '{name}' ({}): {e}; save one first with `tsload run ... --save-baseline {name}`",
            path.display()
        )
    };
    let size = std::fs::metadata(&path).map_err(missing)?.len();
    // Up to 16 runs of the largest report.
    if size > 16 * crate::merge::MAX_REPORT_BYTES {
        return Err(format!(
            "{}: {size} bytes, more than a baseline of tsload's holds",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(missing)?;
    let mut doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let runs = match doc["runs"].take() {
        Value::Array(runs) if !runs.is_empty() => runs,
        _ => return Err(format!("{}: holds no runs", path.display())),
    };
    let count = runs.len();
    let runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, run)| {
            RunReport::from_json(&format!("{} run {} of {count}", path.display(), i + 1), run)
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_figures(&runs).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(runs)
}

/// The largest figure a baseline may hold: no rate (rows/s), latency (ms) or CPU figure
/// of a real run comes near it, and medians of figures below it cannot overflow.
pub const MAX_FIGURE: f64 = 1e12;

/// Refuses a baseline whose runs hold a figure no run can have (not finite, negative, or
/// above [`MAX_FIGURE`]): one such value made a median `inf`, and every `--regress-if`
/// passed against it.
fn check_figures(runs: &[RunReport]) -> Result<(), String> {
    for (i, run) in runs.iter().enumerate() {
        for (name, _, _) in FIGURES {
            if let Some(v) = figure(run, name)
                && !(v.is_finite() && (0.0..=MAX_FIGURE).contains(&v))
            {
                return Err(format!(
                    "run {} of {}: figure `{name}` is {v}; allowed: a finite number from 0 to \
                     {MAX_FIGURE:e} (the file is damaged or was not written by tsload)",
                    i + 1,
                    runs.len()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(rate: f64, p99: f64) -> RunReport {
        let mut s = crate::fixture::write_summary(10);
        s.rows_per_s = rate;
        s.latency.p99_ms = p99;
        s.client.cpu_us_per_1000_metrics = Some(20.0);
        crate::fixture::run_report(Streams::Write(Box::new(s)), 0, "success")
    }

    #[test]
    fn a_baseline_of_another_load_is_noted() {
        let with = |workers: u64, name: &str| {
            let mut r = report(1000.0, 4.0);
            let Streams::Write(s) = &mut r.streams else {
                unreachable!()
            };
            s.scenario = json!({"name": name, "source": name, "output": {"json": name},
                                   "load": {"workers": workers, "batch": 100}});
            r
        };
        let c = compare("main", &[with(4, "a")], &[with(1, "b")], &[]);
        assert_eq!(c.differences, ["load.workers: 4 -> 1"], "{c:?}");
        assert!(
            c.render_text().contains("NOTE") && c.render_text().contains("load.workers: 4 -> 1")
        );
        let same = compare("main", &[with(4, "a")], &[with(4, "b")], &[]);
        assert!(same.differences.is_empty() && !same.render_text().contains("NOTE"));
    }

    /// A baseline run holding 1e308 made the median `inf`, and `--regress-if rate<-5%`
    /// passed whatever the new run did: such a baseline is refused, naming the figure.
    #[test]
    fn a_baseline_with_a_figure_no_run_can_have_is_refused() {
        assert_eq!(
            check_figures(&[report(1000.0, 3.0), report(900.0, 4.0)]),
            Ok(())
        );
        for bad in [1e308, -1.0, 2e12] {
            let e = check_figures(&[report(1000.0, 3.0), report(bad, 4.0)]).unwrap_err();
            assert!(e.starts_with("run 2 of 2: figure `rate` is"), "{e}");
        }
        let e = check_figures(&[report(1000.0, 1e308)]).unwrap_err();
        assert!(e.contains("`p99`"), "{e}");
        // And a median of huge figures stays finite.
        assert_eq!(Spread::of(&[1e308, 1e308]).unwrap().median, 1e308);
    }

    /// A mixed run's report has no figures at its top: its writes' are its figures (they
    /// were read from the top, and a mixed baseline compared nothing); a query run's are
    /// its queries'.
    #[test]
    fn a_mixed_runs_figures_are_its_writes_and_a_query_runs_its_queries() {
        use crate::fixture::{query_summary, run_report, write_summary};
        use crate::run_report::MixedStreams;
        let mut w = write_summary(10);
        w.rows_per_s = 1234.0;
        let q = query_summary(4);
        let mixed = run_report(
            Streams::Mixed(Box::new(MixedStreams {
                write: Some(w.clone()),
                query: Some(q.clone()),
                ..MixedStreams::default()
            })),
            0,
            "",
        );
        assert_eq!(figure(&mixed, "rate"), Some(1234.0));
        assert_eq!(figure(&mixed, "p99"), Some(w.latency.p99_ms));
        assert_eq!(figure(&mixed, "cpu"), w.client.cpu_us_per_1000_metrics);
        let query = run_report(
            Streams::Query {
                query: Some(Box::new(q.clone())),
                preload: Some(Box::new(w)),
            },
            0,
            "",
        );
        assert_eq!(figure(&query, "rate"), Some(q.requests_per_s));
        assert_eq!(figure(&query, "p50"), Some(q.latency.p50_ms));
        assert_eq!(figure(&query, "server_cpu"), None);
        let both = std::slice::from_ref(&mixed);
        let c = compare("m", both, both, &[]);
        assert!(c.changes.iter().any(|c| c.figure == "rate"), "{c:?}");
    }

    #[test]
    fn spread_is_median_min_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0, f64::NAN]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (2.0, 1.0, 3.0, 3));
        assert_eq!(Spread::of(&[4.0, 1.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn regress_if_parses_and_says_what_is_wrong() {
        let r = RegressIf::parse("rate<-5%").unwrap();
        assert_eq!(
            (r.figure.as_str(), r.below, r.percent),
            ("rate", true, -5.0)
        );
        let r = RegressIf::parse(" p99.9 > +10 % ").unwrap();
        assert_eq!(
            (r.figure.as_str(), r.below, r.percent),
            ("p99.9", false, 10.0)
        );
        for (bad, why) in [
            ("speed<-5%", "unknown figure 'speed'"),
            ("rate<-5", "a percentage"),
            ("rate<x%", "'x%' is not a number"),
            ("rate-5%", "one comparison"),
            ("rate<>5%", "one comparison"),
        ] {
            let e = RegressIf::parse(bad).unwrap_err();
            assert!(
                e.contains(why) && e.contains("e.g. 'rate<-5%'"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_slowdown_outside_the_noise_is_a_regression_and_noise_is_not() {
        let base = [report(1000.0, 4.0), report(1040.0, 4.2), report(980.0, 3.9)];
        let limits = [
            RegressIf::parse("rate<-5%").unwrap(),
            RegressIf::parse("p99>+10%").unwrap(),
        ];
        // 30% slower: outside the spread, past the limit.
        let slow = [report(700.0, 6.0)];
        let c = compare("main", &base, &slow, &limits);
        assert_eq!(c.regressions.len(), 2, "{c:?}");
        assert!(
            c.regressions[0].starts_with("rate<-5%: rate changed -30.0%"),
            "{:?}",
            c.regressions
        );
        let rate = c.changes.iter().find(|c| c.figure == "rate").unwrap();
        assert!(rate.outside_noise && rate.worse);
        assert!(c.render_text().contains("worse"));
        // Within the spread: noise, whatever the percentage.
        let same = [report(1010.0, 4.1)];
        let c = compare("main", &base, &same, &limits);
        assert!(c.regressions.is_empty(), "{c:?}");
        assert!(c.changes.iter().all(|c| !c.outside_noise));
        // Faster is not a regression of rate<-5%.
        let fast = [report(1500.0, 3.0)];
        assert!(
            compare("main", &base, &fast, &limits[..1])
                .regressions
                .is_empty()
        );
        // A figure neither has breaks the limit, saying so.
        let c = compare(
            "main",
            &base,
            &same,
            &[RegressIf::parse("server_cpu>+5%").unwrap()],
        );
        assert!(
            c.regressions[0].contains("not in both"),
            "{:?}",
            c.regressions
        );
    }

    #[test]
    fn baseline_names_are_plain_words() {
        assert!(path_of("main-1.2_x").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(path_of(bad).is_err(), "{bad}");
        }
    }
}
