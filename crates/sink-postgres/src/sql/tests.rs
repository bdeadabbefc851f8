//! The SQL builders' unit tests: quoting, column types, both layouts' DDL and schema
//! checks, and the statements of the three insert methods.

use super::*;
use tsload_core::{FieldDef, TagDef};

fn table(name: &str, tags: &[(&str, DataType, usize)], fields: &[(&str, DataType)]) -> TableSchema {
    TableSchema {
        name: name.to_string(),
        tags: tags
            .iter()
            .map(|(n, t, slot)| TagDef {
                name: n.to_string(),
                data_type: *t,
                slot: *slot,
            })
            .collect(),
        fields: fields
            .iter()
            .map(|(n, t)| FieldDef {
                name: n.to_string(),
                data_type: *t,
            })
            .collect(),
    }
}

/// The tags layout's placement for `tables`, through `tag_slot_columns`' caller's rule.
fn tags_of_all(tables: &[TableSchema]) -> TagPlacement {
    TagPlacement::of(Layout::TagsTable, tables)
}

fn tags_of(t: &TableSchema) -> TagPlacement {
    tags_of_all(std::slice::from_ref(t))
}

fn shared_columns(tables: &[TableSchema]) -> Result<Vec<TagSlotColumn>, SinkError> {
    let TagPlacement::TagsTable(shared) = tags_of_all(tables) else {
        unreachable!("the tags layout")
    };
    tag_slot_columns(tables, &shared)
}

fn cpu() -> TableSchema {
    table(
        "cp\"u",
        &[
            ("host", DataType::Varchar(16), 0),
            ("rack", DataType::Int, 1),
        ],
        &[("usage", DataType::Double), ("n", DataType::TinyInt)],
    )
}

#[test]
fn quotes_identifiers_and_literals() {
    assert_eq!(quote_ident("cpu"), "\"cpu\"");
    assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    assert_eq!(quote_literal("it's"), "'it''s'");
    assert_eq!(quote_literal("\"a\"\"b\""), "'\"a\"\"b\"'");
}

#[test]
fn maps_column_types() {
    assert_eq!(column_type(DataType::Bool), "boolean");
    assert_eq!(column_type(DataType::TinyInt), "smallint");
    assert_eq!(column_type(DataType::SmallInt), "smallint");
    assert_eq!(column_type(DataType::Int), "integer");
    assert_eq!(column_type(DataType::BigInt), "bigint");
    assert_eq!(column_type(DataType::UBigInt), "bigint");
    assert_eq!(column_type(DataType::Timestamp), "bigint");
    assert_eq!(column_type(DataType::Float), "real");
    assert_eq!(column_type(DataType::Double), "double precision");
    assert_eq!(column_type(DataType::Varchar(32)), "varchar(32)");
    assert_eq!(column_type(DataType::Varchar(0)), "text");
    assert_eq!(column_type(DataType::Varchar(20_000_000)), "text");
    assert_eq!(column_type(DataType::NChar(32)), "text");
}

#[test]
fn creates_wide_tables() {
    assert_eq!(
        create_table(&cpu(), &TagPlacement::Wide),
        "CREATE TABLE IF NOT EXISTS \"cp\"\"u\" (\"ts\" timestamptz NOT NULL, \
         \"host\" varchar(16), \"rack\" integer, \"usage\" double precision, \"n\" smallint)"
    );
    assert_eq!(
        drop_table("cp\"u"),
        "DROP TABLE IF EXISTS \"cp\"\"u\" CASCADE"
    );
    assert_eq!(
        create_index(&cpu(), &TagPlacement::Wide),
        "CREATE INDEX IF NOT EXISTS \"cp\"\"u_tags_ts_idx\" ON \"cp\"\"u\" (\"host\", \"rack\", \"ts\" DESC)"
    );
    let bare = table("t", &[], &[("v", DataType::Bool)]);
    assert_eq!(
        create_index(&bare, &TagPlacement::Wide),
        "CREATE INDEX IF NOT EXISTS \"t_tags_ts_idx\" ON \"t\" (\"ts\" DESC)"
    );
}

