//! Scenario files: TOML in, a validated [`Plan`] out. Every error names the file, the line,
//! the key, the bad value and what is allowed; `--set key=value` overrides are applied to the
//! document before it is read, so they are checked exactly like the file's own keys.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use toml::Spanned;
use tsload_core::engine::{LoadConfig, LoadMode};
use tsload_report::threshold::Threshold;
use tsload_target::Registry;

use self::sections::{
    LoadSection, MonitorSection, OutputSection, SWEEP_SHORT_KEYS, ScenarioFile, SectionDoc,
};
use crate::plan::{
    MonitorPlan, OutputPlan, Plan, ProgressMode, QueryPlan, QueryWorkloadPlan, RunMode, SweepAxis,
};

pub mod import;
mod network;
pub mod plan;
mod query;
pub mod sections;
pub mod shard;
mod target;
mod workload;
pub mod workloads;

pub use self::network::proxy_refusal;

pub use self::sections::{SECTION_NAMES, keys_markdown, section_reference};

/// Sections whose keys a `[sweep]` list may name in full (`load.rate`).
const SWEEP_SECTIONS: &[&str] = &["load", "network", "workload", "target", "query"];

/// The quickstart scenario, used when `tsload run` gets no file.
pub const QUICKSTART: &str = include_str!("../../../configs/quickstart.toml");
pub const QUICKSTART_NAME: &str = "configs/quickstart.toml (built in)";

/// A scenario that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The kinds of this build, handed over once by [`install_kinds`].
static KINDS: OnceLock<&'static Registry> = OnceLock::new();

/// Hands the library the target kinds of this build (the binary's registry,
/// `tsload_kinds::REGISTRY`), as sqlx's `install_drivers` does: call it once, before a
/// scenario is read or the key reference rendered. A second call keeps the first registry.
pub fn install_kinds(registry: &'static Registry) {
    let _ = KINDS.set(registry);
}

/// The installed kinds (every registered kind in this crate's tests).
pub(crate) fn kinds() -> &'static Registry {
    #[cfg(test)]
    KINDS.get_or_init(|| &tsload_kinds::REGISTRY);
    KINDS
        .get()
        .copied()
        .expect("tsload_scenario::install_kinds is called before a scenario is read")
}

/// Reads and validates a scenario file (or the quickstart when `path` is `None`).
pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Plan, ScenarioError> {
    let (name, text) = match path {
        None => (QUICKSTART_NAME.to_string(), QUICKSTART.to_string()),
        Some(p) => {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(|e| ScenarioError {
                file: name.clone(),
                line: None,
                key: None,
                message: format!("cannot read the scenario file: {e}"),
            })?;
            (name, text)
        }
    };
    register_secrets(&text, overrides);
    parse(&name, &text, overrides)
}

/// Parses scenario text; `file` names it in errors.
pub fn parse(file: &str, text: &str, overrides: &[String]) -> Result<Plan, ScenarioError> {
    let text = apply_overrides(text, overrides)?;
    let ctx = Ctx {
        file: file.to_string(),
        text: &text,
        overridden: overrides
            .iter()
            .filter_map(|o| o.split_once('=').map(|(k, _)| k.trim().to_string()))
            .collect(),
        overrides,
    };
    let raw: ScenarioFile = toml::from_str(&text).map_err(|e| ctx.toml_error(&e))?;
    ctx.plan(raw)
}

/// Makes every secret the scenario and its overrides hold known to tsload's one redaction
/// before anything is said about them: the values of secret-named keys (also in `[sweep]`
/// lists, such as `"target.password" = [...]`) and the passwords and secret query values of
/// every URL. Text that does not parse registers what its overrides say. Called where the
/// binary reads a scenario or profile (not by [`parse`], so tests stay independent).
pub fn register_secrets(text: &str, overrides: &[String]) {
    fn walk(key: &str, value: &toml::Value, secret: bool) {
        let secret = secret || tsload_redact::is_secret_key(key);
        match value {
            toml::Value::String(s) if secret => tsload_redact::register(s),
            toml::Value::String(s) => tsload_redact::register_url(s),
            toml::Value::Array(items) => items.iter().for_each(|v| walk(key, v, secret)),
            toml::Value::Table(t) => t.iter().for_each(|(k, v)| walk(k, v, secret)),
            _ => {}
        }
    }
    for o in overrides {
        if let Some((k, v)) = o.split_once('=') {
            let v = v.trim().trim_matches(['"', '\'']);
            if tsload_redact::is_secret_key(k) {
                tsload_redact::register(v);
            } else {
                tsload_redact::register_url(v);
            }
        }
    }
    if let Ok(table) = text.parse::<toml::Table>() {
        table.iter().for_each(|(k, v)| walk(k, v, false));
    }
}

