//! What a database kind is to tsload: its name, URL schemes and scenario keys, a pure
//! parse of its `[target]` section ([`TargetKind`]), and everything a run asks of the
//! parsed target ([`Target`]): its settings as the plan shows them, its address for the
//! `[network]` section, drop-existing and ledger semantics, the write and read runs.
//!
//! Each sink crate implements both traits for its kind; one list of registered kinds
//! ([`Registry`], built in `tsload-kinds`) is handed to the scenario library, and every
//! question is asked through these traits, so a new database is a new crate and one line
//! in that list. The hot path stays
//! monomorphised: [`Target::write`] runs core's generic engine with the crate's concrete
//! sink.

mod duration;
mod keys;
mod section;
pub mod sql_tls;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use tsload_core::Workload;
use tsload_core::engine::{EngineError, LoadConfig, Observer, RunOutcome, StopHandle};
use tsload_core::query::QueryWorkload;
use tsload_core::query_engine::{QueryConfig, QueryOutcome};

pub use duration::{DurationError, MAX_DURATION, parse_duration};
pub use keys::{
    AtLeast, HttpUrl, Int, KeyDefault, KeyDoc, KeyDocs, KeyValue, Keys, NonEmpty, TlsKeys, Url,
    leak, toml_default, type_name,
};
pub use section::{KeyError, Section, Word};
#[doc(hidden)]
pub use serde_json;

/// The kinds one build of tsload knows: the registered ones, those the build was made
/// without (choosing one says why), and the kind of a scenario that names none.
#[derive(Clone, Copy)]
pub struct Registry {
    pub kinds: &'static [&'static dyn TargetKind],
    pub not_built: &'static [NotBuilt],
    pub default_kind: &'static str,
}

impl Registry {
    /// The registered kind named `name`.
    pub fn kind(&self, name: &str) -> Option<&'static dyn TargetKind> {
        self.kinds.iter().copied().find(|k| k.name() == name)
    }

    /// Every kind's name and URL schemes, registered ones first, then those not built.
    pub fn schemes(&self) -> impl Iterator<Item = (&'static str, &'static [&'static str])> + Clone {
        self.kinds
            .iter()
            .map(|k| (k.name(), k.url_schemes()))
            .chain(self.not_built.iter().map(|k| (k.name, k.url_schemes)))
    }

    /// The target kind and URL `--target` names: `KIND+URL` picks the kind
    /// (`prometheus+http://h:9090/api/v1/write`, `clickhouse+http://h:8123`); else the first
    /// registered kind that takes the URL's scheme (`http(s)://` is `influx`, listed before
    /// `prometheus` and `clickhouse`), or `null` (which takes no URL: `None`).
    pub fn kind_of_url(&self, given: &str) -> Result<(&'static str, Option<String>), String> {
        let names = self.schemes();
        let (prefix, url) = match given.split_once('+') {
            Some((kind, rest)) if rest.contains("://") && names.clone().any(|(n, _)| n == kind) => {
                (Some(kind), rest)
            }
            _ => (None, given),
        };
        let scheme = url
            .split_once(':')
            .map_or(url, |(s, _)| s)
            .to_ascii_lowercase();
        if let Some(kind) = prefix {
            let (name, schemes) = names.clone().find(|(n, _)| *n == kind).unwrap_or_default();
            if !schemes.contains(&scheme.as_str()) {
                return Err(format!(
                    "--target {given}: target kind {name} takes URLs of {}, not {scheme}://",
                    schemes.join(", ")
                ));
            }
            return Ok((name, Some(url.to_string())));
        }
        if scheme == NullKind.name() {
            return Ok((NullKind.name(), None));
        }
        if let Some((name, _)) = names.clone().find(|(_, s)| s.contains(&scheme.as_str())) {
            return Ok((name, Some(url.to_string())));
        }
        // Each scheme once, with the kinds that take it.
        let mut schemes: Vec<(&str, Vec<&str>)> = Vec::new();
        for (name, kind_schemes) in names {
            for s in kind_schemes {
                match schemes.iter_mut().find(|(x, _)| x == s) {
                    Some((_, kinds)) => kinds.push(name),
                    None => schemes.push((s, vec![name])),
                }
            }
        }
        let listed: Vec<String> = schemes
            .iter()
            .map(|(s, kinds)| format!("{s} ({})", kinds.join(", ")))
            .collect();
        Err(format!(
            "--target {given}: the scheme does not name a target kind; the schemes (and their \
             kinds): {}, or null; \
             the first kind is the default, and KIND+URL picks another \
             (prometheus+http://127.0.0.1:9090/api/v1/write)",
            listed.join(", ")
        ))
    }

    /// `target.kind`'s values: the registered kinds, then those this build left out.
    pub fn names(&self) -> Vec<&'static str> {
        self.schemes().map(|(name, _)| name).collect()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("kinds", &self.names())
            .field("default_kind", &self.default_kind)
            .finish()
    }
}

