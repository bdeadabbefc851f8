//! Property tests of line protocol between `tsload-lineproto`'s encoder and file replay's
//! parser, and of the parser on its own:
//!
//! - random schemas and batches (names with every character line protocol escapes, all
//!   field types, floats at the extremes, numeric tags, nulls) encode, then replay from a
//!   file to exactly the same rows: measurement, tags, fields, values and timestamps;
//! - arbitrary bytes and arbitrary line-protocol-like lines never panic the replay: a file
//!   opens or fails with an error that names the file (and the line, for a bad line).
//!
//! A newline cannot be written inside a line: the encoder writes it as `\n` (backslash,
//! `n`), which InfluxDB and file replay read as those two characters. The round trip
//! expects exactly that. A measurement cannot start with `#` (the line would be a
//! comment) or a tab (leading blanks are skipped), so names are generated without.
//!
//! Budgets are fixed (`cases`) so that each property takes a few seconds at most in the
//! debug build; proptest prints the shrunk (minimal) failing input.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::Config;
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef, TagSource, TagValue};
use tsload_core::{Batch, ColumnValues, Workload};
use tsload_lineproto::{LineEncoder, Precision};
use tsload_workload::{FileReplay, ReplayInput, ReplayOptions};

fn config(cases: u32) -> Config {
    Config {
        cases,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------
// Generated schemas and batches

/// Characters of names and string values: plain ones, every one line protocol escapes,
/// and some that it does not (tab, `#`, `"` in names, multi-byte UTF-8).
const CHARS: &[char] = &[
    'a', 'b', 'Z', '0', '9', '_', '-', '.', ' ', ',', '=', '"', '\\', '\n', '\t', '\r', '#', 'é',
    '€', '𝄞', 'i', 'u', 't',
];

fn text(len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(CHARS), len)
        .prop_map(|c| c.into_iter().collect())
}

/// A name: not empty, and not starting with what would make a line a comment or be
/// skipped as a leading blank.
fn name() -> impl Strategy<Value = String> {
    text(1..7).prop_map(|n| {
        if n.starts_with(['#', '\t']) {
            format!("m{n}")
        } else {
            n
        }
    })
}

/// What a string reads back as: newlines become `\n`.
fn lossy(s: &str) -> String {
    s.replace('\n', "\\n")
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        1 => -1e6f64..1e6,
        1 => Just(-0.0f64),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN),
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(5e-324f64),
        1 => Just(1e21f64),
        1 => Just(123_456_789_012_345_680.0f64),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagKind {
    Str,
    Int,
    Float,
    Bool,
}

/// The raw material of one value; the column's or tag's type picks from it.
#[derive(Debug, Clone)]
struct Seed {
    null: bool,
    int: i64,
    float: f64,
    boolean: bool,
    text: String,
}

fn seed() -> impl Strategy<Value = Seed> {
    (
        proptest::bool::weighted(0.15),
        prop_oneof![any::<i64>(), -1000i64..1000, Just(i64::MIN), Just(i64::MAX)],
        float(),
        any::<bool>(),
        text(0..10),
    )
        .prop_map(|(null, int, float, boolean, text)| Seed {
            null,
            int,
            float,
            boolean,
            text,
        })
}

const FIELD_TYPES: &[DataType] = &[
    DataType::BigInt,
    DataType::Int,
    DataType::UBigInt,
    DataType::Double,
    DataType::Float,
    DataType::Bool,
    DataType::Varchar(16),
    DataType::NChar(16),
    DataType::Timestamp,
];

#[derive(Debug, Clone)]
struct Case {
    tables: Vec<TableSchema>,
    tag_kinds: Vec<TagKind>,
    /// Per device, per tag slot.
    devices: Vec<Vec<TagValue>>,
    /// (table, device, timestamp, one seed per field).
    rows: Vec<(usize, u32, i64, Vec<Seed>)>,
    precision: Precision,
}

fn tag_value(kind: TagKind, s: &Seed) -> TagValue {
    if s.null {
        return TagValue::Null;
    }
    match kind {
        TagKind::Str => TagValue::Str(Cow::Owned(s.text.clone())),
        TagKind::Int => TagValue::Int(s.int),
        TagKind::Float => TagValue::Float(s.float),
        TagKind::Bool => TagValue::Bool(s.boolean),
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=3,
        0usize..=4,
        1usize..=4,
        proptest::sample::select(vec![
            Precision::Ns,
            Precision::Us,
            Precision::Ms,
            Precision::S,
        ]),
    )
        .prop_flat_map(|(n_tables, n_slots, n_devices, precision)| {
            let kinds = proptest::collection::vec(
                proptest::sample::select(vec![
                    TagKind::Str,
                    TagKind::Str,
                    TagKind::Int,
                    TagKind::Float,
                    TagKind::Bool,
                ]),
                n_slots,
            );
            let tables = proptest::collection::vec(
                (
                    proptest::collection::vec(any::<bool>(), n_slots),
                    proptest::collection::vec(proptest::sample::select(FIELD_TYPES), 1..=4),
                ),
                n_tables,
            );
            // Enough names for every table, slot and field; distinct once read back.
            let names = proptest::collection::vec(name(), n_tables + n_slots + 4 * n_tables)
                .prop_filter("names distinct as read back", |names| {
                    let mut seen: Vec<String> = names.iter().map(|n| lossy(n)).collect();
                    seen.sort();
                    seen.dedup();
                    seen.len() == names.len()
                });
            let devices =
                proptest::collection::vec(proptest::collection::vec(seed(), n_slots), n_devices);
            let ts = if precision == Precision::Ns {
                any::<i64>().boxed()
            } else {
                // Whole units of the precision times it must fit 64-bit nanoseconds.
                (-4_000_000_000_000_000_000i64..4_000_000_000_000_000_000).boxed()
            };
            let rows = proptest::collection::vec(
                (
                    0..n_tables,
                    0..n_devices as u32,
                    prop_oneof![
                        ts,
                        Just(0i64),
                        1_451_606_400_000_000_000i64..1_451_606_500_000_000_000
                    ],
                    proptest::collection::vec(seed(), 4),
                ),
                0..16,
            );
            (Just(precision), kinds, tables, names, devices, rows)
        })
        .prop_map(|(precision, kinds, tables, names, devices, rows)| {
            let mut names = names.into_iter();
            let n_slots = kinds.len();
            let slot_names: Vec<String> = (0..n_slots).map(|_| names.next().unwrap()).collect();
            let tables: Vec<TableSchema> = tables
                .into_iter()
                .map(|(uses, types)| TableSchema {
                    name: names.next().unwrap(),
                    tags: (0..n_slots)
                        .filter(|&s| uses[s])
                        .map(|slot| TagDef {
                            name: slot_names[slot].clone(),
                            data_type: DataType::Varchar(16),
                            slot,
                        })
                        .collect(),
                    fields: types
                        .into_iter()
                        .map(|data_type| FieldDef {
                            name: names.next().unwrap(),
                            data_type,
                        })
                        .collect(),
                })
                .collect();
            let devices = devices
                .iter()
                .map(|d| {
                    d.iter()
                        .zip(&kinds)
                        .map(|(s, k)| tag_value(*k, s))
                        .collect()
                })
                .collect();
            Case {
                tables,
                tag_kinds: kinds,
                devices,
                rows,
                precision,
            }
        })
}

#[derive(Debug)]
struct Tags(Vec<Vec<TagValue>>);

impl TagSource for Tags {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.extend_from_slice(&self.0[device as usize]);
    }
}

