//! SQL text for the PostgreSQL target, built without I/O: identifier and literal quoting,
//! column types, the schema checks of both layouts, DDL (tables, the `tags` table,
//! indexes, TimescaleDB hypertables) and the statements of the three insert methods
//! (COPY, multi-row INSERT chunked under the bind-parameter limit, INSERT ... UNNEST).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use tsload_core::{
    ColumnClash, DataType, ErrorKind, SinkError, TableSchema, TagDef, find_column_clash,
};

use crate::encode::PgType;
use crate::{CopyFormat, Layout};

/// Most bind parameters one statement may carry (the protocol's 16-bit count).
/// The exactly-once ledger (see [`tsload_core::LEDGER_TABLE`]).
pub(crate) const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS tsload_ledger (\
run_id bigint NOT NULL, worker integer NOT NULL, seq bigint NOT NULL, batch_rows integer NOT NULL, \
PRIMARY KEY (run_id, worker, seq))";

/// The constraint a second ledger row of one batch violates.
pub(crate) const LEDGER_KEY: &str = "tsload_ledger_pkey";

/// `statement` (which binds `$1` to `$params`) preceded by a data-modifying CTE that
/// records the batch in the ledger from `$params+1 .. $params+4` (run_id, worker, seq,
/// batch_rows): one statement, so one round trip, atomic with the rows.
pub(crate) fn with_ledger_row(statement: &str, params: usize) -> String {
    format!(
        "WITH tsload_ledger_row AS (INSERT INTO tsload_ledger (run_id, worker, seq, batch_rows) \
         VALUES (${}, ${}, ${}, ${})) {statement}",
        params + 1,
        params + 2,
        params + 3,
        params + 4
    )
}

pub(crate) const MAX_PARAMS: usize = 65_535;

/// Longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes); longer ones are truncated.
pub(crate) const MAX_IDENT_BYTES: usize = 63;

/// The timestamp column every measurement table starts with.
pub(crate) const TS_COLUMN: &str = "ts";
/// The tags table of the `tags` layout, its key, and the column referring to it.
pub(crate) const TAGS_TABLE: &str = "tags";
pub(crate) const TAGS_ID: &str = "id";
pub(crate) const TAGS_ID_COLUMN: &str = "tags_id";

/// `name` as a double-quoted SQL identifier, embedded `"` doubled.
pub(crate) fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}

fn push_ident(out: &mut String, name: &str) {
    out.push('"');
    for c in name.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}

/// `s` as a single-quoted SQL string literal, embedded `'` doubled (with
/// `standard_conforming_strings`, on by default since 9.1, backslashes are plain).
pub(crate) fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The column type declared for a [`DataType`]: `varchar(n)` keeps the declared length
/// (a length PostgreSQL cannot declare, 0 or over 10,485,760, falls back to `text`);
/// `NChar` is `text`; integers take the smallest fitting type (PostgreSQL has no 1-byte
/// integer, so TinyInt is `smallint`; UBigInt values are non-negative `i64`s, so `bigint`);
/// `Timestamp` (milliseconds since the epoch) is a plain `bigint`.
pub(crate) fn column_type(data_type: DataType) -> String {
    match data_type {
        DataType::Varchar(n) if (1..=10_485_760).contains(&n) => format!("varchar({n})"),
        other => PgType::of(other).sql_name().to_string(),
    }
}

/// One column of a table as this target writes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnDef {
    pub(crate) name: String,
    /// The declared SQL type (`varchar(32)`, `double precision`, ...).
    pub(crate) sql_type: String,
    /// How values are sent.
    pub(crate) wire: PgType,
}

impl ColumnDef {
    fn of(name: &str, data_type: DataType) -> Self {
        ColumnDef {
            name: name.to_string(),
            sql_type: column_type(data_type),
            wire: PgType::of(data_type),
        }
    }

    fn ts() -> Self {
        ColumnDef {
            name: TS_COLUMN.to_string(),
            sql_type: "timestamptz".to_string(),
            wire: PgType::Timestamptz,
        }
    }

