//! One worker's SQLite connection: caches the INSERT text and the tag values of the devices
//! it has seen, and writes each batch as one `BEGIN IMMEDIATE` transaction.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::sqlite::{SqliteArguments, SqliteConnection};
use sqlx::{Arguments, Connection, Encode, Sqlite, Type};
use tsload_core::{
    Batch, BatchId, ColumnValues, ErrorKind, Schema, SinkConn, SinkError, TableBatch, TagCache,
    TagValue, WriteAck,
};

use crate::error::sink_error;
use crate::sql;

/// Distinct partial-chunk INSERTs kept per table. Batches of one size need one; a run whose
/// row counts vary more just rebuilds the odd statement.
const MAX_CACHED_TAILS: usize = 32;

/// Connection of [`crate::SqliteSink`], one per worker in-flight slot.
#[derive(Debug)]
pub struct SqliteConn {
    conn: SqliteConnection,
    tables: Vec<TableState>,
    tags: TagCache,
    /// For every row of the batch being written (tables one after the other), the offset of
    /// its device's values in `tags.values()`. Reused between batches.
    row_tags: Vec<usize>,
    /// Exactly-once delivery: this run's id in the ledger.
    ledger: Option<i64>,
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
    /// Rows of a full chunk.
    chunk_rows: usize,
    /// `INSERT INTO "t" (...) VALUES `.
    prefix: String,
    /// The INSERT for a full chunk.
    full: String,
    /// INSERTs for partial chunks, by row count.
    tails: HashMap<usize, String>,
}

impl TableState {
    /// The INSERT for `rows` rows, if built.
    fn insert_sql(&self, rows: usize) -> Option<&str> {
        if rows == self.chunk_rows {
            Some(&self.full)
        } else {
            self.tails.get(&rows).map(String::as_str)
        }
    }

    fn ensure_tail(&mut self, rows: usize) {
        if rows == 0 || rows == self.chunk_rows || self.tails.contains_key(&rows) {
            return;
        }
        if self.tails.len() >= MAX_CACHED_TAILS {
            self.tails.clear();
        }
        let text = sql::insert(&self.prefix, self.columns, rows);
        self.tails.insert(rows, text);
    }
}

impl SqliteConn {
    pub(crate) fn new(conn: SqliteConnection, schema: Arc<Schema>, ledger: Option<i64>) -> Self {
        let tables: Vec<TableState> = schema
            .tables
            .iter()
            .map(|t| {
                let columns = sql::column_count(t);
                let chunk_rows = sql::rows_per_chunk(columns);
                let prefix = sql::insert_prefix(t);
                // Built lazily: a run whose batches never fill a chunk never needs it.
                let full = String::new();
                TableState {
                    label: sql::quote_ident(&t.name),
                    tag_slots: t.tags.iter().map(|tag| tag.slot).collect(),
                    fields: t.fields.len(),
                    columns,
                    chunk_rows,
                    prefix,
                    full,
                    tails: HashMap::new(),
                }
            })
            .collect();
        let stride = tables
            .iter()
            .flat_map(|t| t.tag_slots.iter().map(|s| s + 1))
            .max()
            .unwrap_or(0)
            .max(schema.tag_slots);
        SqliteConn {
            conn,
            tags: TagCache::new(schema, stride),
            tables,
            row_tags: Vec::new(),
            ledger,
        }
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

    /// Fills `row_tags` for every row and makes sure every INSERT the batch needs is built,
    /// so that the write itself only borrows.
    fn resolve(&mut self, batch: &Batch) {
        self.row_tags.clear();
        for (t, tb) in self.tables.iter_mut().zip(&batch.tables) {
            let rows = tb.rows();
            if t.tag_slots.is_empty() {
                self.row_tags.resize(self.row_tags.len() + rows, 0);
            } else {
                for &device in &tb.device {
                    self.row_tags.push(self.tags.offset(device));
                }
            }
            if rows >= t.chunk_rows && t.full.is_empty() {
                t.full = sql::insert(&t.prefix, t.columns, t.chunk_rows);
            }
            t.ensure_tail(rows % t.chunk_rows);
        }
    }
}

impl SinkConn for SqliteConn {
    fn settles_ambiguity(&self) -> bool {
        self.ledger.is_some()
    }