#[test]
fn creates_tags_layout_tables() {
    assert_eq!(
        create_table(&cpu(), &tags_of(&cpu())),
        "CREATE TABLE IF NOT EXISTS \"cp\"\"u\" (\"ts\" timestamptz NOT NULL, \
         \"tags_id\" bigint NOT NULL, \"usage\" double precision, \"n\" smallint)"
    );
    assert_eq!(
        create_index(&cpu(), &tags_of(&cpu())),
        "CREATE INDEX IF NOT EXISTS \"cp\"\"u_tags_ts_idx\" ON \"cp\"\"u\" (\"tags_id\", \"ts\" DESC)"
    );
    let mem = table(
        "mem",
        &[
            ("host", DataType::Varchar(32), 0),
            ("rack", DataType::Int, 1),
            ("path", DataType::NChar(8), 3),
        ],
        &[("used", DataType::BigInt)],
    );
    let slots = shared_columns(&[cpu(), mem.clone()]).unwrap();
    assert_eq!(
        slots
            .iter()
            .map(|s| (s.slot, s.column.sql_type.as_str()))
            .collect::<Vec<_>>(),
        vec![(0, "varchar(32)"), (1, "integer")],
        "the slots every table has, in order; string lengths merge to the longest"
    );
    assert_eq!(
        create_tags_table(&slots),
        "CREATE TABLE IF NOT EXISTS \"tags\" (\"id\" bigint PRIMARY KEY, \
         \"host\" varchar(32), \"rack\" integer)"
    );
    assert_eq!(
        insert_tags(&slots),
        "INSERT INTO \"tags\" (\"id\",\"host\",\"rack\") SELECT * FROM \
         UNNEST($1::bigint[], $2::text[], $3::integer[]) ON CONFLICT (\"id\") DO NOTHING"
    );
    // A tag only some tables have is a column of those tables.
    let placement = tags_of_all(&[cpu(), mem.clone()]);
    assert_eq!(
        create_table(&mem, &placement),
        "CREATE TABLE IF NOT EXISTS \"mem\" (\"ts\" timestamptz NOT NULL, \
         \"tags_id\" bigint NOT NULL, \"path\" text, \"used\" bigint)"
    );
    assert_eq!(
        create_table(&cpu(), &placement),
        create_table(&cpu(), &tags_of(&cpu()))
    );
}

/// TSBS devops' shape: host tags in every table, and `port` and `server` in both `nginx`
/// and `redis` as slots of their own (a host's nginx port is not its redis port).
#[test]
fn tags_layout_holds_devops_tags_of_one_name_in_two_tables() {
    let host = ("hostname", DataType::Varchar(32), 0);
    let cpu = table("cpu", &[host], &[("usage_user", DataType::Double)]);
    let nginx = table(
        "nginx",
        &[
            host,
            ("port", DataType::Varchar(8), 14),
            ("server", DataType::Varchar(32), 15),
        ],
        &[("accepts", DataType::BigInt)],
    );
    let redis = table(
        "redis",
        &[
            host,
            ("port", DataType::Varchar(8), 16),
            ("server", DataType::Varchar(32), 17),
        ],
        &[("uptime", DataType::BigInt)],
    );
    let tables = [cpu, nginx, redis];
    let slots = shared_columns(&tables).unwrap();
    assert_eq!(
        slots.iter().map(|s| s.slot).collect::<Vec<_>>(),
        vec![0],
        "{slots:?}"
    );
    let placement = tags_of_all(&tables);
    for t in &tables {
        check_table(t, &placement).unwrap();
    }
    let names = |t: &TableSchema| -> Vec<String> {
        table_columns(t, &placement)
            .into_iter()
            .map(|c| c.name)
            .collect()
    };
    assert_eq!(names(&tables[0]), ["ts", "tags_id", "usage_user"]);
    assert_eq!(
        names(&tables[1]),
        ["ts", "tags_id", "port", "server", "accepts"]
    );
    assert_eq!(
        names(&tables[2]),
        ["ts", "tags_id", "port", "server", "uptime"]
    );
}

