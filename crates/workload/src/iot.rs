//! TSBS `iot`: trucks reporting `readings` (position, speed, fuel; 7 fields) and
//! `diagnostics` (load, fuel state, status; 3 fields) under TSBS's 8 tags, with TSBS's
//! imperfections: missing field values, missing rows and rows that arrive late.
//!
//! Every imperfection is decided by a stateless hash of `(seed, truck, step, table)`, so
//! the data set stays a pure function of the seed for any number of workers.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rand_core::RngCore;
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef, TagSource, TagValue};
use tsload_core::workload::device_range;
use tsload_core::{Batch, BatchSource, ColumnValues, Workload};

use crate::WorkloadError;
use crate::arrival::{Arrival, ArrivalSource, KindRows};
use crate::rng::{DeviceRng, below, chance, device_rng, hash, next_unit};
use crate::state::StateEstimate;
use crate::tsbs::{SlotDevice, StepCursor, TsbsConfig};

/// The gaps of the data set. The defaults follow the proportions in TSBS's own iot output
/// (seed 123): about 1% of field values and 9% of rows missing. Its late rows (14% late by
/// 1 to 6 intervals in TSBS's output) are the config's [`Arrival`]: [`IOT_ARRIVAL`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IotOptions {
    /// Share of field values left empty (0..=1).
    pub missing_field_ratio: f64,
    /// Share of rows never sent (0..=1).
    pub missing_row_ratio: f64,
}

impl Default for IotOptions {
    fn default() -> Self {
        IotOptions {
            missing_field_ratio: 0.01,
            missing_row_ratio: 0.09,
        }
    }
}

/// iot's late rows by default, as TSBS's own output has them: 14% of rows, 1 to 6
/// intervals late.
pub const IOT_ARRIVAL: Arrival = Arrival {
    out_of_order_ratio: 0.14,
    out_of_order_max_steps: 6,
    duplicate_ratio: 0.0,
};

const TAGS: &[&str] = &[
    "name",
    "fleet",
    "driver",
    "model",
    "device_version",
    "load_capacity",
    "fuel_capacity",
    "nominal_fuel_consumption",
];
const READINGS: &[&str] = &[
    "latitude",
    "longitude",
    "elevation",
    "velocity",
    "heading",
    "grade",
    "fuel_consumption",
];
const FLEETS: &[&str] = &["East", "West", "North", "South"];
const DRIVERS: &[&str] = &["Albert", "Derek", "Trish", "Rodney", "Seth", "Andy"];
/// (model, load capacity, fuel capacity, nominal fuel consumption)
const MODELS: &[(&str, f64, f64, f64)] = &[
    ("F-150", 2000.0, 200.0, 15.0),
    ("G-2000", 5000.0, 300.0, 19.0),
    ("H-2", 1500.0, 150.0, 12.0),
];
const VERSIONS: &[&str] = &["v1.0", "v1.5", "v2.0", "v2.3"];

const TAG_STREAM: u64 = 0x7472_7563_6b73;
const VALUE_STREAM: u64 = 0x0069_6f74;
const MISSING_ROW: u64 = 3;
const MISSING_FIELD: u64 = 4;

/// Cells (trucks x steps x tables) up to which the exact row count is worked out up front.
const COUNT_LIMIT: u64 = 50_000_000;

/// The TSBS `iot` data set.
#[derive(Debug)]
pub struct Iot {
    cfg: TsbsConfig,
    opts: IotOptions,
    steps: u64,
    schema: Schema,
    total: OnceLock<Option<u64>>,
}

impl Iot {
    /// The generator state of `cfg`'s trucks: each truck's random stream and current
    /// readings, held by the source of the worker that owns it.
    pub fn state_estimate(cfg: &TsbsConfig) -> StateEstimate {
        StateEstimate {
            key: "scale",
            noun: "trucks",
            devices: cfg.scale,
            bytes_per_device: (std::mem::size_of::<Truck>()
                + if cfg.churn.is_some() {
                    std::mem::size_of::<(SlotDevice, u16)>()
                } else {
                    0
                }) as u64,
        }
    }

