//! One worker's TDengine connection: a WebSocket session to taosAdapter (plus one
//! statement session per super table in `stmt` mode), the names and tags of the child
//! tables it has written, and the reused encode buffers of its insert mode.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use taos::taos_query::common::{SchemalessPrecision, SchemalessProtocol, SmlDataBuilder};
use taos::{
    AsyncBindable, AsyncQueryable, AsyncTBuilder, ColumnView, Stmt, Taos, TaosBuilder, Value,
};
use tsload_core::{Batch, BatchId, ErrorKind, Schema, SinkConn, SinkError, TagValue, WriteAck};
use tsload_lineproto::LineEncoder;

use crate::bind::{ChildGroups, column_views, tag_values};
use crate::config::{ChildTables, InsertMode, Precision};
use crate::dsn::Secrets;
use crate::error::driver_error;
use crate::layout::{TableLayout, check_child_name, schemaless_schema};
use crate::sql::{self, InsertBuilder};

/// What every connection of a sink shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub mode: InsertMode,
    pub child_tables: ChildTables,
    pub precision: Precision,
    pub max_sql_length: usize,
    pub timeout: Duration,
    pub secrets: Secrets,
    /// The DSN, redacted, for messages.
    pub shown: String,
    /// Logs in to the target database.
    pub builder: TaosBuilder,
}

/// Connection of [`crate::TdengineSink`], one per worker in-flight slot.
pub struct TdengineConn {
    shared: Arc<Shared>,
    schema: Arc<Schema>,
    layouts: Vec<TableLayout>,
    /// The WebSocket session; `None` after a failure that may have broken it, opened
    /// again by the next write.
    taos: Option<Taos>,
    /// `stmt` mode: one prepared statement (its own WebSocket session) per super table.
    stmts: Vec<Option<Stmt>>,
    /// Per super table, the child tables written so far.
    children: Vec<HashMap<u32, Child>>,
    groups: ChildGroups,
    tag_scratch: Vec<TagValue>,
    insert: InsertBuilder,
    row: String,
    encoder: Option<LineEncoder>,
    lines: Vec<u8>,
    req_id: u64,
}

/// What a connection keeps per child table, depending on the mode.
#[derive(Debug, Default)]
struct Child {
    /// `stmt`: the name between backticks, for `set_tbname`.
    quoted: String,
    /// `stmt` with tables created on insert: the tag values.
    tags: Vec<Value>,
    /// `sql`: `` `d0` [USING ... TAGS (...)] VALUES ``.
    header: String,
}

impl fmt::Debug for TdengineConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TdengineConn")
            .field("mode", &self.shared.mode)
            .field("connected", &self.taos.is_some())
            .field(
                "child_tables_seen",
                &self.children.iter().map(HashMap::len).sum::<usize>(),
            )
            .finish_non_exhaustive()
    }
}

/// Why a guarded driver call failed.
pub(crate) enum Failure {
    Driver(taos::Error),
    Timeout,
    Panic(String),
}

impl Failure {
    pub(crate) fn into_sink(self, context: &str, shared: &Shared) -> SinkError {
        match self {
            Failure::Driver(e) => driver_error(context, &e, &shared.secrets),
            Failure::Timeout => SinkError::new(
                ErrorKind::Timeout,
                format!(
                    "{context}: no answer within {:?} (request_timeout)",
                    shared.timeout
                ),
            ),
            Failure::Panic(m) => SinkError::new(
                ErrorKind::Connection,
                format!(
                    "{context}: the TDengine driver panicked ({}); the connection is replaced",
                    shared.secrets.scrub(&m)
                ),
            ),
        }
    }
}

/// Runs a driver call with a deadline, catching the driver's panics: its WebSocket tasks
/// can leave a call waiting forever when the connection dies, and some of its paths
/// `unwrap`.
pub(crate) async fn guarded<T>(
    timeout: Duration,
    fut: impl Future<Output = Result<T, taos::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(timeout, AssertUnwindSafe(fut).catch_unwind()).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Err(panic)) => Err(Failure::Panic(
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_string()),
        )),
        Ok(Ok(Err(e))) => Err(Failure::Driver(e)),
        Ok(Ok(Ok(v))) => Ok(v),
    }
}

