//! Scenario files: TOML in, a validated [`Plan`] out. Every error names the file, the line,
//! the key, the bad value and what is allowed; `--set key=value` overrides are applied to the
//! document before it is read, so they are checked exactly like the file's own keys.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use toml::Spanned;
use tsload_core::Delivery;
use tsload_core::engine::{LoadConfig, LoadMode};
use tsload_core::schema::DataType;
use tsload_core::threshold::Threshold;
use tsload_workload::{ColumnSpec, CustomConfig, IotOptions, TsbsConfig};

use self::sections::{
    ColumnEntry, LoadSection, MonitorSection, NETWORK, NETWORK_BACKENDS, NetworkSection,
    OutputSection, QUERY, QUERY_KINDS, QuerySection, SWEEP_SHORT_KEYS, ScenarioFile, SectionDoc,
    TARGET, TARGET_KINDS, TargetSection, WORKLOAD, WORKLOAD_KINDS, WorkloadSection,
};
use crate::plan::{
    InfluxPlan, MonitorPlan, NetworkBackend, NetworkPlan, OutputPlan, Plan, ProbeChoice,
    ProgressMode, QueryPlan, QueryWorkloadPlan, RunMode, SweepAxis, TargetPlan, WorkloadPlan,
};

mod sections;

pub(crate) use self::sections::{SECTION_NAMES, keys_markdown, section_reference};

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
    parse(&name, &text, overrides)
}

