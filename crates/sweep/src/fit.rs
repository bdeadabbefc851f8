//! The RTT model: a least-squares fit of `t_request = t_service + k * RTT` over a sweep's
//! points, giving `k` (round trips per request), `t_service` (the request's cost at zero
//! RTT), R², and the RTT at which throughput halves.
//!
//! `t_request` is the mean time one in-flight slot spends per request. By default
//! ([`TRequestSource::ClosedLoop`]) it is Little's law on the closed loop:
//! `t_request = workers * in_flight / requests_per_s`. That is the number docs/experiments.md R1's
//! note uses (`threads x rows_per_request / rate`), it includes everything a slot does per
//! request (building the batch, client overheads, the round trips, the server's work), and
//! throughput is exactly `slots * rows_per_request / t_request`, so the halving RTT read from
//! the fit is the RTT at which the measured rate halves. It only holds when the slots are
//! never idle, i.e. the run was not rate-limited. For a rate-limited (open-loop) run use
//! [`TRequestSource::ServiceMean`]: the mean send-to-acknowledgement time, which leaves out
//! the client's own time between requests.

use std::fmt;
use std::io;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::grid::Axis;
use crate::grid::Point;
use crate::table::{Measure, SweepRow, SweepTable};

/// Which per-request time the fit uses (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TRequestSource {
    /// `workers * in_flight / requests_per_s` (Little's law): for unthrottled runs.
    #[default]
    ClosedLoop,
    /// The mean service time (send to acknowledgement): for rate-limited runs.
    ServiceMean,
}

impl SweepRow {
    /// The mean time per request seen by one in-flight slot, in ms (see the module docs);
    /// `None` when the row cannot give one (no requests completed, zero workers, a
    /// non-positive or non-finite figure).
    pub fn t_request_ms(&self, source: TRequestSource) -> Option<f64> {
        let t = match source {
            TRequestSource::ClosedLoop => {
                let slots = self.workers as f64 * self.in_flight as f64;
                let requests_per_s = self.rates.requests_per_s();
                if slots <= 0.0 || requests_per_s <= 0.0 {
                    return None;
                }
                slots * 1000.0 / requests_per_s
            }
            TRequestSource::ServiceMean => self.service_mean_ms,
        };
        (t.is_finite() && t > 0.0).then_some(t)
    }
}

/// Why no fit could be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("too few points to fit: {got} with both an RTT and a request time, at least 2 needed")]
    TooFewPoints { got: usize },
    #[error(
        "all {points} points have the same RTT ({rtt_ms} ms): at least 2 different RTTs are needed to fit a slope"
    )]
    OneRtt { points: usize, rtt_ms: f64 },
    #[error(
        "point #{index} is not usable: RTT {rtt_ms} ms, request time {t_request_ms} ms (both must be finite, the RTT >= 0)"
    )]
    BadPoint {
        index: usize,
        rtt_ms: f64,
        t_request_ms: f64,
    },
}

/// Why the fit gives no halving RTT.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum NoHalving {
    #[error("k = {k} <= 0: throughput does not fall as RTT grows, so it never halves")]
    NonPositiveSlope { k: f64 },
    #[error(
        "t_service = {t_service_ms} ms <= 0: the zero-RTT intercept is not a time, so there is no zero-RTT rate to halve"
    )]
    NonPositiveIntercept { t_service_ms: f64 },
}

/// The fitted model `t_request = t_service + k * RTT`, all times in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RttFit {
    /// Round trips per request: how much each ms of RTT adds to a request.
    pub k: f64,
    /// The request time at zero RTT (the intercept), ms.
    pub t_service_ms: f64,
    /// Coefficient of determination, 1 for a perfect fit. When every request time is the
    /// same (so the fit is exact with k = 0) it is 1.
    pub r_squared: f64,
    /// How many points went into the fit.
    pub points: usize,
}

impl RttFit {
    /// The model's request time at `rtt_ms`.
    pub fn t_request_ms(&self, rtt_ms: f64) -> f64 {
        self.t_service_ms + self.k * rtt_ms
    }

