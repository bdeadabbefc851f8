//! Batches as remote-write 1.0 `WriteRequest`s: pure encoding, no I/O.
//!
//! A row of table `m` with field `f` is a sample of the series `m_f`, labelled with the
//! row's device's tags (the names VictoriaMetrics gives line protocol: `cpu_usage_user
//! {hostname="host_0",...}`). Samples are grouped by series within a request, each series'
//! samples in the batch's order; timestamps are milliseconds (the nanoseconds floored).
//! Integers and floats are sent as doubles, booleans as 1 and 0; string fields and nulls
//! carry no sample, and a tag whose value is null or empty is left out (Prometheus treats
//! an empty label as an absent one). Names that Prometheus would refuse are made valid
//! (every other character becomes `_`).
//!
//! The bytes are written straight into one reused buffer with prost's wire-format
//! primitives rather than by building [`WriteRequest`] values: a request of 10,000 samples
//! would otherwise allocate a `String` per label per series and a message per sample. The
//! derived messages below are the reference the tests decode with.

use std::collections::HashMap;
use std::sync::Arc;

use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};
use tsload_core::{Batch, ColumnValues, Schema, TagCache, TagValue};

/// `prometheus.WriteRequest` (remote write 1.0), for decoding in tests and tools.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`: milliseconds since the Unix epoch.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// Two columns of a table that would be one label, or a tag named like the metric name's
/// label: the series would be ambiguous, so the table is refused rather than renamed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("table `{table}`: {first} and {second} are both the label `{label}` in remote write")]
pub struct LabelClash {
    pub table: String,
    pub first: String,
    pub second: String,
    pub label: String,
}

/// One request's bytes and what they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded<'a> {
    /// The `WriteRequest`, not compressed.
    pub bytes: &'a [u8],
    /// Samples in it: the batch's numeric and boolean field values.
    pub samples: u64,
    pub series: u64,
}

/// A table's fixed part of every series: the sorted label names around the metric name.
#[derive(Debug)]
struct TablePlan {
    /// The tags in label order: (slot, encoded name), split at the metric name's place.
    before: Vec<(usize, Vec<u8>)>,
    after: Vec<(usize, Vec<u8>)>,
    /// Per field: the encoded `__name__` label entry, `None` for a field that carries no
    /// sample (strings).
    names: Vec<Option<Vec<u8>>>,
    /// Encoded tag labels of each device seen: `(start, mid, end)` in `bytes`, the labels
    /// before the name in `start..mid` and after it in `mid..end`.
    devices: HashMap<u32, (usize, usize, usize)>,
    bytes: Vec<u8>,
}

/// Encodes batches of one schema into remote-write requests, reusing its buffers.
#[derive(Debug)]
pub struct RemoteWriteEncoder {
    tables: Vec<TablePlan>,
    tags: TagCache,
    /// Row indexes of one table, sorted by device.
    order: Vec<u32>,
    out: Vec<u8>,
}