/// A TOML syntax error without toml_edit's quote of the line (which would show a secret
/// written on it): `line N: not valid TOML: MESSAGE`.
pub fn syntax_error(text: &str, e: &toml_edit::TomlError) -> String {
    let line = e
        .span()
        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
    let message = tsload_redact::text(e.message().trim());
    match line {
        Some(n) => format!("line {n}: not valid TOML: {message}"),
        None => format!("not valid TOML: {message}"),
    }
}

/// Applies `key=value` overrides (dotted keys, TOML values; a value that is not valid TOML,
/// or is a date or time, is taken as a string) to the document, keeping the file's own lines where they are.
fn apply_overrides(text: &str, overrides: &[String]) -> Result<String, ScenarioError> {
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    // A syntax error is reported by the same path as without overrides (line, message,
    // the line's text redacted), not by toml_edit's display, which quotes the line raw.
    let mut doc: toml_edit::DocumentMut = match text.parse() {
        Ok(doc) => doc,
        Err(_) => return Ok(text.to_string()),
    };
    for o in overrides {
        let err = |message: String| ScenarioError {
            file: "--set".to_string(),
            line: None,
            key: Some(o.clone()),
            message,
        };
        let (key, value) = o
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUE, e.g. --set load.workers=8".into()))?;
        let path = key_path(key.trim()).map_err(err)?;
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        if path.iter().any(|p| p.is_empty()) {
            return Err(err("the key is empty or has an empty part".into()));
        }
        let value = value.trim();
        // TOML values as written; a bare word or a date/time (every key that takes one
        // wants it as a string) is taken as a string, so `--set mode=write` and
        // `--set workload.start=2016-01-02T00:00:00Z` need no inner quotes.
        let parsed: toml_edit::Value = match value.parse() {
            Ok(toml_edit::Value::Datetime(_)) | Err(_) => toml_edit::Value::from(value),
            Ok(v) => v,
        };
        let mut item = doc.as_item_mut();
        for part in &path[..path.len() - 1] {
            let table = item
                .as_table_like_mut()
                .ok_or_else(|| err(format!("`{part}` is not inside a table")))?;
            if table.get(part).is_none() {
                table.insert(part, toml_edit::Item::Table(toml_edit::Table::new()));
            }
            item = table.get_mut(part).expect("just inserted");
        }
        let last = path[path.len() - 1];
        let table = item
            .as_table_like_mut()
            .ok_or_else(|| err(format!("cannot set `{last}`: its parent is not a table")))?;
        table.insert(last, toml_edit::Item::Value(parsed));
    }
    Ok(doc.to_string())
}

/// serde's words for a person: "an integer" for `i64`, "a number" for `f64`, a hint to
/// quote dates and times, and "did you mean" for a near miss of a known key.
fn friendly_toml_message(message: &str, value: Option<&str>) -> String {
    let mut out = message
        .replace("expected i64", "expected an integer")
        .replace("expected u64", "expected a whole number >= 0")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false");
    if out.starts_with("invalid type: map, expected a string")
        && value.is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()) && v.contains('-'))
    {
        out = format!(
            "a date or time must be written as a string, in quotes (e.g. \"{}\")",
            value.unwrap_or_default()
        );
    }
    if let Some(unknown) = unknown_field(&out) {
        let known: Vec<&str> = out
            .split_once("expected")
            .map(|(_, rest)| rest.split('`').skip(1).step_by(2).collect())
            .unwrap_or_default();
        if let Some(best) = closest(unknown, &known) {
            out.push_str(&format!("; did you mean `{best}`?"));
        }
    }
    out
}

/// The name in serde's "unknown field `NAME`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name)
}

/// The known word nearest to `word`, if it is near enough to be a typo.
fn closest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(word, k), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min()
        .map(|(_, k)| k)
}

/// Durations are read as every kind's section reads them (`tsload_target`).
pub use tsload_target::{DurationError, parse_duration};

/// The parts of a dotted key; a part in double quotes may hold dots
/// (`sweep."query.workers"`), as in TOML.
fn key_path(key: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in key.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current).trim().to_string()),
            c => current.push(c),
        }
    }
    if quoted {
        return Err(format!("the key `{key}` has an unclosed quote"));
    }
    parts.push(current.trim().to_string());
    Ok(parts)
}

struct Ctx<'a> {
    file: String,
    text: &'a str,
    overridden: Vec<String>,
    /// The `--set` texts as given, for errors that quote them.
    overrides: &'a [String],
}

fn flag(v: &Option<Spanned<bool>>, default: bool) -> bool {
    v.as_ref().map_or(default, |v| *v.get_ref())
}

/// A section's keys, or none when the file leaves the section out.
fn section<T: Default>(s: Option<Spanned<T>>) -> T {
    s.map(Spanned::into_inner).unwrap_or_default()
}

/// Length of varchar, binary and nchar columns that give no `len`.
const DEFAULT_STRING_LEN: u32 = 16;