    /// Throughput at `rtt_ms` relative to the zero-RTT intercept:
    /// `t_service / (t_service + k * RTT)`.
    pub fn relative_rate(&self, rtt_ms: f64) -> f64 {
        self.t_service_ms / self.t_request_ms(rtt_ms)
    }

    /// The RTT (ms) at which throughput is half the zero-RTT intercept's: `t_service / k`.
    pub fn halving_rtt_ms(&self) -> Result<f64, NoHalving> {
        if self.k.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(NoHalving::NonPositiveSlope { k: self.k });
        }
        if self.t_service_ms.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(NoHalving::NonPositiveIntercept {
                t_service_ms: self.t_service_ms,
            });
        }
        Ok(self.t_service_ms / self.k)
    }
}

impl fmt::Display for RttFit {
    /// `t_request = 0.812 ms + 1.690 x RTT (R^2 0.9991, 7 points): k = 1.690 round trips
    /// per request, t_service = 0.812 ms; throughput halves at RTT 0.481 ms`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "t_request = {:.3} ms + {:.3} x RTT (R^2 {:.4}, {} points): k = {:.3} round trips per request, t_service = {:.3} ms; ",
            self.t_service_ms, self.k, self.r_squared, self.points, self.k, self.t_service_ms
        )?;
        match self.halving_rtt_ms() {
            Ok(h) => write!(f, "throughput halves at RTT {h:.3} ms"),
            Err(e) => write!(f, "no halving RTT: {e}"),
        }
    }
}

/// JSON: `{"k", "t_service_ms", "r_squared", "points", "halving_rtt_ms": number | null,
/// "no_halving_reason": string | null}`.
impl Serialize for RttFit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let halving = self.halving_rtt_ms();
        let mut s = serializer.serialize_struct("RttFit", 6)?;
        s.serialize_field("k", &self.k)?;
        s.serialize_field("t_service_ms", &self.t_service_ms)?;
        s.serialize_field("r_squared", &self.r_squared)?;
        s.serialize_field("points", &self.points)?;
        s.serialize_field("halving_rtt_ms", &halving.ok())?;
        s.serialize_field("no_halving_reason", &halving.err().map(|e| e.to_string()))?;
        s.end()
    }
}

/// Least squares of `t_request_ms` on `rtt_ms` over `(rtt_ms, t_request_ms)` pairs.
pub fn fit_rtt(points: &[(f64, f64)]) -> Result<RttFit, FitError> {
    for (i, &(x, y)) in points.iter().enumerate() {
        if !x.is_finite() || !y.is_finite() || x < 0.0 {
            return Err(FitError::BadPoint {
                index: i + 1,
                rtt_ms: x,
                t_request_ms: y,
            });
        }
    }
    let n = points.len();
    if n < 2 {
        return Err(FitError::TooFewPoints { got: n });
    }
    let nf = n as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    if points.iter().all(|p| p.0 == points[0].0) || sxx <= 0.0 {
        return Err(FitError::OneRtt {
            points: n,
            rtt_ms: points[0].0,
        });
    }
    let k = sxy / sxx;
    let t_service_ms = mean_y - k * mean_x;
    let ss_res: f64 = points
        .iter()
        .map(|p| (p.1 - (t_service_ms + k * p.0)).powi(2))
        .sum();
    let r_squared = if syy > 0.0 {
        (1.0 - ss_res / syy).clamp(0.0, 1.0)
    } else {
        1.0
    };
    Ok(RttFit {
        k,
        t_service_ms,
        r_squared,
        points: n,
    })
}

/// Fits the rows that are a measure ([`crate::Verdict::is_measure`]) and have a measured
/// RTT and a request time ([`SweepRow::t_request_ms`]); other rows are left out.
pub fn fit_rows<'a>(
    rows: impl IntoIterator<Item = &'a SweepRow>,
    source: TRequestSource,
) -> Result<RttFit, FitError> {
    let points: Vec<(f64, f64)> = rows
        .into_iter()
        .filter(|r| r.verdict.is_measure())
        .filter_map(|r| Some((r.rtt.as_ref()?.median_ms, r.t_request_ms(source)?)))
        .collect();
    fit_rtt(&points)
}

/// Below this R^2 a fit is shown with a warning not to use it.
pub const TRUSTED_R_SQUARED: f64 = 0.9;

