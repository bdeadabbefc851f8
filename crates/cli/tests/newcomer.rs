//! What a new user meets first, as they would meet it: flags named as typed, plain
//! figures, a server's connection limit named before a run hits it.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use tsload_testbed::ServerKind;

mod common;
use common::{start, text, tsload};

#[test]
fn a_shorthand_flag_is_named_as_typed() {
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args(["run", "-d", "5", "--progress", "none"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("(in `-d 5`)"), "{stderr}");
    assert!(!stderr.contains("--set load.duration"), "{stderr}");
}

#[test]
fn validate_counts_in_words_and_thresholds_show_plain_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args(["validate", "--set", "load.workers=1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("1 worker x batch"), "{stderr}");
    // A broken threshold shows the figure as a person reads it.
    let out = tsload()
        .args([
            "run",
            "--target",
            "null",
            "-n",
            "20000",
            "--progress",
            "none",
        ])
        .args(["--fail-if", "rows_per_s>1e15"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("rows_per_s was"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let figure = line
        .split("was ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        !figure.contains('.') || figure.split('.').nth(1).unwrap().len() <= 2,
        "{line}"
    );
}

#[test]
fn a_server_connection_limit_is_named_before_the_run_hits_it() {
    let maria = start(ServerKind::MariaDb);
    let max: u64 = maria
        .sql("SELECT @@max_connections")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args(["run", "--progress", "none"])
        .args(["--target", &maria.database_url().unwrap()])
        .args(["-w", &(max + 10).to_string(), "-b", "10", "-n", "2000"])
        .args(["--set", "target.create_database=true"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("max_connections is {max}"))
            && stderr.contains("SET GLOBAL max_connections"),
        "{stderr}"
    );
    // Within the limit, the run goes ahead.
    let out = tsload()
        .args(["run", "--progress", "none"])
        .args(["--target", &maria.database_url().unwrap()])
        .args(["-w", "4", "-b", "10", "-n", "200"])
        .args(["--set", "target.create_database=true"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_postgres_connection_limit_is_named_before_the_run_hits_it() {
    // A small limit, so the test opens few connections: 20, 3 of them kept for superusers.
    let pg = tsload_testbed::Server::start_with(ServerKind::Postgres, &[("max_connections", "20")])
        .unwrap_or_else(|e| panic!("PostgreSQL did not start: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let out = tsload()
        .args(["run", "--progress", "none"])
        .args(["--target", &pg.database_url().unwrap()])
        .args(["-w", "30", "-b", "10", "-n", "2000"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the run opens 30 connections")
            && stderr.contains("max_connections is 20")
            && stderr.contains("ALTER SYSTEM SET max_connections"),
        "{stderr}"
    );
    // Within the limit, the run goes ahead.
    let out = tsload()
        .args(["run", "--progress", "none"])
        .args(["--target", &pg.database_url().unwrap()])
        .args(["-w", "4", "-b", "10", "-n", "200"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}
