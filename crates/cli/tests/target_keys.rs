//! Every checked key of every target kind, set to a bad value in a file: the kind's own
//! parse refuses it, and `validate` and `run` say the same, located by file, line and key
//! (issue 20: each key validated in exactly one place).
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

mod common;
use common::{text, tsload};

/// (kind, key, a bad value as TOML, a part of the kind's message).
const CASES: &[(&str, &str, &str, &str)] = &[
    (
        "sqlite",
        "synchronous",
        "\"sometimes\"",
        "allowed: off, normal, full",
    ),
    (
        "sqlite",
        "journal_mode",
        "\"wal2\"",
        "allowed: wal, delete, memory",
    ),
    ("sqlite", "busy_timeout", "\"30d\"", "at most 24 days"),
    (
        "sqlite",
        "delivery",
        "\"twice\"",
        "allowed: exactly_once, at_least_once",
    ),
    ("postgres", "layout", "\"tall\"", "allowed: wide, tags"),
    (
        "postgres",
        "method",
        "\"bulk\"",
        "allowed: copy, insert, unnest",
    ),
    (
        "postgres",
        "copy_format",
        "\"csv\"",
        "allowed: text, binary",
    ),
    (
        "postgres",
        "synchronous_commit",
        "\"off; DROP TABLE x\"",
        "remote_apply",
    ),
    (
        "postgres",
        "chunk_time_interval",
        "\"10ns\"",
        "at least 1us",
    ),
    ("postgres", "connect_timeout", "\"soon\"", "not a duration"),
    (
        "postgres",
        "url",
        "\"mysql://root@h/db\"",
        "must start with postgres://",
    ),
    (
        "mysql",
        "primary_key",
        "\"uuid\"",
        "allowed: none, auto_increment, tags_ts",
    ),
    (
        "mysql",
        "transaction",
        "\"never\"",
        "allowed: per_batch, autocommit",
    ),
    (
        "mysql",
        "ts_type",
        "\"int\"",
        "allowed: datetime, bigint_ns",
    ),
    ("mysql", "connect_timeout", "\"soon\"", "not a duration"),
    ("influx", "precision", "\"h\"", "allowed: ns, us, ms, s"),
    ("influx", "timeout", "\"soon\"", "not a duration"),
    ("influx", "url", "\"ftp://h\"", "is not an HTTP URL"),
    ("prometheus", "url", "\"ftp://h\"", "is not an HTTP URL"),
    (
        "prometheus",
        "query_url",
        "\"h:9090\"",
        "is not an HTTP URL",
    ),
    ("prometheus", "timeout", "\"soon\"", "not a duration"),
    (
        "clickhouse",
        "url",
        "\"tcp://h:9000\"",
        "is not an HTTP URL",
    ),
    ("clickhouse", "database", "\" \"", "must not be empty"),
    (
        "clickhouse",
        "drop_existing",
        "\"yes\"",
        "allowed: true or false",
    ),
    ("tdengine", "precision", "\"s\"", "\"s\" is not allowed"),
    ("tdengine", "mode", "\"bulk\"", "\"bulk\" is not allowed"),
    ("tdengine", "wal_level", "0", "out of range"),
    ("tdengine", "vgroups", "0", "out of range"),
];

#[test]
fn each_kinds_bad_value_is_refused_by_key_and_line_alike_at_validate_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (kind, key, value, says) in CASES {
        if *kind == "tdengine" && !cfg!(feature = "tdengine") {
            continue;
        }
        // The bad key on line 4.
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            format!("[target]\nkind = \"{kind}\"\n# the next line is wrong\n{key} = {value}\n"),
        )
        .unwrap();
        let said = |sub: &str| {
            let mut command = tsload();
            command.args([sub, file.to_str().unwrap()]);
            if sub == "run" {
                command.args(["--progress", "none"]);
            }
            let out = command.current_dir(dir.path()).output().unwrap();
            let error = text(&out.stderr)
                .lines()
                .find(|l| l.starts_with("error:"))
                .map(str::to_string)
                .unwrap_or_default();
            (out.status.code(), error)
        };
        let (code, validate) = said("validate");
        let (run_code, run) = said("run");
        let place = format!("s.toml:4: key `target.{key}`");
        if code != Some(2) || run_code != Some(2) {
            wrong.push(format!(
                "{kind}.{key}: exits {code:?} / {run_code:?}, expected 2"
            ));
        }
        if !validate.contains(&place) || !validate.contains(says) {
            wrong.push(format!(
                "{kind}.{key}: validate said `{validate}`, expected `{place}` and `{says}`"
            ));
        }
        if validate != run {
            wrong.push(format!(
                "{kind}.{key}: validate said `{validate}`, run said `{run}`"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
