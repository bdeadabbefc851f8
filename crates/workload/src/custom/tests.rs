//! Tests of custom super tables: schema, interlacing, disorder, value specs and shapes.

use super::*;
use tsload_core::ColumnValues;

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
