//! The one redaction every output of tsload goes through: what it hides and how.
//!
//! A secret reaches tsload in one of these ways, and each has its rule here:
//!
//! - the password of a URL's user info (`scheme://user:password@host`), a raw `@`, `/`,
//!   `?` or `:` in the password included: [`url`];
//! - a URL query key that a driver reads as a secret (`password`, `pass`, `pwd`, `token`,
//!   `p`, `sslpassword`, ...; keys compared percent-decoded and in any case, as sqlx and
//!   reqwest read them): [`url`], [`is_secret_query_key`];
//! - a scenario key whose last part names a secret (`target.password`, `token`, ...):
//!   [`is_secret_key`], [`json`];
//! - an environment variable a driver reads (`PGPASSWORD`, `MYSQL_PWD`, `INFLUX_TOKEN`, ...):
//!   [`register_env`];
//! - anything else the run was given that is a secret (a sweep's values of a secret key,
//!   a profile's password): [`register`].
//!
//! [`text`] applies all of them to free text (messages, tables, CSV, SVG, TOML snippets):
//! every registered secret (also percent-encoded, percent-decoded and JSON-escaped) is
//! replaced, every URL in the text is redacted by [`url`], and `KEY = VALUE` /
//! `"KEY": "VALUE"` pairs of secret keys lose their value. The CLI writes every byte it
//! prints or stores through [`text`] (or [`json`] for JSON values); library crates use
//! [`url`] for the URLs they put in their errors.

use std::sync::RwLock;

pub mod file;
mod secret;

pub use self::secret::{Secret, SecretUrl, basic_auth_header};

use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Registered secrets shorter than this are hidden where their place says they are secrets
/// (URL user info, query keys, secret keys), but not searched for in free text: replacing
/// every `ab` of a report would destroy it.
pub const MIN_SEARCHED_LEN: usize = 4;

/// The last part of a scenario key (or a key in JSON, TOML or free text) that names a
/// secret, lower case.
const SECRET_KEYS: &[&str] = &[
    "password",
    "pass",
    "passwd",
    "pwd",
    "token",
    "secret",
    "api_key",
    "apikey",
    "sslpassword",
    "auth_token",
    "access_token",
    // Environment variables the drivers read, as they appear in `NAME=VALUE` text.
    "pgpassword",
    "mysql_pwd",
    "influx_token",
    "influx_password",
    "taos_token",
];

/// URL query keys that carry a secret, beyond [`SECRET_KEYS`]: InfluxDB 1.x reads its
/// password from `p`.
const SECRET_QUERY_KEYS: &[&str] = &["p"];

/// Environment variables whose values drivers use as secrets.
pub const SECRET_ENV: &[&str] = &[
    "PGPASSWORD",
    "MYSQL_PWD",
    "INFLUX_TOKEN",
    "INFLUX_PASSWORD",
    "INFLUXDB_TOKEN",
    "TAOS_TOKEN",
    "TSLOAD_TDENGINE_DSN",
];

static REGISTRY: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Whether a (dotted, possibly quoted) key names a secret: `target.password`,
/// `"token"`, `PGPASSWORD`.
pub fn is_secret_key(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    let last = last.trim().trim_matches(['"', '\'']).to_ascii_lowercase();
    SECRET_KEYS.contains(&last.as_str())
}

/// Whether a URL query key (as written: percent-encoded, any case) carries a secret.
pub fn is_secret_query_key(key: &str) -> bool {
    let decoded = percent_decode_str(key)
        .decode_utf8_lossy()
        .to_ascii_lowercase();
    let decoded = decoded.trim();
    SECRET_KEYS.contains(&decoded) || SECRET_QUERY_KEYS.contains(&decoded)
}

