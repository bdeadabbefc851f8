//! Why a run stopped, as reports say it: one reason for a run, the distinct reasons of its
//! shards for a merged report. Written as the reasons' words joined by `", "` (`"data
//! end"`, `"duration, row limit"`), read back into the same reasons, an unknown word
//! refused by name.

use std::fmt;
use std::str::FromStr;

use tsload_core::engine::StopReason;

/// Every reason with its word in reports, in the order a merged report lists them.
const WORDS: [(StopReason, &str); 6] = [
    (StopReason::DataEnd, "data end"),
    (StopReason::Duration, "duration"),
    (StopReason::Fatal, "fatal error"),
    (StopReason::Interrupted, "interrupted"),
    (StopReason::RequestLimit, "request limit"),
    (StopReason::RowLimit, "row limit"),
];

/// The reasons a run (or a merged run's shards) stopped: at least one, each once, in
/// [`WORDS`]' order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReasons(Vec<StopReason>);

/// A report's stop reason that is not one tsload writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "stop reason \"{given}\" is not one tsload writes; allowed: {allowed}, or several joined by \", \""
)]
pub struct UnknownStopReason {
    pub given: String,
    pub allowed: String,
}

impl StopReasons {
    /// One run's reason.
    pub fn one(reason: StopReason) -> StopReasons {
        StopReasons(vec![reason])
    }

    /// The distinct reasons of several runs (`None` for none).
    pub fn union<'a>(all: impl IntoIterator<Item = &'a StopReasons>) -> Option<StopReasons> {
        let mut reasons: Vec<StopReason> = all.into_iter().flat_map(|r| r.0.clone()).collect();
        reasons.sort_by_key(|r| position(*r));
        reasons.dedup();
        (!reasons.is_empty()).then_some(StopReasons(reasons))
    }

    /// Whether `reason` is among them.
    pub fn contains(&self, reason: StopReason) -> bool {
        self.0.contains(&reason)
    }

    /// The reasons, in order.
    pub fn reasons(&self) -> &[StopReason] {
        &self.0
    }
}

/// `reason`'s place in [`WORDS`].
fn position(reason: StopReason) -> usize {
    WORDS.iter().position(|(r, _)| *r == reason).unwrap_or(0)
}

/// `reason`'s word in reports.
pub fn word(reason: StopReason) -> &'static str {
    WORDS[position(reason)].1
}

impl fmt::Display for StopReasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, reason) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(", ")?;
            }
            f.write_str(word(*reason))?;
        }
        Ok(())
    }
}

impl FromStr for StopReasons {
    type Err = UnknownStopReason;

    fn from_str(text: &str) -> Result<StopReasons, UnknownStopReason> {
        let reasons = text
            .split(", ")
            .map(|part| {
                WORDS
                    .iter()
                    .find(|(_, w)| *w == part)
                    .map(|(r, _)| *r)
                    .ok_or_else(|| UnknownStopReason {
                        given: text.to_string(),
                        allowed: WORDS
                            .iter()
                            .map(|(_, w)| format!("\"{w}\""))
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StopReasons::union([&StopReasons(reasons)]).expect("split gives one part at least"))
    }
}

impl serde::Serialize for StopReasons {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for StopReasons {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// serde for an `Option<StopReasons>` written `"none"` when there is none (a sweep point
/// or a compared run that never ran), as sweep tables have always written it.
pub mod or_none {
    use super::StopReasons;

    pub fn serialize<S: serde::Serializer>(
        value: &Option<StopReasons>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(reasons) => serializer.collect_str(reasons),
            None => serializer.serialize_str(super::NONE),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<StopReasons>, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        if text == super::NONE {
            return Ok(None);
        }
        text.parse().map(Some).map_err(serde::de::Error::custom)
    }
}

/// A run that did not run has no stop reason: its word in tables.
pub const NONE: &str = "none";

/// `reasons` as a table shows them, `none` for none.
pub fn shown(reasons: Option<&StopReasons>) -> String {
    reasons.map_or_else(|| NONE.to_string(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_written_as_words_and_read_back() {
        let one = StopReasons::one(StopReason::DataEnd);
        assert_eq!(one.to_string(), "data end");
        assert_eq!(serde_json::to_value(&one).unwrap(), "data end");
        let merged = StopReasons::union([
            &StopReasons::one(StopReason::RowLimit),
            &StopReasons::one(StopReason::Duration),
            &StopReasons::one(StopReason::RowLimit),
        ])
        .unwrap();
        assert_eq!(merged.to_string(), "duration, row limit");
        assert_eq!(
            "duration, row limit".parse::<StopReasons>(),
            Ok(merged.clone())
        );
        assert!(merged.contains(StopReason::RowLimit));
        assert_eq!(StopReasons::union([]), None);
        for (reason, text) in WORDS {
            assert_eq!(text.parse(), Ok(StopReasons::one(reason)));
        }
    }

    #[test]
    fn an_unknown_reason_is_refused_naming_the_words() {
        let e = "stopped, duration".parse::<StopReasons>().unwrap_err();
        assert_eq!(e.given, "stopped, duration");
        assert!(e.to_string().contains("\"row limit\""), "{e}");
        let e = serde_json::from_str::<StopReasons>("\"soon\"").unwrap_err();
        assert!(e.to_string().contains("stop reason \"soon\""), "{e}");
        assert!("".parse::<StopReasons>().is_err());
    }
}
