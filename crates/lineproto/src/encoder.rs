//! [`LineEncoder`]: turns a [`Batch`] into line protocol, one line per row.
//!
//! What a line starts with, `measurement,tag=v,... ` plus the numeric tags written as
//! fields, is the same for every row of a (table, device). It is encoded once, on the
//! device's first row, into a per-table arena and copied per row after that. Field keys are
//! escaped once per table. Per row only the values and the timestamp are formatted.
//!
//! Every piece of a line is followed by its separator: the cached prefix ends with a space
//! (no field yet) or a comma (numeric tags written), and each field value is followed by a
//! comma. After the last field the trailing comma becomes the space before the timestamp;
//! a line still ending with the prefix's space has no field and is dropped.

use std::fmt;
use std::sync::Arc;

use tsload_core::{
    Batch, ColumnValues, DataType, Schema, TableBatch, TableSchema, TagSource, TagValue,
};

use crate::Precision;
use crate::escape::{
    escape_field_key, escape_measurement, escape_tag, write_float, write_string_bytes,
};
use crate::put::{KEY_PAD, Padded, put_int};

/// Encodes batches of one [`Schema`] as InfluxDB line protocol (see the crate
/// documentation for the rules).
///
/// It caches each device's line prefix per table, so memory grows with the devices it has
/// seen (about the prefix length plus 8 bytes per device and table), not with
/// [`Schema::device_count`]. Give each worker its own encoder: a worker sees a contiguous
/// range of devices, which keeps the cache dense.
pub struct LineEncoder {
    schema: Arc<Schema>,
    precision: Precision,
    tables: Vec<TablePlan>,
    /// Tag values of the device being cached, reused between cache misses.
    scratch: Vec<TagValue>,
    /// Field values the last [`LineEncoder::encode`] wrote: the rows' own and the
    /// numeric tags written as fields.
    fields: u64,
}

/// What is prepared once per table.
struct TablePlan {
    /// `key=` of each field, escaped, in column order.
    field_keys: Vec<FieldKey>,
    /// What ends an integer field: `i,`, or `u,` for unsigned columns.
    int_suffixes: Vec<[u8; 2]>,
    cache: PrefixCache,
    /// Expected output bytes per row, to reserve `out` before a table's rows.
    bytes_per_row: usize,
}

/// A field's `key=`, escaped: padded for a copy of constant length when it is short.
struct FieldKey {
    padded: Option<Padded<KEY_PAD>>,
    bytes: Box<[u8]>,
}

impl FieldKey {
    #[inline(always)]
    fn put(&self, out: &mut Vec<u8>) {
        match &self.padded {
            Some(p) => p.put(out),
            None => out.extend_from_slice(&self.bytes),
        }
    }
}

/// Line prefixes of the devices seen in one table.
struct PrefixCache {
    /// Device of `slots[0]`.
    base: u32,
    /// Where the prefix of device `base + i` lies in `arena`; [`Slot::EMPTY`] while unseen.
    slots: Vec<Slot>,
    arena: Vec<u8>,
    /// Most bytes `arena` may hold (offsets are `u32`); past it the cache starts over.
    limit: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    start: u32,
    /// Never 0 for a cached prefix: it ends with a space or a comma.
    len: u32,
    /// The numeric tags the prefix holds as fields.
    fields: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        start: 0,
        len: 0,
        fields: 0,
    };
}

impl LineEncoder {
    /// An encoder for batches of `schema`, writing timestamps in `precision`. Field keys are
    /// escaped here; nothing is cached per device until rows arrive.
    pub fn new(schema: Arc<Schema>, precision: Precision) -> Self {
        let tables = schema.tables.iter().map(TablePlan::new).collect();
        LineEncoder {
            scratch: Vec::with_capacity(schema.tag_slots),
            schema,
            precision,
            tables,
            fields: 0,
        }
    }

    /// Field values the last [`LineEncoder::encode`] wrote: a row's own fields (a null or
    /// a non-finite float is left out) and its device's numeric tags, which line protocol
    /// carries as fields (so a server stores them as values: VictoriaMetrics as samples).
    pub fn fields_written(&self) -> u64 {
        self.fields
    }

