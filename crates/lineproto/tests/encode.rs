//! Encodes hand-built schemas and batches and checks the lines byte for byte.

use std::borrow::Cow;
use std::sync::Arc;

use tsload_core::{
    Batch, Column, ColumnValues, DataType, FieldDef, Schema, StrValues, TableBatch, TableSchema,
    TagDef, TagSource, TagValue,
};
use tsload_lineproto::{LineEncoder, Precision};

/// Tag values per device, stored.
#[derive(Debug)]
struct VecTags(Vec<Vec<TagValue>>);

impl TagSource for VecTags {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.extend_from_slice(&self.0[device as usize]);
    }
}

fn s(v: &str) -> TagValue {
    TagValue::Str(Cow::Owned(v.to_string()))
}

fn table(name: &str, tags: &[&str], fields: &[(&str, DataType)]) -> TableSchema {
    TableSchema {
        name: name.to_string(),
        tags: tags
            .iter()
            .enumerate()
            .map(|(slot, n)| TagDef {
                name: n.to_string(),
                data_type: DataType::Varchar(32),
                slot,
            })
            .collect(),
        fields: fields
            .iter()
            .map(|(n, t)| FieldDef {
                name: n.to_string(),
                data_type: *t,
            })
            .collect(),
    }
}

fn schema(tables: Vec<TableSchema>, devices: Vec<Vec<TagValue>>) -> Arc<Schema> {
    Arc::new(Schema {
        tag_slots: devices.first().map_or(0, Vec::len),
        device_count: devices.len() as u32,
        tables,
        tags: Arc::new(VecTags(devices)),
    })
}

/// One field value of a hand-built row; `N` is null.
#[derive(Debug, Clone)]
enum V {
    I(i64),
    F(f64),
    B(bool),
    S(&'static str),
    N,
}

/// A hand-built row: device, timestamp, one value per field.
type Row = (u32, i64, Vec<V>);

/// Builds a batch for `schema` from (table index, rows) pairs.
fn batch(schema: &Schema, tables: &[(usize, Vec<Row>)]) -> Batch {
    let mut b = Batch::for_schema(schema);
    for (t, rows) in tables {
        let tb: &mut TableBatch = &mut b.tables[*t];
        for (device, ts, values) in rows {
            tb.device.push(*device);
            tb.ts.push(*ts);
            let row = tb.ts.len() - 1;
            assert_eq!(values.len(), tb.columns.len());
            for (c, v) in values.iter().enumerate() {
                let col = &mut tb.columns[c];
                match (&mut col.values, v) {
                    (ColumnValues::Int(x), V::I(v)) => x.push(*v),
                    (ColumnValues::Float(x), V::F(v)) => x.push(*v),
                    (ColumnValues::Bool(x), V::B(v)) => x.push(*v),
                    (ColumnValues::Str(x), V::S(v)) => x.push(v),
                    (ColumnValues::Int(x), V::N) => x.push(0),
                    (ColumnValues::Float(x), V::N) => x.push(0.0),
                    (ColumnValues::Bool(x), V::N) => x.push(false),
                    (ColumnValues::Str(x), V::N) => x.push(""),
                    (c, v) => panic!("{v:?} in {c:?}"),
                }
                if matches!(v, V::N) {
                    tb.set_null(c, row);
                }
            }
        }
        tb.finish_validity();
    }
    b
}

fn encode(schema: &Arc<Schema>, precision: Precision, b: &Batch) -> String {
    let mut out = Vec::new();
    LineEncoder::new(schema.clone(), precision).encode(b, &mut out);
    String::from_utf8(out).unwrap()
}

const TSBS_T0: i64 = 1_451_606_400_000_000_000;

const HOST_TAGS: &[&str] = &[
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

fn host_0(env: &str) -> Vec<TagValue> {
    [
        "host_0",
        "eu-central-1",
        "eu-central-1a",
        "6",
        "Ubuntu15.10",
        "x86",
        "SF",
        "19",
        "1",
        env,
    ]
    .iter()
    .map(|v| s(v))
    .collect()
}

#[test]
fn tsbs_cpu_row_byte_for_byte() {
    let fields = [
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
    ]
    .map(|n| (n, DataType::BigInt));
    let sc = schema(vec![table("cpu", HOST_TAGS, &fields)], vec![host_0("test")]);
    let values = [58, 2, 24, 61, 22, 63, 6, 44, 80, 38].map(V::I).to_vec();
    let b = batch(&sc, &[(0, vec![(0, TSBS_T0, values)])]);
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        "cpu,hostname=host_0,region=eu-central-1,datacenter=eu-central-1a,rack=6,os=Ubuntu15.10,arch=x86,team=SF,service=19,service_version=1,service_environment=test usage_user=58i,usage_system=2i,usage_idle=24i,usage_nice=61i,usage_iowait=22i,usage_irq=63i,usage_softirq=6i,usage_steal=44i,usage_guest=80i,usage_guest_nice=38i 1451606400000000000\n"
    );
}

#[test]
fn tsbs_mem_row_byte_for_byte() {
    let mut fields: Vec<_> = ["total", "available", "used", "free", "cached", "buffered"]
        .map(|n| (n, DataType::BigInt))
        .to_vec();
    fields.extend(
        ["used_percent", "available_percent", "buffered_percent"].map(|n| (n, DataType::Double)),
    );
    let sc = schema(
        vec![table("mem", HOST_TAGS, &fields)],
        vec![host_0("production")],
    );
    let values = vec![
        V::I(8589934592),
        V::I(7249247244),
        V::I(1340687348),
        V::I(7249247244),
        V::I(7367310289),
        V::I(7268934073),
        V::F(15.607654908671975),
        V::F(84.39234509132802),
        V::F(84.62152994470671),
    ];
    let b = batch(&sc, &[(0, vec![(0, TSBS_T0, values)])]);
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        "mem,hostname=host_0,region=eu-central-1,datacenter=eu-central-1a,rack=6,os=Ubuntu15.10,arch=x86,team=SF,service=19,service_version=1,service_environment=production total=8589934592i,available=7249247244i,used=1340687348i,free=7249247244i,cached=7367310289i,buffered=7268934073i,used_percent=15.607654908671975,available_percent=84.39234509132802,buffered_percent=84.62152994470671 1451606400000000000\n"
    );
}

