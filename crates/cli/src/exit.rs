//! The process's exit codes, the same for every command.

/// Exit code when the scenario or the command line is wrong.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code when a `--fail-if` threshold is broken.
pub(crate) const EXIT_THRESHOLD: u8 = tsload_report::verdict::EXIT_THRESHOLD;
/// Exit code after Ctrl-C (128 + SIGINT), as shells expect. Also what a run or sweep
/// stopped by any signal earns inside the program; `main` then exits with the signal's
/// own code ([`EXIT_TERMINATED`] after SIGTERM).
pub(crate) const EXIT_INTERRUPTED: u8 = tsload_report::verdict::EXIT_INTERRUPTED;
/// Exit code after SIGTERM (128 + 15), as shells and service managers expect.
pub(crate) const EXIT_TERMINATED: u8 = tsload_report::verdict::EXIT_TERMINATED;
