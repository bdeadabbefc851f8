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

/// A testbed server of `kind` on 127.0.0.1; a server that does not start fails the test.
pub fn start(kind: ServerKind) -> Server {
    Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"))
}

/// A JSON file (a report), which must exist.
pub fn json(path: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}
