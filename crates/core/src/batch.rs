//! The reusable columnar batch that flows from a [`crate::BatchSource`] to a
//! [`crate::SinkConn`]: per table, one device id and one timestamp per row and one typed
//! vector per field column. Buffers are cleared, never freed, between requests.

use crate::schema::{Schema, Storage};

/// Strings of one column, stored end to end (no allocation per value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrValues {
    pub bytes: Vec<u8>,
    /// `ends[i]` is the end offset of value `i` in `bytes`.
    pub ends: Vec<u32>,
}

impl StrValues {
    pub fn push(&mut self, s: &str) {
        self.bytes.extend_from_slice(s.as_bytes());
        self.ends.push(self.bytes.len() as u32);
    }

    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let bytes = &self.bytes[start..self.ends[i] as usize];
        // Only `push(&str)` writes here, so the range is valid UTF-8 by construction.
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// The values of one field column.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    Bool(Vec<bool>),
    Int(Vec<i64>),
    Float(Vec<f64>),
    Str(StrValues),
}

impl ColumnValues {
    pub fn for_storage(storage: Storage) -> Self {
        match storage {
            Storage::Bool => ColumnValues::Bool(Vec::new()),
            Storage::Int => ColumnValues::Int(Vec::new()),
            Storage::Float => ColumnValues::Float(Vec::new()),
            Storage::Str => ColumnValues::Str(StrValues::default()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ColumnValues::Bool(v) => v.len(),
            ColumnValues::Int(v) => v.len(),
            ColumnValues::Float(v) => v.len(),
            ColumnValues::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn clear(&mut self) {
        match self {
            ColumnValues::Bool(v) => v.clear(),
            ColumnValues::Int(v) => v.clear(),
            ColumnValues::Float(v) => v.clear(),
            ColumnValues::Str(v) => v.clear(),
        }
    }
}

/// One field column: values plus an optional validity vector.
///
/// A null row still has a (meaningless) placeholder in `values` so that row `i` is always
/// `values[i]`. `valid` is empty while the column has no nulls; as soon as a source marks a
/// null it holds one flag per row.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub values: ColumnValues,
    pub valid: Vec<bool>,
}

impl Column {
    pub fn is_valid(&self, row: usize) -> bool {
        self.valid.is_empty() || self.valid[row]
    }

    pub fn null_count(&self) -> usize {
        self.valid.iter().filter(|v| !**v).count()
    }
}

/// Rows of one table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableBatch {
    /// Device (series) id of each row.
    pub device: Vec<u32>,
    /// Timestamp of each row, nanoseconds since the Unix epoch.
    pub ts: Vec<i64>,
    /// One column per field of the table, in schema order.
    pub columns: Vec<Column>,
}

impl TableBatch {
    pub fn rows(&self) -> usize {
        self.ts.len()
    }

    /// Number of non-null field values.
    pub fn metrics(&self) -> u64 {
        let rows = self.rows();
        self.columns
            .iter()
            .map(|c| (rows - c.null_count()) as u64)
            .sum()
    }

    pub fn clear(&mut self) {
        self.device.clear();
        self.ts.clear();
        for c in &mut self.columns {
            c.values.clear();
            c.valid.clear();
        }
    }

    /// Marks `row` of field `col` null, creating the validity vector on first use. The
    /// caller must have pushed the row's placeholder value already.
    pub fn set_null(&mut self, col: usize, row: usize) {
        let rows = self.rows();
        let c = &mut self.columns[col];
        if c.valid.len() < rows {
            c.valid.resize(rows, true);
        }
        c.valid[row] = false;
    }

    /// Appends row `row` of `src` (a table of the same schema) with timestamp `ts`: its
    /// device, values and nulls.
    pub fn push_row_from(&mut self, src: &TableBatch, row: usize, ts: i64) {
        let rows = self.rows();
        self.device.push(src.device[row]);
        self.ts.push(ts);
        for (out, col) in self.columns.iter_mut().zip(&src.columns) {
            match (&mut out.values, &col.values) {
                (ColumnValues::Bool(o), ColumnValues::Bool(v)) => o.push(v[row]),
                (ColumnValues::Int(o), ColumnValues::Int(v)) => o.push(v[row]),
                (ColumnValues::Float(o), ColumnValues::Float(v)) => o.push(v[row]),
                (ColumnValues::Str(o), ColumnValues::Str(v)) => o.push(v.get(row)),
                _ => unreachable!("push_row_from: the tables' column types differ"),
            }
            let valid = col.is_valid(row);
            if !valid || !out.valid.is_empty() {
                out.valid.resize(rows, true);
                out.valid.push(valid);
            }
        }
    }

