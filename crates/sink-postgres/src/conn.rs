//! One worker's PostgreSQL connection: caches the statement texts, the tag values of the
//! devices it has seen (and, for COPY, their encoded tag columns per table) or, in the tags
//! layout, which devices' tags rows it has committed; writes each batch as one transaction
//! with the configured insert method; reopens the connection after losing it.

mod cache;
mod failure;
mod rows;
mod writer;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use sqlx::Executor;
use sqlx::postgres::PgConnection;
use tsload_core::{Batch, BatchId, Delivery, ErrorKind, Schema, SinkConn, SinkError, WriteAck};

use crate::encode::PgType;
use crate::sql::{self, TagPlacement, TagSlotColumn};
use crate::{Connector, PostgresConfig};
use cache::{Devices, TableState, TagsTable};
use failure::{Failure, db_failure, is_ledger_conflict};
use writer::Writer;

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
