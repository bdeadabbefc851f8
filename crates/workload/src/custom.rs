//! taosBenchmark-style super tables: `childtable_count` child tables named
//! `childtable_prefix` + index, `insert_rows` rows each, `timestamp_step` apart from
//! `start_timestamp`, written `interlace_rows` rows of a table at a time, with optional
//! disorder, and columns and tags described as `{type, len, count, min, max, values}`.
//!
//! The child table's name is the first tag, `tbname` (TDengine's name for it), so that every
//! target can tell the child tables apart; the described tags follow as `t0`, `t1`, ...
//! and the columns are `c0`, `c1`, ...

mod columns;

use std::borrow::Cow;
use std::sync::Arc;

use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef, TagSource, TagValue};
use tsload_core::workload::device_range;

use crate::shape::Shape;
use tsload_core::{Batch, BatchSource, Workload};

use crate::Churn;
use crate::arrival::{Arrival, ArrivalSource, KindRows};
use crate::rng::{DeviceRng, below, chance, device_rng, hash, mix64, unit};
use crate::state::StateEstimate;
use crate::{ColumnList, WorkloadError};
pub use columns::{ColumnSpec, CustomValue};
use columns::{ValueGen, compile};

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

#[cfg(test)]
mod tests;