/// Opens a session on `builder` and checks it answers (and that its database exists).
pub(crate) async fn open(shared: &Shared, what: &str) -> Result<Taos, SinkError> {
    let context = format!("{what} to TDengine at {}", shared.shown);
    let context = context.as_str();
    let taos = guarded(shared.timeout, shared.builder.build())
        .await
        .map_err(|f| f.into_sink(context, shared))?;
    guarded(
        shared.timeout,
        taos.query_one::<_, String>("SELECT SERVER_VERSION()"),
    )
    .await
    .map_err(|f| {
        let mut e = f.into_sink(context, shared);
        if e.kind == ErrorKind::Other {
            e.kind = ErrorKind::Connection;
        }
        e
    })?;
    Ok(taos)
}

/// A prepared statement for `layout` on a new statement session of `taos`.
async fn open_stmt(shared: &Shared, taos: &Taos, layout: &TableLayout) -> Result<Stmt, SinkError> {
    let auto = shared.child_tables == ChildTables::Auto;
    let text = sql::stmt_insert(layout, auto);
    let context = format!("preparing `{text}`");
    guarded(shared.timeout, async {
        let mut stmt = <Stmt as AsyncBindable<Taos>>::init(taos).await?;
        stmt.prepare(&text).await?;
        Ok(stmt)
    })
    .await
    .map_err(|f| f.into_sink(&context, shared))
}

impl TdengineConn {
    pub(crate) async fn connect(
        shared: Arc<Shared>,
        schema: Arc<Schema>,
        layouts: Vec<TableLayout>,
        worker: usize,
    ) -> Result<Self, SinkError> {
        let taos = open(&shared, &format!("worker {worker}: connecting")).await?;
        let mut stmts: Vec<Option<Stmt>> = Vec::new();
        if shared.mode == InsertMode::Stmt {
            for layout in &layouts {
                stmts.push(Some(open_stmt(&shared, &taos, layout).await?));
            }
        }
        let encoder = (shared.mode == InsertMode::Schemaless).then(|| {
            LineEncoder::new(
                Arc::new(schemaless_schema(&schema)),
                shared.precision.lineproto(),
            )
        });
        Ok(TdengineConn {
            insert: InsertBuilder::new(shared.max_sql_length),
            children: layouts.iter().map(|_| HashMap::new()).collect(),
            tag_scratch: Vec::with_capacity(schema.tag_slots),
            shared,
            schema,
            layouts,
            taos: Some(taos),
            stmts,
            groups: ChildGroups::default(),
            row: String::new(),
            encoder,
            lines: Vec::new(),
            req_id: (worker as u64) << 40,
        })
    }

    /// The session, opened again after a failure. Opening is lazy in the driver: a dead
    /// server shows on the first request.
    async fn taos(&mut self) -> Result<&Taos, SinkError> {
        if self.taos.is_none() {
            let taos = guarded(self.shared.timeout, self.shared.builder.build())
                .await
                .map_err(|f| f.into_sink("reconnecting", &self.shared))?;
            self.taos = Some(taos);
        }
        self.taos
            .as_ref()
            .ok_or_else(|| SinkError::new(ErrorKind::Connection, "no TDengine session"))
    }

    /// Forgets sessions a failure of `kind` may have left broken or mid-statement.
    fn after_failure(&mut self, kind: ErrorKind) {
        for s in &mut self.stmts {
            *s = None;
        }
        if matches!(
            kind,
            ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::Other
        ) {
            self.taos = None;
        }
    }

