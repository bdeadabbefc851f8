//! [`Secret`]: a password, token or credential as a type that cannot be printed, logged or
//! written to a report by mistake; [`SecretUrl`]: a URL that may hold one.

use std::fmt;

use crate::MASK;

/// A password, token or credential. Its `Debug`, `Display` and `Serialize` give `***`;
/// its value is read only through [`Secret::expose`], where a driver's connection or a
/// request header is built. Making one registers the value (and its encodings) with the
/// output redaction, the safety net for a server that echoes it back.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`, registering it with the redaction.
    pub fn new(value: impl Into<String>) -> Secret {
        let value = value.into();
        crate::register(&value);
        Secret(value)
    }

    /// The value itself: only where a driver or header is built from it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret::new(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({MASK})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(MASK)
    }
}

/// A URL or DSN that may hold credentials: a user info password
/// (`postgres://user:pw@host/db`) or secret query values (`?sslpassword=...`). It is shown
/// (`Debug`, `Display`, `Serialize`, [`SecretUrl::shown`]) with each secret as `***`; the
/// URL with its secrets is read only through [`SecretUrl::expose`], where a driver
/// connects. Making one registers its secrets with the output redaction.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl {
    /// The URL with each secret as [`MASK`].
    shown: String,
    /// The URL as given. Not a [`Secret`]: that would register the whole URL, and hide
    /// every mention of a host in the output.
    full: String,
}

impl SecretUrl {
    /// Takes `raw` apart, registering its secrets with the redaction.
    pub fn new(raw: impl Into<String>) -> SecretUrl {
        let full = raw.into();
        crate::register_url(&full);
        SecretUrl {
            shown: crate::url(&full),
            full,
        }
    }

    /// The URL with each secret as `***`: what messages, plans and reports hold.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The URL with its secrets: only where a driver connects.
    pub fn expose(&self) -> &str {
        &self.full
    }

    /// Whether it holds a secret.
    pub fn has_secret(&self) -> bool {
        self.shown != self.full
    }

    /// This URL changed to `shown`, a rewrite of [`SecretUrl::shown`] (another host and
    /// port, more query keys): where `shown` has `***` as the password or as a secret
    /// query key's value, this URL's secret of that place is put back. A secret written
    /// in `shown` itself is taken as given.
    pub fn with_shown(&self, shown: &str) -> SecretUrl {
        let old = crate::Parts::of(&self.full);
        let new = crate::Parts::of(shown);
        let mut cuts: Vec<((usize, usize), &str)> = Vec::new();
        if let (Some(range), Some((start, end))) = (new.password, old.password)
            && &shown[range.0..range.1] == MASK
        {
            cuts.push((range, &self.full[start..end]));
        }
        for (key, range) in &new.secret_values {
            let held = old.secret_values.iter().find(|(k, _)| k == key);
            if let Some((_, (start, end))) = held
                && &shown[range.0..range.1] == MASK
            {
                cuts.push((*range, &self.full[*start..*end]));
            }
        }
        cuts.sort_unstable_by_key(|(range, _)| *range);
        let mut full = String::with_capacity(shown.len() + 16);
        let mut at = 0;
        for ((start, end), secret) in cuts {
            if start < at {
                continue;
            }
            full.push_str(&shown[at..start]);
            full.push_str(secret);
            at = end;
        }
        full.push_str(&shown[at..]);
        SecretUrl::new(full)
    }
}

impl From<&str> for SecretUrl {
    fn from(raw: &str) -> SecretUrl {
        SecretUrl::new(raw)
    }
}

impl From<&String> for SecretUrl {
    fn from(raw: &String) -> SecretUrl {
        SecretUrl::new(raw.as_str())
    }
}

impl From<String> for SecretUrl {
    fn from(raw: String) -> SecretUrl {
        SecretUrl::new(raw)
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretUrl({:?})", self.shown)
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl serde::Serialize for SecretUrl {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.shown)
    }
}

