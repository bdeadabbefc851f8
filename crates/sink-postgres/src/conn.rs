//! One worker's PostgreSQL connection: caches the statement texts, the tag values of the
//! devices it has seen (and, for COPY, their encoded tag columns per table) or, in the tags
//! layout, which devices' tags rows it has committed; writes each batch as one transaction
//! with the configured insert method; reopens the connection after losing it.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use sqlx::postgres::{PgArguments, PgConnection};
use sqlx::{Arguments, Executor};
use tsload_core::{
    Batch, BatchId, Delivery, ErrorKind, Schema, SinkConn, SinkError, TableBatch, TagValue,
    WriteAck,
};

use crate::bind::{Param, RawArray};
use crate::encode::{
    self, ArrayWriter, COPY_BINARY_HEADER, COPY_BINARY_TRAILER, Cell, PgType, Value,
};
use crate::error::{breaks_connection, describe, kind_of};
use crate::sql::{self, ColumnDef, TagPlacement, TagSlotColumn};
use crate::{Connector, CopyFormat, InsertMethod, PostgresConfig};

/// Distinct partial-chunk INSERTs kept per table. Batches of one size need one; a run whose
/// row counts vary more just rebuilds the odd statement.
const MAX_CACHED_TAILS: usize = 32;

/// Connection of [`crate::PostgresSink`], one per worker in-flight slot.
#[derive(Debug)]
pub struct PostgresConn {
    /// `None` after a failure that lost the connection; the next write reconnects.
    conn: Option<PgConnection>,
    connector: Arc<Connector>,
    state: Writer,
    /// Exactly-once delivery: this run's id in the ledger.
    ledger: Option<i64>,
    /// Between BEGIN and the end of its COMMIT or ROLLBACK.
    in_transaction: bool,
}

/// Everything but the connection, so a write can borrow both at once.
#[derive(Debug)]
struct Writer {
    method: InsertMethod,
    format: CopyFormat,
    tables: Vec<TableState>,
    devices: Devices,
    /// For every row of the batch being written in a table with tag columns of its own
    /// (such tables one after the other), the dense index of its device in `devices`.
    /// Reused between batches.
    row_dev: Vec<u32>,
    /// COPY data, or the UNNEST arrays end to end. Reused between batches.
    buf: Vec<u8>,
    /// The UNNEST arrays' ranges in `buf`, one per column.
    arrays: Vec<Range<usize>>,
    /// Tags layout only.
    tags: Option<TagsTable>,
    /// While a single-statement batch is written exactly once: the ledger row (run_id,
    /// worker, seq, batch_rows) its statement records through a CTE.
    ledger_row: Option<[i64; 4]>,
}

/// What a connection keeps per schema table.
#[derive(Debug)]
struct TableState {
    /// The table name, quoted, for messages.
    label: String,
    /// Columns of a row: ts, tags_id (tags layout), the table's own tags, fields.
    columns: Vec<ColumnDef>,
    /// Tags layout: the second column is `tags_id`, the device number.
    tags_id: bool,
    /// Tag slot, wire type and name of each tag column of the table itself (wide: every
    /// tag; tags layout: those not in the shared `tags` table), in column order.
    tag_cols: Vec<(usize, PgType, String)>,
    /// Wire type and name of each field column.
    fields: Vec<(PgType, String)>,
    copy_sql: String,
    unnest_sql: String,
    /// The INSERT or UNNEST statements preceded by the ledger's CTE, by row count (0 for
    /// UNNEST), built on first use.
    ledger_sql: HashMap<usize, String>,
    /// Rows of a full INSERT chunk.
    chunk_rows: usize,
    /// `INSERT INTO "t" (...) VALUES `.
    prefix: String,
    /// The INSERT for a full chunk (built on first use).
    full: String,
    /// INSERTs for partial chunks, by row count.
    tails: HashMap<usize, String>,
    /// COPY: the encoded tag columns of each device (by dense index), in this table's
    /// order and the configured format, end to end.
    tag_bytes: Vec<u8>,
    /// `tag_spans[dense]` is that device's range in `tag_bytes` (start `u32::MAX`: not yet).
    tag_spans: Vec<(u32, u32)>,
}

