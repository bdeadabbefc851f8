//! SQL text for the MySQL target: identifier quoting, type mapping, the schema checks, the
//! CREATE / DROP / multi-row INSERT statements, the chunk sizes that keep one INSERT under
//! the placeholder and packet limits, and the `DATETIME(6)` text of a timestamp.

use tsload_core::{ColumnClash, DataType, ErrorKind, SinkError, TableSchema, find_column_clash};

use crate::{PrimaryKey, TsType};

/// Most `?` placeholders one prepared statement may carry: the protocol counts them in 16
/// bits.
/// The exactly-once ledger (see [`tsload_core::LEDGER_TABLE`]); always InnoDB, whatever
/// engine the data tables use, so that it commits with the batch.
pub(crate) const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS tsload_ledger (\
run_id BIGINT NOT NULL, worker INT NOT NULL, seq BIGINT NOT NULL, batch_rows INT NOT NULL, \
PRIMARY KEY (run_id, worker, seq)) ENGINE=InnoDB";

pub(crate) const MAX_PARAMS: usize = 65_535;

/// Name of the timestamp column every table has.
pub(crate) const TS_COLUMN: &str = "ts";

/// Name of the surrogate key column of [`PrimaryKey::AutoIncrement`].
pub(crate) const ID_COLUMN: &str = "id";

/// Fixed bytes of a `COM_STMT_EXECUTE` packet around its parameters: packet header (4),
/// command (1), statement id (4), flags (1), iteration count (4), "types follow" (1).
pub(crate) const EXECUTE_OVERHEAD: usize = 15;

/// `DATETIME(6)` text length: `YYYY-MM-DD HH:MM:SS.ffffff`.
pub(crate) const DATETIME_LEN: usize = 26;

/// `name` as a back-quoted MySQL identifier, embedded back quotes doubled.
pub(crate) fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}

fn push_ident(out: &mut String, name: &str) {
    out.push('`');
    for c in name.chars() {
        if c == '`' {
            out.push('`');
        }
        out.push(c);
    }
    out.push('`');
}

/// The MySQL column type declared for a [`DataType`].
pub(crate) fn sql_type(data_type: DataType) -> String {
    match data_type {
        DataType::Bool => "BOOLEAN".into(),
        DataType::TinyInt => "TINYINT".into(),
        DataType::SmallInt => "SMALLINT".into(),
        DataType::Int => "INT".into(),
        DataType::BigInt | DataType::Timestamp => "BIGINT".into(),
        DataType::UBigInt => "BIGINT UNSIGNED".into(),
        DataType::Float => "FLOAT".into(),
        DataType::Double => "DOUBLE".into(),
        DataType::Varchar(n) => format!("VARCHAR({n})"),
        DataType::NChar(n) => format!("VARCHAR({n}) CHARACTER SET utf8mb4"),
    }
}

/// The column type of `ts`.
pub(crate) fn ts_sql_type(ts_type: TsType) -> &'static str {
    match ts_type {
        TsType::DateTime6 => "DATETIME(6)",
        TsType::BigIntNs => "BIGINT",
    }
}

/// Columns of a table's rows as inserted: `ts`, then the tags, then the fields (an
/// auto-increment id is filled by the server).
pub(crate) fn column_count(table: &TableSchema) -> usize {
    1 + table.tags.len() + table.fields.len()
}

/// Whether `engine` may be put after `ENGINE=`: one word of ASCII letters, digits and
/// underscores, not starting with a digit.
pub(crate) fn is_engine_name(engine: &str) -> bool {
    let mut chars = engine.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Fails with [`ErrorKind::Schema`] when two columns of `table` would get the same MySQL
/// name (column names are case-insensitive) or one takes the name of `ts` (or of `id` under
/// an auto-increment key): renaming silently would make the data set differ from what
/// other targets receive.
pub(crate) fn check_table(table: &TableSchema, primary_key: PrimaryKey) -> Result<(), SinkError> {
    let mut reserved = vec![TS_COLUMN];
    if primary_key == PrimaryKey::AutoIncrement {
        reserved.push(ID_COLUMN);
    }
    let message = match find_column_clash(table.columns(), &reserved, |n| n.to_lowercase()) {
        None => return Ok(()),
        Some(ColumnClash::Reserved {
            name,
            role,
            reserved,
        }) => {
            let what = if reserved == TS_COLUMN {
                "the timestamp column"
            } else {
                "the auto-increment key column"
            };
            format!(
                "table {:?}: {role} column {name:?} clashes with {what} {reserved:?}",
                table.name
            )
        }
        Some(ColumnClash::Duplicate { name, role, first }) => format!(
            "table {:?}: column {name:?} {}",
            table.name,
            ColumnClash::duplicate_words(role, first)
        ),
    };
    Err(SinkError::new(ErrorKind::Schema, message))
}

/// `CREATE DATABASE IF NOT EXISTS `<db>``.
pub(crate) fn create_database(name: &str) -> String {
    format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(name))
}