    fn bigint(name: &str) -> Self {
        ColumnDef {
            name: name.to_string(),
            sql_type: "bigint".to_string(),
            wire: PgType::Int8,
        }
    }
}

/// Where a layout keeps a table's tags.
///
/// Wide: every tag is a column of its table. Tags layout (TSBS's for TimescaleDB): the
/// tags every table has, the device's identity (TSBS's "common tags": hostname, region,
/// ...), are columns of the shared `tags` table that rows refer to by `tags_id`; a tag only
/// some tables have (devops' `interface` of `net`, `port` of `nginx` and of `redis`) is a
/// column of those tables, where TSBS keeps it in a per-row JSON `additional_tags`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TagPlacement {
    Wide,
    /// The slots of the shared `tags` table.
    TagsTable(BTreeSet<usize>),
}

impl TagPlacement {
    /// The placement `layout` gives the tables of one schema.
    pub(crate) fn of(layout: Layout, tables: &[TableSchema]) -> TagPlacement {
        match layout {
            Layout::Wide => TagPlacement::Wide,
            Layout::TagsTable => {
                let mut tables = tables.iter();
                let mut shared: BTreeSet<usize> = tables
                    .next()
                    .map(|t| t.tags.iter().map(|tag| tag.slot).collect())
                    .unwrap_or_default();
                for t in tables {
                    shared.retain(|slot| t.tags.iter().any(|tag| tag.slot == *slot));
                }
                TagPlacement::TagsTable(shared)
            }
        }
    }

    /// Whether rows carry `tags_id`.
    pub(crate) fn has_tags_id(&self) -> bool {
        matches!(self, TagPlacement::TagsTable(_))
    }

    /// The tags of `table` that are columns of the table itself, in the table's order.
    pub(crate) fn own_tags<'t>(&self, table: &'t TableSchema) -> impl Iterator<Item = &'t TagDef> {
        table.tags.iter().filter(move |t| match self {
            TagPlacement::Wide => true,
            TagPlacement::TagsTable(shared) => !shared.contains(&t.slot),
        })
    }
}

/// The columns of a measurement table, in row order: `ts`, `tags_id` (tags layout), the
/// table's own tag columns (wide: every tag), then the fields.
pub(crate) fn table_columns(table: &TableSchema, placement: &TagPlacement) -> Vec<ColumnDef> {
    let mut cols = vec![ColumnDef::ts()];
    if placement.has_tags_id() {
        cols.push(ColumnDef::bigint(TAGS_ID_COLUMN));
    }
    cols.extend(
        placement
            .own_tags(table)
            .map(|t| ColumnDef::of(&t.name, t.data_type)),
    );
    cols.extend(
        table
            .fields
            .iter()
            .map(|f| ColumnDef::of(&f.name, f.data_type)),
    );
    cols
}

/// One column of the `tags` table: a device's value of tag slot `slot`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TagSlotColumn {
    pub(crate) slot: usize,
    pub(crate) column: ColumnDef,
}