    async fn write(&mut self, batch: &Batch, id: BatchId) -> Result<WriteAck, SinkError> {
        self.check_batch(batch)?;
        let rows = batch.rows();
        if rows == 0 {
            return Ok(WriteAck::default());
        }
        self.resolve(batch);

        let SqliteConn {
            conn,
            tables,
            tags,
            row_tags,
            ledger,
        } = self;
        // IMMEDIATE takes the write lock up front (waiting up to busy_timeout). A deferred
        // transaction would start as a reader, and two readers upgrading to writers
        // deadlock with SQLITE_BUSY that no timeout resolves. If this future is dropped
        // mid-write, sqlx's Transaction rolls back on drop.
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| sink_error("starting the write transaction", &e))?;
        let written = match insert_all(&mut tx, tables, tags.values(), row_tags, batch).await {
            Ok(bytes) => match *ledger {
                Some(run_id) => match record_in_ledger(&mut tx, run_id, id, rows).await {
                    Ok(true) => Ok(bytes),
                    Ok(false) => {
                        // Stored by an earlier attempt: undo this one's rows.
                        let _ = tx.rollback().await;
                        return Ok(WriteAck {
                            rows: rows as u64,
                            bytes: 0,
                            duplicate: true,
                            metrics: None,
                        });
                    }
                    Err(e) => Err(e),
                },
                None => Ok(bytes),
            },
            Err(e) => Err(e),
        };
        match written {
            Ok(bytes) => {
                // A failed COMMIT leaves the transaction open; dropping `tx` (consumed by
                // `commit`) then rolls it back, so a failed write wrote nothing.
                tx.commit()
                    .await
                    .map_err(|e| sink_error("committing the write transaction", &e))?;
                Ok(WriteAck {
                    rows: rows as u64,
                    bytes,
                    duplicate: false,
                    metrics: None,
                })
            }
            Err(e) => {
                // Nothing to add if the rollback fails too: the connection is then broken
                // and the next write says so.
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }
}

/// Records batch `id` of run `run_id` in the ledger; `Ok(false)` when it is there already
/// (an earlier attempt of the batch was stored).
async fn record_in_ledger(
    conn: &mut SqliteConnection,
    run_id: i64,
    id: BatchId,
    rows: usize,
) -> Result<bool, SinkError> {
    let result = sqlx::query(sql::INSERT_LEDGER)
        .bind(run_id)
        .bind(i64::from(id.worker))
        .bind(i64::try_from(id.seq).unwrap_or(i64::MAX))
        .bind(i64::try_from(rows).unwrap_or(i64::MAX))
        .execute(&mut *conn)
        .await;
    match result {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(false),
        Err(e) => Err(sink_error("recording the batch in the ledger", &e)),
    }
}

/// Inserts every row of `batch`, a chunk of at most [`sql::MAX_PARAMS`] values per
/// statement, and returns the approximate payload size (8 bytes per number, string
/// lengths).
///
/// Values are bound by reference where sqlx allows: strings borrow from the batch and
/// from the tag cache (`&str` with the query's lifetime), so this code allocates per
/// chunk (the argument vector) and not per row. sqlx 0.8 itself copies borrowed text
/// into owned strings when it hands the arguments to its connection thread.
async fn insert_all(
    conn: &mut SqliteConnection,
    tables: &[TableState],
    tags: &[TagValue],
    row_tags: &[usize],
    batch: &Batch,
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
            let Some(text) = t.insert_sql(n) else {
                return Err(SinkError::new(
                    ErrorKind::Other,
                    format!("table {}: no INSERT built for {n} rows", t.label),
                ));
            };
            let mut args = SqliteArguments::default();
            args.reserve(n * t.columns, 0);
            for (row, &tag_offset) in table_tags.iter().enumerate().skip(start).take(n) {
                bytes += bind_row(&mut args, t, tags, tag_offset, tb, row).map_err(|e| {
                    SinkError::new(ErrorKind::Rejected, format!("table {}: {e}", t.label))
                })?;
            }
            sqlx::query_with(text, args)
                .execute(&mut *conn)
                .await
                .map_err(|e| sink_error(&format!("table {}", t.label), &e))?;
            start += n;
        }
    }
    Ok(bytes)
}

type BindResult = Result<u64, sqlx::error::BoxDynError>;

/// Binds row `row` of `tb` (ts, tags from the cache at `tag_offset`, fields); returns its
/// approximate payload bytes.
fn bind_row<'q>(
    args: &mut SqliteArguments<'q>,
    t: &TableState,
    tags: &'q [TagValue],
    tag_offset: usize,
    tb: &'q TableBatch,
    row: usize,
) -> BindResult {
    add(args, tb.ts[row])?;
    let mut bytes = 8;
    for &slot in &t.tag_slots {
        bytes += match &tags[tag_offset + slot] {
            TagValue::Null => add_null(args)?,
            TagValue::Str(s) => {
                let s: &'q str = s;
                add(args, s)?;
                s.len() as u64
            }
            TagValue::Int(v) => add_number(args, *v)?,
            TagValue::Float(v) => add_number(args, *v)?,
            TagValue::Bool(v) => add_number(args, *v)?,
        };
    }
    for column in &tb.columns {
        if !column.is_valid(row) {
            add_null(args)?;
            continue;
        }
        bytes += match &column.values {
            ColumnValues::Int(v) => add_number(args, v[row])?,
            ColumnValues::Float(v) => add_number(args, v[row])?,
            ColumnValues::Bool(v) => add_number(args, v[row])?,
            ColumnValues::Str(v) => {
                let s = v.get(row);
                add(args, s)?;
                s.len() as u64
            }
        };
    }
    Ok(bytes)
}

fn add<'q, T: Encode<'q, Sqlite> + Type<Sqlite> + 'q>(
    args: &mut SqliteArguments<'q>,
    value: T,
) -> Result<(), sqlx::error::BoxDynError> {
    Arguments::add(args, value)
}

fn add_number<'q, T: Encode<'q, Sqlite> + Type<Sqlite> + 'q>(
    args: &mut SqliteArguments<'q>,
    value: T,
) -> BindResult {
    add(args, value)?;
    Ok(8)
}

fn add_null(args: &mut SqliteArguments<'_>) -> BindResult {
    add(args, None::<i64>)?;
    Ok(0)
}