    /// Appends rows `rows` of `src` (a table of the same schema) as they are.
    pub fn extend_from(&mut self, src: &TableBatch, rows: std::ops::Range<usize>) {
        let before = self.rows();
        self.device.extend_from_slice(&src.device[rows.clone()]);
        self.ts.extend_from_slice(&src.ts[rows.clone()]);
        for (out, col) in self.columns.iter_mut().zip(&src.columns) {
            match (&mut out.values, &col.values) {
                (ColumnValues::Bool(o), ColumnValues::Bool(v)) => {
                    o.extend_from_slice(&v[rows.clone()]);
                }
                (ColumnValues::Int(o), ColumnValues::Int(v)) => {
                    o.extend_from_slice(&v[rows.clone()]);
                }
                (ColumnValues::Float(o), ColumnValues::Float(v)) => {
                    o.extend_from_slice(&v[rows.clone()]);
                }
                (ColumnValues::Str(o), ColumnValues::Str(v)) => {
                    for row in rows.clone() {
                        o.push(v.get(row));
                    }
                }
                _ => unreachable!("extend_from: the tables' column types differ"),
            }
            // A validity vector only once a null is copied, as `set_null` makes one.
            if !out.valid.is_empty()
                || (!col.valid.is_empty() && rows.clone().any(|row| !col.is_valid(row)))
            {
                out.valid.resize(before, true);
                out.valid.extend(rows.clone().map(|row| col.is_valid(row)));
            }
        }
    }

    /// The fields of row `row` that have a value, a bit each (the first 64), whether or
    /// not the validity vectors are finished ([`TableBatch::finish_validity`]).
    pub fn valued_fields(&self, row: usize) -> u64 {
        self.columns
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, c)| c.valid.get(row).copied().unwrap_or(true))
            .fold(0, |mask, (i, _)| mask | 1 << i)
    }

    /// The field values (non-null) of row `row`.
    pub fn row_metrics(&self, row: usize) -> u64 {
        self.columns.iter().filter(|c| c.is_valid(row)).count() as u64
    }

    /// Brings every started validity vector up to the row count (rows pushed after the last
    /// null are valid). Sources that use [`TableBatch::set_null`] call this when done.
    pub fn finish_validity(&mut self) {
        let rows = self.rows();
        for c in &mut self.columns {
            if !c.valid.is_empty() && c.valid.len() < rows {
                c.valid.resize(rows, true);
            }
        }
    }
}

/// A batch whose columns do not line up with the schema it is written for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchShapeError {
    /// The table at fault (its index in the schema), or `None` when the batch has the
    /// wrong number of tables.
    pub table: Option<usize>,
    pub message: String,
}

/// A request's worth of rows: one [`TableBatch`] per schema table, in schema order (tables
/// without rows in this request are empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub tables: Vec<TableBatch>,
    /// The rows as line protocol already written, when the source has them (a replayed
    /// file's own lines, from [`crate::Workload::text_source`]); the tables then hold each
    /// row's device and timestamp and no field values. Only a sink that asked for text
    /// ([`crate::Sink::line_text_unit_ns`]) is given such a batch.
    pub text: Option<LineText>,
    /// Rows of the batch sent after a later row of their device and table (a workload's
    /// `out_of_order_ratio`), counted by the source that made them late.
    pub late_rows: u64,
    /// Rows of the batch that repeat the row before them exactly (a workload's
    /// `duplicate_ratio`): the second copies.
    pub duplicate_rows: u64,
    /// The field values of `duplicate_rows`.
    pub duplicate_metrics: u64,
    /// Devices whose first row is in this batch, counted by a source that counts them
    /// ([`crate::Workload::counts_devices`]: series churn, pods). The engine adds them up
    /// for the batches it sends, so a batch filled but never sent counts none.
    pub devices_started: u64,
    /// Series whose first value is in this batch, a device's field in a table each (as
    /// Prometheus and VictoriaMetrics keep them), counted where `devices_started` is.
    pub series_started: u64,
}

/// Rows as line protocol, sent as they are by a sink that writes line protocol in the
/// same timestamp unit: nothing to parse into columns and encode again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineText {
    /// The lines, each ending in `\n`.
    pub bytes: Vec<u8>,
    /// The field values the lines hold.
    pub metrics: u64,
}

impl Batch {
    /// An empty batch whose columns match `schema`.
    pub fn for_schema(schema: &Schema) -> Self {
        let tables = schema
            .tables
            .iter()
            .map(|t| TableBatch {
                device: Vec::new(),
                ts: Vec::new(),
                columns: t
                    .fields
                    .iter()
                    .map(|f| Column {
                        values: ColumnValues::for_storage(f.data_type.storage()),
                        valid: Vec::new(),
                    })
                    .collect(),
            })
            .collect();
        Batch {
            tables,
            text: None,
            late_rows: 0,
            duplicate_rows: 0,
            duplicate_metrics: 0,
            devices_started: 0,
            series_started: 0,
        }
    }

