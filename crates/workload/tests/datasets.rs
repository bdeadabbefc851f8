//! Data-set properties of every workload: a pure function of the seed, the same multiset of
//! rows for any worker count and batch size, and TSBS's own measurement, tag and field names
//! and value shapes (checked against files made by TSBS's generator).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use tsload_core::schema::{DataType, Storage};
use tsload_core::{Batch, ColumnValues, Workload};
use tsload_workload::{
    Arrival, ColumnSpec, CpuOnly, Custom, CustomConfig, Devops, IOT_ARRIVAL, Iot, IotOptions,
    Shape, TsbsConfig, Wave,
};

const START: i64 = 1_451_606_400_000_000_000;

fn tsbs(scale: u32, minutes: i64, seed: u64) -> TsbsConfig {
    TsbsConfig {
        seed,
        scale,
        start_ns: START,
        end_ns: START + minutes * 60_000_000_000,
        interval_ns: 10_000_000_000,
        churn: None,
        arrival: tsload_workload::Arrival::default(),
        pods: 1,
        wave: None,
    }
}

fn custom(seed: u64, arrival: Arrival) -> Custom {
    Custom::new(CustomConfig {
        seed,
        arrival,
        childtable_count: 11,
        insert_rows: 23,
        interlace_rows: 4,
        disorder_ratio: 10.0,
        columns: vec![
            ColumnSpec::new(DataType::Varchar(10), 1),
            ColumnSpec::new(DataType::Float, 3),
            ColumnSpec::new(DataType::Int, 1),
            ColumnSpec::new(DataType::Bool, 1),
            ColumnSpec::new(DataType::NChar(3), 1),
        ],
        ..CustomConfig::default()
    })
    .unwrap()
}

fn workloads(seed: u64) -> Vec<(&'static str, Box<dyn Workload>)> {
    // Late and duplicate rows on every kind (iot's late rows are TSBS's by default).
    let arrival = Arrival {
        out_of_order_ratio: 0.1,
        out_of_order_max_steps: 3,
        duplicate_ratio: 0.05,
    };
    let late = |t: TsbsConfig| TsbsConfig { arrival, ..t };
    let iot = TsbsConfig {
        arrival: Arrival {
            duplicate_ratio: 0.05,
            ..IOT_ARRIVAL
        },
        ..tsbs(9, 30, seed)
    };
    vec![
        (
            "cpu-only",
            Box::new(CpuOnly::new(late(tsbs(13, 10, seed))).unwrap()),
        ),
        (
            "devops",
            Box::new(Devops::new(late(tsbs(5, 5, seed))).unwrap()),
        ),
        (
            "iot",
            Box::new(Iot::new(iot, IotOptions::default()).unwrap()),
        ),
        ("custom", Box::new(custom(seed, arrival))),
        (
            "cpu-only, every row once",
            Box::new(CpuOnly::new(tsbs(13, 10, seed)).unwrap()),
        ),
        (
            "cpu-only, a noisy sine",
            Box::new(
                CpuOnly::new(TsbsConfig {
                    wave: Some(Wave {
                        shape: Shape::Sine,
                        period_ns: 600_000_000_000,
                        noise: 0.02,
                    }),
                    ..tsbs(13, 10, seed)
                })
                .unwrap(),
            ),
        ),
    ]
}

/// Every batch of the data set's sources, worker by worker, filled `batch_rows` at most.
fn each_batch(w: &dyn Workload, workers: usize, batch_rows: usize, mut f: impl FnMut(&Batch)) {
    for worker in 0..workers {
        let mut source = w.source(worker, workers);
        let mut batch = Batch::for_schema(w.schema());
        loop {
            batch.clear();
            let n = source.fill(&mut batch, batch_rows);
            assert_eq!(n, batch.rows(), "fill returns what it appended");
            assert!(n <= batch_rows, "fill appended {n} > {batch_rows} rows");
            if n == 0 {
                break;
            }
            f(&batch);
        }
    }
}

/// The devices the sources count as started (their first row in a batch) over the
/// whole data set; the series started (a device's fields in a table) beside.
fn started_series(w: &dyn Workload, workers: usize, batch_rows: usize) -> (u64, u64) {
    let (mut n, mut series) = (0, 0);
    each_batch(w, workers, batch_rows, |batch| {
        n += batch.devices_started;
        series += batch.series_started;
    });
    (n, series)
}

