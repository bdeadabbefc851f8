//! TSBS `devops`: nine measurements per host and interval (cpu, diskio, disk, kernel, mem,
//! net, nginx, postgresl, redis; 101 fields) with TSBS's names, TSBS's extra tags (disk
//! path/fstype, diskio serial, net interface, redis and nginx port/server) and TSBS's value
//! shapes: integer counters, bounded integer walks, per-host constants and float percentages.

use std::sync::Arc;

use rand_core::RngCore;
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef};
use tsload_core::workload::device_range;
use tsload_core::{Batch, BatchSource, ColumnValues, Workload};

use crate::WorkloadError;
use crate::cpu_only::{CpuState, cpu_columns, cpu_table};
use crate::rng::{DeviceRng, below, device_rng, unit};
use crate::state::StateEstimate;
use crate::tsbs::{
    DEVOPS_TAG_SLOTS, HostTags, SLOT_FSTYPE, SLOT_INTERFACE, SLOT_NGINX_PORT, SLOT_NGINX_SERVER,
    SLOT_PATH, SLOT_REDIS_PORT, SLOT_REDIS_SERVER, SLOT_SERIAL, SlotDevice, StepCursor, TsbsConfig,
    host_tag_defs, tag_def,
};

/// How one field's values evolve.
#[derive(Debug, Clone, Copy)]
enum Gen {
    /// A walk in `[lo, hi]` by uniform steps in `[-step, step]`, starting anywhere.
    Walk { lo: f64, hi: f64, step: f64 },
    /// A counter from 0, growing by a uniform amount in `[0, step]` per reading.
    Counter { step: f64 },
    /// Fixed per host: one of the choices.
    Fixed(&'static [f64]),
}

/// One non-cpu field: name, whether it is a float (else an integer), generator.
#[derive(Debug, Clone, Copy)]
struct Field {
    name: &'static str,
    float: bool,
    generator: Gen,
}

const fn counter(name: &'static str, step: f64) -> Field {
    Field {
        name,
        float: false,
        generator: Gen::Counter { step },
    }
}

const fn walk(name: &'static str, lo: f64, hi: f64, step: f64) -> Field {
    Field {
        name,
        float: false,
        generator: Gen::Walk { lo, hi, step },
    }
}

const fn percent(name: &'static str) -> Field {
    Field {
        name,
        float: true,
        generator: Gen::Walk {
            lo: 0.0,
            hi: 100.0,
            step: 1.0,
        },
    }
}

const fn fixed(name: &'static str, choices: &'static [f64]) -> Field {
    Field {
        name,
        float: false,
        generator: Gen::Fixed(choices),
    }
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const TIB: f64 = 1024.0 * GIB;

/// One non-cpu measurement: name, extra tags (name, slot) and fields.
struct Measurement {
    name: &'static str,
    tags: &'static [(&'static str, usize)],
    fields: &'static [Field],
}

