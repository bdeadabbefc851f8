//! SQL text for the SQLite target: identifier quoting, type mapping, the schema checks,
//! and the CREATE / DROP / multi-row INSERT statements.

use tsload_core::{ColumnClash, DataType, ErrorKind, SinkError, TableSchema, find_column_clash};

/// Most `?` parameters one statement may carry: SQLite's `SQLITE_MAX_VARIABLE_NUMBER`
/// default since 3.32 (the bundled build allows more; this stays safe for any build).
pub(crate) const MAX_PARAMS: usize = 32766;

/// Name of the timestamp column every table starts with.
pub(crate) const TS_COLUMN: &str = "ts";

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

/// The SQLite column type declared for a [`DataType`].
pub(crate) fn sql_type(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Bool
        | DataType::TinyInt
        | DataType::SmallInt
        | DataType::Int
        | DataType::BigInt
        | DataType::UBigInt
        | DataType::Timestamp => "INTEGER",
        DataType::Float | DataType::Double => "REAL",
        DataType::Varchar(_) | DataType::NChar(_) => "TEXT",
    }
}

/// Columns of a table's rows: `ts`, then the tags, then the fields.
pub(crate) fn column_count(table: &TableSchema) -> usize {
    1 + table.tags.len() + table.fields.len()
}

/// Rows one INSERT of `columns` columns may carry without passing [`MAX_PARAMS`].
pub(crate) fn rows_per_chunk(columns: usize) -> usize {
    (MAX_PARAMS / columns.max(1)).max(1)
}

/// Fails with [`ErrorKind::Schema`] when two columns of `table` would get the same SQLite
/// name (identifiers are case-insensitive for ASCII) or one is named `ts`: renaming
/// silently would make the data set differ from what other targets receive.
pub(crate) fn check_table(table: &TableSchema) -> Result<(), SinkError> {
    let clash = find_column_clash(table.columns(), &[TS_COLUMN], |n| n.to_ascii_lowercase());
    let message = match clash {
        None => return Ok(()),
        Some(ColumnClash::Reserved { name, role, .. }) => format!(
            "table {:?}: {role} column {name:?} clashes with the timestamp column \"ts\"",
            table.name
        ),
        Some(ColumnClash::Duplicate { name, role, first }) => format!(
            "table {:?}: column {name:?} {}",
            table.name,
            ColumnClash::duplicate_words(role, first)
        ),
    };
    Err(SinkError::new(ErrorKind::Schema, message))
}

/// `DROP TABLE IF EXISTS "<table>"`.
/// The exactly-once ledger (see [`tsload_core::LEDGER_TABLE`]).
pub(crate) const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS tsload_ledger (\
run_id INTEGER NOT NULL, worker INTEGER NOT NULL, seq INTEGER NOT NULL, batch_rows INTEGER NOT NULL, \
PRIMARY KEY (run_id, worker, seq)) WITHOUT ROWID";

/// Records one batch in the ledger, inside the batch's transaction.
pub(crate) const INSERT_LEDGER: &str =
    "INSERT INTO tsload_ledger (run_id, worker, seq, batch_rows) VALUES (?, ?, ?, ?)";

pub(crate) fn drop_table(table: &TableSchema) -> String {
    format!("DROP TABLE IF EXISTS {}", quote_ident(&table.name))
}

/// `CREATE TABLE IF NOT EXISTS "<table>" (ts INTEGER NOT NULL, <tags>, <fields>)`.
pub(crate) fn create_table(table: &TableSchema) -> String {
    let mut sql = format!(
        "CREATE TABLE IF NOT EXISTS {} ({} INTEGER NOT NULL",
        quote_ident(&table.name),
        quote_ident(TS_COLUMN)
    );
    let columns = table
        .tags
        .iter()
        .map(|t| (&t.name, t.data_type))
        .chain(table.fields.iter().map(|f| (&f.name, f.data_type)));
    for (name, data_type) in columns {
        sql.push_str(", ");
        push_ident(&mut sql, name);
        sql.push(' ');
        sql.push_str(sql_type(data_type));
    }
    sql.push(')');
    sql
}

