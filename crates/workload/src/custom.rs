//! taosBenchmark-style super tables: `childtable_count` child tables named
//! `childtable_prefix` + index, `insert_rows` rows each, `timestamp_step` apart from
//! `start_timestamp`, written `interlace_rows` rows of a table at a time, with optional
//! disorder, and columns and tags described as `{type, len, count, min, max, values}`.
//!
//! The child table's name is the first tag, `tbname` (TDengine's name for it), so that every
//! target can tell the child tables apart; the described tags follow as `t0`, `t1`, ...
//! and the columns are `c0`, `c1`, ...

use std::borrow::Cow;
use std::sync::Arc;

use rand_core::RngCore;
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef, TagSource, TagValue};
use tsload_core::workload::device_range;

use crate::shape::{DEFAULT_PERIOD_NS, Shape, gaussian};
use tsload_core::{Batch, BatchSource, ColumnValues, Workload};

use crate::Churn;
use crate::arrival::{Arrival, ArrivalSource, KindRows};
use crate::rng::{DeviceRng, below, chance, device_rng, hash, mix64, unit};
use crate::state::StateEstimate;
use crate::{ColumnList, WorkloadError};

/// One entry of `columns` or `tags`: `count` columns of one type.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    pub data_type: DataType,
    pub count: u32,
    /// Smallest value (numeric types); defaults to 0.
    pub min: Option<f64>,
    /// Largest value (numeric types); defaults to 100.
    pub max: Option<f64>,
    /// Values to pick from, as written in the scenario.
    pub values: Option<Vec<String>>,
    /// How the values move over time (numeric columns).
    pub shape: Shape,
    /// One cycle of a sine, square or sawtooth shape, ns.
    pub period_ns: i64,
    /// Gaussian noise on a shape: its standard deviation as a share of `max - min`.
    pub noise: f64,
}

impl ColumnSpec {
    pub fn new(data_type: DataType, count: u32) -> Self {
        ColumnSpec {
            data_type,
            count,
            min: None,
            max: None,
            values: None,
            shape: Shape::Random,
            period_ns: DEFAULT_PERIOD_NS,
            noise: 0.0,
        }
    }
}

/// A value parsed from a `values` list.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

/// Settings of a custom super table. The default reproduces docs/experiments.md R1's schema:
/// columns 1 varchar(10) + 10 float, tags 1 varchar(10), 10 s apart.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomConfig {
    pub seed: u64,
    pub stable: String,
    pub childtable_count: u32,
    pub childtable_prefix: String,
    /// Rows per child table.
    pub insert_rows: u64,
    pub timestamp_step_ns: i64,
    pub start_timestamp_ns: i64,
    /// Rows of one child table written before moving to the next; 0 = all of them.
    pub interlace_rows: u32,
    /// Percent (0..=100) of rows whose timestamp moves back.
    pub disorder_ratio: f64,
    /// How far back a disordered timestamp moves, at most, ns.
    pub disorder_range_ns: i64,
    /// Rows sent late or twice.
    pub arrival: Arrival,
    /// Series churn: each child table slot's table replaced by a new one (`<prefix><slot +
    /// generation * childtable_count>`, new tags) every lifetime of data time.
    pub churn: Option<Churn>,
    pub columns: Vec<ColumnSpec>,
    pub tags: Vec<ColumnSpec>,
}

impl Default for CustomConfig {
    fn default() -> Self {
        CustomConfig {
            seed: 123,
            stable: "meters".into(),
            childtable_count: 10_000,
            childtable_prefix: "d".into(),
            insert_rows: 10_000,
            timestamp_step_ns: 10_000_000_000,
            // 2017-07-14T02:40:00Z, taosBenchmark's default start.
            start_timestamp_ns: 1_500_000_000_000_000_000,
            interlace_rows: 0,
            disorder_ratio: 0.0,
            disorder_range_ns: 1_000_000_000,
            arrival: Arrival::default(),
            churn: None,
            columns: vec![
                ColumnSpec::new(DataType::Varchar(10), 1),
                ColumnSpec::new(DataType::Float, 10),
            ],
            tags: vec![ColumnSpec::new(DataType::Varchar(10), 1)],
        }
    }
}

/// How the values of one column are made.
#[derive(Debug, Clone)]
enum ValueGen {
    Bool,
    /// Uniform integers in `lo..=lo+span-1`.
    Int {
        lo: i64,
        span: u64,
    },
    /// Uniform floats in `[lo, lo+span)`.
    Float {
        lo: f64,
        span: f64,
    },
    /// Random strings of `len` characters (multi-byte ones too for nchar).
    Str {
        len: u32,
        unicode: bool,
    },
    /// One of the listed values.
    Choice(Vec<CustomValue>),
    /// The row's own timestamp, in milliseconds.
    RowTime,
    /// A shape over time in `[lo, lo+span]`, with Gaussian noise of standard deviation
    /// `noise`; rounded for integers.
    Wave {
        lo: f64,
        span: f64,
        shape: Shape,
        period_ns: i64,
        noise: f64,
        int: bool,
    },
}

