//! `tsload import-taosbenchmark FILE.json`: a taosBenchmark `insert` JSON file turned into
//! the equivalent tsload scenario (custom workload, TDengine target), with a note for every
//! setting that does not carry over. Pure: JSON text in, TOML text and notes out.

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

/// What an import made: the scenario, and what the user should know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub scenario: String,
    /// Settings not carried over, or carried with a change, one line each.
    pub notes: Vec<String>,
}

/// Keys that change nothing in a tsload run (client plumbing, output files, prompts).
const IGNORED: &[&str] = &[
    "filetype",
    "cfgdir",
    "connection_pool_size",
    "create_table_thread_count",
    "result_file",
    "confirm_parameter_prompt",
    "prepared_rand",
    "chinese",
    "escape_character",
    "non_stop_mode",
    "line_protocol",
    "data_source",
    "keep_trying",
    "trying_interval",
    "test_log",
];

/// Converts the JSON text of a taosBenchmark insert file. `Err` says which key holds what
/// tsload cannot do.
pub fn taosbenchmark(json: &str) -> Result<Imported, String> {
    let root: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let root = root.as_object().ok_or("the file is not a JSON object")?;
    let src = Source::of(root)?;
    let mut notes = Vec::new();
    let mut doc = DocumentMut::new();
    doc["name"] = value(format!("taosbenchmark-{}", src.name));
    doc["description"] = value("imported from a taosBenchmark insert file");
    doc["workload"] = Item::Table(src.workload(&mut notes)?);
    doc["target"] = Item::Table(src.target(&mut notes)?);
    doc["load"] = Item::Table(src.load()?);
    src.not_carried(&mut notes);
    Ok(Imported {
        scenario: doc.to_string(),
        notes,
    })
}

/// The parts of an insert file a scenario is made of: its one database and super table.
struct Source<'a> {
    root: &'a serde_json::Map<String, Value>,
    dbinfo: Option<&'a serde_json::Map<String, Value>>,
    stable: &'a serde_json::Map<String, Value>,
    /// The database's name (`test` when the file names none).
    name: &'a str,
    /// `dbinfo.precision`: `ms`, `us` or `ns`, and its unit in nanoseconds.
    precision: &'a str,
    unit_ns: i64,
}

/// A whole number, given as a number or a string.
fn int(v: &Value, key: &str) -> Result<i64, String> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| format!("`{key}`: {v} is not a whole number"))
}

/// A number, given as a number or a string.
fn number(v: &Value, key: &str) -> Result<f64, String> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| format!("`{key}`: {v} is not a number"))
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

