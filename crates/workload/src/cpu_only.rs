//! TSBS `cpu-only`: one `cpu` measurement with TSBS's ten host tags and ten integer usage
//! fields (usage_user .. usage_guest_nice), each a bounded random walk in 0..=100.

use std::sync::Arc;

use rand_core::RngCore;
use tsload_core::schema::{DataType, Schema, TableSchema};
use tsload_core::workload::device_range;
use tsload_core::{Batch, BatchSource, Column, ColumnValues, Workload};

use crate::WorkloadError;
use crate::rng::{DeviceRng, below, device_rng, hash, unit};
use crate::state::StateEstimate;
use crate::tsbs::{HostTags, SlotDevice, StepCursor, TsbsConfig, field_defs, host_tag_defs};

/// TSBS's cpu fields (of the `cpu` table), in TSBS's order.
pub const CPU_FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
const FIELDS: usize = 10;

/// Random stream id of cpu values.
const CPU_STREAM: u64 = 0x0063_7075;

/// Steps of the usage walk, indexed by 6 random bits: a rounded normal-like spread, so
/// one 64-bit draw moves all ten fields.
const WALK: [i8; 64] = {
    let mut t = [0i8; 64];
    let counts: [(i8, usize); 7] = [(-3, 1), (-2, 4), (-1, 14), (0, 26), (1, 14), (2, 4), (3, 1)];
    let mut i = 0;
    let mut k = 0;
    while k < counts.len() {
        let (step, n) = counts[k];
        let mut j = 0;
        while j < n {
            t[i] = step;
            i += 1;
            j += 1;
        }
        k += 1;
    }
    t
};

/// The state of one host's cpu: its random stream and current usage values.
#[derive(Debug, Clone)]
pub(crate) struct CpuState {
    rng: DeviceRng,
    usage: [u8; FIELDS],
}

impl CpuState {
    pub fn new(seed: u64, host: u32) -> Self {
        let mut rng = device_rng(seed, CPU_STREAM, host);
        let mut usage = [0u8; FIELDS];
        for u in &mut usage {
            *u = below(rng.next_u64(), 101) as u8;
        }
        CpuState { rng, usage }
    }

    /// Moves every field one step and returns the new values.
    #[inline]
    pub fn next(&mut self) -> &[u8; FIELDS] {
        let r = self.rng.next_u64();
        for (i, u) in self.usage.iter_mut().enumerate() {
            let step = WALK[((r >> (6 * i)) & 63) as usize];
            *u = (*u as i8 + step).clamp(0, 100) as u8;
        }
        &self.usage
    }
}

/// The `cpu` table's schema.
pub(crate) fn cpu_table() -> TableSchema {
    TableSchema {
        name: "cpu".into(),
        tags: host_tag_defs(),
        fields: field_defs(&CPU_FIELDS, DataType::BigInt),
    }
}

/// The ten integer columns of a cpu table batch.
pub(crate) fn cpu_columns(columns: &mut [Column]) -> [&mut Vec<i64>; FIELDS] {
    let cols: Vec<&mut Vec<i64>> = columns
        .iter_mut()
        .map(|c| match &mut c.values {
            ColumnValues::Int(v) => v,
            _ => unreachable!("cpu fields are integers"),
        })
        .collect();
    cols.try_into()
        .unwrap_or_else(|_| unreachable!("cpu has ten fields"))
}

/// The TSBS `cpu-only` data set.
#[derive(Debug)]
pub struct CpuOnly {
    cfg: TsbsConfig,
    steps: u64,
    schema: Schema,
}

impl CpuOnly {
    /// The generator state of `cfg`'s hosts: each host slot's device and [`CpuState`],
    /// held by the source of the worker that owns it.
    pub fn state_estimate(cfg: &TsbsConfig) -> StateEstimate {
        StateEstimate {
            key: "scale",
            noun: "hosts",
            devices: cfg.scale,
            bytes_per_device: (std::mem::size_of::<CpuState>()
                + if cfg.churn.is_some() {
                    std::mem::size_of::<SlotDevice>()
                } else {
                    0
                }) as u64,
        }
    }

    pub fn new(cfg: TsbsConfig) -> Result<Self, WorkloadError> {
        let steps = cfg.steps()?;
        cfg.arrival.check(1.0)?;
        if let Some(w) = cfg.wave {
            if w.period_ns <= 0 {
                return Err(WorkloadError::new("shape_period", "must be positive"));
            }
            if !w.noise.is_finite() || w.noise < 0.0 {
                return Err(WorkloadError::new(
                    "shape_noise",
                    format!("{} is not a share of 100; allowed: 0 or more", w.noise),
                ));
            }
        }
        let mut table = cpu_table();
        table.tags = crate::tsbs::with_pod(&cfg, table.tags);
        let schema = Schema {
            tables: vec![table],
            tag_slots: crate::tsbs::tag_slots(&cfg, crate::tsbs::HOST_TAGS.len()),
            device_count: cfg.device_count()?,
            tags: Arc::new(HostTags::of(&cfg, false)),
        };
        Ok(CpuOnly { cfg, steps, schema })
    }
}

impl Workload for CpuOnly {
    fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Its devices: the slots, split over workers by
    /// [`tsload_core::workload::device_range`], in each generation of churn.
    fn scope(&self) -> tsload_core::stored::RunScope {
        crate::tsbs::scope(&self.cfg)
    }

    fn counts_devices(&self) -> bool {
        self.cfg.churn.is_some() || self.cfg.pods > 1
    }

