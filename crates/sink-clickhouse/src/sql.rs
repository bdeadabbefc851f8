//! The statements the ClickHouse target sends, as text: the layout of a table (one per
//! measurement: `ts Int64` nanoseconds, the tag columns, the field columns, a MergeTree
//! ordered by the tags and `ts`, partitioned by month), quoting, and the reads of
//! `tally` and `storage_bytes`. Pure: no I/O.

use tsload_core::{ColumnClash, DataType, ErrorKind, SinkError, TableSchema, find_column_clash};

/// The timestamp column every table has: nanoseconds since the Unix epoch.
pub const TS_COLUMN: &str = "ts";

/// `name` as a ClickHouse identifier: back-quoted, `\` and `` ` `` escaped.
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('`');
    for c in name.chars() {
        if c == '`' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('`');
    out
}

/// `s` as a ClickHouse string literal: single-quoted, `\` and `'` escaped.
pub fn quote_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The ClickHouse type a column of `data_type` is stored as: integers as `Int64`
/// (`UInt64` for unsigned), floats as `Float64`, booleans as `UInt8`, strings as `String`.
/// One width per storage keeps the encoder to one path per column kind.
pub fn column_type(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Bool => "UInt8",
        DataType::TinyInt
        | DataType::SmallInt
        | DataType::Int
        | DataType::BigInt
        | DataType::Timestamp => "Int64",
        DataType::UBigInt => "UInt64",
        DataType::Float | DataType::Double => "Float64",
        DataType::Varchar(_) | DataType::NChar(_) => "String",
    }
}

/// Fails with [`ErrorKind::Schema`] when a column of `table` is named `ts` or two columns
/// share a name (ClickHouse's names are case-sensitive): renaming silently would make the
/// data set differ from what other targets receive.
pub fn check_table(table: &TableSchema) -> Result<(), SinkError> {
    let message = match find_column_clash(table.columns(), &[TS_COLUMN], |n| n) {
        None => return Ok(()),
        Some(ColumnClash::Reserved { name, role, .. }) => format!(
            "table {:?}: {role} column {name:?} clashes with the timestamp column {TS_COLUMN:?}",
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

/// `CREATE DATABASE IF NOT EXISTS `db``.
pub fn create_database(db: &str) -> String {
    format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(db))
}

/// `` `db`.`table` ``.
pub fn table_name(db: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(db), quote_ident(table))
}

/// `DROP TABLE IF EXISTS `db`.`table``.
pub fn drop_table(db: &str, table: &TableSchema) -> String {
    format!("DROP TABLE IF EXISTS {}", table_name(db, &table.name))
}

/// The table of `table`: `ts`, the tags (never NULL: a null tag is stored as the type's
/// empty value, since ClickHouse's sorting key cannot hold NULL), the fields (all
/// `Nullable`: a batch may leave any value out), a MergeTree partitioned by the month of
/// `ts` and ordered by the tags, then `ts`.
pub fn create_table(db: &str, table: &TableSchema) -> String {
    let mut out = format!(
        "CREATE TABLE IF NOT EXISTS {} ({} Int64",
        table_name(db, &table.name),
        quote_ident(TS_COLUMN)
    );
    for tag in &table.tags {
        out.push_str(&format!(
            ", {} {}",
            quote_ident(&tag.name),
            column_type(tag.data_type)
        ));
    }
    for field in &table.fields {
        out.push_str(&format!(
            ", {} Nullable({})",
            quote_ident(&field.name),
            column_type(field.data_type)
        ));
    }
    let ts = quote_ident(TS_COLUMN);
    out.push_str(&format!(
        ") ENGINE = MergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv({ts}, 1000000000))) \
         ORDER BY ("
    ));
    for tag in &table.tags {
        out.push_str(&quote_ident(&tag.name));
        out.push_str(", ");
    }
    out.push_str(&ts);
    out.push(')');
    out
}

/// `INSERT INTO `db`.`table` (`ts`, <tags>, <fields>) FORMAT RowBinary`: the statement
/// of the URL an insert's body is posted to, its columns in the encoder's order.
pub fn insert(db: &str, table: &TableSchema) -> String {
    let mut out = format!(
        "INSERT INTO {} ({}",
        table_name(db, &table.name),
        quote_ident(TS_COLUMN)
    );
    for (name, _) in table.columns() {
        out.push_str(", ");
        out.push_str(&quote_ident(name));
    }
    out.push_str(") FORMAT RowBinary");
    out
}

/// `SELECT count() FROM `db`.`table``.
pub fn count(db: &str, table: &TableSchema) -> String {
    format!("SELECT count() FROM {}", table_name(db, &table.name))
}

/// The rows of `table` per value of its column `key`, one `{"key":..,"n":..}` JSON object
/// a line (JSONEachRow: every ClickHouse has it) ([`read_counts_per_key`]).
pub fn count_per_key(db: &str, table: &TableSchema, key: &str) -> String {
    let key = quote_ident(key);
    format!(
        "SELECT toString({key}) AS key, count() AS n FROM {} GROUP BY {key} FORMAT JSONEachRow",
        table_name(db, &table.name)
    )
}

/// The `(key, n)` pairs of an answer to [`count_per_key`]; `n` may be a JSON number or
/// (64-bit integers quoted, ClickHouse's default) a string.
pub fn read_counts_per_key(answer: &str) -> Result<Vec<(String, u64)>, String> {
    answer
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let bad =
                || format!("expected {{\"key\": .., \"n\": ..}}, the server answered {line:?}");
            let row: serde_json::Value = serde_json::from_str(line).map_err(|_| bad())?;
            let key = row["key"].as_str().ok_or_else(bad)?.to_string();
            let n = match &row["n"] {
                serde_json::Value::String(s) => s.parse().ok(),
                other => other.as_u64(),
            };
            Ok((key, n.ok_or_else(bad)?))
        })
        .collect()
}