/// `message` with the value of `--set KEY=VALUE` hidden wherever it appears.
fn hide_value(message: &str, given: &str) -> String {
    let value = given.split_once('=').map_or("", |(_, v)| v.trim());
    let bare = value.trim_matches(['"', '\'']);
    let mut m = message.to_string();
    for v in [value, bare] {
        if !v.is_empty() {
            m = m.replace(v, "***");
        }
    }
    m
}

/// The decoded key path (`["target", "password"]`, an escaped key decoded) of the entry
/// whose key or value holds byte `at` of `text`, the innermost one; `None` when `text` is
/// not a TOML document or no entry holds `at`.
fn key_path_at(text: &str, at: usize) -> Option<Vec<String>> {
    use toml::de::{DeTable, DeValue};
    fn walk(
        table: &DeTable<'_>,
        at: usize,
        path: &mut Vec<String>,
        best: &mut Option<Vec<String>>,
    ) {
        for (key, value) in table {
            path.push(key.get_ref().to_string());
            if key.span().contains(&at) || value.span().contains(&at) {
                *best = Some(path.clone());
            }
            walk_value(value.get_ref(), at, path, best);
            path.pop();
        }
    }
    fn walk_value(
        value: &DeValue<'_>,
        at: usize,
        path: &mut Vec<String>,
        best: &mut Option<Vec<String>>,
    ) {
        match value {
            DeValue::Table(t) => walk(t, at, path, best),
            DeValue::Array(items) => {
                for item in items.iter() {
                    walk_value(item.get_ref(), at, path, best);
                }
            }
            _ => {}
        }
    }
    let doc = DeTable::parse(text).ok()?;
    let mut best = None;
    walk(doc.get_ref(), at, &mut Vec::new(), &mut best);
    best
}

/// The source text from byte `at` of `text` to its line's end (after the `=` when `at` is
/// at a key), for the hint about unquoted dates. Only asked for a key that is no secret.
fn value_text_at(text: &str, at: usize) -> Option<&str> {
    let rest = &text[at..];
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let value = line.split_once('=').map_or(line, |(_, v)| v);
    Some(value.trim()).filter(|v| !v.is_empty())
}