    fn total_rows(&self) -> Option<u64> {
        if self.cfg.arrival.duplicate_ratio > 0.0 {
            // Rows sent twice are not counted up front.
            return None;
        }
        (self.cfg.scale as u64).checked_mul(self.steps)
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        let devices = device_range(self.cfg.scale, worker, workers);
        let source = Box::new(CpuSource {
            cursor: StepCursor::new(&self.cfg, self.steps, devices.end - devices.start),
            first: devices.start,
            hosts: devices
                .clone()
                .map(|d| CpuState::new(self.cfg.seed, d))
                .collect(),
            slots: match self.cfg.churn {
                None => Vec::new(),
                Some(_) => devices
                    .map(|d| SlotDevice::at(&self.cfg, d, self.cfg.start_ns))
                    .collect(),
            },
            cfg: self.cfg,
        });
        crate::tsbs::with_arrival(&self.cfg, self.steps, &self.schema, source)
    }
}

struct CpuSource {
    cursor: StepCursor,
    first: u32,
    /// Each slot's state.
    hosts: Vec<CpuState>,
    /// With churn, each slot's device (its number and when it is replaced); empty
    /// without, so the plain path stays as it was (a test per row cost cpu-only's
    /// generation 13 to 45% in criterion's `generate/cpu-only`).
    slots: Vec<SlotDevice>,
    cfg: TsbsConfig,
}

impl BatchSource for CpuSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let first = batch.tables[0].rows();
        let n = self.fill_rows(batch, max_rows);
        if let Some(wave) = self.cfg.wave {
            shape_rows(&self.cfg, wave, batch, first);
        }
        n
    }
}

/// Random stream ids of a shape's phases and noise.
const PHASE_STREAM: u64 = 0x7068_6173;
const NOISE_STREAM: u64 = 0x6e6f_6973;

/// Gives rows `first..` of the batch's usage fields `wave`'s values, each host's field at
/// its own phase, noise a hash of its host, field and time (the same for any order).
fn shape_rows(cfg: &TsbsConfig, wave: crate::Wave, batch: &mut Batch, first: usize) {
    let t = &mut batch.tables[0];
    let (devices, times) = (&t.device, &t.ts);
    let mut cols = cpu_columns(&mut t.columns);
    for row in first..devices.len() {
        let (device, ts) = (devices[row], times[row]);
        for (field, col) in cols.iter_mut().enumerate() {
            let phase = unit(hash(
                cfg.seed,
                PHASE_STREAM,
                u64::from(device),
                field as u64,
            ));
            let r = hash(
                cfg.seed,
                NOISE_STREAM + field as u64,
                u64::from(device),
                ts as u64,
            );
            col[row] = wave.value(ts, phase, 0.0, 100.0, r).round() as i64;
        }
    }
}

impl CpuSource {
    fn fill_rows(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let t = &mut batch.tables[0];
        let c = &mut self.cursor;
        let mut n = 0;
        let (device, ts) = (&mut t.device, &mut t.ts);
        let mut cols = cpu_columns(&mut t.columns);
        if self.cfg.pods > 1 {
            let pods = u64::from(self.cfg.pods);
            while n < max_rows && !c.done() {
                // The host's pods in turn, each host at its own place in the turn; a
                // pod's first row is in the first `pods` steps.
                let slot = self.first + c.device;
                let pod = ((c.step + u64::from(slot)) % pods) as u32;
                if c.step < pods {
                    batch.devices_started += 1;
                    batch.series_started += FIELDS as u64;
                }
                let usage = self.hosts[c.device as usize].next();
                device.push(slot + pod * self.cfg.scale);
                ts.push(c.ts);
                for (col, u) in cols.iter_mut().zip(usage) {
                    col.push(*u as i64);
                }
                c.advance();
                n += 1;
            }
            return n;
        }
        if self.slots.is_empty() {
            while n < max_rows && !c.done() {
                let usage = self.hosts[c.device as usize].next();
                device.push(self.first + c.device);
                ts.push(c.ts);
                for (col, u) in cols.iter_mut().zip(usage) {
                    col.push(*u as i64);
                }
                c.advance();
                n += 1;
            }
            return n;
        }
        while n < max_rows && !c.done() {
            let (slot, state) = (
                &mut self.slots[c.device as usize],
                &mut self.hosts[c.device as usize],
            );
            // The slot's device is replaced once its time is up, and counted as written
            // on its first row.
            if c.ts >= slot.until_ns || c.step == 0 {
                *slot = SlotDevice::at(&self.cfg, self.first + c.device, c.ts);
                *state = CpuState::new(self.cfg.seed, slot.device);
                batch.devices_started += 1;
                batch.series_started += FIELDS as u64;
            }
            let usage = state.next();
            device.push(slot.device);
            ts.push(c.ts);
            for (col, u) in cols.iter_mut().zip(usage) {
                col.push(*u as i64);
            }
            c.advance();
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_table_is_centred() {
        assert_eq!(WALK.iter().map(|s| *s as i32).sum::<i32>(), 0);
        assert_eq!(WALK[0], -3);
        assert_eq!(WALK[63], 3);
    }

    #[test]
    fn usage_stays_in_range_and_moves_little() {
        let mut s = CpuState::new(1, 0);
        let mut prev = *s.next();
        for _ in 0..10_000 {
            let now = *s.next();
            for (a, b) in prev.iter().zip(&now) {
                assert!(*b <= 100);
                assert!((*a as i32 - *b as i32).abs() <= 3);
            }
            prev = now;
        }
    }
}
