//! Every byte the CLI prints or writes to a file passes here, through tsload's one
//! redaction (`tsload_redact::text`) after its control characters are made visible
//! (`tsload_redact::printable`: a server's error text may hold ESC sequences or NULs):
//! standard output, standard error, reports, tables, CSV, NDJSON, SVG, baselines. `outln!`, `errln!`, `std::fs::write` and
//! `std::fs::File::create` are refused by clippy in this crate (`clippy.toml`), so a new
//! output cannot bypass it.

use std::io::Write;

pub use tsload_redact::file::{create_binary, create_text, shown, write_new, write_text};

/// Prints a line to standard output, secrets hidden.
macro_rules! outln {
    () => { $crate::out::stdout_text("\n") };
    ($($arg:tt)*) => { $crate::out::stdout_text(&format!("{}\n", format_args!($($arg)*))) };
}

/// Prints to standard output without a newline, secrets hidden.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::stdout_text(&format!($($arg)*)) };
}

/// Prints a line to standard error, secrets hidden.
macro_rules! errln {
    () => { $crate::out::stderr_text("\n") };
    ($($arg:tt)*) => { $crate::out::stderr_text(&format!("{}\n", format_args!($($arg)*))) };
}

/// Prints to standard error without a newline, secrets hidden.
macro_rules! err {
    ($($arg:tt)*) => { $crate::out::stderr_text(&format!($($arg)*)) };
}

/// Writes `text` to standard output with its secrets hidden. A closed pipe is not an
/// error worth a panic: the output is dropped, as `head` expects.
pub fn stdout_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(shown(text).as_bytes());
    let _ = out.flush();
}

/// Writes `text` to standard error with its secrets hidden.
pub fn stderr_text(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(shown(text).as_bytes());
}

/// Creates the directory `path` is in, when it does not exist yet.
pub fn create_parent_dir(path: &std::path::Path) -> Result<(), String> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the directory {}: {e}", dir.display())),
        _ => Ok(()),
    }
}