/// The tag columns of the shared `tags` table: one per slot of `shared` (the slots every
/// table has, [`TagPlacement::of`]), in slot order, named after the tag. The same slot
/// must have the same name in every table (it is the same value of the device); string
/// types merge to the longest, other types must agree. Two slots may not share a name.
pub(crate) fn tag_slot_columns(
    tables: &[TableSchema],
    shared: &BTreeSet<usize>,
) -> Result<Vec<TagSlotColumn>, SinkError> {
    let mut slots: BTreeMap<usize, (&str, DataType, &str)> = BTreeMap::new();
    for table in tables {
        for tag in table.tags.iter().filter(|t| shared.contains(&t.slot)) {
            let Some((name, ty, first_table)) = slots.get_mut(&tag.slot) else {
                slots.insert(tag.slot, (&tag.name, tag.data_type, &table.name));
                continue;
            };
            if *name != tag.name {
                return Err(schema_error(format!(
                    "tags layout: tag slot {} is named {:?} in table {:?} but {:?} in table {:?}; \
                     the shared \"tags\" table needs one name per slot (use layout = wide)",
                    tag.slot, name, first_table, tag.name, table.name
                )));
            }
            *ty = match (*ty, tag.data_type) {
                (a, b) if a == b => a,
                (DataType::Varchar(a), DataType::Varchar(b)) => DataType::Varchar(a.max(b)),
                (
                    DataType::Varchar(a) | DataType::NChar(a),
                    DataType::Varchar(b) | DataType::NChar(b),
                ) => DataType::NChar(a.max(b)),
                (a, b) => {
                    return Err(schema_error(format!(
                        "tags layout: tag {:?} is {a} in table {:?} but {b} in table {:?}",
                        tag.name, first_table, table.name
                    )));
                }
            };
        }
    }
    let mut seen = HashMap::new();
    let mut out = Vec::with_capacity(slots.len());
    for (slot, (name, ty, _)) in slots {
        if name == TAGS_ID {
            return Err(schema_error(format!(
                "tags layout: tag {name:?} clashes with the key column \"id\" of the \"tags\" table"
            )));
        }
        if let Some(other) = seen.insert(ident_key(name), slot) {
            return Err(schema_error(format!(
                "tags layout: tag slots {other} and {slot} are both named {name:?}"
            )));
        }
        out.push(TagSlotColumn {
            slot,
            column: ColumnDef::of(name, ty),
        });
    }
    Ok(out)
}

fn schema_error(message: String) -> SinkError {
    SinkError::new(ErrorKind::Schema, message)
}

/// How PostgreSQL tells two quoted identifiers apart: exact bytes, after truncation to 63
/// bytes (at a character boundary).
fn ident_key(name: &str) -> &str {
    if name.len() <= MAX_IDENT_BYTES {
        return name;
    }
    let mut end = MAX_IDENT_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Fails with [`ErrorKind::Schema`] when `table` cannot be created as is: an empty name,
/// a column named like the layout's own columns (`ts`, `tags_id`), two columns PostgreSQL
/// would take for one (same name, or same first 63 bytes), or (tags layout) a table named
/// `tags`. Renaming silently would make the data set differ from what other targets get.
pub(crate) fn check_table(table: &TableSchema, placement: &TagPlacement) -> Result<(), SinkError> {
    let bad = |what: String| Err(schema_error(format!("table {:?}: {what}", table.name)));
    if table.name.is_empty() {
        return bad("a table name cannot be empty".into());
    }
    if placement.has_tags_id() && ident_key(&table.name) == TAGS_TABLE {
        return bad(
            "the tags layout keeps device tags in a table of that name (use layout = wide)".into(),
        );
    }
    let mut reserved = vec![TS_COLUMN];
    if placement.has_tags_id() {
        reserved.push(TAGS_ID_COLUMN);
    }
    let tags: Vec<(&str, &'static str)> = placement
        .own_tags(table)
        .map(|t| (t.name.as_str(), "tag"))
        .collect();
    let columns = || {
        tags.iter()
            .copied()
            .chain(table.fields.iter().map(|f| (f.name.as_str(), "field")))
    };
    if let Some((_, role)) = columns().find(|(name, _)| name.is_empty()) {
        return bad(format!("a {role} column name cannot be empty"));
    }
    match find_column_clash(columns(), &reserved, ident_key) {
        None => {}
        Some(ColumnClash::Reserved {
            name,
            role,
            reserved,
        }) => {
            return bad(format!(
                "{role} column {name:?} clashes with the column {reserved:?} of this target"
            ));
        }
        Some(ColumnClash::Duplicate { name, role, first }) => {
            let what = ColumnClash::duplicate_words(role, first);
            let what = if ident_key(name).len() < name.len() {
                format!(
                    "{what} (PostgreSQL keeps only the first {MAX_IDENT_BYTES} bytes of a name)"
                )
            } else {
                what
            };
            return bad(format!("column {name:?} {what}"));
        }
    }
    Ok(())
}

/// `DROP TABLE IF EXISTS "<name>" CASCADE`.
pub(crate) fn drop_table(name: &str) -> String {
    format!("DROP TABLE IF EXISTS {} CASCADE", quote_ident(name))
}

fn push_column_list(sql: &mut String, columns: &[ColumnDef]) {
    sql.push('(');
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            sql.push(',');
        }
        push_ident(sql, &c.name);
    }
    sql.push(')');
}

