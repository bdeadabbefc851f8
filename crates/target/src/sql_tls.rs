//! TLS settings in PostgreSQL and MySQL connection URLs, where sqlx reads them: which
//! keys a URL already sets (every spelling sqlx accepts), and the keys that `ca_file` or
//! `insecure_skip_verify` become.

/// The SQL server family whose URL spellings apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlFamily {
    Postgres,
    Mysql,
}

impl SqlFamily {
    /// The family of a `postgres://`, `postgresql://`, `mysql://` or `mariadb://` URL.
    pub fn of_url(url: &str) -> Option<SqlFamily> {
        let scheme = url.split_once("://")?.0.to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => Some(SqlFamily::Postgres),
            "mysql" | "mariadb" => Some(SqlFamily::Mysql),
            _ => None,
        }
    }

    /// Every query key through which sqlx 0.8 sets this family's TLS (mode, CA, client
    /// certificate), as its URL parser spells them.
    fn tls_keys(self) -> &'static [&'static str] {
        match self {
            SqlFamily::Postgres => &[
                "sslmode",
                "ssl-mode",
                "sslrootcert",
                "ssl-root-cert",
                "ssl-ca",
                "sslcert",
                "ssl-cert",
                "sslkey",
                "ssl-key",
            ],
            SqlFamily::Mysql => &[
                "sslmode", "ssl-mode", "sslca", "ssl-ca", "sslcert", "ssl-cert", "sslkey",
                "ssl-key",
            ],
        }
    }

    /// The mode and CA keys written for `ca_file`, and the modes for verified and
    /// encrypted-only connections.
    fn written(self) -> [&'static str; 4] {
        match self {
            SqlFamily::Postgres => ["sslmode", "sslrootcert", "verify-full", "require"],
            SqlFamily::Mysql => ["ssl-mode", "ssl-ca", "VERIFY_IDENTITY", "REQUIRED"],
        }
    }
}

/// The query pairs of a URL, percent-decoded as sqlx reads them (`Url::query_pairs`):
/// `ho%73t=db` is the key `host`.
fn query_pairs(url: &str) -> Vec<(String, String)> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A query key through which sqlx 0.8 connects somewhere other than the URL's host and
/// port (`key`, `value`, undecoded): PostgreSQL's `host` (a name, or a Unix socket's dir),
/// `hostaddr` and `port`, MySQL's `socket`. tsload's network impairment reads the
/// endpoint from the URL's authority (the proxy takes its place there, the probes aim at
/// it), so it refuses such a URL rather than impair or measure another path. Key and
/// value are decoded.
pub fn endpoint_key_in_url(url: &str, family: SqlFamily) -> Option<(String, String)> {
    let keys: &[&str] = match family {
        SqlFamily::Postgres => &["host", "hostaddr", "port"],
        SqlFamily::Mysql => &["socket"],
    };
    query_pairs(url)
        .into_iter()
        .find(|(k, _)| keys.contains(&k.as_str()))
}

/// The first TLS key the URL sets (decoded).
pub fn tls_key_in_url(url: &str, family: SqlFamily) -> Option<String> {
    query_pairs(url)
        .into_iter()
        .map(|(k, _)| k)
        .find(|k| family.tls_keys().iter().any(|t| k.eq_ignore_ascii_case(t)))
}

/// Whether the connection checks that the certificate names the host (PostgreSQL
/// `verify-full`, MySQL `VERIFY_IDENTITY`), as sqlx decides it: the last `sslmode` or
/// `ssl-mode` in the URL, values in any case; a PostgreSQL URL without one takes
/// `PGSSLMODE` from the environment.
pub fn checks_host_name(url: &str, family: SqlFamily) -> bool {
    checks_host_name_with(url, family, std::env::var("PGSSLMODE").ok().as_deref())
}