/// TSBS iot: five string tags and three float tags (slots 5..8), two tables.
fn iot_schema() -> Arc<Schema> {
    let tags = [
        "name",
        "fleet",
        "driver",
        "model",
        "device_version",
        "load_capacity",
        "fuel_capacity",
        "nominal_fuel_consumption",
    ];
    let readings = [
        "latitude",
        "longitude",
        "elevation",
        "velocity",
        "heading",
        "grade",
        "fuel_consumption",
    ]
    .map(|n| (n, DataType::Double));
    let diagnostics = [
        ("fuel_state", DataType::Double),
        ("status", DataType::BigInt),
    ];
    let mut tables = vec![
        table("readings", &tags, &readings),
        table("diagnostics", &tags, &diagnostics),
    ];
    for t in &mut tables {
        for tag in &mut t.tags[5..] {
            tag.data_type = DataType::Double;
        }
    }
    let truck = |name, driver, model, version, load, fuel, nominal| {
        vec![
            s(name),
            s("South"),
            s(driver),
            s(model),
            s(version),
            TagValue::Float(load),
            TagValue::Float(fuel),
            TagValue::Float(nominal),
        ]
    };
    schema(
        tables,
        vec![
            truck("truck_0", "Trish", "H-2", "v2.3", 1500.0, 150.0, 12.0),
            truck("truck_1", "Albert", "F-150", "v1.5", 2000.0, 200.0, 15.0),
        ],
    )
}

const READINGS_1: &str = "readings,name=truck_1,fleet=South,driver=Albert,model=F-150,device_version=v1.5 load_capacity=2000,fuel_capacity=200,nominal_fuel_consumption=15,latitude=72.45258,longitude=68.83761,elevation=255,velocity=0,heading=181,grade=0,fuel_consumption=25 1451606400000000000\n";
const DIAGNOSTICS_0: &str = "diagnostics,name=truck_0,fleet=South,driver=Trish,model=H-2,device_version=v2.3 load_capacity=1500,fuel_capacity=150,nominal_fuel_consumption=12,fuel_state=1,status=0i 1451606400000000000\n";

fn readings_1() -> Row {
    let v = [72.45258, 68.83761, 255.0, 0.0, 181.0, 0.0, 25.0].map(V::F);
    (1, TSBS_T0, v.to_vec())
}

fn diagnostics_0() -> Row {
    (0, TSBS_T0, vec![V::F(1.0), V::I(0)])
}

#[test]
fn tsbs_iot_rows_byte_for_byte_with_float_tags_as_leading_fields() {
    let sc = iot_schema();
    let b = batch(&sc, &[(0, vec![readings_1()]), (1, vec![diagnostics_0()])]);
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        format!("{READINGS_1}{DIAGNOSTICS_0}")
    );
}

