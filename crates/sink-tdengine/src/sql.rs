//! SQL text for the TDengine target: identifiers, types, literals, the DDL of `prepare`,
//! multi-table `INSERT`s split under the SQL length limit, and the statement-API `INSERT`.

use std::borrow::Cow;
use std::fmt::Write as _;

use tsload_core::{Column, ColumnValues, DataType, TableBatch, TagValue};

use crate::config::{DbOptions, Precision};
use crate::layout::{TS_COLUMN, TableLayout};

/// Appends `name` between backticks. Names holding a backtick are refused earlier
/// ([`TableLayout::new`], [`crate::layout::check_child_name`]).
pub(crate) fn push_ident(out: &mut String, name: &str) {
    out.push('`');
    out.push_str(name);
    out.push('`');
}

pub(crate) fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}

/// Appends `db.`name`` (database names are plain identifiers, checked in the config).
fn push_qualified(out: &mut String, db: &str, name: &str) {
    out.push_str(db);
    out.push('.');
    push_ident(out, name);
}

/// The TDengine column type of a [`DataType`].
pub(crate) fn sql_type(data_type: DataType) -> Cow<'static, str> {
    match data_type {
        DataType::Bool => "BOOL".into(),
        DataType::TinyInt => "TINYINT".into(),
        DataType::SmallInt => "SMALLINT".into(),
        DataType::Int => "INT".into(),
        DataType::BigInt => "BIGINT".into(),
        DataType::UBigInt => "BIGINT UNSIGNED".into(),
        DataType::Float => "FLOAT".into(),
        DataType::Double => "DOUBLE".into(),
        DataType::Varchar(n) => format!("VARCHAR({})", n.max(1)).into(),
        DataType::NChar(n) => format!("NCHAR({})", n.max(1)).into(),
        DataType::Timestamp => "TIMESTAMP".into(),
    }
}

/// Appends `s` as a string literal: single quotes, `'` and `\` escaped with `\`.
pub(crate) fn push_str_literal(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
}

/// Appends a finite float in its shortest round-trip form, `NULL` for NaN and infinities
/// (TDengine's SQL has no literal for them).
fn push_float(out: &mut String, v: f64) {
    if v.is_finite() {
        out.push_str(ryu::Buffer::new().format_finite(v));
    } else {
        out.push_str("NULL");
    }
}

fn push_int(out: &mut String, v: i64) {
    out.push_str(itoa::Buffer::new().format(v));
}

// ---------------------------------------------------------------------------------------
// Tag values

/// A tag value converted to its column's type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TagLit<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    /// A timestamp in the database precision.
    Ts(i64),
}

/// `v` as a value of a tag column of type `data_type`, or why it does not fit. Strings
/// take any value's text; numbers take numbers (and numeric strings) in range; a
/// non-finite float becomes NULL; a timestamp tag takes milliseconds.
pub(crate) fn coerce_tag<'a>(
    data_type: DataType,
    v: &'a TagValue,
    precision: Precision,
) -> Result<TagLit<'a>, String> {
    let misfit = || format!("tag value {v:?} does not fit {data_type}");
    Ok(match (data_type, v) {
        (_, TagValue::Null) => TagLit::Null,
        (DataType::Varchar(_) | DataType::NChar(_), TagValue::Str(s)) => {
            TagLit::Str(Cow::Borrowed(s.as_ref()))
        }
        (DataType::Varchar(_) | DataType::NChar(_), other) => {
            TagLit::Str(Cow::Owned(other.to_string()))
        }
        (DataType::Bool, TagValue::Bool(b)) => TagLit::Bool(*b),
        (DataType::Bool, TagValue::Int(i)) => TagLit::Bool(*i != 0),
        (DataType::Bool, TagValue::Str(s)) => match s.to_ascii_lowercase().as_str() {
            "true" => TagLit::Bool(true),
            "false" => TagLit::Bool(false),
            _ => return Err(misfit()),
        },
        (DataType::Bool, TagValue::Float(_)) => return Err(misfit()),
        (DataType::Float | DataType::Double, v) => {
            let f = match v {
                TagValue::Float(f) => *f,
                TagValue::Int(i) => *i as f64,
                TagValue::Str(s) => s.trim().parse::<f64>().map_err(|_| misfit())?,
                _ => return Err(misfit()),
            };
            if f.is_finite() {
                TagLit::Float(f)
            } else {
                TagLit::Null
            }
        }
        (DataType::Timestamp, v) => {
            let ms = match v {
                TagValue::Int(i) => *i,
                TagValue::Str(s) => s.trim().parse::<i64>().map_err(|_| misfit())?,
                _ => return Err(misfit()),
            };
            TagLit::Ts(precision.units_of_ms(ms))
        }
        (int_type, v) => {
            let i = match v {
                TagValue::Int(i) => *i,
                TagValue::Bool(b) => i64::from(*b),
                TagValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => *f as i64,
                TagValue::Str(s) => s.trim().parse::<i64>().map_err(|_| misfit())?,
                _ => return Err(misfit()),
            };
            let (lo, hi) = int_type.int_range().unwrap_or((i64::MIN, i64::MAX));
            if !(lo..=hi).contains(&i) {
                return Err(misfit());
            }
            TagLit::Int(i)
        }
    })
}