    pub fn new(cfg: TsbsConfig, opts: IotOptions) -> Result<Self, WorkloadError> {
        let steps = cfg.steps()?;
        for (key, v) in [
            ("missing_field_ratio", opts.missing_field_ratio),
            ("missing_row_ratio", opts.missing_row_ratio),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(WorkloadError::new(
                    key,
                    format!("{v} is not between 0 and 1"),
                ));
            }
        }
        cfg.arrival.check(1.0 - opts.missing_row_ratio)?;
        let tags = TAGS
            .iter()
            .enumerate()
            .map(|(slot, name)| TagDef {
                name: (*name).into(),
                data_type: if slot < 5 {
                    DataType::Varchar(32)
                } else {
                    DataType::Double
                },
                slot,
            })
            .collect::<Vec<_>>();
        let fields = |names: &[(&str, DataType)]| {
            names
                .iter()
                .map(|(n, t)| FieldDef {
                    name: (*n).into(),
                    data_type: *t,
                })
                .collect()
        };
        let readings: Vec<(&str, DataType)> =
            READINGS.iter().map(|n| (*n, DataType::Double)).collect();
        let schema = Schema {
            tables: vec![
                TableSchema {
                    name: "readings".into(),
                    tags: tags.clone(),
                    fields: fields(&readings),
                },
                TableSchema {
                    name: "diagnostics".into(),
                    tags,
                    fields: fields(&[
                        ("fuel_state", DataType::Double),
                        ("current_load", DataType::Double),
                        ("status", DataType::BigInt),
                    ]),
                },
            ],
            tag_slots: TAGS.len(),
            device_count: cfg.device_count()?,
            tags: Arc::new(TruckTags { seed: cfg.seed }),
        };
        Ok(Iot {
            cfg,
            opts,
            steps,
            schema,
            total: OnceLock::new(),
        })
    }

    fn rules(&self) -> Rules {
        Rules {
            seed: self.cfg.seed,
            opts: self.opts,
        }
    }
}

impl Workload for Iot {
    fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Its devices: the slots, split over workers by
    /// [`tsload_core::workload::device_range`], in each generation of churn.
    fn scope(&self) -> tsload_core::stored::RunScope {
        crate::tsbs::scope(&self.cfg)
    }

    fn counts_devices(&self) -> bool {
        self.cfg.churn.is_some()
    }

    fn total_rows(&self) -> Option<u64> {
        if self.cfg.arrival.duplicate_ratio > 0.0 || self.cfg.churn.is_some() {
            // Rows sent twice, and missing rows of devices that come and go, are not
            // counted up front.
            return None;
        }
        *self.total.get_or_init(|| {
            let cells = (self.cfg.scale as u64)
                .checked_mul(self.steps)?
                .checked_mul(2)?;
            if self.opts.missing_row_ratio == 0.0 {
                return Some(cells);
            }
            if cells > COUNT_LIMIT {
                return None;
            }
            let rules = self.rules();
            let mut n = 0;
            for truck in 0..self.cfg.scale {
                for step in 0..self.steps {
                    for table in 0..2 {
                        n += u64::from(!rules.missing_row(truck, step, table));
                    }
                }
            }
            Some(n)
        })
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        let devices = device_range(self.cfg.scale, worker, workers);
        let tags = TruckTags {
            seed: self.cfg.seed,
        };
        let trucks = devices
            .clone()
            .map(|d| Truck::new(self.cfg.seed, d, tags.model(d).1))
            .collect();
        let slots = match self.cfg.churn {
            None => Vec::new(),
            Some(_) => devices
                .clone()
                .map(|d| (SlotDevice::at(&self.cfg, d, self.cfg.start_ns), 0))
                .collect(),
        };
        let source = Box::new(IotSource {
            rules: self.rules(),
            cursor: StepCursor::new(&self.cfg, self.steps, devices.end - devices.start),
            start_ns: self.cfg.start_ns,
            table: 0,
            first: devices.start,
            trucks,
            slots,
            cfg: self.cfg,
        });
        if self.cfg.arrival.is_plain() {
            return source;
        }
        // A truck's last row in a table is that of the last step of its life with one.
        let (rules, steps, cfg) = (self.rules(), self.steps, self.cfg);
        let last_row = Arc::new(move |table: usize, truck: u32| {
            let last = crate::tsbs::last_row(&cfg, steps, truck);
            let last_step = ((last - cfg.start_ns) / cfg.interval_ns.max(1)) as u64;
            let step = (0..=last_step)
                .rev()
                .find(|&step| !rules.missing_row(truck, step, table))
                .unwrap_or(0);
            cfg.start_ns + step as i64 * cfg.interval_ns
        });
        Box::new(ArrivalSource::new(
            source,
            &self.schema,
            self.cfg.arrival,
            KindRows {
                seed: self.cfg.seed,
                interval_ns: self.cfg.interval_ns,
                kept: 1.0 - self.opts.missing_row_ratio,
                last_row,
                counts_devices: self.cfg.churn.is_some(),
                slots: self.cfg.scale,
            },
        ))
    }
}

