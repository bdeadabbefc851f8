//! Pass 1: reads the whole input once, checks every line and builds the schema and what
//! pass 2 needs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::Arc;

use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef};

use super::lines::{a_kind, data_range, to_ns, too_long};
use super::parse::{
    self, Fields, Kind, MEASUREMENT_SPECIALS, TAG_SPECIALS, Value, hash_key, show, unescaped,
};
use super::replay::{Layout, TableLayout};
use super::series::{FieldLookup, NO_DEVICE, SeriesIndex};
use super::{KEY, ReplayOptions};
use crate::WorkloadError;

struct FieldScan {
    kind: Kind,
    /// Longest string value (bytes, unescaped).
    max_len: u32,
    /// Line on which the field (and so its type) was first seen.
    first_line: u64,
    /// Last line that set the field (to catch a field written twice on one line).
    seen_on: u64,
}

struct TableScan {
    name: String,
    /// Tag slots in the table's order, with the longest value (bytes, unescaped).
    tags: Vec<(usize, u32)>,
    fields: FieldLookup,
    info: Vec<FieldScan>,
}

pub(super) struct Scanner {
    pub(super) name: String,
    precision_ns: i64,
    max_line: usize,
    series: SeriesIndex,
    tables: Vec<TableScan>,
    table_of: HashMap<Box<[u8]>, usize>,
    slots: Vec<String>,
    pub(super) rows: u64,
    /// The device of the latest data line ([`NO_DEVICE`] before the first).
    last: u32,
    scratch: Vec<u8>,
    line_slots: Vec<usize>,
}

fn utf8(bytes: Cow<'_, [u8]>, what: &str) -> Result<String, String> {
    String::from_utf8(bytes.into_owned())
        .map_err(|e| format!("{what} `{}` is not valid UTF-8", show(e.as_bytes())))
}

impl Scanner {
    pub(super) fn new(name: String, opts: ReplayOptions) -> Self {
        Scanner {
            name,
            precision_ns: opts.precision_ns,
            max_line: opts.max_line_bytes,
            series: SeriesIndex::default(),
            tables: Vec::new(),
            table_of: HashMap::new(),
            slots: Vec::new(),
            rows: 0,
            last: NO_DEVICE,
            scratch: Vec::new(),
            line_slots: Vec::new(),
        }
    }

    fn at(&self, line_no: u64, message: String) -> WorkloadError {
        WorkloadError::new(KEY, format!("{}:{line_no}: {message}", self.name))
    }

    /// Checks one data line and adds what it shows to the schema.
    fn line(&mut self, line: &[u8], line_no: u64) -> Result<(), String> {
        let (device, end) = match self.series.predicted(self.last, line) {
            Some(d) => (d, self.series.key(d).len()),
            None => {
                let end = parse::key_end(line)?;
                let key = &line[..end];
                let hash = hash_key(key);
                let d = match self.series.find_hashed(key, hash) {
                    Some(d) => d,
                    None => self.new_series(key, hash)?,
                };
                (d, end)
            }
        };
        self.series.followed(self.last, device);
        self.last = device;
        let t = &mut self.tables[self.series.table[device as usize] as usize];
        let mut fields = Fields::new(line, end);
        let mut next = 0;
        while let Some(f) = fields.next(t.fields.hint(next))? {
            let kind = f.value.kind();
            let found = if f.hinted {
                Some(next)
            } else {
                t.fields.find(f.key, f.key_escaped, next, &mut self.scratch)
            };
            let col = match found {
                Some(col) => col,
                None => {
                    let name = utf8(unescaped(f.key, TAG_SPECIALS), "field name")?;
                    t.fields.insert(next, name.into_bytes().into_boxed_slice());
                    t.info.insert(
                        next,
                        FieldScan {
                            kind,
                            max_len: 0,
                            first_line: line_no,
                            seen_on: 0,
                        },
                    );
                    next
                }
            };
            let info = &mut t.info[col];
            let field_name = || String::from_utf8_lossy(&t.fields.names[col]).into_owned();
            if info.seen_on == line_no {
                return Err(format!(
                    "field `{}` appears twice on the line",
                    field_name()
                ));
            }
            info.seen_on = line_no;
            if kind != info.kind {
                return Err(format!(
                    "field `{}` of measurement `{}` is {} here but {} on line {} (a field \
                     keeps one type)",
                    field_name(),
                    t.name,
                    a_kind(kind),
                    a_kind(info.kind),
                    info.first_line
                ));
            }
            if let Value::Str { raw, escaped } = f.value {
                if std::str::from_utf8(raw).is_err() {
                    return Err(format!(
                        "the string value of field `{}` is not valid UTF-8",
                        field_name()
                    ));
                }
                let len = parse::unescaped_string_len(raw, escaped);
                info.max_len = info.max_len.max(u32::try_from(len).unwrap_or(u32::MAX));
            }
            next = col + 1;
        }
        to_ns(fields.timestamp()?, self.precision_ns)?;
        self.rows += 1;
        Ok(())
    }