/// The bytes on disk of the active parts of `tables` in `db`.
pub fn storage_bytes(db: &str, tables: &[TableSchema]) -> String {
    let names: Vec<String> = tables.iter().map(|t| quote_str(&t.name)).collect();
    format!(
        "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = {} AND table IN ({}) \
         AND active",
        quote_str(db),
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::{FieldDef, TagDef};

    #[test]
    fn counts_per_key_are_read_quoted_or_not_and_a_bad_line_is_named() {
        let counts = read_counts_per_key(
            "{\"key\":\"host_0\",\"n\":\"12\"}\n{\"key\":\"host_1\",\"n\":3}\n\n",
        )
        .unwrap();
        assert_eq!(
            counts,
            [("host_0".to_string(), 12), ("host_1".to_string(), 3)]
        );
        let e = read_counts_per_key("{\"key\":\"host_0\",\"n\":-1}").unwrap_err();
        assert!(e.contains("\\\"n\\\":-1"), "{e}");
        assert!(read_counts_per_key("oops").is_err());
        assert!(read_counts_per_key("{\"n\":1}").is_err());
    }

    fn table() -> TableSchema {
        TableSchema {
            name: "cpu".into(),
            tags: vec![TagDef {
                name: "hostname".into(),
                data_type: DataType::Varchar(32),
                slot: 0,
            }],
            fields: vec![
                FieldDef {
                    name: "usage_user".into(),
                    data_type: DataType::BigInt,
                },
                FieldDef {
                    name: "ok".into(),
                    data_type: DataType::Bool,
                },
                FieldDef {
                    name: "v".into(),
                    data_type: DataType::Float,
                },
            ],
        }
    }

    #[test]
    fn quoting_escapes_what_would_end_the_name_or_literal() {
        assert_eq!(quote_ident("cpu"), "`cpu`");
        assert_eq!(quote_ident("a`b\\c"), "`a\\`b\\\\c`");
        assert_eq!(quote_str("it's\\"), "'it\\'s\\\\'");
    }

    #[test]
    fn tables_are_merge_trees_ordered_by_tags_then_time() {
        assert_eq!(
            create_table("tsload", &table()),
            "CREATE TABLE IF NOT EXISTS `tsload`.`cpu` (`ts` Int64, `hostname` String, \
             `usage_user` Nullable(Int64), `ok` Nullable(UInt8), `v` Nullable(Float64)) \
             ENGINE = MergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv(`ts`, 1000000000))) \
             ORDER BY (`hostname`, `ts`)"
        );
        let mut bare = table();
        bare.tags.clear();
        assert!(create_table("d", &bare).ends_with("ORDER BY (`ts`)"));
        assert_eq!(
            insert("tsload", &table()),
            "INSERT INTO `tsload`.`cpu` (`ts`, `hostname`, `usage_user`, `ok`, `v`) FORMAT RowBinary"
        );
        assert_eq!(drop_table("d", &table()), "DROP TABLE IF EXISTS `d`.`cpu`");
        assert_eq!(create_database("d"), "CREATE DATABASE IF NOT EXISTS `d`");
        assert_eq!(count("d", &table()), "SELECT count() FROM `d`.`cpu`");
        assert_eq!(
            storage_bytes("d'x", &[table(), bare]),
            "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'd\\'x' AND \
             table IN ('cpu', 'cpu') AND active"
        );
    }

    #[test]
    fn a_column_named_ts_or_twice_is_refused() {
        assert!(check_table(&table()).is_ok());
        let mut t = table();
        t.fields[0].name = "ts".into();
        let e = check_table(&t).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Schema);
        assert!(e.message.contains("timestamp column"), "{e}");
        let mut t = table();
        t.fields[1].name = "hostname".into();
        let e = check_table(&t).unwrap_err();
        assert!(e.message.contains("both a tag and a field"), "{e}");
        // Case matters to ClickHouse.
        let mut t = table();
        t.fields[1].name = "Hostname".into();
        assert!(check_table(&t).is_ok());
    }
}