impl RemoteWriteEncoder {
    /// An encoder for `schema`'s tables; refuses a table two of whose columns would be
    /// one label.
    pub fn new(schema: Arc<Schema>) -> Result<Self, LabelClash> {
        let mut tables = Vec::with_capacity(schema.tables.len());
        for table in &schema.tables {
            let mut labels: Vec<(String, Option<usize>, &str)> = table
                .tags
                .iter()
                .map(|t| (label_name(&t.name), Some(t.slot), t.name.as_str()))
                .collect();
            labels.push(("__name__".to_string(), None, "the metric name"));
            labels.sort_by(|a, b| a.0.cmp(&b.0));
            if let Some(w) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
                let column = |l: &(String, Option<usize>, &str)| match l.1 {
                    Some(_) => format!("tag `{}`", l.2),
                    None => l.2.to_string(),
                };
                return Err(LabelClash {
                    table: table.name.clone(),
                    first: column(&w[0]),
                    second: column(&w[1]),
                    label: w[0].0.clone(),
                });
            }
            let at = labels.iter().position(|l| l.1.is_none()).unwrap_or(0);
            let encode_names = |part: &[(String, Option<usize>, &str)]| {
                part.iter()
                    .filter_map(|(name, slot, _)| Some((((*slot)?), name.as_bytes().to_vec())))
                    .collect()
            };
            let names = table
                .fields
                .iter()
                .map(|f| {
                    let numeric =
                        !matches!(f.data_type.storage(), tsload_core::schema::Storage::Str);
                    numeric.then(|| {
                        let mut entry = Vec::new();
                        push_label(
                            &mut entry,
                            b"__name__",
                            metric_name(&format!("{}_{}", table.name, f.name)).as_bytes(),
                        );
                        entry
                    })
                })
                .collect();
            tables.push(TablePlan {
                before: encode_names(&labels[..at]),
                after: encode_names(&labels[at + 1..]),
                names,
                devices: HashMap::new(),
                bytes: Vec::new(),
            });
        }
        Ok(RemoteWriteEncoder {
            tables,
            tags: TagCache::new(schema.clone(), schema.tag_slots),
            order: Vec::new(),
            out: Vec::new(),
        })
    }

    /// The `WriteRequest` of `batch`. Its shape must match the schema (the engine checks
    /// every batch's shape before a sink sees it).
    pub fn encode(&mut self, batch: &Batch) -> Encoded<'_> {
        self.out.clear();
        let (mut samples, mut series) = (0u64, 0u64);
        for (t, rows) in batch.tables.iter().enumerate() {
            let Some(plan) = self.tables.get_mut(t) else {
                continue;
            };
            self.order.clear();
            self.order.extend(0..rows.rows() as u32);
            self.order
                .sort_unstable_by_key(|&r| (rows.device[r as usize], r));
            let mut start = 0;
            while start < self.order.len() {
                let device = rows.device[self.order[start] as usize];
                let end = start
                    + self.order[start..]
                        .iter()
                        .take_while(|&&r| rows.device[r as usize] == device)
                        .count();
                let group = &self.order[start..end];
                let (a, mid, b) = device_labels(plan, &mut self.tags, device);
                for (column, name) in rows.columns.iter().zip(&plan.names) {
                    let Some(name) = name else { continue };
                    let (n, samples_len) = samples_len(column, &rows.ts, group);
                    if n == 0 {
                        continue;
                    }
                    let len = (mid - a) + name.len() + (b - mid) + samples_len;
                    encode_key(1, WireType::LengthDelimited, &mut self.out);
                    encode_varint(len as u64, &mut self.out);
                    self.out.extend_from_slice(&plan.bytes[a..mid]);
                    self.out.extend_from_slice(name);
                    self.out.extend_from_slice(&plan.bytes[mid..b]);
                    push_samples(&mut self.out, column, &rows.ts, group);
                    samples += n;
                    series += 1;
                }
                start = end;
            }
        }
        Encoded {
            bytes: &self.out,
            samples,
            series,
        }
    }
}

/// The encoded tag labels of `device` in `plan`, made once per device.
fn device_labels(plan: &mut TablePlan, tags: &mut TagCache, device: u32) -> (usize, usize, usize) {
    if let Some(&at) = plan.devices.get(&device) {
        return at;
    }
    let offset = tags.offset(device);
    let values = &tags.values()[offset..];
    let start = plan.bytes.len();
    let mut text = String::new();
    let mut push = |bytes: &mut Vec<u8>, part: &[(usize, Vec<u8>)]| {
        for (slot, name) in part {
            text.clear();
            match &values[*slot] {
                TagValue::Null => continue,
                TagValue::Str(s) => text.push_str(s),
                other => {
                    use std::fmt::Write as _;
                    let _ = write!(text, "{other}");
                }
            }
            if !text.is_empty() {
                push_label(bytes, name, text.as_bytes());
            }
        }
    };
    push(&mut plan.bytes, &plan.before);
    let mid = plan.bytes.len();
    push(&mut plan.bytes, &plan.after);
    let at = (start, mid, plan.bytes.len());
    plan.devices.insert(device, at);
    at
}