impl TableState {
    fn insert_sql(&self, rows: usize) -> Option<&str> {
        if rows == self.chunk_rows {
            Some(&self.full)
        } else {
            self.tails.get(&rows).map(String::as_str)
        }
    }

    fn ensure_inserts(&mut self, rows: usize) {
        let columns = self.columns.len();
        if rows >= self.chunk_rows && self.full.is_empty() {
            self.full = sql::insert(&self.prefix, columns, self.chunk_rows);
        }
        let tail = rows % self.chunk_rows;
        if tail == 0 || self.tails.contains_key(&tail) {
            return;
        }
        if self.tails.len() >= MAX_CACHED_TAILS {
            self.tails.clear();
        }
        self.tails
            .insert(tail, sql::insert(&self.prefix, columns, tail));
    }

    /// Encodes the tag columns of device `dense` (values at `values`) for COPY, once.
    fn ensure_tag_section(
        &mut self,
        dense: u32,
        device: u32,
        values: &[TagValue],
        format: CopyFormat,
    ) -> Result<(), SinkError> {
        let i = dense as usize;
        if self.tag_spans.len() <= i {
            self.tag_spans.resize(i + 1, (u32::MAX, 0));
        }
        if self.tag_spans[i].0 != u32::MAX {
            return Ok(());
        }
        let start = self.tag_bytes.len();
        if let Err(e) = self.encode_tags(values, device, format) {
            self.tag_bytes.truncate(start);
            return Err(e);
        }
        let end = u32::try_from(self.tag_bytes.len()).map_err(|_| {
            SinkError::new(
                ErrorKind::Other,
                format!("table {}: the tag cache passed 4 GiB", self.label),
            )
        })?;
        self.tag_spans[i] = (start as u32, end);
        Ok(())
    }

    fn encode_tags(
        &mut self,
        values: &[TagValue],
        device: u32,
        format: CopyFormat,
    ) -> Result<(), SinkError> {
        for (slot, ty, name) in &self.tag_cols {
            let value = encode::convert(Cell::of_tag(&values[*slot]), *ty)
                .map_err(|e| tag_error(&self.label, name, device, &e))?;
            match format {
                CopyFormat::Text => {
                    self.tag_bytes.push(b'\t');
                    encode::write_text(&mut self.tag_bytes, &value);
                }
                CopyFormat::Binary => encode::write_binary_field(&mut self.tag_bytes, &value)
                    .map_err(|e| tag_error(&self.label, name, device, &e))?,
            }
        }
        Ok(())
    }

    fn tag_section(&self, dense: u32) -> &[u8] {
        let (start, end) = self.tag_spans[dense as usize];
        &self.tag_bytes[start as usize..end as usize]
    }
}

fn tag_error(table: &str, tag: &str, device: u32, reason: &str) -> SinkError {
    SinkError::new(
        ErrorKind::Rejected,
        format!("table {table}: tag {tag:?} of device {device}: {reason}"),
    )
}

fn field_error(t: &TableState, col: usize, row: usize, reason: &str) -> SinkError {
    SinkError::new(
        ErrorKind::Rejected,
        format!(
            "table {}: field {:?} of row {row}: {reason}",
            t.label, t.fields[col].1
        ),
    )
}

/// Tag values of the devices this connection has written, `stride` values per device in
/// one flat vector by dense index: memory grows with the devices seen, not the data set.
#[derive(Debug)]
struct Devices {
    source: Arc<Schema>,
    stride: usize,
    index: HashMap<u32, u32>,
    values: Vec<TagValue>,
    scratch: Vec<TagValue>,
}

impl Devices {
    /// Dense index of `device`, fetching its values from the tag source once.
    fn index(&mut self, device: u32) -> u32 {
        if let Some(&i) = self.index.get(&device) {
            return i;
        }
        let i = self.index.len() as u32;
        fetch_tags(&self.source, device, self.stride, &mut self.scratch);
        self.values.append(&mut self.scratch);
        self.index.insert(device, i);
        i
    }

