//! The SQL builders' unit tests: types, literals and names, the DDL, tag coercion, row
//! formatting, and multi-table and statement-API inserts split under the length limit.

use super::*;
use crate::config::CacheModel;
use crate::layout::{TagCol, TagFrom};
use tsload_core::{FieldDef, StrValues};

fn layout() -> TableLayout {
    TableLayout {
        stable: "meters".into(),
        name_slot: Some(0),
        tags: vec![
            TagCol {
                name: "t0".into(),
                data_type: DataType::Varchar(10),
                from: TagFrom::Slot(1),
            },
            TagCol {
                name: "t1".into(),
                data_type: DataType::Int,
                from: TagFrom::Slot(2),
            },
        ],
        fields: vec![
            FieldDef {
                name: "c0".into(),
                data_type: DataType::Varchar(10),
            },
            FieldDef {
                name: "c1".into(),
                data_type: DataType::Float,
            },
            FieldDef {
                name: "c2".into(),
                data_type: DataType::Timestamp,
            },
            FieldDef {
                name: "c3".into(),
                data_type: DataType::Bool,
            },
        ],
    }
}

fn batch() -> TableBatch {
    let mut s = StrValues::default();
    s.push("a'b");
    s.push("c\\d");
    TableBatch {
        device: vec![0, 1],
        ts: vec![1_500_000_000_000_000_000, 1_500_000_000_001_000_000],
        columns: vec![
            Column {
                values: ColumnValues::Str(s),
                valid: vec![],
            },
            Column {
                values: ColumnValues::Float(vec![1.5, f64::NAN]),
                valid: vec![],
            },
            Column {
                values: ColumnValues::Int(vec![1_500_000_000_000, 7]),
                valid: vec![true, false],
            },
            Column {
                values: ColumnValues::Bool(vec![true, false]),
                valid: vec![],
            },
        ],
    }
}

#[test]
fn maps_types() {
    let cases = [
        (DataType::Bool, "BOOL"),
        (DataType::TinyInt, "TINYINT"),
        (DataType::SmallInt, "SMALLINT"),
        (DataType::Int, "INT"),
        (DataType::BigInt, "BIGINT"),
        (DataType::UBigInt, "BIGINT UNSIGNED"),
        (DataType::Float, "FLOAT"),
        (DataType::Double, "DOUBLE"),
        (DataType::Varchar(10), "VARCHAR(10)"),
        (DataType::NChar(4), "NCHAR(4)"),
        (DataType::Timestamp, "TIMESTAMP"),
        (DataType::Varchar(0), "VARCHAR(1)"),
    ];
    for (t, s) in cases {
        assert_eq!(sql_type(t), s);
    }
}

#[test]
fn escapes_strings_and_quotes_names() {
    let mut s = String::new();
    push_str_literal(&mut s, r"it's a \ test");
    assert_eq!(s, r"'it\'s a \\ test'");
    assert_eq!(quote_ident("d0"), "`d0`");
    let mut s = String::new();
    push_str_literal(&mut s, "中文");
    assert_eq!(s, "'中文'");
}

#[test]
fn database_ddl() {
    assert_eq!(drop_database("db"), "DROP DATABASE IF EXISTS db");
    assert_eq!(
        create_database("db", &DbOptions::default()),
        "CREATE DATABASE IF NOT EXISTS db PRECISION 'ms'"
    );
    let o = DbOptions {
        vgroups: Some(4),
        cachemodel: Some(CacheModel::LastRow),
        buffer: Some(256),
        wal_level: Some(1),
        precision: Precision::Ns,
    };
    assert_eq!(
        create_database("db", &o),
        "CREATE DATABASE IF NOT EXISTS db PRECISION 'ns' VGROUPS 4 BUFFER 256 \
         CACHEMODEL 'last_row' WAL_LEVEL 1"
    );
    assert_eq!(
        database_precision_query("db"),
        "SELECT `precision` FROM information_schema.ins_databases WHERE name = 'db'"
    );
}

