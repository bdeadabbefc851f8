//! Scenario files: TOML in, a validated [`Plan`] out. Every error names the file, the line,
//! the key, the bad value and what is allowed; `--set key=value` overrides are applied to the
//! document before it is read, so they are checked exactly like the file's own keys.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use toml::Spanned;
use tsload_core::engine::LoadConfig;
use tsload_target::Registry;

use self::sections::ScenarioFile;
use crate::plan::{Plan, QueryPlan, QueryWorkloadPlan, RunMode};

pub mod import;
mod network;
pub mod plan;
mod query;
mod read;
pub mod sections;
mod sections_small;
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
}

#[cfg(test)]
mod prop;

#[cfg(test)]
mod tests;
