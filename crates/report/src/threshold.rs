//! Pass/fail thresholds on a finished run, k6-style: `p99<20ms`, `service.p99.9<=5ms`,
//! any percentile (`p97.5<8ms`), `metrics_per_s>=1000000`, `errors==0`,
//! `error_rate<0.1%`, `achieved_ratio>=99%`. A broken threshold makes the run exit
//! non-zero.

use std::fmt;

use crate::query_report::QuerySummary;
use crate::report::{LatencySummary, Summary, percentile_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }
}

/// A stream of a run as a threshold sees it: writes or queries, open or closed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub queries: bool,
    pub open_loop: bool,
}

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    text: String,
    metric: String,
    op: Op,
    /// Milliseconds for latency figures, plain numbers otherwise.
    value: f64,
}

/// A threshold that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad threshold `{text}`: {reason}")]
pub struct ThresholdError {
    pub text: String,
    pub reason: String,
}

const LATENCY_FIGURES: &[&str] = &[
    "min", "mean", "avg", "p50", "median", "p90", "p95", "p99", "p99.9", "p99.99", "max",
];
const COUNT_FIGURES: &[&str] = &[
    "rows",
    "metrics",
    "requests",
    "errors",
    "retries",
    "failed_rows",
    "ambiguous_rows",
    "unsent_requests",
    "rows_per_s",
    "metrics_per_s",
    "mb_per_s",
    "cpu_us_per_1000_metrics",
    // query runs
    "failed_requests",
    "statements",
    "requests_per_s",
    "statements_per_s",
    // ratios, 0 to 1 (or written as a percentage)
    "error_rate",
    "achieved_ratio",
];

/// Ratios: failed attempts over all attempts; achieved over offered rate (open loop).
const RATIO_FIGURES: &[&str] = &["error_rate", "achieved_ratio"];

