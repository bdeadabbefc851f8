//! Property tests of the scenario parser and `--set`: no document and no override may
//! panic; each gives a plan or an error that names the file (or `--set`) and, where it
//! has one, a line of the document.
//!
//! Documents are built from the real sections and key names (with the kind keys mostly
//! set to real kinds, so that the per-kind checks run), with values of every TOML type:
//! those a key expects and any other. The shipped `configs/` are also run with random
//! `--set` overrides. Budgets are fixed (`cases`) so that each property takes a few
//! seconds at most in the debug build; proptest prints the shrunk (minimal) failing input.

use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::parse;
use super::sections::{QUERY_KINDS, target_kinds};

fn config(cases: u32) -> Config {
    Config {
        cases,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

/// The shipped scenarios: real documents to override.
const CONFIGS: &[&str] = &[
    include_str!("../../../configs/quickstart.toml"),
    include_str!("../../../configs/cpu-only.toml"),
    include_str!("../../../configs/custom.toml"),
    include_str!("../../../configs/devops.toml"),
    include_str!("../../../configs/influxdb.toml"),
    include_str!("../../../configs/iot.toml"),
    include_str!("../../../configs/mixed-influx.toml"),
    include_str!("../../../configs/mysql.toml"),
    include_str!("../../../configs/postgres.toml"),
    include_str!("../../../configs/r1-rtt-sweep.toml"),
    include_str!("../../../configs/r2-oltp-delay.toml"),
    include_str!("../../../configs/r2-oltp.toml"),
    include_str!("../../../configs/r4-grid.toml"),
    include_str!("../../../configs/r5-queries.toml"),
    include_str!("../../../configs/tdengine-r1.toml"),
    include_str!("../../../configs/timescaledb.toml"),
];

/// `[sweep]`'s keys as a test writes them: the short names, full keys, and wrong ones.
const SWEEP_KEYS: &[&str] = &[
    "delay",
    "jitter",
    "loss",
    "workers",
    "batch",
    "in_flight",
    "duration",
    "rows",
    "\"load.rate\"",
    "\"network.rate\"",
    "\"query.workers\"",
    "\"target.method\"",
    "\"workload.scale\"",
    "\"load.nope\"",
    "\"a.b.c\"",
    "bogus",
];

/// Every section with its keys: the parser's own definitions (sections made of tables
/// left out), then `[sweep]`.
static SECTIONS: LazyLock<Vec<(&str, Vec<&str>)>> = LazyLock::new(|| {
    super::sections::SECTIONS
        .iter()
        .map(|s| {
            let keys = s.keys.iter().filter(|k| k.ty != "table").map(|k| k.name);
            (s.name, keys.collect())
        })
        .chain([("sweep", SWEEP_KEYS.to_vec())])
        .collect()
});

/// `target.kind`'s values.
static TARGET_KINDS: LazyLock<Vec<&str>> = LazyLock::new(target_kinds);

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Strings that mean something to some key.
const WORDS: &[&str] = &[
    "",
    " ",
    "x",
    "-",
    "10s",
    "500ms",
    "1h 30m",
    "0.5ms",
    "0s",
    "1us",
    "1ns",
    "3ms",
    "0",
    "1e30s",
    "18446744073709551615s",
    "99999999999999999999h",
    "584942417355y",
    "1000000000000000000000ns",
    "-1s",
    "2016-01-01T00:00:00Z",
    "2016-01-02T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "2262-04-12T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "ns",
    "us",
    "ms",
    "s",
    "v1",
    "v2",
    "proxy",
    "netem",
    "up",
    "down",
    "both",
    "tcp",
    "icmp",
    "app",
    "none",
    "wal",
    "delete",
    "memory",
    "off",
    "normal",
    "full",
    "copy",
    "insert",
    "unnest",
    "binary",
    "text",
    "wide",
    "tags",
    "exactly_once",
    "at_least_once",
    "auto",
    "bar",
    "plain",
    "p99<10ms",
    "p50 > 1ms",
    "errors>0",
    "rows/s<1000",
    "p999<",
    "<",
    "http://127.0.0.1:8086",
    "https://h",
    "postgres://u@h/db",
    "postgres://u:p@h/db",
    "mysql://root@127.0.0.1:3306/x",
    "ws://root:taosdata@127.0.0.1:6041",
    "sqlite::memory:",
    "sqlite:./x.db",
    "$TSLOAD_NOPE",
    "${TSLOAD_NOPE}",
    "$",
    "${",
    "veth0",
    "/ping",
    "ping",
    "1%",
    "0.5%",
    "100%",
    "101%",
    "100mbit",
    "0mbit",
    "1bit",
    "8bit",
    "1tbit",
    "10ms 2ms",
    "1% 25%",
    "random 1%",
    "state 1%",
    "/tmp/x.influx",
    "bigint",
    "varchar",
    "nchar",
    "uniform",
    "special",
    "after_load",
    "before_load",
    "InnoDB",
    "stmt",
    "sql",
    "schemaless",
    "lastrow",
    "influxql",
    "postgres",
    "mysql",
    "sqlite",
    "questdb",
    "tdengine",
    "promql",
    "single-groupby-1-1-1",
    "high-cpu-all",
    "cpu-max-all-8",
    "lastpoint",
    "é",
    "\u{0}",
    "a\nb",
    "batch",
    "sync",
    "async",
];

/// A TOML literal of any type.
fn any_value() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        prop_oneof![
            any::<i64>(),
            Just(0i64),
            Just(1),
            Just(-1),
            Just(2),
            Just(8),
            Just(100),
            Just(65_517),
            Just(65_535),
            Just(i64::from(u32::MAX)),
            Just(i64::from(u32::MAX) + 1),
            Just(i64::MAX),
            Just(i64::MIN),
        ]
        .prop_map(|v| v.to_string()),
        prop_oneof![
            Just("0.0"),
            Just("0.5"),
            Just("1.0"),
            Just("-1.0"),
            Just("100.0"),
            Just("1e300"),
            Just("-1e-300"),
            Just("nan"),
            Just("inf"),
            Just("-inf"),
            Just("1e400"),
        ]
        .prop_map(str::to_string),
        any::<bool>().prop_map(|b| b.to_string()),
        proptest::sample::select(WORDS).prop_map(quoted),
        "\\PC{0,8}".prop_map(|s| quoted(&s)),
        Just("1979-05-27T07:32:00Z".to_string()),
        Just("1979-05-27".to_string()),
        Just("07:32:00".to_string()),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            proptest::collection::vec((proptest::sample::select(COLUMN_KEYS), inner), 0..4)
                .prop_map(|kv| {
                    let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    format!("{{ {} }}", body.join(", "))
                }),
        ]
    })
    .boxed()
}