/// A `labels` entry (field 1 of `TimeSeries`) of `name` and `value`.
fn push_label(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let len = 1
        + encoded_len_varint(name.len() as u64)
        + name.len()
        + 1
        + encoded_len_varint(value.len() as u64)
        + value.len();
    encode_key(1, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
    encode_key(1, WireType::LengthDelimited, out);
    encode_varint(name.len() as u64, out);
    out.extend_from_slice(name);
    encode_key(2, WireType::LengthDelimited, out);
    encode_varint(value.len() as u64, out);
    out.extend_from_slice(value);
}

/// The value of row `row` of `column` as a sample, `None` for a null or a string.
fn sample_value(column: &tsload_core::Column, row: usize) -> Option<f64> {
    if !column.is_valid(row) {
        return None;
    }
    match &column.values {
        ColumnValues::Float(v) => Some(v[row]),
        ColumnValues::Int(v) => Some(v[row] as f64),
        ColumnValues::Bool(v) => Some(if v[row] { 1.0 } else { 0.0 }),
        ColumnValues::Str(_) => None,
    }
}

fn millis(ts_ns: i64) -> i64 {
    ts_ns.div_euclid(1_000_000)
}

/// The length of one `Sample` message of timestamp `ms`.
fn sample_len(ms: i64) -> usize {
    // value: key + 8 bytes; timestamp: key + varint.
    1 + 8 + 1 + encoded_len_varint(ms as u64)
}

/// Samples in `group` of `column` and the bytes of their `samples` entries.
fn samples_len(column: &tsload_core::Column, ts: &[i64], group: &[u32]) -> (u64, usize) {
    let mut n = 0;
    let mut len = 0;
    for &r in group {
        if sample_value(column, r as usize).is_some() {
            let l = sample_len(millis(ts[r as usize]));
            len += 1 + encoded_len_varint(l as u64) + l;
            n += 1;
        }
    }
    (n, len)
}

fn push_samples(out: &mut Vec<u8>, column: &tsload_core::Column, ts: &[i64], group: &[u32]) {
    for &r in group {
        let Some(value) = sample_value(column, r as usize) else {
            continue;
        };
        let ms = millis(ts[r as usize]);
        encode_key(2, WireType::LengthDelimited, out);
        encode_varint(sample_len(ms) as u64, out);
        encode_key(1, WireType::SixtyFourBit, out);
        out.extend_from_slice(&value.to_le_bytes());
        encode_key(2, WireType::Varint, out);
        encode_varint(ms as u64, out);
    }
}

/// `name` as a valid metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
pub fn metric_name(name: &str) -> String {
    valid_name(name, true)
}

/// `name` as a valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn label_name(name: &str) -> String {
    valid_name(name, false)
}