    fn of(&self, dense: u32) -> &[TagValue] {
        let at = dense as usize * self.stride;
        &self.values[at..at + self.stride]
    }
}

/// Writes exactly `stride` tag values of `device` into `out` (a short or long answer must
/// not shift other devices' values).
fn fetch_tags(source: &Schema, device: u32, stride: usize, out: &mut Vec<TagValue>) {
    source.tags.device_tags(device, out);
    out.resize(stride, TagValue::Null);
}

/// The tags layout's bookkeeping.
#[derive(Debug)]
struct TagsTable {
    /// Slot and wire type of each column after `id`, and its name.
    slots: Vec<(usize, PgType, String)>,
    insert_sql: String,
    /// Devices whose tags row this connection committed (or found there).
    known: HashSet<u32>,
    /// Devices of the batch being written that are not known yet, ascending.
    pending: Vec<u32>,
    /// Their tag values, `stride` per device.
    pending_values: Vec<TagValue>,
}

/// A failed step: the error, and whether the connection is lost with it.
struct Failure {
    error: SinkError,
    broken: bool,
    /// The ledger's primary key was violated: the batch is stored already.
    ledger_conflict: bool,
}

impl From<SinkError> for Failure {
    fn from(error: SinkError) -> Self {
        Failure {
            error,
            broken: false,
            ledger_conflict: false,
        }
    }
}

/// A driver failure while working on `context`: kind by SQLSTATE, server message.
fn db_failure(context: &str, e: &sqlx::Error) -> Failure {
    let kind = kind_of(e);
    let ledger_conflict = matches!(e, sqlx::Error::Database(db)
        if db.is_unique_violation() && db.constraint() == Some(sql::LEDGER_KEY));
    Failure {
        error: SinkError::new(kind, format!("{context}: {}", describe(e))),
        broken: breaks_connection(kind, Some(e)),
        ledger_conflict,
    }
}

impl PostgresConn {
    pub(crate) fn new(
        conn: PgConnection,
        connector: Arc<Connector>,
        cfg: &PostgresConfig,
        schema: Arc<Schema>,
        placement: &TagPlacement,
        slots: Vec<TagSlotColumn>,
    ) -> Self {
        let tables: Vec<TableState> = schema
            .tables
            .iter()
            .map(|t| {
                let columns = sql::table_columns(t, placement);
                let tag_cols = placement
                    .own_tags(t)
                    .map(|tag| (tag.slot, PgType::of(tag.data_type), tag.name.clone()))
                    .collect();
                TableState {
                    label: sql::quote_ident(&t.name),
                    tags_id: placement.has_tags_id(),
                    tag_cols,
                    fields: t
                        .fields
                        .iter()
                        .map(|f| (PgType::of(f.data_type), f.name.clone()))
                        .collect(),
                    copy_sql: sql::copy_in(&t.name, &columns, cfg.copy_format),
                    unnest_sql: sql::insert_unnest(&t.name, &columns),
                    ledger_sql: HashMap::new(),
                    chunk_rows: sql::rows_per_chunk(columns.len()),
                    prefix: sql::insert_prefix(&t.name, &columns),
                    full: String::new(),
                    tails: HashMap::new(),
                    columns,
                    tag_bytes: Vec::new(),
                    tag_spans: Vec::new(),
                }
            })
            .collect();
        let stride = schema
            .tables
            .iter()
            .flat_map(|t| t.tags.iter().map(|tag| tag.slot + 1))
            .max()
            .unwrap_or(0)
            .max(schema.tag_slots);
        let tags = placement.has_tags_id().then(|| TagsTable {
            insert_sql: sql::insert_tags(&slots),
            slots: slots
                .into_iter()
                .map(|s| (s.slot, s.column.wire, s.column.name))
                .collect(),
            known: HashSet::new(),
            pending: Vec::new(),
            pending_values: Vec::new(),
        });
        PostgresConn {
            conn: Some(conn),
            connector,
            ledger: (cfg.delivery == Delivery::ExactlyOnce).then_some(cfg.run_id),
            in_transaction: false,
            state: Writer {
                method: cfg.method,
                format: cfg.copy_format,
                tables,
                devices: Devices {
                    source: schema,
                    stride,
                    index: HashMap::new(),
                    values: Vec::new(),
                    scratch: Vec::with_capacity(stride),
                },
                row_dev: Vec::new(),
                buf: Vec::new(),
                arrays: Vec::new(),
                tags,
                ledger_row: None,
            },
        }
    }
}