/// A field value as compared (floats by their bits).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum V {
    I(i64),
    U(i64),
    F(u64),
    B(bool),
    S(String),
}

/// (measurement, sorted tags, sorted fields, timestamp in ns).
type Row = (String, Vec<(String, String)>, Vec<(String, V)>, i64);

impl Case {
    fn schema(&self) -> Arc<Schema> {
        Arc::new(Schema {
            tables: self.tables.clone(),
            tag_slots: self.tag_kinds.len(),
            device_count: self.devices.len() as u32,
            tags: Arc::new(Tags(self.devices.clone())),
        })
    }

    /// The batch of the rows, and the rows replay must give back (in encoding order).
    fn batch(&self, schema: &Schema) -> (Batch, Vec<Row>) {
        let mut batch = Batch::for_schema(schema);
        for (table, device, ts, seeds) in &self.rows {
            let tb = &mut batch.tables[*table];
            let row = tb.rows();
            tb.device.push(*device);
            tb.ts.push(*ts);
            for (c, (col, field)) in tb
                .columns
                .iter_mut()
                .zip(&self.tables[*table].fields)
                .enumerate()
            {
                let s = &seeds[c];
                match &mut col.values {
                    ColumnValues::Int(v) => v.push(if field.data_type == DataType::UBigInt {
                        s.int.checked_abs().unwrap_or(i64::MAX)
                    } else {
                        s.int
                    }),
                    ColumnValues::Float(v) => v.push(s.float),
                    ColumnValues::Bool(v) => v.push(s.boolean),
                    ColumnValues::Str(v) => v.push(&s.text),
                }
            }
            for (c, s) in seeds.iter().enumerate().take(tb.columns.len()) {
                if s.null {
                    tb.set_null(c, row);
                }
            }
        }
        for tb in &mut batch.tables {
            tb.finish_validity();
        }
        // What each row reads back as, table by table (the encoder's order).
        let divisor = self.precision.divisor();
        let mut want = Vec::new();
        for (table, tb) in self.tables.iter().zip(&batch.tables) {
            for r in 0..tb.rows() {
                let tags = &self.devices[tb.device[r] as usize];
                let mut row_tags = Vec::new();
                let mut fields = Vec::new();
                for tag in &table.tags {
                    match &tags[tag.slot] {
                        TagValue::Str(s) if !s.is_empty() => {
                            row_tags.push((lossy(&tag.name), lossy(s)));
                        }
                        TagValue::Int(v) => fields.push((lossy(&tag.name), V::I(*v))),
                        TagValue::Float(v) if v.is_finite() => {
                            fields.push((lossy(&tag.name), V::F(v.to_bits())));
                        }
                        TagValue::Bool(v) => fields.push((lossy(&tag.name), V::B(*v))),
                        _ => {}
                    }
                }
                for (col, field) in tb.columns.iter().zip(&table.fields) {
                    if !col.is_valid(r) {
                        continue;
                    }
                    let v = match &col.values {
                        ColumnValues::Int(v) if field.data_type == DataType::UBigInt => V::U(v[r]),
                        ColumnValues::Int(v) => V::I(v[r]),
                        ColumnValues::Float(v) if v[r].is_finite() => V::F(v[r].to_bits()),
                        ColumnValues::Float(_) => continue,
                        ColumnValues::Bool(v) => V::B(v[r]),
                        ColumnValues::Str(v) => V::S(lossy(v.get(r))),
                    };
                    fields.push((lossy(&field.name), v));
                }
                if fields.is_empty() {
                    continue; // no field, no line
                }
                row_tags.sort();
                fields.sort();
                let ts = tb.ts[r].div_euclid(divisor) * divisor;
                want.push((lossy(&table.name), row_tags, fields, ts));
            }
        }
        (batch, want)
    }
}

