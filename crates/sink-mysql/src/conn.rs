//! One worker's MySQL connection: reads `max_allowed_packet` once, caches the INSERT text
//! per (table, rows) and the tag values of the devices it has seen, and writes each batch
//! as prepared multi-row INSERTs, in one transaction or each committing by itself. A
//! connection that broke is reopened by the next write.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::mysql::{MySqlArguments, MySqlConnection};
use sqlx::{Arguments, Encode, Executor, MySql, Type};
use tsload_core::{
    Batch, BatchId, ColumnValues, Delivery, ErrorKind, Schema, SinkConn, SinkError, TableBatch,
    TagCache, TagValue, WriteAck,
};

use crate::error::sink_error;
use crate::sql::{self, DATETIME_LEN};
use crate::{Inner, TransactionMode, TsType};

/// Distinct INSERT texts kept per table. Batches of one size need two (full chunks and the
/// remainder); a run whose row counts vary more just rebuilds the odd statement.
const MAX_CACHED_TEXTS: usize = 32;

/// Connection of [`crate::MysqlSink`], one per worker in-flight slot.
#[derive(Debug)]
pub struct MysqlConn {
    inner: Arc<Inner>,
    /// `None` after a failure that may have broken the connection; the next write reopens.
    conn: Option<MySqlConnection>,
    /// The server's `max_allowed_packet`, read when the connection opened.
    max_packet: u64,
    tables: Vec<TableState>,
    tags: TagCache,
    /// For every row of the batch being written (tables one after the other), the offset of
    /// its device's values in `tags.values()`. Reused between batches.
    row_tags: Vec<usize>,
    /// Between BEGIN and the end of its COMMIT or ROLLBACK.
    in_transaction: bool,
}

/// What a connection keeps per schema table.
#[derive(Debug)]
struct TableState {
    /// The table name, quoted, for messages.
    label: String,
    /// Tag slot of each tag column, in column order.
    tag_slots: Vec<usize>,
    fields: usize,
    /// Columns per row: ts + tags + fields.
    columns: usize,
    /// `INSERT INTO `t` (...) VALUES `.
    prefix: String,
    /// Rows per INSERT for the batch being written.
    chunk_rows: usize,
    /// INSERT texts by row count.
    texts: HashMap<usize, String>,
}

impl TableState {
    fn ensure_text(&mut self, rows: usize) {
        if rows == 0 || self.texts.contains_key(&rows) {
            return;
        }
        if self.texts.len() >= MAX_CACHED_TEXTS {
            self.texts.clear();
        }
        let text = sql::insert(&self.prefix, self.columns, rows);
        self.texts.insert(rows, text);
    }
}

/// Bytes a tag value takes as a bound parameter.
fn tag_bytes(value: &TagValue) -> usize {
    match value {
        TagValue::Null => 0,
        TagValue::Str(s) => sql::lenenc_str_len(s.len()),
        TagValue::Int(_) | TagValue::Float(_) => 8,
        TagValue::Bool(_) => 1,
    }
}

/// Bytes the `ts` parameter takes.
fn ts_bytes(ts_type: TsType) -> usize {
    match ts_type {
        TsType::DateTime6 => sql::lenenc_str_len(DATETIME_LEN),
        TsType::BigIntNs => 8,
    }
}

impl MysqlConn {
    pub(crate) async fn open(inner: Arc<Inner>, schema: Arc<Schema>) -> Result<Self, SinkError> {
        let tables: Vec<TableState> = schema
            .tables
            .iter()
            .map(|t| TableState {
                label: sql::quote_ident(&t.name),
                tag_slots: t.tags.iter().map(|tag| tag.slot).collect(),
                fields: t.fields.len(),
                columns: sql::column_count(t),
                prefix: sql::insert_prefix(t),
                chunk_rows: 1,
                texts: HashMap::new(),
            })
            .collect();
        let stride = tables
            .iter()
            .flat_map(|t| t.tag_slots.iter().map(|s| s + 1))
            .max()
            .unwrap_or(0)
            .max(schema.tag_slots);
        let mut conn = MysqlConn {
            inner,
            conn: None,
            max_packet: 0,
            tags: TagCache::new(schema, stride),
            tables,
            row_tags: Vec::new(),
            in_transaction: false,
        };
        conn.reopen().await?;
        Ok(conn)
    }