#[test]
fn rejects_tags_layouts_it_cannot_build() {
    let a = table("a", &[("host", DataType::Varchar(8), 0)], &[]);
    let b = table("b", &[("name", DataType::Varchar(8), 0)], &[]);
    let e = shared_columns(&[a.clone(), b]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Schema);
    assert!(
        e.message.contains("\"host\"") && e.message.contains("\"name\""),
        "{e}"
    );

    let c = table("c", &[("host", DataType::Int, 0)], &[]);
    let e = shared_columns(&[a.clone(), c]).unwrap_err();
    assert!(
        e.message.contains("varchar(8)") && e.message.contains("int"),
        "{e}"
    );

    let d = table(
        "d",
        &[
            ("host", DataType::Varchar(8), 0),
            ("host", DataType::Varchar(8), 1),
        ],
        &[],
    );
    let e = shared_columns(&[d]).unwrap_err();
    assert!(e.message.contains("slots 0 and 1"), "{e}");

    let id = table("e", &[("id", DataType::Int, 0)], &[]);
    assert!(shared_columns(&[id]).is_err());

    // A tag of the table itself clashes with a field as in the wide layout.
    let own = table("own", &[("v", DataType::Int, 5)], &[("v", DataType::Int)]);
    let placement = tags_of_all(&[a.clone(), own.clone()]);
    let e = check_table(&own, &placement).unwrap_err();
    assert!(e.message.contains("both a tag and a field"), "{e}");

    let named_tags = table("tags", &[], &[("v", DataType::Int)]);
    assert!(check_table(&named_tags, &TagPlacement::Wide).is_ok());
    let e = check_table(&named_tags, &tags_of(&named_tags)).unwrap_err();
    assert!(e.message.contains("\"tags\""), "{e}");
    let tags_id = table("t", &[], &[("tags_id", DataType::Int)]);
    assert!(check_table(&tags_id, &TagPlacement::Wide).is_ok());
    assert!(check_table(&tags_id, &tags_of(&tags_id)).is_err());
}

#[test]
fn rejects_clashing_columns() {
    assert!(check_table(&cpu(), &TagPlacement::Wide).is_ok());
    // Quoted identifiers are case-sensitive: "TS" and "Host" are their own columns.
    let t = table(
        "t",
        &[("host", DataType::Int, 0)],
        &[("Host", DataType::Int), ("TS", DataType::Int)],
    );
    assert!(check_table(&t, &TagPlacement::Wide).is_ok());

    let t = table(
        "t",
        &[("host", DataType::Int, 0)],
        &[("host", DataType::Int)],
    );
    let e = check_table(&t, &TagPlacement::Wide).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Schema);
    assert!(e.message.contains("both a tag and a field"), "{e}");
    // In the tags layout the tags are not columns of the table, so no clash.
    assert!(check_table(&t, &tags_of(&t)).is_ok());

    let t = table("t", &[], &[("ts", DataType::Int)]);
    let e = check_table(&t, &TagPlacement::Wide).unwrap_err();
    assert!(e.message.contains("\"ts\""), "{e}");

    let long = "x".repeat(70);
    let t = table(
        "t",
        &[],
        &[
            (&format!("{long}a"), DataType::Int),
            (&format!("{long}b"), DataType::Int),
        ],
    );
    let e = check_table(&t, &TagPlacement::Wide).unwrap_err();
    assert!(e.message.contains("first 63 bytes"), "{e}");

    let t = table("", &[], &[]);
    assert!(check_table(&t, &TagPlacement::Wide).is_err());
}

#[test]
fn builds_copy_statements() {
    let cols = table_columns(&cpu(), &TagPlacement::Wide);
    assert_eq!(
        copy_in("cp\"u", &cols, CopyFormat::Text),
        "COPY \"cp\"\"u\" (\"ts\",\"host\",\"rack\",\"usage\",\"n\") FROM STDIN"
    );
    let cols = table_columns(&cpu(), &tags_of(&cpu()));
    assert_eq!(
        copy_in("cpu", &cols, CopyFormat::Binary),
        "COPY \"cpu\" (\"ts\",\"tags_id\",\"usage\",\"n\") FROM STDIN (FORMAT binary)"
    );
}