/// The per-row decisions, each a hash of (seed, truck, step, table).
#[derive(Debug, Clone, Copy)]
struct Rules {
    seed: u64,
    opts: IotOptions,
}

impl Rules {
    fn cell(step: u64, table: usize) -> u64 {
        step * 2 + table as u64
    }

    fn missing_row(&self, truck: u32, step: u64, table: usize) -> bool {
        chance(
            hash(
                self.seed,
                MISSING_ROW,
                truck as u64,
                Self::cell(step, table),
            ),
            self.opts.missing_row_ratio,
        )
    }

    fn missing_field(&self, truck: u32, step: u64, table: usize, field: usize) -> bool {
        chance(
            hash(
                self.seed,
                MISSING_FIELD,
                truck as u64,
                Self::cell(step, table) * 16 + field as u64,
            ),
            self.opts.missing_field_ratio,
        )
    }
}

/// Produces truck tags on demand: name, fleet, driver, model, device_version as strings;
/// the model's capacities as floats (TSBS writes those as fields in line protocol).
#[derive(Debug, Clone)]
struct TruckTags {
    seed: u64,
}

impl TruckTags {
    fn pick(&self, truck: u32, slot: u64, n: usize) -> usize {
        below(hash(self.seed, TAG_STREAM, truck as u64, slot), n as u64) as usize
    }

    fn model(&self, truck: u32) -> (&'static str, f64, f64, f64) {
        MODELS[self.pick(truck, 3, MODELS.len())]
    }
}

impl TagSource for TruckTags {
    /// Slot 0 names the device alone.
    fn key_slot(&self) -> Option<usize> {
        Some(0)
    }

    fn device_tags(&self, truck: u32, out: &mut Vec<TagValue>) {
        out.clear();
        let (model, load, fuel, nominal) = self.model(truck);
        out.push(TagValue::Str(Cow::Owned(format!("truck_{truck}"))));
        out.push(TagValue::Str(Cow::Borrowed(
            FLEETS[self.pick(truck, 1, FLEETS.len())],
        )));
        out.push(TagValue::Str(Cow::Borrowed(
            DRIVERS[self.pick(truck, 2, DRIVERS.len())],
        )));
        out.push(TagValue::Str(Cow::Borrowed(model)));
        out.push(TagValue::Str(Cow::Borrowed(
            VERSIONS[self.pick(truck, 4, VERSIONS.len())],
        )));
        out.push(TagValue::Float(load));
        out.push(TagValue::Float(fuel));
        out.push(TagValue::Float(nominal));
    }
}

/// One truck's moving state.
#[derive(Debug, Clone)]
struct Truck {
    rng: DeviceRng,
    load_capacity: f64,
    /// latitude, longitude, elevation, velocity, heading, grade, fuel_consumption
    readings: [f64; 7],
    fuel_state: f64,
    current_load: f64,
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

impl Truck {
    fn new(seed: u64, truck: u32, load_capacity: f64) -> Self {
        let mut rng = device_rng(seed, VALUE_STREAM, truck);
        let lat = next_unit(&mut rng) * 180.0 - 90.0;
        let lon = next_unit(&mut rng) * 360.0 - 180.0;
        let elevation = (next_unit(&mut rng) * 500.0).round();
        let heading = (next_unit(&mut rng) * 360.0).floor();
        Truck {
            rng,
            load_capacity,
            readings: [lat, lon, elevation, 0.0, heading, 0.0, 25.0],
            fuel_state: 1.0,
            current_load: 0.0,
        }
    }