    /// Opens a fresh connection, sets the commit mode and reads `max_allowed_packet`.
    async fn reopen(&mut self) -> Result<(), SinkError> {
        self.conn = None;
        let mut conn = self.inner.open().await?;
        let setup = |e: sqlx::Error| sink_error("setting up the connection", &e);
        // STRICT_ALL_TABLES: a bad value (a null key column, a string too long) is an
        // error in every row of a multi-row INSERT, also for non-transactional engines,
        // where STRICT_TRANS_TABLES alone silently adjusts it after the first row.
        let mut set = String::from("SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')");
        if self.inner.cfg.transaction == TransactionMode::Autocommit {
            set.push_str(", autocommit = 1");
        }
        conn.execute(sqlx::raw_sql(&set)).await.map_err(setup)?;
        let max: i64 = sqlx::query_scalar("SELECT CAST(@@max_allowed_packet AS SIGNED)")
            .persistent(false)
            .fetch_one(&mut conn)
            .await
            .map_err(setup)?;
        // The server's minimum is 1 KiB; never plan with less.
        self.max_packet = u64::try_from(max).unwrap_or(0).max(1024);
        self.conn = Some(conn);
        Ok(())
    }

    /// Fails with Rejected when `batch` does not match the schema this connection was
    /// opened for (so that binding below cannot index out of range).
    fn check_batch(&self, batch: &Batch) -> Result<(), SinkError> {
        batch
            .check_shape(self.tables.iter().map(|t| t.fields))
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

    /// Fills `row_tags` for every row, sizes each table's chunks from its largest row and
    /// makes sure every INSERT the batch needs is built, so that the write itself only
    /// borrows.
    fn resolve(&mut self, batch: &Batch) -> Result<(), SinkError> {
        self.row_tags.clear();
        let budget = sql::packet_budget(self.max_packet);
        let ts_type = self.inner.cfg.ts_type;
        for (t, tb) in self.tables.iter_mut().zip(&batch.tables) {
            let rows = tb.rows();
            if rows == 0 {
                continue;
            }
            // Every number at full width (a null costs less), strings by their length.
            let mut fixed = sql::row_overhead(t.columns) + ts_bytes(ts_type);
            let mut str_columns = Vec::new();
            for c in &tb.columns {
                match &c.values {
                    ColumnValues::Int(_) | ColumnValues::Float(_) => fixed += 8,
                    ColumnValues::Bool(_) => fixed += 1,
                    ColumnValues::Str(v) => str_columns.push(v),
                }
            }
            let mut widest = 0;
            let first = self.row_tags.len();
            for (row, &device) in tb.device.iter().enumerate() {
                let mut bytes = 0;
                if !t.tag_slots.is_empty() {
                    let offset = self.tags.offset(device);
                    self.row_tags.push(offset);
                    let values = &self.tags.values()[offset..];
                    bytes += t
                        .tag_slots
                        .iter()
                        .map(|&s| tag_bytes(&values[s]))
                        .sum::<usize>();
                }
                for v in &str_columns {
                    let start = if row == 0 { 0 } else { v.ends[row - 1] };
                    bytes += sql::lenenc_str_len((v.ends[row] - start) as usize);
                }
                widest = widest.max(bytes);
            }
            if t.tag_slots.is_empty() {
                self.row_tags.resize(first + rows, 0);
            }
            let row_bytes = fixed + widest;
            if (row_bytes + sql::EXECUTE_OVERHEAD) as u64 > self.max_packet {
                return Err(SinkError::new(
                    ErrorKind::Rejected,
                    format!(
                        "table {}: a row of about {row_bytes} bytes does not fit the server's \
                         max_allowed_packet of {} bytes",
                        t.label, self.max_packet
                    ),
                ));
            }
            t.chunk_rows = sql::rows_per_chunk(t.columns, t.prefix.len(), row_bytes, budget);
            if rows >= t.chunk_rows {
                t.ensure_text(t.chunk_rows);
            }
            t.ensure_text(rows % t.chunk_rows);
        }
        Ok(())
    }

    /// Forgets the connection after an `error` that may have broken it (the next write
    /// reopens it).
    fn forget_if_broken(&mut self, error: &SinkError) {
        if matches!(error.kind, ErrorKind::Connection | ErrorKind::Timeout) {
            self.conn = None;
        }
    }
}

impl SinkConn for MysqlConn {
    fn settles_ambiguity(&self) -> bool {
        self.ledger().is_some()
    }

