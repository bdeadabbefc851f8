//! A kind's `[target]` section as the user wrote it (the values, `--set`s applied and
//! `$VAR` secrets resolved), and its typed readers. Every error names the key
//! (`target.busy_timeout`); the CLI adds the file and line, or the `--set`, it came from.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use tsload_core::Delivery;

use crate::duration::{DurationError, parse_duration};

/// Why a key's value was refused: the full key and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// `section.key`, e.g. `target.journal_mode`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for KeyError {}

/// A word a key takes, parsed once into its enum: the words and their values, in the
/// order messages list them. Each kind's crate implements it for its own enums.
pub trait Word: Copy + PartialEq + 'static {
    const WORDS: &'static [(&'static str, Self)];

    /// The word for this value.
    fn word(self) -> &'static str {
        Self::WORDS
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("", |(w, _)| w)
    }
}

impl Word for Delivery {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("exactly_once", Delivery::ExactlyOnce),
        ("at_least_once", Delivery::AtLeastOnce),
    ];
}

/// One section's values by key (without `kind`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    name: String,
    values: BTreeMap<String, toml::Value>,
}

impl Section {
    /// The section `name` (`target`) holding `values`.
    pub fn new(name: impl Into<String>, values: BTreeMap<String, toml::Value>) -> Section {
        Section {
            name: name.into(),
            values,
        }
    }

    /// The keys set, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// An error about `key`.
    pub fn error(&self, key: &str, message: impl Into<String>) -> KeyError {
        KeyError {
            key: format!("{}.{key}", self.name),
            message: message.into(),
        }
    }

    /// A string, if set.
    pub fn text(&self, key: &str) -> Result<Option<&str>, KeyError> {
        match self.values.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.error(
                key,
                format!("{} is not allowed; allowed: a string", shown(other)),
            )),
        }
    }

    /// `url`, or `default` when unset; an empty one is refused.
    pub fn url(&self, default: &str) -> Result<String, KeyError> {
        match self.text("url")? {
            None => Ok(default.to_string()),
            Some(u) if u.trim().is_empty() => Err(self.error("url", "must not be empty")),
            Some(u) => Ok(u.to_string()),
        }
    }

    /// A boolean, or `default`.
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, KeyError> {
        match self.values.get(key) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.error(
                key,
                format!("{} is not allowed; allowed: true or false", shown(other)),
            )),
        }
    }

    /// An integer in `lo..=hi`, if set.
    pub fn int(&self, key: &str, lo: i64, hi: i64) -> Result<Option<i64>, KeyError> {
        match self.values.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(x)) if (lo..=hi).contains(x) => Ok(Some(*x)),
            Some(toml::Value::Integer(x)) => Err(self.error(
                key,
                format!("value {x} is out of range; allowed: {lo} to {hi}"),
            )),
            Some(other) => Err(self.error(
                key,
                format!("{} is not allowed; allowed: an integer", shown(other)),
            )),
        }
    }

    /// A duration of at least `min`, if set.
    pub fn duration(&self, key: &str, min: Duration) -> Result<Option<Duration>, KeyError> {
        let Some(text) = self.text(key)? else {
            return Ok(None);
        };
        let d = parse_duration(text).map_err(|e| {
            self.error(
                key,
                match e {
                    DurationError::Invalid(e) => format!(
                        "\"{text}\" is not a duration ({e}); write e.g. \"10s\", \"500ms\", \
                         \"1h 30m\""
                    ),
                    DurationError::TooLong => {
                        format!("\"{text}\" is too long; allowed: at most 100 years")
                    }
                },
            )
        })?;
        if d < min {
            return Err(self.error(
                key,
                format!(
                    "\"{text}\" is too short; allowed: at least {}",
                    humantime::format_duration(min)
                ),
            ));
        }
        Ok(Some(d))
    }

    /// One of `T`'s words, if set.
    pub fn word<T: Word>(&self, key: &str) -> Result<Option<T>, KeyError> {
        let Some(text) = self.text(key)? else {
            return Ok(None);
        };
        T::WORDS
            .iter()
            .find(|(w, _)| *w == text)
            .map(|(_, v)| Some(*v))
            .ok_or_else(|| {
                let allowed: Vec<&str> = T::WORDS.iter().map(|(w, _)| *w).collect();
                self.error(
                    key,
                    format!("\"{text}\" is not allowed; allowed: {}", allowed.join(", ")),
                )
            })
    }

    /// `delivery`, or `default`.
    pub fn delivery(&self, default: Delivery) -> Result<Delivery, KeyError> {
        Ok(self.word("delivery")?.unwrap_or(default))
    }
}

/// A value as a message quotes it.
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(pairs: &[(&str, toml::Value)]) -> Section {
        Section::new(
            "target",
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mode {
        A,
        B,
    }

    impl Word for Mode {
        const WORDS: &'static [(&'static str, Self)] = &[("a", Mode::A), ("b", Mode::B)];
    }

    #[test]
    fn readers_take_what_is_allowed_and_name_the_key_otherwise() {
        let s = section(&[
            ("mode", "b".into()),
            ("wait", "2s".into()),
            ("n", 5.into()),
            ("on", true.into()),
        ]);
        assert_eq!(s.word::<Mode>("mode"), Ok(Some(Mode::B)));
        assert_eq!(Mode::B.word(), "b");
        assert_eq!(
            s.duration("wait", Duration::ZERO),
            Ok(Some(Duration::from_secs(2)))
        );
        assert_eq!(s.int("n", 1, 10), Ok(Some(5)));
        assert_eq!(s.flag("on", false), Ok(true));
        assert_eq!(s.flag("off", false), Ok(false));

        let bad = section(&[
            ("mode", "c".into()),
            ("wait", "soon".into()),
            ("n", 50.into()),
            ("on", "yes".into()),
            ("url", " ".into()),
        ]);
        let e = bad.word::<Mode>("mode").unwrap_err();
        assert_eq!(e.key, "target.mode");
        assert_eq!(e.message, "\"c\" is not allowed; allowed: a, b");
        assert!(
            bad.duration("wait", Duration::ZERO)
                .unwrap_err()
                .message
                .contains("not a duration")
        );
        assert_eq!(
            bad.int("n", 1, 10).unwrap_err().message,
            "value 50 is out of range; allowed: 1 to 10"
        );
        assert!(
            bad.flag("on", false)
                .unwrap_err()
                .message
                .contains("true or false")
        );
        assert_eq!(bad.url("x").unwrap_err().message, "must not be empty");
        assert_eq!(
            section(&[("wait", "1ms".into())])
                .duration("wait", Duration::from_secs(1))
                .unwrap_err()
                .message,
            "\"1ms\" is too short; allowed: at least 1s"
        );
    }
}
