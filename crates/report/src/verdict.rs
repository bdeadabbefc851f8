//! A run's verdict as sweeps, compare, merge and the HTML pages carry it: its exit code, what the server stored,
//! and whether its figures are a measure at all. A failed, interrupted, short or
//! unverified run's figures are not: every table marks them, fits leave them out and
//! charts do not draw them as values.

use std::fmt;

use serde::{Deserialize, Serialize};

/// `tsload run`'s exit code when a `--fail-if` threshold broke: the figures are whole,
/// they only missed the mark.
pub const EXIT_THRESHOLD: u8 = 3;
/// `tsload run`'s exit codes after a signal: Ctrl-C (128 + SIGINT) and SIGTERM (128 + 15).
pub const EXIT_INTERRUPTED: u8 = 130;
pub const EXIT_TERMINATED: u8 = 143;

/// What a run says of itself, beside its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The run's exit code (0: it passed; `tsload run --help` lists the others).
    pub exit: u8,
    /// What the server says it stored of the run: rows, or samples where it counts
    /// samples. `None`: not asked, or not known.
    pub stored: Option<u64>,
    /// Why its figures are not a measure; `None`: they are.
    pub flaw: Option<Flaw>,
}

/// What a run's write stream says of what the server stored, for [`Verdict::of`].
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteCheck<'a> {
    /// What the server stored of the run: rows, else samples.
    pub stored: Option<u64>,
    /// Why the server holds less than it acknowledged (`stored_shortfall`).
    pub shortfall: Option<&'a str>,
    /// Why what it stored is not known (`stored_error`).
    pub stored_error: Option<&'a str>,
}

/// Why a run's figures are not a measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flaw {
    pub kind: FlawKind,
    /// In words, from the run's report.
    pub why: String,
}

/// The kinds of [`Flaw`], most telling first: a run both interrupted and short is
/// interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlawKind {
    /// A signal stopped it: its figures cover part of what it was asked to do.
    Interrupted,
    /// It failed (exit 1): an error stopped it, or requests were abandoned.
    Failed,
    /// The server holds less than it acknowledged.
    Shortfall,
    /// The server was asked what it stored and did not say.
    Unverified,
}

impl FlawKind {
    /// The word tables show.
    pub fn word(self) -> &'static str {
        match self {
            FlawKind::Interrupted => "interrupted",
            FlawKind::Failed => "failed",
            FlawKind::Shortfall => "shortfall",
            FlawKind::Unverified => "unverified",
        }
    }
}

impl Verdict {
    /// A run that passed, with what the server stored (if known).
    pub fn passed(stored: Option<u64>) -> Verdict {
        Verdict {
            exit: 0,
            stored,
            flaw: None,
        }
    }

    /// The verdict of a run that left no report: it failed.
    pub fn no_report(exit: u8) -> Verdict {
        Verdict {
            exit,
            stored: None,
            flaw: Some(Flaw {
                kind: FlawKind::Failed,
                why: format!("the run left no report (exit {exit})"),
            }),
        }
    }

    /// The verdict of a run that exited `exit` for `why`, its writes checked as `writes`
    /// says: the one rule every reader of reports judges by.
    pub fn of(exit: u8, why: Option<&str>, writes: WriteCheck<'_>) -> Verdict {
        let why = why.filter(|w| !w.is_empty()).map(str::to_string);
        let flaw = |kind: FlawKind, why: String| Some(Flaw { kind, why });
        let flaw = if matches!(exit, EXIT_INTERRUPTED | EXIT_TERMINATED) {
            flaw(
                FlawKind::Interrupted,
                why.unwrap_or_else(|| "a signal stopped it".to_string()),
            )
        } else if let Some(why) = writes.shortfall {
            flaw(FlawKind::Shortfall, why.to_string())
        } else if exit != 0 && exit != EXIT_THRESHOLD {
            flaw(
                FlawKind::Failed,
                why.unwrap_or_else(|| format!("exit {exit}")),
            )
        } else if let Some(why) = writes
            .stored_error
            .filter(|e| *e != tsload_core::stored::CANNOT_TELL)
        {
            flaw(
                FlawKind::Unverified,
                format!("what the server stored is not known: {why}"),
            )
        } else {
            None
        };
        Verdict {
            exit,
            stored: writes.stored,
            flaw,
        }
    }

    /// Whether its figures are a measure: fitted, compared and drawn.
    pub fn is_measure(&self) -> bool {
        self.flaw.is_none()
    }

    /// `ok`, or the flaw's word.
    pub fn word(&self) -> &'static str {
        self.flaw.as_ref().map_or("ok", |f| f.kind.word())
    }

    /// What the server stored, for a table: the count, or `-`.
    pub fn stored_text(&self) -> String {
        self.stored
            .map_or_else(|| "-".to_string(), |n| n.to_string())
    }
}

impl fmt::Display for Verdict {
    /// `ok (exit 0)` or `failed (exit 1): why`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (exit {})", self.word(), self.exit)?;
        if let Some(flaw) = &self.flaw {
            write!(f, ": {}", flaw.why)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_reads_as_its_word_exit_and_reason() {
        let ok = Verdict::passed(Some(1_000));
        assert!(ok.is_measure());
        assert_eq!(ok.to_string(), "ok (exit 0)");
        assert_eq!(ok.stored_text(), "1000");
        let short = Verdict {
            exit: 1,
            stored: Some(0),
            flaw: Some(Flaw {
                kind: FlawKind::Shortfall,
                why: "the server stored 0 new rows of the 500 it acknowledged".into(),
            }),
        };
        assert!(!short.is_measure());
        assert_eq!(short.word(), "shortfall");
        assert_eq!(
            short.to_string(),
            "shortfall (exit 1): the server stored 0 new rows of the 500 it acknowledged"
        );
        let json = serde_json::to_value(&short).unwrap();
        assert_eq!(json["flaw"]["kind"], "shortfall");
        assert_eq!(serde_json::from_value::<Verdict>(json).unwrap(), short);
        assert_eq!(Verdict::passed(None).stored_text(), "-");
    }
}