/// `CREATE TABLE IF NOT EXISTS "<table>" ("ts" timestamptz NOT NULL, ...)`: the tags and
/// fields (wide) or `"tags_id" bigint NOT NULL`, the table's own tags and the fields
/// (tags layout).
pub(crate) fn create_table(table: &TableSchema, placement: &TagPlacement) -> String {
    let mut sql = String::from("CREATE TABLE IF NOT EXISTS ");
    push_ident(&mut sql, &table.name);
    sql.push_str(" (");
    for (i, c) in table_columns(table, placement).iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(&mut sql, &c.name);
        sql.push(' ');
        sql.push_str(&c.sql_type);
        if c.name == TS_COLUMN || (placement.has_tags_id() && c.name == TAGS_ID_COLUMN) {
            sql.push_str(" NOT NULL");
        }
    }
    sql.push(')');
    sql
}

/// `CREATE TABLE IF NOT EXISTS "tags" ("id" bigint PRIMARY KEY, <one column per slot>)`.
pub(crate) fn create_tags_table(slots: &[TagSlotColumn]) -> String {
    let mut sql = String::from("CREATE TABLE IF NOT EXISTS ");
    push_ident(&mut sql, TAGS_TABLE);
    sql.push_str(" (");
    push_ident(&mut sql, TAGS_ID);
    sql.push_str(" bigint PRIMARY KEY");
    for s in slots {
        sql.push_str(", ");
        push_ident(&mut sql, &s.column.name);
        sql.push(' ');
        sql.push_str(&s.column.sql_type);
    }
    sql.push(')');
    sql
}

/// The TSBS-like index: `(<tags>, ts DESC)` (wide) or `(tags_id, ts DESC)` (tags layout),
/// named `<table>_tags_ts_idx`.
pub(crate) fn create_index(table: &TableSchema, placement: &TagPlacement) -> String {
    let mut sql = String::from("CREATE INDEX IF NOT EXISTS ");
    push_ident(&mut sql, &format!("{}_tags_ts_idx", table.name));
    sql.push_str(" ON ");
    push_ident(&mut sql, &table.name);
    sql.push_str(" (");
    let keys: Vec<&str> = match placement {
        TagPlacement::Wide => table.tags.iter().map(|t| t.name.as_str()).collect(),
        TagPlacement::TagsTable(_) => vec![TAGS_ID_COLUMN],
    };
    for k in keys {
        push_ident(&mut sql, k);
        sql.push_str(", ");
    }
    push_ident(&mut sql, TS_COLUMN);
    sql.push_str(" DESC)");
    sql
}

/// Whether the server could install TimescaleDB.
pub(crate) const TIMESCALEDB_AVAILABLE: &str =
    "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb')";
pub(crate) const CREATE_TIMESCALEDB: &str = "CREATE EXTENSION IF NOT EXISTS timescaledb";
pub(crate) const SERVER_VERSION_NUM: &str = "SELECT current_setting('server_version_num')";

/// `SELECT create_hypertable('"<table>"', 'ts', if_not_exists => TRUE[, chunk_time_interval
/// => INTERVAL '<n> microseconds'])`.
pub(crate) fn create_hypertable(table: &str, chunk_time_interval: Option<Duration>) -> String {
    let mut sql = format!(
        "SELECT create_hypertable({}, {}, if_not_exists => TRUE",
        quote_literal(&quote_ident(table)),
        quote_literal(TS_COLUMN)
    );
    if let Some(d) = chunk_time_interval {
        sql.push_str(&format!(
            ", chunk_time_interval => INTERVAL '{} microseconds'",
            d.as_micros().max(1)
        ));
    }
    sql.push(')');
    sql
}

/// `SET synchronous_commit = <value>` (the value was checked against the allowed words).
pub(crate) fn set_synchronous_commit(value: &str) -> String {
    format!("SET synchronous_commit = {value}")
}