    /// A uniform step in [-size, size].
    fn jitter(&mut self, size: f64) -> f64 {
        (next_unit(&mut self.rng) * 2.0 - 1.0) * size
    }

    fn next_readings(&mut self) -> [f64; 7] {
        let [lat, lon, ele, vel, head, grade, fuel] = self.readings;
        let next = [
            (lat + self.jitter(0.01)).clamp(-90.0, 90.0),
            (lon + self.jitter(0.01)).clamp(-180.0, 180.0),
            (ele + self.jitter(10.0)).clamp(0.0, 5000.0),
            (vel + self.jitter(10.0)).clamp(0.0, 100.0),
            (head + self.jitter(5.0)).rem_euclid(360.0),
            (grade + self.jitter(5.0)).clamp(0.0, 100.0),
            (fuel + self.jitter(2.0)).clamp(0.0, 50.0),
        ];
        self.readings = next;
        [
            round_to(next[0], 5),
            round_to(next[1], 5),
            next[2].round(),
            next[3].round(),
            next[4].floor(),
            next[5].round(),
            round_to(next[6], 1),
        ]
    }

    fn next_diagnostics(&mut self) -> (f64, f64, i64) {
        let fuel = (self.fuel_state + self.jitter(0.05)).clamp(0.0, 1.0);
        self.fuel_state = if fuel < 0.1 { 1.0 } else { fuel };
        let cap = self.load_capacity;
        self.current_load = (self.current_load + self.jitter(cap / 10.0)).clamp(0.0, cap);
        let status = below(self.rng.next_u64(), 6) as i64;
        (
            round_to(self.fuel_state, 1),
            self.current_load.round(),
            status,
        )
    }
}

struct IotSource {
    rules: Rules,
    cursor: StepCursor,
    start_ns: i64,
    /// Next table of the current (step, truck).
    table: usize,
    first: u32,
    /// Each slot's truck's state.
    trucks: Vec<Truck>,
    /// With churn, each slot's truck (its number and when it is replaced) and which of
    /// its fields (readings' 7, then diagnostics' 3, a bit each) it has sent a value of;
    /// empty without.
    slots: Vec<(SlotDevice, u16)>,
    cfg: TsbsConfig,
}

impl IotSource {
    /// Appends the row of `truck` (the current slot's) and `table` from step `from`.
    fn push_row(&mut self, batch: &mut Batch, truck: u32, table: usize, from: u64) {
        let state = &mut self.trucks[self.cursor.device as usize];
        let t = &mut batch.tables[table];
        let row = t.ts.len();
        t.device.push(truck);
        t.ts.push(self.start_ns + from as i64 * self.cursor.interval);
        if table == 0 {
            for (col, v) in t.columns.iter_mut().zip(state.next_readings()) {
                push_float(&mut col.values, v);
            }
        } else {
            let (fuel, load, status) = state.next_diagnostics();
            push_float(&mut t.columns[0].values, fuel);
            push_float(&mut t.columns[1].values, load);
            if let ColumnValues::Int(v) = &mut t.columns[2].values {
                v.push(status);
            }
        }
        // Missing values, but never all of a row's: line protocol needs one field.
        let mut kept = false;
        for field in (0..t.columns.len()).rev() {
            if (field > 0 || kept) && self.rules.missing_field(truck, from, table, field) {
                t.set_null(field, row);
            } else {
                kept = true;
            }
        }
    }
}

fn push_float(values: &mut ColumnValues, v: f64) {
    if let ColumnValues::Float(out) = values {
        out.push(v);
    }
}

impl BatchSource for IotSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let mut n = 0;
        // Each (step, truck, table) in turn, less the missing rows (late ones are the
        // wrapping ArrivalSource's).
        while n < max_rows && !self.cursor.done() {
            let step = self.cursor.step;
            let slot = self.cursor.device as usize;
            let truck = match self.slots.get_mut(slot) {
                None => self.first + self.cursor.device,
                // Churn: the slot's truck is replaced once its time is up (a new one, with
                // its own tags and state), and counted on its first row sent.
                Some((current, sent)) => {
                    if self.table == 0 && (self.cursor.ts >= current.until_ns || step == 0) {
                        *current = SlotDevice::at(
                            &self.cfg,
                            self.first + self.cursor.device,
                            self.cursor.ts,
                        );
                        *sent = 0;
                        let model = TruckTags {
                            seed: self.cfg.seed,
                        }
                        .model(current.device);
                        self.trucks[slot] = Truck::new(self.cfg.seed, current.device, model.1);
                    }
                    current.device
                }
            };
            if !self.rules.missing_row(truck, step, self.table) {
                self.push_row(batch, truck, self.table, step);
                n += 1;
                // A truck is counted on its first row, a series on its first value.
                if let Some((_, sent)) = self.slots.get_mut(slot) {
                    let t = &batch.tables[self.table];
                    let (row, first) = (t.rows() - 1, if self.table == 0 { 0 } else { 7 });
                    let valued = (t.valued_fields(row) << first) as u16;
                    batch.devices_started += u64::from(*sent == 0);
                    batch.series_started += u64::from((valued & !*sent).count_ones());
                    *sent |= valued;
                }
            }
            self.table += 1;
            if self.table == 2 {
                self.table = 0;
                self.cursor.advance();
            }
        }
        for t in &mut batch.tables {
            t.finish_validity();
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(scale: u32, steps: i64) -> TsbsConfig {
        TsbsConfig {
            seed: 123,
            scale,
            start_ns: 0,
            end_ns: steps * 10,
            interval_ns: 10,
            churn: None,
            arrival: IOT_ARRIVAL,
            pods: 1,
            wave: None,
        }
    }

    fn drain(w: &Iot, workers: usize, batch_rows: usize) -> Vec<(usize, u32, i64)> {
        let mut rows = Vec::new();
        for worker in 0..workers {
            let mut src = w.source(worker, workers);
            let mut b = Batch::for_schema(w.schema());
            loop {
                b.clear();
                let n = src.fill(&mut b, batch_rows);
                assert_eq!(n, b.rows());
                if n == 0 {
                    break;
                }
                assert!(n <= batch_rows, "{n} > {batch_rows}");
                for (ti, t) in b.tables.iter().enumerate() {
                    for i in 0..t.rows() {
                        rows.push((ti, t.device[i], t.ts[i]));
                    }
                }
            }
        }
        rows.sort();
        rows
    }

    #[test]
    fn no_imperfections_gives_the_full_grid_in_order() {
        let opts = IotOptions {
            missing_field_ratio: 0.0,
            missing_row_ratio: 0.0,
        };
        let plain = TsbsConfig {
            arrival: Arrival::default(),
            ..cfg(3, 10)
        };
        let w = Iot::new(plain, opts).unwrap();
        assert_eq!(w.total_rows(), Some(60));
        assert_eq!(drain(&w, 1, 7).len(), 60);
    }

    #[test]
    fn imperfect_rows_are_counted_exactly_and_every_row_is_sent_once() {
        let w = Iot::new(cfg(5, 300), IotOptions::default()).unwrap();
        let total = w.total_rows().unwrap();
        assert!(total < 3000 && total > 2500, "{total}");
        let one = drain(&w, 1, 100);
        assert_eq!(one.len() as u64, total);
        let mut dedup = one.clone();
        dedup.dedup();
        assert_eq!(dedup.len(), one.len(), "no row twice");
        assert_eq!(drain(&w, 3, 13), one);
    }

    #[test]
    fn late_rows_arrive_after_newer_ones() {
        let w = Iot::new(cfg(1, 200), IotOptions::default()).unwrap();
        let mut src = w.source(0, 1);
        let mut b = Batch::for_schema(w.schema());
        let mut late = 0;
        let mut newest = i64::MIN;
        loop {
            b.clear();
            if src.fill(&mut b, 1000) == 0 {
                break;
            }
            for &ts in &b.tables[0].ts {
                if ts < newest {
                    late += 1;
                }
                newest = newest.max(ts);
            }
        }
        assert!(late > 5, "{late} late readings");
    }
}