/// Every row of the data set as text, sorted: table, device, time and every value.
fn rows(w: &dyn Workload, workers: usize, batch_rows: usize) -> Vec<String> {
    let mut out = Vec::new();
    each_batch(w, workers, batch_rows, |batch| {
        for (ti, t) in batch.tables.iter().enumerate() {
            for r in 0..t.rows() {
                let mut line = format!("{ti}|{}|{}", t.device[r], t.ts[r]);
                for c in &t.columns {
                    assert_eq!(c.values.len(), t.rows(), "one value per row");
                    if !c.is_valid(r) {
                        line.push_str("|-");
                        continue;
                    }
                    match &c.values {
                        ColumnValues::Bool(v) => line.push_str(&format!("|{}", v[r])),
                        ColumnValues::Int(v) => line.push_str(&format!("|{}", v[r])),
                        ColumnValues::Float(v) => line.push_str(&format!("|{}", v[r])),
                        ColumnValues::Str(v) => line.push_str(&format!("|{}", v.get(r))),
                    }
                }
                out.push(line);
            }
        }
    });
    out.sort();
    out
}

#[test]
fn same_rows_for_1_3_and_8_workers_and_any_batch_size() {
    for (name, w) in workloads(123) {
        let one = rows(w.as_ref(), 1, 1000);
        assert!(!one.is_empty());
        if let Some(total) = w.total_rows() {
            assert_eq!(one.len() as u64, total, "{name}: total_rows is exact");
        }
        for (workers, batch) in [(3, 7), (8, 1), (8, 333)] {
            assert_eq!(
                rows(w.as_ref(), workers, batch),
                one,
                "{name}: {workers} workers, batch {batch}"
            );
        }
    }
}

#[test]
fn the_seed_decides_the_values() {
    for ((name, a), (_, b)) in workloads(1).into_iter().zip(workloads(2)) {
        let a1 = rows(a.as_ref(), 1, 500);
        assert_eq!(a1, rows(a.as_ref(), 2, 64), "{name}");
        assert_ne!(
            a1,
            rows(b.as_ref(), 1, 500),
            "{name}: other seed, other data"
        );
    }
}

#[test]
fn more_workers_than_devices_is_fine() {
    let w = CpuOnly::new(tsbs(2, 1, 1)).unwrap();
    assert_eq!(rows(&w, 5, 10), rows(&w, 1, 10));
}

/// Per measurement of a TSBS file: its tag keys, and its field keys with whether the
/// value is an integer (`i` suffix).
type Shapes = BTreeMap<String, (BTreeSet<String>, BTreeMap<String, bool>)>;

fn sample_shapes(file: &str) -> Shapes {
    let path = format!("{}/../../testdata/tsbs/{file}", env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect(&path))
        .read_to_string(&mut text)
        .unwrap();
    let mut shapes = Shapes::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let (key, fields) = (parts.next().unwrap(), parts.next().unwrap());
        let mut key = key.split(',');
        let entry = shapes.entry(key.next().unwrap().to_string()).or_default();
        for tag in key {
            entry.0.insert(tag.split('=').next().unwrap().to_string());
        }
        for field in fields.split(',') {
            let (k, v) = field.split_once('=').unwrap();
            entry.1.insert(k.to_string(), v.ends_with('i'));
        }
    }
    shapes
}

/// The same shapes from a schema, as line protocol writes it: string tags are tags,
/// numeric tags (iot's capacities) become fields, as TSBS does.
fn schema_shapes(w: &dyn Workload) -> Shapes {
    let mut shapes = Shapes::new();
    for t in &w.schema().tables {
        let entry = shapes.entry(t.name.clone()).or_default();
        for tag in &t.tags {
            match tag.data_type.storage() {
                Storage::Str => entry.0.insert(tag.name.clone()),
                s => entry
                    .1
                    .insert(tag.name.clone(), s == Storage::Int)
                    .is_none(),
            };
        }
        for f in &t.fields {
            entry
                .1
                .insert(f.name.clone(), f.data_type.storage() == Storage::Int);
        }
    }
    shapes
}

#[test]
fn tsbs_measurement_tag_and_field_names_and_types_match_tsbs() {
    let cases: [(&str, Box<dyn Workload>); 3] = [
        (
            "cpu-only-seed123-scale10-1h.influx.gz",
            Box::new(CpuOnly::new(tsbs(10, 60, 123)).unwrap()),
        ),
        (
            "devops-seed123-scale2-1h.influx.gz",
            Box::new(Devops::new(tsbs(2, 60, 123)).unwrap()),
        ),
        (
            "iot-seed123-scale4-1h.influx.gz",
            Box::new(Iot::new(tsbs(4, 60, 123), IotOptions::default()).unwrap()),
        ),
    ];
    for (file, w) in cases {
        assert_eq!(schema_shapes(w.as_ref()), sample_shapes(file), "{file}");
    }
}