/// Appends a tag value as an SQL literal.
pub(crate) fn push_tag_literal(out: &mut String, v: &TagLit<'_>) {
    match v {
        TagLit::Null => out.push_str("NULL"),
        TagLit::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        TagLit::Int(i) | TagLit::Ts(i) => push_int(out, *i),
        TagLit::Float(f) => push_float(out, *f),
        TagLit::Str(s) => push_str_literal(out, s),
    }
}

/// Appends `(v1, v2, ...)`: the literals of `layout`'s tags for a device with tag values
/// `tags` and child table `child`.
pub(crate) fn push_tag_values(
    out: &mut String,
    layout: &TableLayout,
    tags: &[TagValue],
    child: &str,
    precision: Precision,
) -> Result<(), String> {
    out.push('(');
    for (i, tag) in layout.tags.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let lit = match tag.from {
            crate::layout::TagFrom::ChildName => TagLit::Str(Cow::Borrowed(child)),
            crate::layout::TagFrom::Slot(slot) => {
                let v = tags.get(slot).unwrap_or(&TagValue::Null);
                coerce_tag(tag.data_type, v, precision)
                    .map_err(|e| format!("tag {:?} of {child:?}: {e}", tag.name))?
            }
        };
        push_tag_literal(out, &lit);
    }
    out.push(')');
    Ok(())
}

// ---------------------------------------------------------------------------------------
// DDL

/// `DROP DATABASE IF EXISTS db`.
pub(crate) fn drop_database(db: &str) -> String {
    format!("DROP DATABASE IF EXISTS {db}")
}

/// `CREATE DATABASE IF NOT EXISTS db PRECISION 'ms' [VGROUPS n] [BUFFER n]
/// [CACHEMODEL 'm'] [WAL_LEVEL n]`.
pub(crate) fn create_database(db: &str, o: &DbOptions) -> String {
    let mut sql = format!(
        "CREATE DATABASE IF NOT EXISTS {db} PRECISION '{}'",
        o.precision.as_str()
    );
    if let Some(v) = o.vgroups {
        let _ = write!(sql, " VGROUPS {v}");
    }
    if let Some(v) = o.buffer {
        let _ = write!(sql, " BUFFER {v}");
    }
    if let Some(v) = o.cachemodel {
        let _ = write!(sql, " CACHEMODEL '{}'", v.as_str());
    }
    if let Some(v) = o.wal_level {
        let _ = write!(sql, " WAL_LEVEL {v}");
    }
    sql
}

/// The query that reads an existing database's precision back.
pub(crate) fn database_precision_query(db: &str) -> String {
    format!("SELECT `precision` FROM information_schema.ins_databases WHERE name = '{db}'")
}

/// `CREATE STABLE IF NOT EXISTS db.`s` (`ts` TIMESTAMP, <fields>) TAGS (<tags>)`.
pub(crate) fn create_stable(db: &str, layout: &TableLayout) -> String {
    let mut sql = String::from("CREATE STABLE IF NOT EXISTS ");
    push_qualified(&mut sql, db, &layout.stable);
    sql.push_str(" (");
    push_ident(&mut sql, TS_COLUMN);
    sql.push_str(" TIMESTAMP");
    for f in &layout.fields {
        sql.push_str(", ");
        push_ident(&mut sql, &f.name);
        sql.push(' ');
        sql.push_str(&sql_type(f.data_type));
    }
    sql.push_str(") TAGS (");
    for (i, t) in layout.tags.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(&mut sql, &t.name);
        sql.push(' ');
        sql.push_str(&sql_type(t.data_type));
    }
    sql.push(')');
    sql
}