    /// Unit of the timestamps written.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The schema batches must match.
    pub fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }

    /// Appends one line per row of `batch` to `out` (does not clear `out`), table by table
    /// in schema order. `batch` must match the schema: one table batch per schema table,
    /// one column per field (in schema order), each holding a value for every row; a
    /// column shorter than its table's rows panics.
    pub fn encode(&mut self, batch: &Batch, out: &mut Vec<u8>) {
        let LineEncoder {
            schema,
            precision,
            tables,
            scratch,
            fields,
        } = self;
        *fields = 0;
        debug_assert_eq!(
            batch.tables.len(),
            tables.len(),
            "batch does not match schema"
        );
        let divisor = precision.divisor();
        for ((tb, plan), table) in batch.tables.iter().zip(tables).zip(&schema.tables) {
            let rows = tb.rows();
            if rows == 0 {
                continue;
            }
            debug_assert_eq!(tb.columns.len(), plan.field_keys.len(), "{}", table.name);
            out.reserve(rows * plan.bytes_per_row);
            let before = out.len();
            *fields += plan.encode(tb, table, &*schema.tags, scratch, divisor, out);
            // Next time reserve what this batch needed, plus a little.
            let per_row = (out.len() - before).div_ceil(rows);
            plan.bytes_per_row = per_row + per_row / 16;
        }
    }
}

impl fmt::Debug for LineEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineEncoder")
            .field("precision", &self.precision)
            .field(
                "cached_prefix_bytes",
                &self
                    .tables
                    .iter()
                    .map(|t| t.cache.arena.len())
                    .sum::<usize>(),
            )
            .finish_non_exhaustive()
    }
}

impl TablePlan {
    fn new(table: &TableSchema) -> Self {
        let field_keys = table
            .fields
            .iter()
            .map(|f| {
                let mut key = Vec::with_capacity(f.name.len() + 1);
                escape_field_key(&f.name, &mut key);
                key.push(b'=');
                FieldKey {
                    padded: Padded::new(&key),
                    bytes: key.into_boxed_slice(),
                }
            })
            .collect::<Vec<_>>();
        let int_suffixes = table
            .fields
            .iter()
            .map(|f| {
                if f.data_type == DataType::UBigInt {
                    *b"u,"
                } else {
                    *b"i,"
                }
            })
            .collect();
        // A first guess; the first batch corrects it.
        let bytes_per_row = table.name.len()
            + table.tags.iter().map(|t| t.name.len() + 16).sum::<usize>()
            + field_keys.iter().map(|k| k.bytes.len() + 12).sum::<usize>()
            + 24;
        TablePlan {
            field_keys,
            int_suffixes,
            cache: PrefixCache {
                base: 0,
                slots: Vec::new(),
                arena: Vec::new(),
                limit: u32::MAX as usize,
            },
            bytes_per_row,
        }
    }

    /// Appends the lines of `tb`; returns the field values written.
    fn encode(
        &mut self,
        tb: &TableBatch,
        table: &TableSchema,
        tags: &dyn TagSource,
        scratch: &mut Vec<TagValue>,
        divisor: i64,
        out: &mut Vec<u8>,
    ) -> u64 {
        let TablePlan {
            field_keys,
            int_suffixes,
            cache,
            ..
        } = self;
        let mut written = 0u64;
        // The latest row's time and its timestamp as written, with its `\n`.
        let mut last_ts: Option<(i64, Padded<24>)> = None;
        for (row, (&device, &ts)) in tb.device.iter().zip(&tb.ts).enumerate() {
            let line_start = out.len();
            let line_fields = written;
            let slot = match cache.get(device) {
                Some(slot) => slot,
                None => cache.insert(device, table, tags, scratch),
            };
            out.extend_from_slice(cache.prefix(slot));
            written += u64::from(slot.fields);

            let fields = tb
                .columns
                .iter()
                .zip(field_keys.iter())
                .zip(int_suffixes.iter());
            for ((col, key), int_suffix) in fields {
                if !(col.valid.is_empty() || col.valid[row]) {
                    continue;
                }
                match &col.values {
                    ColumnValues::Int(v) => {
                        key.put(out);
                        put_int(out, v[row], *int_suffix);
                        written += 1;
                    }
                    ColumnValues::Float(v) => {
                        let v = v[row];
                        if v.is_finite() {
                            key.put(out);
                            write_float(v, out);
                            out.push(b',');
                            written += 1;
                        }
                    }
                    ColumnValues::Bool(v) => {
                        key.put(out);
                        out.extend_from_slice(if v[row] { b"true," } else { b"false," });
                        written += 1;
                    }
                    ColumnValues::Str(v) => {
                        let start = if row == 0 {
                            0
                        } else {
                            v.ends[row - 1] as usize
                        };
                        key.put(out);
                        write_string_bytes(&v.bytes[start..v.ends[row] as usize], out);
                        out.push(b',');
                        written += 1;
                    }
                }
            }

            // The line ends in ',' after a field, or in the prefix's ' ' without any.
            let last = out.len() - 1;
            if out[last] != b',' {
                out.truncate(line_start);
                written = line_fields;
                continue;
            }
            out[last] = b' ';
            // Rows of one time come together (every host at each step): the timestamp's
            // digits are written once per time, not once per row.
            let text = match &last_ts {
                Some((at, text)) if *at == ts => text,
                _ => {
                    let unit = if divisor == 1 {
                        ts
                    } else {
                        ts.div_euclid(divisor)
                    };
                    let mut text = Vec::with_capacity(24);
                    put_int(&mut text, unit, *b"\n");
                    let text = Padded::new(&text).expect("a timestamp and its \\n fit 24 bytes");
                    &last_ts.insert((ts, text)).1
                }
            };
            text.put(out);
        }
        written
    }
}