#[test]
fn tsbs_row_counts_match_tsbs_files() {
    // cpu-only scale 10 and devops scale 2 over one hour at 10 s, as TSBS wrote them.
    assert_eq!(
        CpuOnly::new(tsbs(10, 60, 123)).unwrap().total_rows(),
        Some(3_600)
    );
    assert_eq!(
        Devops::new(tsbs(2, 60, 123)).unwrap().total_rows(),
        Some(6_480)
    );
    // iot loses about as many rows as TSBS's file does (2,607 of 2,880).
    let iot = Iot::new(tsbs(4, 60, 123), IotOptions::default()).unwrap();
    let n = iot.total_rows().unwrap();
    assert!((2_500..2_720).contains(&n), "{n}");
}

/// Series churn: a host slot's device is replaced by a new one (a new number, so new
/// tags) every lifetime, the slots staggered so that the ratio asked for turns over per
/// churn interval; the rows are the same for any worker count, the devices written are
/// counted, and the data set's devices and the stored check's scope cover every one.
#[test]
fn churn_replaces_the_ratio_of_hosts_per_interval_the_same_for_any_workers() {
    use tsload_workload::Churn;
    let scale = 20u32;
    // A tenth of the hosts every minute: each lives 10 minutes; the data spans 30.
    let mut cfg = tsbs(scale, 30, 5);
    cfg.churn = Some(Churn::of_ratio(0.1, 60_000_000_000));
    // Late and duplicate rows go with churn: a held row is due by its device's last.
    let late = TsbsConfig {
        arrival: Arrival {
            out_of_order_ratio: 0.1,
            out_of_order_max_steps: 4,
            duplicate_ratio: 0.05,
        },
        ..cfg
    };
    for (name, w) in [
        (
            "cpu-only",
            Box::new(CpuOnly::new(cfg).unwrap()) as Box<dyn Workload>,
        ),
        ("devops", Box::new(Devops::new(cfg).unwrap())),
        (
            "cpu-only, late and twice",
            Box::new(CpuOnly::new(late).unwrap()),
        ),
        (
            "iot, in order",
            Box::new(Iot::new(cfg, IotOptions::default()).unwrap()),
        ),
        (
            "iot, late as TSBS's",
            Box::new(
                Iot::new(
                    TsbsConfig {
                        arrival: IOT_ARRIVAL,
                        ..cfg
                    },
                    IotOptions::default(),
                )
                .unwrap(),
            ),
        ),
    ] {
        assert!(w.counts_devices(), "{name}");
        let one = rows(w.as_ref(), 1, 1000);
        // Slot d turns over at 30 s x (20k - d) (k = 1, 2, 3) within the 30 minutes:
        // 20 + 20 + 19 times.
        // Every table of every device is written within its life here: a series per
        // field of each.
        let fields = w.schema().field_count() as u64;
        for (workers, batch) in [(1, 1000), (3, 7), (8, 333)] {
            assert_eq!(
                started_series(w.as_ref(), workers, batch),
                (79, 79 * fields),
                "{name}: {workers}"
            );
        }
        for (workers, batch) in [(3, 7), (8, 333)] {
            assert_eq!(
                rows(w.as_ref(), workers, batch),
                one,
                "{name}: {workers} workers"
            );
        }
        if name.starts_with("iot") || name.contains("late") {
            // Each device's rows within its own life, lateness and copies included.
            let a = arrived(w.as_ref(), 3, 97);
            assert_eq!(a.late > 0, name.contains("late"), "{name}: {a:?}");
            assert_eq!(a.duplicates > 0, name.contains("twice"), "{name}: {a:?}");
            // Late by at most 6 of iot's intervals, beyond a missing row's gap.
            assert!(a.most_behind <= 10 * 10_000_000_000, "{name}: {a:?}");
            continue;
        }
        // Distinct devices, and how many are written in each minute of data time.
        let mut per_minute: BTreeMap<i64, BTreeSet<u32>> = BTreeMap::new();
        for line in &one {
            let mut parts = line.split('|').skip(1);
            let device: u32 = parts.next().unwrap().parse().unwrap();
            let ts: i64 = parts.next().unwrap().parse().unwrap();
            per_minute
                .entry((ts - START) / 60_000_000_000)
                .or_default()
                .insert(device);
        }
        let all: BTreeSet<u32> = per_minute.values().flatten().copied().collect();
        // 20 at the start, one new every 30 s from 30 s on.
        assert_eq!(all.len(), 79, "{name}");
        assert!(all.iter().all(|&d| d < w.schema().device_count), "{name}");
        let scope = w.scope().devices.unwrap();
        assert!(all.iter().all(|&d| scope.contains(d)), "{name}");
        let mut seen = BTreeSet::new();
        for (minute, devices) in &per_minute {
            // A tenth of the 20 slots turn over each minute, at its start and 30 s in:
            // 2 new hosts, and the second one's predecessor sent earlier in the minute
            // (the first minute: the 20 first hosts and one turnover, at 30 s).
            let new: Vec<_> = devices.difference(&seen).copied().collect();
            let expected_new = if *minute > 0 { 2 } else { 21 };
            assert_eq!(new.len(), expected_new, "{name}: minute {minute}: {new:?}");
            assert_eq!(devices.len(), 21, "{name}: minute {minute}");
            seen.extend(devices.iter().copied());
        }
        // The tags of a new device are its own: host_<number>.
        let mut tags = Vec::new();
        w.schema().tags.device_tags(45, &mut tags);
        assert_eq!(tags[0].to_string(), "host_45");
    }
    // Without churn nothing changes: the devices are the slots.
    let plain = CpuOnly::new(tsbs(scale, 30, 5)).unwrap();
    assert!(!plain.counts_devices());
    assert_eq!(plain.schema().device_count, scale);
}