/// `INSERT INTO "<table>" ("ts", <tags>, <fields>) VALUES ` — the part every chunk shares.
pub(crate) fn insert_prefix(table: &TableSchema) -> String {
    let mut sql = String::from("INSERT INTO ");
    push_ident(&mut sql, &table.name);
    sql.push_str(" (");
    push_ident(&mut sql, TS_COLUMN);
    let names = table
        .tags
        .iter()
        .map(|t| &t.name)
        .chain(table.fields.iter().map(|f| &f.name));
    for name in names {
        sql.push(',');
        push_ident(&mut sql, name);
    }
    sql.push_str(") VALUES ");
    sql
}

/// The full INSERT for `rows` rows of `columns` columns: `prefix` then `(?,..),(?,..)`.
pub(crate) fn insert(prefix: &str, columns: usize, rows: usize) -> String {
    // Each row is "(" + "?," per column with the last "," replaced by ")", plus a ",".
    let mut sql = String::with_capacity(prefix.len() + rows * (2 * columns + 2));
    sql.push_str(prefix);
    for row in 0..rows {
        if row > 0 {
            sql.push(',');
        }
        sql.push('(');
        for col in 0..columns {
            if col > 0 {
                sql.push(',');
            }
            sql.push('?');
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::{FieldDef, TagDef};

    fn table(tags: &[&str], fields: &[&str]) -> TableSchema {
        TableSchema {
            name: "cp\"u".to_string(),
            tags: tags
                .iter()
                .enumerate()
                .map(|(slot, n)| TagDef {
                    name: n.to_string(),
                    data_type: DataType::Varchar(16),
                    slot,
                })
                .collect(),
            fields: fields
                .iter()
                .map(|n| FieldDef {
                    name: n.to_string(),
                    data_type: DataType::Double,
                })
                .collect(),
        }
    }

    #[test]
    fn quotes_identifiers() {
        assert_eq!(quote_ident("cpu"), "\"cpu\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident(""), "\"\"");
    }

    #[test]
    fn maps_types() {
        assert_eq!(sql_type(DataType::Bool), "INTEGER");
        assert_eq!(sql_type(DataType::TinyInt), "INTEGER");
        assert_eq!(sql_type(DataType::Timestamp), "INTEGER");
        assert_eq!(sql_type(DataType::Float), "REAL");
        assert_eq!(sql_type(DataType::Double), "REAL");
        assert_eq!(sql_type(DataType::Varchar(8)), "TEXT");
        assert_eq!(sql_type(DataType::NChar(8)), "TEXT");
    }

    #[test]
    fn builds_ddl_and_insert() {
        let t = table(&["host"], &["usage"]);
        assert_eq!(
            create_table(&t),
            "CREATE TABLE IF NOT EXISTS \"cp\"\"u\" (\"ts\" INTEGER NOT NULL, \"host\" TEXT, \"usage\" REAL)"
        );
        assert_eq!(drop_table(&t), "DROP TABLE IF EXISTS \"cp\"\"u\"");
        let prefix = insert_prefix(&t);
        assert_eq!(
            prefix,
            "INSERT INTO \"cp\"\"u\" (\"ts\",\"host\",\"usage\") VALUES "
        );
        assert_eq!(insert(&prefix, 3, 2), format!("{prefix}(?,?,?),(?,?,?)"));
        assert_eq!(insert(&prefix, 1, 1), format!("{prefix}(?)"));
    }

    #[test]
    fn chunks_stay_under_the_parameter_limit() {
        assert_eq!(rows_per_chunk(1), MAX_PARAMS);
        assert_eq!(rows_per_chunk(21), 1560);
        assert!(rows_per_chunk(21) * 21 <= MAX_PARAMS);
        assert_eq!(rows_per_chunk(MAX_PARAMS + 5), 1);
    }

    #[test]
    fn rejects_clashing_columns() {
        assert!(check_table(&table(&["host", "region"], &["usage"])).is_ok());

        let e = check_table(&table(&["host"], &["Host"])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Schema);
        assert!(
            e.message.contains("cp\\\"u") && e.message.contains("Host"),
            "{e}"
        );
        assert!(e.message.contains("both a tag and a field"), "{e}");

        let e = check_table(&table(&["host"], &["TS"])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Schema);
        assert!(e.message.contains("\"TS\""), "{e}");

        let e = check_table(&table(&["a", "a"], &[])).unwrap_err();
        assert!(e.message.contains("twice among the tags"), "{e}");
    }
}