const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const UNICODE: &[char] = &[
    'a', 'b', 'c', 'x', 'y', 'z', '0', '9', 'é', 'ü', 'ß', '中', '文', '数', '据', 'α',
];

impl ValueGen {
    fn compile(
        spec: &ColumnSpec,
        list: ColumnList,
        index: usize,
    ) -> Result<ValueGen, WorkloadError> {
        let name = match list {
            ColumnList::Columns => "columns",
            ColumnList::Tags => "tags",
        };
        let err = |field: &str, message: String| WorkloadError {
            key: format!("{name}[{index}].{field}"),
            message,
            column: Some((list, index)),
        };
        let ty = spec.data_type;
        let shaped = check_shape(spec, list, &err)?;
        if let Some(values) = &spec.values {
            if values.is_empty() {
                return Err(err("values", "must list at least one value".into()));
            }
            if spec.min.is_some() || spec.max.is_some() {
                return Err(err(
                    "values",
                    "give either values or min/max, not both".into(),
                ));
            }
            let parsed = values
                .iter()
                .map(|v| parse_value(ty, v).map_err(|m| err("values", m)))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(ValueGen::Choice(parsed));
        }
        match ty {
            DataType::Bool | DataType::Varchar(_) | DataType::NChar(_) => {
                if spec.min.is_some() || spec.max.is_some() {
                    let field = if spec.min.is_some() { "min" } else { "max" };
                    return Err(err(
                        field,
                        format!(
                            "min and max are for numeric types, not {ty}; use values to list the allowed values"
                        ),
                    ));
                }
                Ok(match ty {
                    DataType::Bool => ValueGen::Bool,
                    DataType::Varchar(len) => ValueGen::Str {
                        len,
                        unicode: false,
                    },
                    DataType::NChar(len) => ValueGen::Str { len, unicode: true },
                    _ => unreachable!(),
                })
            }
            DataType::Timestamp if spec.min.is_none() && spec.max.is_none() => {
                Ok(ValueGen::RowTime)
            }
            DataType::Float | DataType::Double => float_gen(spec, shaped, &err),
            _ => int_gen(spec, shaped, &err),
        }
    }

    /// Appends one value to `out`, using `scratch` for strings; `phase` places a shape's
    /// wave for this device and column (0..1 of a period).
    #[inline]
    fn push(
        &self,
        rng: &mut DeviceRng,
        ts_ns: i64,
        phase: f64,
        out: &mut ColumnValues,
        scratch: &mut String,
    ) {
        match (self, out) {
            (
                ValueGen::Wave {
                    lo,
                    span,
                    shape,
                    period_ns,
                    noise,
                    int,
                },
                out,
            ) => {
                let x = (ts_ns.rem_euclid(*period_ns) as f64 / *period_ns as f64 + phase).fract();
                let mut v = lo + span * shape.at(x);
                if *noise > 0.0 {
                    v += noise * gaussian(rng.next_u64());
                }
                let v = v.clamp(*lo, lo + span);
                match out {
                    ColumnValues::Int(o) if *int => o.push(v.round() as i64),
                    ColumnValues::Float(o) => o.push(v),
                    _ => unreachable!("a shape's column is numeric"),
                }
            }
            (ValueGen::Bool, ColumnValues::Bool(v)) => v.push(rng.next_u64() & 1 == 1),
            (ValueGen::Int { lo, span }, ColumnValues::Int(v)) => {
                v.push(lo.wrapping_add(below(rng.next_u64(), *span) as i64))
            }
            (ValueGen::RowTime, ColumnValues::Int(v)) => v.push(ts_ns.div_euclid(1_000_000)),
            (ValueGen::Float { lo, span }, ColumnValues::Float(v)) => {
                v.push(lo + unit(rng.next_u64()) * span)
            }
            (ValueGen::Str { len, unicode }, ColumnValues::Str(v)) => {
                random_string(rng, *len, *unicode, scratch);
                v.push(scratch);
            }
            (ValueGen::Choice(list), out) => {
                let pick = &list[below(rng.next_u64(), list.len() as u64) as usize];
                match (pick, out) {
                    (CustomValue::Bool(b), ColumnValues::Bool(v)) => v.push(*b),
                    (CustomValue::Int(i), ColumnValues::Int(v)) => v.push(*i),
                    (CustomValue::Float(f), ColumnValues::Float(v)) => v.push(*f),
                    (CustomValue::Str(s), ColumnValues::Str(v)) => v.push(s),
                    _ => unreachable!("values are parsed for their column's type"),
                }
            }
            _ => unreachable!("a column's generator matches its storage"),
        }
    }