    async fn write_sql(&mut self, batch: &Batch) -> Result<u64, SinkError> {
        let auto = self.shared.child_tables == ChildTables::Auto;
        let precision = self.shared.precision;
        {
            let TdengineConn {
                schema,
                layouts,
                children,
                groups,
                tag_scratch,
                insert,
                row,
                ..
            } = self;
            insert.clear();
            for (t, tb) in batch.tables.iter().enumerate() {
                if tb.rows() == 0 {
                    continue;
                }
                let layout = &layouts[t];
                groups.build(&tb.device);
                for (device, rows) in groups.iter() {
                    let child = child_entry(
                        &mut children[t],
                        device,
                        schema,
                        layout,
                        tag_scratch,
                        |name, tags| {
                            let header =
                                sql::insert_header(layout, name, auto.then_some(tags), precision)?;
                            Ok(Child {
                                header,
                                ..Child::default()
                            })
                        },
                    )?;
                    insert.table(&child.header);
                    for &r in rows {
                        row.clear();
                        sql::push_row(row, tb, layout, r as usize, precision);
                        insert.row(row).map_err(|m| {
                            SinkError::new(
                                ErrorKind::Rejected,
                                format!("table {:?}: {m}", layout.stable),
                            )
                        })?;
                    }
                }
            }
            insert.finish();
        }
        let timeout = self.shared.timeout;
        let shared = self.shared.clone();
        self.taos().await?;
        let (Some(taos), insert) = (&self.taos, &self.insert) else {
            return Err(SinkError::new(ErrorKind::Connection, "no TDengine session"));
        };
        let count = insert.statement_count();
        for (i, text) in insert.statements().enumerate() {
            guarded(timeout, taos.exec(text)).await.map_err(|f| {
                f.into_sink(
                    &format!("INSERT ({} of {count}, {} bytes)", i + 1, text.len()),
                    &shared,
                )
            })?;
        }
        Ok(insert.bytes() as u64)
    }

    async fn write_stmt(&mut self, batch: &Batch) -> Result<u64, SinkError> {
        let auto = self.shared.child_tables == ChildTables::Auto;
        let precision = self.shared.precision;
        let shared = self.shared.clone();
        for (t, tb) in batch.tables.iter().enumerate() {
            if tb.rows() == 0 {
                continue;
            }
            if self.stmts[t].is_none() {
                self.taos().await?;
                let taos = self
                    .taos
                    .as_ref()
                    .ok_or_else(|| SinkError::new(ErrorKind::Connection, "no TDengine session"))?;
                self.stmts[t] = Some(open_stmt(&shared, taos, &self.layouts[t]).await?);
            }
            let TdengineConn {
                schema,
                layouts,
                children,
                groups,
                tag_scratch,
                stmts,
                ..
            } = self;
            let layout = &layouts[t];
            groups.build(&tb.device);
            // Names, tags and columns of every child table first; then the exchange.
            let mut work: Vec<(u32, Vec<ColumnView>)> = Vec::with_capacity(groups.len());
            for (device, rows) in groups.iter() {
                child_entry(
                    &mut children[t],
                    device,
                    schema,
                    layout,
                    tag_scratch,
                    |name, tags| {
                        Ok(Child {
                            quoted: sql::quote_ident(name),
                            tags: if auto {
                                tag_values(layout, tags, name, precision)?
                            } else {
                                Vec::new()
                            },
                            ..Child::default()
                        })
                    },
                )?;
                let views = column_views(tb, layout, rows, precision).map_err(|m| {
                    SinkError::new(
                        ErrorKind::Rejected,
                        format!("table {:?}: {m}", layout.stable),
                    )
                })?;
                work.push((device, views));
            }
            let children = &children[t];
            let Some(stmt) = stmts[t].as_mut() else {
                return Err(SinkError::new(
                    ErrorKind::Connection,
                    "no statement session",
                ));
            };
            let rows = tb.rows();
            guarded(shared.timeout, async {
                for (device, views) in &work {
                    let Some(child) = children.get(device) else {
                        continue;
                    };
                    stmt.set_tbname(&child.quoted).await?;
                    if auto {
                        stmt.set_tags(&child.tags).await?;
                    }
                    stmt.bind(views).await?;
                    stmt.add_batch().await?;
                }
                stmt.execute().await
            })
            .await
            .map_err(|f| {
                f.into_sink(
                    &format!(
                        "statement INSERT into {:?} ({rows} rows, {} child tables)",
                        layout.stable,
                        work.len()
                    ),
                    &shared,
                )
            })?;
        }
        Ok(0)
    }

