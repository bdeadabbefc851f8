//! `[workload]`: the data set a scenario writes (TSBS kinds, taosBenchmark's custom
//! super table, or a line-protocol file) and the checks on its keys.

use std::time::Duration;

use toml::Spanned;
use tsload_core::schema::DataType;
use tsload_workload::{
    Arrival, Churn, ColumnSpec, CustomConfig, DEFAULT_PERIOD_NS, IOT_ARRIVAL, IotOptions, Shape,
    TsbsConfig, Wave,
};

use super::sections::{ColumnEntry, LoadSection, WORKLOAD, WORKLOAD_KINDS, WorkloadSection};
use super::{Ctx, DEFAULT_STRING_LEN, ScenarioError};
use crate::plan::{TimeMode, WorkloadPlan};
use tsload_core::engine::{LoadConfig, LoadMode};

/// The column types `columns` and `tags` take (taosBenchmark's names, any case).
pub(super) const COLUMN_TYPES: &[&str] = &[
    "bool",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "varchar",
    "binary",
    "nchar",
    "timestamp",
];

impl Ctx<'_> {
    pub(super) fn workload(&self, w: &WorkloadSection) -> Result<WorkloadPlan, ScenarioError> {
        let kind = self.given_or_documented(&w.kind, "workload.kind")?;
        let kind = self.choice(&kind, "workload.kind", WORKLOAD_KINDS)?;
        self.check_kind_keys(
            &WORKLOAD,
            kind,
            &format!("workload kind \"{kind}\""),
            w.present(),
        )?;
        let seed = self.int_or_default(&w.seed, "workload.seed", 0, i64::MAX)? as u64;
        if kind == "custom" {
            return self.custom(w, seed);
        }
        if kind == "file" {
            return self.file(w);
        }
        let scale = self.int_or_default(&w.scale, "workload.scale", 1, u32::MAX as i64)? as u32;
        let start_ns = self.time_ns_or_default(&w.start, "workload.start")?;
        let end_ns = match &w.end {
            None => start_ns.checked_add(86_400_000_000_000).ok_or_else(|| {
                self.error(
                    w.start.as_ref().map(|e| e.span()).as_ref(),
                    "workload.start",
                    "is less than a day before 2262-04-11, the last instant a 64-bit \
                     nanosecond timestamp holds; set workload.end too"
                        .into(),
                )
            })?,
            Some(s) => self.time_ns(s, "workload.end")?,
        };
        if end_ns <= start_ns {
            return Err(self.error(
                w.end.as_ref().map(|e| e.span()).as_ref(),
                "workload.end",
                "must be later than workload.start".into(),
            ));
        }
        let interval_ns = self.duration_ns_or_default(
            &w.interval,
            "workload.interval",
            Duration::from_millis(1),
        )?;
        let churn = self.churn(w)?;
        let default_late = if kind == "iot" {
            IOT_ARRIVAL.out_of_order_ratio
        } else {
            0.0
        };
        let tsbs = TsbsConfig {
            seed,
            scale,
            start_ns,
            end_ns,
            interval_ns,
            churn,
            arrival: self.arrival(w, default_late)?,
            pods: self.int_or_default(&w.pods_per_host, "workload.pods_per_host", 1, 1_000_000)?
                as u32,
            wave: self.wave(w)?,
        };
        Ok(match kind {
            "cpu-only" => WorkloadPlan::CpuOnly(tsbs),
            "devops" => WorkloadPlan::Devops(tsbs),
            _ => WorkloadPlan::Iot(
                tsbs,
                IotOptions {
                    missing_field_ratio: self.ratio_or_default(
                        &w.missing_field_ratio,
                        "workload.missing_field_ratio",
                        1.0,
                    )?,
                    missing_row_ratio: self.ratio_or_default(
                        &w.missing_row_ratio,
                        "workload.missing_row_ratio",
                        1.0,
                    )?,
                },
            ),
        })
    }

    /// A line-protocol file replayed (`kind = "file"`): its path and its time precision.
    fn file(&self, w: &WorkloadSection) -> Result<WorkloadPlan, ScenarioError> {
        let Some(path) = &w.path else {
            return Err(self.error(
                w.kind.as_ref().map(|k| k.span()).as_ref(),
                "workload.path",
                "workload kind \"file\" needs `path`: a line-protocol file (.gz ok), or \"-\" for standard input".into(),
            ));
        };
        if path.get_ref().trim().is_empty() {
            return Err(self.error(
                Some(&path.span()),
                "workload.path",
                "must not be empty".into(),
            ));
        }
        let precision = self.given_or_documented(&w.precision, "workload.precision")?;
        let precision = self
            .choice(&precision, "workload.precision", &["ns", "us", "ms", "s"])?
            .to_string();
        Ok(WorkloadPlan::File {
            path: path.get_ref().clone(),
            precision,
        })
    }

    /// cpu-only's `shape`, `shape_period` and `shape_noise` (`None`: TSBS's walk).
    fn wave(&self, w: &WorkloadSection) -> Result<Option<Wave>, ScenarioError> {
        let names: Vec<&str> = std::iter::once("walk")
            .chain(Shape::NAMES.iter().copied().filter(|n| *n != "random"))
            .collect();
        let shape = self.given_or_documented(&w.shape, "workload.shape")?;
        let shape = match self.choice(&shape, "workload.shape", &names)? {
            "walk" => return Ok(None),
            name => Shape::from_name(name).unwrap_or_default(),
        };
        let period_ns = self.duration_ns_or_default(
            &w.shape_period,
            "workload.shape_period",
            Duration::from_millis(1),
        )?;
        let noise = self.ratio_or_default(&w.shape_noise, "workload.shape_noise", 1.0)?;
        Ok(Some(Wave {
            shape,
            period_ns,
            noise,
        }))
    }

    /// `churn_ratio` per `churn_interval`.
    fn churn(&self, w: &WorkloadSection) -> Result<Option<Churn>, ScenarioError> {
        let churn_interval_ns = self.duration_ns_or_default(
            &w.churn_interval,
            "workload.churn_interval",
            Duration::from_millis(1),
        )?;
        let ratio = self.ratio_or_default(&w.churn_ratio, "workload.churn_ratio", 1.0)?;
        // churn_interval alone is the period of no churn: the stated default, a no-op.
        Ok((ratio != 0.0).then(|| Churn::of_ratio(ratio, churn_interval_ns)))
    }

    /// `out_of_order_ratio`, `out_of_order_max_steps` and `duplicate_ratio`.
    fn arrival(&self, w: &WorkloadSection, default_late: f64) -> Result<Arrival, ScenarioError> {
        Ok(Arrival {
            out_of_order_ratio: self
                .opt_ratio(&w.out_of_order_ratio, "workload.out_of_order_ratio", 1.0)?
                .unwrap_or(default_late),
            out_of_order_max_steps: self.int_or_default(
                &w.out_of_order_max_steps,
                "workload.out_of_order_max_steps",
                1,
                1_000_000,
            )? as u32,
            duplicate_ratio: self.ratio_or_default(
                &w.duplicate_ratio,
                "workload.duplicate_ratio",
                1.0,
            )?,
        })
    }

    fn custom(&self, w: &WorkloadSection, seed: u64) -> Result<WorkloadPlan, ScenarioError> {
        let d = CustomConfig::default();
        let (columns, column_lines) = match &w.columns {
            None => (d.columns, Vec::new()),
            Some(c) => self.column_list(c, "workload.columns", 4096)?,
        };
        let (tags, tag_lines) = match &w.tags {
            None => (d.tags, Vec::new()),
            Some(c) => self.column_list(c, "workload.tags", 128)?,
        };
        let cfg = CustomConfig {
            seed,
            stable: self.text_or_default(&w.stable, "workload.stable")?,
            childtable_count: self.int_or_default(
                &w.childtable_count,
                "workload.childtable_count",
                1,
                u32::MAX as i64,
            )? as u32,
            childtable_prefix: self
                .text_or_default(&w.childtable_prefix, "workload.childtable_prefix")?,
            insert_rows: self.int_or_default(&w.insert_rows, "workload.insert_rows", 1, i64::MAX)?
                as u64,
            timestamp_step_ns: self.duration_ns_or_default(
                &w.timestamp_step,
                "workload.timestamp_step",
                Duration::from_nanos(1),
            )?,
            start_timestamp_ns: self
                .time_ns_or_default(&w.start_timestamp, "workload.start_timestamp")?,
            interlace_rows: self.int_or_default(
                &w.interlace_rows,
                "workload.interlace_rows",
                0,
                u32::MAX as i64,
            )? as u32,
            disorder_ratio: self.ratio_or_default(
                &w.disorder_ratio,
                "workload.disorder_ratio",
                100.0,
            )?,
            disorder_range_ns: self.duration_ns_or_default(
                &w.disorder_range,
                "workload.disorder_range",
                Duration::ZERO,
            )?,
            arrival: self.arrival(w, 0.0)?,
            churn: self.churn(w)?,
            columns,
            tags,
        };
        Ok(WorkloadPlan::Custom {
            cfg,
            column_lines,
            tag_lines,
        })
    }

    fn column_list(
        &self,
        list: &Spanned<Vec<Spanned<ColumnEntry>>>,
        key: &str,
        max_count: i64,
    ) -> Result<(Vec<ColumnSpec>, Vec<usize>), ScenarioError> {
        if list.get_ref().is_empty() {
            return Err(self.error(
                Some(&list.span()),
                key,
                "must list at least one column".into(),
            ));
        }
        let mut out = Vec::new();
        let mut lines = Vec::new();
        for (i, entry) in list.get_ref().iter().enumerate() {
            let k = format!("{key}[{i}]");
            out.push(self.column(entry, &k, max_count)?);
            lines.push(self.line_of(&entry.span()));
        }
        Ok((out, lines))
    }

    /// One column of a list (`k` names it: `workload.columns[2]`), its type, length, count,
    /// range, values and shape checked.
    fn column(
        &self,
        entry: &Spanned<ColumnEntry>,
        k: &str,
        max_count: i64,
    ) -> Result<ColumnSpec, ScenarioError> {
        let span = entry.span();
        let e = entry.get_ref();
        let ty = e.data_type.to_ascii_lowercase();
        if !COLUMN_TYPES.contains(&ty.as_str()) {
            return Err(self.error(
                Some(&span),
                &format!("{k}.type"),
                format!(
                    "\"{}\" is not a column type; allowed: {}",
                    e.data_type,
                    COLUMN_TYPES.join(", ")
                ),
            ));
        }
        let is_str = matches!(ty.as_str(), "varchar" | "binary" | "nchar");
        if let Some(len) = e.len
            && (!is_str || !(1..=65_517).contains(&len))
        {
            let message = if is_str {
                format!("len {len} is out of range; allowed: 1 to 65517")
            } else {
                format!("len is only allowed for varchar, binary and nchar, not {ty}")
            };
            return Err(self.error(Some(&span), &format!("{k}.len"), message));
        }
        let count = e.count.unwrap_or(1);
        if !(1..=max_count).contains(&count) {
            return Err(self.error(
                Some(&span),
                &format!("{k}.count"),
                format!("value {count} is out of range; allowed: 1 to {max_count}"),
            ));
        }
        if let (Some(lo), Some(hi)) = (e.min, e.max)
            && lo > hi
        {
            return Err(self.error(
                Some(&span),
                &format!("{k}.min"),
                format!("min {lo} is greater than max {hi}"),
            ));
        }
        if let Some(values) = &e.values
            && values.is_empty()
        {
            return Err(self.error(
                Some(&span),
                &format!("{k}.values"),
                "must list at least one value".into(),
            ));
        }
        let shape = match &e.shape {
            None => Shape::Random,
            Some(name) => Shape::from_name(name).ok_or_else(|| {
                self.error(
                    Some(&span),
                    &format!("{k}.shape"),
                    format!(
                        "\"{name}\" is not a shape; allowed: {}",
                        Shape::NAMES.join(", ")
                    ),
                )
            })?,
        };
        let period_ns = match &e.period {
            None => DEFAULT_PERIOD_NS,
            Some(text) => humantime::parse_duration(text)
                .ok()
                .and_then(|d| i64::try_from(d.as_nanos()).ok())
                .filter(|ns| *ns > 0)
                .ok_or_else(|| {
                    self.error(
                        Some(&span),
                        &format!("{k}.period"),
                        format!("\"{text}\" is not a positive duration (e.g. \"10m\", \"1h\")"),
                    )
                })?,
        };
        let len = e.len.map_or(DEFAULT_STRING_LEN, |l| l as u32);
        let data_type = data_type_of(&ty, len);
        Ok(ColumnSpec {
            data_type,
            count: count as u32,
            min: e.min,
            max: e.max,
            values: e.values.clone(),
            shape,
            period_ns,
            noise: e.noise.unwrap_or(0.0),
        })
    }
}