/// Parses scenario text; `file` names it in errors.
pub fn parse(file: &str, text: &str, overrides: &[String]) -> Result<Plan, ScenarioError> {
    let text = apply_overrides(file, text, overrides)?;
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

/// Applies `key=value` overrides (dotted keys, TOML values; a value that is not valid TOML,
/// or is a date or time, is taken as a string) to the document, keeping the file's own lines where they are.
fn apply_overrides(file: &str, text: &str, overrides: &[String]) -> Result<String, ScenarioError> {
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    let mut doc: toml_edit::DocumentMut =
        text.parse()
            .map_err(|e: toml_edit::TomlError| ScenarioError {
                file: file.to_string(),
                line: None,
                key: None,
                message: format!("not valid TOML: {e}"),
            })?;
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
fn friendly_toml_message(message: &str, line: Option<&str>) -> String {
    let mut out = message
        .replace("expected i64", "expected an integer")
        .replace("expected u64", "expected a whole number >= 0")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false");
    let value = line.and_then(|l| l.split_once('=')).map(|(_, v)| v.trim());
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

/// A duration as humantime reads it (`1h 30m`, `500ms`), or a decimal number with one
/// unit as tc writes it (`0.5ms`, `1.5s`), which humantime refuses.
///
/// Anything longer than [`MAX_DURATION`] (100 years) is refused: clocks add durations to
/// instants, and a sum past what the clock can hold would otherwise panic mid-run.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let d = parse_duration_unbounded(s).map_err(DurationError::Invalid)?;
    if d > MAX_DURATION {
        return Err(DurationError::TooLong);
    }
    Ok(d)
}

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum DurationError {
    /// Not a duration at all; the parser's reason.
    Invalid(String),
    /// Longer than [`MAX_DURATION`].
    TooLong,
}

/// The longest duration any key or flag takes: 100 years (of 365.25 days, as humantime
/// counts `1y`).
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 31_557_600);

fn parse_duration_unbounded(s: &str) -> Result<Duration, String> {
    let whole = humantime::parse_duration(s).map_err(|e| e.to_string());
    if whole.is_ok() {
        return whole;
    }
    let t = s.trim();
    let Some(split) = t.find(|c: char| c.is_ascii_alphabetic()) else {
        return whole;
    };
    let (number, unit) = (t[..split].trim(), t[split..].trim());
    let scale = match unit {
        "s" | "sec" | "secs" => 1.0,
        "ms" | "msec" => 1e-3,
        "us" | "usec" | "µs" => 1e-6,
        "ns" | "nsec" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return whole,
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 1e12 => {
            Ok(Duration::from_nanos((v * scale * 1e9).round() as u64))
        }
        _ => whole,
    }
}

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

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

/// The name of the `[table]` whose body holds byte `at` of `text` (`None` at top level).
fn table_header_before(text: &str, at: usize) -> Option<String> {
    let head = &text[..at.min(text.len())];
    head.lines().rev().find_map(|l| {
        let l = l.trim();
        (l.starts_with('[') && !l.starts_with("[["))
            .then(|| l.trim_matches(['[', ']']).trim().to_string())
    })
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
                crate::plan::redact_in_text(&message)
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

    fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let line_text = e.span().map(|s| {
            let start = self.text[..s.start.min(self.text.len())]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let end = self.text[start..]
                .find('\n')
                .map_or(self.text.len(), |i| start + i);
            self.text[start..end].trim()
        });
        let message = friendly_toml_message(e.message().trim_end(), line_text);
        // A value that came from --set is reported against that --set, not a line of the
        // (possibly built-in) file: the unknown key, or the key on the offending line.
        let name = unknown_field(&message).or_else(|| {
            line_text
                .and_then(|l| l.split_once('='))
                .map(|(k, _)| k.trim().trim_matches(['"', '\'']))
        });
        // The full dotted key of the offending line: its table header, then the key.
        let section = e
            .span()
            .and_then(|s| table_header_before(self.text, s.start));
        if let Some(name) = name
            && let Some(given) = self.overrides.iter().rev().find(|o| {
                o.split_once('=').is_some_and(|(k, _)| {
                    let k = k.trim();
                    let (head, last) = k.rsplit_once('.').unwrap_or(("", k));
                    last.trim_matches(['"', '\'']) == name
                        && section.as_deref().is_none_or(|s| s == head.trim())
                })
            })
        {
            let key = given.split_once('=').map(|(k, _)| k.trim().to_string());
            let message = match &key {
                Some(k) if crate::plan::is_secret_key(k) => hide_value(&message, given),
                _ => crate::plan::redact_in_text(&message),
            };
            return ScenarioError {
                file: "--set".into(),
                line: None,
                key,
                message: format!("{message} (in `--set {}`)", crate::plan::shown_set(given)),
            };
        }
        let secret_line = name.is_some_and(crate::plan::is_secret_key);
        let snippet = line_text
            .filter(|_| !secret_line)
            .map(|l| format!(" (in `{}`)", crate::plan::redact_in_text(l)))
            .unwrap_or_default();
        let message = if secret_line {
            "the value is not allowed (not shown: a secret)".to_string()
        } else {
            crate::plan::redact_in_text(&message)
        };
        ScenarioError {
            file: self.file.clone(),
            line: e.span().map(|s| self.line_of(&s)),
            key: None,
            message: format!("{message}{snippet}"),
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

    fn time_ns(&self, v: &Spanned<String>, key: &str) -> Result<i64, ScenarioError> {
        let t = humantime::parse_rfc3339_weak(v.get_ref()).map_err(|_| {
            self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is not a UTC time; write RFC 3339, e.g. \"2016-01-01T00:00:00Z\"",
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

    /// Refuses a key that the section's `kind` does not read: another kind's keys are
    /// mistakes, not settings silently ignored. `what` names the kind in the message.
    fn check_kind_keys(
        &self,
        section: &SectionDoc,
        kind: &str,
        what: &str,
        present: Vec<(&'static str, Range<usize>)>,
    ) -> Result<(), ScenarioError> {
        let allowed = section.keys_of(kind);
        for (key, span) in present {
            if key == "kind"
                || allowed.contains(&key)
                || self.dropped_by_kind_override(section.name, key)
            {
                continue;
            }
            let owners = section.kinds_of(key).join(", ");
            let list = if allowed.is_empty() {
                ", which has none".to_string()
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
        let workload = self.workload(&section(raw.workload))?;
        let target = self.target(&section(raw.target))?;
        let load = self.load(&section(raw.load))?;
        let output = self.output(&section(raw.output))?;
        let query = raw
            .query
            .as_ref()
            .map(|q| self.query(q, &workload, &target))
            .transpose()?;
        let mode = match (&raw.mode, &query) {
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
        };
        // mode = "write" in a file with [query] (checked above, so a later query run of
        // the same file works) writes the data set alone: the queries are set aside.
        let query = if mode == RunMode::Write { None } else { query };
        if let (RunMode::Mixed, Some(q)) = (mode, &query)
            && matches!(q.workload, QueryWorkloadPlan::Oltp { .. })
        {
            return Err(self.error(
                raw.mode.as_ref().map(|m| m.span()).as_ref(),
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
        let network = raw
            .network
            .as_ref()
            .map(|n| self.network(n, &target))
            .transpose()?;
        let monitor = raw.monitor.as_ref().map(|m| self.monitor(m)).transpose()?;
        let mut load = load;
        load.measure_storage = monitor.as_ref().is_some_and(|m| m.storage);
        let sweep = raw
            .sweep
            .as_ref()
            .map(|s| self.sweep(s))
            .transpose()?
            .unwrap_or_default();
        Ok(Plan {
            name: raw
                .name
                .map_or_else(|| self.file.clone(), Spanned::into_inner),
            description: raw.description.map(Spanned::into_inner),
            source: self.file.clone(),
            workload,
            target,
            load,
            output,
            network,
            monitor,
            sweep,
            mode,
            query,
        })
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
        let storage = m.storage.as_ref().is_some_and(|s| *s.get_ref());
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

    fn workload(&self, w: &WorkloadSection) -> Result<WorkloadPlan, ScenarioError> {
        let kind = match &w.kind {
            None => "cpu-only",
            Some(k) => self.choice(k, "workload.kind", WORKLOAD_KINDS)?,
        };
        self.check_kind_keys(
            &WORKLOAD,
            kind,
            &format!("workload kind \"{kind}\""),
            w.present(),
        )?;
        let seed = match &w.seed {
            None => 123,
            Some(s) => self.int(s, "workload.seed", 0, i64::MAX)? as u64,
        };
        if kind == "custom" {
            return self.custom(w, seed);
        }
        if kind == "file" {
            let Some(path) = &w.path else {
                return Err(self.error(
                    w.kind.as_ref().map(|k| k.span()).as_ref(),
                    "workload.path",
                    "workload kind \"file\" needs `path`: a line-protocol file (.gz ok), or \"-\" for standard input".into(),
                ));
            };
            if path.get_ref().trim().is_empty() {
                return Err(self.error(
                    Some(&path.span()),
                    "workload.path",
                    "must not be empty".into(),
                ));
            }
            let precision = match &w.precision {
                None => "ns".to_string(),
                Some(p) => self
                    .choice(p, "workload.precision", &["ns", "us", "ms", "s"])?
                    .to_string(),
            };
            return Ok(WorkloadPlan::File {
                path: path.get_ref().clone(),
                precision,
            });
        }
        let scale = match &w.scale {
            None => 100,
            Some(s) => self.int(s, "workload.scale", 1, u32::MAX as i64)? as u32,
        };
        let start_ns = match &w.start {
            None => 1_451_606_400_000_000_000, // 2016-01-01T00:00:00Z, TSBS's default
            Some(s) => self.time_ns(s, "workload.start")?,
        };
        let end_ns = match &w.end {
            None => start_ns.checked_add(86_400_000_000_000).ok_or_else(|| {
                self.error(
                    w.start.as_ref().map(|e| e.span()).as_ref(),
                    "workload.start",
                    "is less than a day before 2262-04-11, the last instant a 64-bit \
                     nanosecond timestamp holds; set workload.end too"
                        .into(),
                )
            })?,
            Some(s) => self.time_ns(s, "workload.end")?,
        };
        if end_ns <= start_ns {
            return Err(self.error(
                w.end.as_ref().map(|e| e.span()).as_ref(),
                "workload.end",
                "must be later than workload.start".into(),
            ));
        }
        let interval_ns = match &w.interval {
            None => 10_000_000_000,
            Some(s) => self.duration_ns(s, "workload.interval", Duration::from_millis(1))?,
        };
        let tsbs = TsbsConfig {
            seed,
            scale,
            start_ns,
            end_ns,
            interval_ns,
        };
        Ok(match kind {
            "cpu-only" => WorkloadPlan::CpuOnly(tsbs),
            "devops" => WorkloadPlan::Devops(tsbs),
            _ => {
                let d = IotOptions::default();
                let ratio = |v: &Option<Spanned<f64>>, key: &str, default: f64| {
                    v.as_ref().map_or(Ok(default), |v| self.ratio(v, key, 1.0))
                };
                WorkloadPlan::Iot(
                    tsbs,
                    IotOptions {
                        missing_field_ratio: ratio(
                            &w.missing_field_ratio,
                            "workload.missing_field_ratio",
                            d.missing_field_ratio,
                        )?,
                        missing_row_ratio: ratio(
                            &w.missing_row_ratio,
                            "workload.missing_row_ratio",
                            d.missing_row_ratio,
                        )?,
                        out_of_order_ratio: ratio(
                            &w.out_of_order_ratio,
                            "workload.out_of_order_ratio",
                            d.out_of_order_ratio,
                        )?,
                        out_of_order_max_steps: w
                            .out_of_order_max_steps
                            .as_ref()
                            .map(|v| self.int(v, "workload.out_of_order_max_steps", 1, 1_000_000))
                            .transpose()?
                            .map_or(d.out_of_order_max_steps, |v| v as u32),
                    },
                )
            }
        })
    }

    fn custom(&self, w: &WorkloadSection, seed: u64) -> Result<WorkloadPlan, ScenarioError> {
        let d = CustomConfig::default();
        let (columns, column_lines) = match &w.columns {
            None => (d.columns, Vec::new()),
            Some(c) => self.column_list(c, "workload.columns", 4096)?,
        };
        let (tags, tag_lines) = match &w.tags {
            None => (d.tags, Vec::new()),
            Some(c) => self.column_list(c, "workload.tags", 128)?,
        };
        let text = |v: &Option<Spanned<String>>, default: String| {
            v.as_ref().map_or(default, |s| s.get_ref().clone())
        };
        let cfg = CustomConfig {
            seed,
            stable: text(&w.stable, d.stable),
            childtable_count: w
                .childtable_count
                .as_ref()
                .map(|v| self.int(v, "workload.childtable_count", 1, u32::MAX as i64))
                .transpose()?
                .map_or(d.childtable_count, |v| v as u32),
            childtable_prefix: text(&w.childtable_prefix, d.childtable_prefix),
            insert_rows: w
                .insert_rows
                .as_ref()
                .map(|v| self.int(v, "workload.insert_rows", 1, i64::MAX))
                .transpose()?
                .map_or(d.insert_rows, |v| v as u64),
            timestamp_step_ns: w
                .timestamp_step
                .as_ref()
                .map(|v| self.duration_ns(v, "workload.timestamp_step", Duration::from_nanos(1)))
                .transpose()?
                .unwrap_or(d.timestamp_step_ns),
            start_timestamp_ns: w
                .start_timestamp
                .as_ref()
                .map(|v| self.time_ns(v, "workload.start_timestamp"))
                .transpose()?
                .unwrap_or(d.start_timestamp_ns),
            interlace_rows: w
                .interlace_rows
                .as_ref()
                .map(|v| self.int(v, "workload.interlace_rows", 0, u32::MAX as i64))
                .transpose()?
                .map_or(d.interlace_rows, |v| v as u32),
            disorder_ratio: w
                .disorder_ratio
                .as_ref()
                .map(|v| self.ratio(v, "workload.disorder_ratio", 100.0))
                .transpose()?
                .unwrap_or(d.disorder_ratio),
            disorder_range_ns: w
                .disorder_range
                .as_ref()
                .map(|v| self.duration_ns(v, "workload.disorder_range", Duration::ZERO))
                .transpose()?
                .unwrap_or(d.disorder_range_ns),
            columns,
            tags,
        };
        Ok(WorkloadPlan::Custom {
            cfg,
            column_lines,
            tag_lines,
        })
    }

    fn column_list(
        &self,
        list: &Spanned<Vec<Spanned<ColumnEntry>>>,
        key: &str,
        max_count: i64,
    ) -> Result<(Vec<ColumnSpec>, Vec<usize>), ScenarioError> {
        if list.get_ref().is_empty() {
            return Err(self.error(
                Some(&list.span()),
                key,
                "must list at least one column".into(),
            ));
        }
        let mut out = Vec::new();
        let mut lines = Vec::new();
        for (i, entry) in list.get_ref().iter().enumerate() {
            let span = entry.span();
            let e = entry.get_ref();
            let k = format!("{key}[{i}]");
            let ty = e.data_type.to_ascii_lowercase();
            const TYPES: &[&str] = &[
                "bool",
                "tinyint",
                "smallint",
                "int",
                "bigint",
                "float",
                "double",
                "varchar",
                "binary",
                "nchar",
                "timestamp",
            ];
            if !TYPES.contains(&ty.as_str()) {
                return Err(self.error(
                    Some(&span),
                    &format!("{k}.type"),
                    format!(
                        "\"{}\" is not a column type; allowed: {}",
                        e.data_type,
                        TYPES.join(", ")
                    ),
                ));
            }
            let is_str = matches!(ty.as_str(), "varchar" | "binary" | "nchar");
            if let Some(len) = e.len
                && (!is_str || !(1..=65_517).contains(&len))
            {
                let message = if is_str {
                    format!("len {len} is out of range; allowed: 1 to 65517")
                } else {
                    format!("len is only allowed for varchar, binary and nchar, not {ty}")
                };
                return Err(self.error(Some(&span), &format!("{k}.len"), message));
            }
            let count = e.count.unwrap_or(1);
            if !(1..=max_count).contains(&count) {
                return Err(self.error(
                    Some(&span),
                    &format!("{k}.count"),
                    format!("value {count} is out of range; allowed: 1 to {max_count}"),
                ));
            }
            if let (Some(lo), Some(hi)) = (e.min, e.max)
                && lo > hi
            {
                return Err(self.error(
                    Some(&span),
                    &format!("{k}.min"),
                    format!("min {lo} is greater than max {hi}"),
                ));
            }
            if let Some(values) = &e.values
                && values.is_empty()
            {
                return Err(self.error(
                    Some(&span),
                    &format!("{k}.values"),
                    "must list at least one value".into(),
                ));
            }
            let len = e.len.map_or(DEFAULT_STRING_LEN, |l| l as u32);
            let data_type = match ty.as_str() {
                "bool" => DataType::Bool,
                "tinyint" => DataType::TinyInt,
                "smallint" => DataType::SmallInt,
                "int" => DataType::Int,
                "bigint" => DataType::BigInt,
                "float" => DataType::Float,
                "double" => DataType::Double,
                "nchar" => DataType::NChar(len),
                "timestamp" => DataType::Timestamp,
                _ => DataType::Varchar(len),
            };
            out.push(ColumnSpec {
                data_type,
                count: count as u32,
                min: e.min,
                max: e.max,
                values: e.values.clone(),
            });
            lines.push(self.line_of(&span));
        }
        Ok((out, lines))
    }

    fn target(&self, t: &TargetSection) -> Result<TargetPlan, ScenarioError> {
        let kind = match &t.kind {
            None => "sqlite",
            Some(k) => self.choice(k, "target.kind", TARGET_KINDS)?,
        };
        let api = match (&t.api, kind) {
            (Some(a), "influx") => self.choice(a, "target.api", &["v1", "v2"])?,
            _ => "v1",
        };
        let (selector, what) = match kind {
            "influx" => (
                format!("influx {api}"),
                format!("target kind \"influx\" with api \"{api}\""),
            ),
            _ => (kind.to_string(), format!("target kind \"{kind}\"")),
        };
        self.check_kind_keys(&TARGET, &selector, &what, t.present())?;
        let url = |default: &str| -> Result<String, ScenarioError> {
            match &t.url {
                None => Ok(default.to_string()),
                Some(u) if u.get_ref().trim().is_empty() => {
                    Err(self.error(Some(&u.span()), "target.url", "must not be empty".into()))
                }
                Some(u) => Ok(u.get_ref().clone()),
            }
        };
        let text = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone());
        match kind {
            "null" => Ok(TargetPlan::Null),
            "postgres" => {
                self.target_postgres(t, url("postgres://postgres@127.0.0.1:5432/postgres")?)
            }
            "mysql" => self.target_mysql(t, url("mysql://root@127.0.0.1:3306/tsload")?),
            #[cfg(feature = "tdengine")]
            "tdengine" => self.target_tdengine(t, url("ws://root:taosdata@127.0.0.1:6041")?),
            #[cfg(not(feature = "tdengine"))]
            "tdengine" => Err(self.error(
                t.kind.as_ref().map(|k| k.span()).as_ref(),
                "target.kind",
                "\"tdengine\" is not in this build of tsload (it was built without the cargo \
                 feature `tdengine`); rebuild with default features, e.g. \
                 `cargo install --path crates/cli`"
                    .into(),
            )),
            "sqlite" => {
                let synchronous = match &t.synchronous {
                    None => "normal".to_string(),
                    Some(s) => self
                        .choice(s, "target.synchronous", &["off", "normal", "full"])?
                        .to_string(),
                };
                let journal_mode = match &t.journal_mode {
                    None => "wal".to_string(),
                    Some(s) => self
                        .choice(s, "target.journal_mode", &["wal", "delete", "memory"])?
                        .to_string(),
                };
                let busy_timeout = match &t.busy_timeout {
                    None => Duration::from_secs(30),
                    Some(s) => {
                        let d = self.duration(s, "target.busy_timeout", Duration::ZERO)?;
                        // SQLite takes its busy timeout in milliseconds as a C int.
                        if d.as_millis() > i32::MAX as u128 {
                            return Err(self.error(
                                Some(&s.span()),
                                "target.busy_timeout",
                                format!(
                                    "\"{}\" is too long; allowed: at most 24 days \
                                     (SQLite counts it in milliseconds in 32 bits)",
                                    s.get_ref()
                                ),
                            ));
                        }
                        d
                    }
                };
                Ok(TargetPlan::Sqlite {
                    url: url("sqlite:./tsload.db")?,
                    drop_existing: t.drop_existing.as_ref().is_some_and(|v| *v.get_ref()),
                    synchronous,
                    journal_mode,
                    busy_timeout,
                    delivery: self.delivery(t, Delivery::ExactlyOnce)?,
                })
            }
            _ => {
                let mut url = url("http://127.0.0.1:8086")?;
                // Schemes are case-insensitive: `HTTPS://h` is https.
                if let Some((scheme, rest)) = url.split_once("://")
                    && scheme.eq_ignore_ascii_case("http") | scheme.eq_ignore_ascii_case("https")
                {
                    url = format!("{}://{rest}", scheme.to_ascii_lowercase());
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(self.error(
                        t.url.as_ref().map(|u| u.span()).as_ref(),
                        "target.url",
                        format!(
                            "\"{url}\" is not an HTTP URL; write e.g. \"http://127.0.0.1:8086\""
                        ),
                    ));
                }
                let precision = match &t.precision {
                    None => "ns".to_string(),
                    Some(p) => self
                        .choice(p, "target.precision", &["ns", "us", "ms", "s"])?
                        .to_string(),
                };
                let timeout = match &t.timeout {
                    None => Duration::from_secs(60),
                    Some(s) => self.duration(s, "target.timeout", Duration::from_millis(1))?,
                };
                let tls = self.tls_options(t, url.starts_with("https://"))?;
                Ok(TargetPlan::Influx(InfluxPlan {
                    tls,
                    connect_to: None,
                    url,
                    api: api.to_string(),
                    db: text(&t.db).unwrap_or_else(|| "benchmark".into()),
                    rp: text(&t.rp),
                    user: text(&t.user),
                    password: self.secret(&t.password, "target.password")?,
                    org: text(&t.org).unwrap_or_else(|| "tsload".into()),
                    bucket: text(&t.bucket).unwrap_or_else(|| "benchmark".into()),
                    token: self.secret(&t.token, "target.token")?,
                    precision,
                    gzip: t.gzip.as_ref().is_some_and(|v| *v.get_ref()),
                    create_database: t.create_database.as_ref().is_none_or(|v| *v.get_ref()),
                    timeout,
                }))
            }
        }
    }

    fn target_postgres(&self, t: &TargetSection, url: String) -> Result<TargetPlan, ScenarioError> {
        use tsload_sink_postgres::{CopyFormat, InsertMethod, Layout, PostgresConfig};
        let url = self.url_with_password(t, url, &["postgres://", "postgresql://"])?;
        let url = self.sql_url_with_tls(t, url, crate::sql_tls::SqlFamily::Postgres)?;
        let mut cfg = PostgresConfig::new(url);
        if let Some(v) = &t.layout {
            cfg.layout = match self.choice(v, "target.layout", &["wide", "tags"])? {
                "tags" => Layout::TagsTable,
                _ => Layout::Wide,
            };
        }
        if let Some(v) = &t.method {
            cfg.method = match self.choice(v, "target.method", &["copy", "insert", "unnest"])? {
                "insert" => InsertMethod::Insert,
                "unnest" => InsertMethod::Unnest,
                _ => InsertMethod::Copy,
            };
        }
        if let Some(v) = &t.copy_format {
            cfg.copy_format = match self.choice(v, "target.copy_format", &["binary", "text"])? {
                "text" => CopyFormat::Text,
                _ => CopyFormat::Binary,
            };
        }
        cfg.hypertable = flag(&t.hypertable, false);
        cfg.chunk_time_interval = t
            .chunk_time_interval
            .as_ref()
            .map(|v| self.duration(v, "target.chunk_time_interval", Duration::from_micros(1)))
            .transpose()?;
        cfg.synchronous_commit = t
            .synchronous_commit
            .as_ref()
            .map(|v| {
                self.choice(
                    v,
                    "target.synchronous_commit",
                    &tsload_sink_postgres::SYNCHRONOUS_COMMIT_VALUES,
                )
                .map(str::to_string)
            })
            .transpose()?;
        cfg.drop_existing = flag(&t.drop_existing, false);
        cfg.create_index = flag(&t.create_index, false);
        if let Some(v) = &t.connect_timeout {
            cfg.connect_timeout =
                self.duration(v, "target.connect_timeout", Duration::from_millis(1))?;
        }
        cfg.delivery = self.delivery(t, Delivery::ExactlyOnce)?;
        // Each run gets a fresh ledger id when its sink is made (targets::run).
        cfg.run_id = 0;
        Ok(TargetPlan::Postgres(cfg))
    }

    /// `target.delivery`, or `default`.
    fn delivery(&self, t: &TargetSection, default: Delivery) -> Result<Delivery, ScenarioError> {
        match &t.delivery {
            None => Ok(default),
            Some(v) => Ok(
                match self.choice(v, "target.delivery", &["exactly_once", "at_least_once"])? {
                    "at_least_once" => Delivery::AtLeastOnce,
                    _ => Delivery::ExactlyOnce,
                },
            ),
        }
    }

    fn target_mysql(&self, t: &TargetSection, url: String) -> Result<TargetPlan, ScenarioError> {
        use tsload_sink_mysql::{MysqlConfig, PrimaryKey, TransactionMode, TsType};
        let url = self.url_with_password(t, url, &["mysql://", "mariadb://"])?;
        let url = self.sql_url_with_tls(t, url, crate::sql_tls::SqlFamily::Mysql)?;
        let mut cfg = MysqlConfig::new(url);
        if let Some(v) = &t.engine {
            cfg.engine = v.get_ref().clone();
        }
        if let Some(v) = &t.primary_key {
            cfg.primary_key = match self.choice(
                v,
                "target.primary_key",
                &["none", "auto_increment", "tags_ts"],
            )? {
                "auto_increment" => PrimaryKey::AutoIncrement,
                "tags_ts" => PrimaryKey::TagsTs,
                _ => PrimaryKey::None,
            };
        }
        if let Some(v) = &t.transaction {
            cfg.transaction =
                match self.choice(v, "target.transaction", &["per_batch", "autocommit"])? {
                    "autocommit" => TransactionMode::Autocommit,
                    _ => TransactionMode::PerBatch,
                };
        }
        if let Some(v) = &t.ts_type {
            cfg.ts_type = match self.choice(v, "target.ts_type", &["datetime", "bigint_ns"])? {
                "bigint_ns" => TsType::BigIntNs,
                _ => TsType::DateTime6,
            };
        }
        cfg.drop_existing = flag(&t.drop_existing, false);
        cfg.create_database = flag(&t.create_database, false);
        if let Some(v) = &t.connect_timeout {
            cfg.connect_timeout = self.duration(v, "target.connect_timeout", Duration::ZERO)?;
        }
        // Autocommit, or an engine without transactions, has no transaction to record a
        // batch in: at least once, unless asked for exactly once, which is then an error.
        let autocommit = cfg.transaction == TransactionMode::Autocommit;
        let no_transactions = tsload_sink_mysql::is_non_transactional_engine(&cfg.engine);
        cfg.delivery = self.delivery(
            t,
            if autocommit || no_transactions {
                Delivery::AtLeastOnce
            } else {
                Delivery::ExactlyOnce
            },
        )?;
        if cfg.delivery == Delivery::ExactlyOnce && (autocommit || no_transactions) {
            let why = if autocommit {
                "transaction = \"autocommit\"".to_string()
            } else {
                format!("engine {:?}", cfg.engine)
            };
            return Err(self.error(
                t.delivery.as_ref().map(|v| v.span()).as_ref(),
                "target.delivery",
                format!(
                    "exactly_once records each batch in its own transaction, which {why} \
                     does not have; allowed with it: at_least_once"
                ),
            ));
        }
        cfg.run_id = 0;
        Ok(TargetPlan::Mysql(cfg))
    }

    #[cfg(feature = "tdengine")]
    fn target_tdengine(&self, t: &TargetSection, url: String) -> Result<TargetPlan, ScenarioError> {
        use tsload_sink_tdengine::{
            CacheModel, ChildTables, InsertMode, Precision, TdengineConfig,
        };
        let url =
            self.url_with_password(t, url, &["ws://", "wss://", "taos+ws://", "taos+wss://"])?;
        let mut cfg = TdengineConfig::new(url);
        if let Some(v) = &t.database {
            cfg.database = v.get_ref().clone();
        }
        let count = |v: &Option<Spanned<i64>>, key: &str, lo: i64, hi: i64| {
            v.as_ref().map(|v| self.int(v, key, lo, hi)).transpose()
        };
        cfg.db_options.vgroups = count(&t.vgroups, "target.vgroups", 1, 1024)?.map(|v| v as u32);
        cfg.db_options.buffer = count(&t.buffer, "target.buffer", 3, 16_384)?.map(|v| v as u32);
        cfg.db_options.wal_level = count(&t.wal_level, "target.wal_level", 0, 2)?.map(|v| v as u8);
        if let Some(v) = &t.cachemodel {
            cfg.db_options.cachemodel = Some(
                match self.choice(
                    v,
                    "target.cachemodel",
                    &["none", "last_row", "last_value", "both"],
                )? {
                    "last_row" => CacheModel::LastRow,
                    "last_value" => CacheModel::LastValue,
                    "both" => CacheModel::Both,
                    _ => CacheModel::None,
                },
            );
        }
        if let Some(v) = &t.precision {
            cfg.db_options.precision =
                match self.choice(v, "target.precision", &["ms", "us", "ns"])? {
                    "us" => Precision::Us,
                    "ns" => Precision::Ns,
                    _ => Precision::Ms,
                };
        }
        if let Some(v) = &t.child_tables {
            cfg.child_tables = match self.choice(v, "target.child_tables", &["prepare", "auto"])? {
                "auto" => ChildTables::Auto,
                _ => ChildTables::Prepare,
            };
        }
        if let Some(n) = count(
            &t.batch_create_tbl_num,
            "target.batch_create_tbl_num",
            1,
            3000,
        )? {
            cfg.batch_create_tbl_num = n as usize;
        }
        if let Some(v) = &t.mode {
            cfg.mode =
                match self.choice(v, "target.mode", &["stmt", "stmt2", "sql", "schemaless"])? {
                    "stmt2" => InsertMode::Stmt2,
                    "sql" => InsertMode::Sql,
                    "schemaless" => InsertMode::Schemaless,
                    _ => InsertMode::Stmt,
                };
        }
        if let Some(n) = count(&t.max_sql_length, "target.max_sql_length", 1024, 64 << 20)? {
            cfg.max_sql_length = n as usize;
        }
        cfg.drop_existing = flag(&t.drop_existing, false);
        if let Some(v) = &t.timeout {
            cfg.request_timeout = self.duration(v, "target.timeout", Duration::from_millis(1))?;
        }
        Ok(TargetPlan::Tdengine(cfg))
    }

    /// `url` with `target.password` (if given) put in as the URL's password, after checking
    /// that the URL has an allowed scheme.
    /// `ca_file` and `insecure_skip_verify`, checked: the CA file must hold certificates,
    /// the two exclude each other, and either needs a TLS URL (`tls_url`).
    fn tls_options(
        &self,
        t: &TargetSection,
        tls_url: bool,
    ) -> Result<tsload_tls::TlsOptions, ScenarioError> {
        let insecure = t.insecure_skip_verify.as_ref().filter(|v| *v.get_ref());
        if let (Some(ca), Some(_)) = (&t.ca_file, insecure) {
            return Err(self.error(
                Some(&ca.span()),
                "target.ca_file",
                "is pointless with insecure_skip_verify = true, which trusts any certificate; \
                 give one of the two"
                    .into(),
            ));
        }
        let ca_file = match &t.ca_file {
            None => None,
            Some(v) => {
                let path = std::path::PathBuf::from(v.get_ref());
                tsload_tls::read_ca_file(&path)
                    .map_err(|e| self.error(Some(&v.span()), "target.ca_file", e.to_string()))?;
                Some(path)
            }
        };
        let set = ca_file.is_some() || insecure.is_some();
        if set && !tls_url {
            let (span, key) = match &t.ca_file {
                Some(v) => (v.span(), "target.ca_file"),
                None => (
                    insecure.map(|v| v.span()).unwrap_or_default(),
                    "target.insecure_skip_verify",
                ),
            };
            return Err(self.error(
                Some(&span),
                key,
                "is a TLS setting, but target.url does not ask for TLS (use https://, or \
                 sslmode/ssl-mode in a SQL URL)"
                    .into(),
            ));
        }
        Ok(tsload_tls::TlsOptions {
            ca_file,
            insecure_skip_verify: insecure.is_some(),
        })
    }

    /// A SQL URL with the TLS keys folded into its query: `ca_file` verifies the server
    /// against that CA and its name, `insecure_skip_verify = true` encrypts without
    /// checking. A URL that sets TLS keys itself keeps them, and then the keys are
    /// refused (one place for one setting).
    fn sql_url_with_tls(
        &self,
        t: &TargetSection,
        url: String,
        family: crate::sql_tls::SqlFamily,
    ) -> Result<String, ScenarioError> {
        let tls = self.tls_options(t, true)?;
        crate::sql_tls::url_with_tls(url, family, &tls).map_err(|e| {
            let (span, key) = match (&t.ca_file, &t.insecure_skip_verify) {
                (Some(v), _) => (Some(v.span()), "target.ca_file"),
                (None, v) => (v.as_ref().map(|v| v.span()), "target.insecure_skip_verify"),
            };
            self.error(
                span.as_ref(),
                key,
                format!(
                    "target.url sets {} already; give TLS settings in one place (the URL, \
                     or these keys)",
                    e.key
                ),
            )
        })
    }

    fn url_with_password(
        &self,
        t: &TargetSection,
        url: String,
        schemes: &[&str],
    ) -> Result<String, ScenarioError> {
        let span = t.url.as_ref().map(|u| u.span());
        let Some(scheme) = schemes.iter().find(|s| url.starts_with(**s)) else {
            return Err(self.error(
                span.as_ref(),
                "target.url",
                format!("the URL must start with {}", schemes.join(" or ")),
            ));
        };
        let Some(password) = self.secret(&t.password, "target.password")? else {
            return Ok(url);
        };
        let rest = &url[scheme.len()..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let Some((user, host)) = authority.split_once('@') else {
            return Err(self.error(
                span.as_ref(),
                "target.url",
                "a `password` needs a user name in the URL, e.g. scheme://USER@host".into(),
            ));
        };
        if user.contains(':') {
            return Err(self.error(
                span.as_ref(),
                "target.password",
                "the URL has a password already; give it in one place".into(),
            ));
        }
        Ok(format!(
            "{scheme}{user}:{}@{host}{}",
            percent_encode(&password),
            &rest[authority_end..]
        ))
    }

    /// A secret: the value itself, or `$NAME` / `${NAME}` to read it from the environment
    /// (so scenario files need not hold passwords).
    fn secret(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<Option<String>, ScenarioError> {
        let Some(v) = v else { return Ok(None) };
        let raw = v.get_ref();
        let name = raw
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .or_else(|| raw.strip_prefix('$'));
        match name {
            None => Ok(Some(raw.clone())),
            Some(name) => std::env::var(name).map(Some).map_err(|_| {
                self.error(
                    Some(&v.span()),
                    key,
                    format!(
                        "environment variable {name} is not set (the value \"{raw}\" reads it)"
                    ),
                )
            }),
        }
    }

    fn load(&self, l: &LoadSection) -> Result<LoadConfig, ScenarioError> {
        let d = LoadConfig::default();
        let workers = l
            .workers
            .as_ref()
            .map(|v| self.int(v, "load.workers", 1, 100_000))
            .transpose()?
            .map_or(d.workers, |v| v as usize);
        let batch = l
            .batch
            .as_ref()
            .map(|v| self.int(v, "load.batch", 1, 10_000_000))
            .transpose()?
            .map_or(d.batch, |v| v as usize);
        let in_flight = l
            .in_flight
            .as_ref()
            .map(|v| self.int(v, "load.in_flight", 1, 1024))
            .transpose()?
            .map_or(d.in_flight, |v| v as usize);
        let mode = match &l.rate {
            None => LoadMode::Closed,
            Some(r) => {
                let rate = *r.get_ref();
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(self.error(
                        Some(&r.span()),
                        "load.rate",
                        format!("value {rate} is out of range; allowed: a positive number of rows per second (omit it for closed loop)"),
                    ));
                }
                LoadMode::Open { rate }
            }
        };
        Ok(LoadConfig {
            workers,
            batch,
            in_flight,
            mode,
            duration: l
                .duration
                .as_ref()
                .map(|v| self.duration(v, "load.duration", Duration::from_millis(1)))
                .transpose()?,
            rows: l
                .rows
                .as_ref()
                .map(|v| self.int(v, "load.rows", 1, i64::MAX))
                .transpose()?
                .map(|v| v as u64),
            report_interval: l
                .report_interval
                .as_ref()
                .map(|v| self.duration(v, "load.report_interval", Duration::from_millis(10)))
                .transpose()?
                .unwrap_or(d.report_interval),
            max_retries: l
                .max_retries
                .as_ref()
                .map(|v| self.int(v, "load.max_retries", 0, 1000))
                .transpose()?
                .map_or(d.max_retries, |v| v as u32),
            retry_backoff: l
                .retry_backoff
                .as_ref()
                .map(|v| self.duration(v, "load.retry_backoff", Duration::ZERO))
                .transpose()?
                .unwrap_or(d.retry_backoff),
            ..d
        })
    }

    fn query(
        &self,
        section: &Spanned<QuerySection>,
        workload: &WorkloadPlan,
        target: &TargetPlan,
    ) -> Result<QueryPlan, ScenarioError> {
        let q = section.get_ref();
        let kind = match &q.kind {
            None => {
                return Err(self.error(
                    Some(&section.span()),
                    "query.kind",
                    format!("missing; allowed: {}", QUERY_KINDS.join(", ")),
                ));
            }
            Some(k) => self.choice(k, "query.kind", QUERY_KINDS)?,
        };
        let oltp_kind: Option<tsload_oltp::OltpKind> = kind.parse().ok();
        self.check_kind_keys(&QUERY, kind, &format!("query kind \"{kind}\""), q.present())?;
        let int = |v: &Option<Spanned<i64>>, key: &str, lo: i64, hi: i64| {
            v.as_ref()
                .map(|v| self.int(v, &format!("query.{key}"), lo, hi))
                .transpose()
        };
        let mode = match &q.rate {
            None => LoadMode::Closed,
            Some(r) => {
                let rate = *r.get_ref();
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(self.error(
                        Some(&r.span()),
                        "query.rate",
                        format!("value {rate} is out of range; allowed: a positive number of requests per second (omit it for closed loop)"),
                    ));
                }
                LoadMode::Open { rate }
            }
        };
        let workers = int(&q.workers, "workers", 1, 100_000)?.map_or(1, |v| v as usize);
        let config = tsload_core::QueryConfig {
            workers,
            mode,
            duration: q
                .duration
                .as_ref()
                .map(|v| self.duration(v, "query.duration", Duration::from_millis(1)))
                .transpose()?,
            requests: int(&q.queries, "queries", 1, i64::MAX)?.map(|v| v as u64),
            report_interval: q
                .report_interval
                .as_ref()
                .map(|v| self.duration(v, "query.report_interval", Duration::from_millis(10)))
                .transpose()?
                .unwrap_or(Duration::from_secs(1)),
            max_errors: int(&q.max_errors, "max_errors", 0, i64::MAX)?.map(|v| v as u64),
            require_rows: flag(&q.require_rows, false),
            loaders: int(&q.loaders, "loaders", 1, 1024)?.map_or(workers.min(16), |v| v as usize),
            timeout: q
                .timeout
                .as_ref()
                .map(|v| self.duration(v, "query.timeout", Duration::from_millis(1)))
                .transpose()?,
            gate: Default::default(),
        };
        let seed = q.seed.as_ref().map(|v| *v.get_ref() as u64);
        let start_after = q
            .start_after
            .as_ref()
            .map(|v| self.duration(v, "query.start_after", Duration::ZERO))
            .transpose()?;
        let kind_span = q.kind.as_ref().map(|k| k.span());
        let workload = match oltp_kind {
            None => {
                let (WorkloadPlan::CpuOnly(t) | WorkloadPlan::Devops(t)) = workload else {
                    return Err(self.error(
                        kind_span.as_ref(),
                        "query.kind",
                        format!(
                            "TSBS queries read the cpu table of the cpu-only or devops data set that [workload] describes; workload kind \"{}\" has none",
                            workload.kind()
                        ),
                    ));
                };
                let influx = matches!(target, TargetPlan::Influx(_));
                // The file's dialect belongs to the file's target: a `--set target.kind`
                // to another kind sets it aside (a `--set query.dialect` still counts).
                let set_aside = self.overridden.iter().any(|o| o == "target.kind")
                    && !self.overridden.iter().any(|o| o == "query.dialect");
                let dialect = match &q.dialect {
                    // The plan names the language a line-protocol target is asked in.
                    None if influx => Some("influxql".to_string()),
                    None => None,
                    Some(_) if set_aside && !influx => None,
                    Some(d) if influx => Some(
                        self.choice(d, "query.dialect", &["influxql", "promql", "questdb"])?
                            .to_string(),
                    ),
                    Some(d) => {
                        return Err(self.error(
                            Some(&d.span()),
                            "query.dialect",
                            format!(
                                "only line-protocol targets (kind \"influx\") choose a query language; target kind \"{}\" has its own",
                                target.kind()
                            ),
                        ));
                    }
                };
                if let Some(tb) = &q.time_bucket
                    && !matches!(target, TargetPlan::Postgres(_))
                {
                    return Err(self.error(
                        Some(&tb.span()),
                        "query.time_bucket",
                        "a setting of PostgreSQL/TimescaleDB targets only".into(),
                    ));
                }
                if matches!(target, TargetPlan::Null) {
                    return Err(self.error(
                        kind_span.as_ref(),
                        "query.kind",
                        "target kind \"null\" stores nothing to query".into(),
                    ));
                }
                let types = match &q.types {
                    None => None,
                    Some(list) => {
                        let mut out = Vec::new();
                        for (i, t) in list.get_ref().iter().enumerate() {
                            let ty: tsload_query::QueryType =
                                t.get_ref().parse().map_err(|_| {
                                    self.error(
                                        Some(&t.span()),
                                        &format!("query.types[{i}]"),
                                        format!(
                                            "\"{}\" is not a TSBS devops query type; allowed: {}",
                                            t.get_ref(),
                                            tsload_query::QueryType::ALL
                                                .iter()
                                                .map(|t| t.name())
                                                .collect::<Vec<_>>()
                                                .join(", ")
                                        ),
                                    )
                                })?;
                            if out.contains(&ty) {
                                return Err(self.error(
                                    Some(&t.span()),
                                    &format!("query.types[{i}]"),
                                    format!("\"{}\" is listed twice", t.get_ref()),
                                ));
                            }
                            out.push(ty);
                        }
                        if out.is_empty() {
                            return Err(self.error(
                                Some(&list.span()),
                                "query.types",
                                "the list is empty; leave it out to run every type".into(),
                            ));
                        }
                        Some(out)
                    }
                };
                QueryWorkloadPlan::Tsbs {
                    data: *t,
                    seed: seed.unwrap_or(t.seed),
                    types,
                    dialect,
                    time_bucket: flag(&q.time_bucket, false),
                    preload: flag(&q.preload, false),
                }
            }
            Some(k) => {
                let dialect = match target {
                    TargetPlan::Postgres(_) => tsload_oltp::Dialect::Postgres,
                    TargetPlan::Mysql(_) => tsload_oltp::Dialect::Mysql,
                    TargetPlan::Sqlite { .. } => tsload_oltp::Dialect::Sqlite,
                    other => {
                        return Err(self.error(
                            kind_span.as_ref(),
                            "query.kind",
                            format!(
                                "the OLTP workloads run on SQL targets (postgres, mysql, sqlite); target kind \"{}\" is not one",
                                other.kind()
                            ),
                        ));
                    }
                };
                let mut c = tsload_oltp::OltpConfig::new(k, dialect);
                let u32_of = |v: &Option<Spanned<i64>>, key: &str, lo: i64, hi: i64, d: u32| {
                    int(v, key, lo, hi).map(|x| x.map_or(d, |x| x as u32))
                };
                c.tables = u32_of(&q.tables, "tables", 1, 100_000, c.tables)?;
                c.table_size = u32_of(
                    &q.table_size,
                    "table_size",
                    1,
                    i32::MAX as i64,
                    c.table_size,
                )?;
                c.range_size = u32_of(
                    &q.range_size,
                    "range_size",
                    1,
                    i32::MAX as i64,
                    c.range_size,
                )?;
                c.point_selects = u32_of(
                    &q.point_selects,
                    "point_selects",
                    0,
                    100_000,
                    c.point_selects,
                )?;
                c.simple_ranges = u32_of(
                    &q.simple_ranges,
                    "simple_ranges",
                    0,
                    100_000,
                    c.simple_ranges,
                )?;
                c.sum_ranges = u32_of(&q.sum_ranges, "sum_ranges", 0, 100_000, c.sum_ranges)?;
                c.order_ranges =
                    u32_of(&q.order_ranges, "order_ranges", 0, 100_000, c.order_ranges)?;
                c.distinct_ranges = u32_of(
                    &q.distinct_ranges,
                    "distinct_ranges",
                    0,
                    100_000,
                    c.distinct_ranges,
                )?;
                c.index_updates = u32_of(
                    &q.index_updates,
                    "index_updates",
                    0,
                    100_000,
                    c.index_updates,
                )?;
                c.non_index_updates = u32_of(
                    &q.non_index_updates,
                    "non_index_updates",
                    0,
                    100_000,
                    c.non_index_updates,
                )?;
                c.delete_inserts = u32_of(
                    &q.delete_inserts,
                    "delete_inserts",
                    0,
                    100_000,
                    c.delete_inserts,
                )?;
                c.load_batch_rows = u32_of(
                    &q.load_batch_rows,
                    "load_batch_rows",
                    1,
                    dialect.max_load_batch_rows() as i64,
                    c.load_batch_rows,
                )?;
                c.range_selects = flag(&q.range_selects, c.range_selects);
                c.skip_trx = flag(&q.skip_trx, c.skip_trx);
                if let Some(r) = &q.rand_type {
                    c.rand_type = self
                        .choice(r, "query.rand_type", &["uniform", "special"])?
                        .parse()
                        .map_err(|e: tsload_oltp::OltpError| {
                            self.error(Some(&r.span()), "query.rand_type", e.to_string())
                        })?;
                }
                if let Some(r) = &q.secondary_index {
                    c.secondary_index = self
                        .choice(
                            r,
                            "query.secondary_index",
                            &["after_load", "before_load", "off"],
                        )?
                        .parse()
                        .map_err(|e: tsload_oltp::OltpError| {
                            self.error(Some(&r.span()), "query.secondary_index", e.to_string())
                        })?;
                }
                if let Some(e) = &q.mysql_storage_engine {
                    c.mysql_storage_engine = e.get_ref().clone();
                }
                c.seed = seed.unwrap_or(0);
                c.validate().map_err(|e| {
                    let key = format!("query.{}", e.option());
                    self.error(Some(&section.span()), &key, e.to_string())
                })?;
                QueryWorkloadPlan::Oltp {
                    config: c,
                    prepare: flag(&q.prepare, true),
                }
            }
        };
        Ok(QueryPlan {
            workload,
            config,
            start_after,
        })
    }

    fn network(
        &self,
        section: &Spanned<NetworkSection>,
        target: &TargetPlan,
    ) -> Result<NetworkPlan, ScenarioError> {
        let n = section.get_ref();
        let backend = match &n.backend {
            None => {
                return Err(self.error(
                    Some(&section.span()),
                    "network.backend",
                    "missing; allowed: \"proxy\" (user space, works everywhere) or \"netem\" (tc qdisc on an interface)".into(),
                ));
            }
            Some(b) => self.choice(b, "network.backend", NETWORK_BACKENDS)?,
        };
        self.check_kind_keys(
            &NETWORK,
            backend,
            &format!("backend \"{backend}\""),
            n.present(),
        )?;
        let delay = n
            .delay
            .as_ref()
            .map(|v| self.duration(v, "network.delay", Duration::ZERO))
            .transpose()?
            .unwrap_or_default();
        let jitter = n
            .jitter
            .as_ref()
            .map(|v| self.duration(v, "network.jitter", Duration::ZERO))
            .transpose()?
            .unwrap_or_default();
        let tc_word = |v: &Spanned<String>, key: &str, word: &str| {
            tsload_netem::Spec::parse(&format!("{word} {}", v.get_ref()))
                .map_err(|e| self.error(Some(&v.span()), key, e.to_string()))
        };
        let rate_bits = match &n.rate {
            None => None,
            Some(v) => match tc_word(v, "network.rate", "rate")? {
                tsload_netem::Spec::Netem(netem) => netem.rate.map(|r| r.bits_per_sec()),
                _ => None,
            },
        };
        if rate_bits == Some(0) {
            let v = n.rate.as_ref().expect("rate was given");
            return Err(self.error(
                Some(&v.span()),
                "network.rate",
                "a rate of 0 would send nothing; leave it out for no limit".into(),
            ));
        }
        let loss = match &n.loss {
            None => None,
            Some(v) => match tc_word(v, "network.loss", "loss")? {
                tsload_netem::Spec::Netem(netem) => netem.loss.map(|c| c.probability.as_percent()),
                _ => None,
            },
        };
        let addressable = !matches!(target, TargetPlan::Null | TargetPlan::Sqlite { .. });
        if !addressable {
            return Err(self.error(
                Some(&section.span()),
                "network.backend",
                format!(
                    "target kind \"{}\" is not reached over the network, so there is nothing to impair; use a server target (influx, postgres, mysql, tdengine)",
                    target.kind()
                ),
            ));
        }
        let (backend, spec, default_probe) = if backend == "proxy" {
            if let Some(host) =
                crate::network::target_url(target).and_then(crate::sql_tls::name_checked_host)
            {
                return Err(self.error(
                    n.backend.as_ref().map(|b| b.span()).as_ref(),
                    "network.backend",
                    crate::network::proxy_refusal(&host, "the proxy's address"),
                ));
            }
            let direction = match &n.direction {
                None => tsload_proxy::Direction::Up,
                Some(d) => match self.choice(d, "network.direction", &["up", "down", "both"])? {
                    "down" => tsload_proxy::Direction::Down,
                    "both" => tsload_proxy::Direction::Both,
                    _ => tsload_proxy::Direction::Up,
                },
            };
            (NetworkBackend::Proxy { direction }, None, ProbeChoice::App)
        } else {
            let dev = n.dev.as_ref().ok_or_else(|| {
                self.error(
                    Some(&section.span()),
                    "network.dev",
                    "missing: the interface to impair, e.g. \"veth0\" (the client's egress toward the target)".into(),
                )
            })?;
            let mut words = format!("delay {}us", delay.as_micros());
            if !jitter.is_zero() {
                words.push_str(&format!(" {}us", jitter.as_micros()));
            }
            if let Some(l) = &n.loss {
                words.push_str(&format!(" loss {}", l.get_ref()));
            }
            if let Some(r) = &n.rate {
                words.push_str(&format!(" rate {}", r.get_ref()));
            }
            let spec = tsload_netem::Spec::parse(&words).map_err(|e| {
                self.error(Some(&section.span()), "network", format!("`{words}`: {e}"))
            })?;
            (
                NetworkBackend::Netem {
                    dev: dev.get_ref().clone(),
                    netns: n.netns.as_ref().map(|v| v.get_ref().clone()),
                    allow_default_route: flag(&n.allow_default_route, false),
                },
                Some(spec),
                ProbeChoice::Tcp,
            )
        };
        let probe = match &n.probe {
            None => default_probe,
            Some(p) => match self.choice(p, "network.probe", &["none", "tcp", "icmp", "app"])? {
                "none" => ProbeChoice::None,
                "tcp" | "icmp" if matches!(backend, NetworkBackend::Proxy { .. }) => {
                    return Err(self.error(
                        Some(&p.span()),
                        "network.probe",
                        format!(
                            "\"{}\" measures the kernel's path, which the proxy's delay is not on (the proxy delays the bytes of a connection, not packets); use \"app\"",
                            p.get_ref()
                        ),
                    ));
                }
                "tcp" => ProbeChoice::Tcp,
                "icmp" => ProbeChoice::Icmp,
                _ => ProbeChoice::App,
            },
        };
        #[cfg(feature = "tdengine")]
        if probe == ProbeChoice::App && matches!(target, TargetPlan::Tdengine(_)) {
            let span = n.probe.as_ref().map_or(section.span(), |p| p.span());
            return Err(self.error(
                Some(&span),
                "network.probe",
                "target kind \"tdengine\" has no application probe here; use \"tcp\" or \"none\""
                    .into(),
            ));
        }
        let probe_count = n
            .probe_count
            .as_ref()
            .map(|v| self.int(v, "network.probe_count", 1, 1_000_000))
            .transpose()?
            .map_or(100, |v| v as u64);
        let probe_path = match &n.probe_path {
            None => "/ping".to_string(),
            Some(p) if p.get_ref().starts_with('/') => p.get_ref().clone(),
            Some(p) => {
                return Err(self.error(
                    Some(&p.span()),
                    "network.probe_path",
                    format!(
                        "\"{}\" must start with /, e.g. \"/ping\" or \"/health\"",
                        p.get_ref()
                    ),
                ));
            }
        };
        Ok(NetworkPlan {
            backend,
            delay,
            jitter,
            loss,
            rate_bits,
            spec,
            probe,
            probe_count,
            probe_path,
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
            let short = SWEEP_SHORT_KEYS.iter().find(|(short, _)| short == key);
            let full_key = match key.as_str() {
                _ if let Some((_, full)) = short => full.to_string(),
                k if SWEEP_SECTIONS
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
        let progress = match &o.progress {
            None => ProgressMode::Auto,
            Some(p) => {
                match self.choice(p, "output.progress", &["auto", "bar", "plain", "none"])? {
                    "bar" => ProgressMode::Bar,
                    "plain" => ProgressMode::Plain,
                    "none" => ProgressMode::None,
                    _ => ProgressMode::Auto,
                }
            }
        };
        Ok(OutputPlan {
            json: o.json.as_ref().map(|p| p.get_ref().into()),
            hlog: o.hlog.as_ref().map(|p| p.get_ref().into()),
            fail_if,
            progress,
            out: Vec::new(),
            metrics_addr: None,
            shard: crate::shard::ShardRun::default(),
            raw_latencies: None,
        })
    }
}

#[cfg(test)]
mod prop;

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ScenarioError {
        parse("s.toml", text, &[]).unwrap_err()
    }

    #[test]
    fn set_errors_never_show_a_secret() {
        let base = "[target]\nkind = \"mysql\"\nurl = \"mysql://root@db/x\"\n";
        // A password of the wrong type: the value is not repeated.
        let e = parse("s.toml", base, &["target.password=123456".into()]).unwrap_err();
        let shown = e.to_string();
        assert!(!shown.contains("123456"), "{shown}");
        assert!(shown.contains("target.password=***"), "{shown}");
        // A URL's password in a --set quoted by another key's error.
        let e = parse(
            "s.toml",
            base,
            &[
                "target.url=\"mysql://root:hunter2@db/x\"".into(),
                "target.nope=1".into(),
            ],
        )
        .unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = parse(
            "s.toml",
            base,
            &[
                "target.url=mysql://root:hunter2@db/x".into(),
                "target.timeout=-5".into(),
            ],
        );
        if let Err(e) = e {
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
        // In the file: the line of a secret key is not quoted.
        let e = err("[target]\nkind = \"mysql\"\npassword = 123456\n");
        assert!(!e.to_string().contains("123456"), "{e}");
    }

    #[test]
    fn a_file_error_is_not_blamed_on_a_set_of_another_section() {
        // `[query] duration` is wrong in the file; `--set load.duration` is fine.
        let text = "mode = \"query\"\n[target]\nkind = \"sqlite\"\n[query]\nkind = \"oltp_point_select\"\nduration = 30\n";
        let e = parse("s.toml", text, &["load.duration=\"10s\"".into()]).unwrap_err();
        assert_eq!(e.file, "s.toml", "{e}");
        assert!(!e.to_string().contains("--set"), "{e}");
    }

    #[test]
    fn quickstart_parses() {
        let plan = load(None, &[]).unwrap();
        assert!(matches!(
            plan.workload,
            WorkloadPlan::CpuOnly(TsbsConfig { scale: 100, .. })
        ));
        assert!(matches!(plan.target, TargetPlan::Sqlite { .. }));
    }

    #[test]
    fn unknown_key_names_file_line_and_allowed_keys() {
        let e = err("[load]\nworkers = 2\nwrokers = 3\n");
        assert_eq!(e.file, "s.toml");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("unknown field `wrokers`"), "{e}");
        assert!(e.message.contains("workers"), "{e}");
    }

    #[test]
    fn wrong_type_names_the_value_and_expected_type() {
        let e = err("[load]\n\nworkers = \"four\"\n");
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.message.contains("\"four\"") && e.message.contains("expected an integer"),
            "{e}"
        );
    }

    #[test]
    fn out_of_range_names_key_value_and_range() {
        let e = err("[load]\nworkers = 0\n");
        assert_eq!(e.line, Some(2));
        assert_eq!(e.key.as_deref(), Some("load.workers"));
        assert!(
            e.message
                .contains("value 0 is out of range; allowed: 1 to 100000"),
            "{e}"
        );
        let shown = e.to_string();
        assert!(
            shown.starts_with("s.toml:2: key `load.workers`:"),
            "{shown}"
        );
    }

    #[test]
    fn bad_choice_lists_allowed_values() {
        let e = err("[workload]\nkind = \"cpu\"\n");
        assert!(
            e.message.contains("cpu-only, devops, iot, custom, file"),
            "{e}"
        );
        let e = err("[target]\nkind = \"oracle\"\n");
        assert!(
            e.message
                .contains("sqlite, influx, postgres, mysql, tdengine, null"),
            "{e}"
        );
    }

    #[test]
    fn key_of_another_workload_kind_is_an_error() {
        let e = err("[workload]\nkind = \"cpu-only\"\nchildtable_count = 5\n");
        assert_eq!(e.line, Some(3));
        assert!(
            e.message
                .contains("not a setting of workload kind \"cpu-only\""),
            "{e}"
        );
    }

    #[test]
    fn bad_duration_and_time() {
        let e = err("[workload]\ninterval = \"10 parsecs\"\n");
        assert!(e.message.contains("is not a duration"), "{e}");
        let e = err("[workload]\nstart = \"yesterday\"\n");
        assert!(e.message.contains("RFC 3339"), "{e}");
    }

    #[test]
    fn durations_that_a_clock_cannot_hold_are_refused_naming_the_key() {
        // Each would overflow an Instant (or SQLite's 32-bit milliseconds) mid-run.
        for (text, key) in [
            ("[load]\nduration = \"300000000000y\"\n", "load.duration"),
            (
                "[load]\nreport_interval = \"101y\"\n",
                "load.report_interval",
            ),
            (
                "[target]\nkind = \"sqlite\"\nbusy_timeout = \"30days\"\n",
                "target.busy_timeout",
            ),
        ] {
            let e = err(text);
            assert_eq!(e.key.as_deref(), Some(key), "{e}");
            assert!(
                e.message.contains("too long") || e.message.contains("100 years"),
                "{e}"
            );
        }
        assert!(parse_duration("100y").is_ok());
        assert!(parse_duration("101y").is_err());
        let e = err("[workload]\nstart = \"2262-04-11T00:00:00Z\"\n");
        assert_eq!(e.key.as_deref(), Some("workload.start"), "{e}");
        assert!(e.message.contains("set workload.end"), "{e}");
    }

    #[test]
    fn tdengine_is_refused_at_validation_by_a_build_without_it() {
        let parsed = parse("s.toml", "[target]\nkind = \"tdengine\"\n", &[]);
        if cfg!(feature = "tdengine") {
            assert!(parsed.is_ok(), "{parsed:?}");
        } else {
            let e = parsed.unwrap_err();
            assert_eq!(
                (e.line, e.key.as_deref()),
                (Some(2), Some("target.kind")),
                "{e}"
            );
            assert!(e.message.contains("feature `tdengine`"), "{e}");
        }
    }

    #[test]
    fn set_takes_bare_words_and_dates_as_strings() {
        let p = parse(
            "s.toml",
            "",
            &[
                "target.kind=null".into(),
                "workload.start=2016-01-02T00:00:00Z".into(),
                "workload.end=2016-01-02T01:00:00Z".into(),
            ],
        )
        .unwrap();
        assert_eq!(p.target, TargetPlan::Null);
        let WorkloadPlan::CpuOnly(c) = &p.workload else {
            panic!("{:?}", p.workload)
        };
        assert_eq!(c.end_ns - c.start_ns, 3_600_000_000_000);
    }

    #[test]
    fn set_errors_quote_the_set_say_integer_and_suggest_the_key() {
        let set = |s: &str| parse("s.toml", "[load]\nworkers = 2\n", &[s.into()]).unwrap_err();
        let e = set("load.workers=abc");
        assert_eq!((e.file.as_str(), e.line), ("--set", None), "{e}");
        assert_eq!(e.key.as_deref(), Some("load.workers"));
        assert!(e.message.contains("expected an integer"), "{e}");
        assert!(e.message.ends_with("(in `--set load.workers=abc`)"), "{e}");
        let e = set("load.wrokers=3");
        assert_eq!(e.file, "--set", "{e}");
        assert!(e.message.contains("did you mean `workers`?"), "{e}");
        let e = set("load.workers=0");
        assert_eq!(
            e.to_string(),
            "--set: key `load.workers`: value 0 is out of range; allowed: 1 to 100000 (in `--set load.workers=0`)"
        );
        // In a file: the line, and the same help.
        let e = err("[load]\nwrokers = 3\n");
        assert_eq!((e.file.as_str(), e.line), ("s.toml", Some(2)));
        assert!(e.message.contains("did you mean `workers`?"), "{e}");
        let e = err("[load]\nbogus_thing = 3\n");
        assert!(!e.message.contains("did you mean"), "no near key: {e}");
        let e = err("[workload]\nstart = 2016-01-01T00:00:00Z\n");
        assert!(
            e.message.contains("must be written as a string, in quotes"),
            "{e}"
        );
    }

    #[test]
    fn mode_write_sets_the_query_section_aside() {
        let text = "mode = \"query\"\n[target]\nkind = \"postgres\"\n[query]\nkind = \"tsbs\"\n";
        let p = parse("s.toml", text, &["mode=write".into()]).unwrap();
        assert_eq!(p.mode, RunMode::Write);
        assert!(p.query.is_none());
        assert!(parse("s.toml", text, &[]).unwrap().query.is_some());
    }

    /// docs/keys.md is the sections' own definitions rendered; when it is not, the test
    /// writes the new rendering (commit it) and fails.
    #[test]
    fn keys_reference_is_rendered_from_the_sections() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/keys.md");
        let rendered = keys_markdown();
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        if on_disk != rendered {
            std::fs::write(path, &rendered).expect("write docs/keys.md");
            panic!("docs/keys.md was not the sections' rendering; rewrote it: review and commit");
        }
    }

    /// serde names every key a section reads when it refuses an unknown one: they are
    /// the keys the definitions list.
    #[test]
    fn the_sections_list_every_key_serde_reads() {
        for section in sections::SECTIONS {
            let text = if section.name.is_empty() {
                "zz_not_a_key = 1\n".to_string()
            } else {
                format!("[{}]\nzz_not_a_key = 1\n", section.name)
            };
            let e = err(&text);
            let mut read: Vec<&str> = e
                .message
                .split_once("expected")
                .map(|(_, rest)| rest.split(['(', ';']).next().unwrap())
                .map(|list| list.split('`').skip(1).step_by(2).collect())
                .unwrap_or_default();
            let mut listed: Vec<&str> = section.keys.iter().map(|k| k.name).collect();
            read.sort_unstable();
            listed.sort_unstable();
            assert_eq!(listed, read, "section [{}]", section.name);
        }
    }

    /// The `--set`s that make a scenario of `kind` of `section` (`None`: the section
    /// has no kinds), complete enough to parse.
    fn scenario_of(section: &str, kind: Option<&str>, key: &str) -> Vec<String> {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match (section, kind) {
            ("workload", Some("file")) => {
                set(&["workload.kind=\"file\"", "workload.path=\"x.lp\""])
            }
            ("workload", Some(k)) => vec![format!("workload.kind=\"{k}\"")],
            ("target", Some("influx v1")) => set(&["target.kind=\"influx\""]),
            ("target", Some("influx v2")) => set(&["target.kind=\"influx\"", "target.api=\"v2\""]),
            ("target", Some(k)) => vec![format!("target.kind=\"{k}\"")],
            ("network", Some("proxy")) => {
                set(&["network.backend=\"proxy\"", "target.kind=\"postgres\""])
            }
            ("network", Some(_)) => set(&[
                "network.backend=\"netem\"",
                "network.dev=\"veth0\"",
                "target.kind=\"postgres\"",
            ]),
            ("query", Some(k)) => {
                let target = match key {
                    "dialect" => "influx",
                    "mysql_storage_engine" => "mysql",
                    _ => "postgres",
                };
                vec![
                    format!("query.kind=\"{k}\""),
                    format!("target.kind=\"{target}\""),
                ]
            }
            ("monitor", _) => set(&["monitor.pid=1"]),
            _ => Vec::new(),
        }
    }

    /// Every default the reference states as a value is the parser's: setting the key to
    /// it gives the same plan as leaving it out, for each kind that reads the key.
    #[test]
    fn stated_defaults_are_the_parsers_defaults() {
        let mut checked = 0;
        for section in sections::SECTIONS {
            for key in section.keys {
                let sections::KeyDefault::Toml(value) = key.default else {
                    continue;
                };
                let kinds: Vec<Option<&str>> = if key.name == "kind" || section.kinds.is_empty() {
                    vec![None]
                } else if key.name == "api" {
                    // `api` picks influx's set of keys: its default is the v1 set.
                    vec![Some("influx v1")]
                } else {
                    section
                        .kinds_of(key.name)
                        .iter()
                        .filter(|k| cfg!(feature = "tdengine") || **k != "tdengine")
                        .map(|k| Some(*k))
                        .collect()
                };
                let dotted = if section.name.is_empty() {
                    key.name.to_string()
                } else {
                    format!("{}.{}", section.name, key.name)
                };
                for kind in kinds {
                    let base = scenario_of(section.name, kind, key.name);
                    let without = parse("s.toml", "", &base).unwrap_or_else(|e| {
                        panic!("{dotted} for {kind:?}: the base scenario: {e}")
                    });
                    let mut with = base.clone();
                    with.push(format!("{dotted}={value}"));
                    let with = parse("s.toml", "", &with)
                        .unwrap_or_else(|e| panic!("{dotted} = {value} for {kind:?}: {e}"));
                    assert_eq!(
                        with, without,
                        "{dotted} = {value} for {kind:?} is not the same as leaving it out"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 80, "only {checked} defaults checked");
    }

    /// The OLTP kinds read sysbench's options as tsload-oltp lists them, plus `prepare`
    /// and `loaders`.
    #[test]
    fn oltp_keys_are_the_oltp_crates_options() {
        for kind in tsload_oltp::OltpKind::ALL {
            let name = kind.to_string();
            let mut from_sections: Vec<&str> = sections::QUERY
                .keys_of(&name)
                .into_iter()
                .filter(|k| !sections::QUERY.keys_of("tsbs").contains(k))
                .filter(|k| !["prepare", "loaders"].contains(k))
                .collect();
            let mut options: Vec<&str> = kind
                .options()
                .iter()
                .copied()
                .filter(|o| *o != "seed")
                .collect();
            from_sections.sort_unstable();
            options.sort_unstable();
            assert_eq!(from_sections, options, "{name}");
        }
    }

    #[test]
    fn the_sweep_short_names_set_their_full_keys() {
        for (short, full) in SWEEP_SHORT_KEYS {
            let text = format!("[sweep]\n{short} = [1, 2]\n");
            let p = parse("s.toml", &text, &[]).unwrap();
            assert_eq!(p.sweep.len(), 1);
            assert_eq!(
                (p.sweep[0].key.as_str(), p.sweep[0].full_key.as_str()),
                (*short, *full)
            );
        }
    }

    #[test]
    fn overrides_apply_and_are_validated() {
        let p = parse(
            "s.toml",
            "[load]\nworkers = 2\n",
            &["load.workers=8".into(), "load.batch=50".into()],
        )
        .unwrap();
        assert_eq!(p.load.workers, 8);
        assert_eq!(p.load.batch, 50);
        let e = parse(
            "s.toml",
            "[load]\nworkers = 2\n",
            &["load.workers=0".into()],
        )
        .unwrap_err();
        assert!(e.message.contains("--set"), "{e}");
        let e = parse("s.toml", "", &["workload.kind=bogus".into()]).unwrap_err();
        assert!(e.message.contains("allowed"), "{e}");
    }

    #[test]
    fn bad_threshold_is_reported_at_its_line() {
        let e = err("[output]\nfail_if = [\"p99<20\"]\n");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("not a duration"), "{e}");
    }

    #[test]
    fn custom_column_errors() {
        let e = err(
            "[workload]\nkind = \"custom\"\ncolumns = [{ type = \"float\", count = 2, min = 5, max = 1 }]\n",
        );
        assert!(e.message.contains("greater than max"), "{e}");
        let e = err("[workload]\nkind = \"custom\"\ncolumns = [{ type = \"blob\" }]\n");
        assert!(e.message.contains("not a column type"), "{e}");
    }

    #[test]
    fn a_kind_override_sets_aside_the_files_settings_of_the_old_kind() {
        let file = "[target]\nkind = \"sqlite\"\nurl = \"sqlite:x.db\"\ndrop_existing = true\n";
        let p = parse("s.toml", file, &["target.kind=\"null\"".into()]).unwrap();
        assert_eq!(p.target, TargetPlan::Null);
        let e = parse(
            "s.toml",
            file,
            &[
                "target.kind=\"null\"".into(),
                "target.url=\"sqlite:y.db\"".into(),
            ],
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("target.url"));
        let e = parse(
            "s.toml",
            "[target]\nkind = \"null\"\ndrop_existing = true\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("target.drop_existing"));
    }

    #[test]
    fn quoted_parts_of_a_set_key_keep_their_dots() {
        assert_eq!(
            key_path("sweep.\"query.workers\"").unwrap(),
            ["sweep", "query.workers"]
        );
        assert_eq!(key_path("load.workers").unwrap(), ["load", "workers"]);
        assert!(key_path("sweep.\"query.workers").is_err());
        let p = parse(
            "s.toml",
            "[sweep]\nworkers = [1]\n",
            &["sweep.\"query.workers\"=[2, 4]".into()],
        )
        .unwrap();
        assert_eq!(p.sweep[1].full_key, "query.workers");
        assert_eq!(p.sweep[1].values.len(), 2);
    }

    #[test]
    fn a_target_kind_override_sets_aside_the_files_query_dialect() {
        let file = "[workload]\nkind = \"cpu-only\"\n[target]\nkind = \"influx\"\n\
                    [query]\nkind = \"tsbs\"\ndialect = \"promql\"\n";
        let p = parse("s.toml", file, &[]).unwrap();
        let dialect = |p: &Plan| match &p.query.as_ref().unwrap().workload {
            QueryWorkloadPlan::Tsbs { dialect, .. } => dialect.clone(),
            QueryWorkloadPlan::Oltp { .. } => panic!("tsbs"),
        };
        assert_eq!(dialect(&p).as_deref(), Some("promql"));
        let to_pg = [
            "target.kind=\"postgres\"".to_string(),
            "target.url=\"postgres://u@h/db\"".to_string(),
        ];
        let p = parse("s.toml", file, &to_pg).unwrap();
        assert_eq!(dialect(&p), None);
        // Given on the command line too, it is still an error for SQL targets.
        let mut sets = to_pg.to_vec();
        sets.push("query.dialect=\"promql\"".into());
        let e = parse("s.toml", file, &sets).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("query.dialect"));
    }

    #[test]
    fn a_password_goes_into_the_url_percent_encoded() {
        let file = "[target]\nkind = \"postgres\"\nurl = \"postgres://bob@h:5432/db\"\npassword = \"p@ss w/rd\"\n";
        let p = parse("s.toml", file, &[]).unwrap();
        let TargetPlan::Postgres(cfg) = &p.target else {
            panic!("{:?}", p.target)
        };
        assert_eq!(cfg.url, "postgres://bob:p%40ss%20w%2Frd@h:5432/db");
        assert!(
            !p.to_json().to_string().contains("p%40ss"),
            "redacted in the plan"
        );
        let twice = "[target]\nkind = \"mysql\"\nurl = \"mysql://bob:x@h/db\"\npassword = \"y\"\n";
        let e = parse("s.toml", twice, &[]).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("target.password"));
        let e = parse(
            "s.toml",
            "[target]\nkind = \"postgres\"\nurl = \"mysql://h/db\"\n",
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("postgres://"), "{e}");
        let e = parse(
            "s.toml",
            "[target]\nkind = \"postgres\"\nmode = \"sql\"\n",
            &[],
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("not a setting of target kind \"postgres\""),
            "{e}"
        );
    }
}
