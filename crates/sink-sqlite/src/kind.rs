//! `target.kind = "sqlite"`: its keys, the pure parse of its section into a
//! [`SqliteConfig`], and the runs it serves (the write sink, the read target).

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tsload_core::Delivery;
use tsload_core::engine::{EngineError, RunOutcome};
use tsload_core::query_engine::QueryOutcome;
use tsload_target::{
    AtLeast, KeyDoc, KeyError, Keys, NonEmpty, QueryRun, Section, Target, TargetKind, Word,
    WriteRun,
};

use crate::{JournalMode, SqliteConfig, SqliteQueryTarget, SqliteSink, Synchronous};

/// The SQLite kind, as registered with the CLI.
pub static KIND: SqliteKind = SqliteKind;

/// `target.kind = "sqlite"`, the embedded default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqliteKind;

/// `target.url` when unset.
pub const DEFAULT_URL: &str = "sqlite:./tsload.db";

/// `target.busy_timeout` when unset.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

tsload_target::keys! {
    /// `[target]` of `kind = "sqlite"`, as written.
    pub struct SqliteKeys {
        /// the database file (`sqlite:./x.db`, `sqlite::memory:`)
        url: NonEmpty = NonEmpty::of(DEFAULT_URL);
        /// the ledger on or off
        delivery: Delivery = Delivery::ExactlyOnce;
        /// drop tsload's tables first
        drop_existing: bool = false;
        /// PRAGMA synchronous
        synchronous: Synchronous = Synchronous::Normal;
        /// PRAGMA journal_mode
        journal_mode: JournalMode = JournalMode::Wal;
        /// wait for a locked database
        busy_timeout: AtLeast<0> = AtLeast(DEFAULT_BUSY_TIMEOUT);
    }
}

impl Word for Synchronous {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("off", Synchronous::Off),
        ("normal", Synchronous::Normal),
        ("full", Synchronous::Full),
    ];
}

impl Word for JournalMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("wal", JournalMode::Wal),
        ("delete", JournalMode::Delete),
        ("memory", JournalMode::Memory),
    ];
}

impl TargetKind for SqliteKind {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["sqlite"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        SqliteKeys::docs()
    }

    fn parse(&self, s: &Section) -> Result<Box<dyn Target>, KeyError> {
        let keys = SqliteKeys::read(s)?;
        // SQLite takes its busy timeout in milliseconds as a C int.
        if keys.busy_timeout.0.as_millis() > i32::MAX as u128 {
            return Err(s.error(
                "busy_timeout",
                format!(
                    "\"{}\" is too long; allowed: at most 24 days (SQLite counts it in \
                     milliseconds in 32 bits)",
                    s.text("busy_timeout")?.unwrap_or_default()
                ),
            ));
        }
        let mut cfg = SqliteConfig::new(keys.url.0.clone());
        cfg.drop_existing = keys.drop_existing;
        cfg.synchronous = keys.synchronous;
        cfg.journal_mode = keys.journal_mode;
        cfg.busy_timeout = keys.busy_timeout.0;
        cfg.delivery = keys.delivery;
        // Each run gets a fresh ledger id when its sink is made (`Target::write`).
        cfg.run_id = 0;
        Ok(Box::new(SqliteTarget { cfg, keys }))
    }
}

/// A parsed `[target]` of kind sqlite: the sink's configuration and the keys it came from.
#[derive(Debug, Clone)]
pub struct SqliteTarget {
    pub cfg: SqliteConfig,
    keys: SqliteKeys,
}

/// Two targets are the same when they configure the sink alike: a key set to what it
/// defaults to is the same as the key left out.
impl PartialEq for SqliteTarget {
    fn eq(&self, other: &Self) -> bool {
        self.cfg == other.cfg
    }
}

impl Target for SqliteTarget {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn settings(&self) -> serde_json::Value {
        tsload_target::settings_of(&KIND, &self.keys, Some(&self.cfg.url))
    }

    fn drop_existing(&self) -> Option<bool> {
        Some(self.cfg.drop_existing)
    }

    fn set_drop_existing(&mut self, on: bool) {
        self.cfg.drop_existing = on;
        self.keys.drop_existing = on;
    }

    fn has_ledger(&self) -> bool {
        self.cfg.delivery == Delivery::ExactlyOnce
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        let mut cfg = self.cfg.clone();
        cfg.run_id = run.run_id;
        Box::pin(run.into_engine(SqliteSink::new(cfg)))
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for SqliteTarget {
    fn tsbs_dialect(
        &self,
        _language: Option<&str>,
        _time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String> {
        Ok(tsload_query::Dialect::new(crate::render::SqliteSql))
    }

    fn oltp_dialect(&self) -> Option<tsload_oltp::Dialect> {
        Some(tsload_oltp::Dialect::Sqlite)
    }

    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async move {
            let t = SqliteQueryTarget::new(&self.cfg).map_err(EngineError::Prepare)?;
            run.into_engine(t).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(pairs: &[(&str, toml::Value)]) -> Section {
        Section::of_pairs("target", pairs)
    }

    #[test]
    fn an_empty_section_gets_the_documented_defaults() {
        let t = KIND.parse(&section(&[])).unwrap();
        let v = t.settings();
        assert_eq!(v["url"], DEFAULT_URL);
        assert_eq!(v["synchronous"], "normal");
        assert_eq!(v["journal_mode"], "wal");
        assert_eq!(v["busy_timeout"], "30s");
        assert_eq!(v["delivery"], "exactly_once");
        assert!(t.has_ledger());
        // Each documented TOML default means the same as leaving the key out.
        for key in SqliteKeys::docs() {
            let tsload_target::KeyDefault::Toml(text) = key.default else {
                continue;
            };
            let value: toml::Value =
                toml::from_str::<toml::Table>(&format!("v = {text}")).unwrap()["v"].clone();
            let with = KIND.parse(&section(&[(key.name, value)])).unwrap();
            assert!(with.eq_dyn(t.as_ref()), "{}: {with:?} vs {t:?}", key.name);
        }
    }

    #[test]
    fn each_key_refuses_a_bad_value_naming_itself() {
        for (key, value, says) in [
            (
                "synchronous",
                toml::Value::from("sometimes"),
                "allowed: off, normal, full",
            ),
            (
                "journal_mode",
                "wal2".into(),
                "allowed: wal, delete, memory",
            ),
            ("busy_timeout", "forever".into(), "not a duration"),
            ("busy_timeout", "30d".into(), "at most 24 days"),
            (
                "delivery",
                "twice".into(),
                "allowed: exactly_once, at_least_once",
            ),
            ("drop_existing", "yes".into(), "true or false"),
            ("url", "".into(), "must not be empty"),
        ] {
            let e = KIND.parse(&section(&[(key, value)])).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"));
            assert!(e.message.contains(says), "{key}: {}", e.message);
        }
    }
}