/// `IF NOT EXISTS db.`child` USING db.`s` TAGS (...)`: one clause of a multi-table
/// `CREATE TABLE`.
pub(crate) fn create_child_clause(
    db: &str,
    layout: &TableLayout,
    child: &str,
    tags: &[TagValue],
    precision: Precision,
) -> Result<String, String> {
    let mut out = String::from("IF NOT EXISTS ");
    push_qualified(&mut out, db, child);
    out.push_str(" USING ");
    push_qualified(&mut out, db, &layout.stable);
    out.push_str(" TAGS ");
    push_tag_values(&mut out, layout, tags, child, precision)?;
    Ok(out)
}

/// Groups `CREATE TABLE` clauses into statements of at most `per_statement` clauses and
/// `max_len` bytes (a single clause over `max_len` still gets its own statement: the
/// server says whether it fits).
#[derive(Debug)]
pub(crate) struct CreateBatcher {
    per_statement: usize,
    max_len: usize,
    current: String,
    count: usize,
}

impl CreateBatcher {
    const HEAD: &'static str = "CREATE TABLE";

    pub(crate) fn new(per_statement: usize, max_len: usize) -> Self {
        CreateBatcher {
            per_statement: per_statement.max(1),
            max_len,
            current: String::new(),
            count: 0,
        }
    }

    /// Adds a clause; returns a finished statement when this clause did not fit in it.
    pub(crate) fn push(&mut self, clause: &str) -> Option<String> {
        let full = self.count >= self.per_statement
            || (self.count > 0 && self.current.len() + 1 + clause.len() > self.max_len);
        let done = if full { self.take() } else { None };
        if self.count == 0 {
            self.current.push_str(Self::HEAD);
        }
        self.current.push(' ');
        self.current.push_str(clause);
        self.count += 1;
        done
    }

    /// The statement being built, if it has a clause.
    pub(crate) fn take(&mut self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        self.count = 0;
        Some(std::mem::take(&mut self.current))
    }
}

// ---------------------------------------------------------------------------------------
// INSERT

/// `db.`child` USING db.`s` TAGS (...) VALUES` or `` `child` VALUES ``: what precedes a
/// child table's rows in a multi-table `INSERT`. Worker connections log in to the
/// database, so names are not qualified.
pub(crate) fn insert_header(
    layout: &TableLayout,
    child: &str,
    auto_create: Option<&[TagValue]>,
    precision: Precision,
) -> Result<String, String> {
    let mut out = String::new();
    push_ident(&mut out, child);
    if let Some(tags) = auto_create {
        out.push_str(" USING ");
        push_ident(&mut out, &layout.stable);
        out.push_str(" TAGS ");
        push_tag_values(&mut out, layout, tags, child, precision)?;
    }
    out.push_str(" VALUES");
    Ok(out)
}

/// Appends the value of `row` of `col` (a column of type `data_type`) as a literal.
fn push_field(out: &mut String, col: &Column, data_type: DataType, row: usize, p: Precision) {
    if !col.is_valid(row) {
        out.push_str("NULL");
        return;
    }
    match &col.values {
        ColumnValues::Bool(v) => out.push_str(if v[row] { "true" } else { "false" }),
        ColumnValues::Int(v) => {
            let v = v[row];
            push_int(
                out,
                if data_type == DataType::Timestamp {
                    p.units_of_ms(v)
                } else {
                    v
                },
            );
        }
        ColumnValues::Float(v) => push_float(out, v[row]),
        ColumnValues::Str(v) => push_str_literal(out, v.get(row)),
    }
}

/// Appends ` (ts,v1,v2,...)`: one row of `tb` with its timestamp in `precision`.
pub(crate) fn push_row(
    out: &mut String,
    tb: &TableBatch,
    layout: &TableLayout,
    row: usize,
    precision: Precision,
) {
    out.push_str(" (");
    push_int(out, precision.units_of_ns(tb.ts[row]));
    for (col, f) in tb.columns.iter().zip(&layout.fields) {
        out.push(',');
        push_field(out, col, f.data_type, row, precision);
    }
    out.push(')');
}