#[test]
fn two_tables_share_device_tags_but_not_prefixes() {
    let sc = iot_schema();
    let mut enc = LineEncoder::new(sc.clone(), Precision::Ns);
    let mut out = Vec::new();
    // Device 1 in diagnostics after it was cached in readings, and the other way round.
    let d1 = (1, TSBS_T0, vec![V::F(0.5), V::I(3)]);
    let mut r0 = readings_1();
    r0.0 = 0;
    let b = batch(
        &sc,
        &[(0, vec![readings_1(), r0]), (1, vec![d1, diagnostics_0()])],
    );
    enc.encode(&b, &mut out);
    // What was sent: each line's own fields (7 of readings, 2 of diagnostics) and its
    // truck's 3 numeric tags, which line protocol carries as fields. The batch counted 18.
    assert_eq!(b.metrics(), 2 * 7 + 2 * 2);
    assert_eq!(enc.fields_written(), 2 * (7 + 3) + 2 * (2 + 3));
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(format!("{}\n", lines[0]), READINGS_1);
    assert!(lines[1].starts_with(
        "readings,name=truck_0,fleet=South,driver=Trish,model=H-2,device_version=v2.3 load_capacity=1500,"
    ));
    assert_eq!(
        lines[2],
        "diagnostics,name=truck_1,fleet=South,driver=Albert,model=F-150,device_version=v1.5 load_capacity=2000,fuel_capacity=200,nominal_fuel_consumption=15,fuel_state=0.5,status=3i 1451606400000000000"
    );
    assert_eq!(format!("{}\n", lines[3]), DIAGNOSTICS_0);
}