/// What the rows sent show of their arrival: rows repeating a (table, device, time) sent
/// before are duplicates; other rows older than their device's newest sent are late.
#[derive(Debug, Default)]
struct Arrived {
    originals: u64,
    late: u64,
    duplicates: u64,
    /// The most a late row was behind its device's newest row, ns.
    most_behind: i64,
    /// What the batches said they held.
    said_late: u64,
    said_duplicates: u64,
}

fn arrived(w: &dyn Workload, workers: usize, batch_rows: usize) -> Arrived {
    let mut a = Arrived::default();
    let mut seen = BTreeSet::new();
    let mut newest: BTreeMap<(usize, u32), i64> = BTreeMap::new();
    each_batch(w, workers, batch_rows, |batch| {
        a.said_late += batch.late_rows;
        a.said_duplicates += batch.duplicate_rows;
        for (ti, t) in batch.tables.iter().enumerate() {
            for r in 0..t.rows() {
                let (device, ts) = (t.device[r], t.ts[r]);
                if !seen.insert((ti, device, ts)) {
                    a.duplicates += 1;
                    continue;
                }
                a.originals += 1;
                let newest = newest.entry((ti, device)).or_insert(i64::MIN);
                if ts < *newest {
                    a.late += 1;
                    a.most_behind = a.most_behind.max(*newest - ts);
                }
                *newest = (*newest).max(ts);
            }
        }
    });
    a
}

/// Whether `k` of `n` draws is within 4.5 standard deviations of a binomial's mean at
/// chance `p` (about 1 in 150,000 outside by chance; the data are a function of the seed,
/// so a pass is a pass every time).
fn binomial(k: u64, n: u64, p: f64) -> bool {
    let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    (k as f64 - mean).abs() <= 4.5 * sd
}