impl Writer {
    /// Fails with Rejected when `batch` does not match the schema this connection was
    /// opened for (so that encoding below cannot index out of range).
    fn check_batch(&self, batch: &Batch) -> Result<(), SinkError> {
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
    fn resolve(&mut self, batch: &Batch) -> Result<(), SinkError> {
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
    fn plan_ledger_statement(&mut self, batch: &Batch) -> bool {
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
    fn statements(&self, batch: &Batch) -> usize {
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
    async fn send_all(&mut self, conn: &mut PgConnection, batch: &Batch) -> Result<u64, Failure> {
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

/// Appends one `bigint[]` UNNEST array of device numbers (the tags table's `id`, the rows'
/// `tags_id`) to `buf`, and its range to `arrays`.
fn push_device_ids(
    buf: &mut Vec<u8>,
    arrays: &mut Vec<Range<usize>>,
    devices: &[u32],
) -> Result<(), Failure> {
    let at = buf.len();
    let mut a = ArrayWriter::begin(buf, PgType::Int8, devices.len())?;
    for &device in devices {
        a.push(buf, &Value::Int8(i64::from(device)))?;
    }
    a.finish(buf);
    arrays.push(at..buf.len());
    Ok(())
}

/// Adds one parameter; sqlx only fails here when a value passes 2 GiB.
fn add<'q, T>(args: &mut PgArguments, value: T, table: &str) -> Result<(), SinkError>
where
    T: sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + 'q,
{
    args.add(value)
        .map_err(|e| SinkError::new(ErrorKind::Rejected, format!("table {table}: {e}")))
}

/// Binds row `row` of `tb` (ts, tags_id, own tags, fields); returns its payload bytes.
fn bind_row(
    args: &mut PgArguments,
    t: &TableState,
    devices: &Devices,
    row_dev: &[u32],
    tb: &TableBatch,
    row: usize,
) -> Result<u64, SinkError> {
    let mut bytes = 0;
    let mut push = |args: &mut PgArguments, value: Value<'_>, ty: PgType| {
        bytes += binary_len(&value);
        add(args, Param { value, ty }, &t.label)
    };
    push(args, Value::Timestamptz(tb.ts[row]), PgType::Timestamptz)?;
    if has_tags_id(t) {
        push(args, Value::Int8(i64::from(tb.device[row])), PgType::Int8)?;
    }
    for (slot, ty, name) in &t.tag_cols {
        let value = &devices.of(row_dev[row])[*slot];
        let value = encode::convert(Cell::of_tag(value), *ty)
            .map_err(|e| tag_error(&t.label, name, tb.device[row], &e))?;
        push(args, value, *ty)?;
    }
    for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
        let value = encode::convert(Cell::of_field(column, row), *ty)
            .map_err(|e| field_error(t, col, row, &e))?;
        push(args, value, *ty)?;
    }
    Ok(bytes)
}

/// Bytes of a value in binary format (numbers as text counted as 8).
fn binary_len(value: &Value<'_>) -> u64 {
    match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int2(_) => 2,
        Value::Int4(_) | Value::Float4(_) => 4,
        Value::Str(s) => s.len() as u64,
        _ => 8,
    }
}

/// Rows of `tb` in COPY's text format: `ts [\t tags_id] [\t <own tags>] \t <fields> \n`.
fn encode_copy_text(
    buf: &mut Vec<u8>,
    t: &TableState,
    tb: &TableBatch,
    row_dev: &[u32],
) -> Result<(), SinkError> {
    let tags_id = has_tags_id(t);
    for row in 0..tb.rows() {
        encode::push_timestamp_text(buf, tb.ts[row]);
        if tags_id {
            buf.push(b'\t');
            buf.extend_from_slice(itoa::Buffer::new().format(tb.device[row]).as_bytes());
        }
        if !t.tag_cols.is_empty()
            && let Some(&dense) = row_dev.get(row)
        {
            buf.extend_from_slice(t.tag_section(dense));
        }
        for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
            let value = encode::convert(Cell::of_field(column, row), *ty)
                .map_err(|e| field_error(t, col, row, &e))?;
            buf.push(b'\t');
            encode::write_text(buf, &value);
        }
        buf.push(b'\n');
    }
    Ok(())
}

/// Rows of `tb` in COPY's binary format, header and trailer included.
fn encode_copy_binary(
    buf: &mut Vec<u8>,
    t: &TableState,
    tb: &TableBatch,
    row_dev: &[u32],
) -> Result<(), SinkError> {
    let tags_id = has_tags_id(t);
    let columns = i16::try_from(t.columns.len()).map_err(|_| {
        SinkError::new(
            ErrorKind::Rejected,
            format!("table {}: more than 32,767 columns", t.label),
        )
    })?;
    buf.extend_from_slice(COPY_BINARY_HEADER);
    for row in 0..tb.rows() {
        buf.extend_from_slice(&columns.to_be_bytes());
        buf.extend_from_slice(&8i32.to_be_bytes());
        buf.extend_from_slice(&encode::pg_micros(tb.ts[row]).to_be_bytes());
        if tags_id {
            buf.extend_from_slice(&8i32.to_be_bytes());
            buf.extend_from_slice(&i64::from(tb.device[row]).to_be_bytes());
        }
        if !t.tag_cols.is_empty()
            && let Some(&dense) = row_dev.get(row)
        {
            buf.extend_from_slice(t.tag_section(dense));
        }
        for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
            let value = encode::convert(Cell::of_field(column, row), *ty)
                .map_err(|e| field_error(t, col, row, &e))?;
            encode::write_binary_field(buf, &value).map_err(|e| field_error(t, col, row, &e))?;
        }
    }
    buf.extend_from_slice(COPY_BINARY_TRAILER);
    Ok(())
}

fn has_tags_id(t: &TableState) -> bool {
    t.tags_id
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        SinkError::new(ErrorKind::Rejected, message).into()
    }
}