    /// One value as a tag value.
    fn tag(&self, rng: &mut DeviceRng) -> TagValue {
        match self {
            ValueGen::Bool => TagValue::Bool(rng.next_u64() & 1 == 1),
            ValueGen::Int { lo, span } => {
                TagValue::Int(lo.wrapping_add(below(rng.next_u64(), *span) as i64))
            }
            ValueGen::RowTime => TagValue::Int(0),
            // Refused for tags at compile: a tag has no time.
            ValueGen::Wave { lo, int: true, .. } => TagValue::Int(*lo as i64),
            ValueGen::Wave { lo, .. } => TagValue::Float(*lo),
            ValueGen::Float { lo, span } => TagValue::Float(lo + unit(rng.next_u64()) * span),
            ValueGen::Str { len, unicode } => {
                let mut s = String::new();
                random_string(rng, *len, *unicode, &mut s);
                TagValue::Str(Cow::Owned(s))
            }
            ValueGen::Choice(list) => {
                match &list[below(rng.next_u64(), list.len() as u64) as usize] {
                    CustomValue::Bool(b) => TagValue::Bool(*b),
                    CustomValue::Int(i) => TagValue::Int(*i),
                    CustomValue::Float(f) => TagValue::Float(*f),
                    CustomValue::Str(s) => TagValue::Str(Cow::Owned(s.clone())),
                }
            }
        }
    }
}

fn random_string(rng: &mut DeviceRng, len: u32, unicode: bool, out: &mut String) {
    out.clear();
    let mut bits = 0u64;
    for i in 0..len {
        // One draw gives ten 6-bit picks.
        if i % 10 == 0 {
            bits = rng.next_u64();
        }
        let pick = (bits & 63) as usize;
        bits >>= 6;
        if unicode {
            out.push(UNICODE[pick % UNICODE.len()]);
        } else {
            out.push(ASCII[pick % ASCII.len()] as char);
        }
    }
}

fn parse_value(ty: DataType, text: &str) -> Result<CustomValue, String> {
    let t = text.trim();
    match ty {
        DataType::Bool => match t.to_ascii_lowercase().as_str() {
            "true" => Ok(CustomValue::Bool(true)),
            "false" => Ok(CustomValue::Bool(false)),
            _ => Err(format!("\"{text}\" is not a bool; allowed: true, false")),
        },
        DataType::Float | DataType::Double => match t.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(CustomValue::Float(v)),
            _ => Err(format!("\"{text}\" is not a {ty} value")),
        },
        DataType::Varchar(len) if text.len() > len as usize => Err(format!(
            "\"{text}\" is {} bytes long; {ty} allows at most {len}",
            text.len()
        )),
        DataType::NChar(len) if text.chars().count() > len as usize => Err(format!(
            "\"{text}\" is {} characters long; {ty} allows at most {len}",
            text.chars().count()
        )),
        DataType::Varchar(_) | DataType::NChar(_) => Ok(CustomValue::Str(text.to_string())),
        _ => {
            let (lo, hi) = ty.int_range().unwrap_or((i64::MIN, i64::MAX));
            match t.parse::<i64>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(CustomValue::Int(v)),
                _ => Err(format!(
                    "\"{text}\" is not a {ty} value; allowed: whole numbers from {lo} to {hi}"
                )),
            }
        }
    }
}

/// Expands column specs into one generator per column.
fn compile(
    list: &[ColumnSpec],
    which: ColumnList,
) -> Result<Vec<(DataType, ValueGen)>, WorkloadError> {
    let mut out = Vec::new();
    for (i, spec) in list.iter().enumerate() {
        let g = ValueGen::compile(spec, which, i)?;
        for _ in 0..spec.count {
            out.push((spec.data_type, g.clone()));
        }
    }
    Ok(out)
}

const TAG_STREAM: u64 = 0x7461_6773;
const VALUE_STREAM: u64 = 0x7661_6c73;
const DISORDER: u64 = 5;
const DISORDER_BY: u64 = 6;
const PHASE: u64 = 7;

/// Child table names and tag values, made on demand.
#[derive(Debug)]
struct CustomTags {
    seed: u64,
    prefix: String,
    gens: Vec<ValueGen>,
}

impl TagSource for CustomTags {
    /// Slot 0 names the device alone.
    fn key_slot(&self) -> Option<usize> {
        Some(0)
    }

    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.push(TagValue::Str(Cow::Owned(format!(
            "{}{device}",
            self.prefix
        ))));
        let mut rng = device_rng(self.seed, TAG_STREAM, device);
        out.extend(self.gens.iter().map(|g| g.tag(&mut rng)));
    }
}

/// A taosBenchmark-style super table data set.
#[derive(Debug)]
pub struct Custom {
    cfg: CustomConfig,
    gens: Arc<Vec<ValueGen>>,
    schema: Schema,
    /// Rows of one table per round (interlace_rows, or all rows).
    chunk: u64,
}

impl Custom {
    /// The generator state of `cfg`'s child tables: each one's random stream, held by the
    /// source of the worker that owns it.
    pub fn state_estimate(cfg: &CustomConfig) -> StateEstimate {
        StateEstimate {
            key: "childtable_count",
            noun: "child tables",
            devices: cfg.childtable_count,
            bytes_per_device: std::mem::size_of::<DeviceRng>() as u64,
        }
    }