/// `COPY "<table>" (<columns>) FROM STDIN` in the text or binary format.
pub(crate) fn copy_in(table: &str, columns: &[ColumnDef], format: CopyFormat) -> String {
    let mut sql = String::from("COPY ");
    push_ident(&mut sql, table);
    sql.push(' ');
    push_column_list(&mut sql, columns);
    sql.push_str(" FROM STDIN");
    if format == CopyFormat::Binary {
        sql.push_str(" (FORMAT binary)");
    }
    sql
}

/// Rows one INSERT of `columns` columns may carry without passing [`MAX_PARAMS`].
/// Parameters of one statement at most (PostgreSQL's wire protocol counts them in 16 bits).
pub(crate) const fn max_params() -> usize {
    MAX_PARAMS
}

pub(crate) fn rows_per_chunk(columns: usize) -> usize {
    (MAX_PARAMS / columns.max(1)).max(1)
}

/// `INSERT INTO "<table>" (<columns>) VALUES ` — the part every chunk shares.
pub(crate) fn insert_prefix(table: &str, columns: &[ColumnDef]) -> String {
    let mut sql = String::from("INSERT INTO ");
    push_ident(&mut sql, table);
    sql.push(' ');
    push_column_list(&mut sql, columns);
    sql.push_str(" VALUES ");
    sql
}

/// The full INSERT for `rows` rows of `columns` columns: `prefix` then
/// `($1,$2),($3,$4)...`, parameters numbered row by row.
pub(crate) fn insert(prefix: &str, columns: usize, rows: usize) -> String {
    let mut sql = String::with_capacity(prefix.len() + rows * columns * 7);
    sql.push_str(prefix);
    let mut n = itoa::Buffer::new();
    let mut param = 1usize;
    for row in 0..rows {
        if row > 0 {
            sql.push(',');
        }
        sql.push('(');
        for col in 0..columns {
            if col > 0 {
                sql.push(',');
            }
            sql.push('$');
            sql.push_str(n.format(param));
            param += 1;
        }
        sql.push(')');
    }
    sql
}

/// `SELECT * FROM UNNEST($1::<type>[], $2::<type>[], ...)`: one array parameter per column.
fn unnest_select(sql: &mut String, columns: &[ColumnDef]) {
    sql.push_str(" SELECT * FROM UNNEST(");
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('$');
        sql.push_str(itoa::Buffer::new().format(i + 1));
        sql.push_str("::");
        sql.push_str(c.wire.sql_name());
        sql.push_str("[]");
    }
    sql.push(')');
}

/// `INSERT INTO "<table>" (<columns>) SELECT * FROM UNNEST($1::timestamptz[], ...)`: a
/// whole table's rows in one statement whose bind count is its column count.
pub(crate) fn insert_unnest(table: &str, columns: &[ColumnDef]) -> String {
    let mut sql = String::from("INSERT INTO ");
    push_ident(&mut sql, table);
    sql.push(' ');
    push_column_list(&mut sql, columns);
    unnest_select(&mut sql, columns);
    sql
}

/// The columns of the `tags` table in insert order: `id`, then the slot columns.
pub(crate) fn tags_table_columns(slots: &[TagSlotColumn]) -> Vec<ColumnDef> {
    let mut cols = vec![ColumnDef::bigint(TAGS_ID)];
    cols.extend(slots.iter().map(|s| s.column.clone()));
    cols
}

/// `INSERT INTO "tags" ("id", ...) SELECT * FROM UNNEST(...) ON CONFLICT ("id") DO NOTHING`:
/// the tags rows of the devices a connection sees for the first time.
pub(crate) fn insert_tags(slots: &[TagSlotColumn]) -> String {
    let columns = tags_table_columns(slots);
    let mut sql = insert_unnest(TAGS_TABLE, &columns);
    sql.push_str(" ON CONFLICT (");
    push_ident(&mut sql, TAGS_ID);
    sql.push_str(") DO NOTHING");
    sql
}

#[cfg(test)]
mod tests;
