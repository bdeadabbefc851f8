//! Writing one batch's statements on a connection: checking the batch against the schema,
//! resolving its devices, planning the exactly-once statement, and sending the tags rows
//! and each table's rows by COPY, UNNEST or chunked INSERTs.

use std::ops::Range;

use sqlx::Arguments;
use sqlx::postgres::{PgArguments, PgConnection};
use tsload_core::{Batch, ErrorKind, SinkError, TableBatch};

use super::cache::{
    Devices, MAX_CACHED_TAILS, TableState, TagsTable, fetch_tags, field_error, tag_error,
};
use super::failure::{Failure, db_failure};
use super::rows::{add, bind_row, encode_copy_binary, encode_copy_text, push_device_ids};
use crate::bind::RawArray;
use crate::encode::{self, ArrayWriter, Cell, PgType, Value};
use crate::sql;
use crate::{CopyFormat, InsertMethod};

/// Everything but the connection, so a write can borrow both at once.
#[derive(Debug)]
pub(super) struct Writer {
    pub(super) method: InsertMethod,
    pub(super) format: CopyFormat,
    pub(super) tables: Vec<TableState>,
    pub(super) devices: Devices,
    /// For every row of the batch being written in a table with tag columns of its own
    /// (such tables one after the other), the dense index of its device in `devices`.
    /// Reused between batches.
    pub(super) row_dev: Vec<u32>,
    /// COPY data, or the UNNEST arrays end to end. Reused between batches.
    pub(super) buf: Vec<u8>,
    /// The UNNEST arrays' ranges in `buf`, one per column.
    pub(super) arrays: Vec<Range<usize>>,
    /// Tags layout only.
    pub(super) tags: Option<TagsTable>,
    /// While a single-statement batch is written exactly once: the ledger row (run_id,
    /// worker, seq, batch_rows) its statement records through a CTE.
    pub(super) ledger_row: Option<[i64; 4]>,
}

impl Writer {
    /// Fails with Rejected when `batch` does not match the schema this connection was
    /// opened for (so that encoding below cannot index out of range).
    pub(super) fn check_batch(&self, batch: &Batch) -> Result<(), SinkError> {
        batch
            .check_shape(self.tables.iter().map(|t| t.fields.len()))
            .map_err(|e| {
                let message = match e.table {
                    Some(i) => format!(
                        "table {}: malformed batch: {}",
                        self.tables[i].label, e.message
                    ),
                    None => e.message,
                };
                SinkError::new(ErrorKind::Rejected, message)
            })
    }

    /// Looks up the device of every row of a table with tag columns of its own, and (tags
    /// layout) the devices without a tags row yet, encodes new devices' COPY tag columns
    /// and builds the INSERTs the batch needs, so that sending only borrows.
    pub(super) fn resolve(&mut self, batch: &Batch) -> Result<(), SinkError> {
        self.row_dev.clear();
        let copy = self.method == InsertMethod::Copy;
        for (t, tb) in self.tables.iter_mut().zip(&batch.tables) {
            if self.method == InsertMethod::Insert && tb.rows() > 0 {
                t.ensure_inserts(tb.rows());
            }
            if t.tag_cols.is_empty() {
                continue;
            }
            for &device in &tb.device {
                let dense = self.devices.index(device);
                if copy {
                    let values = self.devices.of(dense);
                    t.ensure_tag_section(dense, device, values, self.format)?;
                }
                self.row_dev.push(dense);
            }
        }
        if let Some(tags) = &mut self.tags {
            tags.pending.clear();
            tags.pending_values.clear();
            for tb in &batch.tables {
                tags.pending
                    .extend(tb.device.iter().filter(|d| !tags.known.contains(d)));
            }
            tags.pending.sort_unstable();
            tags.pending.dedup();
            let stride = self.devices.stride;
            for &device in &tags.pending {
                fetch_tags(
                    &self.devices.source,
                    device,
                    stride,
                    &mut self.devices.scratch,
                );
                tags.pending_values.append(&mut self.devices.scratch);
            }
        }
        Ok(())
    }

    /// Whether the batch can be written exactly once as one statement that also records
    /// it in the ledger (a CTE): one INSERT or UNNEST statement whose parameters leave
    /// room for the ledger row's four. Builds that statement's text.
    pub(super) fn plan_ledger_statement(&mut self, batch: &Batch) -> bool {
        if self.method == InsertMethod::Copy || self.statements(batch) != 1 {
            return false;
        }
        let Some((t, tb)) = self
            .tables
            .iter_mut()
            .zip(&batch.tables)
            .find(|(_, tb)| tb.rows() > 0)
        else {
            return false;
        };
        let (key, params, plain) = match self.method {
            InsertMethod::Unnest => (0, t.columns.len(), Some(t.unnest_sql.as_str())),
            _ => {
                let rows = tb.rows();
                (rows, rows * t.columns.len(), t.insert_sql(rows))
            }
        };
        if params + 4 > sql::max_params() {
            return false;
        }
        let Some(plain) = plain else {
            return false;
        };
        if t.ledger_sql.contains_key(&key) {
            return true;
        }
        let text = sql::with_ledger_row(plain, params);
        if t.ledger_sql.len() >= MAX_CACHED_TAILS {
            t.ledger_sql.clear();
        }
        t.ledger_sql.insert(key, text);
        true
    }