    pub fn new(cfg: CustomConfig) -> Result<Self, WorkloadError> {
        if cfg.stable.trim().is_empty() {
            return Err(WorkloadError::new("stable", "must not be empty"));
        }
        if cfg.childtable_count == 0 {
            return Err(WorkloadError::new("childtable_count", "must be at least 1"));
        }
        if cfg.insert_rows == 0 {
            return Err(WorkloadError::new("insert_rows", "must be at least 1"));
        }
        if cfg.timestamp_step_ns <= 0 {
            return Err(WorkloadError::new("timestamp_step", "must be positive"));
        }
        if !(0.0..=100.0).contains(&cfg.disorder_ratio) {
            return Err(WorkloadError::new(
                "disorder_ratio",
                format!(
                    "{} is not a percentage; allowed: 0 to 100",
                    cfg.disorder_ratio
                ),
            ));
        }
        if cfg.disorder_ratio > 0.0 && cfg.disorder_range_ns <= 0 {
            return Err(WorkloadError::new(
                "disorder_range",
                "must be positive when disorder_ratio is set",
            ));
        }
        cfg.arrival.check(1.0)?;
        let span = (cfg.insert_rows as i128) * cfg.timestamp_step_ns as i128;
        if cfg.start_timestamp_ns as i128 + span > i64::MAX as i128 {
            return Err(WorkloadError::new(
                "insert_rows",
                "the last timestamp (start_timestamp + insert_rows x timestamp_step) is past year 2262",
            ));
        }
        if cfg.columns.is_empty() {
            return Err(WorkloadError::new(
                "columns",
                "must list at least one column",
            ));
        }
        let columns = compile(&cfg.columns, ColumnList::Columns)?;
        let tags = compile(&cfg.tags, ColumnList::Tags)?;
        let name_len = cfg.childtable_prefix.len() as u32 + 10;
        let mut tag_defs = vec![TagDef {
            name: "tbname".into(),
            data_type: DataType::Varchar(name_len),
            slot: 0,
        }];
        tag_defs.extend(tags.iter().enumerate().map(|(i, (ty, _))| TagDef {
            name: format!("t{i}"),
            data_type: *ty,
            slot: i + 1,
        }));
        let schema = Schema {
            tables: vec![TableSchema {
                name: cfg.stable.clone(),
                tags: tag_defs,
                fields: columns
                    .iter()
                    .enumerate()
                    .map(|(i, (ty, _))| FieldDef {
                        name: format!("c{i}"),
                        data_type: *ty,
                    })
                    .collect(),
            }],
            tag_slots: 1 + tags.len(),
            device_count: cfg
                .childtable_count
                .checked_mul(generations(&cfg))
                .ok_or_else(|| {
                    WorkloadError::new(
                        "churn_ratio",
                        "the child tables of every generation are more than 4,294,967,295: churn \
                     less, or over fewer rows",
                    )
                })?,
            tags: Arc::new(CustomTags {
                seed: cfg.seed,
                prefix: cfg.childtable_prefix.clone(),
                gens: tags.into_iter().map(|(_, g)| g).collect(),
            }),
        };
        let chunk = match cfg.interlace_rows as u64 {
            0 => cfg.insert_rows,
            k => k.min(cfg.insert_rows),
        };
        Ok(Custom {
            gens: Arc::new(columns.into_iter().map(|(_, g)| g).collect()),
            cfg,
            schema,
            chunk,
        })
    }
}

impl Workload for Custom {
    fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Its devices: the child table slots, split over workers by
    /// [`tsload_core::workload::device_range`], in each generation of churn.
    fn scope(&self) -> tsload_core::stored::RunScope {
        tsload_core::stored::RunScope {
            devices: Some(tsload_core::stored::DeviceSet::whole(
                self.cfg.childtable_count,
                generations(&self.cfg),
            )),
            part: None,
        }
    }

    fn counts_devices(&self) -> bool {
        self.cfg.churn.is_some()
    }

    fn total_rows(&self) -> Option<u64> {
        if self.cfg.arrival.duplicate_ratio > 0.0 {
            // Rows sent twice are not counted up front.
            return None;
        }
        (self.cfg.childtable_count as u64).checked_mul(self.cfg.insert_rows)
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        let devices = device_range(self.cfg.childtable_count, worker, workers);
        let source = Box::new(CustomSource {
            seed: self.cfg.seed,
            shaped: self.cfg.columns.iter().any(|c| c.shape != Shape::Random),
            gens: self.gens.clone(),
            start: self.cfg.start_timestamp_ns,
            step: self.cfg.timestamp_step_ns,
            insert_rows: self.cfg.insert_rows,
            chunk: self.chunk,
            disorder: self.cfg.disorder_ratio / 100.0,
            disorder_range: self.cfg.disorder_range_ns as u64,
            first: devices.start,
            rngs: devices
                .clone()
                .map(|d| device_rng(self.cfg.seed, VALUE_STREAM, d))
                .collect(),
            round: 0,
            device: 0,
            offset: 0,
            scratch: String::new(),
            churn: self.cfg.churn,
            count: self.cfg.childtable_count,
            current: match self.cfg.churn {
                None => Vec::new(),
                Some(_) => vec![u32::MAX; devices.len()],
            },
        });
        if self.cfg.arrival.is_plain() {
            return source;
        }
        // A table's last row, where its disorder (if any) moved it.
        let (seed, row, disorder, range) = (
            self.cfg.seed,
            self.cfg.insert_rows - 1,
            self.cfg.disorder_ratio / 100.0,
            self.cfg.disorder_range_ns as u64,
        );
        let step = self.cfg.timestamp_step_ns;
        let (start, churn, count) = (
            self.cfg.start_timestamp_ns,
            self.cfg.churn,
            self.cfg.childtable_count,
        );
        let last_row = Arc::new(move |_, device: u32| {
            // Under churn, the last row of the generation's life.
            let last = churn.map_or(row, |c| c.last_step(device, count, step).min(row));
            start + last as i64 * step - disorder_by(seed, device, last, disorder, range)
        });
        Box::new(ArrivalSource::new(
            source,
            &self.schema,
            self.cfg.arrival,
            KindRows {
                seed: self.cfg.seed,
                interval_ns: step,
                kept: 1.0,
                last_row,
                counts_devices: self.cfg.churn.is_some(),
                slots: self.cfg.childtable_count,
            },
        ))
    }
}