impl SinkConn for PostgresConn {
    fn settles_ambiguity(&self) -> bool {
        self.ledger.is_some()
    }

    async fn write(&mut self, batch: &Batch, id: BatchId) -> Result<WriteAck, SinkError> {
        let state = &mut self.state;
        state.check_batch(batch)?;
        let rows = batch.rows();
        if rows == 0 {
            return Ok(WriteAck::default());
        }
        state.resolve(batch)?;
        if self.in_transaction {
            // A write future dropped mid-transaction left it open: start afresh rather
            // than add this batch to it.
            self.conn = None;
            self.in_transaction = false;
        }
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(self.connector.open().await?),
        };
        let result = match self.ledger {
            Some(run_id) if state.plan_ledger_statement(batch) => {
                // One statement records the batch with its rows: no BEGIN / COMMIT.
                state.ledger_row = Some([
                    run_id,
                    i64::from(id.worker),
                    i64::try_from(id.seq).unwrap_or(i64::MAX),
                    i64::try_from(rows).unwrap_or(i64::MAX),
                ]);
                let sent = state.send_all(conn, batch).await;
                state.ledger_row = None;
                match sent {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(f) if is_ledger_conflict(&f) => Ok(None),
                    // Lost with the statement sent: it may have committed.
                    Err(f) if f.broken => Err(Failure {
                        error: f.error.into_ambiguous(),
                        ..f
                    }),
                    Err(f) => Err(f),
                }
            }
            Some(run_id) => {
                let commit = tsload_sql::ledger_and_commit(run_id, id.worker, id.seq, rows);
                write_in_transaction(conn, state, batch, &commit, &mut self.in_transaction).await
            }
            // One statement is atomic on its own: no BEGIN / COMMIT round trips.
            None if state.statements(batch) == 1 => {
                state.send_all(conn, batch).await.map(Some).map_err(|f| {
                    // Lost with the statement sent: it may have committed.
                    if f.broken {
                        Failure {
                            error: f.error.into_ambiguous(),
                            ..f
                        }
                    } else {
                        f
                    }
                })
            }
            None => {
                write_in_transaction(conn, state, batch, "COMMIT", &mut self.in_transaction).await
            }
        };
        match result {
            Ok(stored) => {
                if let Some(tags) = &mut state.tags {
                    tags.known.extend(tags.pending.drain(..));
                }
                Ok(WriteAck {
                    rows: rows as u64,
                    bytes: stored.unwrap_or(0),
                    duplicate: stored.is_none(),
                    metrics: None,
                })
            }
            Err(Failure { error, broken, .. }) => {
                if broken {
                    // Reopened by the next write; dropping closes the socket.
                    self.conn = None;
                    self.in_transaction = false;
                }
                Err(error)
            }
        }
    }
}