/// [`checks_host_name`] with `PGSSLMODE` given.
fn checks_host_name_with(url: &str, family: SqlFamily, pgsslmode: Option<&str>) -> bool {
    // As sqlx 0.8 reads it: the keys spelt exactly so, the last one wins.
    let pairs = query_pairs(url);
    let mode = pairs
        .iter()
        .filter(|(k, _)| k == "sslmode" || k == "ssl-mode")
        .map(|(_, v)| v.as_str())
        .next_back()
        .or(match family {
            SqlFamily::Postgres => pgsslmode,
            SqlFamily::Mysql => None,
        });
    mode.is_some_and(|v| match family {
        SqlFamily::Postgres => v.eq_ignore_ascii_case("verify-full"),
        SqlFamily::Mysql => v.eq_ignore_ascii_case("verify_identity"),
    })
}

/// The host name of a SQL URL whose connection checks the certificate's name against it
/// (an address, or a URL that checks no name, gives `None`). tsload's delay proxy cannot
/// stand in front of such a server: sqlx has no way to connect to one address while
/// checking another name.
pub fn name_checked_host(url: &str) -> Option<String> {
    let family = SqlFamily::of_url(url)?;
    let parsed = url::Url::parse(url).ok()?;
    let name = host_name(&parsed)?;
    checks_host_name(url, family).then(|| name.to_string())
}

/// The URL's host when it is a name, not an address (`localhost` counts: a certificate
/// may name it and not 127.0.0.1). The url crate leaves an address in a postgres:// or
/// mysql:// URL as a "domain".
pub fn host_name(url: &url::Url) -> Option<&str> {
    let Some(url::Host::Domain(name)) = url.host() else {
        return None;
    };
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>().is_err().then_some(name)
}

/// Why TLS options cannot be written into a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlreadyInUrl {
    /// The key as the URL spells it.
    pub key: String,
}

impl std::fmt::Display for AlreadyInUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the URL sets {} already; give TLS settings in one place (the URL, or the CA/insecure settings)",
            self.key
        )
    }
}

impl std::error::Error for AlreadyInUrl {}