/// The eight measurements after `cpu`, in TSBS's output order.
const MEASUREMENTS: &[Measurement] = &[
    Measurement {
        name: "diskio",
        tags: &[("serial", SLOT_SERIAL)],
        fields: &[
            counter("reads", 20.0),
            counter("writes", 20.0),
            counter("read_bytes", 20_000.0),
            counter("write_bytes", 20_000.0),
            counter("read_time", 200.0),
            counter("write_time", 200.0),
            counter("io_time", 200.0),
        ],
    },
    Measurement {
        name: "disk",
        tags: &[("path", SLOT_PATH), ("fstype", SLOT_FSTYPE)],
        fields: &[
            fixed("total", &[TIB, 2.0 * TIB, 4.0 * TIB]),
            walk("free", 0.0, TIB, GIB),
            walk("used", 0.0, TIB, GIB),
            walk("used_percent", 0.0, 100.0, 1.0),
            fixed("inodes_total", &[268_435_456.0, 536_870_912.0]),
            walk("inodes_free", 0.0, 268_435_456.0, 100_000.0),
            walk("inodes_used", 0.0, 268_435_456.0, 100_000.0),
        ],
    },
    Measurement {
        name: "kernel",
        tags: &[],
        fields: &[
            walk("boot_time", 0.0, 300.0, 0.0),
            counter("interrupts", 20.0),
            counter("context_switches", 20.0),
            counter("processes_forked", 20.0),
            counter("disk_pages_in", 20.0),
            counter("disk_pages_out", 20.0),
        ],
    },
    Measurement {
        name: "mem",
        tags: &[],
        fields: &[
            fixed("total", &[8.0 * GIB, 12.0 * GIB, 16.0 * GIB]),
            walk("available", 0.0, 8.0 * GIB, 0.01 * GIB),
            walk("used", 0.0, 8.0 * GIB, 0.01 * GIB),
            walk("free", 0.0, 8.0 * GIB, 0.01 * GIB),
            walk("cached", 0.0, 8.0 * GIB, 0.01 * GIB),
            walk("buffered", 0.0, 8.0 * GIB, 0.01 * GIB),
            percent("used_percent"),
            percent("available_percent"),
            percent("buffered_percent"),
        ],
    },
    Measurement {
        name: "net",
        tags: &[("interface", SLOT_INTERFACE)],
        fields: &[
            counter("bytes_sent", 100_000.0),
            counter("bytes_recv", 100_000.0),
            counter("packets_sent", 100.0),
            counter("packets_recv", 100.0),
            counter("err_in", 2.0),
            counter("err_out", 2.0),
            counter("drop_in", 2.0),
            counter("drop_out", 2.0),
        ],
    },
    Measurement {
        name: "nginx",
        tags: &[("port", SLOT_NGINX_PORT), ("server", SLOT_NGINX_SERVER)],
        fields: &[
            counter("accepts", 20.0),
            walk("active", 0.0, 100.0, 5.0),
            counter("handled", 20.0),
            walk("reading", 0.0, 100.0, 5.0),
            counter("requests", 20.0),
            walk("waiting", 0.0, 100.0, 5.0),
            walk("writing", 0.0, 100.0, 5.0),
        ],
    },
    Measurement {
        name: "postgresl",
        tags: &[],
        fields: &[
            walk("numbackends", 0.0, 100.0, 2.0),
            counter("xact_commit", 100.0),
            counter("xact_rollback", 10.0),
            counter("blks_read", 100.0),
            counter("blks_hit", 1_000.0),
            counter("tup_returned", 1_000.0),
            counter("tup_fetched", 1_000.0),
            counter("tup_inserted", 100.0),
            counter("tup_updated", 100.0),
            counter("tup_deleted", 10.0),
            counter("conflicts", 2.0),
            counter("temp_files", 2.0),
            counter("temp_bytes", 10_000.0),
            counter("deadlocks", 1.0),
            counter("blk_read_time", 100.0),
            counter("blk_write_time", 100.0),
        ],
    },
    Measurement {
        name: "redis",
        tags: &[("port", SLOT_REDIS_PORT), ("server", SLOT_REDIS_SERVER)],
        fields: &[
            counter("uptime_in_seconds", 20.0),
            counter("total_connections_received", 20.0),
            counter("expired_keys", 20.0),
            counter("evicted_keys", 20.0),
            counter("keyspace_hits", 100.0),
            counter("keyspace_misses", 20.0),
            walk("instantaneous_ops_per_sec", 0.0, 10_000.0, 100.0),
            walk("instantaneous_input_kbps", 0.0, 10_000.0, 100.0),
            walk("instantaneous_output_kbps", 0.0, 10_000.0, 100.0),
            walk("connected_clients", 0.0, 10_000.0, 10.0),
            fixed("used_memory", &[8.0 * GIB, 16.0 * GIB]),
            fixed("used_memory_rss", &[8.0 * GIB, 16.0 * GIB]),
            fixed("used_memory_peak", &[8.0 * GIB, 16.0 * GIB]),
            fixed("used_memory_lua", &[8.0 * GIB, 16.0 * GIB]),
            counter("rdb_changes_since_last_save", 20.0),
            counter("sync_full", 2.0),
            counter("sync_partial_ok", 2.0),
            counter("sync_partial_err", 2.0),
            walk("pubsub_channels", 0.0, 100.0, 1.0),
            walk("pubsub_patterns", 0.0, 100.0, 1.0),
            walk("latest_fork_usec", 0.0, 10_000.0, 100.0),
            walk("connected_slaves", 0.0, 10.0, 1.0),
            counter("master_repl_offset", 1_000.0),
            walk("repl_backlog_active", 0.0, 1.0, 1.0),
            fixed("repl_backlog_size", &[1_048_576.0]),
            walk("repl_backlog_histlen", 0.0, 1_048_576.0, 1_000.0),
            walk("mem_fragmentation_ratio", 0.0, 100.0, 1.0),
            counter("used_cpu_sys", 20.0),
            counter("used_cpu_user", 20.0),
            counter("used_cpu_sys_children", 2.0),
            counter("used_cpu_user_children", 2.0),
        ],
    },
];

/// Number of tables: cpu plus the other measurements.
const TABLES: usize = 1 + MEASUREMENTS.len();

/// Number of non-cpu fields (the per-host state besides cpu).
const fn other_fields() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < MEASUREMENTS.len() {
        n += MEASUREMENTS[i].fields.len();
        i += 1;
    }
    n
}
const OTHER_FIELDS: usize = other_fields();

