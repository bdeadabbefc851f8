//! The DSN: parsing and normalising it for the WebSocket driver, and keeping its secrets
//! (password, cloud token) out of every message.

use std::str::FromStr;

use taos::{Dsn, TaosBuilder};

/// taosAdapter's default port.
pub(crate) const DEFAULT_PORT: u16 = 6041;

/// `raw` with its password and token hidden, for messages: tsload's one redaction.
pub use tsload_redact::url as redact;

/// The database a DSN's path names (`ws://host:6041/db`), if it parses and names one.
pub(crate) fn database_of(raw: &str) -> Option<String> {
    Dsn::from_str(raw)
        .ok()
        .and_then(|d| d.subject)
        .filter(|s| !s.is_empty())
}

/// Strings that must never appear in a message: the password and the token, raw and as
/// written in the DSN.
#[derive(Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// `s` with every secret replaced by `***`. A secret shorter than 4 characters is
    /// replaced only where it follows `:` and precedes `@` (as in a DSN), so a password
    /// like "a" does not mangle every word of a message.
    pub(crate) fn scrub(&self, s: &str) -> String {
        let mut out = s.to_string();
        for v in &self.values {
            if v.is_empty() {
                continue;
            }
            let pattern = format!(":{v}@");
            if out.contains(&pattern) {
                out = out.replace(&pattern, ":***@");
            }
            if v.chars().count() >= 4 && out.contains(v.as_str()) {
                out = out.replace(v.as_str(), "***");
            }
        }
        out
    }

    fn add(&mut self, v: &str) {
        if !v.is_empty() && !self.values.iter().any(|x| x == v) {
            self.values.push(v.to_string());
        }
    }
}

/// A parsed, normalised DSN: one address with a port, no database (each use sets its
/// own), and the secrets to scrub from messages.
#[derive(Clone)]
pub(crate) struct Endpoint {
    dsn: Dsn,
    pub(crate) secrets: Secrets,
    /// The raw DSN, redacted, for messages.
    pub(crate) shown: String,
}

impl Endpoint {
    /// Parses `raw`. The message of a failure shows the DSN redacted and never the
    /// password or token.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let shown = redact(raw);
        let mut secrets = Secrets::default();
        collect_raw_secrets(raw, &mut secrets);
        let expected = "expected ws://user:password@host:6041 (wss:// for TLS)";
        let mut dsn = Dsn::from_str(raw.trim()).map_err(|e| {
            format!(
                "invalid TDengine DSN {shown}: {}; {expected}",
                secrets.scrub(&e.to_string())
            )
        })?;
        if let Some(p) = &dsn.password {
            secrets.add(p);
        }
        if let Some(t) = dsn.params.get("token") {
            secrets.add(t);
        }
        let scheme_ok = matches!(
            (dsn.driver.as_str(), dsn.protocol.as_deref()),
            ("ws" | "wss" | "http" | "https", None)
                | ("taos" | "taosws", Some("ws" | "wss" | "http" | "https"))
                | ("taosws", None)
        );
        if !scheme_ok {
            return Err(format!(
                "invalid TDengine DSN {shown}: scheme {:?} is not a WebSocket one (this target \
                 talks to taosAdapter, not the native port 6030); {expected}",
                dsn.driver
            ));
        }
        if dsn.addresses.len() > 1 {
            return Err(format!(
                "invalid TDengine DSN {shown}: {} addresses given; the WebSocket driver \
                 connects to one taosAdapter",
                dsn.addresses.len()
            ));
        }
        if dsn.addresses.is_empty() {
            dsn.addresses.push(taos::taos_query::prelude::Address::new(
                "localhost",
                DEFAULT_PORT,
            ));
        }
        let addr = &mut dsn.addresses[0];
        if addr.path.is_some() {
            return Err(format!(
                "invalid TDengine DSN {shown}: a socket path is not a WebSocket address; \
                 {expected}"
            ));
        }
        if addr.host.as_deref().is_none_or(str::is_empty) {
            addr.host = Some("localhost".to_string());
        }
        // The driver would otherwise connect to port 80 for any host but localhost.
        if addr.port.is_none() {
            addr.port = Some(DEFAULT_PORT);
        }
        dsn.subject = None;
        dsn.path = None;
        let endpoint = Endpoint {
            dsn,
            secrets,
            shown,
        };
        // The driver's own checks (scheme, parameters), before any connection.
        endpoint.builder(None)?;
        Ok(endpoint)
    }

    /// `host:port` the driver connects to.
    pub(crate) fn address(&self) -> String {
        self.dsn
            .addresses
            .first()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    /// A driver builder logging in to `database` (none: no default database).
    pub(crate) fn builder(&self, database: Option<&str>) -> Result<TaosBuilder, String> {
        let mut dsn = self.dsn.clone();
        dsn.subject = database.map(str::to_string);
        TaosBuilder::from_dsn(dsn).map_err(|e| {
            format!(
                "invalid TDengine DSN {}: {}",
                self.shown,
                self.secrets.scrub(&e.to_string())
            )
        })
    }
}

/// The password and token as written in the raw text (possibly percent-encoded), so a
/// parse error echoing the input cannot show them.
fn collect_raw_secrets(raw: &str, secrets: &mut Secrets) {
    for secret in tsload_redact::url_secrets(raw) {
        secrets.add(&secret);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_secrets_from_messages() {
        let mut s = Secrets::default();
        s.add("hunter22");
        s.add("a");
        assert_eq!(
            s.scrub("login hunter22 failed for ws://u:a@h"),
            "login *** failed for ws://u:***@h"
        );
        // A short secret is left alone outside user info.
        assert_eq!(s.scrub("a bad day"), "a bad day");
    }

    #[test]
    fn parses_and_normalises() {
        let e = Endpoint::parse("ws://root:taosdata@10.0.0.5").unwrap();
        assert_eq!(e.address(), "10.0.0.5:6041");
        assert_eq!(e.shown, "ws://root:***@10.0.0.5");
        let e = Endpoint::parse("ws://root:taosdata@10.0.0.5:7041/somedb").unwrap();
        assert_eq!(e.address(), "10.0.0.5:7041");
        assert!(e.builder(Some("db1")).is_ok());
        let e = Endpoint::parse("wss://gw.example:443?token=tok-secret-1").unwrap();
        assert_eq!(e.address(), "gw.example:443");
        assert_eq!(e.secrets.scrub("x tok-secret-1 y"), "x *** y");
        let e = Endpoint::parse("taos+ws://localhost:6041").unwrap();
        assert_eq!(e.address(), "localhost:6041");
    }

    #[test]
    fn bad_dsns_are_clear_and_keep_the_password_secret() {
        for raw in [
            "mysql://root:pw-secret-9@host:3306",
            "taos://root:pw-secret-9@host:6030",
            "ws://root:pw-secret-9@host:notaport",
            "ws://root:pw-secret-9@h1:6041,h2:6041",
            "ws//root:pw-secret-9@host:6041",
            "ws://root:pw-secret-9@host:6041:7",
        ] {
            let e = match Endpoint::parse(raw) {
                Err(e) => e,
                Ok(_) => panic!("{raw} should be refused"),
            };
            assert!(e.starts_with("invalid TDengine DSN"), "{e}");
            assert!(!e.contains("pw-secret-9"), "{raw}: {e}");
        }
    }

    #[test]
    fn finds_the_database_in_the_path() {
        assert_eq!(database_of("ws://h:6041/power").as_deref(), Some("power"));
        assert_eq!(database_of("ws://h:6041"), None);
        assert_eq!(database_of("ws://h:6041/"), None);
    }
}