/// The keys that change the network RTT rather than the load: rows that differ only in
/// these are fitted together. The CLI passes its impairment keys; this is the usual one.
pub const DEFAULT_RTT_KEYS: &[&str] = &["delay"];

/// One fit per combination of the non-RTT keys.
#[derive(Debug, Clone, PartialEq)]
pub struct FitGroup {
    /// The values of the keys that are not RTT keys, shared by this group's rows (empty
    /// when the sweep has only RTT keys).
    pub fixed: Point,
    pub fit: Result<RttFit, FitError>,
    /// The group's points that are not a measure (failed, interrupted, short,
    /// unverified), left out of the fit.
    pub left_out: usize,
}

impl FitGroup {
    /// Why the fit should not be trusted, if it should not: R^2 below
    /// [`TRUSTED_R_SQUARED`], or only two points (a line through two points is exact, so
    /// its R^2 says nothing).
    pub fn caution(&self) -> Option<String> {
        let fit = self.fit.as_ref().ok()?;
        let mut why = Vec::new();
        if fit.r_squared < TRUSTED_R_SQUARED {
            why.push(format!(
                "R^2 {:.2} is below {TRUSTED_R_SQUARED}: the points do not follow t_request = \
                 t_service + k x RTT, so k and the halving RTT mean little",
                fit.r_squared
            ));
        }
        if fit.points < 3 {
            why.push(format!(
                "{} points: a line through two points fits them exactly, so R^2 says nothing",
                fit.points
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// JSON: `{"fixed": {key: value}, "fit": {...} | null, "error": string | null,
/// "left_out": n, "caution": string | null}`.
impl Serialize for FitGroup {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("FitGroup", 5)?;
        s.serialize_field("fixed", &self.fixed)?;
        s.serialize_field("fit", &self.fit.as_ref().ok())?;
        s.serialize_field("error", &self.fit.as_ref().err().map(|e| e.to_string()))?;
        s.serialize_field("left_out", &self.left_out)?;
        s.serialize_field("caution", &self.caution())?;
        s.end()
    }
}

impl fmt::Display for FitGroup {
    /// `workers=16: t_request = ...` or `all points: ...`; a failed fit prints its reason,
    /// an untrustworthy one its [`FitGroup::caution`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fixed.values().is_empty() {
            f.write_str("fit: ")?;
        } else {
            write!(f, "fit {}: ", self.fixed.label())?;
        }
        match &self.fit {
            Ok(fit) => write!(f, "{fit}")?,
            Err(e) => write!(f, "none: {e}")?,
        }
        if self.left_out > 0 {
            write!(
                f,
                "\n  {} of its points left out: no measure (failed, interrupted, short or \
                 unverified)",
                self.left_out
            )?;
        }
        match self.caution() {
            Some(why) => write!(f, "\n  do not trust this fit: {why}"),
            None => Ok(()),
        }
    }
}

impl SweepTable {
    /// One fit per combination of the keys not in `rtt_keys`, in the order the
    /// combinations first appear; empty when no key of the sweep is in `rtt_keys` (no RTT
    /// was swept, so there is nothing to fit).
    pub fn fit_groups(&self, rtt_keys: &[&str], source: TRequestSource) -> Vec<FitGroup> {
        if !self.axes.iter().any(|a| rtt_keys.contains(&a.key.as_str())) {
            return Vec::new();
        }
        let fixed_of = |row: &SweepRow| {
            Point::new(
                row.point
                    .values()
                    .iter()
                    .filter(|(k, _)| !rtt_keys.contains(&k.as_str()))
                    .cloned()
                    .collect(),
            )
        };
        let mut groups: Vec<Point> = Vec::new();
        for row in &self.rows {
            let fixed = fixed_of(row);
            if !groups.contains(&fixed) {
                groups.push(fixed);
            }
        }
        groups
            .into_iter()
            .map(|fixed| {
                let fit = fit_rows(self.rows.iter().filter(|r| fixed_of(r) == fixed), source);
                let left_out = self
                    .rows
                    .iter()
                    .filter(|r| fixed_of(r) == fixed && !r.verdict.is_measure())
                    .count();
                FitGroup {
                    fixed,
                    fit,
                    left_out,
                }
            })
            .collect()
    }
}

impl SweepTable {
    /// Writes `{"axes": [...], "rows": [...], "fits": [...]}` (pretty-printed, newline at
    /// the end), with `"measure": "queries"` or `"transactions"` after the axes for a
    /// query sweep (whose rows' rates have their own names, [`Measure::columns`]). `fits`
    /// is what [`SweepTable::fit_groups`] returned (may be empty): each
    /// `{"fixed": {key: value}, "fit": {...} | null, "error": "..." | null}`.
    pub fn write_json<W: io::Write>(&self, fits: &[FitGroup], mut w: W) -> io::Result<()> {
        #[derive(Serialize)]
        struct Report<'a> {
            axes: &'a [Axis],
            #[serde(skip_serializing_if = "is_writes")]
            measure: Measure,
            rows: &'a [SweepRow],
            fits: &'a [FitGroup],
        }
        serde_json::to_writer_pretty(
            &mut w,
            &Report {
                axes: &self.axes,
                measure: self.measure,
                rows: &self.rows,
                fits,
            },
        )?;
        w.write_all(b"\n")
    }
}

fn is_writes(m: &Measure) -> bool {
    *m == Measure::Writes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::{Grid, SweepValue};
    use crate::table::{Rates, RttStats};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn exact_recovery() {
        let (k, ts) = (1.7, 0.8);
        let pts: Vec<(f64, f64)> = [0.034, 0.254, 0.466, 0.878, 1.088, 1.286, 2.101]
            .iter()
            .map(|&x| (x, ts + k * x))
            .collect();
        let fit = fit_rtt(&pts).unwrap();
        assert!(close(fit.k, k, 1e-12), "{fit:?}");
        assert!(close(fit.t_service_ms, ts, 1e-12), "{fit:?}");
        assert!(close(fit.r_squared, 1.0, 1e-12), "{fit:?}");
        assert_eq!(fit.points, 7);
        let h = fit.halving_rtt_ms().unwrap();
        assert!(close(h, ts / k, 1e-12));
        assert!(close(fit.relative_rate(h), 0.5, 1e-12));
    }

    #[test]
    fn two_points_are_enough() {
        let fit = fit_rtt(&[(0.0, 2.0), (10.0, 12.0)]).unwrap();
        assert!(close(fit.k, 1.0, 1e-12) && close(fit.t_service_ms, 2.0, 1e-12));
        assert!(close(fit.halving_rtt_ms().unwrap(), 2.0, 1e-12));
    }

    #[test]
    fn noisy_data() {
        // Deterministic +-5% noise around t = 0.5 + 2 * RTT.
        let noise = [0.03, -0.05, 0.04, -0.02, 0.05, -0.04, 0.01, -0.03];
        let pts: Vec<(f64, f64)> = noise
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let x = i as f64 * 0.5;
                (x, (0.5 + 2.0 * x) * (1.0 + e))
            })
            .collect();
        let fit = fit_rtt(&pts).unwrap();
        assert!(fit.r_squared < 1.0 && fit.r_squared > 0.95, "{fit:?}");
        assert!((fit.k - 2.0).abs() < 0.2, "{fit:?}");
        // R^2 by its definition, computed independently.
        let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
        let ss_tot: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
        let ss_res: f64 = pts
            .iter()
            .map(|p| (p.1 - fit.t_request_ms(p.0)).powi(2))
            .sum();
        assert!(close(fit.r_squared, 1.0 - ss_res / ss_tot, 1e-12));
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(fit_rtt(&[]), Err(FitError::TooFewPoints { got: 0 }));
        assert_eq!(
            fit_rtt(&[(1.0, 2.0)]),
            Err(FitError::TooFewPoints { got: 1 })
        );
        assert_eq!(
            fit_rtt(&[(1.0, 2.0), (1.0, 3.0), (1.0, 2.5)]),
            Err(FitError::OneRtt {
                points: 3,
                rtt_ms: 1.0
            })
        );
        assert!(matches!(
            fit_rtt(&[(0.0, 1.0), (f64::NAN, 2.0)]),
            Err(FitError::BadPoint { index: 2, t_request_ms, .. }) if t_request_ms == 2.0
        ));
        assert!(matches!(
            fit_rtt(&[(0.0, 1.0), (-1.0, 2.0)]),
            Err(FitError::BadPoint { index: 2, .. })
        ));
        // Flat: k = 0, perfect fit, no halving.
        let flat = fit_rtt(&[(0.0, 3.0), (1.0, 3.0), (2.0, 3.0)]).unwrap();
        assert_eq!(flat.k, 0.0);
        assert_eq!(flat.r_squared, 1.0);
        assert_eq!(
            flat.halving_rtt_ms(),
            Err(NoHalving::NonPositiveSlope { k: 0.0 })
        );
        // Falling request time: k < 0.
        let falling = fit_rtt(&[(0.0, 3.0), (1.0, 2.0)]).unwrap();
        assert!(matches!(
            falling.halving_rtt_ms(),
            Err(NoHalving::NonPositiveSlope { .. })
        ));
        // Negative intercept.
        let neg = fit_rtt(&[(1.0, 0.5), (2.0, 2.5)]).unwrap();
        assert!(close(neg.t_service_ms, -1.5, 1e-12));
        assert!(matches!(
            neg.halving_rtt_ms(),
            Err(NoHalving::NonPositiveIntercept { .. })
        ));
        let json = serde_json::to_value(neg).unwrap();
        assert_eq!(json["halving_rtt_ms"], serde_json::Value::Null);
        assert!(
            json["no_halving_reason"]
                .as_str()
                .unwrap()
                .contains("t_service")
        );
    }

    /// docs/experiments.md R1 (TDengine, 16 threads, 10 rows per request): per-request time grows by
    /// about 1.5-1.7 x RTT.
    #[test]
    fn reference_r1() {
        let r1 = [
            (0.034, 199_141.88),
            (0.254, 155_809.98),
            (0.466, 122_463.81),
            (0.878, 81_191.54),
            (1.088, 67_626.02),
            (1.286, 58_693.38),
            (2.101, 37_096.76),
        ];
        let delays = ["0ms", "0.2ms", "0.4ms", "0.8ms", "1ms", "1.2ms", "2ms"];
        let grid = Grid::new(vec![(
            "delay",
            delays
                .iter()
                .map(|&d| SweepValue::from(d))
                .collect::<Vec<_>>(),
        )])
        .unwrap();
        let mut table = SweepTable::new(&grid);
        for (p, (rtt, rate)) in grid.points().into_iter().zip(r1) {
            table.push(r1_row(p, rtt, rate)).unwrap();
        }
        let groups = table.fit_groups(DEFAULT_RTT_KEYS, TRequestSource::ClosedLoop);
        assert_eq!(groups.len(), 1);
        assert!(groups[0].fixed.values().is_empty());
        let fit = groups[0].fit.clone().unwrap();
        assert_eq!(fit.points, 7);
        assert!(fit.k > 1.5 && fit.k < 1.8, "{fit}");
        // The measured request time at 0.034 ms is 0.80 ms; the points curve upwards a
        // little, so the straight line's intercept lies below that.
        assert!(fit.t_service_ms > 0.5 && fit.t_service_ms < 0.7, "{fit}");
        assert!(fit.r_squared > 0.99 && fit.r_squared < 1.0, "{fit}");
        // Half the intercept's rate (160 rows / t_service) at t_service / k.
        let h = fit.halving_rtt_ms().unwrap();
        assert!(h > 0.25 && h < 0.45, "{fit}");
        assert!((fit.relative_rate(h) - 0.5).abs() < 1e-12);
        let line = groups[0].to_string();
        assert!(line.starts_with("fit: t_request = "), "{line}");
        assert!(line.contains("throughput halves at RTT"), "{line}");
    }

    pub(crate) fn r1_row(point: Point, rtt: f64, rows_per_s: f64) -> SweepRow {
        SweepRow {
            point,
            rtt: Some(RttStats {
                method: "icmp".into(),
                median_ms: rtt,
                min_ms: None,
                avg_ms: None,
                max_ms: None,
            }),
            rates: Rates::Writes {
                rows_per_s,
                metrics_per_s: rows_per_s * 11.0,
                requests_per_s: rows_per_s / 10.0,
            },
            latency_mean_ms: 0.0,
            latency_p50_ms: 0.0,
            latency_p99_ms: 0.0,
            service_mean_ms: 160.0 / rows_per_s * 1000.0,
            errors: 0,
            client_cpu_s: 0.0,
            server_cpu_s: None,
            bytes_per_metric: None,
            workers: 16,
            batch: 10,
            in_flight: 1,
            stop_reason: "row limit".parse().ok(),
            verdict: crate::Verdict::passed(None),
        }
    }

    #[test]
    fn t_request_sources() {
        let p = Point::default();
        let mut r = r1_row(p, 1.0, 16_000.0);
        // 16 slots, 1,600 requests/s -> 10 ms per request per slot.
        assert_eq!(r.t_request_ms(TRequestSource::ClosedLoop), Some(10.0));
        r.in_flight = 2;
        assert_eq!(r.t_request_ms(TRequestSource::ClosedLoop), Some(20.0));
        r.service_mean_ms = 7.5;
        assert_eq!(r.t_request_ms(TRequestSource::ServiceMean), Some(7.5));
        r.rates = Rates::Writes {
            rows_per_s: 0.0,
            metrics_per_s: 0.0,
            requests_per_s: 0.0,
        };
        assert_eq!(r.t_request_ms(TRequestSource::ClosedLoop), None);
        r.service_mean_ms = 0.0;
        assert_eq!(r.t_request_ms(TRequestSource::ServiceMean), None);
    }

    #[test]
    fn groups_by_the_other_keys() {
        let grid = Grid::new(vec![
            ("workers", vec![SweepValue::Int(1), SweepValue::Int(16)]),
            (
                "delay",
                vec![
                    SweepValue::from("0ms"),
                    SweepValue::from("1ms"),
                    SweepValue::from("2ms"),
                ],
            ),
        ])
        .unwrap();
        let mut table = SweepTable::new(&grid);
        for p in grid.points() {
            let w = p.get("workers").and_then(SweepValue::as_f64).unwrap();
            let rtt = p.get("delay").and_then(SweepValue::as_ms).unwrap() + 0.05;
            // k = 2 for 1 worker, k = 3 for 16 workers; t_service 1 ms.
            let k = if w == 1.0 { 2.0 } else { 3.0 };
            let t = 1.0 + k * rtt;
            let mut row = r1_row(p, rtt, 0.0);
            row.workers = w as u64;
            row.rates = Rates::Writes {
                rows_per_s: 0.0,
                metrics_per_s: 0.0,
                requests_per_s: w * 1000.0 / t,
            };
            table.push(row).unwrap();
        }
        let groups = table.fit_groups(DEFAULT_RTT_KEYS, TRequestSource::ClosedLoop);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].fixed.label(), "workers=1");
        assert_eq!(groups[1].fixed.label(), "workers=16");
        let k0 = groups[0].fit.as_ref().unwrap().k;
        let k1 = groups[1].fit.as_ref().unwrap().k;
        assert!(close(k0, 2.0, 1e-9) && close(k1, 3.0, 1e-9), "{k0} {k1}");
        let json = serde_json::to_value(&groups[1]).unwrap();
        assert_eq!(json["fixed"], serde_json::json!({"workers": 16}));
        assert!(close(json["fit"]["k"].as_f64().unwrap(), 3.0, 1e-9));
        assert_eq!(json["error"], serde_json::Value::Null);
        // No RTT key swept: nothing to fit.
        assert!(
            table
                .fit_groups(&["jitter"], TRequestSource::ClosedLoop)
                .is_empty()
        );
    }

    #[test]
    fn group_without_rtt_reports_why() {
        let grid = Grid::new(vec![("delay", vec![SweepValue::from("0ms")])]).unwrap();
        let mut table = SweepTable::new(&grid);
        let mut row = r1_row(grid.points().remove(0), 0.1, 1000.0);
        row.rtt = None;
        table.push(row).unwrap();
        let groups = table.fit_groups(DEFAULT_RTT_KEYS, TRequestSource::ClosedLoop);
        assert_eq!(groups[0].fit, Err(FitError::TooFewPoints { got: 0 }));
        assert!(groups[0].to_string().contains("none: too few points"));
    }

    /// A sweep whose delay=2ms point stored nothing: before, its figures were fitted like
    /// the others (and every table showed them as a rate).
    #[test]
    fn a_point_that_is_no_measure_is_left_out_of_the_fit_and_said() {
        let delays = ["0ms", "1ms", "2ms", "3ms"];
        let grid = Grid::new(vec![(
            "delay",
            delays
                .iter()
                .map(|d| SweepValue::from(*d))
                .collect::<Vec<_>>(),
        )])
        .unwrap();
        let mut table = SweepTable::new(&grid);
        for (i, p) in grid.points().into_iter().enumerate() {
            let rtt = i as f64;
            // t_request = 1 + 2 x RTT for 16 workers (ms); the failed point reads 20x faster.
            let mut requests_per_s = 16.0 * 1000.0 / (1.0 + 2.0 * rtt);
            let mut row = r1_row(p, rtt, 0.0);
            if i == 2 {
                requests_per_s *= 20.0;
                row.verdict = crate::Verdict {
                    exit: 1,
                    stored: Some(0),
                    flaw: Some(crate::Flaw {
                        kind: crate::FlawKind::Shortfall,
                        why: "the server stored 0 new samples of the 1080000 it acknowledged"
                            .into(),
                    }),
                };
            }
            row.rates = Rates::Writes {
                rows_per_s: 0.0,
                metrics_per_s: 0.0,
                requests_per_s,
            };
            table.push(row).unwrap();
        }
        let groups = table.fit_groups(DEFAULT_RTT_KEYS, TRequestSource::ClosedLoop);
        let fit = groups[0].fit.as_ref().unwrap();
        assert_eq!(fit.points, 3);
        assert!(
            close(fit.k, 2.0, 1e-9) && close(fit.t_service_ms, 1.0, 1e-9),
            "{fit}"
        );
        assert_eq!(groups[0].left_out, 1);
        assert_eq!(groups[0].caution(), None);
        let line = groups[0].to_string();
        assert!(
            line.contains("1 of its points left out: no measure"),
            "{line}"
        );
        let json = serde_json::to_value(&groups[0]).unwrap();
        assert_eq!(json["left_out"], 1);
        assert_eq!(json["caution"], serde_json::Value::Null);
        let text = table.render_text();
        assert!(
            text.contains(
                "point 3 (delay=2ms) is no measure, left out of fits: shortfall (exit 1): the \
                 server stored 0 new samples"
            ),
            "{text}"
        );
        let shortfall_line = text.lines().nth(3).unwrap();
        assert!(shortfall_line.ends_with(" 1       0  shortfall"), "{text}");
    }

    /// R^2 0.22 was shown without a word; two points fit exactly whatever they are.
    #[test]
    fn a_fit_says_when_it_should_not_be_trusted() {
        let group = |points: &[(f64, f64)]| FitGroup {
            fixed: Point::default(),
            fit: fit_rtt(points),
            left_out: 0,
        };
        let scattered = group(&[(0.0, 5.0), (1.0, 1.0), (2.0, 6.0), (3.0, 2.0), (4.0, 7.0)]);
        let r2 = scattered.fit.as_ref().unwrap().r_squared;
        assert!(r2 < TRUSTED_R_SQUARED, "{r2}");
        let why = scattered.caution().expect("a caution");
        assert!(why.contains("is below 0.9"), "{why}");
        assert!(
            scattered
                .to_string()
                .contains("\n  do not trust this fit: R^2")
        );
        let json = serde_json::to_value(&scattered).unwrap();
        assert!(json["caution"].as_str().unwrap().contains("below 0.9"));
        let two = group(&[(0.0, 1.0), (1.0, 3.0)]);
        assert!(
            two.caution()
                .unwrap()
                .contains("2 points: a line through two points")
        );
        let good = group(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.01)]);
        assert_eq!(good.caution(), None);
        assert!(!good.to_string().contains("trust"));
    }
}