impl PrefixCache {
    #[inline]
    fn get(&self, device: u32) -> Option<Slot> {
        // Below `base` the index wraps past the end of `slots`.
        let i = device.wrapping_sub(self.base) as usize;
        match self.slots.get(i) {
            Some(&slot) if slot.len != 0 => Some(slot),
            _ => None,
        }
    }

    #[inline]
    fn prefix(&self, slot: Slot) -> &[u8] {
        let start = slot.start as usize;
        &self.arena[start..start + slot.len as usize]
    }

    /// Encodes and caches the prefix of `device`.
    #[cold]
    #[inline(never)]
    fn insert(
        &mut self,
        device: u32,
        table: &TableSchema,
        tags: &dyn TagSource,
        scratch: &mut Vec<TagValue>,
    ) -> Slot {
        tags.device_tags(device, scratch);
        let mut start = self.arena.len();
        let fields = write_prefix(table, scratch, &mut self.arena);
        let len = self.arena.len() - start;
        if self.arena.len() > self.limit {
            // Offsets would overflow: start over with only this prefix.
            self.arena.copy_within(start.., 0);
            self.arena.truncate(len);
            self.slots.clear();
            start = 0;
            assert!(
                len <= self.limit,
                "line prefix of device {device} in {} is {len} bytes",
                table.name
            );
        }
        let slot = Slot {
            start: start as u32,
            len: len as u32,
            fields,
        };
        self.place(device, slot);
        slot
    }

    /// Stores `slot` as the slot of `device`, growing `slots` to cover it.
    fn place(&mut self, device: u32, slot: Slot) {
        if self.slots.is_empty() {
            self.base = device;
        } else if device < self.base {
            // Grow downwards geometrically so that devices arriving in descending order
            // cost amortised constant time.
            let new_base = device.saturating_sub(self.slots.len().min(u32::MAX as usize) as u32);
            let extra = (self.base - new_base) as usize;
            self.slots
                .splice(0..0, std::iter::repeat_n(Slot::EMPTY, extra));
            self.base = new_base;
        }
        let i = (device - self.base) as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::EMPTY);
        }
        self.slots[i] = slot;
    }
}