    async fn write(&mut self, batch: &Batch, id: BatchId) -> Result<WriteAck, SinkError> {
        self.check_batch(batch)?;
        let rows = batch.rows();
        if rows == 0 {
            return Ok(WriteAck::default());
        }
        if self.in_transaction {
            // A write future dropped mid-transaction left it open: start afresh rather
            // than add this batch to it.
            self.conn = None;
            self.in_transaction = false;
        }
        if self.conn.is_none() {
            self.reopen().await?;
        }
        self.resolve(batch)?;
        let result = self.write_resolved(batch, id).await;
        match result {
            Ok(stored) => Ok(WriteAck {
                rows: rows as u64,
                bytes: stored.unwrap_or(0),
                duplicate: stored.is_none(),
                metrics: None,
            }),
            Err(e) => {
                self.forget_if_broken(&e);
                Err(e)
            }
        }
    }
}

impl MysqlConn {
    /// This run's id when batches are recorded in the ledger.
    fn ledger(&self) -> Option<i64> {
        (self.inner.cfg.delivery == Delivery::ExactlyOnce).then_some(self.inner.cfg.run_id)
    }

    /// Writes the batch; `Ok(Some(bytes))` when stored now, `Ok(None)` when the ledger
    /// shows an earlier attempt stored it (nothing stored again).
    ///
    /// BEGIN and COMMIT go as plain text statements rather than through sqlx's
    /// `Transaction`, so that the ledger row and the COMMIT travel in one round trip.
    async fn write_resolved(
        &mut self,
        batch: &Batch,
        id: BatchId,
    ) -> Result<Option<u64>, SinkError> {
        let ledger = self.ledger();
        let MysqlConn {
            inner,
            conn,
            tables,
            tags,
            row_tags,
            in_transaction,
            ..
        } = self;
        let Some(conn) = conn.as_mut() else {
            return Err(SinkError::new(
                ErrorKind::Connection,
                format!("no connection to {}", inner.label),
            ));
        };
        let ts_type = inner.cfg.ts_type;
        if inner.cfg.transaction == TransactionMode::Autocommit {
            // Each statement commits on its own: a lost answer may leave any part of the
            // batch stored.
            return insert_all(conn, tables, tags.values(), row_tags, batch, ts_type)
                .await
                .map(Some)
                .map_err(ambiguous_if_lost);
        }
        *in_transaction = true;
        conn.execute(sqlx::raw_sql("BEGIN"))
            .await
            .map_err(|e| sink_error("starting the write transaction", &e))?;
        let bytes = match insert_all(conn, tables, tags.values(), row_tags, batch, ts_type).await {
            Ok(bytes) => bytes,
            Err(e) => return Err(rollback(conn, in_transaction, e).await),
        };
        let commit = match ledger {
            Some(run_id) => tsload_sql::ledger_and_commit(run_id, id.worker, id.seq, batch.rows()),
            None => "COMMIT".to_string(),
        };
        match conn.execute(sqlx::raw_sql(&commit)).await {
            Ok(_) => {
                *in_transaction = false;
                Ok(Some(bytes))
            }
            Err(sqlx::Error::Database(db)) if ledger.is_some() && db.is_unique_violation() => {
                // An earlier attempt of this batch is committed (the INSERT waited for it
                // if it was still committing): undo this one.
                let e = SinkError::new(ErrorKind::Other, "batch already in the ledger");
                match rollback(conn, in_transaction, e).await {
                    e if e.kind == ErrorKind::Connection => Err(e),
                    _ => Ok(None),
                }
            }
            Err(e) => {
                let e = sink_error("committing the write transaction", &e);
                if matches!(e.kind, ErrorKind::Connection | ErrorKind::Timeout) {
                    // The COMMIT may have been applied before the answer was lost.
                    Err(e.into_ambiguous())
                } else {
                    Err(rollback(conn, in_transaction, e).await)
                }
            }
        }
    }
}

/// A connection lost or timed out during autocommitted statements may have stored them.
fn ambiguous_if_lost(e: SinkError) -> SinkError {
    if matches!(e.kind, ErrorKind::Connection | ErrorKind::Timeout) {
        e.into_ambiguous()
    } else {
        e
    }
}

/// Rolls the open transaction back after `e` and returns `e`; when the rollback fails too
/// the connection is gone, which the returned error then says (kind Connection, so the
/// next write reopens it).
async fn rollback(
    conn: &mut MySqlConnection,
    in_transaction: &mut bool,
    e: SinkError,
) -> SinkError {
    match conn.execute(sqlx::raw_sql("ROLLBACK")).await {
        Ok(_) => {
            *in_transaction = false;
            e
        }
        Err(rollback) => SinkError::new(
            ErrorKind::Connection,
            format!(
                "{} (and the rollback failed: {})",
                e.message,
                crate::error::describe(&rollback)
            ),
        ),
    }
}

/// Inserts every row of `batch`, `chunk_rows` rows per statement, and returns the
/// estimated bytes of the EXECUTE packets (binary protocol: type bytes, null bitmap,
/// values).
async fn insert_all(
    conn: &mut MySqlConnection,
    tables: &[TableState],
    tags: &[TagValue],
    row_tags: &[usize],
    batch: &Batch,
    ts_type: TsType,
) -> Result<u64, SinkError> {
    let mut bytes = 0u64;
    let mut first_row = 0;
    for (t, tb) in tables.iter().zip(&batch.tables) {
        let rows = tb.rows();
        let table_tags = &row_tags[first_row..first_row + rows];
        first_row += rows;
        let mut start = 0;
        while start < rows {
            let n = (rows - start).min(t.chunk_rows);
            let Some(text) = t.texts.get(&n) else {
                return Err(SinkError::new(
                    ErrorKind::Other,
                    format!("table {}: no INSERT built for {n} rows", t.label),
                ));
            };
            let mut args = MySqlArguments::default();
            let mut chunk_bytes = sql::EXECUTE_OVERHEAD;
            for (row, &tag_offset) in table_tags.iter().enumerate().skip(start).take(n) {
                chunk_bytes +=
                    bind_row(&mut args, t, tags, tag_offset, tb, row, ts_type).map_err(|e| {
                        SinkError::new(ErrorKind::Rejected, format!("table {}: {e}", t.label))
                    })?;
            }
            sqlx::query_with(text.as_str(), args)
                .execute(&mut *conn)
                .await
                .map_err(|e| sink_error(&format!("table {}", t.label), &e))?;
            bytes += chunk_bytes as u64;
            start += n;
        }
    }
    Ok(bytes)
}

type BindResult = Result<usize, sqlx::error::BoxDynError>;

/// Binds row `row` of `tb` (ts, tags from the cache at `tag_offset`, fields); returns the
/// bytes it adds to the EXECUTE packet.
fn bind_row(
    args: &mut MySqlArguments,
    t: &TableState,
    tags: &[TagValue],
    tag_offset: usize,
    tb: &TableBatch,
    row: usize,
    ts_type: TsType,
) -> BindResult {
    let mut bytes = sql::row_overhead(t.columns);
    bytes += match ts_type {
        TsType::DateTime6 => {
            let mut buf = [0u8; DATETIME_LEN];
            add_str(args, sql::format_datetime(tb.ts[row], &mut buf))?
        }
        TsType::BigIntNs => add(args, tb.ts[row], 8)?,
    };
    for &slot in &t.tag_slots {
        bytes += match &tags[tag_offset + slot] {
            TagValue::Null => add(args, None::<i64>, 0)?,
            TagValue::Str(s) => add_str(args, s)?,
            TagValue::Int(v) => add(args, *v, 8)?,
            TagValue::Float(v) => add(args, *v, 8)?,
            TagValue::Bool(v) => add(args, *v, 1)?,
        };
    }
    for column in &tb.columns {
        if !column.is_valid(row) {
            add(args, None::<i64>, 0)?;
            continue;
        }
        bytes += match &column.values {
            ColumnValues::Int(v) => add(args, v[row], 8)?,
            ColumnValues::Float(v) => add(args, v[row], 8)?,
            ColumnValues::Bool(v) => add(args, v[row], 1)?,
            ColumnValues::Str(v) => add_str(args, v.get(row))?,
        };
    }
    Ok(bytes)
}

/// Binds `value` (encoded into the arguments right away) and returns `bytes`.
fn add<'q, T: Encode<'q, MySql> + Type<MySql> + 'q>(
    args: &mut MySqlArguments,
    value: T,
    bytes: usize,
) -> BindResult {
    Arguments::add(args, value)?;
    Ok(bytes)
}

fn add_str(args: &mut MySqlArguments, value: &str) -> BindResult {
    Arguments::add(args, value)?;
    Ok(sql::lenenc_str_len(value.len()))
}