    /// Registers the series of `key` (measurement, tags); returns its device.
    #[cold]
    fn new_series(&mut self, key: &[u8], hash: u64) -> Result<u32, String> {
        if std::str::from_utf8(key).is_err() {
            return Err(format!(
                "the measurement and tags `{}` are not valid UTF-8",
                show(key)
            ));
        }
        if self.series.len() >= u32::MAX as usize {
            return Err(format!("more than {} series", u32::MAX));
        }
        let mut tags = Vec::new();
        let measurement = parse::split_series_key(key, |k, v| {
            tags.push((k, v));
            Ok(())
        })?;
        let measurement = unescaped(measurement, MEASUREMENT_SPECIALS);
        let table = match self.table_of.get(&*measurement) {
            Some(&t) => t,
            None => {
                let t = self.tables.len();
                self.tables.push(TableScan {
                    name: utf8(measurement.clone(), "measurement")?,
                    tags: Vec::new(),
                    fields: FieldLookup::default(),
                    info: Vec::new(),
                });
                self.table_of.insert(measurement.into_owned().into(), t);
                t
            }
        };
        self.line_slots.clear();
        let mut prev: Option<usize> = None;
        for (k, v) in tags {
            let k = unescaped(k, TAG_SPECIALS);
            let slot = match self.series.slot_of.get(&*k) {
                Some(&s) => s,
                None => {
                    let s = self.slots.len();
                    self.slots.push(utf8(k.clone(), "tag key")?);
                    self.series.slot_of.insert(k.clone().into_owned().into(), s);
                    s
                }
            };
            if self.line_slots.contains(&slot) {
                return Err(format!(
                    "tag `{}` appears twice in `{}`",
                    self.slots[slot],
                    show(key)
                ));
            }
            self.line_slots.push(slot);
            let len = u32::try_from(unescaped(v, TAG_SPECIALS).len()).unwrap_or(u32::MAX);
            let t = &mut self.tables[table];
            let pos = match t.tags.iter().position(|&(s, _)| s == slot) {
                Some(p) => p,
                None => {
                    let at = prev.map_or(0, |p| p + 1);
                    t.tags.insert(at, (slot, 0));
                    at
                }
            };
            t.tags[pos].1 = t.tags[pos].1.max(len);
            prev = Some(pos);
        }
        Ok(self.series.insert_hashed(key, hash, table as u32))
    }