    /// Statements the batch takes.
    pub(super) fn statements(&self, batch: &Batch) -> usize {
        let tags = self.tags.as_ref().is_some_and(|t| !t.pending.is_empty());
        let mut n = usize::from(tags);
        for (t, tb) in self.tables.iter().zip(&batch.tables) {
            let rows = tb.rows();
            if rows > 0 {
                n += match self.method {
                    InsertMethod::Insert => rows.div_ceil(t.chunk_rows),
                    InsertMethod::Copy | InsertMethod::Unnest => 1,
                };
            }
        }
        n
    }

    /// Sends every statement of the batch on `conn`; returns the payload bytes.
    pub(super) async fn send_all(
        &mut self,
        conn: &mut PgConnection,
        batch: &Batch,
    ) -> Result<u64, Failure> {
        let mut bytes = 0u64;
        if self.tags.as_ref().is_some_and(|t| !t.pending.is_empty()) {
            bytes += self.insert_tags(conn).await?;
        }
        let mut first_row = 0;
        for i in 0..self.tables.len() {
            let tb = &batch.tables[i];
            let rows = tb.rows();
            if rows == 0 {
                continue;
            }
            // Only tables with tag columns of their own have rows in `row_dev`.
            let row_dev = if self.tables[i].tag_cols.is_empty() {
                0..0
            } else {
                first_row += rows;
                first_row - rows..first_row
            };
            bytes += match self.method {
                InsertMethod::Copy => self.copy_table(conn, i, tb, row_dev).await?,
                InsertMethod::Unnest => self.unnest_table(conn, i, tb, row_dev).await?,
                InsertMethod::Insert => self.insert_table(conn, i, tb, row_dev).await?,
            };
        }
        Ok(bytes)
    }