impl Ctx<'_> {
    /// `workload.time`. `history` (the default) leaves the plan as it is. `live` stamps
    /// rows with the clock: the span starts now, less one batch's period, and the load
    /// is open loop at the fleet's rate (`scale / interval` readings per second, a row per
    /// table each, less iot's
    /// missing rows), so each batch is sent once the time of its last row has come and
    /// none lies in the future. `load.rate` instead sets the interval. A batch holds at
    /// most one reading of each of its worker's devices (`load.batch` may ask for fewer),
    /// so a row is at most about one interval old when it leaves. The run ends by
    /// `load.duration` or `load.rows`; the span covers either. `workload.start` and
    /// `workload.end` are refused beside it, unless the file gives them and `--set` the
    /// live time.
    pub(super) fn live_time(
        &self,
        w: &WorkloadSection,
        l: &LoadSection,
        workload: &mut WorkloadPlan,
        load: &mut LoadConfig,
    ) -> Result<TimeMode, ScenarioError> {
        let Some(time) = &w.time else {
            return Ok(TimeMode::History);
        };
        if self.choice(time, "workload.time", &["history", "live"])? == "history" {
            return Ok(TimeMode::History);
        }
        self.check_live_keys(w)?;
        let Some(fleet) = Fleet::of(workload, w) else {
            return Ok(TimeMode::History);
        };
        let (rate, interval_ns) = self.live_rate(l, load, &fleet)?;
        let readings = fleet.readings;
        // A batch holds at most one reading of each of its worker's devices: a larger one
        // would hold readings whose time has not come when it is due.
        let per_worker = (readings / load.workers as f64).ceil().max(1.0) as usize;
        load.batch = load.batch.min(per_worker);
        let period_ns = (load.batch * load.workers) as f64 / rate * 1e9;
        let span_ns = match (load.duration, load.rows) {
            (Some(d), _) => d.as_nanos() as f64 + period_ns,
            (None, Some(rows)) => rows as f64 / rate * 1e9 + period_ns,
            (None, None) => {
                return Err(self.error(
                    Some(&time.span()),
                    "workload.time",
                    "\"live\" sends rows as time passes: end the run with load.duration \
                     (e.g. \"5m\") or load.rows"
                        .into(),
                ));
            }
        };
        // The load is open loop by now.
        let start_ns = crate::plan::live_start_ns(load).unwrap_or_default();
        // One more reading per device past the span, so the run ends by its own limit.
        let span_ns = span_ns.ceil() as i64 + interval_ns;
        match workload {
            WorkloadPlan::CpuOnly(t) | WorkloadPlan::Devops(t) | WorkloadPlan::Iot(t, _) => {
                t.interval_ns = interval_ns;
                t.start_ns = start_ns;
                t.end_ns = start_ns + span_ns;
            }
            WorkloadPlan::Custom { cfg, .. } => {
                // Time-major: each table's next row in turn.
                cfg.interlace_rows = 1;
                cfg.timestamp_step_ns = interval_ns;
                cfg.start_timestamp_ns = start_ns;
                cfg.insert_rows = (span_ns as u64).div_ceil(interval_ns as u64);
            }
            WorkloadPlan::File { .. } => {}
        }
        Ok(TimeMode::Live)
    }

    /// The keys that place a live run's data themselves, refused: its span and its rows
    /// per table come from the clock and the load.
    fn check_live_keys(&self, w: &WorkloadSection) -> Result<(), ScenarioError> {
        // `--set workload.time=live` over a file that places its data (the quickstart
        // does) replaces the file's span; the same file, or a --set, giving both is a
        // contradiction.
        let by_set = |key: &str| self.overridden.iter().any(|k| k == key);
        let placed: [(&Option<Spanned<String>>, &str); 3] = [
            (&w.start, "workload.start"),
            (&w.end, "workload.end"),
            (&w.start_timestamp, "workload.start_timestamp"),
        ];
        for (v, key) in placed {
            if let Some(v) = v
                && (by_set(key) || !by_set("workload.time"))
            {
                return Err(self.error(
                    Some(&v.span()),
                    key,
                    format!(
                        "workload.time = \"live\" stamps each row with the clock as it is sent: \
                         remove {key} (end the run with load.duration or load.rows), or set \
                         workload.time = \"history\""
                    ),
                ));
            }
        }
        for (v, key) in [
            (&w.insert_rows, "workload.insert_rows"),
            (&w.interlace_rows, "workload.interlace_rows"),
        ] {
            if let Some(v) = v
                && !(key == "workload.interlace_rows" && *v.get_ref() == 1)
            {
                return Err(self.error(
                    Some(&v.span()),
                    key,
                    format!(
                        "workload.time = \"live\" sends each table's rows one at a time, in \
                         time, for load.duration or load.rows: remove {key}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A live run's rate and the time between a device's readings: the one set, the
    /// other from it (closed loop runs open at the fleet's rate); both set must agree.
    fn live_rate(
        &self,
        l: &LoadSection,
        load: &mut LoadConfig,
        fleet: &Fleet<'_>,
    ) -> Result<(f64, i64), ScenarioError> {
        let Fleet {
            devices,
            interval_ns,
            readings,
            interval_key,
            interval_set,
        } = *fleet;
        let fleet_rate = |interval_ns: i64| readings / (interval_ns as f64 / 1e9);
        Ok(match (load.mode, interval_set) {
            (LoadMode::Open { rate }, Some(interval)) => {
                let fleet = fleet_rate(interval_ns);
                if (rate - fleet).abs() > 0.01 * fleet {
                    return Err(self.error(
                        l.rate.as_ref().map(|r| r.span()).as_ref(),
                        "load.rate",
                        format!(
                            "{rate} rows/s disagrees with {interval_key} = \"{}\" in live \
                             time: {devices} devices every {} send {fleet:.3} rows/s; set only \
                             one of the two",
                            interval.get_ref(),
                            interval.get_ref()
                        ),
                    ));
                }
                (rate, interval_ns)
            }
            (LoadMode::Open { rate }, None) => {
                let interval_ns = (readings / rate * 1e9).round();
                if interval_ns < 1e6 {
                    return Err(self.error(
                        l.rate.as_ref().map(|r| r.span()).as_ref(),
                        "load.rate",
                        format!(
                            "{rate} rows/s is more than {devices} devices send at one reading \
                             per millisecond each (live time sets the interval from the rate): \
                             add devices"
                        ),
                    ));
                }
                (rate, interval_ns as i64)
            }
            (LoadMode::Closed, _) => {
                let rate = fleet_rate(interval_ns);
                load.mode = LoadMode::Open { rate };
                (rate, interval_ns)
            }
        })
    }
}

/// A live run's fleet: its devices, the time between a device's readings, and the rows
/// it sends per interval (its share of readings sent, and twice for duplicates); the key
/// that sets the interval, and its value if the scenario set it.
#[derive(Clone, Copy)]
struct Fleet<'w> {
    devices: u32,
    interval_ns: i64,
    readings: f64,
    interval_key: &'static str,
    interval_set: &'w Option<Spanned<String>>,
}

impl<'w> Fleet<'w> {
    /// The fleet of a generated workload; `None` for a file replay, which is not live.
    /// check_kind_keys let `time` through for the generated kinds alone. A fleet: its
    /// devices, the time between a device's readings, and the share of readings sent.
    /// `each`: the rows a device sends an interval, one per table (devops 9, iot 2 less
    /// its missing rows).
    fn of(workload: &WorkloadPlan, w: &'w WorkloadSection) -> Option<Fleet<'w>> {
        let (devices, interval_ns, each, twice, interval_key, interval_set) = match workload {
            WorkloadPlan::CpuOnly(t) => (
                t.scale,
                t.interval_ns,
                1.0,
                t.arrival.duplicate_ratio,
                "workload.interval",
                &w.interval,
            ),
            WorkloadPlan::Devops(t) => (
                t.scale,
                t.interval_ns,
                9.0,
                t.arrival.duplicate_ratio,
                "workload.interval",
                &w.interval,
            ),
            WorkloadPlan::Iot(t, o) => (
                t.scale,
                t.interval_ns,
                2.0 * (1.0 - o.missing_row_ratio),
                t.arrival.duplicate_ratio,
                "workload.interval",
                &w.interval,
            ),
            WorkloadPlan::Custom { cfg, .. } => (
                cfg.childtable_count,
                cfg.timestamp_step_ns,
                1.0,
                cfg.arrival.duplicate_ratio,
                "workload.timestamp_step",
                &w.timestamp_step,
            ),
            WorkloadPlan::File { .. } => return None,
        };
        // Rows sent twice are rows too: the rate counts them.
        Some(Fleet {
            devices,
            interval_ns,
            readings: f64::from(devices) * each * (1.0 + twice),
            interval_key,
            interval_set,
        })
    }
}

/// The column type a scenario's word names (checked against `COLUMN_TYPES` before), with
/// `len` for the string types.
fn data_type_of(ty: &str, len: u32) -> DataType {
    match ty {
        "bool" => DataType::Bool,
        "tinyint" => DataType::TinyInt,
        "smallint" => DataType::SmallInt,
        "int" => DataType::Int,
        "bigint" => DataType::BigInt,
        "float" => DataType::Float,
        "double" => DataType::Double,
        "nchar" => DataType::NChar(len),
        "timestamp" => DataType::Timestamp,
        _ => DataType::Varchar(len),
    }
}
