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
    /// The message quotes no value, so it may be said whole even for a secret key (whose
    /// other messages the CLI replaces, as they might quote it).
    pub says_no_value: bool,
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

    /// The section `name` holding `pairs` (tests of a kind's parse).
    pub fn of_pairs(name: &str, pairs: &[(&str, toml::Value)]) -> Section {
        Section::new(
            name,
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
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
            says_no_value: false,
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

    /// `key` as an HTTP URL (`url` of an HTTP target, or another address of it), `None`
    /// when unset: `http://` or `https://`, the scheme in any case and written
    /// lower-case.
    pub fn http_url(&self, key: &str) -> Result<Option<String>, KeyError> {
        let Some(text) = self.text(key)? else {
            return Ok(None);
        };
        if text.trim().is_empty() {
            return Err(self.error(key, "must not be empty"));
        }
        let mut url = text.to_string();
        if let Some((scheme, rest)) = url.split_once("://")
            && (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        {
            url = format!("{}://{rest}", scheme.to_ascii_lowercase());
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(self.error(
                key,
                format!(
                    "\"{}\" is not an HTTP URL; write http://HOST:PORT or https://HOST:PORT",
                    tsload_redact::url(&url)
                ),
            ));
        }
        Ok(Some(url))
    }

    /// A boolean, if set.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, KeyError> {
        match self.values.get(key) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
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

    /// A secret, if set: the value itself, or `$NAME` / `${NAME}` to read it from the
    /// environment (so scenario files need not hold passwords), as a
    /// [`tsload_redact::Secret`], which no message or report can print.
    pub fn secret(&self, key: &str) -> Result<Option<tsload_redact::Secret>, KeyError> {
        let Some(raw) = self.text(key)? else {
            return Ok(None);
        };
        let name = raw
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .or_else(|| raw.strip_prefix('$'));
        match name {
            None => Ok(Some(tsload_redact::Secret::new(raw))),
            Some(name) => match std::env::var(name) {
                Ok(value) => Ok(Some(tsload_redact::Secret::new(value))),
                Err(_) => Err(KeyError {
                    says_no_value: true,
                    ..self.error(
                        key,
                        format!(
                            "environment variable {name} is not set (the value \"{raw}\" reads it)"
                        ),
                    )
                }),
            },
        }
    }

    /// `url` as a [`SecretUrl`](tsload_redact::SecretUrl), with `password` (if given) put
    /// in as the URL's password, percent-encoded, after checking that the URL starts with
    /// one of `schemes` (`postgres://`). From here on the URL's secrets are shown as `***`.
    pub fn url_with_password(
        &self,
        url: &str,
        password: Option<&tsload_redact::Secret>,
        schemes: &[&str],
    ) -> Result<tsload_redact::SecretUrl, KeyError> {
        let Some(scheme) = schemes.iter().find(|s| url.starts_with(**s)) else {
            return Err(self.error(
                "url",
                format!("the URL must start with {}", schemes.join(" or ")),
            ));
        };
        let Some(password) = password else {
            return Ok(tsload_redact::SecretUrl::new(url));
        };
        let rest = &url[scheme.len()..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let Some((user, host)) = authority.split_once('@') else {
            return Err(self.error(
                "url",
                "a `password` needs a user name in the URL, e.g. scheme://USER@host",
            ));
        };
        if user.contains(':') {
            return Err(self.error(
                "password",
                "the URL has a password already; give it in one place",
            ));
        }
        Ok(tsload_redact::SecretUrl::new(format!(
            "{scheme}{user}:{}@{host}{}",
            crate::percent_encode(password.expose()),
            &rest[authority_end..]
        )))
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
        assert_eq!(s.bool("on"), Ok(Some(true)));
        assert_eq!(s.bool("off"), Ok(None));

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
            bad.bool("on")
                .unwrap_err()
                .message
                .contains("true or false")
        );
        assert_eq!(
            section(&[("wait", "1ms".into())])
                .duration("wait", Duration::from_secs(1))
                .unwrap_err()
                .message,
            "\"1ms\" is too short; allowed: at least 1s"
        );
    }
}
