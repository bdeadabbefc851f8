//! Reference answers: what a correct database returns for a query spec over TSBS
//! `cpu-only` data, computed from the generator's own rows (tsload-workload's
//! [`CpuOnly`]), not through any query language. Integration tests compare servers'
//! answers with them.

use std::collections::BTreeMap;

use tsload_core::{Batch, ColumnValues, Workload};
use tsload_workload::{CpuOnly, TsbsConfig};

use crate::QueryError;
use crate::spec::QuerySpec;
use crate::types::{CPU_METRICS, GROUPBY_ORDERBY_LIMIT_ROWS, HIGH_CPU_THRESHOLD, QueryShape};

/// One row of a reference answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceRow {
    /// The bucket's start (`floor(ts / bucket) * bucket`, UTC minutes or hours) for the
    /// grouped types; the row's timestamp for high-cpu and lastpoint. ns since the epoch.
    pub time_ns: i64,
    /// The host (`host_N`) of per-host rows (double-groupby, high-cpu, lastpoint); `None`
    /// where the query aggregates its hosts together.
    pub host: Option<u32>,
    /// One value per metric of the type ([`crate::QueryType::metrics`], in that order):
    /// the max (single-groupby, cpu-max-all, groupby-orderby-limit), the mean
    /// (double-groupby), or the row's values (high-cpu, lastpoint: all 10 fields).
    pub values: Vec<f64>,
}

/// The answer to `spec` over the `cpu-only` data set `data` (same seed, scale, time range
/// and interval as the loaded data). Rows come in the order the query asks for:
/// by time (single-groupby, cpu-max-all), by time then host number (double-groupby,
/// high-cpu; SQL orders host names as text, so compare sorted), newest bucket first
/// (groupby-orderby-limit, at most 5), by host number (lastpoint).
///
/// Empty buckets do not appear (InfluxQL returns them as nulls: there are none while every
/// host has a row every interval of the data).
pub fn reference_answer(
    data: &TsbsConfig,
    spec: &QuerySpec,
) -> Result<Vec<ReferenceRow>, QueryError> {
    spec.check()?;
    let t = spec.query_type;
    if let Some(h) = spec.hosts.iter().find(|h| **h >= data.scale) {
        return Err(QueryError::BadSpec {
            query_type: t,
            message: format!("host_{h} is not in the data (scale {})", data.scale),
        });
    }
    let workload = CpuOnly::new(*data).map_err(|e| QueryError::config(e.key, e.message))?;
    let table = &workload.schema().tables[0];
    // Column of each of the ten fields, by name.
    let mut columns = [0usize; 10];
    for (i, m) in CPU_METRICS.iter().enumerate() {
        columns[i] = table
            .fields
            .iter()
            .position(|f| f.name == *m)
            .ok_or_else(|| QueryError::config("workload", format!("cpu has no field {m}")))?;
    }
    let metrics = t.metrics().len();
    let (start, end) = spec
        .window
        .map_or((i64::MIN, i64::MAX), |w| (w.start_ns, w.end_ns));
    let bucket = t.bucket_ns().unwrap_or(1);
    let hosts: Vec<u32> = if spec.hosts.is_empty() {
        (0..data.scale).collect()
    } else {
        spec.hosts.clone()
    };

    let mut acc = Answer {
        shape: t.shape(),
        start,
        end,
        bucket,
        metrics,
        max: BTreeMap::new(),
        mean: BTreeMap::new(),
        rows: Vec::new(),
    };
    let mut batch = Batch::for_schema(workload.schema());
    let mut values = [0f64; 10];
    for &host in &hosts {
        let mut last: Option<ReferenceRow> = None;
        // Worker `host` of `scale` has exactly device `host`.
        let mut source = workload.source(host as usize, data.scale as usize);
        loop {
            batch.clear();
            if source.fill(&mut batch, 10_000) == 0 {
                break;
            }
            let tb = &batch.tables[0];
            for row in 0..tb.rows() {
                let ts = tb.ts[row];
                for (v, c) in values.iter_mut().zip(columns) {
                    *v = match &tb.columns[c].values {
                        ColumnValues::Int(col) => col[row] as f64,
                        ColumnValues::Float(col) => col[row],
                        _ => f64::NAN,
                    };
                }
                acc.add(host, ts, &values, &mut last);
            }
        }
        acc.rows.extend(last);
    }

    Ok(acc.rows())
}

/// A reference answer as the rows go by: the buckets' maxima, the (bucket, host) means,
/// or the rows themselves, by the query's shape.
struct Answer {
    shape: QueryShape,
    start: i64,
    end: i64,
    bucket: i64,
    metrics: usize,
    max: BTreeMap<i64, Vec<f64>>,
    mean: BTreeMap<(i64, u32), (Vec<f64>, u64)>,
    rows: Vec<ReferenceRow>,
}