    async fn write_lines(&mut self, batch: &Batch) -> Result<u64, SinkError> {
        let Some(encoder) = self.encoder.as_mut() else {
            return Err(SinkError::new(ErrorKind::Other, "no line encoder"));
        };
        let mut lines = std::mem::take(&mut self.lines);
        lines.clear();
        encoder.encode(batch, &mut lines);
        if lines.last() == Some(&b'\n') {
            lines.pop();
        }
        let capacity = lines.capacity();
        let bytes = lines.len() as u64;
        let text = String::from_utf8(lines).map_err(|e| {
            SinkError::new(ErrorKind::Other, format!("line protocol is not UTF-8: {e}"))
        })?;
        // The driver takes the lines by value; the next batch starts from the same size.
        self.lines = Vec::with_capacity(capacity);
        self.req_id += 1;
        let precision = match self.shared.precision {
            Precision::Ms => SchemalessPrecision::Millisecond,
            Precision::Us => SchemalessPrecision::Microsecond,
            Precision::Ns => SchemalessPrecision::Nanosecond,
        };
        let data = SmlDataBuilder::default()
            .protocol(SchemalessProtocol::Line)
            .precision(precision)
            .data(vec![text])
            .req_id(self.req_id)
            .build()
            .map_err(|e| SinkError::new(ErrorKind::Other, format!("schemaless request: {e}")))?;
        let shared = self.shared.clone();
        let taos = self.taos().await?;
        guarded(shared.timeout, taos.put(&data))
            .await
            .map_err(|f| f.into_sink(&format!("schemaless write ({bytes} bytes)"), &shared))?;
        Ok(bytes)
    }
}

/// The cached entry of `device`'s child table, made by `make(name, tags)` on first use.
fn child_entry<'a>(
    cache: &'a mut HashMap<u32, Child>,
    device: u32,
    schema: &Schema,
    layout: &TableLayout,
    scratch: &mut Vec<TagValue>,
    make: impl FnOnce(&str, &[TagValue]) -> Result<Child, String>,
) -> Result<&'a Child, SinkError> {
    use std::collections::hash_map::Entry;
    match cache.entry(device) {
        Entry::Occupied(e) => Ok(e.into_mut()),
        Entry::Vacant(e) => {
            schema.tags.device_tags(device, scratch);
            let name = layout.child_name(device, scratch);
            let rejected = |m: String| {
                SinkError::new(
                    ErrorKind::Rejected,
                    format!("table {:?}, device {device}: {m}", layout.stable),
                )
            };
            check_child_name(&name).map_err(rejected)?;
            let child = make(&name, scratch).map_err(rejected)?;
            Ok(e.insert(child))
        }
    }
}

impl SinkConn for TdengineConn {
    async fn write(&mut self, batch: &Batch, _id: BatchId) -> Result<WriteAck, SinkError> {
        let rows = batch.rows() as u64;
        if rows == 0 {
            return Ok(WriteAck::default());
        }
        let result = match self.shared.mode {
            InsertMode::Sql => self.write_sql(batch).await,
            InsertMode::Schemaless => self.write_lines(batch).await,
            InsertMode::Stmt | InsertMode::Stmt2 => self.write_stmt(batch).await,
        };
        match result {
            Ok(bytes) => Ok(WriteAck {
                rows,
                bytes,
                duplicate: false,
                metrics: None,
            }),
            Err(e) => {
                self.after_failure(e.kind);
                // TDengine has no transactions: a write whose answer was lost (timeout,
                // connection lost) may have been applied, in part or in full. Counted as
                // ambiguous, an upper bound (a failure to reconnect sent nothing).
                Err(
                    if matches!(e.kind, ErrorKind::Timeout | ErrorKind::Connection) {
                        e.into_ambiguous()
                    } else {
                        e
                    },
                )
            }
        }
    }
}