/// A kind a build was made without: its name and URL schemes, and how to get it.
#[derive(Debug)]
pub struct NotBuilt {
    pub name: &'static str,
    pub url_schemes: &'static [&'static str],
    pub why: &'static str,
}

/// A kind's keys split by the value of one of them: the chooser and, for each of its
/// values, the keys read only under it. A key in no set is read under every value.
#[derive(Debug, Clone, Copy)]
pub struct KeySets {
    /// The key whose value chooses (`api`); its default is its [`KeyDoc`]'s.
    pub chooser: &'static str,
    pub sets: &'static [(&'static str, &'static [&'static str])],
}

/// A database kind: what `target.kind = "NAME"` means.
pub trait TargetKind: Sync {
    /// The word of `target.kind`.
    fn name(&self) -> &'static str;

    /// The URL schemes its `url` takes (empty: no URL, or any).
    fn url_schemes(&self) -> &'static [&'static str];

    /// The keys its section reads (besides `kind`).
    fn keys(&self) -> &'static [KeyDoc];

    /// Keys read only when another key has a given value (influx's `api`); `None`:
    /// every key is read whatever the others say. The CLI refuses a key of another set
    /// as it refuses a key of another kind.
    fn key_sets(&self) -> Option<KeySets> {
        None
    }

    /// Parses and validates its section, pure: no I/O, every default applied, every word
    /// parsed into its enum. The only place its keys are checked.
    fn parse(&self, section: &Section) -> Result<Box<dyn Target>, KeyError>;
}

/// One write run's part of the plan, handed to [`Target::write`].
pub struct WriteRun<'a> {
    pub workload: Arc<dyn Workload>,
    pub load: LoadConfig,
    pub stop: StopHandle,
    pub observer: &'a mut dyn Observer,
    /// This run's id in an exactly-once target's ledger (fresh for every run).
    pub run_id: i64,
}

impl WriteRun<'_> {
    /// Runs core's write engine with `sink`: what every kind's [`Target::write`] ends in.
    pub async fn into_engine<S: tsload_core::Sink>(
        self,
        sink: S,
    ) -> Result<RunOutcome, EngineError> {
        tsload_core::engine::run(
            self.workload,
            Arc::new(sink),
            self.load,
            self.stop,
            self.observer,
        )
        .await
    }
}

/// One read run's part of the plan, handed to [`Reads::query`].
pub struct QueryRun<'a> {
    /// One of [`Reads::query_languages`], when the target has several.
    pub language: Option<&'a str>,
    pub workload: Arc<dyn QueryWorkload>,
    pub cfg: QueryConfig,
    pub stop: StopHandle,
    pub observer: &'a mut dyn Observer,
}

/// How the application probe (`[network] probe = "app"`) measures the round trip to a
/// target: its own cheapest request.
#[derive(Debug, Clone, PartialEq)]
pub enum AppProbe {
    /// It has none.
    None,
    /// `SELECT 1` over a connection opened from this URL.
    Sql { url: tsload_redact::SecretUrl },
    /// `GET` of the scenario's `probe_path` under this HTTP endpoint.
    Http(HttpEndpoint),
}

/// A TCP server's host (a name or an address, IPv6 without brackets) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl HostPort {
    /// The host and port of `url`: its own port, else `default_port` (the kind's), else
    /// its scheme's well-known one (`http` 80, `https` 443, `ws`, `wss`). `None` when the
    /// URL does not parse, names no host, or has no port by any of these.
    pub fn of_url(url: &str, default_port: Option<u16>) -> Option<HostPort> {
        let parsed = url::Url::parse(url).ok()?;
        let host = parsed.host_str().filter(|h| !h.is_empty())?;
        let port = parsed
            .port()
            .or(default_port)
            .or_else(|| parsed.port_or_known_default())?;
        Some(HostPort {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        })
    }
}