/// Builds multi-table `INSERT` statements into one reused buffer, starting a new
/// statement whenever the next row would take the current one past `max_len` bytes:
///
/// ```text
/// INSERT INTO `a` VALUES (..) (..) `b` USING `s` TAGS (..) VALUES (..)
/// ```
#[derive(Debug)]
pub(crate) struct InsertBuilder {
    max_len: usize,
    /// Every statement, end to end.
    text: String,
    /// `(start, end)` of each finished statement in `text`.
    spans: Vec<(usize, usize)>,
    /// Start of the statement being built, when one is open.
    open: Option<usize>,
    /// Header of the child table whose rows come next, and whether the open statement
    /// already holds it.
    header: String,
    header_written: bool,
}

impl InsertBuilder {
    const HEAD: &'static str = "INSERT INTO";

    pub(crate) fn new(max_len: usize) -> Self {
        InsertBuilder {
            max_len,
            text: String::new(),
            spans: Vec::new(),
            open: None,
            header: String::new(),
            header_written: false,
        }
    }

    /// Forgets every statement, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
        self.open = None;
        self.header.clear();
        self.header_written = false;
    }

    /// The rows that follow belong to the child table with this header
    /// ([`insert_header`]).
    pub(crate) fn table(&mut self, header: &str) {
        self.header.clear();
        self.header.push_str(header);
        self.header_written = false;
    }

    /// Adds one row (` (ts,...)`, from [`push_row`]) to the current child table. Fails when
    /// the row cannot fit in a statement of `max_len` bytes even alone.
    pub(crate) fn row(&mut self, row: &str) -> Result<(), String> {
        if let Some(start) = self.open {
            let extra = if self.header_written {
                0
            } else {
                1 + self.header.len()
            };
            if self.text.len() - start + extra + row.len() <= self.max_len {
                if !self.header_written {
                    self.text.push(' ');
                    self.text.push_str(&self.header);
                    self.header_written = true;
                }
                self.text.push_str(row);
                return Ok(());
            }
            self.close();
        }
        let need = Self::HEAD.len() + 1 + self.header.len() + row.len();
        if need > self.max_len {
            return Err(format!(
                "one row needs a {need}-byte INSERT, over max_sql_length = {}",
                self.max_len
            ));
        }
        self.open = Some(self.text.len());
        self.text.push_str(Self::HEAD);
        self.text.push(' ');
        self.text.push_str(&self.header);
        self.header_written = true;
        self.text.push_str(row);
        Ok(())
    }

    /// Closes the statement being built.
    pub(crate) fn finish(&mut self) {
        self.close();
    }

    fn close(&mut self) {
        if let Some(start) = self.open.take() {
            self.spans.push((start, self.text.len()));
        }
        self.header_written = false;
    }

    /// Finished statements, in order.
    pub(crate) fn statements(&self) -> impl Iterator<Item = &str> {
        self.spans.iter().map(|&(s, e)| &self.text[s..e])
    }

    pub(crate) fn statement_count(&self) -> usize {
        self.spans.len()
    }

    /// Bytes of SQL in the finished statements.
    pub(crate) fn bytes(&self) -> usize {
        self.spans.iter().map(|&(s, e)| e - s).sum()
    }
}

/// The statement-API `INSERT` of a super table: `INSERT INTO ? USING `s` TAGS (?,..)
/// VALUES (?,..)` when child tables are created on insert, `INSERT INTO ? VALUES (?,..)`
/// when they exist.
pub(crate) fn stmt_insert(layout: &TableLayout, auto_create: bool) -> String {
    let marks = |n: usize| vec!["?"; n].join(",");
    if auto_create {
        format!(
            "INSERT INTO ? USING {} TAGS ({}) VALUES ({})",
            quote_ident(&layout.stable),
            marks(layout.tags.len()),
            marks(1 + layout.fields.len())
        )
    } else {
        format!("INSERT INTO ? VALUES ({})", marks(1 + layout.fields.len()))
    }
}

#[cfg(test)]
mod tests;