/// `out_of_order_ratio` and `duplicate_ratio` on every workload: the shares measured in
/// the rows sent match the keys within binomial bounds, the batches count exactly what the
/// rows show, and a late row is at most `out_of_order_max_steps` intervals behind.
#[test]
fn late_and_duplicate_rows_match_their_ratios_within_binomial_bounds() {
    let arrival = Arrival {
        out_of_order_ratio: 0.1,
        out_of_order_max_steps: 4,
        duplicate_ratio: 0.05,
    };
    let step = 10_000_000_000;
    for seed in [1, 2] {
        let cases: [(&str, Box<dyn Workload>, Option<i64>); 4] = [
            (
                "cpu-only",
                Box::new(
                    CpuOnly::new(TsbsConfig {
                        arrival,
                        ..tsbs(20, 80, seed)
                    })
                    .unwrap(),
                ),
                Some(4 * step),
            ),
            (
                "devops",
                Box::new(
                    Devops::new(TsbsConfig {
                        arrival,
                        ..tsbs(4, 50, seed)
                    })
                    .unwrap(),
                ),
                Some(4 * step),
            ),
            (
                "iot",
                Box::new(
                    Iot::new(
                        TsbsConfig {
                            arrival,
                            ..tsbs(10, 100, seed)
                        },
                        IotOptions::default(),
                    )
                    .unwrap(),
                ),
                None,
            ),
            (
                "custom",
                Box::new(
                    Custom::new(CustomConfig {
                        seed,
                        childtable_count: 20,
                        insert_rows: 500,
                        interlace_rows: 7,
                        arrival,
                        ..CustomConfig::default()
                    })
                    .unwrap(),
                ),
                Some(4 * step),
            ),
        ];
        for (name, w, most) in cases {
            let a = arrived(w.as_ref(), 3, 97);
            eprintln!("{name} seed {seed}: {a:?}");
            assert!(a.originals > 9_000, "{name}: {a:?}");
            assert_eq!(
                (a.said_late, a.said_duplicates),
                (a.late, a.duplicates),
                "{name}"
            );
            assert!(
                binomial(a.late, a.originals, 0.1),
                "{name} seed {seed}: late {a:?}"
            );
            assert!(
                binomial(a.duplicates, a.originals, 0.05),
                "{name} seed {seed}: {a:?}"
            );
            if let Some(most) = most {
                assert!(a.most_behind <= most, "{name}: {a:?}");
            }
            assert_eq!(
                arrived(w.as_ref(), 1, 1000).late,
                a.late,
                "{name}: the same rows late for any worker count"
            );
        }
    }
}

/// Pods (`pods_per_host`): each host's rows carry one of its pods in turn, so the series
/// (devices: host and pod) multiply while the rows per interval stay the hosts'; the same
/// rows for any worker count, every pod written and counted, named by its host's tags and
/// a `pod` tag.
#[test]
fn pods_multiply_the_devices_at_the_same_rows_the_same_for_any_workers() {
    let (scale, pods) = (5u32, 3u32);
    let cfg = TsbsConfig {
        pods,
        ..tsbs(scale, 30, 9)
    };
    for (name, w) in [
        (
            "cpu-only",
            Box::new(CpuOnly::new(cfg).unwrap()) as Box<dyn Workload>,
        ),
        ("devops", Box::new(Devops::new(cfg).unwrap())),
    ] {
        let one = rows(w.as_ref(), 1, 1000);
        let (devices, fields) = (u64::from(scale * pods), w.schema().field_count() as u64);
        for (workers, batch) in [(1, 1000), (3, 7)] {
            assert_eq!(
                started_series(w.as_ref(), workers, batch),
                (devices, devices * fields),
                "{name}"
            );
        }
        assert_eq!(w.schema().device_count, scale * pods, "{name}");
        // The hosts' rows: 180 steps of 5 hosts (devops: in 9 tables each).
        let tables = w.schema().tables.len();
        assert_eq!(one.len(), 180 * scale as usize * tables, "{name}");
        for (workers, batch) in [(3, 7), (8, 333)] {
            assert_eq!(rows(w.as_ref(), workers, batch), one, "{name} {workers}");
        }
        // Each pod of each host has a third of its host's rows.
        let mut per_device: BTreeMap<u32, usize> = BTreeMap::new();
        for line in &one {
            let device: u32 = line.split('|').nth(1).unwrap().parse().unwrap();
            *per_device.entry(device).or_default() += 1;
        }
        assert_eq!(per_device.len(), (scale * pods) as usize, "{name}");
        assert!(
            per_device.values().all(|n| *n == 60 * tables),
            "{name}: {per_device:?}"
        );
        let tags = w.schema().device_tags(7);
        assert_eq!(tags[0].to_string(), "host_2", "{name}");
        let pod = w.schema().tables[0]
            .tags
            .iter()
            .find(|t| t.name == "pod")
            .expect("a pod tag");
        assert_eq!(tags[pod.slot].to_string(), "pod_1", "{name}");
        assert_eq!(
            w.schema().tags.key_slot(),
            None,
            "a host names no device alone"
        );
    }
    // Without pods nothing changes: no pod tag.
    let plain = CpuOnly::new(tsbs(scale, 30, 9)).unwrap();
    assert!(
        plain.schema().tables[0]
            .tags
            .iter()
            .all(|t| t.name != "pod")
    );
}

