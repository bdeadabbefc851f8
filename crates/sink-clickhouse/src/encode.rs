//! A table's rows of a batch as ClickHouse's RowBinary: pure encoding, no I/O.
//!
//! Row by row, the columns of [`crate::sql::insert`] in its order: `ts` (Int64, little
//! endian), the tags, the fields. Integers are 8 bytes little endian (`Int64`, `UInt64`),
//! floats 8 bytes IEEE 754 (`Float64`), booleans one byte (`UInt8`), strings their length
//! as an unsigned LEB128 varint and their bytes. Fields are `Nullable`: a byte 1 for NULL
//! (and nothing else), or 0 and the value. Tags are never NULL (they are the sorting key):
//! a null tag is the empty string, 0 or false.
//!
//! The bytes are written by hand into the connection's reused buffer: this is the hot
//! path, and a row needs no more than a few `extend_from_slice`s; a general serializer
//! would go through a value per cell. Each device's tag columns are encoded once per
//! table and copied from then on.

use std::collections::HashMap;
use std::sync::Arc;

use tsload_core::schema::Storage;
use tsload_core::{ColumnValues, Schema, TableBatch, TagValue};

/// Appends `n` as an unsigned LEB128 varint (RowBinary's string lengths).
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends a RowBinary `String`.
pub fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// One table's tag columns and its devices' encoded tags.
#[derive(Debug)]
struct TablePlan {
    /// Per tag column: the device's tag slot and how the column stores values.
    tags: Vec<(usize, Storage)>,
    /// Every encoded device's tag columns, end to end.
    tag_bytes: Vec<u8>,
    /// A device's range in `tag_bytes`.
    spans: HashMap<u32, (usize, usize)>,
}

/// Encodes tables of batches of one schema; keeps each device's encoded tags (memory grows
/// with the devices written, not with the rows).
#[derive(Debug)]
pub struct RowBinaryEncoder {
    schema: Arc<Schema>,
    tables: Vec<TablePlan>,
    scratch: Vec<TagValue>,
}

impl RowBinaryEncoder {
    pub fn new(schema: Arc<Schema>) -> Self {
        let tables = schema
            .tables
            .iter()
            .map(|t| TablePlan {
                tags: t
                    .tags
                    .iter()
                    .map(|tag| (tag.slot, tag.data_type.storage()))
                    .collect(),
                tag_bytes: Vec::new(),
                spans: HashMap::new(),
            })
            .collect();
        RowBinaryEncoder {
            schema,
            tables,
            scratch: Vec::new(),
        }
    }

    /// Appends the rows of `rows`, table `table` of the schema, to `out`. The batch must
    /// have the schema's shape (`Batch::check_shape`): one value per row in every column.
    pub fn encode_table(&mut self, table: usize, rows: &TableBatch, out: &mut Vec<u8>) {
        let Some(plan) = self.tables.get_mut(table) else {
            return;
        };
        for (i, (&ts, &device)) in rows.ts.iter().zip(&rows.device).enumerate() {
            out.extend_from_slice(&ts.to_le_bytes());
            let (start, end) = match plan.spans.get(&device) {
                Some(&span) => span,
                None => {
                    self.schema.tags.device_tags(device, &mut self.scratch);
                    let start = plan.tag_bytes.len();
                    for &(slot, storage) in &plan.tags {
                        let value = self.scratch.get(slot).unwrap_or(&TagValue::Null);
                        put_tag(&mut plan.tag_bytes, value, storage);
                    }
                    let span = (start, plan.tag_bytes.len());
                    plan.spans.insert(device, span);
                    span
                }
            };
            out.extend_from_slice(&plan.tag_bytes[start..end]);
            for column in &rows.columns {
                if !column.is_valid(i) {
                    out.push(1);
                    continue;
                }
                out.push(0);
                match &column.values {
                    ColumnValues::Int(v) => out.extend_from_slice(&v[i].to_le_bytes()),
                    ColumnValues::Float(v) => out.extend_from_slice(&v[i].to_le_bytes()),
                    ColumnValues::Bool(v) => out.push(u8::from(v[i])),
                    ColumnValues::Str(v) => put_str(out, v.get(i).as_bytes()),
                }
            }
        }
    }
}