impl Ctx<'_> {
    fn line_of(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].bytes().filter(|b| *b == b'\n').count() + 1
    }

    fn error(&self, span: Option<&Range<usize>>, key: &str, message: String) -> ScenarioError {
        if let Some(given) = self.set_text(key) {
            // The value came from the command line: quote it, not a line of the file
            // (a secret's value never).
            let message = if crate::plan::is_secret_key(key) {
                hide_value(&message, given)
            } else {
                tsload_redact::text(&message)
            };
            return ScenarioError {
                file: "--set".into(),
                line: None,
                key: Some(key.to_string()),
                message: format!("{message} (in `--set {}`)", crate::plan::shown_set(given)),
            };
        }
        let message = if crate::plan::is_secret_key(key) {
            "the value is not allowed (not shown: a secret)".to_string()
        } else {
            message
        };
        ScenarioError {
            file: self.file.clone(),
            line: span.map(|s| self.line_of(s)),
            key: Some(key.to_string()),
            message,
        }
    }

    /// The last `--set` text that set `key`.
    fn set_text(&self, key: &str) -> Option<&str> {
        self.overrides
            .iter()
            .rev()
            .find(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == key))
            .map(String::as_str)
    }

    /// Whether the file's `section.key` is set aside because `--set section.kind=...`
    /// chose another kind: the file's settings of the old kind no longer apply, while a
    /// `--set` of a key the new kind lacks is still an error.
    fn dropped_by_kind_override(&self, section: &str, key: &str) -> bool {
        let has = |k: &str| self.overridden.iter().any(|o| o == k);
        has(&format!("{section}.kind")) && !has(&format!("{section}.{key}"))
    }

    /// A TOML error as the user can act on it: the file's line and the full key, or the
    /// `--set` that gave the value. No source line is ever quoted (one could hold a secret
    /// in any spelling: a multi-line string, an escaped key, an array's later line), and a
    /// value is shown only when its key is not a secret.
    fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let at = e.span().map(|s| s.start.min(self.text.len()));
        // The decoded key path at the error (`None` for a syntax error: the document does
        // not parse, and overrides are applied only to a document that parses, so a
        // syntax error is always the file's).
        let path = at.and_then(|at| key_path_at(self.text, at));
        let dotted = path.as_ref().map(|p| p.join("."));
        let secret = path
            .as_ref()
            .is_some_and(|p| p.iter().any(|k| crate::plan::is_secret_key(k)));
        let raw = e.message().trim_end();
        let message = if secret {
            "the value is not allowed (not shown: a secret)".to_string()
        } else {
            let value = at.and_then(|at| value_text_at(self.text, at));
            tsload_redact::text(&friendly_toml_message(raw, value))
        };
        // The value came from a `--set` when the error's key is the key it set (or lies
        // under it).
        let from_set = path.as_ref().and_then(|path| {
            self.overrides.iter().rev().find(|o| {
                o.split_once('=')
                    .and_then(|(k, _)| key_path(k.trim()).ok())
                    .is_some_and(|set| path.starts_with(&set))
            })
        });
        if let Some(given) = from_set {
            let key = given.split_once('=').map(|(k, _)| k.trim().to_string());
            let message = match &key {
                Some(k) if crate::plan::is_secret_key(k) => hide_value(&message, given),
                _ => message,
            };
            return ScenarioError {
                file: "--set".into(),
                line: None,
                key,
                message: format!("{message} (in `--set {}`)", crate::plan::shown_set(given)),
            };
        }
        let column = at.map(|at| {
            let line_start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
            self.text[line_start..at].chars().count() + 1
        });
        let message = match (column, path.is_some()) {
            (Some(c), false) => format!("{message} (column {c})"),
            _ => message,
        };
        ScenarioError {
            file: self.file.clone(),
            line: e.span().map(|s| self.line_of(&s)),
            key: dotted,
            message,
        }
    }

    fn int(&self, v: &Spanned<i64>, key: &str, lo: i64, hi: i64) -> Result<i64, ScenarioError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return Err(self.error(
                Some(&v.span()),
                key,
                format!("value {x} is out of range; allowed: {lo} to {hi}"),
            ));
        }
        Ok(x)
    }

    fn ratio(&self, v: &Spanned<f64>, key: &str, hi: f64) -> Result<f64, ScenarioError> {
        let x = *v.get_ref();
        if !(x.is_finite() && (0.0..=hi).contains(&x)) {
            return Err(self.error(
                Some(&v.span()),
                key,
                format!("value {x} is out of range; allowed: 0 to {hi}"),
            ));
        }
        Ok(x)
    }

    fn duration(
        &self,
        v: &Spanned<String>,
        key: &str,
        min: Duration,
    ) -> Result<Duration, ScenarioError> {
        let d = parse_duration(v.get_ref()).map_err(|e| {
            let message = match e {
                DurationError::Invalid(e) => format!(
                    "\"{}\" is not a duration ({e}); write e.g. \"10s\", \"500ms\", \"1h 30m\"",
                    v.get_ref()
                ),
                DurationError::TooLong => {
                    format!(
                        "\"{}\" is too long; allowed: at most 100 years",
                        v.get_ref()
                    )
                }
            };
            self.error(Some(&v.span()), key, message)
        })?;
        if d < min {
            return Err(self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is too short; allowed: at least {}",
                    v.get_ref(),
                    humantime::format_duration(min)
                ),
            ));
        }
        Ok(d)
    }

    /// A duration in nanoseconds for the workload's time grid, which counts in `i64`
    /// nanoseconds: at most about 292 years.
    fn duration_ns(
        &self,
        v: &Spanned<String>,
        key: &str,
        min: Duration,
    ) -> Result<i64, ScenarioError> {
        let d = self.duration(v, key, min)?;
        i64::try_from(d.as_nanos()).map_err(|_| {
            self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is too long; allowed: at most about 292 years (nanoseconds in \
                     64 bits)",
                    v.get_ref()
                ),
            )
        })
    }

    /// A UTC time: RFC 3339, or `now` / `now-DURATION` (`now-24h`): this minute's start,
    /// less the duration, so a data set can be placed where a server keeps it (inside
    /// its retention). Shards started in different minutes see different `now`s: give
    /// sharded runs absolute times.
    fn time_ns(&self, v: &Spanned<String>, key: &str) -> Result<i64, ScenarioError> {
        let raw = v.get_ref().trim();
        let relative = raw.strip_prefix("now").map(|rest| {
            let ago = match rest.trim().strip_prefix('-') {
                None if rest.trim().is_empty() => Ok(Duration::ZERO),
                None => Err(()),
                Some(d) => parse_duration(d.trim()).map_err(drop),
            };
            ago.and_then(|ago| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_err(drop)?;
                let minute = std::time::UNIX_EPOCH + Duration::from_secs(now.as_secs() / 60 * 60);
                minute.checked_sub(ago).ok_or(())
            })
        });
        let t = match relative {
            Some(t) => t,
            None => humantime::parse_rfc3339_weak(raw).map_err(drop),
        }
        .map_err(|()| {
            self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is not a UTC time; write RFC 3339, e.g. \"2016-01-01T00:00:00Z\", \
                     or \"now\" or \"now-DURATION\", e.g. \"now-24h\"",
                    v.get_ref()
                ),
            )
        })?;
        let since = t.duration_since(std::time::UNIX_EPOCH).map_err(|_| {
            self.error(
                Some(&v.span()),
                key,
                "times before 1970 are not supported".into(),
            )
        })?;
        i64::try_from(since.as_nanos())
            .map_err(|_| self.error(Some(&v.span()), key, "time is past year 2262".into()))
    }

    /// `v`, or else the default the key reference documents for `key`
    /// ([`sections::documented_default`]): the one place a scenario key's default is
    /// written. A documented default that is missing or does not read is a bug, said so.
    fn given_or_documented<'v, T>(
        &self,
        v: &'v Option<Spanned<T>>,
        key: &str,
    ) -> Result<std::borrow::Cow<'v, Spanned<T>>, ScenarioError>
    where
        T: serde::de::DeserializeOwned + Clone,
    {
        if let Some(v) = v {
            return Ok(std::borrow::Cow::Borrowed(v));
        }
        let bug = |why: String| self.error(None, key, format!("{why} (a bug in tsload)"));
        let value = sections::documented_default(key)
            .ok_or_else(|| bug("the key reference documents no default".into()))?;
        let value = T::deserialize(value)
            .map_err(|e| bug(format!("the documented default does not read: {e}")))?;
        Ok(std::borrow::Cow::Owned(Spanned::new(0..0, value)))
    }

    /// An integer in `lo..=hi`, or the documented default.
    fn int_or_default(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        lo: i64,
        hi: i64,
    ) -> Result<i64, ScenarioError> {
        self.int(&*self.given_or_documented(v, key)?, key, lo, hi)
    }

    /// A ratio in `0..=hi`, or the documented default.
    fn ratio_or_default(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        hi: f64,
    ) -> Result<f64, ScenarioError> {
        self.ratio(&*self.given_or_documented(v, key)?, key, hi)
    }

    /// A duration of at least `min`, or the documented default.
    fn duration_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
        min: Duration,
    ) -> Result<Duration, ScenarioError> {
        self.duration(&*self.given_or_documented(v, key)?, key, min)
    }

    /// A duration in nanoseconds ([`Self::duration_ns`]), or the documented default.
    fn duration_ns_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
        min: Duration,
    ) -> Result<i64, ScenarioError> {
        self.duration_ns(&*self.given_or_documented(v, key)?, key, min)
    }

    /// A UTC time in nanoseconds since the epoch, or the documented default.
    fn time_ns_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<i64, ScenarioError> {
        self.time_ns(&*self.given_or_documented(v, key)?, key)
    }

    /// A bool, or the documented default.
    fn flag_or_default(&self, v: &Option<Spanned<bool>>, key: &str) -> Result<bool, ScenarioError> {
        Ok(*self.given_or_documented(v, key)?.get_ref())
    }

    /// A string, or the documented default.
    fn text_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<String, ScenarioError> {
        Ok(self.given_or_documented(v, key)?.get_ref().clone())
    }

    /// An optional integer in `lo..=hi`.
    fn opt_int(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        lo: i64,
        hi: i64,
    ) -> Result<Option<i64>, ScenarioError> {
        v.as_ref().map(|v| self.int(v, key, lo, hi)).transpose()
    }

    /// An optional ratio in `0..=hi`.
    fn opt_ratio(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        hi: f64,
    ) -> Result<Option<f64>, ScenarioError> {
        v.as_ref().map(|v| self.ratio(v, key, hi)).transpose()
    }

    /// An optional duration of at least `min`.
    fn opt_duration(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
        min: Duration,
    ) -> Result<Option<Duration>, ScenarioError> {
        v.as_ref().map(|v| self.duration(v, key, min)).transpose()
    }

    /// Closed loop without a rate, open loop at a positive, finite rate (`unit` per
    /// second).
    fn load_mode(
        &self,
        rate: &Option<Spanned<f64>>,
        key: &str,
        unit: &str,
    ) -> Result<LoadMode, ScenarioError> {
        let Some(r) = rate else {
            return Ok(LoadMode::Closed);
        };
        let rate = *r.get_ref();
        if !(rate.is_finite() && rate > 0.0) {
            return Err(self.error(
                Some(&r.span()),
                key,
                format!(
                    "value {rate} is out of range; allowed: a positive number of {unit} per \
                     second (omit it for closed loop)"
                ),
            ));
        }
        Ok(LoadMode::Open { rate })
    }

    /// Refuses an open loop (`SECTION.rate`, `unit`s per second) that offers less than one
    /// request per worker within `SECTION.duration`. `per_round` is what all workers send
    /// with one request each (rows: batch x workers; requests: workers), `given` says
    /// where that comes from. Each worker sends one request every `per_round / rate` s: a
    /// run shorter than that, which cannot send part of a request, would achieve many
    /// times what was offered, or nothing.
    fn open_loop_fits(
        &self,
        rate: &Option<Spanned<f64>>,
        duration: Option<Duration>,
        section: &str,
        unit: &str,
        (per_round, given): (usize, &str),
    ) -> Result<(), ScenarioError> {
        let (Some(r), Some(duration)) = (rate, duration) else {
            return Ok(());
        };
        let (rate, seconds) = (*r.get_ref(), duration.as_secs_f64());
        let period = per_round as f64 / rate;
        if period <= seconds {
            return Ok(());
        }
        Err(self.error(
            Some(&r.span()),
            &format!("{section}.rate"),
            format!(
                "{rate} {unit}/s with {given} is one request per worker every {period:.3} s, \
                 longer than {section}.duration ({seconds:.3} s): the run would not offer a \
                 request per worker; allowed: a rate of at least {:.3} {unit}/s here, or fewer \
                 workers, smaller requests or a longer duration",
                per_round as f64 / seconds
            ),
        ))
    }

    /// Refuses a key that the section's `kind` does not read: another kind's keys are
    /// mistakes, not settings silently ignored. `what` names the kind in the message.
    fn check_kind_keys(
        &self,
        section: &SectionDoc,
        kind: &str,
        what: &str,
        present: Vec<(&str, Range<usize>)>,
    ) -> Result<(), ScenarioError> {
        let allowed = section.keys_of(kind);
        for (key, span) in present {
            if key == section.kind_key
                || allowed.contains(&key)
                || self.dropped_by_kind_override(section.name, key)
            {
                continue;
            }
            let owners = section.kinds_of(key).join(", ");
            let list = if allowed.is_empty() {
                "; it has no settings".to_string()
            } else {
                format!("; its settings are: {}", allowed.join(", "))
            };
            return Err(self.error(
                Some(&span),
                &format!("{}.{key}", section.name),
                format!("not a setting of {what} (only of {owners}){list}"),
            ));
        }
        Ok(())
    }

    fn choice<'v>(
        &self,
        v: &'v Spanned<String>,
        key: &str,
        allowed: &[&str],
    ) -> Result<&'v str, ScenarioError> {
        let s = v.get_ref().as_str();
        if allowed.contains(&s) {
            Ok(s)
        } else {
            Err(self.error(
                Some(&v.span()),
                key,
                format!("\"{s}\" is not allowed; allowed: {}", allowed.join(", ")),
            ))
        }
    }

    fn plan(&self, raw: ScenarioFile) -> Result<Plan, ScenarioError> {
        let workload_section = section(raw.workload);
        let load_section = section(raw.load);
        let mut workload = self.workload(&workload_section)?;
        let target = self.target(&section(raw.target))?;
        let mut load = self.load(&load_section)?;
        let time = self.live_time(&workload_section, &load_section, &mut workload, &mut load)?;
        let output = self.output(&section(raw.output))?;
        let query = raw
            .query
            .as_ref()
            .map(|q| self.query(q, &workload, &target))
            .transpose()?;
        let mode = self.mode(&raw.mode, &query)?;
        // mode = "write" in a file with [query] (checked above, so a later query run of
        // the same file works) writes the data set alone: the queries are set aside.
        let query = if mode == RunMode::Write { None } else { query };
        self.check_mode(mode, &raw.mode, &query, &load)?;
        let network = raw
            .network
            .as_ref()
            .map(|n| self.network(n, &target))
            .transpose()?;
        let monitor = raw.monitor.as_ref().map(|m| self.monitor(m)).transpose()?;
        load.measure_storage = monitor.as_ref().is_some_and(|m| m.storage);
        // The null target stores nothing by design: there is nothing to ask.
        load.verify_stored = output.verify && target.stores();
        let sweep = raw
            .sweep
            .as_ref()
            .map(|s| self.sweep(s))
            .transpose()?
            .unwrap_or_default();
        // The grace after the run's end is the run's, for its queries too.
        let mut query = query;
        if let Some(q) = &mut query {
            q.config.grace = load.grace;
            q.config.drain = load.drain;
        }
        let plan = Plan {
            name: raw
                .name
                .map_or_else(|| self.file.clone(), Spanned::into_inner),
            description: raw.description.map(Spanned::into_inner),
            source: self.file.clone(),
            set_keys: self.overridden.clone(),
            workload,
            target,
            load,
            output,
            network,
            monitor,
            sweep,
            mode,
            query,
            time,
        };
        // A threshold on a figure no stream of the run measures could only break (as
        // NaN) after the whole run: refused now.
        let streams = plan.streams();
        for (i, t) in plan.output.fail_if.iter().enumerate() {
            t.check_measured(&streams)
                .map_err(|e| self.error(None, &format!("output.fail_if[{i}]"), e))?;
        }
        Ok(plan)
    }

    /// `mode`: as written, else write, or query when the file has a `[query]`; a mode that
    /// reads needs one.
    fn mode(
        &self,
        raw_mode: &Option<Spanned<String>>,
        query: &Option<QueryPlan>,
    ) -> Result<RunMode, ScenarioError> {
        Ok(match (raw_mode, query) {
            (None, None) => RunMode::Write,
            (None, Some(_)) => RunMode::Query,
            (Some(m), q) => {
                let mode = match self.choice(m, "mode", &["write", "query", "mixed"])? {
                    "query" => RunMode::Query,
                    "mixed" => RunMode::Mixed,
                    _ => RunMode::Write,
                };
                if mode != RunMode::Write && q.is_none() {
                    return Err(self.error(
                        Some(&m.span()),
                        "mode",
                        format!(
                            "mode \"{}\" needs a [query] section (kind = \"tsbs\" or an oltp_* kind)",
                            m.get_ref()
                        ),
                    ));
                }
                mode
            }
        })
    }

    /// What a mode refuses of the queries: OLTP beside writes, a start after the writes'
    /// start but in a mode without writes, or after the writes' end.
    fn check_mode(
        &self,
        mode: RunMode,
        raw_mode: &Option<Spanned<String>>,
        query: &Option<QueryPlan>,
        load: &LoadConfig,
    ) -> Result<(), ScenarioError> {
        if let (RunMode::Mixed, Some(q)) = (mode, &query)
            && matches!(q.workload, QueryWorkloadPlan::Oltp { .. })
        {
            return Err(self.error(
                raw_mode.as_ref().map(|m| m.span()).as_ref(),
                "mode",
                "mode \"mixed\" runs a write stream beside TSBS queries (query.kind = \"tsbs\"); an OLTP workload writes by itself: use mode \"query\"".into(),
            ));
        }
        if let Some(q) = &query
            && q.start_after.is_some()
            && mode != RunMode::Mixed
        {
            return Err(self.error(
                None,
                "query.start_after",
                "only mode \"mixed\" starts the queries after the writes".into(),
            ));
        }
        // What the run would refuse once the writes are done: queries that start after the
        // writes' end never run.
        if let Some(q) = &query
            && mode == RunMode::Mixed
            && let (Some(after), Some(duration)) = (q.start_after, load.duration)
            && after >= duration
        {
            return Err(self.error(
                None,
                "query.start_after",
                format!(
                    "the queries would start {} after the writes began, but the writes end after {} \
                     (load.duration): they would never run; start them earlier or write for longer",
                    humantime::format_duration(after),
                    humantime::format_duration(duration)
                ),
            ));
        }
        Ok(())
    }

    fn monitor(&self, section: &Spanned<MonitorSection>) -> Result<MonitorPlan, ScenarioError> {
        let m = section.get_ref();
        let mut given = Vec::new();
        if let Some(pid) = &m.pid {
            let pid = self.int(pid, "monitor.pid", 1, i64::from(i32::MAX))?;
            given.push(tsload_monitor::Selector::Pid(pid as u32));
        }
        let text = |v: &Spanned<String>, key: &str| {
            if v.get_ref().trim().is_empty() {
                Err(self.error(Some(&v.span()), key, "empty".into()))
            } else {
                Ok(v.get_ref().clone())
            }
        };
        if let Some(p) = &m.process {
            given.push(tsload_monitor::Selector::Name(text(p, "monitor.process")?));
        }
        if let Some(u) = &m.systemd_unit {
            given.push(tsload_monitor::Selector::Unit(text(
                u,
                "monitor.systemd_unit",
            )?));
        }
        let storage = self.flag_or_default(&m.storage, "monitor.storage")?;
        let selector = match given.len() {
            0 if storage && m.data_dir.is_none() => None,
            1 => Some(given.remove(0)),
            n => {
                return Err(self.error(
                    Some(&section.span()),
                    "monitor",
                    format!(
                        "{} of pid, process and systemd_unit given; name the server's processes with exactly one (or set only storage = true for the database's own figures)",
                        if n == 0 { "none".to_string() } else { n.to_string() }
                    ),
                ));
            }
        };
        let data_dir = m
            .data_dir
            .as_ref()
            .map(|d| text(d, "monitor.data_dir").map(std::path::PathBuf::from))
            .transpose()?;
        Ok(MonitorPlan {
            selector,
            data_dir,
            storage,
        })
    }

    fn load(&self, l: &LoadSection) -> Result<LoadConfig, ScenarioError> {
        let workers = self.int_or_default(&l.workers, "load.workers", 1, 100_000)? as usize;
        let batch = self.int_or_default(&l.batch, "load.batch", 1, 10_000_000)? as usize;
        let in_flight = self.int_or_default(&l.in_flight, "load.in_flight", 1, 1024)? as usize;
        let mode = self.load_mode(&l.rate, "load.rate", "rows")?;
        let duration = self.opt_duration(&l.duration, "load.duration", Duration::from_millis(1))?;
        self.open_loop_fits(
            &l.rate,
            duration,
            "load",
            "rows",
            (
                batch * workers,
                &format!("load.batch = {batch} and load.workers = {workers}"),
            ),
        )?;
        Ok(LoadConfig {
            workers,
            batch,
            in_flight,
            mode,
            duration,
            rows: self
                .opt_int(&l.rows, "load.rows", 1, i64::MAX)?
                .map(|v| v as u64),
            report_interval: self.duration_or_default(
                &l.report_interval,
                "load.report_interval",
                Duration::from_millis(10),
            )?,
            max_retries: self.int_or_default(&l.max_retries, "load.max_retries", 0, 1000)? as u32,
            retry_backoff: self.duration_or_default(
                &l.retry_backoff,
                "load.retry_backoff",
                Duration::ZERO,
            )?,
            grace: self.duration_or_default(&l.grace, "load.grace", Duration::ZERO)?,
            drain: self.duration_or_default(&l.drain, "load.drain", Duration::ZERO)?,
            ..LoadConfig::default()
        })
    }

    /// The `[sweep]` lists in file order, keys made full (`delay` sets `network.delay`,
    /// `workers` sets `load.workers`).
    fn sweep(
        &self,
        s: &Spanned<std::collections::BTreeMap<String, Spanned<toml::Value>>>,
    ) -> Result<Vec<SweepAxis>, ScenarioError> {
        let mut entries: Vec<(&String, &Spanned<toml::Value>)> = s.get_ref().iter().collect();
        entries.sort_by_key(|(_, v)| v.span().start);
        let mut out: Vec<SweepAxis> = Vec::new();
        for (key, value) in entries {
            let span = value.span();
            let err = |message: String| self.error(Some(&span), &format!("sweep.{key}"), message);
            let short = SWEEP_SHORT_KEYS
                .iter()
                .find(|(short, _)| short == key)
                .map(|(_, full)| full);
            let full_key = match (short, key.as_str()) {
                (Some(full), _) => full.to_string(),
                (None, k)
                    if SWEEP_SECTIONS
                        .iter()
                        .any(|p| k.starts_with(&format!("{p}.")))
                        && k.split('.').count() == 2 =>
                {
                    k.to_string()
                }
                _ => {
                    return Err(err(format!(
                        "not a sweepable key; allowed: {}, or SECTION.KEY such as \"load.rate\", \"network.rate\", \"query.workers\" (sections: {})",
                        SWEEP_SHORT_KEYS
                            .iter()
                            .map(|(short, _)| *short)
                            .collect::<Vec<_>>()
                            .join(", "),
                        SWEEP_SECTIONS.join(", ")
                    )));
                }
            };
            let toml::Value::Array(items) = value.get_ref() else {
                return Err(err(format!(
                    "must be a list of values, e.g. {key} = [1, 2, 4]; got {}",
                    value.get_ref()
                )));
            };
            if items.is_empty() {
                return Err(err("the list is empty; give at least one value".into()));
            }
            if let Some(bad) = items
                .iter()
                .find(|v| matches!(v, toml::Value::Array(_) | toml::Value::Table(_)))
            {
                return Err(err(format!(
                    "{bad} is not a plain value; allowed: numbers, strings, booleans"
                )));
            }
            if out.iter().any(|a| a.full_key == full_key) {
                return Err(err(format!("`{full_key}` is swept twice")));
            }
            out.push(SweepAxis {
                key: key.clone(),
                full_key,
                values: items.clone(),
            });
        }
        if out.is_empty() {
            return Err(self.error(
                Some(&s.span()),
                "sweep",
                "the [sweep] table is empty; give lists such as delay = [\"0ms\", \"1ms\"]".into(),
            ));
        }
        Ok(out)
    }

    fn output(&self, o: &OutputSection) -> Result<OutputPlan, ScenarioError> {
        let mut fail_if = Vec::new();
        for (i, t) in o.fail_if.iter().flat_map(|l| l.get_ref()).enumerate() {
            let th = Threshold::parse(t.get_ref()).map_err(|e| {
                self.error(
                    Some(&t.span()),
                    &format!("output.fail_if[{i}]"),
                    e.to_string(),
                )
            })?;
            fail_if.push(th);
        }
        let progress = self.given_or_documented(&o.progress, "output.progress")?;
        let progress = match self.choice(
            &progress,
            "output.progress",
            &["auto", "bar", "plain", "none"],
        )? {
            "bar" => ProgressMode::Bar,
            "plain" => ProgressMode::Plain,
            "none" => ProgressMode::None,
            _ => ProgressMode::Auto,
        };
        Ok(OutputPlan {
            json: o.json.as_ref().map(|p| p.get_ref().into()),
            hlog: o.hlog.as_ref().map(|p| p.get_ref().into()),
            fail_if,
            progress,
            out: Vec::new(),
            metrics_addr: None,
            shard: crate::plan::ShardRun::default(),
            raw_latencies: None,
            verify: self.flag_or_default(&o.verify, "output.verify")?,
        })
    }
}

#[cfg(test)]
mod prop;

#[cfg(test)]
mod tests;