/// A batch with late rows reaches no further into the data than one without: live time
/// sends a batch of one reading per device once its last row's time has come, so a row
/// of a later step would leave before its time.
#[test]
fn late_rows_take_no_row_of_a_later_step_into_a_batch() {
    let cfg = TsbsConfig {
        arrival: Arrival {
            out_of_order_ratio: 0.2,
            out_of_order_max_steps: 6,
            duplicate_ratio: 0.1,
        },
        ..tsbs(10, 10, 3)
    };
    let w = CpuOnly::new(cfg).unwrap();
    let step = cfg.interval_ns;
    let (mut batches, mut filled) = (0i64, 0);
    each_batch(&w, 1, 10, |batch| {
        let newest = batch.tables[0].ts.iter().max().copied().unwrap();
        // The k-th batch of 10 hosts' rows holds none past step k.
        assert!(
            newest <= START + batches * step,
            "batch {batches}: {newest}"
        );
        batches += 1;
        filled += batch.rows();
    });
    // 60 steps of 10 hosts, a tenth twice; some batches smaller where rows were held.
    assert!(filled > 600 && batches >= 60, "{filled} rows in {batches}");
}

/// Series churn on the custom schema: each child table slot's table replaced every
/// lifetime of data time (a new name, so new series), with and without late and duplicate
/// rows: the same rows for any worker count, and every table written counted once.
#[test]
fn custom_tables_churn_the_same_for_any_workers() {
    use tsload_workload::Churn;
    for arrival in [
        Arrival::default(),
        Arrival {
            out_of_order_ratio: 0.1,
            out_of_order_max_steps: 3,
            duplicate_ratio: 0.05,
        },
    ] {
        let w = Custom::new(CustomConfig {
            childtable_count: 10,
            // 30 minutes at 10 s, a tenth of the tables replaced every minute.
            insert_rows: 180,
            interlace_rows: 7,
            churn: Some(Churn::of_ratio(0.1, 60_000_000_000)),
            arrival,
            ..CustomConfig::default()
        })
        .unwrap();
        assert!(w.counts_devices());
        let one = rows(&w, 1, 1000);
        assert_eq!(rows(&w, 3, 7), one, "{arrival:?}");
        let tables: BTreeSet<u32> = one
            .iter()
            .map(|l| l.split('|').nth(1).unwrap().parse().unwrap())
            .collect();
        // Slot 0 turns over at 10 and 20 minutes, slots 1-9 at 10, 20 and 30 less their
        // stagger.
        assert_eq!(tables.len(), 3 + 9 * 4, "{arrival:?}");
        let fields = w.schema().field_count() as u64;
        for (workers, batch) in [(1, 1000), (3, 7)] {
            assert_eq!(
                started_series(&w, workers, batch),
                (39, 39 * fields),
                "{arrival:?}: {workers}"
            );
        }
        let scope = w.scope().devices.unwrap();
        assert!(tables.iter().all(|&d| scope.contains(d)));
        assert_eq!(w.schema().device_tags(25)[0].to_string(), "d25");
    }
}

/// cpu-only's usage fields with a shape instead of TSBS's walk: a square is 0 for the
/// first half of each period and 100 for the second, each host's field at its own phase.
#[test]
fn cpu_only_usage_follows_its_shape() {
    let w = CpuOnly::new(TsbsConfig {
        wave: Some(Wave {
            shape: Shape::Square,
            period_ns: 600_000_000_000,
            noise: 0.0,
        }),
        ..tsbs(4, 60, 1)
    })
    .unwrap();
    let mut per_series: BTreeMap<(u32, usize), Vec<i64>> = BTreeMap::new();
    each_batch(&w, 2, 50, |batch| {
        let t = &batch.tables[0];
        for (f, c) in t.columns.iter().enumerate() {
            let ColumnValues::Int(v) = &c.values else {
                panic!()
            };
            for (row, value) in v.iter().enumerate() {
                per_series
                    .entry((t.device[row], f))
                    .or_default()
                    .push(*value);
            }
        }
    });
    assert_eq!(per_series.len(), 40);
    let mut firsts = BTreeSet::new();
    for (key, values) in &per_series {
        // An hour of 10 s rows: six periods, each half 0 and half 100.
        assert_eq!(values.iter().filter(|v| **v == 0).count(), 180, "{key:?}");
        assert_eq!(values.iter().filter(|v| **v == 100).count(), 180, "{key:?}");
        firsts.insert(values.iter().position(|v| *v == 100));
    }
    assert!(firsts.len() > 10, "each field its own phase: {firsts:?}");
}