/// Every row a replay gives, as [`Row`]s (one worker, small batches).
fn replayed(w: &FileReplay) -> Vec<Row> {
    let schema = w.schema();
    let mut src = w.source(0, 1);
    let mut batch = Batch::for_schema(schema);
    let mut out = Vec::new();
    loop {
        batch.clear();
        let n = src.fill(&mut batch, 3);
        assert_eq!(n, batch.rows());
        if n == 0 {
            break;
        }
        for (table, tb) in schema.tables.iter().zip(&batch.tables) {
            for r in 0..tb.rows() {
                let tag_values = schema.device_tags(tb.device[r]);
                let mut tags: Vec<(String, String)> = table
                    .tags
                    .iter()
                    .filter_map(|t| match &tag_values[t.slot] {
                        TagValue::Str(s) => Some((t.name.clone(), s.to_string())),
                        TagValue::Null => None,
                        other => panic!("a replayed tag is {other:?}"),
                    })
                    .collect();
                let mut fields: Vec<(String, V)> = tb
                    .columns
                    .iter()
                    .zip(&table.fields)
                    .filter(|(c, _)| c.is_valid(r))
                    .map(|(c, f)| {
                        let v = match &c.values {
                            ColumnValues::Int(v) if f.data_type == DataType::UBigInt => V::U(v[r]),
                            ColumnValues::Int(v) => V::I(v[r]),
                            ColumnValues::Float(v) => V::F(v[r].to_bits()),
                            ColumnValues::Bool(v) => V::B(v[r]),
                            ColumnValues::Str(v) => V::S(v.get(r).to_string()),
                        };
                        (f.name.clone(), v)
                    })
                    .collect();
                tags.sort();
                fields.sort();
                out.push((table.name.clone(), tags, fields, tb.ts[r]));
            }
        }
    }
    out
}

fn write(dir: &Path, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join("case.influx");
    std::fs::write(&path, bytes).unwrap();
    path
}

proptest! {
    #![proptest_config(config(400))]

    /// Encode, write, replay: the same rows come back.
    #[test]
    fn encoded_batches_replay_to_the_same_rows(case in case()) {
        let schema = case.schema();
        let (batch, mut want) = case.batch(&schema);
        let mut out = Vec::new();
        LineEncoder::new(schema.clone(), case.precision).encode(&batch, &mut out);
        // One line per row that has a field: no newline leaks from a value.
        prop_assert_eq!(out.iter().filter(|b| **b == b'\n').count(), want.len());
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &out);
        let opts = ReplayOptions {
            precision_ns: case.precision.divisor(),
            ..ReplayOptions::default()
        };
        let opened = FileReplay::open(ReplayInput::Path(path), opts);
        if want.is_empty() {
            prop_assert!(opened.is_err());
            return Ok(());
        }
        let w = match opened {
            Ok(w) => w,
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "{}\n{}",
                    e.message,
                    String::from_utf8_lossy(&out)
                )));
            }
        };
        prop_assert_eq!(w.total_rows(), Some(want.len() as u64));
        let mut got = replayed(&w);
        prop_assert!(w.error().is_none());
        want.sort();
        got.sort();
        prop_assert_eq!(got, want, "lines:\n{}", String::from_utf8_lossy(&out));
    }
}