impl Answer {
    /// Takes `host`'s row at `ts` (`last`: the host's latest row, for lastpoint).
    fn add(&mut self, host: u32, ts: i64, values: &[f64; 10], last: &mut Option<ReferenceRow>) {
        match self.shape {
            QueryShape::MaxPerBucket | QueryShape::LastBucketsBeforeEnd => {
                let inside = if self.shape == QueryShape::MaxPerBucket {
                    ts >= self.start && ts < self.end
                } else {
                    ts < self.end
                };
                if inside {
                    let b = ts - ts.rem_euclid(self.bucket);
                    let m = self
                        .max
                        .entry(b)
                        .or_insert_with(|| vec![f64::MIN; self.metrics]);
                    for (m, v) in m.iter_mut().zip(values) {
                        *m = m.max(*v);
                    }
                }
            }
            QueryShape::MeanPerBucketAndHost => {
                if ts >= self.start && ts < self.end {
                    let b = ts - ts.rem_euclid(self.bucket);
                    let (sum, n) = self
                        .mean
                        .entry((b, host))
                        .or_insert_with(|| (vec![0.0; self.metrics], 0));
                    for (s, v) in sum.iter_mut().zip(values) {
                        *s += *v;
                    }
                    *n += 1;
                }
            }
            QueryShape::HighCpu => {
                if ts >= self.start && ts < self.end && values[0] > HIGH_CPU_THRESHOLD {
                    self.rows.push(ReferenceRow {
                        time_ns: ts,
                        host: Some(host),
                        values: values.to_vec(),
                    });
                }
            }
            QueryShape::LastPointPerHost => {
                if last.as_ref().is_none_or(|l| ts >= l.time_ns) {
                    *last = Some(ReferenceRow {
                        time_ns: ts,
                        host: Some(host),
                        values: values.to_vec(),
                    });
                }
            }
        }
    }