/// Keys of a `columns`/`tags` entry (and some that are not).
const COLUMN_KEYS: &[&str] = &["type", "len", "count", "min", "max", "values", "nope"];
/// Column types: the parser's, and two it refuses or takes in another case.
static COLUMN_TYPES: LazyLock<Vec<&str>> = LazyLock::new(|| {
    let mut types = super::workload::COLUMN_TYPES.to_vec();
    types.extend(["BIGINT", "blob"]);
    types
});

/// A `columns`/`tags` list: entries with a real type and plausible (or not) settings.
fn column_list() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("3".to_string()),
        Just("-5".to_string()),
        Just("65518".to_string()),
        Just("4096".to_string()),
        Just("4097".to_string()),
        Just("1e300".to_string()),
        Just("nan".to_string()),
        Just("-inf".to_string()),
        any::<i32>().prop_map(|v| v.to_string()),
    ];
    let entry = (
        proptest::sample::select(&COLUMN_TYPES[..]),
        proptest::option::of(num.clone()),
        proptest::option::of(num.clone()),
        proptest::option::of(num.clone()),
        proptest::option::of(num),
        proptest::option::of(proptest::collection::vec(
            proptest::sample::select(WORDS).prop_map(quoted),
            0..3,
        )),
    )
        .prop_map(|(ty, len, count, min, max, values)| {
            let mut parts = vec![format!("type = {}", quoted(ty))];
            for (k, v) in [("len", len), ("count", count), ("min", min), ("max", max)] {
                if let Some(v) = v {
                    parts.push(format!("{k} = {v}"));
                }
            }
            if let Some(v) = values {
                parts.push(format!("values = [{}]", v.join(", ")));
            }
            format!("{{ {} }}", parts.join(", "))
        });
    proptest::collection::vec(entry, 0..4).prop_map(|e| format!("[{}]", e.join(", ")))
}

/// The kinds and other choices that decide which checks run.
fn choice_for(section: &str, key: &str) -> Option<&'static [&'static str]> {
    Some(match (section, key) {
        ("workload", "kind") => &["cpu-only", "devops", "iot", "custom", "file", "cpu"],
        ("target", "kind") => &TARGET_KINDS,
        ("query", "kind") => QUERY_KINDS,
        ("network", "backend") => &["proxy", "netem", "tc"],
        ("", "mode") => &["write", "query", "mixed", "read"],
        ("target", "api") => &["v1", "v2", "v3"],
        _ => return None,
    })
}