/// A tag value in its column's type; NULL (and a value that does not fit) is the type's
/// empty value.
fn put_tag(out: &mut Vec<u8>, value: &TagValue, storage: Storage) {
    match storage {
        Storage::Str => match value {
            TagValue::Null => put_varint(out, 0),
            TagValue::Str(s) => put_str(out, s.as_bytes()),
            other => put_str(out, other.to_string().as_bytes()),
        },
        Storage::Int => {
            let v = match value {
                TagValue::Int(v) => *v,
                TagValue::Bool(b) => i64::from(*b),
                TagValue::Float(f) => *f as i64,
                TagValue::Str(s) => s.parse().unwrap_or(0),
                TagValue::Null => 0,
            };
            out.extend_from_slice(&v.to_le_bytes());
        }
        Storage::Float => {
            let v = match value {
                TagValue::Float(f) => *f,
                TagValue::Int(v) => *v as f64,
                TagValue::Bool(b) => f64::from(u8::from(*b)),
                TagValue::Str(s) => s.parse().unwrap_or(0.0),
                TagValue::Null => 0.0,
            };
            out.extend_from_slice(&v.to_le_bytes());
        }
        Storage::Bool => {
            let v = match value {
                TagValue::Bool(b) => *b,
                TagValue::Int(v) => *v != 0,
                TagValue::Float(f) => *f != 0.0,
                TagValue::Str(s) => s == "true",
                TagValue::Null => false,
            };
            out.push(u8::from(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::{Batch, Column, DataType, FieldDef, Schema, TableSchema, TagDef, TagSource};

    /// A decoded cell.
    #[derive(Debug, Clone, PartialEq)]
    enum Cell {
        Null,
        Int(i64),
        Float(f64),
        Bool(bool),
        Str(String),
    }

    /// Reads RowBinary back, given each column's storage and nullability.
    struct Reader<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl Reader<'_> {
        fn take(&mut self, n: usize) -> &[u8] {
            let s = &self.bytes[self.at..self.at + n];
            self.at += n;
            s
        }

        fn varint(&mut self) -> u64 {
            let (mut n, mut shift) = (0u64, 0);
            loop {
                let b = self.take(1)[0];
                n |= u64::from(b & 0x7f) << shift;
                if b < 0x80 {
                    return n;
                }
                shift += 7;
            }
        }

        fn cell(&mut self, storage: Storage, nullable: bool) -> Cell {
            if nullable && self.take(1)[0] == 1 {
                return Cell::Null;
            }
            match storage {
                Storage::Int => Cell::Int(i64::from_le_bytes(self.take(8).try_into().unwrap())),
                Storage::Float => Cell::Float(f64::from_le_bytes(self.take(8).try_into().unwrap())),
                Storage::Bool => Cell::Bool(self.take(1)[0] == 1),
                Storage::Str => {
                    let n = self.varint() as usize;
                    Cell::Str(String::from_utf8(self.take(n).to_vec()).unwrap())
                }
            }
        }
    }

    /// Device d: hostname `host_<d>`, rack `d * 10`, null region for odd devices.
    #[derive(Debug)]
    struct Tags;

    impl TagSource for Tags {
        fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
            out.clear();
            out.push(TagValue::Str(format!("host_{device}").into()));
            out.push(TagValue::Int(i64::from(device) * 10));
            out.push(if device.is_multiple_of(2) {
                TagValue::Str("eu-west".into())
            } else {
                TagValue::Null
            });
        }
    }

    fn schema() -> Arc<Schema> {
        let tag = |name: &str, data_type, slot| TagDef {
            name: name.into(),
            data_type,
            slot,
        };
        let field = |name: &str, data_type| FieldDef {
            name: name.into(),
            data_type,
        };
        Arc::new(Schema {
            tables: vec![
                TableSchema {
                    name: "cpu".into(),
                    tags: vec![
                        tag("hostname", DataType::Varchar(32), 0),
                        tag("rack", DataType::BigInt, 1),
                        tag("region", DataType::Varchar(16), 2),
                    ],
                    fields: vec![
                        field("usage_user", DataType::BigInt),
                        field("load", DataType::Double),
                        field("ok", DataType::Bool),
                        field("state", DataType::Varchar(300)),
                    ],
                },
                TableSchema {
                    name: "bare".into(),
                    tags: vec![],
                    fields: vec![field("v", DataType::Double)],
                },
            ],
            tag_slots: 3,
            device_count: 1000,
            tags: Arc::new(Tags),
        })
    }

    /// Rows of devices `devices` at `1000 + i`; field values from the device; `usage_user`
    /// null for devices divisible by 3; `state` 200 bytes for device 7 (a 2-byte varint).
    fn batch(schema: &Schema, devices: &[u32]) -> Batch {
        let mut b = Batch::for_schema(schema);
        let t = &mut b.tables[0];
        for (i, &d) in devices.iter().enumerate() {
            t.device.push(d);
            t.ts.push(1000 + i as i64);
            let cols = &mut t.columns;
            if let ColumnValues::Int(v) = &mut cols[0].values {
                v.push(i64::from(d) - 5);
            }
            if let ColumnValues::Float(v) = &mut cols[1].values {
                v.push(f64::from(d) / 4.0);
            }
            if let ColumnValues::Bool(v) = &mut cols[2].values {
                v.push(d.is_multiple_of(2));
            }
            if let ColumnValues::Str(v) = &mut cols[3].values {
                v.push(&if d == 7 {
                    "x".repeat(200)
                } else {
                    format!("s{d}")
                });
            }
            if d.is_multiple_of(3) {
                t.set_null(0, i);
            }
        }
        t.finish_validity();
        b
    }

    /// Decodes table 0's rows: ts, 3 tags, 4 nullable fields.
    fn decode(bytes: &[u8], rows: usize) -> Vec<Vec<Cell>> {
        let mut r = Reader { bytes, at: 0 };
        let shape = [
            (Storage::Int, false),
            (Storage::Str, false),
            (Storage::Int, false),
            (Storage::Str, false),
            (Storage::Int, true),
            (Storage::Float, true),
            (Storage::Bool, true),
            (Storage::Str, true),
        ];
        let out = (0..rows)
            .map(|_| shape.iter().map(|&(s, n)| r.cell(s, n)).collect())
            .collect();
        assert_eq!(r.at, bytes.len(), "trailing bytes");
        out
    }

    #[test]
    fn rows_decode_back_to_the_batch() {
        let schema = schema();
        let mut enc = RowBinaryEncoder::new(schema.clone());
        let devices = [3, 7, 4, 7];
        let b = batch(&schema, &devices);
        let mut out = Vec::new();
        enc.encode_table(0, &b.tables[0], &mut out);
        let rows = decode(&out, devices.len());
        for (i, (row, &d)) in rows.iter().zip(&devices).enumerate() {
            let di = i64::from(d);
            let expected = vec![
                Cell::Int(1000 + i as i64),
                Cell::Str(format!("host_{d}")),
                Cell::Int(di * 10),
                Cell::Str(if d.is_multiple_of(2) {
                    "eu-west".into()
                } else {
                    String::new()
                }),
                if d.is_multiple_of(3) {
                    Cell::Null
                } else {
                    Cell::Int(di - 5)
                },
                Cell::Float(f64::from(d) / 4.0),
                Cell::Bool(d.is_multiple_of(2)),
                Cell::Str(if d == 7 {
                    "x".repeat(200)
                } else {
                    format!("s{d}")
                }),
            ];
            assert_eq!(row, &expected, "row {i}");
        }
        // Appends: a second table's rows go after the first's.
        let before = out.len();
        enc.encode_table(0, &b.tables[0], &mut out);
        assert_eq!(&out[..before], &out[before..]);
        // Device 7's tags were fetched once.
        assert_eq!(enc.tables[0].spans.len(), 3);
    }

    #[test]
    fn a_table_without_tags_or_rows() {
        let schema = schema();
        let mut enc = RowBinaryEncoder::new(schema.clone());
        let mut b = Batch::for_schema(&schema);
        let mut out = Vec::new();
        enc.encode_table(1, &b.tables[1], &mut out);
        assert!(out.is_empty());
        b.tables[1].device.push(1);
        b.tables[1].ts.push(-2);
        b.tables[1].columns[0] = Column {
            values: ColumnValues::Float(vec![0.5]),
            valid: vec![],
        };
        enc.encode_table(1, &b.tables[1], &mut out);
        let mut expected = (-2i64).to_le_bytes().to_vec();
        expected.push(0);
        expected.extend_from_slice(&0.5f64.to_le_bytes());
        assert_eq!(out, expected);
        // A table the schema does not have writes nothing.
        let mut none = Vec::new();
        enc.encode_table(9, &b.tables[1], &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn varints_and_tags_of_other_types() {
        let mut out = Vec::new();
        for n in [0u64, 127, 128, 300, u64::MAX] {
            out.clear();
            put_varint(&mut out, n);
            let mut r = Reader { bytes: &out, at: 0 };
            assert_eq!(r.varint(), n);
            assert_eq!(r.at, out.len());
        }
        assert_eq!(out.len(), 10);
        out.clear();
        put_tag(&mut out, &TagValue::Int(42), Storage::Str);
        put_tag(&mut out, &TagValue::Null, Storage::Int);
        put_tag(&mut out, &TagValue::Str("2.5".into()), Storage::Float);
        put_tag(&mut out, &TagValue::Bool(true), Storage::Bool);
        let mut expected = vec![2, b'4', b'2'];
        expected.extend_from_slice(&0i64.to_le_bytes());
        expected.extend_from_slice(&2.5f64.to_le_bytes());
        expected.push(1);
        assert_eq!(out, expected);
    }
}