impl Threshold {
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let err = |reason: String| ThresholdError {
            text: text.to_string(),
            reason,
        };
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let pos = t
            .find(['<', '>', '='])
            .ok_or_else(|| err("expected METRIC OP VALUE with OP one of < <= > >= ==".into()))?;
        let (metric, rest) = t.split_at(pos);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix("==") {
            (Op::Eq, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else {
            return Err(err("expected one of < <= > >= ==".into()));
        };
        let figure = metric
            .strip_prefix("latency.")
            .or_else(|| metric.strip_prefix("service."))
            .unwrap_or(metric);
        let value = if LATENCY_FIGURES.contains(&figure) || percentile_of(figure).is_some() {
            parse_duration_ms(value).ok_or_else(|| {
                err(format!(
                    "`{value}` is not a duration: write a number with a unit ns, us, ms or s, e.g. 20ms"
                ))
            })?
        } else if RATIO_FIGURES.contains(&metric) {
            let (number, scale) = match value.strip_suffix('%') {
                Some(n) => (n, 0.01),
                None => (value, 1.0),
            };
            number
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(|v| v * scale)
                .ok_or_else(|| {
                    err(format!(
                        "`{value}` is not a ratio: write 0.01 or 1% (error_rate: failed attempts \
                         over all; achieved_ratio: achieved over offered rate)"
                    ))
                })?
        } else if COUNT_FIGURES.contains(&metric) {
            value
                .parse::<f64>()
                .map_err(|_| err(format!("`{value}` is not a number")))?
        } else {
            return Err(err(format!(
                "unknown metric `{metric}`; allowed: [latency.|service.]{}|pNN.N (any \
                 percentile) or {}",
                LATENCY_FIGURES.join("|"),
                COUNT_FIGURES.join(", ")
            )));
        };
        Ok(Threshold {
            text: text.to_string(),
            metric: metric.to_string(),
            op,
            value,
        })
    }

    /// Whether a write run measures the figure (latency and service figures, rows,
    /// metrics, bytes, requests, errors, retries...).
    pub fn measured_by_writes(&self) -> bool {
        !matches!(
            self.metric.as_str(),
            "failed_requests" | "statements" | "requests_per_s" | "statements_per_s"
        )
    }

    /// Whether a query run measures the figure (latency and service figures, rows,
    /// requests, errors, statements and their rates).
    pub fn measured_by_queries(&self) -> bool {
        !matches!(
            self.metric.as_str(),
            "metrics"
                | "retries"
                | "failed_rows"
                | "ambiguous_rows"
                | "unsent_requests"
                | "metrics_per_s"
                | "mb_per_s"
                | "cpu_us_per_1000_metrics"
        )
    }

    /// Whether `stream` measures the figure: a figure of its kind
    /// ([`Self::measured_by_writes`], [`Self::measured_by_queries`]), and for
    /// `achieved_ratio` an open loop (a closed loop offers no rate to compare with).
    pub fn measured_by(&self, stream: Stream) -> bool {
        let of_kind = if stream.queries {
            self.measured_by_queries()
        } else {
            self.measured_by_writes()
        };
        of_kind && (self.metric != "achieved_ratio" || stream.open_loop)
    }

    /// Refuses, before the run, a threshold that no stream of the run measures (it could
    /// only break, as NaN, after the whole run): why, and what would measure it.
    pub fn check_measured(&self, streams: &[Stream]) -> Result<(), String> {
        if streams.iter().any(|s| self.measured_by(*s)) {
            return Ok(());
        }
        let kinds: Vec<&str> = streams
            .iter()
            .map(|s| if s.queries { "queries" } else { "writes" })
            .collect();
        let why = if self.metric == "achieved_ratio"
            && streams.iter().any(|s| {
                self.measured_by(Stream {
                    open_loop: true,
                    ..*s
                })
            }) {
            "it compares the achieved rate with the offered one, and this run offers none: \
             it runs closed loop (no load.rate or query.rate); set a rate, or judge another \
             figure"
                .to_string()
        } else if self.measured_by_writes() {
            format!(
                "a figure of writes, and this run only has {} (mode \"query\")",
                kinds.join(" and ")
            )
        } else {
            format!(
                "a figure of queries (statements, failed_requests, requests_per_s, \
                 statements_per_s), and this run only has {}",
                kinds.join(" and ")
            )
        };
        Err(format!(
            "threshold `{}`: this run does not measure {}: {why}",
            self.text, self.metric
        ))
    }

    /// Checks the threshold; `Ok` carries a line saying what was measured (`threshold
    /// `p99<20ms` held: p99 was 3.2ms`), `Err` one saying how it broke.
    pub fn check(&self, s: &Summary) -> Result<String, String> {
        self.evaluate(&s.latency, &s.service, |metric| {
            Some(match metric {
                "rows" => s.rows as f64,
                "metrics" => s.metrics as f64,
                "requests" => s.requests as f64,
                "errors" => s.error_count() as f64,
                "retries" => s.retries as f64,
                "failed_rows" => s.failed_rows as f64,
                "ambiguous_rows" => s.ambiguous_rows as f64,
                "unsent_requests" => s.unsent_requests as f64,
                "rows_per_s" => s.rows_per_s,
                "metrics_per_s" => s.metrics_per_s,
                "mb_per_s" => s.mb_per_s,
                "cpu_us_per_1000_metrics" => s.client.cpu_us_per_1000_metrics?,
                "error_rate" => ratio(s.error_count(), s.requests + s.error_count()),
                // Closed loop offers no rate: not measured.
                "achieved_ratio" => s.rows_per_s / s.offered_rows_per_s?,
                _ => return None,
            })
        })
    }

    /// Checks the threshold against a query run: latency figures are the requests'
    /// (all kinds merged); counts are `requests`, `failed_requests`, `errors`, `rows`,
    /// `statements`, `requests_per_s` (TPS for transactions) and `statements_per_s`
    /// (QPS). Write-only figures (metrics, bytes, retries) read as not measured.
    pub fn check_query(&self, s: &QuerySummary) -> Result<String, String> {
        self.evaluate(&s.latency, &s.service, |metric| {
            Some(match metric {
                "rows" => s.rows as f64,
                "requests" => s.requests as f64,
                "failed_requests" => s.failed_requests as f64,
                "errors" => s.error_count() as f64,
                "statements" => s.statements as f64,
                "requests_per_s" => s.requests_per_s,
                "statements_per_s" => s.statements_per_s,
                "rows_per_s" => s.rows_per_s,
                "error_rate" => ratio(s.error_count(), s.requests + s.error_count()),
                // Closed loop offers no rate: not measured.
                "achieved_ratio" => s.requests_per_s / s.offered_requests_per_s?,
                _ => return None,
            })
        })
    }

    /// Looks the metric up (latency figures in ms, then `count`) and judges it; a figure
    /// the run did not measure is NaN, which breaks every threshold.
    fn evaluate(
        &self,
        latency: &LatencySummary,
        service: &LatencySummary,
        count: impl Fn(&str) -> Option<f64>,
    ) -> Result<String, String> {
        let (actual, unit) = if let Some(f) = self.metric.strip_prefix("service.") {
            (service.get(f), "ms")
        } else if let Some(f) = self.metric.strip_prefix("latency.") {
            (latency.get(f), "ms")
        } else if let Some(v) = latency.get(&self.metric) {
            (Some(v), "ms")
        } else {
            (count(&self.metric), "")
        };
        self.judge(actual.unwrap_or(f64::NAN), unit)
    }

    fn judge(&self, actual: f64, unit: &str) -> Result<String, String> {
        if self.op.holds(actual, self.value) {
            Ok(format!(
                "threshold `{}` held: {} was {}{unit}",
                self.text,
                self.metric,
                self.shown(actual)
            ))
        } else {
            Err(format!(
                "threshold `{}` broken: {} was {}{unit} (wanted {} {}{unit})",
                self.text,
                self.metric,
                self.shown(actual),
                self.op.as_str(),
                self.value
            ))
        }
    }
}

impl Threshold {
    /// `actual` rounded for a person (`99990.73` -> `99991`, `0.123456` -> `0.1235`), with
    /// as many more decimals as it takes for the shown figure to hold or break the
    /// threshold as `actual` does.
    fn shown(&self, actual: f64) -> String {
        if !actual.is_finite() {
            return actual.to_string();
        }
        let a = actual.abs();
        let first = if a >= 1000.0 {
            0
        } else if a >= 1.0 {
            2
        } else {
            4
        };
        for decimals in first..=9 {
            let text = format!("{actual:.decimals$}");
            let text = if text.contains('.') {
                text.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                text
            };
            let held = self.op.holds(actual, self.value);
            if text
                .parse::<f64>()
                .is_ok_and(|v| self.op.holds(v, self.value) == held)
            {
                return text;
            }
        }
        actual.to_string()
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `part / whole`, 0 when nothing was attempted.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// `20ms` -> 20.0, `1.5s` -> 1500.0, `250us` -> 0.25.
fn parse_duration_ms(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let factor = match unit {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        _ => return None,
    };
    (n.is_finite() && n >= 0.0).then_some(n * factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ClientSummary, LatencySummary};

    fn summary() -> Summary {
        Summary {
            tsload_version: "0".into(),
            target: "null".into(),
            workload: "cpu-only".into(),
            started_at: String::new(),
            elapsed_s: 1.0,
            stop_reason: crate::StopReasons::one(tsload_core::engine::StopReason::DataEnd),
            fatal_error: None,
            rows: 100,
            metrics: 1000,
            bytes: 0,
            requests: 10,
            retries: 0,
            failed_requests: 0,
            failed_rows: 0,
            ambiguous_rows: 0,
            recovered_rows: 0,
            unsent_requests: 0,
            unsent_rows: 0,
            late_rows: 0,
            duplicate_rows: 0,
            duplicate_metrics: 0,
            abandoned_requests: 0,
            offered_rows_per_s: None,
            ledger_run_id: None,
            errors: Default::default(),
            rows_per_s: 100.0,
            metrics_per_s: 1000.0,
            mb_per_s: 0.0,
            latency: LatencySummary {
                p99_ms: 25.0,
                count: 10,
                ..Default::default()
            },
            service: LatencySummary {
                p99_ms: 5.0,
                count: 10,
                ..Default::default()
            },
            client: ClientSummary::default(),
            storage: None,
            storage_error: None,
            stored: None,
            stored_error: None,
            stored_shortfall: None,
            server_questions: None,
            devices_written: None,
            series_written: None,
            server_series_created: None,
            scenario: serde_json::Value::Null,
        }
    }

    #[test]
    fn query_runs_are_judged_on_their_own_figures() {
        let json = serde_json::json!({
            "tsload_version": "0", "target": "postgres", "workload": "tsbs",
            "started_at": "", "elapsed_s": 2.0, "load_s": 0.0, "load_requests": 0,
            "load_rows": 0, "load_statements": 0, "stop_reason": "duration",
            "fatal_error": null, "requests": 200, "failed_requests": 3, "statements": 400,
            "rows": 1000, "errors": {"rejected": 3}, "requests_per_s": 100.0,
            "statements_per_s": 200.0, "rows_per_s": 500.0,
            "latency": {"count": 200, "min_ms": 1.0, "mean_ms": 2.0, "p50_ms": 2.0,
                        "p90_ms": 3.0, "p95_ms": 3.5, "p99_ms": 12.0, "p99_9_ms": 13.0,
                        "p99_99_ms": 13.0, "max_ms": 13.0},
            "service": LatencySummary::default(), "kinds": [],
            "client": ClientSummary::default(), "cpu_us_per_request": 0.0,
            "scenario": null,
        });
        let q: QuerySummary = serde_json::from_value(json).unwrap();
        let check = |t: &str| Threshold::parse(t).unwrap().check_query(&q);
        assert!(check("p99<20ms").is_ok());
        assert!(check("p99<10ms").unwrap_err().contains("was 12ms"));
        assert!(check("errors==0").unwrap_err().contains("errors was 3"));
        assert!(check("statements_per_s>=200").is_ok());
        assert!(check("requests_per_s>100").is_err());
        // A write-only figure was not measured: NaN breaks the threshold.
        assert!(check("metrics_per_s>0").is_err());
        let t = |t: &str| Threshold::parse(t).unwrap();
        assert!(!t("metrics_per_s>0").measured_by_queries());
        assert!(t("metrics_per_s>0").measured_by_writes());
        assert!(!t("statements_per_s>0").measured_by_writes());
        assert!(t("p99<1s").measured_by_writes() && t("p99<1s").measured_by_queries());
    }

    #[test]
    fn with_nothing_recorded_every_latency_threshold_breaks_alike() {
        let mut s = summary();
        s.latency = LatencySummary::default();
        for t in ["p99<20ms", "p97.5<20ms", "max<1s", "mean<1s"] {
            let e = Threshold::parse(t).unwrap().check(&s).unwrap_err();
            assert!(e.contains("not measured") || e.contains("NaN"), "{t}: {e}");
        }
    }

    #[test]
    fn latency_thresholds_use_units() {
        let s = summary();
        assert!(Threshold::parse("p99<20ms").unwrap().check(&s).is_err());
        assert!(Threshold::parse("p99 < 0.03s").unwrap().check(&s).is_ok());
        assert!(
            Threshold::parse("service.p99<=5000us")
                .unwrap()
                .check(&s)
                .is_ok()
        );
        let broken = Threshold::parse("latency.p99<20ms")
            .unwrap()
            .check(&s)
            .unwrap_err();
        assert!(broken.contains("25ms"), "{broken}");
    }

    #[test]
    fn any_percentile_error_rate_and_achieved_ratio() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for ms in 1..=1000u64 {
            h.record(ms * 1_000_000).unwrap();
        }
        let mut s = summary();
        s.latency = LatencySummary::from_histogram(&h);
        let t = |t: &str| Threshold::parse(t).unwrap().check(&s);
        assert!(t("p97.5<980ms").is_ok(), "{:?}", t("p97.5<980ms"));
        assert!(t("p97.5<970ms").unwrap_err().contains("p97.5 was 975"));
        assert!(t("p75<=751ms").is_ok());
        assert!(Threshold::parse("p101<1ms").is_err());
        // 10 requests succeeded, 2 attempts failed: 2 / 12.
        s.errors.insert("timeout".into(), 2);
        let t = |t: &str| Threshold::parse(t).unwrap().check(&s);
        assert!(t("error_rate<17%").is_ok());
        assert!(
            t("error_rate<0.1")
                .unwrap_err()
                .contains("error_rate was 0.1667")
        );
        // Closed loop: no offered rate, not measured, broken.
        assert!(t("achieved_ratio>=0.99").is_err());
        s.offered_rows_per_s = Some(200.0);
        let t = |t: &str| Threshold::parse(t).unwrap().check(&s);
        assert!(t("achieved_ratio>=50%").is_ok());
        assert!(t("achieved_ratio>=99%").unwrap_err().contains("was 0.5"));
        // A person's figure, with the decimals it takes to still break the threshold.
        let th = Threshold::parse("rows_per_s>99990.8").unwrap();
        assert_eq!(th.shown(99990.72596015793), "99990.7");
        assert_eq!(
            Threshold::parse("rows_per_s>100000")
                .unwrap()
                .shown(99990.72596015793),
            "99991"
        );
        let e = Threshold::parse("error_rate<lots").unwrap_err();
        assert!(e.reason.contains("not a ratio"), "{e}");
    }

    #[test]
    fn count_thresholds() {
        let s = summary();
        assert!(Threshold::parse("errors==0").unwrap().check(&s).is_ok());
        assert!(
            Threshold::parse("metrics_per_s>=2000")
                .unwrap()
                .check(&s)
                .is_err()
        );
    }

    #[test]
    fn bad_thresholds_say_why() {
        let e = Threshold::parse("p99<20").unwrap_err();
        assert!(e.reason.contains("duration"), "{e}");
        let e = Threshold::parse("q98<20ms").unwrap_err();
        assert!(
            e.reason.contains("unknown metric") && e.reason.contains("pNN.N"),
            "{e}"
        );
        let e = Threshold::parse("p99").unwrap_err();
        assert!(e.reason.contains("OP"), "{e}");
    }

    /// `--fail-if 'achieved_ratio>=0.95'` on a closed-loop run and `statements_per_s` on a
    /// write run ran to the end and failed with "was NaN" (exit 3).
    #[test]
    fn a_threshold_no_stream_measures_is_refused_before_the_run() {
        let t = |t: &str| Threshold::parse(t).unwrap();
        let closed_writes = Stream {
            queries: false,
            open_loop: false,
        };
        let open_writes = Stream {
            open_loop: true,
            ..closed_writes
        };
        let closed_queries = Stream {
            queries: true,
            open_loop: false,
        };
        let e = t("achieved_ratio>=0.95")
            .check_measured(&[closed_writes])
            .unwrap_err();
        assert!(
            e.contains("does not measure achieved_ratio") && e.contains("closed loop"),
            "{e}"
        );
        assert!(
            t("achieved_ratio>=0.95")
                .check_measured(&[open_writes])
                .is_ok()
        );
        // Mixed: the open query stream measures it.
        assert!(
            t("achieved_ratio>=95%")
                .check_measured(&[
                    closed_writes,
                    Stream {
                        open_loop: true,
                        ..closed_queries
                    }
                ])
                .is_ok()
        );
        let e = t("statements_per_s>100")
            .check_measured(&[open_writes])
            .unwrap_err();
        assert!(
            e.contains("a figure of queries") && e.contains("only has writes"),
            "{e}"
        );
        let e = t("metrics_per_s>1")
            .check_measured(&[closed_queries])
            .unwrap_err();
        assert!(e.contains("a figure of writes"), "{e}");
        assert!(t("p99<1s").check_measured(&[closed_queries]).is_ok());
    }

    /// Passed thresholds printed nothing: each now says its value.
    #[test]
    fn a_held_threshold_says_its_value() {
        let s = summary();
        let held = Threshold::parse("p99 < 0.03s").unwrap().check(&s).unwrap();
        assert!(
            held.starts_with("threshold `p99 < 0.03s` held: p99 was "),
            "{held}"
        );
        assert!(held.ends_with("ms"), "{held}");
        // Rounded, but never across the line.
        let t = Threshold::parse("rows_per_s>=99990.7").unwrap();
        assert_eq!(t.shown(99_990.73), "99991");
        assert_eq!(t.shown(99_990.69), "99990.69");
    }
}