fn valid_name(name: &str, colons: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || (colons && c == ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use tsload_core::schema::DataType;
    use tsload_testbed::fixtures::{cpu_mem_batch, cpu_mem_schema, field, schema_of, tag};

    use super::*;

    /// `rounds` rows of each of `devices` devices per table, `spacing` ns apart, devices
    /// interleaved as a generator writes them.
    fn rounds(schema: &Schema, devices: u32, rounds: i64, first: i64, spacing: i64) -> Batch {
        let mut out = Batch::for_schema(schema);
        for r in 0..rounds {
            let b = cpu_mem_batch(schema, 0..devices, spacing, |_, s| first + r * s, "bad");
            for (dst, src) in out.tables.iter_mut().zip(&b.tables) {
                let before = dst.rows();
                dst.device.extend(&src.device);
                dst.ts.extend(&src.ts);
                for (d, s) in dst.columns.iter_mut().zip(&src.columns) {
                    match (&mut d.values, &s.values) {
                        (ColumnValues::Int(d), ColumnValues::Int(s)) => d.extend(s),
                        (ColumnValues::Float(d), ColumnValues::Float(s)) => d.extend(s),
                        (ColumnValues::Bool(d), ColumnValues::Bool(s)) => d.extend(s),
                        (ColumnValues::Str(d), ColumnValues::Str(s)) => {
                            (0..s.len()).for_each(|i| d.push(s.get(i)))
                        }
                        _ => unreachable!("one schema"),
                    }
                    if !s.valid.is_empty() || !d.valid.is_empty() {
                        d.valid.resize(before, true);
                        if s.valid.is_empty() {
                            d.valid.resize(before + src.rows(), true);
                        } else {
                            d.valid.extend(&s.valid);
                        }
                    }
                }
            }
        }
        out
    }

    fn decode(bytes: &[u8]) -> WriteRequest {
        WriteRequest::decode(bytes).expect("prost decodes what the encoder wrote")
    }

    fn labels(ts: &TimeSeries) -> Vec<(String, String)> {
        ts.labels
            .iter()
            .map(|l| (l.name.clone(), l.value.clone()))
            .collect()
    }

    #[test]
    fn names_prometheus_would_refuse_are_made_valid() {
        assert_eq!(metric_name("cpu_usage_user"), "cpu_usage_user");
        assert_eq!(metric_name("disk.io:read-bytes"), "disk_io:read_bytes");
        assert_eq!(label_name("a:b"), "a_b");
        assert_eq!(label_name("9lives"), "_9lives");
        assert_eq!(label_name(""), "_");
    }

    /// Every numeric field value of the batch is one sample of the series its table,
    /// field and device name, with the device's tags, sorted, and millisecond timestamps;
    /// prost's own decoder reads it back.
    #[test]
    fn a_batch_round_trips_through_prosts_decoder() {
        let schema = cpu_mem_schema(DataType::Varchar(8));
        let batch = rounds(&schema, 6, 3, 1_451_606_400_123_456_789, 10_000_000_000);
        let mut enc = RemoteWriteEncoder::new(schema.clone()).unwrap();
        let encoded = enc.encode(&batch);
        let (samples, series) = (encoded.samples, encoded.series);
        let request = decode(encoded.bytes);
        assert_eq!(request.timeseries.len() as u64, series);
        let sent: u64 = request
            .timeseries
            .iter()
            .map(|t| t.samples.len() as u64)
            .sum();
        assert_eq!(sent, samples);
        // Every non-null value of a numeric column, and nothing else.
        let mut expected = 0u64;
        for (t, rows) in batch.tables.iter().enumerate() {
            for (c, column) in rows.columns.iter().enumerate() {
                let string = matches!(
                    schema.tables[t].fields[c].data_type.storage(),
                    tsload_core::schema::Storage::Str
                );
                if !string {
                    expected += (rows.rows() - column.null_count()) as u64;
                }
            }
        }
        assert!(expected > 0);
        assert_eq!(samples, expected);
        for ts in &request.timeseries {
            let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted, "labels sorted by name");
            assert!(names.contains(&"__name__"));
            assert!(ts.labels.iter().all(|l| !l.value.is_empty()));
            for w in ts.samples.windows(2) {
                assert!(w[0].timestamp < w[1].timestamp, "{:?}", ts.samples);
            }
        }
        // The first row of table 0, device 0: its values in its series.
        let rows = &batch.tables[0];
        let first = rows.ts[0].div_euclid(1_000_000);
        assert_eq!(first, 1_451_606_400_123);
        let device = rows.device[0];
        let tags = schema.device_tags(device);
        for (c, f) in schema.tables[0].fields.iter().enumerate() {
            let Some(value) = sample_value(&rows.columns[c], 0) else {
                continue;
            };
            let name = format!("{}_{}", schema.tables[0].name, f.name);
            let series = request
                .timeseries
                .iter()
                .find(|t| {
                    labels(t).contains(&("__name__".into(), name.clone()))
                        && schema.tables[0].tags.iter().all(|tag| {
                            let v = tags[tag.slot].to_string();
                            v.is_empty() || labels(t).contains(&(tag.name.clone(), v))
                        })
                })
                .unwrap_or_else(|| panic!("no series {name} of device {device}"));
            let s = series
                .samples
                .iter()
                .find(|s| s.timestamp == first)
                .unwrap();
            assert_eq!(s.value.to_bits(), value.to_bits(), "{name}");
        }
    }

    #[test]
    fn strings_and_nulls_carry_no_sample_and_booleans_are_one_and_zero() {
        let schema = schema_of(vec![tsload_core::TableSchema {
            name: "m".into(),
            tags: vec![tag("host", DataType::Varchar(8), 0)],
            fields: vec![
                field("on", DataType::Bool),
                field("note", DataType::Varchar(8)),
                field("n", DataType::BigInt),
            ],
        }]);
        let mut batch = Batch::for_schema(&schema);
        let t = &mut batch.tables[0];
        for (i, (on, n)) in [(true, 5), (false, 7)].into_iter().enumerate() {
            t.device.push(0);
            t.ts.push(i as i64 * 1_000_000);
            tsload_testbed::fixtures::push_bool(&mut t.columns[0], on);
            tsload_testbed::fixtures::push_str(&mut t.columns[1], "x");
            tsload_testbed::fixtures::push_int(&mut t.columns[2], n);
        }
        t.set_null(2, 1);
        t.finish_validity();
        let mut enc = RemoteWriteEncoder::new(schema).unwrap();
        let e = enc.encode(&batch);
        assert_eq!((e.samples, e.series), (3, 2));
        let request = decode(e.bytes);
        let on = &request.timeseries[0];
        assert_eq!(on.labels[0].value, "m_on");
        let values: Vec<f64> = on.samples.iter().map(|s| s.value).collect();
        assert_eq!(values, [1.0, 0.0]);
        assert_eq!(request.timeseries[1].samples.len(), 1);
    }

    #[test]
    fn a_tag_that_would_be_the_name_label_or_another_tag_is_refused() {
        let table = |tags: Vec<tsload_core::TagDef>| {
            schema_of(vec![tsload_core::TableSchema {
                name: "m".into(),
                tags,
                fields: vec![field("v", DataType::Double)],
            }])
        };
        let e = RemoteWriteEncoder::new(table(vec![
            tag("a.b", DataType::Varchar(8), 0),
            tag("a-b", DataType::Varchar(8), 1),
        ]))
        .unwrap_err();
        assert_eq!(e.label, "a_b");
        assert_eq!(
            e.to_string(),
            "table `m`: tag `a.b` and tag `a-b` are both the label `a_b` in remote write"
        );
        let e = RemoteWriteEncoder::new(table(vec![tag("__name__", DataType::Varchar(8), 0)]))
            .unwrap_err();
        assert_eq!(e.label, "__name__");
    }

    /// A second batch reuses the buffers and says only what it holds.
    #[test]
    fn encoding_again_replaces_the_previous_request() {
        let schema = cpu_mem_schema(DataType::Varchar(8));
        let big = rounds(&schema, 20, 2, 0, 1_000_000_000);
        let small = rounds(&schema, 2, 1, 5_000_000_000, 1_000_000_000);
        let mut enc = RemoteWriteEncoder::new(schema.clone()).unwrap();
        let _ = enc.encode(&big);
        let again = enc.encode(&small);
        let request = decode(again.bytes);
        let sent: u64 = request
            .timeseries
            .iter()
            .map(|t| t.samples.len() as u64)
            .sum();
        assert_eq!(sent, again.samples);
        assert!(
            request
                .timeseries
                .iter()
                .flat_map(|t| &t.samples)
                .all(|s| s.timestamp >= 5_000)
        );
    }
}