/// A value for `section.key`: mostly what the key expects, sometimes anything. A secret
/// key's value is registered with the process's redaction when the document is read, so
/// it is never a word another test's message holds: "batch" as a password turned
/// `per_batch` into `per_***` in a test running beside it.
fn value_for(section: &'static str, key: &'static str) -> BoxedStrategy<String> {
    if tsload_redact::is_secret_key(key) {
        return "[a-z0-9]{0,8}"
            .prop_map(|s| quoted(&format!("PROPpw-{s}")))
            .boxed();
    }
    if let Some(choices) = choice_for(section, key) {
        return prop_oneof![
            6 => proptest::sample::select(choices).prop_map(quoted),
            1 => any_value(),
        ]
        .boxed();
    }
    if section == "workload" && (key == "columns" || key == "tags") {
        return prop_oneof![4 => column_list(), 1 => any_value()].boxed();
    }
    if section == "sweep" {
        return prop_oneof![
            4 => proptest::collection::vec(any_value(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            1 => any_value(),
        ]
        .boxed();
    }
    if section == "output" && key == "fail_if" {
        return prop_oneof![
            4 => proptest::collection::vec(proptest::sample::select(WORDS).prop_map(quoted), 0..3)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            1 => any_value(),
        ]
        .boxed();
    }
    let typed = match key {
        "seed"
        | "scale"
        | "out_of_order_max_steps"
        | "pods_per_host"
        | "childtable_count"
        | "insert_rows"
        | "interlace_rows"
        | "workers"
        | "batch"
        | "in_flight"
        | "rows"
        | "max_retries"
        | "probe_count"
        | "queries"
        | "max_errors"
        | "loaders"
        | "tables"
        | "table_size"
        | "range_size"
        | "point_selects"
        | "simple_ranges"
        | "sum_ranges"
        | "order_ranges"
        | "distinct_ranges"
        | "index_updates"
        | "non_index_updates"
        | "delete_inserts"
        | "load_batch_rows"
        | "vgroups"
        | "buffer"
        | "wal_level"
        | "batch_create_tbl_num"
        | "max_sql_length" => prop_oneof![
            Just(0i64),
            Just(1),
            Just(2),
            Just(4),
            Just(16),
            Just(1000),
            Just(-3),
            Just(1 << 20),
            Just(i64::from(u32::MAX) + 1),
            Just(i64::MAX),
            Just(i64::MIN),
            any::<i64>(),
        ]
        .prop_map(|v| v.to_string())
        .boxed(),
        "missing_field_ratio"
        | "missing_row_ratio"
        | "out_of_order_ratio"
        | "duplicate_ratio"
        | "shape_noise"
        | "disorder_ratio"
        | "rate"
            if section != "network" =>
        {
            prop_oneof![
                Just("0.0"),
                Just("0.5"),
                Just("1.0"),
                Just("2.0"),
                Just("100.0"),
                Just("1e308"),
                Just("-0.0"),
                Just("-1.0"),
                Just("nan"),
                Just("inf"),
                Just("1"),
            ]
            .prop_map(str::to_string)
            .boxed()
        }
        "drop_existing"
        | "gzip"
        | "create_database"
        | "hypertable"
        | "create_index"
        | "allow_default_route"
        | "require_rows"
        | "time_bucket"
        | "preload"
        | "prepare"
        | "range_selects"
        | "skip_trx" => any::<bool>().prop_map(|b| b.to_string()).boxed(),
        "types" => {
            proptest::collection::vec(proptest::sample::select(WORDS).prop_map(quoted), 0..3)
                .prop_map(|v| format!("[{}]", v.join(", ")))
                .boxed()
        }
        _ => proptest::sample::select(WORDS).prop_map(quoted).boxed(),
    };
    prop_oneof![6 => typed, 1 => any_value()].boxed()
}

/// One `key = value` of a section.
fn entry_of(section: usize) -> BoxedStrategy<(usize, String)> {
    let (name, keys) = &SECTIONS[section];
    let name = *name;
    proptest::sample::select(&keys[..])
        .prop_flat_map(move |key| value_for(name, key).prop_map(move |v| format!("{key} = {v}")))
        .prop_map(move |line| (section, line))
        .boxed()
}

/// A document: some sections, each with some of its keys (a key may repeat: a TOML
/// error), written as `[section]` blocks, or as dotted keys at the top.
fn document() -> impl Strategy<Value = String> {
    let entries = proptest::collection::vec((0..SECTIONS.len()).prop_flat_map(entry_of), 0..14);
    (entries, any::<bool>(), proptest::bool::weighted(0.05)).prop_map(
        |(mut entries, dotted, repeat)| {
            if !repeat {
                // Keep the first of each key: a repeated key stops at TOML's own check.
                let mut seen = std::collections::BTreeSet::new();
                entries.retain(|(s, l)| {
                    seen.insert((*s, l.split(" = ").next().unwrap_or("").to_string()))
                });
            }
            let mut out = String::new();
            // Top-level keys first, then each section once, in a fixed order.
            for (section, (name, _)) in SECTIONS.iter().enumerate() {
                let lines: Vec<&String> = entries
                    .iter()
                    .filter(|(s, _)| *s == section)
                    .map(|(_, l)| l)
                    .collect();
                if lines.is_empty() {
                    continue;
                }
                if name.is_empty() || dotted {
                    for l in lines {
                        if name.is_empty() {
                            out.push_str(&format!("{l}\n"));
                        } else {
                            out.push_str(&format!("{name}.{l}\n"));
                        }
                    }
                } else {
                    out.push_str(&format!("[{name}]\n"));
                    for l in lines {
                        out.push_str(&format!("{l}\n"));
                    }
                }
            }
            out
        },
    )
}

/// A `--set` key: a real dotted key, or something odd.
fn set_key() -> impl Strategy<Value = String> {
    let real = (0..SECTIONS.len()).prop_flat_map(|s| {
        let (name, keys) = &SECTIONS[s];
        let name = *name;
        proptest::sample::select(&keys[..]).prop_map(move |k| {
            if name.is_empty() {
                k.to_string()
            } else {
                format!("{name}.{k}")
            }
        })
    });
    prop_oneof![
        6 => real,
        1 => proptest::sample::select(&[
            "", " ", ".", "..", "a..b", "load.", ".load", "\"", "\"load.workers", "load.\"a.b\"",
            "load.workers.x", "workload.columns.type", "name.x", "sweep.\"\"", "[load]", "a=b",
            "load . workers", "é.ü", "output.fail_if.0", "target", "load",
        ][..]).prop_map(str::to_string),
        1 => "\\PC{0,12}",
    ]
}

/// A `--set` value as typed on a command line: TOML, or a bare word taken as a string.
fn set_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any_value(),
        2 => proptest::sample::select(WORDS).prop_map(str::to_string),
        1 => "\\PC{0,12}",
        1 => Just("[".to_string()),
        1 => Just("{ a = ".to_string()),
        1 => Just("\"unclosed".to_string()),
    ]
}

