//! Helpers the `tsload` binary's integration tests share: the binary, its output as text,
//! testbed servers and JSON reports. Each test file uses some of them.
#![allow(
    dead_code,
    reason = "each test file compiles this module and uses part of it"
)]

use std::path::Path;
use std::process::Command;

use tsload_testbed::{Server, ServerKind};

/// The `tsload` binary under test.
pub fn tsload() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tsload"))
}

/// Process output as text (lossy: a test's message must show whatever came out).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The nine tables of TSBS devops, in the generator's order.
pub const DEVOPS_TABLES: [&str; 9] = [
    "cpu",
    "diskio",
    "disk",
    "kernel",
    "mem",
    "net",
    "nginx",
    "postgresl",
    "redis",
];

/// A testbed server of `kind` on 127.0.0.1; a server that does not start fails the test.
pub fn start(kind: ServerKind) -> Server {
    Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"))
}

/// `tsload run --json r.json --progress none --set S...` in `dir`: its output, and the
/// report it wrote (`Null` when it wrote none; the file is removed, so the next run's
/// report is its own).
pub fn run_sets<S: AsRef<str>>(
    dir: &Path,
    sets: &[S],
) -> (std::process::Output, serde_json::Value) {
    let out = tsload()
        .args(["run", "--json", "r.json", "--progress", "none"])
        .args(sets.iter().flat_map(|s| ["--set", s.as_ref()]))
        .current_dir(dir)
        .output()
        .expect("start tsload");
    let path = dir.join("r.json");
    let r = if path.exists() {
        json(&path)
    } else {
        serde_json::Value::Null
    };
    let _ = std::fs::remove_file(path);
    (out, r)
}

/// A JSON file (a report), which must exist.
pub fn json(path: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}