/// `DROP TABLE IF EXISTS `<table>``.
pub(crate) fn drop_table(table: &TableSchema) -> String {
    format!("DROP TABLE IF EXISTS {}", quote_ident(&table.name))
}

/// What `CREATE TABLE` depends on besides the table itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableOptions<'a> {
    pub engine: &'a str,
    pub primary_key: PrimaryKey,
    pub ts_type: TsType,
}

/// `CREATE TABLE IF NOT EXISTS `<table>` ([id,] ts, <tags>, <fields>[, PRIMARY KEY (..)])
/// ENGINE=<engine>`.
///
/// Under [`PrimaryKey::TagsTs`] the tag columns are declared `NOT NULL` (MySQL makes key
/// columns so anyway), so a row with a null tag is rejected.
pub(crate) fn create_table(table: &TableSchema, options: TableOptions<'_>) -> String {
    let mut sql = String::from("CREATE TABLE IF NOT EXISTS ");
    push_ident(&mut sql, &table.name);
    sql.push_str(" (");
    if options.primary_key == PrimaryKey::AutoIncrement {
        push_ident(&mut sql, ID_COLUMN);
        sql.push_str(" BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, ");
    }
    push_ident(&mut sql, TS_COLUMN);
    sql.push(' ');
    sql.push_str(ts_sql_type(options.ts_type));
    sql.push_str(" NOT NULL");
    let tags_not_null = options.primary_key == PrimaryKey::TagsTs;
    for t in &table.tags {
        sql.push_str(", ");
        push_ident(&mut sql, &t.name);
        sql.push(' ');
        sql.push_str(&sql_type(t.data_type));
        if tags_not_null {
            sql.push_str(" NOT NULL");
        }
    }
    for f in &table.fields {
        sql.push_str(", ");
        push_ident(&mut sql, &f.name);
        sql.push(' ');
        sql.push_str(&sql_type(f.data_type));
    }
    match options.primary_key {
        PrimaryKey::None => {}
        PrimaryKey::AutoIncrement => {
            sql.push_str(", PRIMARY KEY (");
            push_ident(&mut sql, ID_COLUMN);
            sql.push(')');
        }
        PrimaryKey::TagsTs => {
            sql.push_str(", PRIMARY KEY (");
            for t in &table.tags {
                push_ident(&mut sql, &t.name);
                sql.push(',');
            }
            push_ident(&mut sql, TS_COLUMN);
            sql.push(')');
        }
    }
    sql.push_str(") ENGINE=");
    sql.push_str(options.engine);
    sql
}

/// `INSERT INTO `<table>` (`ts`, <tags>, <fields>) VALUES ` — the part every chunk shares.
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

/// Length of the INSERT [`insert`] builds for `rows` rows of `columns` columns.
pub(crate) fn insert_len(prefix_len: usize, columns: usize, rows: usize) -> usize {
    // Each row is "(" + "?," per column with the last "," replaced by ")", plus a "," between
    // rows.
    prefix_len + rows * (2 * columns + 1) + rows.saturating_sub(1)
}