/// `url` with `options` as query keys: a CA file verifies the server against that CA and
/// its name, `insecure_skip_verify` encrypts without checking. With no options the URL is
/// returned as it is; with options, a URL that sets any TLS key itself is refused.
pub fn url_with_tls(
    url: String,
    family: SqlFamily,
    options: &tsload_tls::TlsOptions,
) -> Result<String, AlreadyInUrl> {
    if *options == tsload_tls::TlsOptions::default() {
        return Ok(url);
    }
    if let Some(key) = tls_key_in_url(&url, family) {
        return Err(AlreadyInUrl { key });
    }
    let [mode_key, ca_key, verify_mode, require_mode] = family.written();
    let sep = if url.contains('?') { '&' } else { '?' };
    Ok(match &options.ca_file {
        Some(ca) => format!(
            "{url}{sep}{mode_key}={verify_mode}&{ca_key}={}",
            crate::percent_encode(&ca.display().to_string())
        ),
        None => format!("{url}{sep}{mode_key}={require_mode}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_tls::TlsOptions;

    fn ca(path: &str) -> TlsOptions {
        TlsOptions {
            ca_file: Some(path.into()),
            insecure_skip_verify: false,
        }
    }

    fn insecure() -> TlsOptions {
        TlsOptions {
            ca_file: None,
            insecure_skip_verify: true,
        }
    }

    #[test]
    fn families_come_from_the_scheme() {
        assert_eq!(
            SqlFamily::of_url("postgres://a@h/db"),
            Some(SqlFamily::Postgres)
        );
        assert_eq!(
            SqlFamily::of_url("PostgreSQL://a@h/db"),
            Some(SqlFamily::Postgres)
        );
        assert_eq!(
            SqlFamily::of_url("mariadb://a@h/db"),
            Some(SqlFamily::Mysql)
        );
        assert_eq!(SqlFamily::of_url("mysql://a@h/db"), Some(SqlFamily::Mysql));
        assert_eq!(SqlFamily::of_url("http://h/"), None);
        assert_eq!(SqlFamily::of_url("h:5432"), None);
    }

    #[test]
    fn the_options_become_query_keys() {
        let pg = SqlFamily::Postgres;
        let my = SqlFamily::Mysql;
        assert_eq!(
            url_with_tls("postgres://u@h/db".into(), pg, &ca("/c/ca 1.pem")).unwrap(),
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fc%2Fca%201.pem"
        );
        assert_eq!(
            url_with_tls("mysql://u@h/db?x=1".into(), my, &ca("/ca.pem")).unwrap(),
            "mysql://u@h/db?x=1&ssl-mode=VERIFY_IDENTITY&ssl-ca=%2Fca.pem"
        );
        assert_eq!(
            url_with_tls("postgres://u@h/db".into(), pg, &insecure()).unwrap(),
            "postgres://u@h/db?sslmode=require"
        );
        assert_eq!(
            url_with_tls("mysql://u@h/db".into(), my, &insecure()).unwrap(),
            "mysql://u@h/db?ssl-mode=REQUIRED"
        );
        // Nothing to add: the URL is left alone, TLS keys and all.
        let own = "postgres://u@h/db?sslmode=disable".to_string();
        assert_eq!(
            url_with_tls(own.clone(), pg, &TlsOptions::default()).unwrap(),
            own
        );
    }

    #[test]
    fn every_spelling_sqlx_reads_counts_as_set() {
        for (url, family, key) in [
            (
                "postgres://u@h/db?sslrootcert=/x.pem",
                SqlFamily::Postgres,
                "sslrootcert",
            ),
            (
                "postgres://u@h/db?a=1&SSL-MODE=require",
                SqlFamily::Postgres,
                "SSL-MODE",
            ),
            ("postgres://u@h/db?ssl-ca=/x", SqlFamily::Postgres, "ssl-ca"),
            (
                "mysql://u@h/db?sslmode=required",
                SqlFamily::Mysql,
                "sslmode",
            ),
            ("mysql://u@h/db?sslca=/x.pem", SqlFamily::Mysql, "sslca"),
            ("mariadb://u@h/db?ssl-cert=/c", SqlFamily::Mysql, "ssl-cert"),
        ] {
            let e = url_with_tls(url.into(), family, &ca("/ca.pem")).unwrap_err();
            assert_eq!(e.key, key, "{url}");
            assert!(e.to_string().contains(key), "{e}");
        }
        assert_eq!(
            tls_key_in_url(
                "postgres://u@h/db?application_name=sslmode",
                SqlFamily::Postgres
            ),
            None
        );
        assert_eq!(
            tls_key_in_url("mysql://u@h/db#sslca", SqlFamily::Mysql),
            None
        );
        assert_eq!(
            tls_key_in_url("postgres://u@h/db?ssl%6Dode=disable", SqlFamily::Postgres).as_deref(),
            Some("sslmode")
        );
    }

    #[test]
    fn pgsslmode_counts_only_where_the_url_gives_no_mode() {
        let pg = SqlFamily::Postgres;
        let env = Some("verify-full");
        assert!(checks_host_name_with("postgres://u@h/db", pg, env));
        assert!(!checks_host_name_with(
            "postgres://u@h/db?sslmode=require",
            pg,
            env
        ));
        assert!(checks_host_name_with(
            "postgres://u@h/db?ssl%2Dmode=verify%2Dfull",
            pg,
            None
        ));
        assert!(!checks_host_name_with(
            "postgres://u@h/db",
            pg,
            Some("require")
        ));
        assert!(!checks_host_name_with("postgres://u@h/db", pg, None));
        // sqlx's MySQL options read no environment.
        assert!(!checks_host_name_with(
            "mysql://u@h/db",
            SqlFamily::Mysql,
            env
        ));
        // sqlx matches the key exactly: `SSLMODE` is no mode, the environment's applies.
        assert!(checks_host_name_with(
            "postgres://u@h/db?SSLMODE=disable",
            pg,
            env
        ));
    }

    #[test]
    fn the_last_mode_in_the_url_wins_as_in_sqlx() {
        let pg = SqlFamily::Postgres;
        let url = "postgres://u@h/db?sslmode=require&sslmode=verify-full";
        assert!(checks_host_name_with(url, pg, None));
        let url = "postgres://u@h/db?sslmode=verify-full&ssl-mode=require";
        assert!(!checks_host_name_with(url, pg, None));
        let url = "mysql://u@h/db?ssl-mode=REQUIRED&sslmode=verify_identity";
        assert!(checks_host_name_with(url, SqlFamily::Mysql, None));
    }

    #[test]
    fn endpoint_keys_are_found_as_sqlx_reads_them() {
        let pg = SqlFamily::Postgres;
        let my = SqlFamily::Mysql;
        let found =
            |url: &str, family| endpoint_key_in_url(url, family).map(|(k, v)| format!("{k}={v}"));
        assert_eq!(
            found("postgres://u@127.0.0.1/x?sslmode=require&host=db", pg).as_deref(),
            Some("host=db")
        );
        // Decoded, as sqlx's `Url::query_pairs` decodes keys and values.
        assert_eq!(
            found("postgresql://u@h/x?host=%2Fvar%2Frun%2Fpostgresql", pg).as_deref(),
            Some("host=/var/run/postgresql")
        );
        assert_eq!(
            found("postgres://u@h/x?ho%73t=db&x=1", pg).as_deref(),
            Some("host=db")
        );
        assert_eq!(
            found("postgres://u@h/x?hostaddr=10.0.0.1", pg).as_deref(),
            Some("hostaddr=10.0.0.1")
        );
        assert_eq!(
            found("postgres://u@h:5432/x?%70ort=5433", pg).as_deref(),
            Some("port=5433")
        );
        assert_eq!(
            found("mysql://u@h/x?socket=/run/mysqld/mysqld.sock", my).as_deref(),
            Some("socket=/run/mysqld/mysqld.sock")
        );
        for (url, family) in [
            (
                "postgres://u@h:5433/x?sslmode=require&application_name=host",
                pg,
            ),
            // Not sqlx's spellings: ignored by it, so not an endpoint.
            ("postgres://u@h/x?Host=db&PORT=1", pg),
            // MySQL has no host or port keys; PostgreSQL no socket key.
            ("mysql://u@h/x?host=db&port=1", my),
            ("postgres://u@h/x?socket=/tmp/s", pg),
            ("postgres://u@h/x#host=db", pg),
        ] {
            assert_eq!(endpoint_key_in_url(url, family), None, "{url}");
        }
    }

    #[test]
    fn name_checked_hosts_are_names_not_addresses() {
        assert_eq!(
            name_checked_host("postgres://u@db.example/x?sslmode=verify-full").as_deref(),
            Some("db.example")
        );
        assert_eq!(
            name_checked_host("mysql://u@localhost/x?ssl-mode=VERIFY_IDENTITY").as_deref(),
            Some("localhost")
        );
        for url in [
            "postgres://u@127.0.0.1/x?sslmode=verify-full",
            "postgres://u@[::1]:5432/x?sslmode=verify-full",
            "postgres://u@db.example/x?sslmode=verify-ca",
            "http://db.example/?sslmode=verify-full",
        ] {
            assert_eq!(name_checked_host(url), None, "{url}");
        }
    }

    #[test]
    fn name_checking_modes_are_found_in_either_spelling_and_any_case() {
        assert!(checks_host_name(
            "postgres://u@h/db?sslmode=verify-full",
            SqlFamily::Postgres
        ));
        assert!(checks_host_name(
            "postgres://u@h/db?ssl-mode=VERIFY-FULL",
            SqlFamily::Postgres
        ));
        assert!(!checks_host_name(
            "postgres://u@h/db?sslmode=verify-ca",
            SqlFamily::Postgres
        ));
        assert!(checks_host_name(
            "mysql://u@h/db?sslmode=verify_identity",
            SqlFamily::Mysql
        ));
        assert!(!checks_host_name(
            "mysql://u@h/db?ssl-mode=VERIFY_CA",
            SqlFamily::Mysql
        ));
    }
}
