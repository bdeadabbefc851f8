//! Property tests of the taosBenchmark importer (`import::taosbenchmark`), a reader of
//! outside input: arbitrary text, JSON-like text, and the shipped taosBenchmark files
//! (`testdata/taosbenchmark/`) with keys set to anything (extreme numbers, wrong types,
//! odd timestamps, nested values). The property: no panic; an error that says something,
//! or a scenario that is TOML and that the scenario check (what `tsload
//! import-taosbenchmark` runs next) answers without a panic.
//!
//! Budgets are fixed (`cases`) so that each property takes a few seconds at most in the
//! debug build on two cores; proptest prints the shrunk (minimal) failing input.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;

use super::taosbenchmark;

fn config(cases: u32) -> Config {
    Config {
        cases,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

/// taosBenchmark insert files, as shipped.
const FILES: &[&str] = &[
    include_str!("../../../../testdata/taosbenchmark/insert.json"),
    include_str!("../../../../testdata/taosbenchmark/r1-stmt2.json"),
    include_str!("../../../../testdata/taosbenchmark/sml-auto-us.json"),
];

/// What the command does with a file: import it, then check the scenario as
/// `cmd_import_taosbenchmark` does (without the password reference).
fn check(json: &str) -> Result<(), TestCaseError> {
    match taosbenchmark(json) {
        Err(e) => prop_assert!(!e.trim().is_empty()),
        Ok(imported) => {
            let parsed = imported.scenario.parse::<toml_edit::DocumentMut>();
            prop_assert!(parsed.is_ok(), "not TOML: {}", imported.scenario);
            let mut doc = parsed.unwrap();
            if let Some(t) = doc.get_mut("target").and_then(|t| t.as_table_mut()) {
                t.remove("password");
            }
            let _ = crate::parse("x.json (imported)", &doc.to_string(), &[]);
            for n in &imported.notes {
                prop_assert!(!n.trim().is_empty());
            }
        }
    }
    Ok(())
}

/// A JSON value of any kind, weighted to what breaks converters: numbers at the edges of
/// i64, u64 and f64, timestamps near and past the calendar's edges, wrong types.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            -1,
            0,
            1,
            3000,
            3001,
            i32::MAX as i64,
            i64::MAX,
        ])
        .prop_map(Value::from),
        prop::sample::select(vec![u64::MAX, i64::MAX as u64 + 1]).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![-1e300, -0.5, 0.5, 1e19, 1e300, f64::MAX, f64::MIN])
            .prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "now",
            "NOW",
            "yes",
            "no",
            "insert",
            "query",
            "ms",
            "us",
            "ns",
            "stmt2",
            "sml",
            "rand",
            "INT",
            "BINARY",
            "JSON",
            "2020-10-01 00:00:00.000",
            "2020-10-01",
            "2020-10-01 08:00:00+08:00",
            "2020-10-01 00:00:00+1é2",
            "9999-12-31 23:59:59.999",
            "9999-12-31 23:59:59-23:59",
            "0000-01-01 00:00:00+23:59",
            "1970-01-01 00:00:00+00:01",
            "2020-10-01T00:00:00Z",
            "-9223372036854775808",
            "18446744073709551615",
            " 42 ",
            "1e400",
            "NaN",
            "\u{0}",
            "'last_row'",
            "\"",
            "a\nb",
        ])
        .prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::from),
    ];
    // Mostly single values: nested ones are wrong types too, but rarer.
    let nested = leaf.clone().prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![4 => leaf, 1 => nested]
}

/// Where a change lands: every key the importer reads (and some it does not).
const PATHS: &[&str] = &[
    "",
    "/filetype",
    "/host",
    "/port",
    "/user",
    "/password",
    "/thread_count",
    "/num_of_records_per_req",
    "/interlace_rows",
    "/insert_interval",
    "/unknown_key",
    "/databases",
    "/databases/0",
    "/databases/1",
    "/databases/0/dbinfo",
    "/databases/0/dbinfo/name",
    "/databases/0/dbinfo/drop",
    "/databases/0/dbinfo/precision",
    "/databases/0/dbinfo/vgroups",
    "/databases/0/dbinfo/buffer",
    "/databases/0/dbinfo/wal_level",
    "/databases/0/dbinfo/cachemodel",
    "/databases/0/dbinfo/keep",
    "/databases/0/super_tables",
    "/databases/0/super_tables/0",
    "/databases/0/super_tables/0/name",
    "/databases/0/super_tables/0/childtable_count",
    "/databases/0/super_tables/0/childtable_prefix",
    "/databases/0/super_tables/0/insert_rows",
    "/databases/0/super_tables/0/timestamp_step",
    "/databases/0/super_tables/0/start_timestamp",
    "/databases/0/super_tables/0/interlace_rows",
    "/databases/0/super_tables/0/disorder_ratio",
    "/databases/0/super_tables/0/disorder_range",
    "/databases/0/super_tables/0/auto_create_table",
    "/databases/0/super_tables/0/child_table_exists",
    "/databases/0/super_tables/0/batch_create_tbl_num",
    "/databases/0/super_tables/0/insert_mode",
    "/databases/0/super_tables/0/data_source",
    "/databases/0/super_tables/0/partial_col_num",
    "/databases/0/super_tables/0/columns",
    "/databases/0/super_tables/0/columns/0",
    "/databases/0/super_tables/0/columns/0/type",
    "/databases/0/super_tables/0/columns/0/len",
    "/databases/0/super_tables/0/columns/0/count",
    "/databases/0/super_tables/0/columns/0/min",
    "/databases/0/super_tables/0/columns/0/max",
    "/databases/0/super_tables/0/columns/0/values",
    "/databases/0/super_tables/0/columns/1/name",
    "/databases/0/super_tables/0/tags",
    "/databases/0/super_tables/0/tags/0/type",
    "/databases/0/super_tables/0/tags/0/values",
    "/databases/0/super_tables/0/tags/1/len",
];

/// Sets `path` (a JSON pointer; its last key is created in an object) to `v`.
fn set(doc: &mut Value, path: &str, v: Value) {
    if path.is_empty() {
        *doc = v;
        return;
    }
    let (parent, key) = path.rsplit_once('/').unwrap();
    match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(key.to_string(), v);
        }
        Some(Value::Array(a)) => match key.parse::<usize>() {
            Ok(i) if i < a.len() => a[i] = v,
            Ok(_) => a.push(v),
            Err(_) => {}
        },
        _ => {}
    }
}

#[test]
fn the_shipped_files_import() {
    for f in FILES {
        assert!(taosbenchmark(f).is_ok());
        check(f).unwrap();
    }
}

proptest! {
    #![proptest_config(config(400))]

    /// Any text: a scenario or an error, never a panic.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,64}") {
        check(&text)?;
    }

    /// Text of JSON's own characters, so that much of it parses.
    #[test]
    fn json_like_text_never_panics(text in "[{}\\[\\]\":,0-9a-z_.eE+ -]{0,80}") {
        check(&text)?;
    }
}

proptest! {
    #![proptest_config(config(800))]

    /// A shipped file with one to four keys set to anything.
    #[test]
    fn shipped_files_with_changed_keys_never_panic(
        file in prop::sample::select(FILES),
        edits in prop::collection::vec((prop::sample::select(PATHS), json_value()), 1..5),
    ) {
        let mut doc: Value = serde_json::from_str(file).unwrap();
        for (path, v) in edits {
            set(&mut doc, path, v);
        }
        check(&doc.to_string())?;
    }
}
