//! `[target]`: where the rows go, each kind's keys checked and defaulted, TLS and secrets
//! included.

use std::time::Duration;

use toml::Spanned;

use super::sections::{TARGET, TARGET_KINDS, TargetSection};
use super::{Ctx, ScenarioError, flag, percent_encode};
use crate::plan::{InfluxPlan, TargetPlan};

impl Ctx<'_> {
    pub(super) fn target(&self, t: &TargetSection) -> Result<TargetPlan, ScenarioError> {
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
        if let Some(registered) = crate::targets::kind(kind) {
            return self.registered_target(registered, t);
        }
        match kind {
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

    /// A kind defined in its own crate: its section's values (the keys it reads) parsed
    /// by the kind itself; its error located here, by key.
    fn registered_target(
        &self,
        kind: &dyn tsload_target::TargetKind,
        t: &TargetSection,
    ) -> Result<TargetPlan, ScenarioError> {
        let table = self
            .text
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut doc| match doc.remove("target") {
                Some(toml::Value::Table(t)) => Some(t),
                _ => None,
            })
            .unwrap_or_default();
        let reads: Vec<&str> = kind.keys().iter().map(|k| k.name).collect();
        let values = table
            .into_iter()
            .filter(|(k, _)| reads.contains(&k.as_str()))
            .collect();
        let section = tsload_target::Section::new("target", values);
        let target = kind.parse(&section).map_err(|e| {
            let short = e.key.strip_prefix("target.").unwrap_or(&e.key);
            let span = t
                .present()
                .into_iter()
                .find(|(k, _)| *k == short)
                .map(|(_, s)| s);
            let mut error = self.error(span.as_ref(), &e.key, e.message.clone());
            if e.says_no_value && error.file != "--set" {
                error.message = e.message;
            }
            error
        })?;
        Ok(TargetPlan::Registered(target))
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
        cfg.db_options.vgroups = self
            .opt_int(&t.vgroups, "target.vgroups", 1, 1024)?
            .map(|v| v as u32);
        cfg.db_options.buffer = self
            .opt_int(&t.buffer, "target.buffer", 3, 16_384)?
            .map(|v| v as u32);
        cfg.db_options.wal_level = self
            .opt_int(&t.wal_level, "target.wal_level", 0, 2)?
            .map(|v| v as u8);
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
        if let Some(n) = self.opt_int(
            &t.batch_create_tbl_num,
            "target.batch_create_tbl_num",
            1,
            3000,
        )? {
            cfg.batch_create_tbl_num = n as usize;
        }
        if let Some(v) = &t.mode {
            if v.get_ref() == "stmt2" {
                // Refused here, not when the run starts: validate says so (exit 2).
                return Err(self.error(
                    Some(&v.span()),
                    "target.mode",
                    format!("\"stmt2\" {}", tsload_sink_tdengine::STMT2_UNAVAILABLE),
                ));
            }
            cfg.mode = match self.choice(v, "target.mode", &["stmt", "sql", "schemaless"])? {
                "sql" => InsertMode::Sql,
                "schemaless" => InsertMode::Schemaless,
                _ => InsertMode::Stmt,
            };
        }
        if let Some(n) = self.opt_int(&t.max_sql_length, "target.max_sql_length", 1024, 64 << 20)? {
            cfg.max_sql_length = n as usize;
        }
        cfg.drop_existing = flag(&t.drop_existing, false);
        if let Some(v) = &t.timeout {
            cfg.request_timeout = self.duration(v, "target.timeout", Duration::from_millis(1))?;
        }
        // The sink's own checks (the DSN; the database's name, and the DSN's database
        // against it), so that validate finds what the run would refuse.
        tsload_sink_tdengine::TdengineSink::new(cfg.clone()).map_err(|e| {
            if e.kind == tsload_core::ErrorKind::Connection {
                self.error(None, "target.url", e.message)
            } else {
                let span = t.database.as_ref().map(|d| d.span());
                self.error(span.as_ref(), "target.database", e.message)
            }
        })?;
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
            Some(name) => match std::env::var(name) {
                Ok(value) => {
                    tsload_redact::register(&value);
                    Ok(Some(value))
                }
                Err(_) => {
                    // The message holds no secret: it is said whole, from the file as
                    // from --set.
                    let message = format!(
                        "environment variable {name} is not set (the value \"{raw}\" reads it)"
                    );
                    let mut e = self.error(Some(&v.span()), key, message.clone());
                    if e.file != "--set" {
                        e.message = message;
                    }
                    Err(e)
                }
            },
        }
    }
}