// ---------------------------------------------------------------------------------------
// Arbitrary input

/// Pieces of line protocol, so that random lines get deep into the parser.
const PIECES: &[&str] = &[
    "m",
    "cpu",
    ",",
    "=",
    " ",
    "  ",
    "\\",
    "\"",
    "\n",
    "\r\n",
    "#",
    "\t",
    "t",
    "f",
    "true",
    "FALSE",
    "1",
    "-",
    "+",
    "0",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "i",
    "u",
    ".",
    "e",
    "E",
    "1.5",
    "nan",
    "inf",
    "host",
    "a=1i",
    "b=\"x\"",
    " 1\n",
    "\\ ",
    "\\,",
    "\\=",
    "\\\"",
    "é",
    "\u{0}",
    "\u{ff}",
];

fn lines() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(proptest::sample::select(PIECES), 0..40)
            .prop_map(|p| p.concat().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..200),
        // Invalid UTF-8 in names and strings.
        1 => (proptest::collection::vec(any::<u8>(), 1..6), 0usize..3).prop_map(|(junk, at)| {
            let parts: [&[u8]; 3] = [b"m", b",t=v f=\"", b"\" 1\n"];
            let mut out = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                out.extend_from_slice(p);
                if i == at {
                    out.extend_from_slice(&junk);
                }
            }
            out
        }),
    ]
}

/// Opens `bytes` as a file: an error naming the file (and line), or rows; never a panic.
fn open_any(bytes: &[u8], gzip: bool, precision_ns: i64) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let bytes = if gzip {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    } else {
        bytes.to_vec()
    };
    let path = write(dir.path(), &bytes);
    let name = path.display().to_string();
    match FileReplay::open(
        ReplayInput::Path(path),
        ReplayOptions {
            precision_ns,
            ..ReplayOptions::default()
        },
    ) {
        Err(e) => {
            prop_assert_eq!(&e.key, "file");
            prop_assert!(e.message.starts_with(&name), "{}", e.message);
            let rest = &e.message[name.len()..];
            // `file:N: what`, `file: cannot read after line N`, or `file has no data lines`.
            let located = rest.starts_with(": cannot read")
                || rest == " has no data lines"
                || rest
                    .strip_prefix(':')
                    .and_then(|r| r.split_once(": "))
                    .is_some_and(|(n, what)| {
                        n.parse::<u64>().is_ok_and(|n| n >= 1) && !what.is_empty()
                    });
            prop_assert!(located, "{}", e.message);
        }
        Ok(w) => {
            // Every line opened: every row replays, each once.
            let rows = replayed(&w);
            prop_assert!(w.error().is_none(), "{:?}", w.error());
            prop_assert_eq!(Some(rows.len() as u64), w.total_rows());
            let mut per_table: BTreeMap<&str, usize> = BTreeMap::new();
            for r in &rows {
                *per_table.entry(&r.0).or_default() += 1;
            }
            prop_assert!(per_table.len() <= w.schema().tables.len());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(600))]

    /// Arbitrary bytes and line-protocol-like lines, plain or gzip.
    #[test]
    fn arbitrary_files_never_panic(
        bytes in lines(),
        gzip in proptest::bool::weighted(0.1),
        precision_ns in prop_oneof![Just(1i64), Just(1_000_000_000i64)],
    ) {
        open_any(&bytes, gzip, precision_ns)?;
    }

    /// Several lines, each from the pieces, one per line.
    #[test]
    fn arbitrary_lines_never_panic(
        lines in proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(PIECES), 1..14),
            1..8,
        ),
    ) {
        let mut bytes = Vec::new();
        for l in &lines {
            bytes.extend_from_slice(l.concat().as_bytes());
            bytes.push(b'\n');
        }
        open_any(&bytes, false, 1)?;
    }
}

#[test]
fn a_truncated_gzip_file_is_an_error_with_the_file_name() {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b"m a=1i 1\nm a=2i 2\n").unwrap();
    let gz = e.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for cut in [3, 10, gz.len() - 4] {
        let path = write(dir.path(), &gz[..cut]);
        let name = path.display().to_string();
        let err = FileReplay::open(ReplayInput::Path(path), ReplayOptions::default())
            .expect_err("a truncated gzip file");
        assert!(err.message.starts_with(&name), "{}", err.message);
    }
}