/// The full INSERT for `rows` rows of `columns` columns: `prefix` then `(?,..),(?,..)`.
pub(crate) fn insert(prefix: &str, columns: usize, rows: usize) -> String {
    let mut sql = String::with_capacity(insert_len(prefix.len(), columns, rows));
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

/// Bytes a string of `len` bytes takes as a bound parameter: its length-encoded length,
/// then the bytes.
pub(crate) fn lenenc_str_len(len: usize) -> usize {
    let header = match len {
        0..251 => 1,
        251..65_536 => 3,
        65_536..16_777_216 => 4,
        _ => 9,
    };
    header + len
}

/// Bytes one row of `columns` parameters adds to a `COM_STMT_EXECUTE` packet besides its
/// values: two type bytes per parameter and its bits of the null bitmap (rounded up per
/// row, so the estimate never falls short).
pub(crate) fn row_overhead(columns: usize) -> usize {
    2 * columns + columns.div_ceil(8)
}

/// How many rows one INSERT may carry: at most [`MAX_PARAMS`] placeholders, an EXECUTE
/// packet of rows of at most `row_bytes` bytes each (parameters, type bytes and null bitmap
/// included) within `packet_budget`, and a statement text (`prefix_len` + placeholders)
/// within `packet_budget` too. At least 1.
pub(crate) fn rows_per_chunk(
    columns: usize,
    prefix_len: usize,
    row_bytes: usize,
    packet_budget: usize,
) -> usize {
    let columns = columns.max(1);
    let by_params = MAX_PARAMS / columns;
    let by_values = packet_budget.saturating_sub(EXECUTE_OVERHEAD) / row_bytes.max(1);
    let by_text = packet_budget.saturating_sub(prefix_len) / (2 * columns + 2);
    by_params.min(by_values).min(by_text).max(1)
}

/// The bytes of `max_allowed_packet` a connection plans to use: 1/16 is left as a margin
/// for what the estimate does not see (multi-packet headers, server-side accounting).
pub(crate) fn packet_budget(max_allowed_packet: u64) -> usize {
    let max = usize::try_from(max_allowed_packet).unwrap_or(usize::MAX);
    max - max / 16
}

/// Writes `ns` (nanoseconds since the Unix epoch, UTC) as `YYYY-MM-DD HH:MM:SS.ffffff`
/// into `out` and returns it: what a `DATETIME(6)` column stores. Digits below the
/// microsecond are dropped (rounded towards minus infinity, so every timestamp of one
/// microsecond maps to the same value).
pub(crate) fn format_datetime(ns: i64, out: &mut [u8; DATETIME_LEN]) -> &str {
    let micros = ns.div_euclid(1_000);
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut put = |at: usize, width: usize, mut v: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, sod / 3600);
    put(14, 2, sod / 60 % 60);
    put(17, 2, sod % 60);
    put(20, 6, frac);
    out[4] = b'-';
    out[7] = b'-';
    out[10] = b' ';
    out[13] = b':';
    out[16] = b':';
    out[19] = b'.';
    // Only ASCII digits and separators were written.
    std::str::from_utf8(out).unwrap_or_default()
}