    /// The schema, and what pass 2 needs.
    pub(super) fn finish(mut self) -> (Schema, Layout) {
        self.series.tag_slots = self.slots.len();
        let series = Arc::new(self.series);
        let mut tables = Vec::with_capacity(self.tables.len());
        let mut layouts = Vec::with_capacity(self.tables.len());
        for t in self.tables {
            let fields = t
                .fields
                .names
                .iter()
                .zip(&t.info)
                .map(|(name, info)| FieldDef {
                    name: String::from_utf8_lossy(name).into_owned(),
                    data_type: match info.kind {
                        Kind::Int => DataType::BigInt,
                        Kind::UInt => DataType::UBigInt,
                        Kind::Float => DataType::Double,
                        Kind::Bool => DataType::Bool,
                        Kind::Str => DataType::Varchar(info.max_len.max(1)),
                    },
                })
                .collect();
            tables.push(TableSchema {
                name: t.name,
                tags: t
                    .tags
                    .iter()
                    .map(|&(slot, len)| TagDef {
                        name: self.slots[slot].clone(),
                        data_type: DataType::Varchar(len.max(1)),
                        slot,
                    })
                    .collect(),
                fields,
            });
            layouts.push(TableLayout {
                max_len: t.info.iter().map(|i| i.max_len).collect(),
                fields: t.fields,
            });
        }
        let schema = Schema {
            tables,
            tag_slots: self.slots.len(),
            device_count: series.len() as u32,
            tags: series.clone(),
        };
        let layout = Layout {
            name: self.name,
            precision_ns: self.precision_ns,
            max_line: self.max_line,
            series,
            tables: layouts,
        };
        (schema, layout)
    }
}

/// Pass 1 over `input`, copying every byte read to `spool` when given.
pub(super) fn scan(
    input: &mut dyn BufRead,
    mut spool: Option<&mut dyn Write>,
    scanner: &mut Scanner,
) -> Result<(), WorkloadError> {
    let name = scanner.name.clone();
    let max_line = scanner.max_line;
    let mut line_no = 0u64;
    let mut one_line = |line: &[u8], line_no: u64| -> Result<(), WorkloadError> {
        if let Some(w) = spool.as_mut() {
            w.write_all(line).map_err(|e| {
                WorkloadError::new(
                    KEY,
                    format!(
                        "cannot copy {name} to a temporary file in {} (set TMPDIR to a \
                         roomier place): {e}",
                        std::env::temp_dir().display()
                    ),
                )
            })?;
        }
        match data_range(line) {
            Some(range) => scanner
                .line(&line[range], line_no)
                .map_err(|m| scanner.at(line_no, m)),
            None => Ok(()),
        }
    };
    let too_long_at =
        |line_no: u64| WorkloadError::new(KEY, format!("{name}:{line_no}: {}", too_long(max_line)));
    // Lines are read where the reader's buffer holds them: no copy per line. Only a line
    // that continues past the end of the buffer is gathered in `spill`.
    let mut spill: Vec<u8> = Vec::new();
    loop {
        let buf = input.fill_buf().map_err(|e| {
            WorkloadError::new(
                KEY,
                format!("{name}: cannot read after line {line_no}: {e}"),
            )
        })?;
        if buf.is_empty() {
            // The end: a last line without a line end.
            if !spill.is_empty() {
                line_no += 1;
                one_line(&spill, line_no)?;
            }
            return Ok(());
        }
        let mut start = 0;
        if !spill.is_empty() {
            let end = parse::find2(buf, 0, b'\n', b'\n');
            if spill.len() + end > max_line {
                return Err(too_long_at(line_no + 1));
            }
            if end == buf.len() {
                spill.extend_from_slice(buf);
                let n = buf.len();
                input.consume(n);
                continue;
            }
            spill.extend_from_slice(&buf[..=end]);
            line_no += 1;
            one_line(&spill, line_no)?;
            spill.clear();
            start = end + 1;
        }
        loop {
            let end = parse::find2(buf, start, b'\n', b'\n');
            if end - start > max_line {
                return Err(too_long_at(line_no + 1));
            }
            if end == buf.len() {
                break;
            }
            line_no += 1;
            one_line(&buf[start..=end], line_no)?;
            start = end + 1;
        }
        spill.extend_from_slice(&buf[start..]);
        let n = buf.len();
        input.consume(n);
    }
}