impl<'a> Source<'a> {
    /// The file's one database and one super table (an insert file), and its precision.
    fn of(root: &'a serde_json::Map<String, Value>) -> Result<Source<'a>, String> {
        match root.get("filetype").and_then(Value::as_str) {
            Some("insert") | None => {}
            Some(other) => {
                return Err(format!(
                    "filetype \"{other}\": only \"insert\" files describe a write load"
                ));
            }
        }
        let databases = root
            .get("databases")
            .and_then(Value::as_array)
            .ok_or("`databases` is missing or not an array")?;
        let [database] = databases.as_slice() else {
            return Err(format!(
                "`databases` has {} entries; a tsload scenario writes one (make one file per database)",
                databases.len()
            ));
        };
        let dbinfo = database.get("dbinfo").and_then(Value::as_object);
        let stables = database
            .get("super_tables")
            .and_then(Value::as_array)
            .ok_or("`databases[0].super_tables` is missing or not an array")?;
        let [stable] = stables.as_slice() else {
            return Err(format!(
                "`databases[0].super_tables` has {} entries; tsload's custom workload is one super \
                 table (make one file per super table)",
                stables.len()
            ));
        };
        let stable = stable
            .as_object()
            .ok_or("`super_tables[0]` is not an object")?;
        let precision = dbinfo
            .and_then(|d| d.get("precision"))
            .and_then(Value::as_str)
            .unwrap_or("ms");
        let unit_ns: i64 = match precision {
            "ms" => 1_000_000,
            "us" => 1_000,
            "ns" => 1,
            other => {
                return Err(format!("dbinfo.precision \"{other}\": allowed ms, us, ns"));
            }
        };
        let name = dbinfo
            .and_then(|d| d.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("test");
        Ok(Source {
            root,
            dbinfo,
            stable,
            name,
            precision,
            unit_ns,
        })
    }

    /// `units` of the database's precision as a duration's text.
    fn duration_of(&self, units: i64) -> String {
        let ns = units.saturating_mul(self.unit_ns);
        humantime::format_duration(std::time::Duration::from_nanos(ns.max(0) as u64)).to_string()
    }

    /// `[workload]`: the custom kind from the super table.
    fn workload(&self, notes: &mut Vec<String>) -> Result<Table, String> {
        let (root, stable) = (self.root, self.stable);
        let mut w = Table::new();
        w["kind"] = value("custom");
        w["seed"] = value(123);
        if let Some(v) = stable.get("name").and_then(text) {
            w["stable"] = value(v);
        }
        for key in ["childtable_count", "insert_rows"] {
            if let Some(v) = stable.get(key) {
                w[key] = value(int(v, key)?);
            }
        }
        if let Some(v) = stable.get("childtable_prefix").and_then(text) {
            w["childtable_prefix"] = value(v);
        }
        if let Some(v) = stable.get("timestamp_step") {
            w["timestamp_step"] = value(self.duration_of(int(v, "timestamp_step")?));
        }
        match stable.get("start_timestamp").and_then(Value::as_str) {
            None => {}
            Some(s) if s.eq_ignore_ascii_case("now") => notes.push(
                "start_timestamp \"now\": tsload starts at a fixed time, so that every run writes the \
                 same data; kept its default (set workload.start_timestamp)"
                    .into(),
            ),
            Some(s) => {
                w["start_timestamp"] = value(rfc3339(s)?);
                if !has_zone(s) {
                    notes.push(format!(
                        "start_timestamp \"{s}\": taken as UTC (taosBenchmark reads it in the \
                         client's time zone; add +HH:MM to say which)"
                    ));
                }
            }
        }
        // The super table's interlace_rows wins over the file's, as in taosBenchmark.
        let interlace = stable
            .get("interlace_rows")
            .filter(|v| int(v, "interlace_rows").is_ok_and(|n| n > 0))
            .or_else(|| root.get("interlace_rows"));
        if let Some(v) = interlace {
            w["interlace_rows"] = value(int(v, "interlace_rows")?);
        }
        if let Some(v) = stable.get("disorder_ratio") {
            w["disorder_ratio"] = value(number(v, "disorder_ratio")?);
        }
        if let Some(v) = stable.get("disorder_range") {
            w["disorder_range"] = value(self.duration_of(int(v, "disorder_range")?));
        }
        for (key, list) in [("columns", "columns"), ("tags", "tags")] {
            if let Some(v) = stable.get(key) {
                let (columns, names) = column_list(v, list)?;
                if names {
                    notes.push(format!(
                        "{list}: names are not carried; tsload names columns c0, c1, ... and tags \
                         t0, t1, ... (after tbname)"
                    ));
                }
                w[key] = Item::Value(toml_edit::Value::Array(columns));
            }
        }
        Ok(w)
    }

    /// `[target]`: TDengine through taosAdapter, with the database's settings.
    fn target(&self, notes: &mut Vec<String>) -> Result<Table, String> {
        let (root, stable, name) = (self.root, self.stable, self.name);
        let mut t = Table::new();
        t["kind"] = value("tdengine");
        let host = root
            .get("host")
            .and_then(Value::as_str)
            .unwrap_or("127.0.0.1");
        let user = root.get("user").and_then(Value::as_str).unwrap_or("root");
        t["url"] = value(format!("ws://{user}@{host}:6041"));
        if root.get("port").is_some() {
            notes.push(format!(
                "port {}: tsload speaks to taosAdapter's WebSocket endpoint, written as port 6041",
                root["port"]
            ));
        }
        if root.get("password").is_some() {
            t["password"] = value("$TAOS_PASSWORD");
            notes.push(
                "password: not copied into the scenario; export TAOS_PASSWORD before the run"
                    .into(),
            );
        }
        // TDengine folds unquoted names to lower case; tsload takes them so written.
        let database = name.to_ascii_lowercase();
        if database != name {
            notes.push(format!(
                "dbinfo.name {name:?}: written as {database:?} (TDengine folds names to lower case)"
            ));
        }
        t["database"] = value(database);
        self.database_settings(&mut t, notes)?;
        let auto_create = stable
            .get("auto_create_table")
            .and_then(Value::as_str)
            .is_some_and(|s| s == "yes");
        t["child_tables"] = value(if auto_create { "auto" } else { "prepare" });
        if !auto_create
            && stable
                .get("child_table_exists")
                .and_then(Value::as_str)
                .is_some_and(|s| s.eq_ignore_ascii_case("yes"))
        {
            notes.push(
                "child_table_exists \"yes\": tsload creates the child tables that are missing \
                 (IF NOT EXISTS) and writes into the existing ones"
                    .into(),
            );
        }
        if let Some(v) = stable.get("batch_create_tbl_num") {
            let n = int(v, "batch_create_tbl_num")?.clamp(1, 3000);
            t["batch_create_tbl_num"] = value(n);
        }
        let mode = match stable
            .get("insert_mode")
            .and_then(Value::as_str)
            .unwrap_or("taosc")
        {
            "taosc" | "rest" => "sql",
            "stmt" => "stmt",
            "stmt2" => {
                notes.push(
                    "insert_mode \"stmt2\": the taos crate has no STMT2 API; written as \"stmt\" \
                     (parameter binding too)"
                        .into(),
                );
                "stmt"
            }
            "sml" | "sml-rest" => "schemaless",
            other => {
                return Err(format!(
                    "super_tables[0].insert_mode \"{other}\": allowed taosc, rest, stmt, stmt2, sml"
                ));
            }
        };
        t["mode"] = value(mode);
        Ok(t)
    }

    /// The target's database settings from `dbinfo`: drop, precision, vgroups, buffer,
    /// WAL level, cache model; a note for each other key.
    fn database_settings(&self, t: &mut Table, notes: &mut Vec<String>) -> Result<(), String> {
        let Some(d) = self.dbinfo else {
            return Ok(());
        };
        let precision = self.precision;

        if d.get("drop")
            .and_then(Value::as_str)
            .is_some_and(|s| s == "yes")
        {
            t["drop_existing"] = value(true);
        }
        t["precision"] = value(precision);
        for key in ["vgroups", "buffer", "wal_level"] {
            if let Some(v) = d.get(key) {
                t[key] = value(int(v, &format!("dbinfo.{key}"))?);
            }
        }
        if let Some(v) = d.get("cachemodel").and_then(Value::as_str) {
            t["cachemodel"] = value(v.trim_matches('\'').to_string());
        }
        for key in d.keys() {
            if ![
                "name",
                "drop",
                "precision",
                "vgroups",
                "buffer",
                "wal_level",
                "cachemodel",
            ]
            .contains(&key.as_str())
            {
                notes.push(format!(
                    "dbinfo.{key}: not a tsload setting, left to the server's default"
                ));
            }
        }
        Ok(())
    }

    /// `[load]`: the file's threads and rows per request.
    fn load(&self) -> Result<Table, String> {
        let root = self.root;
        let mut l = Table::new();
        if let Some(v) = root.get("thread_count") {
            l["workers"] = value(int(v, "thread_count")?.max(1));
        }
        if let Some(v) = root.get("num_of_records_per_req") {
            l["batch"] = value(int(v, "num_of_records_per_req")?.max(1));
        }
        Ok(l)
    }

    /// Notes for what the file sets that the scenario does not carry.
    fn not_carried(&self, notes: &mut Vec<String>) {
        let (root, stable) = (self.root, self.stable);
        for key in root.keys() {
            let known = [
                "host",
                "port",
                "user",
                "password",
                "thread_count",
                "num_of_records_per_req",
                "interlace_rows",
                "insert_interval",
                "databases",
            ];
            if !known.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
                notes.push(format!("{key}: not carried over"));
            }
        }
        for key in stable.keys() {
            let carried = [
                "name",
                "childtable_count",
                "childtable_prefix",
                "insert_rows",
                "timestamp_step",
                "start_timestamp",
                "interlace_rows",
                "disorder_ratio",
                "disorder_range",
                "columns",
                "tags",
                "auto_create_table",
                "child_table_exists",
                "batch_create_tbl_num",
                "insert_mode",
            ];
            if carried.contains(&key.as_str()) || IGNORED.contains(&key.as_str()) {
                continue;
            }
            let v = &stable[key];
            let unset = v.is_null()
                || v.as_i64() == Some(0)
                || v.as_str().is_some_and(|s| s.is_empty() || s == "no");
            if !unset {
                notes.push(format!("super_tables[0].{key} = {v}: not carried over"));
            }
        }
        if let Some(source) = stable.get("data_source").and_then(Value::as_str)
            && source != "rand"
        {
            notes.push(format!(
                "data_source \"{source}\": tsload generates random values; sample files are not read"
            ));
        }
        if let Some(v) = root.get("insert_interval").and_then(Value::as_i64)
            && v > 0
        {
            notes.push(format!(
                "insert_interval {v} ms: use load.rate for a paced (open-loop) run instead"
            ));
        }
    }
}

/// taosBenchmark's column list as tsload's inline tables; whether any had a `name`.
fn column_list(v: &Value, list: &str) -> Result<(Array, bool), String> {
    let items = v
        .as_array()
        .ok_or_else(|| format!("`{list}` is not an array"))?;
    let mut out = Array::new();
    let mut named = false;
    for (i, c) in items.iter().enumerate() {
        let at = |field: &str| format!("{list}[{i}].{field}");
        let c = c
            .as_object()
            .ok_or_else(|| format!("`{list}[{i}]` is not an object"))?;
        let ty = c
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("`{}` is missing", at("type")))?
            .to_ascii_lowercase();
        let ty = match ty.as_str() {
            "bool" | "tinyint" | "smallint" | "int" | "bigint" | "float" | "double" | "varchar"
            | "binary" | "nchar" | "timestamp" => ty,
            other => {
                return Err(format!(
                    "`{}` \"{other}\": tsload's custom workload has bool, tinyint, smallint, \
                     int, bigint, float, double, varchar/binary, nchar, timestamp",
                    at("type")
                ));
            }
        };
        let mut t = InlineTable::new();
        t.insert("type", ty.into());
        for key in ["len", "count"] {
            if let Some(n) = c.get(key).and_then(Value::as_i64) {
                t.insert(key, n.into());
            }
        }
        for key in ["min", "max"] {
            match c.get(key) {
                Some(v) if v.is_i64() => {
                    t.insert(key, v.as_i64().unwrap_or_default().into());
                }
                Some(v) if v.is_f64() => {
                    t.insert(key, v.as_f64().unwrap_or_default().into());
                }
                _ => {}
            }
        }
        if let Some(values) = c.get("values").and_then(Value::as_array) {
            let mut list = Array::new();
            for v in values {
                list.push(match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            }
            t.insert("values", toml_edit::Value::Array(list));
        }
        named |= c.contains_key("name");
        out.push(toml_edit::Value::InlineTable(t));
    }
    Ok((out, named))
}

/// The UTC offset in seconds a timestamp text ends in (`+HH:MM`, `-HHMM`), with the text
/// before it; `None` without one.
fn split_offset(t: &str) -> Option<(&str, i64)> {
    let digits = |d: &str| d.len() == 2 && d.bytes().all(|b| b.is_ascii_digit());
    for len in [6, 5] {
        let Some(at) = t.len().checked_sub(len) else {
            continue;
        };
        // Past the date's own dashes: YYYY-MM-DD is 10 characters.
        if at < 10 || !t.is_char_boundary(at) {
            continue;
        }
        let (head, zone) = t.split_at(at);
        if !zone.is_ascii() {
            continue;
        }
        let sign = match zone.as_bytes()[0] {
            b'+' => 1,
            b'-' => -1,
            _ => continue,
        };
        let (h, m) = if len == 6 {
            match zone[1..].split_once(':') {
                Some((h, m)) => (h, m),
                None => continue,
            }
        } else {
            (&zone[1..3], &zone[3..])
        };
        if digits(h) && digits(m) {
            let (h, m) = (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?);
            return (h < 24 && m < 60).then_some((head, sign * (h * 3600 + m * 60)));
        }
    }
    None
}

/// Whether a timestamp text names its zone (`Z` or an offset).
fn has_zone(s: &str) -> bool {
    let t = s.trim();
    t.ends_with(['Z', 'z']) || split_offset(t).is_some()
}

/// taosBenchmark's `"2020-10-01 00:00:00.000"`, `"2020-10-01"` or
/// `"2020-10-01 08:00:00+08:00"` as RFC 3339 in UTC (a text without a zone is taken as
/// UTC).
fn rfc3339(s: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "start_timestamp \"{s}\": expected \"YYYY-MM-DD[ HH:MM:SS[.fff]][+HH:MM]\" or \
             \"now\""
        )
    };
    let trimmed = s.trim();
    let t = if trimmed.len() == 10 {
        format!("{trimmed}T00:00:00")
    } else {
        trimmed.replacen(' ', "T", 1)
    };
    let Some((local, offset)) = split_offset(&t) else {
        let t = if t.ends_with(['Z', 'z']) {
            t
        } else {
            format!("{t}Z")
        };
        humantime::parse_rfc3339_weak(&t).map_err(|_| bad())?;
        return Ok(t);
    };
    let local = if local.len() == 10 {
        format!("{local}T00:00:00")
    } else {
        local.to_string()
    };
    let at = humantime::parse_rfc3339_weak(&local).map_err(|_| bad())?;
    let shift = std::time::Duration::from_secs(offset.unsigned_abs());
    let utc = if offset >= 0 {
        at.checked_sub(shift)
    } else {
        at.checked_add(shift)
    }
    .ok_or_else(bad)?;
    // humantime formats 1970 to 9999 only: it panics before the epoch, and its Display
    // fails after 9999 (a panic in `to_string`).
    let year_10000 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(253_402_300_800);
    let outside = |side: &str| {
        format!(
            "start_timestamp \"{s}\": {side} in UTC; allowed: 1970-01-01T00:00:00Z to \
             9999-12-31T23:59:59.999Z"
        )
    };
    if utc < std::time::UNIX_EPOCH {
        return Err(outside("before 1970-01-01T00:00:00Z"));
    }
    if utc >= year_10000 {
        return Err(outside("after 9999-12-31T23:59:59.999Z"));
    }
    Ok(humantime::format_rfc3339_millis(utc).to_string())
}