    /// The answer's rows, in the order the query returns them.
    fn rows(mut self) -> Vec<ReferenceRow> {
        match self.shape {
            QueryShape::MaxPerBucket => self
                .max
                .into_iter()
                .map(|(time_ns, values)| ReferenceRow {
                    time_ns,
                    host: None,
                    values,
                })
                .collect(),
            QueryShape::LastBucketsBeforeEnd => self
                .max
                .into_iter()
                .rev()
                .take(GROUPBY_ORDERBY_LIMIT_ROWS)
                .map(|(time_ns, values)| ReferenceRow {
                    time_ns,
                    host: None,
                    values,
                })
                .collect(),
            QueryShape::MeanPerBucketAndHost => self
                .mean
                .into_iter()
                .map(|((time_ns, host), (sum, n))| ReferenceRow {
                    time_ns,
                    host: Some(host),
                    values: sum.into_iter().map(|s| s / n as f64).collect(),
                })
                .collect(),
            QueryShape::HighCpu => {
                self.rows.sort_by_key(|r| (r.time_ns, r.host));
                self.rows
            }
            QueryShape::LastPointPerHost => self.rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SpecGenerator, TimeWindow};
    use crate::types::{HOUR_NS, MINUTE_NS, QueryType};

    const T0: i64 = 1_451_606_400_000_000_000;
    const S: i64 = 1_000_000_000;

    fn data(scale: u32, hours: i64) -> TsbsConfig {
        TsbsConfig {
            seed: 123,
            scale,
            start_ns: T0,
            end_ns: T0 + hours * HOUR_NS,
            interval_ns: 10 * S,
            churn: None,
            arrival: tsload_workload::Arrival::default(),
            pods: 1,
            wave: None,
        }
    }

    /// Every row of `host` as (ts, ten values).
    fn rows_of(d: &TsbsConfig, host: u32) -> Vec<(i64, Vec<f64>)> {
        let w = CpuOnly::new(*d).unwrap();
        let mut src = w.source(host as usize, d.scale as usize);
        let mut batch = Batch::for_schema(w.schema());
        let mut out = Vec::new();
        loop {
            batch.clear();
            if src.fill(&mut batch, 777) == 0 {
                return out;
            }
            let t = &batch.tables[0];
            for r in 0..t.rows() {
                assert_eq!(t.device[r], host);
                let v = t
                    .columns
                    .iter()
                    .map(|c| match &c.values {
                        ColumnValues::Int(v) => v[r] as f64,
                        _ => unreachable!(),
                    })
                    .collect();
                out.push((t.ts[r], v));
            }
        }
    }

    #[test]
    fn single_groupby_is_the_max_per_minute_of_the_hosts() {
        let d = data(3, 2);
        let spec = QuerySpec {
            query_type: QueryType::SingleGroupby_1_1_1,
            hosts: vec![2],
            window: Some(TimeWindow {
                start_ns: T0 + 125 * S,
                end_ns: T0 + 125 * S + HOUR_NS,
            }),
        };
        let got = reference_answer(&d, &spec).unwrap();
        // 00:02:05 .. 01:02:05: minutes 00:02 (partial) .. 01:02 (partial): 61 buckets.
        assert_eq!(got.len(), 61);
        assert_eq!(got[0].time_ns, T0 + 2 * MINUTE_NS);
        assert_eq!(got[60].time_ns, T0 + 62 * MINUTE_NS);
        let rows = rows_of(&d, 2);
        for r in &got {
            let expect = rows
                .iter()
                .filter(|(ts, _)| {
                    *ts >= r.time_ns.max(T0 + 125 * S)
                        && *ts < (r.time_ns + MINUTE_NS).min(T0 + 125 * S + HOUR_NS)
                })
                .map(|(_, v)| v[0])
                .fold(f64::MIN, f64::max);
            assert_eq!(r.values, vec![expect]);
            assert_eq!(r.host, None);
        }
        // The first bucket holds 00:02:10 .. 00:02:50 only.
        let first = rows[13..18]
            .iter()
            .map(|(_, v)| v[0])
            .fold(f64::MIN, f64::max);
        assert_eq!(rows[13].0, T0 + 130 * S);
        assert_eq!(got[0].values[0], first);
    }

    #[test]
    fn cpu_max_all_covers_every_field_of_several_hosts() {
        let d = data(8, 9);
        let g = SpecGenerator::new(5, 8, d.start_ns, d.end_ns).unwrap();
        let spec = g.spec(0, QueryType::CpuMaxAll_8).unwrap();
        let got = reference_answer(&d, &spec).unwrap();
        let w = spec.window.unwrap();
        let all: Vec<Vec<(i64, Vec<f64>)>> = (0..8).map(|h| rows_of(&d, h)).collect();
        assert_eq!(
            got.len() as i64,
            (w.end_ns - 1) / HOUR_NS - w.start_ns / HOUR_NS + 1
        );
        for r in &got {
            assert_eq!(r.values.len(), 10);
            for (f, v) in r.values.iter().enumerate() {
                let expect = all
                    .iter()
                    .flatten()
                    .filter(|(ts, _)| {
                        *ts >= w.start_ns
                            && *ts < w.end_ns
                            && *ts >= r.time_ns
                            && *ts < r.time_ns + HOUR_NS
                    })
                    .map(|(_, v)| v[f])
                    .fold(f64::MIN, f64::max);
                assert_eq!(*v, expect, "field {f} at {}", r.time_ns);
            }
        }
    }

    #[test]
    fn the_other_shapes() {
        let d = data(4, 13);
        let g = SpecGenerator::new(9, 4, d.start_ns, d.end_ns).unwrap();
        let all: Vec<Vec<(i64, Vec<f64>)>> = (0..4).map(|h| rows_of(&d, h)).collect();

        let spec = g.spec(1, QueryType::DoubleGroupby_5).unwrap();
        let w = spec.window.unwrap();
        let got = reference_answer(&d, &spec).unwrap();
        assert_eq!(got.len(), 13 * 4, "an off-hour 12h window touches 13 hours");
        let r = &got[7];
        let h = r.host.unwrap() as usize;
        let inside: Vec<&Vec<f64>> = all[h]
            .iter()
            .filter(|(ts, _)| {
                *ts >= w.start_ns.max(r.time_ns) && *ts < w.end_ns.min(r.time_ns + HOUR_NS)
            })
            .map(|(_, v)| v)
            .collect();
        for f in 0..5 {
            let mean = inside.iter().map(|v| v[f]).sum::<f64>() / inside.len() as f64;
            assert!((r.values[f] - mean).abs() < 1e-9);
        }

        let spec = g.spec(2, QueryType::HighCpu_All).unwrap();
        let w = spec.window.unwrap();
        let got = reference_answer(&d, &spec).unwrap();
        let expect = all
            .iter()
            .flatten()
            .filter(|(ts, v)| *ts >= w.start_ns && *ts < w.end_ns && v[0] > 90.0)
            .count();
        assert_eq!(got.len(), expect);
        assert!(
            got.windows(2)
                .all(|p| (p[0].time_ns, p[0].host) < (p[1].time_ns, p[1].host))
        );

        let spec = g.spec(3, QueryType::GroupbyOrderbyLimit).unwrap();
        let end = spec.window.unwrap().end_ns;
        let got = reference_answer(&d, &spec).unwrap();
        assert_eq!(got.len(), 5);
        let newest = (end - 1) - (end - 1).rem_euclid(MINUTE_NS);
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.time_ns, newest - i as i64 * MINUTE_NS);
        }

        let spec = g.spec(4, QueryType::Lastpoint).unwrap();
        let got = reference_answer(&d, &spec).unwrap();
        assert_eq!(got.len(), 4);
        for (h, r) in got.iter().enumerate() {
            assert_eq!(r.host, Some(h as u32));
            let (ts, v) = all[h].last().unwrap();
            assert_eq!((r.time_ns, &r.values), (*ts, v));
        }
    }

    #[test]
    fn hosts_outside_the_data_are_errors() {
        let d = data(2, 2);
        let spec = QuerySpec {
            query_type: QueryType::CpuMaxAll_1,
            hosts: vec![2],
            window: Some(TimeWindow {
                start_ns: T0,
                end_ns: T0 + 8 * HOUR_NS,
            }),
        };
        let e = reference_answer(&d, &spec).unwrap_err();
        assert!(e.to_string().contains("host_2 is not in the data"), "{e}");
    }
}