#[test]
fn escapes_every_kind_of_name_and_value() {
    let t = table(
        r"my meas,ure=x\y",
        &[r"tag key,=\", "t"],
        &[
            (r#"f key,=\""#, DataType::Varchar(64)),
            ("n", DataType::BigInt),
        ],
    );
    let sc = schema(vec![t], vec![vec![s(r#"v a,l=u\e""#), s("plain")]]);
    let b = batch(
        &sc,
        &[(
            0,
            vec![(0, 7, vec![V::S("say \"hi\", a=b\\c\nnext"), V::I(-5)])],
        )],
    );
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        concat!(
            r"my\ meas\,ure=x\\y,tag\ key\,\=\\=v\ a\,l\=u\\e",
            "\"",
            r",t=plain f\ key\,\=\\",
            "\"",
            r#"="say \"hi\", a=b\\c\nnext",n=-5i 7"#,
            "\n"
        )
    );
}

#[test]
fn every_field_type() {
    let t = table(
        "m",
        &[],
        &[
            ("i", DataType::BigInt),
            ("small", DataType::TinyInt),
            ("f1", DataType::Double),
            ("f2", DataType::Double),
            ("f3", DataType::Double),
            ("f4", DataType::Double),
            ("f5", DataType::Float),
            ("f6", DataType::Double),
            ("b", DataType::Bool),
            ("s", DataType::Varchar(8)),
        ],
    );
    let sc = schema(vec![t], vec![vec![]]);
    let b = batch(
        &sc,
        &[(
            0,
            vec![
                (
                    0,
                    1,
                    vec![
                        V::I(i64::MIN),
                        V::I(-7),
                        V::F(2000.0),
                        V::F(0.1),
                        V::F(1e20),
                        V::F(1e-7),
                        V::F(-3.25),
                        V::F(0.0),
                        V::B(true),
                        V::S("x"),
                    ],
                ),
                (
                    0,
                    2,
                    vec![
                        V::I(i64::MAX),
                        V::I(0),
                        V::F(f64::NAN),
                        V::F(f64::INFINITY),
                        V::F(f64::NEG_INFINITY),
                        V::F(15.5),
                        V::F(f64::NAN),
                        V::F(-0.0),
                        V::B(false),
                        V::S(""),
                    ],
                ),
            ],
        )],
    );
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        concat!(
            "m i=-9223372036854775808i,small=-7i,f1=2000,f2=0.1,f3=100000000000000000000,",
            "f4=0.0000001,f5=-3.25,f6=0,b=true,s=\"x\" 1\n",
            "m i=9223372036854775807i,small=0i,f4=15.5,f6=-0,b=false,s=\"\" 2\n",
        )
    );
}

#[test]
fn null_fields_are_skipped_and_rows_without_fields_dropped() {
    let t = table(
        "m",
        &["host"],
        &[
            ("a", DataType::BigInt),
            ("b", DataType::Double),
            ("c", DataType::Bool),
            ("d", DataType::Varchar(8)),
        ],
    );
    let sc = schema(vec![t], vec![vec![s("h0")]]);
    let b = batch(
        &sc,
        &[(
            0,
            vec![
                (0, 1, vec![V::N, V::F(1.5), V::B(true), V::S("s")]),
                (0, 2, vec![V::I(1), V::N, V::B(false), V::N]),
                (0, 3, vec![V::N, V::N, V::N, V::N]),
                (0, 4, vec![V::N, V::F(f64::NAN), V::N, V::N]),
                (0, 5, vec![V::N, V::N, V::N, V::S("last")]),
                (0, 6, vec![V::I(2), V::N, V::N, V::N]),
            ],
        )],
    );
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        concat!(
            "m,host=h0 b=1.5,c=true,d=\"s\" 1\n",
            "m,host=h0 a=1i,c=false 2\n",
            "m,host=h0 d=\"last\" 5\n",
            "m,host=h0 a=2i 6\n",
        )
    );
}

#[test]
fn numeric_tags_lead_the_fields_and_empty_tags_are_omitted() {
    let t = table(
        "m",
        &["a", "num", "b", "flt", "c", "flag", "d"],
        &[("x", DataType::BigInt)],
    );
    let devices = vec![
        vec![
            s("A"),
            TagValue::Int(-42),
            TagValue::Null,
            TagValue::Float(2.5),
            s(""),
            TagValue::Bool(true),
            s("D"),
        ],
        vec![
            TagValue::Null,
            TagValue::Null,
            s("B"),
            TagValue::Float(f64::NAN),
            s("C"),
            TagValue::Bool(false),
            TagValue::Null,
        ],
        // Tag values shorter than the schema's slots read as null.
        vec![s("A")],
    ];
    let sc = schema(vec![t], devices);
    let b = batch(
        &sc,
        &[(
            0,
            vec![
                (0, 1, vec![V::I(1)]),
                (0, 2, vec![V::N]),
                (1, 3, vec![V::I(3)]),
                (1, 4, vec![V::N]),
                (2, 5, vec![V::I(5)]),
                (2, 6, vec![V::N]),
            ],
        )],
    );
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        concat!(
            "m,a=A,d=D num=-42i,flt=2.5,flag=true,x=1i 1\n",
            // The numeric tags alone make a line.
            "m,a=A,d=D num=-42i,flt=2.5,flag=true 2\n",
            "m,b=B,c=C flag=false,x=3i 3\n",
            "m,b=B,c=C flag=false 4\n",
            "m,a=A x=5i 5\n",
        )
    );
}

#[test]
fn each_precision() {
    let sc = schema(
        vec![table("m", &[], &[("x", DataType::BigInt)])],
        vec![vec![]],
    );
    let ts = [
        1_451_606_400_123_456_789,
        0,
        999,
        -1,
        -1_500_000_000,
        i64::MAX,
        i64::MIN,
    ];
    let rows = ts.iter().map(|&t| (0, t, vec![V::I(0)])).collect();
    let b = batch(&sc, &[(0, rows)]);
    let stamps = |p| -> Vec<String> {
        encode(&sc, p, &b)
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        stamps(Precision::Ns),
        ts.iter().map(|t| t.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        stamps(Precision::Us),
        [
            "1451606400123456",
            "0",
            "0",
            "-1",
            "-1500000",
            "9223372036854775",
            "-9223372036854776"
        ]
    );
    assert_eq!(
        stamps(Precision::Ms),
        [
            "1451606400123",
            "0",
            "0",
            "-1",
            "-1500",
            "9223372036854",
            "-9223372036855"
        ]
    );
    assert_eq!(
        stamps(Precision::S),
        [
            "1451606400",
            "0",
            "0",
            "-1",
            "-2",
            "9223372036",
            "-9223372037"
        ]
    );
}

#[test]
fn rows_of_one_time_and_times_that_come_back_each_get_their_own_timestamp() {
    let sc = schema(
        vec![table("m", &[], &[("x", DataType::BigInt)])],
        vec![vec![]],
    );
    // The encoder writes a time's digits once and copies them while the time stays.
    let ts = [
        i64::MIN,
        i64::MIN,
        10,
        10,
        1_999_999_999,
        10,
        i64::MIN,
        i64::MAX,
    ];
    let rows = ts.iter().map(|&t| (0, t, vec![V::I(0)])).collect();
    let b = batch(&sc, &[(0, rows)]);
    for (p, unit) in [(Precision::Ns, 1), (Precision::S, 1_000_000_000)] {
        let want: String = ts
            .iter()
            .map(|t| format!("m x=0i {}\n", t.div_euclid(unit)))
            .collect();
        assert_eq!(encode(&sc, p, &b), want, "{p:?}");
    }
}

/// A cpu-like schema with `n` devices whose tags depend on the device.
fn many_devices(n: u32) -> Arc<Schema> {
    let devices = (0..n)
        .map(|d| {
            vec![
                s(&format!("host_{d}")),
                if d.is_multiple_of(3) {
                    TagValue::Int(d as i64)
                } else {
                    s(&format!("r{}", d % 7))
                },
            ]
        })
        .collect();
    schema(
        vec![table(
            "cpu",
            &["hostname", "rack"],
            &[("u", DataType::BigInt)],
        )],
        devices,
    )
}

fn expected_line(d: u32, ts: i64) -> String {
    if d.is_multiple_of(3) {
        format!("cpu,hostname=host_{d} rack={d}i,u={ts}i {ts}\n")
    } else {
        format!("cpu,hostname=host_{d},rack=r{} u={ts}i {ts}\n", d % 7)
    }
}

#[test]
fn prefix_cache_is_transparent_across_batches_and_orders() {
    let sc = many_devices(300);
    let mut enc = LineEncoder::new(sc.clone(), Precision::Ns);
    // Ascending, descending, a jump into the middle, repeats, then descending from the top.
    let orders: Vec<Vec<u32>> = vec![
        (100..150).collect(),
        (0..120).rev().collect(),
        vec![200, 7, 200, 149, 150, 7],
        (0..300).rev().collect(),
        (0..300).collect(),
    ];
    let mut ts = 0;
    for devices in orders {
        let rows: Vec<_> = devices
            .iter()
            .map(|&d| {
                ts += 1;
                (d, ts, vec![V::I(ts)])
            })
            .collect();
        let expected: String = rows.iter().map(|r| expected_line(r.0, r.1)).collect();
        let b = batch(&sc, &[(0, rows)]);
        let mut out = b"kept\n".to_vec();
        enc.encode(&b, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), format!("kept\n{expected}"));
        // A fresh encoder writes the same.
        assert_eq!(encode(&sc, Precision::Ns, &b), expected);
    }
}

#[test]
fn empty_batches_write_nothing() {
    let sc = iot_schema();
    let mut out = b"x".to_vec();
    LineEncoder::new(sc.clone(), Precision::Ms).encode(&Batch::for_schema(&sc), &mut out);
    assert_eq!(out, b"x");
}

#[test]
fn string_columns_with_many_rows() {
    let sc = schema(
        vec![table("m", &[], &[("s", DataType::Varchar(16))])],
        vec![vec![]],
    );
    let mut b = Batch::for_schema(&sc);
    let tb = &mut b.tables[0];
    let mut vals = StrValues::default();
    for i in 0..5 {
        tb.device.push(0);
        tb.ts.push(i);
        vals.push(&"ab\"".repeat(i as usize));
    }
    tb.columns[0] = Column {
        values: ColumnValues::Str(vals),
        valid: vec![true, true, false, true, true],
    };
    assert_eq!(
        encode(&sc, Precision::Ns, &b),
        concat!(
            "m s=\"\" 0\n",
            "m s=\"ab\\\"\" 1\n",
            "m s=\"ab\\\"ab\\\"ab\\\"\" 3\n",
            "m s=\"ab\\\"ab\\\"ab\\\"ab\\\"\" 4\n",
        )
    );
}

#[test]
fn unsigned_columns_get_the_u_suffix() {
    use std::sync::Arc;
    use tsload_core::{
        Batch, ColumnValues, DataType, FieldDef, Schema, TableSchema, TagSource, TagValue,
    };
    #[derive(Debug)]
    struct None_;
    impl TagSource for None_ {
        fn device_tags(&self, _device: u32, out: &mut Vec<TagValue>) {
            out.clear();
        }
    }
    let schema = Arc::new(Schema {
        tables: vec![TableSchema {
            name: "m".into(),
            tags: vec![],
            fields: vec![
                FieldDef {
                    name: "u".into(),
                    data_type: DataType::UBigInt,
                },
                FieldDef {
                    name: "i".into(),
                    data_type: DataType::BigInt,
                },
            ],
        }],
        tag_slots: 0,
        device_count: 1,
        tags: Arc::new(None_),
    });
    let mut batch = Batch::for_schema(&schema);
    let t = &mut batch.tables[0];
    t.device.push(0);
    t.ts.push(7);
    t.columns[0].values = ColumnValues::Int(vec![9223372036854775807]);
    t.columns[1].values = ColumnValues::Int(vec![-1]);
    let mut out = Vec::new();
    tsload_lineproto::LineEncoder::new(schema, tsload_lineproto::Precision::Ns)
        .encode(&batch, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "m u=9223372036854775807u,i=-1i 7\n"
    );
}