/// HTTP Basic credentials: the `Authorization` header value built from a user and a
/// [`Secret`] password, itself a secret (its base64 is registered with the redaction, so an
/// echo of the header is hidden too).
pub fn basic_auth_header(user: &str, password: &Secret) -> Secret {
    use base64::Engine as _;
    crate::register_basic_auth(user, password.expose());
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", password.expose()));
    Secret::new(format!("Basic {encoded}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_shows_only_its_mask() {
        let s = Secret::new("pw-KNRY-type");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret(***))");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"***\"");
        assert_eq!(s.expose(), "pw-KNRY-type");
        // Made known to the redaction on the way in.
        assert_eq!(crate::text("echo: pw-KNRY-type"), "echo: ***");
    }

    #[test]
    fn basic_auth_is_base64_of_user_colon_password() {
        let header = |u: &str, p: &str| basic_auth_header(u, &Secret::new(p)).expose().to_string();
        assert_eq!(
            header("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(header("a", ""), "Basic YTo=");
        assert_eq!(header("ab", "c"), "Basic YWI6Yw==");
    }

    #[test]
    fn an_echoed_basic_auth_header_is_hidden_in_every_form() {
        let header = basic_auth_header("me", &Secret::new("b<&>\"asic-pw"));
        // base64("me:b<&>\"asic-pw")
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode("me:b<&>\"asic-pw");
        assert_eq!(header.expose(), format!("Basic {b64}"));
        for echoed in [
            format!("401: bad Authorization: Basic {b64}"),
            format!("bad credentials {}", b64.trim_end_matches('=')),
            "password b&lt;&amp;&gt;&quot;asic-pw in a page".to_string(),
            "password b<&>\\\"asic-pw in JSON".to_string(),
        ] {
            let shown = crate::text(&echoed);
            assert!(!shown.contains("asic-pw"), "{shown}");
            assert!(!shown.contains(b64.trim_end_matches('=')), "{shown}");
        }
    }

    #[test]
    fn a_secret_url_shows_its_secrets_masked_and_keeps_them_through_a_rewrite() {
        let u =
            SecretUrl::new("postgres://bench:pw-URL1@db.example:5432/m?sslpassword=kp-URL2&a=1");
        let shown = "postgres://bench:***@db.example:5432/m?sslpassword=***&a=1";
        assert_eq!(u.shown(), shown);
        assert_eq!(format!("{u}"), shown);
        assert_eq!(format!("{u:?}"), format!("SecretUrl({shown:?})"));
        assert_eq!(serde_json::to_string(&u).unwrap(), format!("\"{shown}\""));
        assert!(u.has_secret());
        assert_eq!(
            u.expose(),
            "postgres://bench:pw-URL1@db.example:5432/m?sslpassword=kp-URL2&a=1"
        );
        // The proxy's address in place of the server's: the secrets stay.
        let moved = u.with_shown("postgres://bench:***@127.0.0.1:40000/m?sslpassword=***&a=1");
        assert_eq!(
            moved.expose(),
            "postgres://bench:pw-URL1@127.0.0.1:40000/m?sslpassword=kp-URL2&a=1"
        );
        assert_eq!(
            moved.shown(),
            "postgres://bench:***@127.0.0.1:40000/m?sslpassword=***&a=1"
        );
        // Registered on the way in.
        assert_eq!(crate::text("echo pw-URL1 kp-URL2"), "echo *** ***");
        // No secret: shown as it is, and the URL is not hidden elsewhere.
        let plain = SecretUrl::new("mysql://bench@127.0.0.1:3306/m");
        assert!(!plain.has_secret());
        assert_eq!(plain.shown(), plain.expose());
        assert_eq!(
            crate::text("at mysql://bench@127.0.0.1:3306/m"),
            "at mysql://bench@127.0.0.1:3306/m"
        );
        // A TDengine DSN with two hosts, which no URL parser takes.
        let td = SecretUrl::new("ws://root:td-URL3@h1:6041,h2:6041/db");
        assert_eq!(td.shown(), "ws://root:***@h1:6041,h2:6041/db");
        assert_eq!(
            td.with_shown("ws://root:***@127.0.0.1:1,h2:6041/db")
                .expose(),
            "ws://root:td-URL3@127.0.0.1:1,h2:6041/db"
        );
    }
}