impl AppProbe {
    /// How `tsload probe app --url URL` reaches a server: an `http(s)://` URL by a GET of
    /// it, any other by `SELECT 1` over a connection opened from it, `tls` written into a
    /// PostgreSQL or MySQL URL as sqlx reads it. `Err` says why the options do not fit
    /// the URL.
    pub fn of_url(url: String, tls: &tsload_tls::TlsOptions) -> Result<AppProbe, String> {
        let scheme = url
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase())
            .unwrap_or_default();
        let tls_given = *tls != tsload_tls::TlsOptions::default();
        match scheme.as_str() {
            "http" if tls_given => Err("--ca-file and --insecure-skip-verify are for https:// \
                 and SQL URLs; an http:// URL is not encrypted"
                .into()),
            "http" | "https" => Ok(AppProbe::Http(HttpEndpoint {
                url,
                tls: tls.clone(),
                connect_to: None,
            })),
            _ => {
                let url = match sql_tls::SqlFamily::of_url(&url) {
                    // sqlx reads TLS from the URL: the options become its keys there.
                    Some(family) => sql_tls::url_with_tls(url, family, tls)
                        .map_err(|e| format!("--ca-file/--insecure-skip-verify: {e}"))?,
                    None => url,
                };
                Ok(AppProbe::Sql {
                    url: tsload_redact::SecretUrl::new(url),
                })
            }
        }
    }
}

/// An HTTP server as a target reaches it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpEndpoint {
    /// The base URL (`http://127.0.0.1:8086`).
    pub url: String,
    pub tls: tsload_tls::TlsOptions,
    /// Where to connect instead of resolving the URL's host ([`Target::connect_via`]).
    pub connect_to: Option<std::net::SocketAddr>,
}

impl QueryRun<'_> {
    /// Runs core's query engine against `target`: what every kind's [`Reads::query`]
    /// ends in.
    pub async fn into_engine<T: tsload_core::query::QueryTarget>(
        self,
        target: T,
    ) -> Result<QueryOutcome, EngineError> {
        tsload_core::query_engine::run_queries(
            self.workload,
            Arc::new(target),
            self.cfg,
            self.stop,
            self.observer,
        )
        .await
    }
}

/// A parsed, validated target: immutable settings of one kind. Cloned through
/// `dyn-clone`, compared through [`TargetEq`] (any `PartialEq` target has both).
pub trait Target: fmt::Debug + Send + Sync + Any + dyn_clone::DynClone + TargetEq {
    /// Its kind's name.
    fn kind(&self) -> &'static str;

    /// Its settings as the plan and the reports show them, `kind` included.
    fn settings(&self) -> serde_json::Value;

    /// The URL (or DSN) it is reached at over TCP, as shown: a password or secret query
    /// value as `***`. `None` for an embedded or null target.
    fn url(&self) -> Option<&str> {
        None
    }

    /// The host and port it connects to over TCP: its URL's, with the kind's defaults for
    /// what the URL leaves out. `None` for an embedded or null target, or one reached over
    /// a Unix socket.
    fn address(&self) -> Option<HostPort> {
        None
    }

    /// Reaches it at `url` instead (the `[network]` proxy's address): a rewrite of
    /// [`Target::url`], whose `***` keep the secrets they stand for.
    fn set_url(&mut self, _url: String) {}

    /// Reaches it at `addr` while keeping the host name of `url` (which names `addr`'s
    /// port) for TLS to check the certificate against: the `[network]` proxy in front of
    /// an https server named by host name. `false`: it cannot be told so.
    fn connect_via(&mut self, _url: String, _addr: std::net::SocketAddr) -> bool {
        false
    }