/// The generations of churn `cfg`'s data reaches (1 without churn).
fn generations(cfg: &CustomConfig) -> u32 {
    cfg.churn.map_or(1, |c| {
        let span = (cfg.insert_rows as i64).saturating_mul(cfg.timestamp_step_ns);
        c.generations(cfg.childtable_count, span)
    })
}

/// How far back (ns) taosBenchmark's disorder moves row `row` of `device`: 0 for most.
fn disorder_by(seed: u64, device: u32, row: u64, disorder: f64, range: u64) -> i64 {
    if chance(hash(seed, DISORDER, device as u64, row), disorder) {
        1 + below(hash(seed, DISORDER_BY, device as u64, row), range) as i64
    } else {
        0
    }
}

struct CustomSource {
    seed: u64,
    /// A column has a shape: rows need their device's phases.
    shaped: bool,
    gens: Arc<Vec<ValueGen>>,
    start: i64,
    step: i64,
    insert_rows: u64,
    chunk: u64,
    disorder: f64,
    disorder_range: u64,
    first: u32,
    rngs: Vec<DeviceRng>,
    /// Current round of interlacing, child table (index in this worker's range) and row
    /// within the round.
    round: u64,
    device: usize,
    offset: u64,
    scratch: String,
    churn: Option<Churn>,
    count: u32,
    /// With churn, each slot's current table (`u32::MAX` before its first row); empty
    /// without.
    current: Vec<u32>,
}

impl BatchSource for CustomSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let t = &mut batch.tables[0];
        let mut n = 0;
        let rounds = self.insert_rows.div_ceil(self.chunk);
        while n < max_rows && self.round < rounds && !self.rngs.is_empty() {
            let row = self.round * self.chunk + self.offset;
            let slot = self.first + self.device as u32;
            let device = match self.churn {
                None => slot,
                // The slot's table at the row's time (before disorder): a new one, with its
                // own stream, counted on its first row.
                Some(c) => {
                    let offset = (row as i64).saturating_mul(self.step);
                    let g = c.generation(slot, self.count, offset).0;
                    let device = slot.saturating_add(g.saturating_mul(self.count));
                    if self.current[self.device] != device {
                        self.current[self.device] = device;
                        self.rngs[self.device] = device_rng(self.seed, VALUE_STREAM, device);
                        batch.devices_started += 1;
                        batch.series_started += self.gens.len() as u64;
                    }
                    device
                }
            };
            let ts = self.start + row as i64 * self.step
                - disorder_by(self.seed, device, row, self.disorder, self.disorder_range);
            t.device.push(device);
            t.ts.push(ts);
            let rng = &mut self.rngs[self.device];
            // Each device's wave, and each column's, has a phase of its own.
            let phases = if self.shaped {
                hash(self.seed, PHASE, device as u64, 0)
            } else {
                0
            };
            for (i, (g, col)) in self.gens.iter().zip(&mut t.columns).enumerate() {
                let phase = if self.shaped {
                    unit(mix64(phases ^ i as u64))
                } else {
                    0.0
                };
                g.push(rng, ts, phase, &mut col.values, &mut self.scratch);
            }
            n += 1;
            // Next row: within the round, then the next child table, then the next round.
            self.offset += 1;
            if self.offset == self.chunk || row + 1 == self.insert_rows {
                self.offset = 0;
                self.device += 1;
                if self.device == self.rngs.len() {
                    self.device = 0;
                    self.round += 1;
                }
            }
        }
        n
    }
}

/// A column's noise, period and shape checked (a shape only for numeric columns, not tags
/// or values lists); whether it is shaped.
fn check_shape(
    spec: &ColumnSpec,
    list: ColumnList,
    err: &dyn Fn(&str, String) -> WorkloadError,
) -> Result<bool, WorkloadError> {
    let ty = spec.data_type;
    let shaped = spec.shape != Shape::Random;
    if !spec.noise.is_finite() || spec.noise < 0.0 {
        return Err(err(
            "noise",
            format!(
                "{} is not a share of max - min; allowed: 0 or more",
                spec.noise
            ),
        ));
    }
    if spec.noise != 0.0 && !shaped {
        return Err(err(
            "noise",
            "is for a shape (constant, sine, square, sawtooth), not random values".into(),
        ));
    }
    if spec.period_ns <= 0 {
        return Err(err("period", "must be positive".into()));
    }
    let numeric = matches!(
        ty,
        DataType::TinyInt
            | DataType::SmallInt
            | DataType::Int
            | DataType::BigInt
            | DataType::Float
            | DataType::Double
    );
    if shaped && (spec.values.is_some() || !numeric || list == ColumnList::Tags) {
        let what = if list == ColumnList::Tags {
            "a tag (a device's own, fixed value)".to_string()
        } else if spec.values.is_some() {
            "a values list".to_string()
        } else {
            ty.to_string()
        };
        return Err(err(
            "shape",
            format!(
                "{} is for numeric columns (tinyint, smallint, int, bigint, float, \
                 double), not {what}",
                spec.shape.name()
            ),
        ));
    }
    Ok(shaped)
}