#[test]
fn builds_chunked_inserts() {
    let cols = table_columns(&cpu(), &TagPlacement::Wide);
    let prefix = insert_prefix("cp\"u", &cols);
    assert_eq!(
        prefix,
        "INSERT INTO \"cp\"\"u\" (\"ts\",\"host\",\"rack\",\"usage\",\"n\") VALUES "
    );
    assert_eq!(insert(&prefix, 2, 2), format!("{prefix}($1,$2),($3,$4)"));
    assert_eq!(insert(&prefix, 1, 1), format!("{prefix}($1)"));
    let full = insert(&prefix, 5, rows_per_chunk(5));
    assert!(
        full.ends_with("),($65531,$65532,$65533,$65534,$65535)"),
        "{}",
        &full[full.len() - 40..]
    );
}

#[test]
fn chunks_stay_under_the_parameter_limit() {
    assert_eq!(rows_per_chunk(1), MAX_PARAMS);
    // ts + 3 tags + 40 fields: 1,489 rows (65,516 parameters) per INSERT.
    assert_eq!(rows_per_chunk(44), 1489);
    assert!(rows_per_chunk(44) * 44 <= MAX_PARAMS);
    assert!((rows_per_chunk(44) + 1) * 44 > MAX_PARAMS);
    // cpu-only: ts + 10 tags + 10 fields.
    assert_eq!(rows_per_chunk(21), 3120);
    assert_eq!(rows_per_chunk(MAX_PARAMS + 5), 1);
    for columns in 1..2000 {
        assert!(rows_per_chunk(columns) * columns <= MAX_PARAMS, "{columns}");
    }
}

#[test]
fn builds_unnest_inserts_with_array_casts() {
    let t = table(
        "m",
        &[("host", DataType::Varchar(8), 0)],
        &[
            ("b", DataType::Bool),
            ("i2", DataType::SmallInt),
            ("i4", DataType::Int),
            ("i8", DataType::UBigInt),
            ("f4", DataType::Float),
            ("f8", DataType::Double),
            ("s", DataType::NChar(4)),
            ("ms", DataType::Timestamp),
        ],
    );
    assert_eq!(
        insert_unnest("m", &table_columns(&t, &TagPlacement::Wide)),
        "INSERT INTO \"m\" (\"ts\",\"host\",\"b\",\"i2\",\"i4\",\"i8\",\"f4\",\"f8\",\"s\",\"ms\") \
         SELECT * FROM UNNEST($1::timestamptz[], $2::text[], $3::boolean[], $4::smallint[], \
         $5::integer[], $6::bigint[], $7::real[], $8::double precision[], $9::text[], $10::bigint[])"
    );
    let tags = insert_unnest("m", &table_columns(&t, &tags_of(&t)));
    assert!(
        tags.starts_with(
            "INSERT INTO \"m\" (\"ts\",\"tags_id\",\"b\",\"i2\",\"i4\",\"i8\",\"f4\",\"f8\",\"s\",\"ms\") \
             SELECT * FROM UNNEST($1::timestamptz[], $2::bigint[], $3::boolean[], "
        ),
        "{tags}"
    );
}

#[test]
fn builds_hypertable_and_settings() {
    assert_eq!(
        create_hypertable("cpu", None),
        "SELECT create_hypertable('\"cpu\"', 'ts', if_not_exists => TRUE)"
    );
    assert_eq!(
        create_hypertable("it's", Some(Duration::from_secs(8 * 3600))),
        "SELECT create_hypertable('\"it''s\"', 'ts', if_not_exists => TRUE, \
         chunk_time_interval => INTERVAL '28800000000 microseconds')"
    );
    assert_eq!(
        set_synchronous_commit("off"),
        "SET synchronous_commit = off"
    );
}