    pub fn rows(&self) -> usize {
        self.tables.iter().map(TableBatch::rows).sum()
    }

    /// Checks that the batch has one table per entry of `fields` (each table's field
    /// count, in schema order) and that every device, column and validity vector has one
    /// entry per row, so that sinks can index without bounds surprises.
    pub fn check_shape<I>(&self, fields: I) -> Result<(), BatchShapeError>
    where
        I: IntoIterator<Item = usize>,
        I::IntoIter: ExactSizeIterator,
    {
        let fields = fields.into_iter();
        if self.tables.len() != fields.len() {
            return Err(BatchShapeError {
                table: None,
                message: format!(
                    "batch has {} tables, the schema {}",
                    self.tables.len(),
                    fields.len()
                ),
            });
        }
        for (i, (tb, fields)) in self.tables.iter().zip(fields).enumerate() {
            let rows = tb.rows();
            let bad = |message: String| {
                Err(BatchShapeError {
                    table: Some(i),
                    message,
                })
            };
            if tb.device.len() != rows {
                return bad(format!("{} devices for {rows} timestamps", tb.device.len()));
            }
            if tb.columns.len() != fields {
                return bad(format!("{} columns for {fields} fields", tb.columns.len()));
            }
            for (c, col) in tb.columns.iter().enumerate() {
                if col.values.len() != rows || !(col.valid.is_empty() || col.valid.len() >= rows) {
                    return bad(format!("column {c} does not have {rows} rows"));
                }
            }
        }
        Ok(())
    }

    /// Field values: the text's count when the batch carries [`LineText`].
    pub fn metrics(&self) -> u64 {
        match &self.text {
            Some(text) => text.metrics,
            None => self.tables.iter().map(TableBatch::metrics).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(|t| t.ts.is_empty())
    }

    /// Empties the batch, keeping its buffers (the text's too) for the next fill.
    pub fn clear(&mut self) {
        for t in &mut self.tables {
            t.clear();
        }
        if let Some(text) = &mut self.text {
            text.bytes.clear();
            text.metrics = 0;
        }
        self.late_rows = 0;
        self.duplicate_rows = 0;
        self.duplicate_metrics = 0;
        self.devices_started = 0;
        self.series_started = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TableBatch {
        TableBatch {
            device: Vec::new(),
            ts: Vec::new(),
            columns: vec![
                Column {
                    values: ColumnValues::Int(Vec::new()),
                    valid: Vec::new(),
                },
                Column {
                    values: ColumnValues::Str(StrValues::default()),
                    valid: Vec::new(),
                },
            ],
        }
    }

    fn push(t: &mut TableBatch, device: u32, ts: i64, n: Option<i64>, s: &str) {
        t.device.push(device);
        t.ts.push(ts);
        if let ColumnValues::Int(v) = &mut t.columns[0].values {
            v.push(n.unwrap_or(0));
        }
        if let ColumnValues::Str(v) = &mut t.columns[1].values {
            v.push(s);
        }
        if n.is_none() {
            t.set_null(0, t.rows() - 1);
        }
    }

    /// Rows copied one at a time (with a new time) or as a run keep their device, values
    /// and nulls, wherever the nulls fall in source and destination.
    #[test]
    fn rows_copy_with_their_values_and_nulls() {
        let mut src = table();
        push(&mut src, 1, 10, Some(5), "a");
        push(&mut src, 2, 20, None, "bb");
        push(&mut src, 3, 30, Some(7), "");
        src.finish_validity();
        let mut out = table();
        out.extend_from(&src, 0..1);
        assert!(out.columns[0].valid.is_empty(), "no null yet");
        out.push_row_from(&src, 1, 99);
        out.extend_from(&src, 1..3);
        out.push_row_from(&src, 0, 11);
        out.finish_validity();
        assert_eq!(out.device, [1, 2, 2, 3, 1]);
        assert_eq!(out.ts, [10, 99, 20, 30, 11]);
        assert_eq!(out.columns[0].valid, [true, false, false, true, true]);
        assert_eq!(out.metrics(), 5 * 2 - 2);
        assert_eq!(out.row_metrics(1), 1);
        assert_eq!((out.valued_fields(0), out.valued_fields(1)), (0b11, 0b10));
        let ColumnValues::Str(s) = &out.columns[1].values else {
            panic!()
        };
        assert_eq!(
            (0..5).map(|i| s.get(i)).collect::<Vec<_>>(),
            ["a", "bb", "bb", "", "a"]
        );
        assert_eq!(
            Batch {
                tables: vec![out],
                ..Batch::default()
            }
            .check_shape([2]),
            Ok(())
        );
    }
}