    /// Asks the server to write out what it holds in memory before its data directory is
    /// measured (VictoriaMetrics' `/internal/force_flush`); any failure is ignored.
    fn flush(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Whether it drops and recreates the run's tables first; `None`: it has no such
    /// setting.
    fn drop_existing(&self) -> Option<bool> {
        None
    }

    /// Sets `drop_existing`, where it has one.
    fn set_drop_existing(&mut self, _on: bool) {}

    /// Whether it records each batch in a ledger (exactly-once delivery).
    fn has_ledger(&self) -> bool {
        false
    }

    /// Whether it keeps what it is sent: `false` for `null`, which has nothing to verify
    /// or query.
    fn stores(&self) -> bool {
        true
    }

    /// How `[network] probe = "app"` reaches it.
    fn app_probe(&self) -> AppProbe {
        AppProbe::None
    }

    /// Runs the write load into it.
    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>>;

    /// Its read side: TSBS queries and sysbench's OLTP transactions; `None` for a target
    /// that stores nothing to read (`null`).
    fn reads(&self) -> Option<&dyn Reads> {
        None
    }
}

/// What a target that can be read does: which TSBS query language matches what it
/// stored, whether it runs the OLTP workloads, and the read runs themselves. A kind
/// implements it beside [`Target`] and returns itself from [`Target::reads`].
pub trait Reads {
    /// The query languages it can be asked TSBS queries in (`query.dialect`), the default
    /// first; empty: one, its own, not chosen by the scenario.
    fn query_languages(&self) -> &'static [&'static str] {
        &[]
    }

    /// The TSBS query language that matches what its writer stored; `language` is one of
    /// [`Reads::query_languages`], when it has several.
    fn tsbs_dialect(
        &self,
        language: Option<&str>,
        time_bucket: bool,
    ) -> Result<tsload_query::Dialect, String>;

    /// Whether its TSBS queries can bucket time with TimescaleDB's `time_bucket`
    /// (`query.time_bucket`).
    fn takes_time_bucket(&self) -> bool {
        false
    }

    /// The SQL the OLTP workloads speak to it; `None`: it runs none.
    fn oltp_dialect(&self) -> Option<tsload_oltp::Dialect> {
        None
    }

    /// Runs a read workload against it.
    fn query<'a>(
        &'a self,
        run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>>;
}

impl dyn Target {
    /// Its read side, or why it has none (`target kind "null" stores nothing to query`).
    pub fn reads_or_why(&self) -> Result<&dyn Reads, String> {
        self.reads()
            .ok_or_else(|| format!("target kind \"{}\" stores nothing to query", self.kind()))
    }
}

/// Equality with another target of any kind: false across kinds, the type's own
/// `PartialEq` within one.
pub trait TargetEq {
    fn eq_dyn(&self, other: &dyn Target) -> bool;
}

impl<T: Target + PartialEq> TargetEq for T {
    fn eq_dyn(&self, other: &dyn Target) -> bool {
        (other as &dyn Any)
            .downcast_ref::<T>()
            .is_some_and(|o| self == o)
    }
}

dyn_clone::clone_trait_object!(Target);

/// The `null` kind: stores nothing; measures the generator and engine alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NullKind;

/// The `null` target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NullTarget;

impl TargetKind for NullKind {
    fn name(&self) -> &'static str {
        "null"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &[]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        &[]
    }

    fn parse(&self, _section: &Section) -> Result<Box<dyn Target>, KeyError> {
        Ok(Box::new(NullTarget))
    }
}

impl Target for NullTarget {
    fn kind(&self) -> &'static str {
        "null"
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({"kind": "null"})
    }

    fn stores(&self) -> bool {
        false
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        Box::pin(run.into_engine(tsload_core::NullSink))
    }
}

/// A target's settings as the plan shows them, derived from its keys: `kind`, each key's
/// value (unset keys and those of the sets not chosen left out), and `url` as the target
/// has it now
/// (a delay proxy's, once pointed there).
pub fn settings_of<K: Keys>(
    kind: &dyn TargetKind,
    keys: &K,
    url: Option<&str>,
) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    map.insert("kind".into(), kind.name().into());
    keys.to_json(&mut map);
    map.retain(|_, value| !value.is_null());
    if let Some(sets) = kind.key_sets() {
        let chosen = map
            .get(sets.chooser)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string);
        for (value, names) in sets.sets {
            if chosen.as_deref() != Some(*value) {
                for name in *names {
                    map.remove(*name);
                }
            }
        }
    }
    if let Some(url) = url {
        map.insert("url".into(), tsload_redact::url(url).into());
    }
    serde_json::Value::Object(map)
}

/// RFC 3986's unreserved characters: what [`percent_encode`] leaves as it is.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn percent_encode_leaves_only_rfc_3986_unreserved_characters() {
        assert_eq!(super::percent_encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(
            super::percent_encode("p@ss:w/rd %é{"),
            "p%40ss%3Aw%2Frd%20%25%C3%A9%7B"
        );
    }
}