#[cfg(test)]
mod prop;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_timestamps_become_rfc3339() {
        assert_eq!(
            rfc3339("2020-10-01 00:00:00.000").unwrap(),
            "2020-10-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339("2017-07-14 10:40:00").unwrap(),
            "2017-07-14T10:40:00Z"
        );
        assert_eq!(rfc3339("2020-10-01").unwrap(), "2020-10-01T00:00:00Z");
        assert!(rfc3339("yesterday").is_err());
        assert!(rfc3339("2020-13-01").is_err());
        assert_eq!(
            rfc3339("2020-10-01 08:00:00+08:00").unwrap(),
            "2020-10-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339("2020-09-30 19:30:00.5-0430").unwrap(),
            "2020-10-01T00:00:00.500Z"
        );
        assert!(rfc3339("2020-10-01 00:00:00+25:00").is_err());
        assert_eq!(
            rfc3339("2020-10-01+08:00").unwrap(),
            "2020-09-30T16:00:00.000Z"
        );
        // Not a panic on a character boundary.
        assert!(rfc3339("2020-10-01 00:00:00+1é2").is_err());
        assert!(rfc3339("2020-10-01 00:00:0é").is_err());
        assert!(has_zone("2020-10-01 08:00:00+08:00"));
        assert!(has_zone("2020-10-01T00:00:00Z"));
        assert!(!has_zone("2020-10-01"));
        assert!(!has_zone("2020-10-01 00:00:00.000"));
    }

    #[test]
    fn start_timestamps_outside_1970_to_9999_in_utc_are_refused_not_a_panic() {
        // Offsets that move a time in range out of it: humantime panics formatting a time
        // before the epoch, and its Display fails after 9999 (a panic in to_string).
        assert_eq!(
            rfc3339("1970-01-01 00:00:00+00:01").unwrap_err(),
            "start_timestamp \"1970-01-01 00:00:00+00:01\": before 1970-01-01T00:00:00Z in \
             UTC; allowed: 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339("9999-12-31 23:59:59-00:01").unwrap_err(),
            "start_timestamp \"9999-12-31 23:59:59-00:01\": after 9999-12-31T23:59:59.999Z in \
             UTC; allowed: 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339("1970-01-01 00:01:00+00:01").unwrap(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339("9999-12-31 23:58:59.999-00:01").unwrap(),
            "9999-12-31T23:59:59.999Z"
        );
        let json =
            r#"{"databases": [{"super_tables": [{"start_timestamp": "1970-01-01+00:01"}]}]}"#;
        assert!(
            taosbenchmark(json)
                .unwrap_err()
                .contains("before 1970-01-01T00:00:00Z")
        );
    }

    #[test]
    fn a_database_name_is_folded_to_lower_case_with_a_note() {
        let json = r#"{"databases": [{"dbinfo": {"name": "Test_DB"}, "super_tables": [{}]}]}"#;
        let imported = taosbenchmark(json).unwrap();
        assert!(
            imported.scenario.contains("database = \"test_db\""),
            "{}",
            imported.scenario
        );
        assert!(
            imported
                .notes
                .iter()
                .any(|n| n.contains("\"Test_DB\"") && n.contains("\"test_db\"")),
            "{:?}",
            imported.notes
        );
        let lower = r#"{"databases": [{"dbinfo": {"name": "test"}, "super_tables": [{}]}]}"#;
        assert!(
            !taosbenchmark(lower)
                .unwrap()
                .notes
                .iter()
                .any(|n| n.contains("lower case"))
        );
    }

    #[test]
    fn what_cannot_be_imported_is_named() {
        let e = taosbenchmark("{\"filetype\": \"query\"}").unwrap_err();
        assert!(e.contains("only \"insert\""), "{e}");
        let e = taosbenchmark("{\"databases\": []}").unwrap_err();
        assert!(e.contains("has 0 entries"), "{e}");
        let two = r#"{"databases": [{"super_tables": [{}, {}]}]}"#;
        assert!(taosbenchmark(two).unwrap_err().contains("one super table"));
        let bad = r#"{"databases": [{"super_tables": [{"columns": [{"type": "JSON"}]}]}]}"#;
        let e = taosbenchmark(bad).unwrap_err();
        assert!(
            e.contains("columns[0].type") && e.contains("\"json\""),
            "{e}"
        );
        assert!(taosbenchmark("[1,").unwrap_err().starts_with("not JSON"));
    }
}