/// Random stream id of the non-cpu values.
const DEVOPS_STREAM: u64 = 0x6465_766f_7073;

fn schema_tables() -> Vec<TableSchema> {
    let mut tables = vec![cpu_table()];
    for m in MEASUREMENTS {
        let mut tags: Vec<TagDef> = host_tag_defs();
        tags.extend(m.tags.iter().map(|(name, slot)| tag_def(name, *slot)));
        tables.push(TableSchema {
            name: m.name.into(),
            tags,
            fields: m
                .fields
                .iter()
                .map(|f| FieldDef {
                    name: f.name.into(),
                    data_type: if f.float {
                        DataType::Double
                    } else {
                        DataType::BigInt
                    },
                })
                .collect(),
        });
    }
    tables
}

/// The TSBS `devops` data set. A row is one measurement of one host at one time, so each
/// host contributes nine rows per interval.
#[derive(Debug)]
pub struct Devops {
    cfg: TsbsConfig,
    steps: u64,
    schema: Schema,
}

impl Devops {
    /// The generator state of `cfg`'s hosts: each host's cpu state and random stream, and
    /// its current values of the other 91 fields, held by the source of the worker that
    /// owns it.
    pub fn state_estimate(cfg: &TsbsConfig) -> StateEstimate {
        StateEstimate {
            key: "scale",
            noun: "hosts",
            devices: cfg.scale,
            bytes_per_device: (std::mem::size_of::<(CpuState, DeviceRng)>()
                + if cfg.churn.is_some() {
                    std::mem::size_of::<SlotDevice>()
                } else {
                    0
                }
                + OTHER_FIELDS * std::mem::size_of::<f64>()) as u64,
        }
    }

    pub fn new(cfg: TsbsConfig) -> Result<Self, WorkloadError> {
        let steps = cfg.steps()?;
        cfg.arrival.check(1.0)?;
        let mut tables = schema_tables();
        for t in &mut tables {
            t.tags = crate::tsbs::with_pod(&cfg, std::mem::take(&mut t.tags));
        }
        let schema = Schema {
            tables,
            tag_slots: crate::tsbs::tag_slots(&cfg, DEVOPS_TAG_SLOTS),
            device_count: cfg.device_count()?,
            tags: Arc::new(HostTags::of(&cfg, true)),
        };
        Ok(Devops { cfg, steps, schema })
    }
}

impl Workload for Devops {
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
        (self.cfg.scale as u64)
            .checked_mul(self.steps)?
            .checked_mul(TABLES as u64)
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource> {
        let devices = device_range(self.cfg.scale, worker, workers);
        let mut hosts = Vec::with_capacity(devices.len());
        let mut values = vec![0.0; devices.len() * OTHER_FIELDS];
        for (d, values) in devices.clone().zip(values.chunks_mut(OTHER_FIELDS)) {
            hosts.push(host_state(self.cfg.seed, d, values));
        }
        let slots = match self.cfg.churn {
            None => Vec::new(),
            Some(_) => devices
                .clone()
                .map(|d| SlotDevice::at(&self.cfg, d, self.cfg.start_ns))
                .collect(),
        };
        let source = Box::new(DevopsSource {
            cursor: StepCursor::new(&self.cfg, self.steps, devices.end - devices.start),
            table: 0,
            first: devices.start,
            hosts,
            since: vec![i64::MIN; slots.len()],
            slots,
            values,
            cfg: self.cfg,
        });
        crate::tsbs::with_arrival(&self.cfg, self.steps, &self.schema, source)
    }
}

/// Host `device`'s first state: its cpu, its random stream, and (into `values`) the
/// first values of its other fields.
fn host_state(seed: u64, device: u32, values: &mut [f64]) -> (CpuState, DeviceRng) {
    let mut rng = device_rng(seed, DEVOPS_STREAM, device);
    let fields = MEASUREMENTS.iter().flat_map(|m| m.fields);
    for (v, f) in values.iter_mut().zip(fields) {
        *v = initial(f.generator, &mut rng);
    }
    (CpuState::new(seed, device), rng)
}

fn initial(g: Gen, rng: &mut DeviceRng) -> f64 {
    match g {
        Gen::Walk { lo, hi, .. } => (lo + unit(rng.next_u64()) * (hi - lo)).round(),
        Gen::Counter { .. } => 0.0,
        Gen::Fixed(choices) => choices[below(rng.next_u64(), choices.len() as u64) as usize],
    }
}