/// BEGIN, every statement, then `commit` (`COMMIT`, or the ledger row and COMMIT in one
/// simple query); ROLLBACK when a step fails, so a failed write wrote nothing.
/// `Ok(Some(bytes))` when stored, `Ok(None)` when the ledger shows an earlier attempt of
/// the batch committed (nothing stored again). A connection lost during the commit
/// query is ambiguous: the COMMIT may have been applied.
///
/// BEGIN and COMMIT are plain text statements rather than sqlx's `Transaction`, so that
/// the ledger row travels with the COMMIT; `in_transaction` is set from BEGIN until the
/// COMMIT or ROLLBACK has been answered.
async fn write_in_transaction(
    conn: &mut PgConnection,
    state: &mut Writer,
    batch: &Batch,
    commit: &str,
    in_transaction: &mut bool,
) -> Result<Option<u64>, Failure> {
    *in_transaction = true;
    conn.execute(sqlx::raw_sql("BEGIN"))
        .await
        .map_err(|e| db_failure("starting the write transaction", &e))?;
    let bytes = match state.send_all(conn, batch).await {
        Ok(bytes) => bytes,
        Err(failure) => return Err(rollback(conn, in_transaction, failure).await),
    };
    match conn.execute(sqlx::raw_sql(commit)).await {
        Ok(_) => {
            *in_transaction = false;
            Ok(Some(bytes))
        }
        Err(sqlx::Error::Database(db))
            if db.is_unique_violation() && db.constraint() == Some(sql::LEDGER_KEY) =>
        {
            // An earlier attempt of this batch is committed (the INSERT waited for it if
            // it was still committing): undo this one.
            let done = Failure::from(SinkError::new(ErrorKind::Other, "already stored"));
            let after = rollback(conn, in_transaction, done).await;
            if after.broken { Err(after) } else { Ok(None) }
        }
        Err(e) => {
            let failure = db_failure("committing the write transaction", &e);
            if failure.broken {
                Err(Failure {
                    error: failure.error.into_ambiguous(),
                    ..failure
                })
            } else {
                Err(rollback(conn, in_transaction, failure).await)
            }
        }
    }
}

/// Whether the failure is the ledger's primary key: the batch was stored by an earlier
/// attempt (the statement waited for it if it was still committing).
fn is_ledger_conflict(f: &Failure) -> bool {
    f.ledger_conflict
}

/// Rolls the open transaction back after `failure`; a ROLLBACK that fails marks the
/// connection broken.
async fn rollback(
    conn: &mut PgConnection,
    in_transaction: &mut bool,
    mut failure: Failure,
) -> Failure {
    if !failure.broken {
        if conn.execute(sqlx::raw_sql("ROLLBACK")).await.is_ok() {
            *in_transaction = false;
        } else {
            failure.broken = true;
        }
    }
    failure
}