/// Makes `secret` hidden in every [`text`] and [`json`] from now on, for the life of the
/// process: as given, percent-decoded, percent-encoded and JSON-escaped.
pub fn register(secret: &str) {
    if secret.is_empty() {
        return;
    }
    let decoded = percent_decode_str(secret).decode_utf8_lossy().into_owned();
    let mut forms = vec![secret.to_string(), decoded.clone()];
    for s in [secret, decoded.as_str()] {
        forms.push(utf8_percent_encode(s, NON_ALPHANUMERIC).to_string());
        let json = serde_json::to_string(s).unwrap_or_default();
        forms.push(json.trim_matches('"').to_string());
        // CSV doubles quotes inside a quoted field.
        forms.push(s.replace('"', "\"\""));
        forms.push(html_escaped(s));
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    for form in forms {
        if !form.is_empty() && !registry.contains(&form) {
            registry.push(form);
        }
    }
    // Longest first: a secret that contains another is replaced whole.
    registry.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `s` as an HTML page holds it in text or an attribute: `&`, `<`, `>`, `"` and `'`
/// escaped. tsload's pages escape with this, so a registered secret's page form is known.
pub fn html_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Registers the HTTP Basic credentials `user:password` in the form an `Authorization`
/// header carries them (base64, padded and not), so a server that echoes the header back
/// cannot put the password on screen; the password itself too. Credentials taken from a
/// URL's user info are registered as written and percent-decoded.
pub fn register_basic_auth(user: &str, password: &str) {
    use base64::Engine as _;
    if password.is_empty() {
        return;
    }
    register(password);
    let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
    for pair in [
        format!("{user}:{password}"),
        format!("{}:{}", decode(user), decode(password)),
    ] {
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        register(&encoded);
        register(encoded.trim_end_matches('='));
    }
}

/// Registers the password and the secret query values of `url` (as written and decoded).
pub fn register_url(url: &str) {
    for secret in url_secrets(url) {
        register(&secret);
    }
}

/// Registers the values of [`SECRET_ENV`] that are set.
pub fn register_env() {
    for name in SECRET_ENV {
        if let Ok(v) = std::env::var(name) {
            if *name == "TSLOAD_TDENGINE_DSN" {
                register_url(&v);
            } else {
                register(&v);
            }
        }
    }
}

/// The secrets written in `url`: its user info's password and its secret query values.
pub fn url_secrets(url: &str) -> Vec<String> {
    let parts = Parts::of(url);
    let mut out = Vec::new();
    if let Some((start, end)) = parts.password {
        out.push(url[start..end].to_string());
    }
    for (_, (start, end)) in parts.secret_values {
        out.push(url[start..end].to_string());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `raw` (a URL or DSN) with the password of its user info and the values of its secret
/// query keys as [`MASK`]. Works on text that does not parse, so error messages can use
/// it. The user info ends at the last `@` before the query that follows the first `@`: a
/// password with a raw `@`, `/`, `?` or `:` is hidden whole; an `@` in a path only hides
/// more than needed.
pub fn url(raw: &str) -> String {
    let parts = Parts::of(raw);
    let mut cuts: Vec<(usize, usize)> = parts.secret_values.iter().map(|(_, r)| *r).collect();
    cuts.extend(parts.password);
    cuts.sort_unstable();
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    for (start, end) in cuts {
        if start < at {
            continue;
        }
        out.push_str(&raw[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&raw[at..]);
    out
}

/// Where the secrets of one URL lie, as byte ranges.
pub(crate) struct Parts {
    /// The password of the user info.
    pub(crate) password: Option<(usize, usize)>,
    /// Secret query keys' values.
    pub(crate) secret_values: Vec<(String, (usize, usize))>,
}

impl Parts {
    pub(crate) fn of(raw: &str) -> Parts {
        let (auth_start, query_from) = match raw.find("://") {
            Some(i) => (Some(i + 3), i + 3),
            // A DSN without a scheme (`root:pw@host:6041`): the user info is what
            // precedes its last '@' before any '?', back to the previous '/'.
            None => (None, 0),
        };
        let mut password = None;
        let mut query_search = query_from;
        let userinfo = match auth_start {
            Some(start) => {
                let rest = &raw[start..];
                rest.find('@').map(|first_at| {
                    let q = rest[first_at..]
                        .find('?')
                        .map_or(rest.len(), |q| first_at + q);
                    let mut at = rest[..q].rfind('@').unwrap_or(first_at);
                    // A password may hold a raw '?' too: the last '@' of all ends the user
                    // info when what follows it reads as a host (no '=' or '&' before
                    // the path), not as a query value.
                    if let Some(last) = rest.rfind('@').filter(|l| *l > at) {
                        let host = &rest[last + 1..];
                        let host = &host[..host.find(['/', '?', '#']).unwrap_or(host.len())];
                        if !host.contains(['=', '&']) {
                            at = last;
                        }
                    }
                    (start, start + at)
                })
            }
            None => {
                let q = raw.find('?').unwrap_or(raw.len());
                raw[..q].rfind('@').map(|at| {
                    let start = raw[..at].rfind('/').map_or(0, |s| s + 1);
                    (start, at)
                })
            }
        };
        if let Some((start, at)) = userinfo {
            if let Some(colon) = raw[start..at].find(':') {
                password = Some((start + colon + 1, at));
            }
            query_search = at;
        }
        let mut secret_values = Vec::new();
        if let Some(q) = raw[query_search..].find('?').map(|q| query_search + q + 1) {
            let end = raw[q..].find('#').map_or(raw.len(), |h| q + h);
            let mut pos = q;
            for pair in raw[q..end].split('&') {
                if let Some((k, v)) = pair.split_once('=')
                    && is_secret_query_key(k)
                {
                    let vstart = pos + k.len() + 1;
                    secret_values.push((k.to_string(), (vstart, vstart + v.len())));
                }
                pos += pair.len() + 1;
            }
        }
        Parts {
            password,
            secret_values,
        }
    }
}

/// `text` with its control characters made visible: every C0 control but a line feed, a
/// tab and the carriage return of a `\r\n`, DEL and every C1 control, as `\x1b` (C0,
/// DEL) or `\u{9b}` (C1). A server's error text can hold an ESC sequence that would
/// rewrite the terminal, or a NUL; what tsload prints and writes as text goes through
/// this before [`text`].
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char, next: Option<char>| {
        (c.is_control() && !matches!(c, '\n' | '\t')) && !(c == '\r' && next == Some('\n'))
    };
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if bad(c, chars.peek().copied()) {
            any = true;
            break;
        }
    }
    if !any {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if bad(c, chars.peek().copied()) {
            let n = c as u32;
            if n < 0x80 {
                out.push_str(&format!("\\x{n:02x}"));
            } else {
                out.push_str(&format!("\\u{{{n:x}}}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` with every registered secret, every URL's secrets and every secret key's value
/// hidden. What the CLI prints and writes goes through this.
pub fn text(text: &str) -> String {
    let mut s = replace_registered(text);
    s = redact_urls_in(&s);
    redact_key_values(&s)
}

/// Replaces secrets in a JSON value in place: the values of secret-named keys, and every
/// string through [`text`].
pub fn json(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_key(k) && !val.is_null() {
                    *val = Value::String(MASK.into());
                } else {
                    json(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json),
        Value::String(s) => {
            let clean = text(s);
            if clean != *s {
                *s = clean;
            }
        }
        _ => {}
    }
}

fn replace_registered(text: &str) -> String {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    let mut out = text.to_string();
    for secret in registry.iter() {
        if secret.len() >= MIN_SEARCHED_LEN && out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    out
}

/// Every `scheme://...` word of `text` through [`url`]. A word ends at white space, a
/// quote or a backslash (text inside a JSON string: `\"` ends the URL, and is kept).
fn redact_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i);
        // The scheme: letters, digits, '+', '-', '.' before "://".
        let scheme_start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |p| {
                p + head[p..].chars().next().map_or(1, char::len_utf8)
            });
        out.push_str(&head[..scheme_start]);
        let end = tail[3..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | '\\'))
            .map_or(tail.len(), |e| e + 3);
        let word = format!("{}{}", &head[scheme_start..], &tail[..end]);
        out.push_str(&url(&word));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Whether `value` is `$NAME` or `${NAME}`: how a scenario reads a secret from the
/// environment.
fn is_env_reference(value: &str) -> bool {
    let name = value
        .strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| value.strip_prefix('$'));
    name.is_some_and(|n| {
        n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `KEY = VALUE`, `KEY=VALUE`, `"KEY": "VALUE"` and `KEY: "VALUE"` of a secret key with the
/// value hidden. After `:` only a quoted value counts (so prose such as `password: the
/// value is not allowed` keeps its words).
fn redact_key_values(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
            i += 1;
            continue;
        }
        // A word: letters, digits, '_'.
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        let mut word = &text[start..i];
        // In a JSON string a key may follow an escape: `\npassword = ...`.
        if start > 0 && bytes[start - 1] == b'\\' && matches!(bytes[start], b'n' | b'r' | b't') {
            word = &word[1..];
        }
        let preceded = start > 0 && (bytes[start - 1].is_ascii_alphanumeric());
        if preceded || !SECRET_KEYS.contains(&word.to_ascii_lowercase().as_str()) {
            continue;
        }
        // Optional closing quote of a quoted key, spaces, then '=' or ':'.
        let mut j = i;
        if j < bytes.len() && matches!(bytes[j], b'"' | b'\'') {
            j += 1;
        }
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let Some(&sep) = bytes.get(j) else { break };
        if sep != b'=' && sep != b':' {
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let (value_start, value_end) = match bytes.get(j) {
            // A quoted value inside a JSON string: `password = \"x\"`.
            Some(b'\\') if bytes.get(j + 1) == Some(&b'"') => {
                let end = text[j + 2..].find("\\\"").map_or(text.len(), |e| j + 2 + e);
                (j + 2, end)
            }
            Some(&q @ (b'"' | b'\'')) => {
                let mut k = j + 1;
                while k < bytes.len() && bytes[k] != q {
                    k += if bytes[k] == b'\\' { 2 } else { 1 };
                }
                (j + 1, k.min(bytes.len()))
            }
            Some(_) if sep == b'=' => {
                let len = text[j..]
                    .find(|c: char| {
                        c.is_whitespace() || matches!(c, '&' | ',' | ';' | '`' | '\\' | '"')
                    })
                    .unwrap_or(text.len() - j);
                (j, j + len)
            }
            _ => continue,
        };
        let value = &text[value_start..value_end];
        // `$TAOS_PASSWORD` names where the secret is read from, and is not one: a scenario
        // written with it (import-taosbenchmark's) must keep it to be run.
        if value_end > value_start && value != MASK && !is_env_reference(value) {
            out.push_str(&text[copied..value_start]);
            out.push_str(MASK);
            copied = value_end;
        }
        i = value_end.max(i);
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_reference_is_no_secret_and_is_kept() {
        assert_eq!(
            text("password = \"$TAOS_PASSWORD\"\ntoken = \"${T_1}\""),
            "password = \"$TAOS_PASSWORD\"\ntoken = \"${T_1}\""
        );
        assert_eq!(text("password = \"$not a name\""), "password = \"***\"");
        assert_eq!(text("password = \"pw$X\""), "password = \"***\"");
    }

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(printable("plain\ttext\r\nline\n"), "plain\ttext\r\nline\n");
        assert_eq!(
            printable("bad\u{1b}[2Jx\0y\rz\u{7f}\u{9b}"),
            "bad\\x1b[2Jx\\x00y\\x0dz\\x7f\\u{9b}"
        );
        assert!(matches!(printable("ok"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn url_passwords_are_hidden_whole() {
        let cases = [
            (
                "postgres://u:s3cret@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            ("postgres://u:p@ss@h/db", "postgres://u:***@h/db"),
            (
                "postgresql://u:p@ss:w@rd@h/db?sslmode=disable",
                "postgresql://u:***@h/db?sslmode=disable",
            ),
            ("postgres://u:a/b@h/db", "postgres://u:***@h/db"),
            ("postgres://u:a?b@h/db?x=1", "postgres://u:***@h/db?x=1"),
            ("mysql://u:p%40ss@db:3306", "mysql://u:***@db:3306"),
            (
                "ws://root:taosdata@127.0.0.1:6041",
                "ws://root:***@127.0.0.1:6041",
            ),
            ("root:pw@host", "root:***@host"),
            ("postgres://u@h/db?user=a@b", "postgres://u@h/db?user=a@b"),
            ("http://127.0.0.1:8086/ping", "http://127.0.0.1:8086/ping"),
            ("not a url", "not a url"),
            ("", ""),
        ];
        for (given, want) in cases {
            assert_eq!(url(given), want, "{given}");
        }
    }

    #[test]
    fn secret_query_keys_are_hidden_in_any_spelling() {
        assert_eq!(
            url("postgres://h/db?user=u&password=x&application_name=a"),
            "postgres://h/db?user=u&password=***&application_name=a"
        );
        assert_eq!(
            url("http://u:pw1@h:8086/write?db=x&u=me&p=pw2&token=t3#f"),
            "http://u:***@h:8086/write?db=x&u=me&p=***&token=***#f"
        );
        assert_eq!(
            url("postgres://h/db?PassWord=x"),
            "postgres://h/db?PassWord=***"
        );
        assert_eq!(
            url("postgres://h/db?pass%77ord=x"),
            "postgres://h/db?pass%77ord=***"
        );
        assert_eq!(
            url("mysql://h/db?sslpassword=x&pwd=y"),
            "mysql://h/db?sslpassword=***&pwd=***"
        );
        assert_eq!(
            url("wss://gw:443/db?token=abc&conn_mode=1"),
            "wss://gw:443/db?token=***&conn_mode=1"
        );
    }

    #[test]
    fn url_secrets_are_what_url_hides() {
        assert_eq!(
            url_secrets("postgres://u:p@ss@h/db?password=q1&pwd=q2&x=1"),
            ["p@ss", "q1", "q2"]
        );
        assert!(url_secrets("postgres://u@h/db").is_empty());
    }

    #[test]
    fn text_hides_urls_key_values_and_registered_secrets() {
        register("Reg1stered-Canary");
        let t = text(
            "error: connecting to `postgres://u:p@s@h/db?password=zz` (in `password = \"hunter2\"`) \
             {\"token\":\"abc\"} PGPASSWORD=sekrit x Reg1stered-Canary y Reg1stered%2DCanary",
        );
        for secret in ["p@s", "zz", "hunter2", "abc", "sekrit", "Reg1stered"] {
            assert!(!t.contains(secret), "{secret} in {t}");
        }
        assert!(t.contains("postgres://u:***@h/db?password=***"), "{t}");
        // Prose after a secret key keeps its words.
        assert_eq!(
            text("target.password: the value is not allowed"),
            "target.password: the value is not allowed"
        );
        assert_eq!(text("passed: 3, tokens 5"), "passed: 3, tokens 5");
    }

    #[test]
    fn text_keeps_json_valid() {
        let v = serde_json::json!({"source": "url = \"postgres://u:pw1@h/db?password=pw2\"\npassword = \"pw3\"\nx = 1",
            "s": "PGPASSWORD=pw4", "u": "http://h/x?p=pw5"});
        let shown = text(&serde_json::to_string_pretty(&v).unwrap());
        let back: serde_json::Value = serde_json::from_str(&shown).expect(&shown);
        let s = back.to_string();
        for secret in ["pw1", "pw2", "pw3", "pw4", "pw5"] {
            assert!(!s.contains(secret), "{secret}: {s}");
        }
        assert!(s.contains("x = 1"), "{s}");
    }

    #[test]
    fn json_hides_secret_keys_and_strings() {
        let mut v = serde_json::json!({"target": {"url": "postgres://bob:hunter2@127.0.0.1:5432/db",
            "password": "hunter2", "token": "abc", "user": "bob", "pass": null}});
        json(&mut v);
        let s = v.to_string();
        assert!(!s.contains("hunter2") && !s.contains("abc"), "{s}");
        assert!(s.contains("postgres://bob:***@127.0.0.1:5432/db"), "{s}");
        assert!(
            s.contains("\"user\":\"bob\"") && s.contains("\"pass\":null"),
            "{s}"
        );
    }

    #[test]
    fn secret_keys() {
        for k in [
            "target.password",
            "target.\"token\"",
            "PGPASSWORD",
            "x.api_key",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["target.user", "load.passes", "p"] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    proptest::proptest! {
        /// Whatever the password holds (printable ASCII but white space), the redacted URL
        /// does not contain it, and the host stays visible.
        #[test]
        fn any_password_is_hidden(user in "[a-z]{1,8}", password in "[!-~]{6,24}") {
            // In free text a URL ends at a quote or an angle bracket; such passwords are
            // hidden there by registration (see the other test).
            let in_text = !password.contains(['"', '\'', '`', '<', '>', '\\']);
            let u = format!("postgres://{user}:{password}@dbhost:5432/db?sslmode=disable");
            let shown = url(&u);
            proptest::prop_assert!(!shown.contains(&password), "{u} -> {shown}");
            proptest::prop_assert!(shown.contains("dbhost:5432/db"), "{u} -> {shown}");
            if in_text {
                let shown = text(&format!("could not connect to {u}: refused"));
                proptest::prop_assert!(!shown.contains(&password), "{u} -> {shown}");
            }
        }

        #[test]
        fn never_panics(s in "\\PC{0,64}") {
            let _ = url(&s);
            let _ = text(&s);
            let _ = url_secrets(&s);
        }
    }
}