/// The next value after `v`.
#[inline]
fn step(g: Gen, v: f64, r: u64) -> f64 {
    match g {
        Gen::Walk { lo, hi, step } => (v + (unit(r) * 2.0 - 1.0) * step).clamp(lo, hi),
        Gen::Counter { step } => v + (unit(r) * step).round(),
        Gen::Fixed(_) => v,
    }
}

struct DevopsSource {
    cursor: StepCursor,
    /// Next table of the current (step, host).
    table: usize,
    first: u32,
    /// Each slot's cpu state and stream.
    hosts: Vec<(CpuState, DeviceRng)>,
    /// With churn, each slot's device (its number and when it is replaced); empty
    /// without.
    slots: Vec<SlotDevice>,
    /// With churn, the time of each slot's device's first step.
    since: Vec<i64>,
    /// `OTHER_FIELDS` current values per host.
    values: Vec<f64>,
    cfg: TsbsConfig,
}

impl DevopsSource {
    /// Appends the current host's row of table `table` to the batch.
    fn push_row(&mut self, batch: &mut Batch, table: usize) {
        let c = &self.cursor;
        let host = c.device as usize;
        // Churn: the slot's device is replaced once its time is up, and counted as
        // written on its first row.
        let device = match self.slots.get_mut(host) {
            // With pods, the host's pods in turn (as cpu-only's); a pod is counted on its
            // first row, in the first `pods` steps.
            None if self.cfg.pods > 1 => {
                let pods = u64::from(self.cfg.pods);
                let slot = self.first + c.device;
                if c.step < pods {
                    batch.devices_started += u64::from(table == 0);
                    batch.series_started += batch.tables[table].columns.len() as u64;
                }
                slot + ((c.step + u64::from(slot)) % pods) as u32 * self.cfg.scale
            }
            None => self.first + c.device,
            Some(slot) => {
                if table == 0 && (c.ts >= slot.until_ns || c.step == 0) {
                    *slot = SlotDevice::at(&self.cfg, self.first + c.device, c.ts);
                    let values = &mut self.values[host * OTHER_FIELDS..][..OTHER_FIELDS];
                    self.hosts[host] = host_state(self.cfg.seed, slot.device, values);
                    self.since[host] = c.ts;
                    batch.devices_started += 1;
                }
                // Each table's row of the device's first step starts its series there.
                if self.since[host] == c.ts {
                    batch.series_started += batch.tables[table].columns.len() as u64;
                }
                slot.device
            }
        };
        let t = &mut batch.tables[table];
        let (cpu, rng) = &mut self.hosts[host];
        t.device.push(device);
        t.ts.push(c.ts);
        if table == 0 {
            for (col, u) in cpu_columns(&mut t.columns).iter_mut().zip(cpu.next()) {
                col.push(*u as i64);
            }
            return;
        }
        let m = &MEASUREMENTS[table - 1];
        let offset: usize = MEASUREMENTS[..table - 1]
            .iter()
            .map(|m| m.fields.len())
            .sum();
        let values = &mut self.values[host * OTHER_FIELDS + offset..][..m.fields.len()];
        for ((f, v), col) in m.fields.iter().zip(values).zip(&mut t.columns) {
            *v = step(f.generator, *v, rng.next_u64());
            match &mut col.values {
                ColumnValues::Float(out) => out.push(*v),
                ColumnValues::Int(out) => out.push(v.round() as i64),
                _ => unreachable!("devops fields are integers or floats"),
            }
        }
    }
}

impl BatchSource for DevopsSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let mut n = 0;
        while n < max_rows && !self.cursor.done() {
            self.push_row(batch, self.table);
            n += 1;
            self.table += 1;
            if self.table == TABLES {
                self.table = 0;
                self.cursor.advance();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_101_fields_in_9_tables() {
        let t = schema_tables();
        assert_eq!(t.len(), 9);
        assert_eq!(t.iter().map(|t| t.fields.len()).sum::<usize>(), 101);
        assert_eq!(OTHER_FIELDS, 91);
        let redis = t.iter().find(|t| t.name == "redis").unwrap();
        let tags: Vec<&str> = redis.tags.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(&tags[10..], ["port", "server"]);
    }

    #[test]
    fn counters_never_decrease_and_walks_stay_in_bounds() {
        let mut rng = device_rng(1, 2, 3);
        let c = Gen::Counter { step: 10.0 };
        let w = Gen::Walk {
            lo: 0.0,
            hi: 100.0,
            step: 5.0,
        };
        let (mut cv, mut wv) = (initial(c, &mut rng), initial(w, &mut rng));
        for _ in 0..10_000 {
            let next = step(c, cv, rng.next_u64());
            assert!(next >= cv);
            cv = next;
            wv = step(w, wv, rng.next_u64());
            assert!((0.0..=100.0).contains(&wv));
        }
    }
}