fn set_override() -> impl Strategy<Value = String> {
    prop_oneof![
        // A secret key's value is registered with the redaction (see `value_for`).
        8 => (set_key(), set_value()).prop_map(|(k, v)| {
            if tsload_redact::is_secret_key(&k) {
                format!("{k}=PROPpw-{}", v.len())
            } else {
                format!("{k}={v}")
            }
        }),
        1 => "\\PC{0,16}",
    ]
}

/// Parses; an error must name where it comes from.
fn check(text: &str, overrides: &[String]) -> Result<(), TestCaseError> {
    match parse("prop.toml", text, overrides) {
        Ok(_) => {}
        Err(e) => {
            prop_assert!(
                e.file == "prop.toml" || e.file == "--set",
                "file {:?}: {}",
                e.file,
                e
            );
            prop_assert!(!e.message.trim().is_empty(), "{:?}", e);
            if let Some(line) = e.line {
                prop_assert!(line >= 1, "{:?}", e);
            }
            if e.file == "--set" {
                prop_assert!(e.key.is_some(), "{:?}", e);
            }
            let shown = e.to_string();
            prop_assert!(shown.starts_with(&e.file), "{}", shown);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(1500))]

    /// Documents of the real keys with values of any type.
    #[test]
    fn documents_of_real_keys_never_panic(doc in document()) {
        check(&doc, &[])?;
    }

    /// The same documents with `--set` overrides on top.
    #[test]
    fn documents_with_overrides_never_panic(
        doc in document(),
        sets in proptest::collection::vec(set_override(), 1..4),
    ) {
        check(&doc, &sets)?;
    }

    /// The shipped scenarios with random `--set` overrides.
    #[test]
    fn shipped_configs_with_overrides_never_panic(
        config in proptest::sample::select(CONFIGS),
        sets in proptest::collection::vec(set_override(), 0..5),
    ) {
        check(config, &sets)?;
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// Any text at all.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,80}") {
        check(&text, &[])?;
    }

    /// Any `--set` string on the quickstart.
    #[test]
    fn arbitrary_set_strings_never_panic(
        set in prop_oneof!["\\PC{0,30}", "\\PC{0,12}=\\PC{0,16}"],
    ) {
        check(CONFIGS[0], &[set])?;
    }
}

#[test]
fn shipped_configs_parse() {
    for (i, text) in CONFIGS.iter().enumerate() {
        // This crate's tests register every kind, TDengine's included.
        if let Err(e) = parse("config.toml", text, &[]) {
            panic!("config {i}: {e}");
        }
    }
}