/// A float or double column's generator: uniform in [min, max], or a shape between them.
fn float_gen(
    spec: &ColumnSpec,
    shaped: bool,
    err: &dyn Fn(&str, String) -> WorkloadError,
) -> Result<ValueGen, WorkloadError> {
    let ty = spec.data_type;
    let lo = spec.min.unwrap_or(0.0);
    let hi = spec.max.unwrap_or(lo.max(0.0) + 100.0);
    for (field, v) in [("min", lo), ("max", hi)] {
        if !v.is_finite() || (ty == DataType::Float && v.abs() > f32::MAX as f64) {
            return Err(err(field, format!("{v} is not a finite {ty}")));
        }
    }
    if lo > hi {
        return Err(err("min", format!("min {lo} is greater than max {hi}")));
    }
    if shaped && !(hi - lo).is_finite() {
        return Err(err(
            "max",
            format!("max - min ({hi} - {lo}) is beyond a double: a shape needs less"),
        ));
    }
    if shaped {
        return Ok(ValueGen::Wave {
            lo,
            span: hi - lo,
            shape: spec.shape,
            period_ns: spec.period_ns,
            noise: spec.noise * (hi - lo),
            int: false,
        });
    }
    Ok(ValueGen::Float { lo, span: hi - lo })
}

/// An integer column's generator: uniform in [min, max] within its type, or a shape.
fn int_gen(
    spec: &ColumnSpec,
    shaped: bool,
    err: &dyn Fn(&str, String) -> WorkloadError,
) -> Result<ValueGen, WorkloadError> {
    let ty = spec.data_type;
    let (tlo, thi) = ty.int_range().unwrap_or((i64::MIN, i64::MAX));
    let int = |field: &str, v: f64| -> Result<i64, WorkloadError> {
        if v.fract() != 0.0 || v < tlo as f64 || v > thi as f64 {
            return Err(err(
                field,
                format!("{v} is not a {ty} value; allowed: whole numbers from {tlo} to {thi}"),
            ));
        }
        Ok(v as i64)
    };
    let lo = int("min", spec.min.unwrap_or(0.0))?;
    let hi = match spec.max {
        Some(m) => int("max", m)?,
        None => lo.saturating_add(100).min(thi),
    };
    if lo > hi {
        return Err(err("min", format!("min {lo} is greater than max {hi}")));
    }
    if shaped {
        return Ok(ValueGen::Wave {
            lo: lo as f64,
            span: (hi as f64) - (lo as f64),
            shape: spec.shape,
            period_ns: spec.period_ns,
            noise: spec.noise * ((hi as f64) - (lo as f64)),
            int: true,
        });
    }
    let span = (hi as i128 - lo as i128 + 1).min(u64::MAX as i128) as u64;
    Ok(ValueGen::Int { lo, span })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(interlace: u32) -> CustomConfig {
        CustomConfig {
            childtable_count: 3,
            insert_rows: 5,
            interlace_rows: interlace,
            timestamp_step_ns: 10,
            start_timestamp_ns: 0,
            ..CustomConfig::default()
        }
    }

    fn order(cfg: CustomConfig) -> Vec<(u32, i64)> {
        let w = Custom::new(cfg).unwrap();
        let mut src = w.source(0, 1);
        let mut b = Batch::for_schema(w.schema());
        let mut out = Vec::new();
        loop {
            b.clear();
            if src.fill(&mut b, 4) == 0 {
                break;
            }
            out.extend(
                b.tables[0]
                    .device
                    .iter()
                    .copied()
                    .zip(b.tables[0].ts.iter().copied()),
            );
        }
        out
    }

    #[test]
    fn default_is_r1_schema() {
        let w = Custom::new(CustomConfig::default()).unwrap();
        let t = &w.schema().tables[0];
        assert_eq!(t.name, "meters");
        assert_eq!(t.fields.len(), 11);
        assert_eq!(t.fields[0].data_type, DataType::Varchar(10));
        assert!(t.fields[1..].iter().all(|f| f.data_type == DataType::Float));
        let tags: Vec<&str> = t.tags.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tags, ["tbname", "t0"]);
        assert_eq!(w.schema().device_tags(7)[0], TagValue::Str("d7".into()));
        assert_eq!(w.total_rows(), Some(100_000_000));
    }

    #[test]
    fn interlace_writes_chunks_of_each_table_in_turn() {
        let o = order(small(2));
        let devices: Vec<u32> = o.iter().map(|r| r.0).collect();
        assert_eq!(devices, [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 1, 2]);
        assert_eq!(&o[..2], &[(0, 0), (0, 10)]);
        assert_eq!(o[12], (0, 40));
        let whole = order(small(0));
        let devices: Vec<u32> = whole.iter().map(|r| r.0).collect();
        assert_eq!(devices, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn disorder_moves_timestamps_back_within_range() {
        let mut cfg = small(0);
        cfg.insert_rows = 2000;
        cfg.disorder_ratio = 50.0;
        cfg.disorder_range_ns = 25;
        let o = order(cfg);
        let moved = o
            .iter()
            .enumerate()
            .filter(|(i, (_, ts))| *ts != (*i as i64 % 2000) * 10)
            .count();
        assert!((2500..3500).contains(&moved), "{moved}");
        for (i, (_, ts)) in o.iter().enumerate() {
            let nominal = (i as i64 % 2000) * 10;
            assert!(*ts <= nominal && *ts >= nominal - 25);
        }
    }

    #[test]
    fn values_follow_their_spec() {
        let cfg = CustomConfig {
            columns: vec![
                ColumnSpec {
                    min: Some(-5.0),
                    max: Some(5.0),
                    ..ColumnSpec::new(DataType::TinyInt, 2)
                },
                ColumnSpec {
                    values: Some(vec!["on".into(), "off".into()]),
                    ..ColumnSpec::new(DataType::Varchar(3), 1)
                },
                ColumnSpec::new(DataType::NChar(4), 1),
                ColumnSpec::new(DataType::Bool, 1),
                ColumnSpec::new(DataType::Timestamp, 1),
            ],
            tags: vec![ColumnSpec {
                values: Some(vec!["7".into()]),
                ..ColumnSpec::new(DataType::Int, 1)
            }],
            ..small(0)
        };
        let w = Custom::new(cfg).unwrap();
        assert_eq!(
            w.schema().device_tags(1),
            vec![TagValue::Str("d1".into()), TagValue::Int(7)]
        );
        let mut b = Batch::for_schema(w.schema());
        assert_eq!(w.source(0, 1).fill(&mut b, 100), 15);
        let t = &b.tables[0];
        let ColumnValues::Int(ints) = &t.columns[0].values else {
            panic!()
        };
        assert!(ints.iter().all(|v| (-5..=5).contains(v)));
        let ColumnValues::Str(s) = &t.columns[2].values else {
            panic!()
        };
        assert!((0..s.len()).all(|i| ["on", "off"].contains(&s.get(i))));
        let ColumnValues::Str(s) = &t.columns[3].values else {
            panic!()
        };
        assert!((0..s.len()).all(|i| s.get(i).chars().count() == 4));
        let ColumnValues::Int(ms) = &t.columns[5].values else {
            panic!()
        };
        assert_eq!(ms[1], t.ts[1] / 1_000_000);
    }

    #[test]
    fn bad_specs_name_the_entry() {
        let bad = |spec: ColumnSpec| {
            Custom::new(CustomConfig {
                columns: vec![ColumnSpec::new(DataType::Int, 1), spec],
                ..small(0)
            })
            .unwrap_err()
        };
        let e = bad(ColumnSpec {
            values: Some(vec!["x".into()]),
            ..ColumnSpec::new(DataType::Float, 1)
        });
        assert_eq!(e.key, "columns[1].values");
        assert_eq!(e.column, Some((ColumnList::Columns, 1)));
        assert!(e.message.contains("\"x\" is not a float value"), "{e}");
        let e = bad(ColumnSpec {
            values: Some(vec![]),
            ..ColumnSpec::new(DataType::Float, 1)
        });
        assert_eq!(e.key, "columns[1].values");
        assert!(e.message.contains("at least one value"), "{e}");
        let e = bad(ColumnSpec {
            max: Some(300.0),
            ..ColumnSpec::new(DataType::TinyInt, 1)
        });
        assert_eq!(e.key, "columns[1].max");
        assert!(e.message.contains("-128 to 127"), "{e}");
        let e = bad(ColumnSpec {
            min: Some(1.0),
            ..ColumnSpec::new(DataType::Varchar(4), 1)
        });
        assert!(e.message.contains("numeric types"), "{e}");
        let e = bad(ColumnSpec {
            values: Some(vec!["toolong".into()]),
            ..ColumnSpec::new(DataType::Varchar(4), 1)
        });
        assert!(e.message.contains("at most 4"), "{e}");
    }

    /// Every value of column 0 of `cfg`'s data, by device, in time order.
    fn column_by_device(cfg: CustomConfig) -> Vec<Vec<f64>> {
        let w = Custom::new(cfg).unwrap();
        let mut src = w.source(0, 1);
        let mut b = Batch::for_schema(w.schema());
        let mut out = vec![Vec::new(); w.schema().device_count as usize];
        loop {
            b.clear();
            if src.fill(&mut b, 1000) == 0 {
                return out;
            }
            let t = &b.tables[0];
            for (i, d) in t.device.iter().enumerate() {
                let v = match &t.columns[0].values {
                    ColumnValues::Float(v) => v[i],
                    ColumnValues::Int(v) => v[i] as f64,
                    _ => unreachable!(),
                };
                out[*d as usize].push(v);
            }
        }
    }

    /// Each shape moves between min and max as its name says, one cycle a period, each
    /// device at its own phase; noise has the standard deviation asked for.
    #[test]
    fn shapes_move_between_min_and_max_as_named() {
        let shaped = |data_type, shape, noise| CustomConfig {
            childtable_count: 4,
            // Two hours at 10 s, a 1 h period: two cycles of 360 rows.
            insert_rows: 720,
            columns: vec![ColumnSpec {
                min: Some(10.0),
                max: Some(20.0),
                shape,
                noise,
                ..ColumnSpec::new(data_type, 1)
            }],
            ..CustomConfig::default()
        };
        let sine = column_by_device(shaped(DataType::Double, Shape::Sine, 0.0));
        for v in &sine {
            assert!(v.iter().all(|x| (10.0..=20.0).contains(x)));
            // Smooth: a 10-wide sine over 360 rows moves under 0.1 a row.
            assert!(v.windows(2).all(|w| (w[1] - w[0]).abs() < 0.1), "{v:?}");
            // One cycle a period: the same value an hour later.
            assert!((v[0] - v[360]).abs() < 1e-9);
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
            assert!(lo < 10.01 && hi > 19.99, "{lo} {hi}");
        }
        assert_ne!(sine[0][0], sine[1][0], "each device its own phase");
        let square = column_by_device(shaped(DataType::Int, Shape::Square, 0.0));
        for v in &square {
            assert_eq!(v.iter().filter(|x| **x == 10.0).count(), 360);
            assert_eq!(v.iter().filter(|x| **x == 20.0).count(), 360);
        }
        let saw = column_by_device(shaped(DataType::Float, Shape::Sawtooth, 0.0));
        for v in &saw {
            // Up by 10/360 a row, and one drop back a cycle.
            let drops = v.windows(2).filter(|w| w[1] < w[0]).count();
            assert_eq!(drops, 2, "{v:?}");
        }
        let constant = column_by_device(shaped(DataType::Double, Shape::Constant, 0.0));
        assert!(constant.iter().flatten().all(|x| *x == 10.0));
        // Noise of 5% of the span around the middle of a square's top half: sd 0.5.
        let noisy = column_by_device(CustomConfig {
            columns: vec![ColumnSpec {
                min: Some(0.0),
                max: Some(20.0),
                shape: Shape::Constant,
                noise: 0.0,
                ..ColumnSpec::new(DataType::Double, 1)
            }],
            ..shaped(DataType::Double, Shape::Constant, 0.0)
        });
        assert!(noisy.iter().flatten().all(|x| *x == 0.0));
        let noisy = column_by_device(CustomConfig {
            columns: vec![ColumnSpec {
                min: Some(0.0),
                max: Some(20.0),
                shape: Shape::Square,
                noise: 0.025,
                ..ColumnSpec::new(DataType::Double, 1)
            }],
            ..shaped(DataType::Double, Shape::Constant, 0.0)
        });
        // Values are kept within min and max: the top half's draws above 20 are 20, about
        // half of them; those below are a half-normal of sd 0.5 (20 is 2.5% of 20 wide),
        // whose mean is 0.5 * sqrt(2 / pi) = 0.399.
        let high: Vec<f64> = noisy
            .iter()
            .flatten()
            .copied()
            .filter(|x| *x > 15.0)
            .collect();
        let below: Vec<f64> = high
            .iter()
            .filter(|x| **x < 20.0)
            .map(|x| 20.0 - x)
            .collect();
        let share = below.len() as f64 / high.len() as f64;
        assert!((0.45..0.55).contains(&share), "{share}");
        let mean = below.iter().sum::<f64>() / below.len() as f64;
        assert!((mean - 0.399).abs() < 0.04, "{mean}");
    }

    #[test]
    fn a_shape_is_for_numeric_columns_and_noise_for_a_shape() {
        let bad = |spec: ColumnSpec, tag: bool| {
            let mut cfg = small(0);
            if tag {
                cfg.tags = vec![spec];
            } else {
                cfg.columns = vec![spec];
            }
            Custom::new(cfg).unwrap_err()
        };
        let e = bad(
            ColumnSpec {
                shape: Shape::Sine,
                ..ColumnSpec::new(DataType::Varchar(4), 1)
            },
            false,
        );
        assert_eq!(e.key, "columns[0].shape");
        assert!(e.message.contains("sine is for numeric columns"), "{e}");
        let e = bad(
            ColumnSpec {
                shape: Shape::Sine,
                ..ColumnSpec::new(DataType::Int, 1)
            },
            true,
        );
        assert!(e.message.contains("not a tag"), "{e}");
        let e = bad(
            ColumnSpec {
                noise: 0.1,
                ..ColumnSpec::new(DataType::Int, 1)
            },
            false,
        );
        assert_eq!(e.key, "columns[0].noise");
        let e = bad(
            ColumnSpec {
                shape: Shape::Square,
                noise: -1.0,
                ..ColumnSpec::new(DataType::Int, 1)
            },
            false,
        );
        assert!(e.message.contains("0 or more"), "{e}");
    }
}
