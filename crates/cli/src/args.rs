//! Command-line arguments more than one command takes.

use std::path::PathBuf;

/// A command's scenario: the file (the built-in quickstart when omitted) and its
/// `--set` overrides.
#[derive(clap::Args)]
pub struct ScenarioArgs {
    /// Scenario file (TOML); the built-in quickstart when omitted.
    pub scenario: Option<PathBuf>,
    /// Override a scenario key, e.g. `--set load.workers=8` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}