/// Appends the prefix of a line of `table` for a device with tag values `values`: the
/// measurement, the string tags, a space, and the numeric tags as fields each followed by
/// a comma. Returns how many numeric tags it wrote.
fn write_prefix(table: &TableSchema, values: &[TagValue], out: &mut Vec<u8>) -> u32 {
    escape_measurement(&table.name, out);
    for tag in &table.tags {
        if let Some(TagValue::Str(s)) = values.get(tag.slot)
            && !s.is_empty()
        {
            out.push(b',');
            escape_tag(&tag.name, out);
            out.push(b'=');
            escape_tag(s, out);
        }
    }
    out.push(b' ');
    let mut fields = 0;
    for tag in &table.tags {
        let key = |out: &mut Vec<u8>| {
            escape_field_key(&tag.name, out);
            out.push(b'=');
        };
        match values.get(tag.slot) {
            Some(&TagValue::Int(v)) => {
                key(out);
                out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
                out.extend_from_slice(b"i,");
            }
            Some(&TagValue::Float(v)) if v.is_finite() => {
                key(out);
                write_float(v, out);
                out.push(b',');
            }
            Some(&TagValue::Bool(v)) => {
                key(out);
                out.extend_from_slice(if v { b"true," } else { b"false," });
            }
            _ => continue,
        }
        fields += 1;
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> PrefixCache {
        PrefixCache {
            base: 0,
            slots: Vec::new(),
            arena: Vec::new(),
            limit: u32::MAX as usize,
        }
    }

    /// Device 9's cached prefix `m,t=h9 `: 7 bytes from the arena's start, no numeric tag.
    const PREFIX_OF_9: Slot = Slot {
        start: 0,
        len: 7,
        fields: 0,
    };

    fn slot(i: u32) -> Slot {
        Slot {
            start: i,
            len: 1,
            fields: 0,
        }
    }

    #[test]
    fn cache_grows_both_ways_and_stays_dense() {
        let mut c = cache();
        c.place(1_000_000, slot(1));
        assert_eq!((c.base, c.slots.len()), (1_000_000, 1));
        c.place(1_000_003, slot(2));
        assert_eq!(c.slots.len(), 4);
        for d in (0..1_000_000).rev().step_by(1000) {
            c.place(d, slot(d));
        }
        assert!(c.slots.len() <= 1_000_004, "{}", c.slots.len());
        assert_eq!(c.get(1_000_000), Some(slot(1)));
        assert_eq!(c.get(1_000_003), Some(slot(2)));
        assert_eq!(c.get(1_000_002), None);
        assert_eq!(c.get(1_000_004), None);
        assert_eq!(c.get(u32::MAX), None);
        for d in (0..1_000_000).rev().step_by(1000) {
            assert_eq!(c.get(d), Some(slot(d)));
            assert_eq!(c.get(d - 1), None);
        }
    }

    #[test]
    fn descending_devices_take_amortised_constant_time() {
        let mut c = cache();
        for d in (0..200_000).rev() {
            c.place(d, slot(d));
        }
        assert_eq!(c.base, 0);
        assert_eq!(c.slots.len(), 200_000);
        assert!((0..200_000).all(|d| c.get(d) == Some(slot(d))));
    }

    #[derive(Debug)]
    struct Hosts;

    impl TagSource for Hosts {
        fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
            out.clear();
            out.push(TagValue::Str(format!("h{device}").into()));
        }
    }

    #[test]
    fn full_arena_starts_over() {
        let table = TableSchema {
            name: "m".into(),
            tags: vec![tsload_core::TagDef {
                name: "t".into(),
                data_type: tsload_core::DataType::Varchar(8),
                slot: 0,
            }],
            fields: Vec::new(),
        };
        let mut c = cache();
        c.limit = 20;
        let mut scratch = Vec::new();
        let mut insert = |c: &mut PrefixCache, d| {
            let slot = c.insert(d, &table, &Hosts, &mut scratch);
            String::from_utf8(c.prefix(slot).to_vec()).unwrap()
        };
        assert_eq!(insert(&mut c, 10), "m,t=h10 ");
        assert_eq!(insert(&mut c, 11), "m,t=h11 ");
        assert_eq!(c.arena.len(), 16);
        // The third prefix does not fit: only it stays.
        assert_eq!(insert(&mut c, 9), "m,t=h9 ");
        assert_eq!(c.arena, b"m,t=h9 ");
        assert_eq!(c.get(10), None);
        assert_eq!(c.get(11), None);
        assert_eq!(c.get(9), Some(PREFIX_OF_9));
        assert_eq!(insert(&mut c, 12), "m,t=h12 ");
        assert_eq!(c.get(9), Some(PREFIX_OF_9));
    }

    #[test]
    fn high_devices_allocate_only_what_they_use() {
        let mut c = cache();
        c.place(u32::MAX, slot(7));
        c.place(u32::MAX - 2, slot(8));
        assert!(c.slots.len() <= 4);
        assert_eq!(c.get(u32::MAX), Some(slot(7)));
        assert_eq!(c.get(u32::MAX - 2), Some(slot(8)));
        assert_eq!(c.get(u32::MAX - 1), None);
        assert_eq!(c.get(0), None);
    }
}