#[test]
fn stable_and_child_ddl() {
    let l = layout();
    assert_eq!(
        create_stable("db", &l),
        "CREATE STABLE IF NOT EXISTS db.`meters` (`ts` TIMESTAMP, `c0` VARCHAR(10), \
         `c1` FLOAT, `c2` TIMESTAMP, `c3` BOOL) TAGS (`t0` VARCHAR(10), `t1` INT)"
    );
    let tags = [
        TagValue::Str("d0".into()),
        TagValue::Str("o'k".into()),
        TagValue::Int(7),
    ];
    assert_eq!(
        create_child_clause("db", &l, "d0", &tags, Precision::Ms).unwrap(),
        "IF NOT EXISTS db.`d0` USING db.`meters` TAGS ('o\\'k',7)"
    );
    let bad = [TagValue::Null, TagValue::Null, TagValue::Str("x".into())];
    let e = create_child_clause("db", &l, "d0", &bad, Precision::Ms).unwrap_err();
    assert!(
        e.contains("t1") && e.contains("d0") && e.contains("int"),
        "{e}"
    );
}

#[test]
fn name_tag_values_fill_placeholder_tags() {
    let mut l = layout();
    l.tags = vec![TagCol {
        name: "tname".into(),
        data_type: DataType::Varchar(12),
        from: TagFrom::ChildName,
    }];
    let mut s = String::new();
    push_tag_values(&mut s, &l, &[], "d9", Precision::Ms).unwrap();
    assert_eq!(s, "('d9')");
}

#[test]
fn batches_child_table_creation() {
    let mut b = CreateBatcher::new(2, 1000);
    assert_eq!(b.push("a"), None);
    assert_eq!(b.push("b"), None);
    assert_eq!(b.push("c").as_deref(), Some("CREATE TABLE a b"));
    assert_eq!(b.take().as_deref(), Some("CREATE TABLE c"));
    assert_eq!(b.take(), None);
    // The length limit splits too.
    let mut b = CreateBatcher::new(100, 20);
    assert_eq!(b.push("aaaa"), None); // "CREATE TABLE aaaa" = 17 bytes
    assert_eq!(b.push("bbbb").as_deref(), Some("CREATE TABLE aaaa"));
    assert_eq!(b.take().as_deref(), Some("CREATE TABLE bbbb"));
}

#[test]
fn coerces_tag_values() {
    let p = Precision::Ms;
    let s = TagValue::Str("12".into());
    assert_eq!(coerce_tag(DataType::Int, &s, p), Ok(TagLit::Int(12)));
    assert_eq!(
        coerce_tag(DataType::Varchar(4), &TagValue::Int(5), p),
        Ok(TagLit::Str("5".into()))
    );
    assert_eq!(
        coerce_tag(DataType::Double, &TagValue::Float(f64::NAN), p),
        Ok(TagLit::Null)
    );
    assert_eq!(
        coerce_tag(DataType::Double, &TagValue::Int(3), p),
        Ok(TagLit::Float(3.0))
    );
    assert_eq!(
        coerce_tag(DataType::Bool, &TagValue::Int(0), p),
        Ok(TagLit::Bool(false))
    );
    assert_eq!(
        coerce_tag(DataType::Timestamp, &TagValue::Int(2), Precision::Us),
        Ok(TagLit::Ts(2000))
    );
    assert_eq!(
        coerce_tag(DataType::Int, &TagValue::Null, p),
        Ok(TagLit::Null)
    );
    assert!(coerce_tag(DataType::TinyInt, &TagValue::Int(300), p).is_err());
    assert!(coerce_tag(DataType::UBigInt, &TagValue::Int(-1), p).is_err());
    assert!(coerce_tag(DataType::Int, &TagValue::Float(1.5), p).is_err());
    assert!(coerce_tag(DataType::Bool, &TagValue::Str("maybe".into()), p).is_err());
}

#[test]
fn formats_rows_with_nulls_and_precision() {
    let l = layout();
    let tb = batch();
    let mut s = String::new();
    push_row(&mut s, &tb, &l, 0, Precision::Ms);
    assert_eq!(s, " (1500000000000,'a\\'b',1.5,1500000000000,true)");
    let mut s = String::new();
    push_row(&mut s, &tb, &l, 1, Precision::Us);
    assert_eq!(s, " (1500000000001000,'c\\\\d',NULL,NULL,false)");
    let mut s = String::new();
    push_row(&mut s, &tb, &l, 0, Precision::Ns);
    assert_eq!(
        s,
        " (1500000000000000000,'a\\'b',1.5,1500000000000000000,true)"
    );
}