/// (year, month, day) of the proleptic Gregorian calendar for `days` since 1970-01-01
/// (Howard Hinnant's `civil_from_days`). `i64` nanoseconds span 1677..2262, well inside
/// the four-digit years `DATETIME` holds.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::{FieldDef, TagDef};

    fn table(tags: &[&str], fields: &[&str]) -> TableSchema {
        TableSchema {
            name: "cp`u".to_string(),
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

    fn options(primary_key: PrimaryKey, ts_type: TsType) -> TableOptions<'static> {
        TableOptions {
            engine: "InnoDB",
            primary_key,
            ts_type,
        }
    }

    #[test]
    fn quotes_identifiers() {
        assert_eq!(quote_ident("cpu"), "`cpu`");
        assert_eq!(quote_ident("a`b"), "`a``b`");
        assert_eq!(quote_ident("``"), "``````");
        assert_eq!(quote_ident("a\"b c"), "`a\"b c`");
        assert_eq!(quote_ident(""), "``");
    }

    #[test]
    fn maps_types() {
        let cases = [
            (DataType::Bool, "BOOLEAN"),
            (DataType::TinyInt, "TINYINT"),
            (DataType::SmallInt, "SMALLINT"),
            (DataType::Int, "INT"),
            (DataType::BigInt, "BIGINT"),
            (DataType::UBigInt, "BIGINT UNSIGNED"),
            (DataType::Float, "FLOAT"),
            (DataType::Double, "DOUBLE"),
            (DataType::Varchar(8), "VARCHAR(8)"),
            (DataType::NChar(20), "VARCHAR(20) CHARACTER SET utf8mb4"),
            (DataType::Timestamp, "BIGINT"),
        ];
        for (data_type, sql) in cases {
            assert_eq!(sql_type(data_type), sql, "{data_type}");
        }
        assert_eq!(ts_sql_type(TsType::DateTime6), "DATETIME(6)");
        assert_eq!(ts_sql_type(TsType::BigIntNs), "BIGINT");
    }

    #[test]
    fn create_table_without_key() {
        let t = table(&["host"], &["usage"]);
        assert_eq!(
            create_table(&t, options(PrimaryKey::None, TsType::DateTime6)),
            "CREATE TABLE IF NOT EXISTS `cp``u` (`ts` DATETIME(6) NOT NULL, \
             `host` VARCHAR(16), `usage` DOUBLE) ENGINE=InnoDB"
        );
        let opts = TableOptions {
            engine: "MyISAM",
            ..options(PrimaryKey::None, TsType::BigIntNs)
        };
        assert_eq!(
            create_table(&t, opts),
            "CREATE TABLE IF NOT EXISTS `cp``u` (`ts` BIGINT NOT NULL, \
             `host` VARCHAR(16), `usage` DOUBLE) ENGINE=MyISAM"
        );
    }

    #[test]
    fn create_table_with_auto_increment_key() {
        let t = table(&["host"], &["usage"]);
        assert_eq!(
            create_table(&t, options(PrimaryKey::AutoIncrement, TsType::DateTime6)),
            "CREATE TABLE IF NOT EXISTS `cp``u` (`id` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, \
             `ts` DATETIME(6) NOT NULL, `host` VARCHAR(16), `usage` DOUBLE, \
             PRIMARY KEY (`id`)) ENGINE=InnoDB"
        );
    }

    #[test]
    fn create_table_with_tags_ts_key() {
        let t = table(&["host", "region"], &["usage"]);
        assert_eq!(
            create_table(&t, options(PrimaryKey::TagsTs, TsType::BigIntNs)),
            "CREATE TABLE IF NOT EXISTS `cp``u` (`ts` BIGINT NOT NULL, \
             `host` VARCHAR(16) NOT NULL, `region` VARCHAR(16) NOT NULL, `usage` DOUBLE, \
             PRIMARY KEY (`host`,`region`,`ts`)) ENGINE=InnoDB"
        );
        // No tags: the key is the timestamp alone.
        let t = table(&[], &["usage"]);
        assert_eq!(
            create_table(&t, options(PrimaryKey::TagsTs, TsType::DateTime6)),
            "CREATE TABLE IF NOT EXISTS `cp``u` (`ts` DATETIME(6) NOT NULL, \
             `usage` DOUBLE, PRIMARY KEY (`ts`)) ENGINE=InnoDB"
        );
    }

    #[test]
    fn builds_drop_database_and_insert() {
        let t = table(&["host"], &["usage"]);
        assert_eq!(drop_table(&t), "DROP TABLE IF EXISTS `cp``u`");
        assert_eq!(
            create_database("ts`load"),
            "CREATE DATABASE IF NOT EXISTS `ts``load`"
        );
        let prefix = insert_prefix(&t);
        assert_eq!(prefix, "INSERT INTO `cp``u` (`ts`,`host`,`usage`) VALUES ");
        let sql = insert(&prefix, 3, 2);
        assert_eq!(sql, format!("{prefix}(?,?,?),(?,?,?)"));
        assert_eq!(sql.len(), insert_len(prefix.len(), 3, 2));
        assert_eq!(insert(&prefix, 1, 1), format!("{prefix}(?)"));
        assert_eq!(insert_len(prefix.len(), 1, 1), prefix.len() + 3);
    }

    #[test]
    fn validates_engine_names() {
        for ok in ["InnoDB", "MyISAM", "RocksDB", "Aria", "_x1", "MEMORY"] {
            assert!(is_engine_name(ok), "{ok}");
        }
        for bad in [
            "",
            "1nno",
            "Inno DB",
            "InnoDB;",
            "x`y",
            "a-b",
            "InnoDB COMMENT='x'",
        ] {
            assert!(!is_engine_name(bad), "{bad}");
        }
    }

    #[test]
    fn chunks_stay_under_the_placeholder_limit() {
        let big = 1 << 30;
        assert_eq!(rows_per_chunk(1, 40, 10, big), MAX_PARAMS);
        assert_eq!(rows_per_chunk(21, 40, 200, big), 3120);
        assert!(rows_per_chunk(21, 40, 200, big) * 21 <= MAX_PARAMS);
        // 44 columns: 1489 rows, so 5,000 rows take 4 statements.
        assert_eq!(rows_per_chunk(44, 40, 400, big), 1489);
        assert_eq!(rows_per_chunk(MAX_PARAMS + 5, 40, 10, big), 1);
        assert_eq!(rows_per_chunk(0, 40, 10, big), MAX_PARAMS);
    }

    #[test]
    fn chunks_stay_under_the_packet_size() {
        // 1 MiB budget, 1,000-byte rows: the values decide.
        let budget = 1 << 20;
        let rows = rows_per_chunk(11, 60, 1_000, budget);
        assert_eq!(rows, (budget - EXECUTE_OVERHEAD) / 1_000);
        assert!(rows * 1_000 + EXECUTE_OVERHEAD <= budget);
        // A tiny budget: the statement text decides (24 bytes per row of 11 `?`).
        let rows = rows_per_chunk(11, 60, 20, 2_000);
        assert_eq!(rows, (2_000 - 60) / 24);
        assert!(insert_len(60, 11, rows) <= 2_000);
        // A row bigger than the budget still makes chunks of one row (the server says no).
        assert_eq!(rows_per_chunk(11, 60, 5_000, 2_000), 1);
        // The budget leaves a margin.
        assert_eq!(packet_budget(16 << 20), 15 << 20);
        assert_eq!(packet_budget(1024), 960);
    }

    #[test]
    fn estimates_parameter_bytes() {
        assert_eq!(lenenc_str_len(0), 1);
        assert_eq!(lenenc_str_len(250), 251);
        assert_eq!(lenenc_str_len(251), 254);
        assert_eq!(lenenc_str_len(70_000), 70_004);
        assert_eq!(lenenc_str_len(20_000_000), 20_000_009);
        assert_eq!(row_overhead(1), 3);
        assert_eq!(row_overhead(8), 17);
        assert_eq!(row_overhead(9), 20);
    }

    #[test]
    fn formats_datetimes() {
        let mut buf = [0u8; DATETIME_LEN];
        assert_eq!(format_datetime(0, &mut buf), "1970-01-01 00:00:00.000000");
        assert_eq!(
            format_datetime(1_700_000_000_123_456_789, &mut buf),
            "2023-11-14 22:13:20.123456"
        );
        // 2016-01-01 (TSBS's default start), leap days and the end of a leap year.
        assert_eq!(
            format_datetime(1_451_606_400_000_000_000, &mut buf),
            "2016-01-01 00:00:00.000000"
        );
        assert_eq!(
            format_datetime(1_456_704_000_000_000_000, &mut buf),
            "2016-02-29 00:00:00.000000"
        );
        assert_eq!(
            format_datetime(1_483_228_799_999_999_999, &mut buf),
            "2016-12-31 23:59:59.999999"
        );
        assert_eq!(
            format_datetime(951_782_400_000_001_000, &mut buf),
            "2000-02-29 00:00:00.000001"
        );
        // Before the epoch: floor, not truncation towards zero.
        assert_eq!(format_datetime(-1, &mut buf), "1969-12-31 23:59:59.999999");
        assert_eq!(
            format_datetime(-86_400_000_000_000, &mut buf),
            "1969-12-31 00:00:00.000000"
        );
        assert_eq!(
            format_datetime(i64::MIN, &mut buf),
            "1677-09-21 00:12:43.145224"
        );
        assert_eq!(
            format_datetime(i64::MAX, &mut buf),
            "2262-04-11 23:47:16.854775"
        );
    }

    #[test]
    fn rejects_clashing_columns() {
        assert!(check_table(&table(&["host", "region"], &["usage"]), PrimaryKey::None).is_ok());
        // `id` is only reserved under an auto-increment key.
        assert!(check_table(&table(&["id"], &["usage"]), PrimaryKey::TagsTs).is_ok());

        let e = check_table(&table(&["host"], &["Host"]), PrimaryKey::None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Schema);
        assert!(
            e.message.contains("cp`u") && e.message.contains("Host"),
            "{e}"
        );
        assert!(e.message.contains("both a tag and a field"), "{e}");

        let e = check_table(&table(&["host"], &["TS"]), PrimaryKey::None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Schema);
        assert!(
            e.message.contains("\"TS\"") && e.message.contains("timestamp"),
            "{e}"
        );

        let e = check_table(&table(&["ID"], &[]), PrimaryKey::AutoIncrement).unwrap_err();
        assert!(e.message.contains("auto-increment"), "{e}");

        let e = check_table(&table(&["a", "a"], &[]), PrimaryKey::None).unwrap_err();
        assert!(e.message.contains("twice among the tags"), "{e}");
    }
}