    /// Inserts the tags rows of the pending devices in one UNNEST statement.
    async fn insert_tags(&mut self, conn: &mut PgConnection) -> Result<u64, Failure> {
        let Some(tags) = &self.tags else {
            return Ok(0);
        };
        let stride = self.devices.stride;
        let n = tags.pending.len();
        self.buf.clear();
        self.arrays.clear();
        push_device_ids(&mut self.buf, &mut self.arrays, &tags.pending)?;
        let buf = &mut self.buf;
        for (slot, ty, name) in &tags.slots {
            let at = buf.len();
            let mut a = ArrayWriter::begin(buf, *ty, n)?;
            for (i, &device) in tags.pending.iter().enumerate() {
                let cell = Cell::of_tag(&tags.pending_values[i * stride + slot]);
                let value = encode::convert(cell, *ty)
                    .map_err(|e| tag_error("\"tags\"", name, device, &e))?;
                a.push(buf, &value)?;
            }
            a.finish(buf);
            self.arrays.push(at..buf.len());
        }
        let mut args = PgArguments::default();
        let mut types = std::iter::once(PgType::Int8).chain(tags.slots.iter().map(|s| s.1));
        for range in &self.arrays {
            let elem = types.next().unwrap_or(PgType::Text);
            add(
                &mut args,
                RawArray {
                    bytes: &self.buf[range.clone()],
                    elem,
                },
                "\"tags\"",
            )?;
        }
        sqlx::query_with(&tags.insert_sql, args)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_failure("table \"tags\"", &e))?;
        Ok(self.buf.len() as u64)
    }

    /// COPY of one table: the whole table's rows encoded first, then one COPY.
    async fn copy_table(
        &mut self,
        conn: &mut PgConnection,
        i: usize,
        tb: &TableBatch,
        row_dev: Range<usize>,
    ) -> Result<u64, Failure> {
        let t = &self.tables[i];
        let row_dev = &self.row_dev[row_dev];
        let buf = &mut self.buf;
        buf.clear();
        match self.format {
            CopyFormat::Text => encode_copy_text(buf, t, tb, row_dev)?,
            CopyFormat::Binary => encode_copy_binary(buf, t, tb, row_dev)?,
        }
        let context = format!("table {}", t.label);
        let mut copy = conn
            .copy_in_raw(&t.copy_sql)
            .await
            .map_err(|e| db_failure(&context, &e))?;
        if let Err(e) = copy.send(buf.as_slice()).await {
            // The connection is lost; dropping `copy` queues a CopyFail for the record.
            drop(copy);
            return Err(db_failure(&context, &e));
        }
        let copied = copy.finish().await.map_err(|e| db_failure(&context, &e))?;
        if copied != tb.rows() as u64 {
            return Err(SinkError::new(
                ErrorKind::Other,
                format!("{context}: COPY stored {copied} rows of {}", tb.rows()),
            )
            .into());
        }
        Ok(buf.len() as u64)
    }

    /// One INSERT ... SELECT * FROM UNNEST(...) for the whole table: one array per column.
    async fn unnest_table(
        &mut self,
        conn: &mut PgConnection,
        i: usize,
        tb: &TableBatch,
        row_dev: Range<usize>,
    ) -> Result<u64, Failure> {
        let t = &self.tables[i];
        let row_dev = &self.row_dev[row_dev];
        let rows = tb.rows();
        let buf = &mut self.buf;
        buf.clear();
        self.arrays.clear();

        let at = buf.len();
        let mut a = ArrayWriter::begin(buf, PgType::Timestamptz, rows)?;
        for &ns in &tb.ts {
            a.push(buf, &Value::Timestamptz(ns))?;
        }
        a.finish(buf);
        self.arrays.push(at..buf.len());

        if t.tags_id {
            push_device_ids(buf, &mut self.arrays, &tb.device)?;
        }
        for (slot, ty, name) in &t.tag_cols {
            let at = buf.len();
            let mut a = ArrayWriter::begin(buf, *ty, rows)?;
            for (row, &dense) in row_dev.iter().enumerate() {
                let cell = Cell::of_tag(&self.devices.of(dense)[*slot]);
                let value = encode::convert(cell, *ty)
                    .map_err(|e| tag_error(&t.label, name, tb.device[row], &e))?;
                a.push(buf, &value)?;
            }
            a.finish(buf);
            self.arrays.push(at..buf.len());
        }

        for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
            let at = buf.len();
            let mut a = ArrayWriter::begin(buf, *ty, rows)?;
            for row in 0..rows {
                let value = encode::convert(Cell::of_field(column, row), *ty)
                    .map_err(|e| field_error(t, col, row, &e))?;
                a.push(buf, &value)?;
            }
            a.finish(buf);
            self.arrays.push(at..buf.len());
        }

        let mut args = PgArguments::default();
        args.reserve(self.arrays.len(), buf.len());
        for (range, column) in self.arrays.iter().zip(&t.columns) {
            let elem = column.wire;
            add(
                &mut args,
                RawArray {
                    bytes: &buf[range.clone()],
                    elem,
                },
                &t.label,
            )?;
        }
        let text = match self.ledger_row {
            Some(row) => {
                for v in row {
                    add(&mut args, v, &t.label)?;
                }
                t.ledger_sql
                    .get(&0)
                    .map_or(t.unnest_sql.as_str(), String::as_str)
            }
            None => &t.unnest_sql,
        };
        sqlx::query_with(text, args)
            .execute(&mut *conn)
            .await
            .map_err(|e| db_failure(&format!("table {}", t.label), &e))?;
        Ok(buf.len() as u64)
    }

    /// Multi-row INSERTs of at most `chunk_rows` rows (65,535 parameters) each.
    async fn insert_table(
        &mut self,
        conn: &mut PgConnection,
        i: usize,
        tb: &TableBatch,
        row_dev: Range<usize>,
    ) -> Result<u64, Failure> {
        let t = &self.tables[i];
        let row_dev = &self.row_dev[row_dev];
        let rows = tb.rows();
        let context = format!("table {}", t.label);
        let mut bytes = 0u64;
        let mut start = 0;
        while start < rows {
            let n = (rows - start).min(t.chunk_rows);
            let Some(text) = t.insert_sql(n) else {
                return Err(SinkError::new(
                    ErrorKind::Other,
                    format!("{context}: no INSERT built for {n} rows"),
                )
                .into());
            };
            let mut args = PgArguments::default();
            args.reserve(n * t.columns.len() + 4, n * t.columns.len() * 12 + 32);
            for row in start..start + n {
                bytes += bind_row(&mut args, t, &self.devices, row_dev, tb, row)?;
            }
            let text = match self.ledger_row {
                Some(row) => {
                    for v in row {
                        add(&mut args, v, &t.label)?;
                    }
                    t.ledger_sql.get(&n).map_or(text, String::as_str)
                }
                None => text,
            };
            sqlx::query_with(text, args)
                .execute(&mut *conn)
                .await
                .map_err(|e| db_failure(&context, &e))?;
            start += n;
        }
        Ok(bytes)
    }
}