#[test]
fn insert_headers() {
    let l = layout();
    let tags = [
        TagValue::Str("d0".into()),
        TagValue::Str("x".into()),
        TagValue::Int(1),
    ];
    assert_eq!(
        insert_header(&l, "d0", None, Precision::Ms).unwrap(),
        "`d0` VALUES"
    );
    assert_eq!(
        insert_header(&l, "d0", Some(&tags), Precision::Ms).unwrap(),
        "`d0` USING `meters` TAGS ('x',1) VALUES"
    );
}

#[test]
fn builds_multi_table_inserts() {
    let mut b = InsertBuilder::new(1000);
    b.table("`a` VALUES");
    b.row(" (1,2)").unwrap();
    b.row(" (3,4)").unwrap();
    b.table("`b` VALUES");
    b.row(" (5,6)").unwrap();
    b.finish();
    let all: Vec<_> = b.statements().collect();
    assert_eq!(all, ["INSERT INTO `a` VALUES (1,2) (3,4) `b` VALUES (5,6)"]);
    assert_eq!(b.bytes(), all[0].len());
    b.clear();
    assert_eq!(b.statement_count(), 0);
}

#[test]
fn splits_inserts_under_the_length_limit() {
    // "INSERT INTO `a` VALUES (1,2)" is 28 bytes; a second row would make it 34.
    let mut b = InsertBuilder::new(30);
    b.table("`a` VALUES");
    b.row(" (1,2)").unwrap();
    b.row(" (3,4)").unwrap();
    b.table("`b` VALUES");
    b.row(" (5,6)").unwrap();
    b.finish();
    let all: Vec<_> = b.statements().collect();
    assert_eq!(
        all,
        [
            "INSERT INTO `a` VALUES (1,2)",
            "INSERT INTO `a` VALUES (3,4)",
            "INSERT INTO `b` VALUES (5,6)",
        ]
    );
    assert!(all.iter().all(|s| s.len() <= 30));

    // A statement is reused across tables while it fits.
    let mut b = InsertBuilder::new(45);
    b.table("`a` VALUES");
    b.row(" (1,2)").unwrap();
    b.table("`b` VALUES");
    b.row(" (5,6)").unwrap();
    b.row(" (7,8)").unwrap();
    b.finish();
    let all: Vec<_> = b.statements().collect();
    assert_eq!(
        all,
        [
            "INSERT INTO `a` VALUES (1,2) `b` VALUES (5,6)",
            "INSERT INTO `b` VALUES (7,8)",
        ]
    );

    let mut b = InsertBuilder::new(20);
    b.table("`a` VALUES");
    let e = b.row(" (1,2)").unwrap_err();
    assert!(e.contains("max_sql_length = 20"), "{e}");
}

#[test]
fn split_statements_stay_under_the_limit_for_many_rows() {
    let l = layout();
    let tb = batch();
    let mut b = InsertBuilder::new(1024);
    let mut row = String::new();
    for child in 0..50 {
        b.table(&insert_header(&l, &format!("d{child}"), None, Precision::Ms).unwrap());
        for r in 0..20 {
            row.clear();
            push_row(&mut row, &tb, &l, r % 2, Precision::Ms);
            b.row(&row).unwrap();
        }
    }
    b.finish();
    assert!(b.statement_count() > 1);
    let rows: usize = b.statements().map(|s| s.matches(" (").count()).sum();
    assert_eq!(rows, 1000);
    assert!(
        b.statements()
            .all(|s| s.len() <= 1024 && s.starts_with("INSERT INTO `d"))
    );
}

#[test]
fn statement_api_inserts() {
    let l = layout();
    assert_eq!(
        stmt_insert(&l, true),
        "INSERT INTO ? USING `meters` TAGS (?,?) VALUES (?,?,?,?,?)"
    );
    assert_eq!(stmt_insert(&l, false), "INSERT INTO ? VALUES (?,?,?,?,?)");
}
